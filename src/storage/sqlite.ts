/**
 * Adapts Node's built-in `node:sqlite` (`DatabaseSync`) to Kysely's `SqliteDatabase` interface, so the
 * embedded default needs no native addon (DEVELOPERS.md). Kysely's runtime driver already serializes
 * use of the single connection with a mutex, so transactions never interleave.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  SqliteDriver,
  type SqliteStatement,
} from "kysely";

/** Prepared statements kept per SQL text; the hot paths reuse a few dozen. */
const STATEMENT_CACHE_SIZE = 512;

/**
 * Opens (creating if needed) the SQLite file at `path` in WAL mode with `synchronous=NORMAL` (durable at
 * checkpoints, safe against corruption) and a busy timeout so a second process (a migration, a worker)
 * waits instead of failing.
 */
export function openSqlite(path: string): SqliteDatabase {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA foreign_keys = ON");

  const cache = new Map<string, SqliteStatement>();

  const wrap = (stmt: StatementSync): SqliteStatement => {
    const reader = stmt.columns().length > 0;
    return {
      reader,
      all: (params) => stmt.all(...(params as SqlParam[])),
      run: (params) => stmt.run(...(params as SqlParam[])),
      iterate: (params) => stmt.iterate(...(params as SqlParam[])),
    };
  };

  return {
    prepare(sqlText: string): SqliteStatement {
      let stmt = cache.get(sqlText);
      if (stmt === undefined) {
        stmt = wrap(db.prepare(sqlText));
        if (cache.size >= STATEMENT_CACHE_SIZE) {
          const oldest = cache.keys().next().value;
          if (oldest !== undefined) cache.delete(oldest);
        }
        cache.set(sqlText, stmt);
      }
      return stmt;
    },
    close(): void {
      cache.clear();
      db.close();
    },
  };
}

type SqlParam = null | number | bigint | string | NodeJS.ArrayBufferView;

/**
 * A first-in-first-out lock. Kysely's own single-connection mutex wakes every waiter on each release
 * (they race and all but one wait again), which costs O(waiters) per query under concurrent load; this
 * hands the connection to exactly the next waiter.
 */
class FifoLock {
  #locked = false;
  #waiters: (() => void)[] = [];

  acquire(): Promise<void> {
    if (!this.#locked) {
      this.#locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#locked = false;
  }
}

class NodeSqliteDriver extends SqliteDriver {
  readonly #lock = new FifoLock();

  override async acquireConnection(): Promise<DatabaseConnection> {
    await this.#lock.acquire();
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    this.#lock.release();
  }

  /**
   * `BEGIN IMMEDIATE` takes the write lock at the start: a second process on the same file (a worker)
   * then waits (busy timeout) instead of failing when a read-then-write transaction upgrades its lock.
   */
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

/** Tells Kysely not to add its own mutex: {@link NodeSqliteDriver} serializes the one connection itself. */
class NodeSqliteAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

/**
 * Kysely dialect for `node:sqlite`: the stock SQLite dialect with a FIFO connection lock.
 */
export class NodeSqliteDialect extends SqliteDialect {
  readonly #database: SqliteDatabase;

  constructor(database: SqliteDatabase) {
    super({ database });
    this.#database = database;
  }

  override createDriver(): Driver {
    return new NodeSqliteDriver({ database: this.#database });
  }

  override createAdapter(): SqliteAdapter {
    return new NodeSqliteAdapter();
  }
}
