/**
 * Adapts Node's built-in `node:sqlite` (`DatabaseSync`) to Kysely's `SqliteDatabase` interface, so the
 * embedded default needs no native addon (DEVELOPERS.md). Kysely's runtime driver already serializes
 * use of the single connection with a mutex, so transactions never interleave.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { resolve as resolvePath } from "node:path";
import { type CheckpointSettings, WalCheckpointer } from "./sqlite-checkpointer.ts";
import { ThreadWriteLock } from "./sqlite-thread-lock.ts";
import {
  CompiledQuery,
  type DatabaseConnection,
  type QueryResult,
  type Driver,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  type SqliteStatement,
} from "kysely";

/** Prepared statements kept per SQL text; the hot paths reuse a few dozen. */
const STATEMENT_CACHE_SIZE = 512;

/**
 * Opens (creating if needed) the SQLite file at `path` in WAL mode with `synchronous=NORMAL` (durable at
 * checkpoints, safe against corruption) and a busy timeout so a second process (a migration, a worker)
 * waits instead of failing. WAL checkpoints run on a worker thread (sqlite-checkpointer.ts); `checkpoints`
 * overrides its thresholds (tests). A second `openSqlite` of the same file in this process shares the first
 * one's connection and ignores its options.
 *
 * A file's connection takes the file's {@link ThreadWriteLock} before it writes. Another thread of this
 * process opens its own connection to the same file with `threadLock` (the first handle's
 * `threadLock.buffer`) and `checkpointer: false` (the first connection's checkpointer counts its rows
 * through the lock): the two then never wait for each other in SQLite's busy handler (billing/ledger-writer.ts).
 */
export function openSqlite(
  path: string,
  opts: { checkpoints?: CheckpointSettings; threadLock?: SharedArrayBuffer; checkpointer?: boolean } = {},
): SharedSqliteDatabase {
  const inMemory = path === ":memory:" || path.startsWith("file::memory:");
  const key = inMemory ? null : resolvePath(path);
  const open = key === null ? undefined : openFiles.get(key);
  if (open) {
    open.refs++;
    return open.handle();
  }
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA foreign_keys = ON");
  // Sorters and savepoint journals in memory: on disk they cost a temporary file (open, unlink) each.
  db.exec("PRAGMA temp_store = MEMORY");
  if (!inMemory) db.exec("PRAGMA wal_autocheckpoint = 0");

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

  // An in-memory database is this connection's alone: no other connection can share it, nothing to lock.
  const threadLock = inMemory ? null : new ThreadWriteLock(opts.threadLock);
  const totalChanges = db.prepare("select total_changes() as n");
  const coordinator = new CommitCoordinator((sqlText) => db.exec(sqlText), threadLock, () => Number((totalChanges.get() as { n: number }).n));
  const checkpointer =
    inMemory || threadLock === null || opts.checkpointer === false
      ? null
      : new WalCheckpointer(path, () => threadLock.rows(), (fn) => coordinator.exclusive(fn), opts.checkpoints);
  const entry = {
    refs: 1,
    handle: (): SharedSqliteDatabase => {
      let closed = false;
      return {
        coordinator,
        file: key,
        prepare,
        close(): void {
          if (closed) return;
          closed = true;
          if (--entry.refs > 0) return;
          if (key !== null) openFiles.delete(key);
          checkpointer?.close();
          cache.clear();
          db.close();
        },
      };
    },
  };
  if (key !== null) openFiles.set(key, entry);
  return entry.handle();

  function prepare(sqlText: string): SqliteStatement {
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
  }
}

/**
 * The database of one SQLite file in this process. Every `openSqlite` of the same file shares one
 * connection (reference-counted: the last `close` closes it) and one {@link CommitCoordinator}: two
 * connections of one process to one file would deadlock under group commit, the second one's busy
 * handler sleeping on the very thread that must commit the first one's open group (two gateways in one
 * process, as tests run them).
 */
export interface SharedSqliteDatabase extends SqliteDatabase {
  readonly coordinator: CommitCoordinator;
  /** The file's absolute path, or null for an in-memory database. */
  readonly file: string | null;
}

const openFiles = new Map<string, { refs: number; handle: () => SharedSqliteDatabase }>();



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

  /** How many acquirers are waiting for the lock. */
  get waiting(): number {
    return this.#waiters.length;
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#locked = false;
  }
}

/** At most this many transactions share one SQLite commit (group commit). */
export const GROUP_COMMIT_MAX_MEMBERS = 64;
/** A group is committed at the latest this many ms after it began, even while others wait. */
export const GROUP_COMMIT_MAX_MS = 5;

const PLAIN_READ = /^\s*select\b/i;

/** One acquisition of the single connection: the driver tracks per holder whether it already let go. */
class HeldConnection implements DatabaseConnection {
  /** The lock was handed on (after a grouped commit, or at release). */
  released = false;
  /** Inside Kysely's transaction (between begin and commit or rollback). */
  inTransaction = false;
  /** Ran something other than a plain `select` outside a transaction. */
  wrote = false;

  readonly inner: DatabaseConnection;
  readonly #c: CommitCoordinator;

  constructor(inner: DatabaseConnection, coordinator: CommitCoordinator) {
    this.inner = inner;
    this.#c = coordinator;
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (!this.inTransaction && !PLAIN_READ.test(query.sql)) {
      this.wrote = true;
      // A write of its own (no group to join): SQLite commits it at once, under the file's thread lock.
      if (this.#c.group === null && this.#c.threadLock !== null) return this.#c.autocommitWrite(() => this.inner.executeQuery<R>(query));
    }
    return this.inner.executeQuery<R>(query);
  }

  streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

/**
 * The connection lock and the open commit group of one SQLite connection, shared by its drivers; and, for
 * a file, the lock its writes take against the other threads' connections to it ({@link ThreadWriteLock}).
 */
export class CommitCoordinator {
  readonly lock = new FifoLock();
  group: CommitGroup | null = null;
  flushScheduled = false;
  /** The file's lock shared with the other threads of this process, or null (in memory, tests). */
  readonly threadLock: ThreadWriteLock | null;
  /** Runs one SQL statement on the connection, synchronously (throws SQLite's error). */
  readonly #exec: (sqlText: string) => void;
  /** The connection's `total_changes()`. */
  readonly #totalChanges: () => number;
  #countedChanges = 0;

  constructor(exec: (sqlText: string) => void, threadLock: ThreadWriteLock | null = null, totalChanges: () => number = () => 0) {
    this.#exec = exec;
    this.threadLock = threadLock;
    this.#totalChanges = totalChanges;
  }

  /**
   * Opens the shared SQLite transaction of a new group (`begin immediate`), once this thread holds the
   * file's thread lock. The caller holds {@link lock} and no group is open.
   */
  async openGroup(): Promise<void> {
    const waited = this.threadLock?.acquire();
    if (waited) await waited;
    try {
      this.#exec("begin immediate");
    } catch (e) {
      this.threadLock?.release();
      throw e;
    }
    this.group = { waiting: [], openedAt: performance.now() };
  }

  /**
   * Runs one write outside any transaction (SQLite commits it on its own) while holding the file's thread
   * lock. The caller holds {@link lock} and no group is open.
   */
  async autocommitWrite<T>(fn: () => Promise<T>): Promise<T> {
    const waited = this.threadLock?.acquire();
    if (waited) await waited;
    try {
      return await fn();
    } finally {
      this.#endWrite();
    }
  }

  /** After a commit or rollback: counts the rows written for the checkpointer, hands the thread lock on. */
  #endWrite(): void {
    if (this.threadLock === null) return;
    try {
      const changes = this.#totalChanges();
      this.threadLock.addRows(changes - this.#countedChanges);
      this.#countedChanges = changes;
    } catch {
      // The connection was closed while this write waited for the lock: nothing was written to count.
    } finally {
      this.threadLock.release();
    }
  }

  /**
   * Commits the open group, if any, and settles its members: each one's `commit` returns, or throws the
   * commit's error after the whole SQLite transaction is rolled back. The caller holds {@link lock}.
   */
  commitGroup(): void {
    const group = this.group;
    if (!group) return;
    this.group = null;
    try {
      this.#exec("commit");
    } catch (e) {
      try {
        this.#exec("rollback");
      } catch {
        // Already rolled back by SQLite.
      }
      this.#endWrite();
      for (const w of group.waiting) w.reject(e);
      return;
    }
    this.#endWrite();
    for (const w of group.waiting) w.resolve();
  }

  /**
   * Runs `fn` while this process has no transaction open on the connection: takes the lock (waiting
   * for the transaction in progress), commits the open group, and hands the lock on when `fn` settles.
   * The event loop keeps running; callers' transactions queue behind it. The other threads' connections
   * to the file are held back too (the thread lock). Used by the checkpointer to let a checkpoint catch up
   * with the WAL's end so that the next write starts the WAL over.
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.lock.acquire();
    try {
      this.commitGroup();
      const waited = this.threadLock?.acquire();
      if (waited) await waited;
      try {
        return await fn();
      } finally {
        this.threadLock?.release();
      }
    } finally {
      this.lock.release();
    }
  }
}

/** The open SQLite transaction that several callers' transactions share until it commits. */
interface CommitGroup {
  /** Callers' transactions (and writes) that finished inside the group and wait for its commit. */
  waiting: { resolve: () => void; reject: (e: unknown) => void }[];
  openedAt: number;
}

/**
 * The `node:sqlite` driver with group commit.
 *
 * Every transaction runs alone on the one connection (FIFO lock) inside a savepoint of a shared SQLite
 * transaction. When it commits, its savepoint is released and the lock passes to the next waiter at once,
 * but its `commit` only returns once the shared transaction is committed: after the event loop has run
 * the callbacks already due (`setImmediate`: the other requests of this turn join the group first), or at
 * once after {@link GROUP_COMMIT_MAX_MEMBERS} transactions or {@link GROUP_COMMIT_MAX_MS} ms. One idle
 * caller thus waits one event-loop turn; under load, the WAL pages that consecutive transactions share
 * (the accounts, ledger and usage index pages) are written once per group instead of once per caller:
 * about 25 transactions per commit at 32 connections, 1.8x the requests/s of one commit each.
 *
 * Semantics are unchanged for callers: a transaction's result is returned only after it is durable (as
 * much as `synchronous=NORMAL` makes any commit durable), a failed transaction rolls back to its own
 * savepoint without touching the others, and if the shared commit fails every member's `commit` throws
 * (none of them happened). A write outside a transaction that ran while a group was open is held back the
 * same way until the group commits. A plain read sees the work of earlier members before it is committed;
 * it can only differ from the committed state if that commit then fails (an I/O error).
 */
class NodeSqliteDriver extends SqliteDriver {
  readonly #c: CommitCoordinator;

  constructor(config: SqliteDialectConfig, coordinator: CommitCoordinator) {
    super(config);
    this.#c = coordinator;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    await this.#c.lock.acquire();
    return new HeldConnection(await super.acquireConnection(), this.#c);
  }

  override async releaseConnection(connection?: DatabaseConnection): Promise<void> {
    const held = connection as HeldConnection;
    if (held.released) return;
    held.released = true;
    if (held.wrote && this.#c.group) {
      const done = this.#join(this.#c.group);
      this.#handOn();
      return done;
    }
    this.#handOn();
  }

  /**
   * `BEGIN IMMEDIATE` takes the write lock at the start: a second process on the same file (a worker)
   * then waits (busy timeout) instead of failing when a read-then-write transaction upgrades its lock.
   */
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const held = connection as HeldConnection;
    if (!this.#c.group) await this.#c.openGroup();
    await held.inner.executeQuery(CompiledQuery.raw("savepoint grouped"));
    held.inTransaction = true;
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const held = connection as HeldConnection;
    const group = this.#c.group;
    if (!group) throw new Error("commit without an open transaction");
    await held.inner.executeQuery(CompiledQuery.raw("release grouped"));
    held.inTransaction = false;
    held.released = true;
    const done = this.#join(group);
    this.#handOn();
    return done;
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const held = connection as HeldConnection;
    // After a failed group commit the whole SQLite transaction is already rolled back.
    if (held.released || !held.inTransaction) return;
    held.inTransaction = false;
    await held.inner.executeQuery(CompiledQuery.raw("rollback to grouped"));
    await held.inner.executeQuery(CompiledQuery.raw("release grouped"));
  }

  #join(group: CommitGroup): Promise<void> {
    return new Promise((resolve, reject) => group.waiting.push({ resolve, reject }));
  }

  /**
   * Passes the connection to the next waiter. The open group is committed now when it is full or old,
   * else once the event loop has run the callbacks already due (the other requests' work of this turn
   * joins it first).
   */
  #handOn(): void {
    const group = this.#c.group;
    if (group) {
      if (group.waiting.length >= GROUP_COMMIT_MAX_MEMBERS || performance.now() - group.openedAt >= GROUP_COMMIT_MAX_MS) {
        this.#c.commitGroup();
      } else if (!this.#c.flushScheduled) {
        this.#c.flushScheduled = true;
        setImmediate(() => void this.#scheduledCommit());
      }
    }
    this.#c.lock.release();
  }

  async #scheduledCommit(): Promise<void> {
    this.#c.flushScheduled = false;
    if (!this.#c.group) return;
    await this.#c.lock.acquire();
    try {
      this.#c.commitGroup();
    } finally {
      this.#c.lock.release();
    }
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
    const shared = (this.#database as Partial<SharedSqliteDatabase>).coordinator;
    const database = this.#database;
    return new NodeSqliteDriver({ database }, shared ?? new CommitCoordinator((sqlText) => void database.prepare(sqlText).run([])));
  }

  override createAdapter(): SqliteAdapter {
    return new NodeSqliteAdapter();
  }
}
