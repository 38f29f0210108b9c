/**
 * The database: Kysely over SQLite (`node:sqlite`, the embedded default) or PostgreSQL (`pg`), chosen
 * by `DATABASE_URL` (D11). Only this folder knows SQL dialects (docs/architecture.md).
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Kysely, PostgresDialect, sql } from "kysely";
import { type Migration, type MigrationProvider, Migrator } from "kysely/migration";
import { createRequire } from "node:module";
import type PgModule from "pg";
import * as m001 from "./migrations/001_core.ts";
import * as m002 from "./migrations/002_jobs_voices.ts";
import * as m003 from "./migrations/003_sweep_indexes.ts";
import * as m004 from "./migrations/004_ledger_entry_ids.ts";
import * as m005 from "./migrations/005_upstream_handles.ts";
import * as m006 from "./migrations/006_upstream_cost_basis.ts";
import * as m007 from "./migrations/007_voice_upstream_source.ts";
import * as m008 from "./migrations/008_usage_log.ts";
import * as m009 from "./migrations/009_webhooks.ts";
import * as m010 from "./migrations/010_job_progress.ts";
import * as m011 from "./migrations/011_operator_indexes.ts";
import * as m012 from "./migrations/012_key_controls.ts";
import * as m013 from "./migrations/013_topups.ts";
import * as m014 from "./migrations/014_job_traceparent.ts";
import * as m015 from "./migrations/015_idempotent_calls.ts";
import * as m016 from "./migrations/016_organizations.ts";
import * as m017 from "./migrations/017_drop_holds_account_status.ts";
import * as m018 from "./migrations/018_realtime_sessions.ts";
import * as m019 from "./migrations/019_job_dialect_facts.ts";
import * as m020 from "./migrations/020_budgets.ts";
import * as m021 from "./migrations/021_audit_log.ts";
import type { Database } from "./schema.ts";
import { NodeSqliteDialect, openSqlite } from "./sqlite.ts";
import { pgStatementName } from "./prepared.ts";
import type { Dialect } from "./dialect.ts";

export type { Dialect } from "./dialect.ts";

/**
 * An open database handle. `ping()` runs a trivial query (readiness probes; rejects when the database is
 * unreachable); `close()` ends every connection.
 */
export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /**
   * An SQLite file's absolute path and the buffer of its thread lock (storage/sqlite-thread-lock.ts), for
   * a second connection on another thread (billing/ledger-writer.ts); null for PostgreSQL and in memory.
   */
  sqliteFile: { file: string; threadLock: SharedArrayBuffer } | null;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The {@link Db} handle of an open Kysely instance. */
function handle(kysely: Kysely<Database>, dialect: Dialect, sqliteFile: Db["sqliteFile"] = null): Db {
  return {
    kysely,
    dialect,
    sqliteFile,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    close: () => kysely.destroy(),
  };
}

/**
 * Opens the database named by `url`: `postgres://...` / `postgresql://...` selects PostgreSQL, anything
 * else is an SQLite path (`sqlite:./data/gateway.db`, `file:...` or a bare path). Parent folders of an
 * SQLite file are created. `poolSize` bounds PostgreSQL connections; `preparedStatements: false` runs
 * every PostgreSQL statement unnamed (for poolers in transaction mode).
 */
export function openDatabase(url: string, opts: { poolSize?: number; preparedStatements?: boolean } = {}): Db {
  if (/^postgres(ql)?:\/\//.test(url)) {
    // Loaded only here: an SQLite gateway never pays the driver's memory.
    const pg = createRequire(import.meta.url)("pg") as typeof PgModule;
    const pool = new pg.Pool({
      connectionString: url,
      max: opts.poolSize ?? 20,
      // BIGINT columns hold micro-USD and epoch ms, all far below 2^53: read them as numbers.
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === 20
            ? (v: string) => Number(v)
            : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client that loses its server must not crash the process.
    pool.on("error", () => {});
    // The hot statements (prepared.ts `pgStatementName`: the compiled-once ones and any text run often)
    // run as named statements: each connection parses and plans them once instead of at every execution
    // (the server's CPU in the jobs benchmark fell by about half). Kysely calls `query(text, values)`;
    // everything else goes through unchanged.
    if (opts.preparedStatements !== false) {
      pool.on("connect", (client) => {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
          const [text, values] = args;
          const name = args.length === 2 && typeof text === "string" ? pgStatementName(text) : undefined;
          return name === undefined ? query(...args) : query({ name, text, values });
        };
      });
    }
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return handle(kysely, "postgres");
  }
  const path = resolve(url.replace(/^(sqlite|file):(\/\/)?/, ""));
  mkdirSync(dirname(path), { recursive: true });
  const sqlite = openSqlite(path);
  const kysely = new Kysely<Database>({ dialect: new NodeSqliteDialect(sqlite) });
  const threadLock = sqlite.coordinator.threadLock;
  return handle(kysely, "sqlite", sqlite.file !== null && threadLock !== null ? { file: sqlite.file, threadLock: threadLock.buffer } : null);
}

/**
 * Another connection to the SQLite file of a {@link Db} (its `sqliteFile`), for a worker thread of this
 * process (billing/ledger-writer-worker.ts): it shares the file's thread lock, so neither connection ever
 * waits for the other in SQLite's busy handler, and leaves checkpoints to the first connection's
 * checkpointer, which counts its rows through that lock (storage/sqlite.ts `openSqlite`).
 */
export function openSqliteOnThread(sqliteFile: NonNullable<Db["sqliteFile"]>): Db {
  const sqlite = openSqlite(sqliteFile.file, { threadLock: sqliteFile.threadLock, checkpointer: false });
  return handle(new Kysely<Database>({ dialect: new NodeSqliteDialect(sqlite) }), "sqlite", sqliteFile);
}

/** Migrations in order; each takes the dialect for the few places where types differ. */
const MIGRATIONS: Record<string, { up(db: Kysely<unknown>, dialect: Dialect): Promise<void> }> = {
  "001_core": m001,
  "002_jobs_voices": m002,
  "003_sweep_indexes": m003,
  "004_ledger_entry_ids": m004,
  "005_upstream_handles": m005,
  "006_upstream_cost_basis": m006,
  "007_voice_upstream_source": m007,
  "008_usage_log": m008,
  "009_webhooks": m009,
  "010_job_progress": m010,
  "011_operator_indexes": m011,
  "012_key_controls": m012,
  "013_topups": m013,
  "014_job_traceparent": m014,
  "015_idempotent_calls": m015,
  "016_organizations": m016,
  "017_drop_holds_account_status": m017,
  "018_realtime_sessions": m018,
  "019_job_dialect_facts": m019,
  "020_budgets": m020,
  "021_audit_log": m021,
};

/**
 * Applies every pending migration (idempotent; safe when several processes start at once, Kysely's
 * migrator takes a lock), or with `to` only those up to that one (tests of a migration's backfill).
 * Throws when a migration fails.
 */
export async function migrate(db: Db, opts: { to?: string } = {}): Promise<void> {
  const provider: MigrationProvider = {
    async getMigrations(): Promise<Record<string, Migration>> {
      const out: Record<string, Migration> = {};
      for (const [name, mod] of Object.entries(MIGRATIONS)) {
        out[name] = { up: (k) => mod.up(k as Kysely<unknown>, db.dialect) };
      }
      return out;
    },
  };
  const migrator = new Migrator({ db: db.kysely, provider });
  const { error, results } = opts.to === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(opts.to);
  if (error) {
    const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Whether `err` is a unique-constraint violation on either dialect (translated by repositories). */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e.code === "23505") return true; // PostgreSQL unique_violation
  const msg = typeof e.message === "string" ? e.message : "";
  return msg.includes("UNIQUE constraint failed");
}

/** Whether `err` is a CHECK-constraint violation (the balance guard) on either dialect. */
export function isCheckViolation(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; message?: unknown };
  if (e.code === "23514") return true;
  const msg = typeof e.message === "string" ? e.message : "";
  return msg.includes("CHECK constraint failed");
}
