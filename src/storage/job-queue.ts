/**
 * Claiming pending jobs for a runner (design.md "job dispatch"). On PostgreSQL candidates are locked with
 * `FOR UPDATE SKIP LOCKED` (several workers never wait on, or take, the same rows) and the owners' account
 * rows are locked before their running jobs are counted, so a per-account concurrency cap holds across
 * workers. On SQLite the claim runs in one `BEGIN IMMEDIATE` transaction, which serializes claimers.
 * A submit may also start its job at once on its own process's runner (jobs.ts): it counts the running
 * jobs under the same account row lock.
 */
import type { Kysely } from "kysely";
import { isPostgres } from "./ledger-pg.ts";
import type { AccountsTable, Database, JobsTable } from "./schema.ts";

/** A claimed job, as the runner needs it. */
export type ClaimedJob = Pick<
  JobsTable,
  "id" | "account_id" | "kind" | "model" | "hold_id" | "hold_micros" | "request_json" | "started_at" | "upstream_handle_json"
> & { fallback_layer: number; mode: "live" | "test"; webhook_url: string | null };

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
  "webhook_url",
] as const;

/** Concurrency caps of an account: per kind, or one combined pool (tier 4). */
export interface ConcurrencyCaps {
  image: number;
  video: number;
  /** When set, image and video share this cap. */
  combined: number | null;
}

/** The account columns an account's limits derive from (accounts/accounts.ts `limitsOf`). */
export type AccountLimitsRow = Pick<AccountsTable, "total_deposits_micros" | "tier_override" | "limits_override">;

/** An account's caps from its limits columns (a pure function: the claim reads the columns itself). */
export type CapsOf = (account: AccountLimitsRow) => ConcurrencyCaps;

/** What {@link claimJobs} may take besides pending jobs. */
export interface ClaimOptions {
  /** A job on a real source whose runner has not heartbeat it for this long has lost its lease, ms (D28). */
  leaseMs?: number;
  /**
   * Look for such lapsed jobs too (default true). The runner asks on its timer only: a lease lapses after
   * tens of seconds, so looking on every submit's nudge would be a wasted query.
   */
  takeOver?: boolean;
}

/**
 * Claims up to `limit` jobs for `workerId`: first (with `takeOver`) jobs on real sources whose lease
 * lapsed (`processing`, with an upstream handle, no heartbeat for `leaseMs`: their runner died; D28),
 * which the new runner resumes by polling; then pending jobs, oldest first, whose owner is below its
 * concurrency cap. Marks them `processing` by `workerId`. Returns the claimed jobs, and the owners whose
 * pending jobs were left because they are at their cap (the runner claims again when one of their jobs
 * ends).
 *
 * One transaction of four statements whatever the number of jobs and accounts: the candidates (ids,
 * owners and kinds only), the owners' limits columns (locked `FOR UPDATE` on PostgreSQL), their running
 * jobs, and one `UPDATE ... RETURNING` of the chosen jobs. On PostgreSQL the running jobs are counted by a
 * statement after the account rows are locked, so its snapshot sees every claim and direct start
 * (jobs.ts) that committed before: the cap holds across processes.
 */
export async function claimJobs(
  db: Kysely<Database>,
  workerId: string,
  limit: number,
  capsOf: CapsOf,
  opts: ClaimOptions = {},
): Promise<ClaimResult> {
  const pg = isPostgres(db);
  const taken = opts.takeOver === false ? [] : await takeOverLapsed(db, workerId, limit, opts.leaseMs ?? DEFAULT_LEASE_MS);
  if (taken.length >= limit) return { jobs: taken, capped: [] };
  limit -= taken.length;
  const capped = new Set<string>();
  const fresh = await db.transaction().execute(async (trx) => {
    let q = trx
      .selectFrom("jobs")
      .select(["id", "account_id", "kind"])
      .where("status", "=", "pending")
      .where("kind", "in", ["image", "video"])
      .where((eb) => eb.or([eb("not_before", "is", null), eb("not_before", "<=", Date.now())]))
      .orderBy("created_at")
      .orderBy("id")
      // More than `limit`: some owners may be at their cap, and the jobs behind them must not starve.
      .limit(Math.max(limit * 4, 50));
    if (pg) q = q.forUpdate().skipLocked();
    const candidates = await q.execute();
    if (candidates.length === 0) return [];
    const accounts = [...new Set(candidates.map((c) => c.account_id))].sort();
    // Serializes claimers and submits per account on PostgreSQL (sorted to avoid deadlocks between workers).
    let owners = trx
      .selectFrom("accounts")
      .select(["id", "total_deposits_micros", "tier_override", "limits_override"])
      .where("id", "in", accounts)
      .orderBy("id");
    if (pg) owners = owners.forUpdate();
    const caps = new Map<string, ConcurrencyCaps>();
    for (const a of await owners.execute()) caps.set(a.id, capsOf(a));
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
    const chosen: string[] = [];
    for (const c of candidates) {
      if (chosen.length >= limit) break;
      const kind = c.kind as "image" | "video";
      const r = running.get(c.account_id)!;
      const cap = caps.get(c.account_id);
      if (!cap) continue; // the account is gone
      const free = cap.combined !== null ? r.image + r.video < cap.combined : r[kind] < cap[kind];
      if (!free) {
        capped.add(c.account_id);
        continue;
      }
      r[kind]++;
      chosen.push(c.id);
    }
    if (chosen.length === 0) return [];
    const now = Date.now();
    const claimed = await trx
      .updateTable("jobs")
      .set({ status: "processing", worker_id: workerId, started_at: now, heartbeat_at: now, updated_at: now, not_before: null, progress: null })
      .where("id", "in", chosen)
      .where("status", "=", "pending")
      .returning(CLAIM_COLUMNS)
      .execute();
    // In the queue's order (RETURNING's order is unspecified): the oldest job starts first.
    const order = new Map(chosen.map((id, i) => [id, i]));
    return claimed
      .map((c) => ({ ...c, fallback_layer: Number(c.fallback_layer), webhook_url: c.webhook_url ?? null }))
      .sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  });
  return { jobs: [...taken, ...fresh], capped: [...capped] };
}

/** What {@link claimJobs} claimed, and which owners' pending jobs it left because they are at their cap. */
export interface ClaimResult {
  jobs: ClaimedJob[];
  /** Accounts whose pending jobs wait for one of their running jobs to end (not for a free runner). */
  capped: string[];
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
      out.push({ ...job, fallback_layer: Number(job.fallback_layer), webhook_url: job.webhook_url ?? null });
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
