/**
 * Which database backends the tests run on. SQLite always; PostgreSQL when reachable at
 * `TEST_DATABASE_URL` (default postgres://127.0.0.1:5432/test). With `REQUIRE_SERVICES=1` or `CI=true`
 * an unreachable server is an error, not a skip (DEVELOPERS.md).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";

export const PG_ADMIN_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_TEST_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
export const servicesRequired = process.env.REQUIRE_SERVICES === "1" || process.env.CI === "true";

async function probePg(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("select 1");
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    await client.end().catch(() => {});
  }
}

const pgProblem = await probePg();
if (pgProblem !== null && servicesRequired) {
  throw new Error(
    `PostgreSQL is required (REQUIRE_SERVICES/CI) but unreachable at ${PG_ADMIN_URL}: ${pgProblem}`,
  );
}
if (pgProblem !== null) {
  console.log(
    `# PostgreSQL tests skipped: ${PG_ADMIN_URL} unreachable (${pgProblem}). Set REQUIRE_SERVICES=1 to fail instead.`,
  );
}

async function probeRedis(): Promise<string | null> {
  const r = new Redis(REDIS_TEST_URL, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 1500 });
  r.on("error", () => {});
  try {
    await r.connect();
    await r.ping();
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    r.disconnect();
  }
}

const redisProblem = await probeRedis();
if (redisProblem !== null && servicesRequired) {
  throw new Error(`Redis is required (REQUIRE_SERVICES/CI) but unreachable at ${REDIS_TEST_URL}: ${redisProblem}`);
}
if (redisProblem !== null) {
  console.log(`# Redis tests skipped: ${REDIS_TEST_URL} unreachable (${redisProblem}). Set REQUIRE_SERVICES=1 to fail instead.`);
}

/** Skip reason for Redis tests (`describe(name, {skip})`), or false when Redis answers. */
export const REDIS_SKIP: string | false = redisProblem === null ? false : `Redis unreachable at ${REDIS_TEST_URL}`;

export type Backend = "sqlite" | "postgres";

/** The backends to run on, with a skip reason for unavailable ones (for `describe(name, {skip})`). */
export const BACKENDS: { name: Backend; skip: string | false }[] = [
  { name: "sqlite", skip: false },
  { name: "postgres", skip: pgProblem === null ? false : `PostgreSQL unreachable at ${PG_ADMIN_URL}` },
];

/** A fresh, empty database of the given backend; `drop()` removes it. */
export interface TempDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates a database with a random name: an SQLite file in a temp folder, or a PostgreSQL database
 * `gwtest_<random>` on the shared server (dropped with FORCE afterwards).
 */
export async function createTempDatabase(backend: Backend): Promise<TempDatabase> {
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "gw-test-"));
    return {
      url: `sqlite:${join(dir, "gateway.db")}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `gwtest_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
