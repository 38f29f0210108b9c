/**
 * The SQL of the job API's front half (jobs.ts, cancel.ts, stats.ts): a caller's job with its place in
 * the queue, the list page, the pending jobs that order the queue, the idempotency lookups of a submit,
 * the counts of running and queued jobs. Free functions taking the Kysely handle or a transaction first,
 * returning the rows as the callers map them (jobs.ts `jobView`). The insert of a submit and the claims
 * are storage/job-queue.ts (the queue primitives).
 */
import type { Executor } from "../billing/ledger.ts";
import { prepare } from "../storage/prepared.ts";
import type { JobStatus, JobsTable, KeyMode } from "../storage/schema.ts";
import { olderThanJob } from "./outputs.repository.ts";

/** The columns a job's public view (D3, jobs.ts `jobView`) is rendered from. */
export type JobViewRow = Pick<
  JobsTable,
  | "id"
  | "kind"
  | "model"
  | "status"
  | "hold_micros"
  | "cost_micros"
  | "created_at"
  | "updated_at"
  | "output_json"
  | "error_code"
  | "error_message"
  | "idempotency_key"
  | "duration_sec"
  | "request_json"
> & { fallback_layer: number; progress?: number | null; mode: KeyMode };

const VIEW_COLUMNS = [
  "id",
  "kind",
  "model",
  "status",
  "hold_micros",
  "cost_micros",
  "created_at",
  "updated_at",
  "output_json",
  "error_code",
  "error_message",
  "idempotency_key",
  "duration_sec",
  "fallback_layer",
  "progress",
  "request_json",
  "mode",
] as const;

/** Statuses that occupy a concurrency slot or a queue place. */
const ACTIVE = ["pending", "processing"] as const;

/**
 * The account's `pending` image and video jobs (id and kind) in the order the runner starts them
 * (`created_at`, then `id`: the order of `claimJobs`). One indexed read; the queue caps keep them few.
 */
export async function pendingMediaJobs(db: Executor, accountId: string): Promise<{ id: string; kind: JobsTable["kind"] }[]> {
  return db
    .selectFrom("jobs")
    .select(["id", "kind"])
    .where("account_id", "=", accountId)
    .where("status", "=", "pending")
    .where("kind", "in", ["image", "video"])
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

/**
 * A job of an account with, while it is `pending`, the number of the account's pending jobs the runner
 * starts before it (the order of `claimJobs`) of its kind (`ahead_kind`) and of image and video together
 * (`ahead_pool`, a combined pool). One statement, so the status and the place come from the same state:
 * read apart, a claim committed between the two reads showed a pending job without a place. Compiled once
 * (storage/prepared.ts): every poll and every event of a stream runs it.
 */
const jobOfAccount = prepare((db, p) =>
  db
    .selectFrom("jobs as j")
    .select([...VIEW_COLUMNS])
    .select((eb) => {
      const ahead = (sameKind: boolean) => {
        let q = eb
          .selectFrom("jobs as q")
          .select((e) => e.fn.countAll<number>().as("n"))
          .whereRef("q.account_id", "=", "j.account_id")
          .where("q.status", "=", "pending")
          .where((e) => e.or([e("q.created_at", "<", e.ref("j.created_at")), e.and([e("q.created_at", "=", e.ref("j.created_at")), e("q.id", "<", e.ref("j.id"))])]));
        q = sameKind ? q.whereRef("q.kind", "=", "j.kind") : q.where("q.kind", "in", ["image", "video"]);
        return eb.case().when("j.status", "=", "pending").then(q.$asScalar()).else(null).end();
      };
      return [ahead(true).as("ahead_kind"), ahead(false).as("ahead_pool")];
    })
    .where("j.id", "=", p<string>(0))
    .where("j.account_id", "=", p<string>(1)),
);

/**
 * Job `jobId` of `accountId` with the pending jobs ahead of it (`ahead_kind`, `ahead_pool`: null unless
 * it is pending), or undefined (unknown, or another account's job).
 */
export async function jobWithPlace(
  db: Executor,
  jobId: string,
  accountId: string,
): Promise<(JobViewRow & { ahead_kind: number | null; ahead_pool: number | null }) | undefined> {
  return (await jobOfAccount(db, jobId, accountId)).rows[0];
}

/** The filters of a job list page (jobs.ts `JobListQuery`): each null when not filtered on. */
export interface JobListFilter {
  status: JobsTable["status"] | null;
  kind: JobsTable["kind"] | null;
  model: string | null;
  /** `desc` (default): newest first; `asc`: oldest first (the OpenAI dialect's `order`, D37). */
  order?: "asc" | "desc";
}

/**
 * At most `limit` jobs of `accountId` matching `filter`, newest first (`created_at`, then `id`), older
 * than job `after` (null, or not the account's job: from the newest); with `order: "asc"` oldest first,
 * newer than job `after`.
 */
export async function accountJobs(db: Executor, accountId: string, filter: JobListFilter, limit: number, after: string | null): Promise<JobViewRow[]> {
  const asc = filter.order === "asc";
  let q = db
    .selectFrom("jobs")
    .select([...VIEW_COLUMNS])
    .where("account_id", "=", accountId)
    .orderBy("created_at", asc ? "asc" : "desc")
    .orderBy("id", asc ? "asc" : "desc")
    .limit(limit);
  if (filter.status !== null) q = q.where("status", "=", filter.status);
  if (filter.kind !== null) q = q.where("kind", "=", filter.kind);
  if (filter.model !== null) q = q.where("model", "=", filter.model);
  if (!asc) return (await olderThanJob(db, q, accountId, after)).execute();
  if (after === null) return q.execute();
  const anchor = await db.selectFrom("jobs").select(["created_at", "id"]).where("id", "=", after).where("account_id", "=", accountId).executeTakeFirst();
  if (!anchor) return q.execute();
  const at = Number(anchor.created_at);
  return q.where((eb) => eb.or([eb("created_at", ">", at), eb.and([eb("created_at", "=", at), eb("id", ">", anchor.id)])])).execute();
}

/** The job submitted with `(apiKeyId, key)`, with its request's hash and owner, or undefined. */
export async function jobByIdempotencyKey(
  db: Executor,
  apiKeyId: string,
  key: string,
): Promise<(JobViewRow & { request_hash: string | null; account_id: string }) | undefined> {
  return db
    .selectFrom("jobs")
    .select([...VIEW_COLUMNS, "request_hash", "account_id"])
    .where("api_key_id", "=", apiKeyId)
    .where("idempotency_key", "=", key)
    .executeTakeFirst();
}

/** Whether a job with `(apiKeyId, key)` exists (read inside a submit's transaction). */
export async function idempotencyKeyTaken(db: Executor, apiKeyId: string, key: string): Promise<boolean> {
  const row = await db.selectFrom("jobs").select("id").where("api_key_id", "=", apiKeyId).where("idempotency_key", "=", key).executeTakeFirst();
  return row !== undefined;
}

/**
 * Marks job `jobId` as written without its texts (D46 zero retention, in the submit's transaction): `holderId`
 * names the process holding them in memory (only its runner claims the job before an upstream accepts it),
 * and the texts count as cleared from `now` (the retention sweep has nothing to remove).
 */
export async function markTextsWithheld(db: Executor, jobId: string, holderId: string, now: number): Promise<void> {
  await db.updateTable("jobs").set({ texts_holder: holderId, texts_cleared_at: now }).where("id", "=", jobId).execute();
}

/** Running (`processing`) and queued (`pending`) jobs of `accountId`, counted by kind and status; pairs without jobs absent. */
export async function activeJobCounts(db: Executor, accountId: string): Promise<{ kind: JobsTable["kind"]; status: JobStatus; n: number }[]> {
  const rows = await db
    .selectFrom("jobs")
    .select(["kind", "status", (eb) => eb.fn.countAll<number>().as("n")])
    .where("account_id", "=", accountId)
    .where("status", "in", [...ACTIVE])
    .groupBy(["kind", "status"])
    .execute();
  return rows.map((r) => ({ kind: r.kind, status: r.status, n: Number(r.n) }));
}

/** Jobs per (kind, status) pair across every account; pairs without jobs absent. */
export async function jobCountsByKindAndStatus(db: Executor): Promise<{ kind: JobsTable["kind"]; status: JobStatus; n: number }[]> {
  const rows = await db
    .selectFrom("jobs")
    .select(["kind", "status", (eb) => eb.fn.countAll<number>().as("n")])
    .groupBy(["kind", "status"])
    .execute();
  return rows.map((r) => ({ kind: r.kind, status: r.status, n: Number(r.n) }));
}

/** The status of job `jobId` of `accountId`, or undefined (unknown, or another account's job). */
export async function jobStatusOf(db: Executor, jobId: string, accountId: string): Promise<JobStatus | undefined> {
  const row = await db.selectFrom("jobs").select("status").where("id", "=", jobId).where("account_id", "=", accountId).executeTakeFirst();
  return row?.status;
}

/** The upstream handle stored on job `jobId` (`upstream_handle_json`), null when none. @throws when the job does not exist. */
export async function upstreamHandleOf(db: Executor, jobId: string): Promise<string | null> {
  const row = await db.selectFrom("jobs").select("upstream_handle_json").where("id", "=", jobId).executeTakeFirstOrThrow();
  return row.upstream_handle_json;
}

/** The status and stored output of job `jobId` of `accountId`, or undefined (delete-output.ts). */
export async function jobOutputOf(db: Executor, jobId: string, accountId: string): Promise<Pick<JobsTable, "status" | "output_json"> | undefined> {
  return db.selectFrom("jobs").select(["status", "output_json"]).where("id", "=", jobId).where("account_id", "=", accountId).executeTakeFirst();
}

/** Clears job `jobId`'s stored output when it is still `outputJson` (two racing deletes clear it once). */
export async function clearJobOutput(db: Executor, jobId: string, outputJson: string): Promise<void> {
  await db.updateTable("jobs").set({ output_json: null, updated_at: Date.now() }).where("id", "=", jobId).where("output_json", "=", outputJson).execute();
}

/** Writes a dialect's facts on job `jobId` (D47), in the submit's transaction. */
export async function writeJobDialectFacts(
  db: Executor,
  jobId: string,
  f: { deadline_at: number | null; webhook_events_json: string | null; dialect_json: string | null; webhook_url?: string },
): Promise<void> {
  await db.updateTable("jobs").set(f).where("id", "=", jobId).execute();
}

/** What renders a job as a dialect's object besides its view (D47), per job of `accountId` among `ids`. */
export async function jobDialectRows(
  db: Executor,
  accountId: string,
  ids: readonly string[],
): Promise<{ id: string; started_at: number | null; deadline_at: number | null; webhook_url: string | null; webhook_events_json: string | null; dialect_json: string | null }[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom("jobs")
    .select(["id", "started_at", "deadline_at", "webhook_url", "webhook_events_json", "dialect_json"])
    .where("account_id", "=", accountId)
    .where("id", "in", [...ids])
    .execute();
}

/** At most `limit` `pending` or `processing` jobs whose deadline (`deadline_at`, D47) is at or before `now` (epoch ms). */
export async function overdueDeadlineJobs(db: Executor, now: number, limit: number): Promise<{ id: string; account_id: string }[]> {
  return db
    .selectFrom("jobs")
    .select(["id", "account_id"])
    .where("deadline_at", "is not", null)
    .where("deadline_at", "<=", now)
    .where("status", "in", [...ACTIVE])
    .limit(limit)
    .execute();
}
