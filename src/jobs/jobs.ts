/**
 * The media job lifecycle's front half (spec "Media job", D3): submit (submit.ts: validate, cap the queue,
 * write the job row and its hold in one transaction, idempotency), read and list here (owner only, D30),
 * and the public job object with its `queue_position` and `progress` (view.ts, D30). The SQL is
 * jobs.repository.ts; the insert within the caps storage/job-queue.ts.
 *
 * The account's effective limits are a fact of the request: the route has them from authentication (the
 * principal) and passes them down ({@link JobOwner}), so a submit, a read, a wait and a list each use them
 * without reading them again; only a caller without them (the webhook renderer) has them read.
 */
import type { Executor } from "../billing/ledger.ts";
import type { JobsTable } from "../storage/schema.ts";
import { accountJobs, activeJobCounts, jobWithPlace } from "./jobs.repository.ts";
import { jobNotFound } from "./outputs.ts";
import { decodeJobRequest, type JobRequest } from "./request.ts";
import { combinedPool, type JobOwner, jobView, type JobView, limitsOfOwner, ownerOf, queuePositions } from "./view.ts";

// The job API in one import for its callers (routes, services): the view (view.ts) and the submit (submit.ts).
export { type JobOwner, jobView, type JobView, queuePositions, TERMINAL_STATUSES } from "./view.ts";
export { canonicalHash, type JobStarter, submitJob } from "./submit.ts";

/**
 * A job of the caller (`owner`: an account id, or the account with the limits its request carries). One
 * statement reads the job and, while it is pending, the jobs ahead of it (jobs.repository.ts).
 * @throws AppError 404 `job_not_found` (also for another account's job, D2).
 */
export async function getJob(db: Executor, publicBaseUrl: string, owner: string | JobOwner, jobId: string): Promise<JobView> {
  return (await getJobWithRequest(db, publicBaseUrl, owner, jobId)).job;
}

/** Filters and page of {@link listJobs}. */
export interface JobListQuery {
  /** Page size, 1..100. */
  limit: number;
  /** The `id` of the last job of the previous page, or null for the first page. */
  after: string | null;
  status: JobsTable["status"] | null;
  kind: JobsTable["kind"] | null;
  model: string | null;
  /** `desc` (default): newest first; `asc`: oldest first, after the job `after` (D37). */
  order?: "asc" | "desc";
}

/**
 * The caller's jobs, newest first (`created_at`, then `id`), with the filters of `GET /v1/jobs` (D30): at
 * most `limit` jobs older than the job `after`, and whether more exist. An `after` that names no job of
 * this account is ignored (the first page), as the ledger's and the gallery's cursors are. Another
 * account's jobs never appear.
 */
export async function listJobs(
  db: Executor,
  publicBaseUrl: string,
  owner: string | JobOwner,
  query: JobListQuery,
): Promise<{ jobs: JobView[]; requests: (JobRequest | null)[]; hasMore: boolean }> {
  const o = ownerOf(owner);
  const rows = await accountJobs(db, o.accountId, query, query.limit + 1, query.after);
  const page = rows.slice(0, query.limit);
  const positions = page.some((r) => r.status === "pending") ? await queuePositions(db, o) : new Map<string, number>();
  return {
    jobs: page.map((r) => jobView(publicBaseUrl, r, positions.get(r.id) ?? null)),
    requests: page.map((r) => requestOfRow(r.request_json)),
    hasMore: rows.length > query.limit,
  };
}

/** A row's stored request (request.ts), or null when it has none that decodes (an audio output's row). */
function requestOfRow(json: string | null | undefined): JobRequest | null {
  if (!json) return null;
  try {
    return decodeJobRequest(json);
  } catch {
    return null;
  }
}

/**
 * {@link getJob} with the job's stored request (request.ts `JobRequest`): what a dialect renders besides
 * the D3 object (the OpenAI dialect's `seconds` and `size`, D37). Null for a row without one.
 * @throws AppError 404 `job_not_found` (also for another account's job, D2).
 */
export async function getJobWithRequest(db: Executor, publicBaseUrl: string, owner: string | JobOwner, jobId: string): Promise<{ job: JobView; request: JobRequest | null }> {
  const o = ownerOf(owner);
  const r = await jobWithPlace(db, jobId, o.accountId);
  if (!r) throw jobNotFound();
  let position: number | null = null;
  if (r.status === "pending" && (r.kind === "image" || r.kind === "video")) {
    // The pool is the kind, or image and video together on a combined pool (tier 4), per the limits.
    const combined = combinedPool(await limitsOfOwner(db, o));
    position = Number((combined ? r.ahead_pool : r.ahead_kind) ?? 0) + 1;
  }
  return { job: jobView(publicBaseUrl, r, position), request: requestOfRow(r.request_json) };
}

/** Running and queued jobs of an account by kind (for `GET /v1/auth/limits`). */
export async function jobUsage(
  db: Executor,
  accountId: string,
): Promise<{ image_running: number; image_queued: number; video_running: number; video_queued: number }> {
  const rows = await activeJobCounts(db, accountId);
  const n = (kind: string, status: string) => rows.find((r) => r.kind === kind && r.status === status)?.n ?? 0;
  return {
    image_running: n("image", "processing"),
    image_queued: n("image", "pending"),
    video_running: n("video", "processing"),
    video_queued: n("video", "pending"),
  };
}
