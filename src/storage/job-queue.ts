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
  "id" | "account_id" | "kind" | "model" | "hold_id" | "hold_micros" | "request_json" | "started_at" | "upstream_handle_json"
> & { fallback_layer: number; mode: "live" | "test" };

const CLAIM_COLUMNS = [
  "id",
  "account_id",
  "kind",
  "model",
  "hold_id",
  "hold_micros",
  "request_json",
  "started_at",
  "upstream_handle_json",
  "fallback_layer",
  "mode",
] as const;

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
 * Claims up to `limit` jobs for `workerId`: first jobs on real sources whose lease lapsed (`processing`,
 * with an upstream handle, no heartbeat for `leaseMs`: their runner died; D28), which the new runner
 * resumes by polling; then pending jobs, oldest first, whose owner is below its concurrency cap. Marks
 * them `processing` by `workerId`. Returns the claimed jobs.
 */
export async function claimJobs(
  db: Kysely<Database>,
  workerId: string,
  limit: number,
  capsOf: CapsLoader,
  leaseMs: number = DEFAULT_LEASE_MS,
): Promise<ClaimedJob[]> {
  const pg = isPostgres(db);
  const taken = await takeOverLapsed(db, workerId, limit, leaseMs);
  if (taken.length >= limit) return taken;
  limit -= taken.length;
  const fresh = await db.transaction().execute(async (trx) => {
    let q = trx
      .selectFrom("jobs")
      .select(CLAIM_COLUMNS)
      .where("status", "=", "pending")
      .where("kind", "in", ["image", "video"])
      .where((eb) => eb.or([eb("not_before", "is", null), eb("not_before", "<=", Date.now())]))
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
        .set({ status: "processing", worker_id: workerId, started_at: now, heartbeat_at: now, updated_at: now, not_before: null, progress: null })
        .where("id", "=", c.id)
        .where("status", "=", "pending")
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) {
        r[kind]++;
        claimed.push({ ...c, started_at: now, fallback_layer: Number(c.fallback_layer) });
      }
    }
    return claimed;
  });
  return [...taken, ...fresh];
}

/** D28 `JOB_LEASE_S` default: a runner that has not heartbeat a job for 30 s has lost its lease. */
export const DEFAULT_LEASE_MS = 30_000;

/**
 * Takes over up to `limit` jobs with an upstream handle whose lease lapsed. Each takeover is a
 * compare-and-set on the heartbeat it saw, so two runners never take the same job.
 */
async function takeOverLapsed(db: Kysely<Database>, workerId: string, limit: number, leaseMs: number): Promise<ClaimedJob[]> {
  const now = Date.now();
  const lapsed = await db
    .selectFrom("jobs")
    .select([...CLAIM_COLUMNS, "heartbeat_at"])
    .where("status", "=", "processing")
    .where("kind", "in", ["image", "video"])
    .where("heartbeat_at", "<", now - leaseMs)
    .where("upstream_handle_json", "is not", null)
    .orderBy("heartbeat_at")
    .limit(limit)
    .execute();
  const out: ClaimedJob[] = [];
  for (const j of lapsed) {
    if (j.heartbeat_at === null) continue;
    const res = await db
      .updateTable("jobs")
      .set({ worker_id: workerId, heartbeat_at: now, updated_at: now })
      .where("id", "=", j.id)
      .where("status", "=", "processing")
      .where("heartbeat_at", "=", j.heartbeat_at)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) {
      const { heartbeat_at: _seen, ...job } = j;
      out.push({ ...job, fallback_layer: Number(job.fallback_layer) });
    }
  }
  return out;
}

/**
 * Puts job `id`, claimed by `workerId`, back in its queue until `notBefore` (ms since epoch): every source
 * of its family is at `max_concurrency` (D28). The upstream handle and layer stay. False when the job is
 * no longer this worker's.
 */
export async function deferJob(db: Kysely<Database>, id: string, workerId: string, notBefore: number): Promise<boolean> {
  const res = await db
    .updateTable("jobs")
    .set({ status: "pending", worker_id: null, started_at: null, heartbeat_at: null, not_before: notBefore, progress: null, updated_at: Date.now() })
    .where("id", "=", id)
    .where("status", "=", "processing")
    .where("worker_id", "=", workerId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
