/**
 * Claiming pending jobs for a runner (design.md "job dispatch"). On PostgreSQL candidates are locked with
 * `FOR UPDATE SKIP LOCKED` (several workers never wait on, or take, the same rows) and the owners' account
 * rows are locked before their running jobs are counted, so a per-account concurrency cap holds across
 * workers. On SQLite the claim runs in one `BEGIN IMMEDIATE` transaction, which serializes claimers.
 */
import type { Kysely, Transaction } from "kysely";
import { isPostgres } from "./ledger-pg.ts";
import type { Database, JobsTable } from "./schema.ts";

/** A claimed job, as the runner needs it. */
export type ClaimedJob = Pick<
  JobsTable,
  "id" | "account_id" | "kind" | "model" | "hold_id" | "hold_micros" | "request_json" | "started_at"
>;

/** Concurrency caps of an account: per kind, or one combined pool (tier 4). */
export interface ConcurrencyCaps {
  image: number;
  video: number;
  /** When set, image and video share this cap. */
  combined: number | null;
}

/** Loads an account's caps; called inside the claim transaction with that transaction. */
export type CapsLoader = (trx: Transaction<Database>, accountId: string) => Promise<ConcurrencyCaps>;

/**
 * Claims up to `limit` pending jobs, oldest first, whose owner is below its concurrency cap (`canStart`),
 * marking them `processing` by `workerId`. Returns the claimed jobs.
 */
export async function claimJobs(
  db: Kysely<Database>,
  workerId: string,
  limit: number,
  capsOf: CapsLoader,
): Promise<ClaimedJob[]> {
  const pg = isPostgres(db);
  return db.transaction().execute(async (trx) => {
    let q = trx
      .selectFrom("jobs")
      .select(["id", "account_id", "kind", "model", "hold_id", "hold_micros", "request_json", "started_at"])
      .where("status", "=", "pending")
      .where("kind", "in", ["image", "video"])
      .orderBy("created_at")
      .orderBy("id")
      .limit(Math.max(limit * 4, 50));
    if (pg) q = q.forUpdate().skipLocked();
    const candidates = await q.execute();
    if (candidates.length === 0) return [];
    const accounts = [...new Set(candidates.map((c) => c.account_id))].sort();
    if (pg) {
      // Serializes claimers per account (sorted to avoid deadlocks between workers).
      await trx.selectFrom("accounts").select("id").where("id", "in", accounts).orderBy("id").forUpdate().execute();
    }
    const rows = await trx
      .selectFrom("jobs")
      .select(["account_id", "kind", (eb) => eb.fn.countAll<number>().as("n")])
      .where("status", "=", "processing")
      .where("account_id", "in", accounts)
      .groupBy(["account_id", "kind"])
      .execute();
    const running = new Map<string, { image: number; video: number }>();
    for (const a of accounts) running.set(a, { image: 0, video: 0 });
    for (const r of rows) {
      const entry = running.get(r.account_id);
      if (entry && (r.kind === "image" || r.kind === "video")) entry[r.kind] = Number(r.n);
    }
    const caps = new Map<string, ConcurrencyCaps>();
    for (const a of accounts) caps.set(a, await capsOf(trx, a));
    const claimed: ClaimedJob[] = [];
    const now = Date.now();
    for (const c of candidates) {
      if (claimed.length >= limit) break;
      const kind = c.kind as "image" | "video";
      const r = running.get(c.account_id)!;
      const cap = caps.get(c.account_id)!;
      const free = cap.combined !== null ? r.image + r.video < cap.combined : r[kind] < cap[kind];
      if (!free) continue;
      const res = await trx
        .updateTable("jobs")
        .set({ status: "processing", worker_id: workerId, started_at: now, heartbeat_at: now, updated_at: now })
        .where("id", "=", c.id)
        .where("status", "=", "pending")
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) {
        r[kind]++;
        claimed.push({ ...c, started_at: now });
      }
    }
    return claimed;
  });
}
