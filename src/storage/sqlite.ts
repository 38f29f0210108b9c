/**
 * Adapts Node's built-in `node:sqlite` (`DatabaseSync`) to Kysely's `SqliteDatabase` interface, so the
 * embedded default needs no native addon (DEVELOPERS.md). Kysely's runtime driver already serializes
 * use of the single connection with a mutex, so transactions never interleave.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { SqliteDatabase, SqliteStatement } from "kysely";

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
