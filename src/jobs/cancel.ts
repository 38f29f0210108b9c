/**
 * Cancellation of a media job by its owner (D30 `POST /v1/jobs/{id}/cancel`, D28): a `pending` or
 * `processing` job ends `failed` with `error.code` `canceled` and its whole hold released, through
 * {@link endJobWithoutCharge} (so `onJobEnded` runs in the same transaction), then the upstream request is
 * withdrawn at the source that accepted it.
 *
 * Why a cancel racing the job's success ends in exactly one of them: both are one conditional update of
 * the job row inside the transaction that moves the money (the cancel: `status = <what it read>`, then the
 * release; the runner's success: `status = 'processing' AND worker_id = <runner>`, then the capture). The
 * database serializes the two updates of the row (PostgreSQL's row lock re-checks the condition after the
 * other commits; SQLite runs one write transaction at a time), so the second finds the row changed,
 * updates nothing and moves no money. The loser learns it: the runner drops its outputs, the cancel
 * re-reads the row and answers 409 for a job that just succeeded.
 */
import type { Kysely } from "kysely";
import { errors } from "../errors.ts";
import type { Database } from "../storage/schema.ts";
import type { UpstreamHandle } from "../upstreams/types.ts";
import type { JobChangeFeed } from "./changes.ts";
import type { SourceSlot } from "./durable.ts";
import { getJob, type JobOwner, type JobView, TERMINAL_STATUSES } from "./jobs.ts";
import { jobStatusOf, upstreamHandleOf } from "./jobs.repository.ts";
import { jobNotFound } from "./outputs.ts";
import { endJobWithoutCharge } from "./sweep.ts";

/** What {@link cancelJob} needs. */
export interface CancelDeps {
  db: Kysely<Database>;
  publicBaseUrl: string;
  /** The configured job source named `name` (D25), to withdraw the upstream request; absent: none configured. */
  sourceNamed?: (name: string) => SourceSlot | undefined;
  log: { warn(obj: object, msg?: string): void };
  /** The gateway's job feed (changes.ts), told of the cancel. */
  changes: JobChangeFeed;
}

/** How long the answer waits for the source to acknowledge the upstream cancel, ms (best effort). */
const UPSTREAM_CANCEL_TIMEOUT_MS = 10_000;

/**
 * The job only moves forward (pending, processing, terminal; back to pending only on a hand-back), so a
 * cancel that keeps losing to transitions gives up after this many attempts rather than loop.
 */
const MAX_ATTEMPTS = 20;

/**
 * Cancels job `jobId` of `owner` (an account id, or the caller's account with the limits its request was
 * authenticated with: the view's queue place needs them) and returns it as it is now (`failed`, `error.code` `canceled`).
 * The upstream request (when a source accepted the job: the handle on the row, which no runner can change
 * once the row ended) is withdrawn before the answer; a failure to withdraw it is logged, not answered:
 * the customer's hold is released either way.
 * @throws AppError 404 `job_not_found` (unknown or another account's job), 409 `job_not_cancelable` (the
 *   job already ended, or kept changing state during {@link MAX_ATTEMPTS} attempts).
 */
export async function cancelJob(deps: CancelDeps, owner: string | JobOwner, jobId: string): Promise<JobView> {
  const { db } = deps;
  const accountId = typeof owner === "string" ? owner : owner.accountId;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const status = await jobStatusOf(db, jobId, accountId);
    if (status === undefined) throw jobNotFound();
    if (TERMINAL_STATUSES.has(status)) {
      throw errors.jobNotCancelable(`The job already ended (${status}); only pending and processing jobs can be canceled.`);
    }
    const ended = await endJobWithoutCharge(
      db,
      { id: jobId, from: status, to: "failed", code: "canceled", message: "The job was canceled by its owner; the hold was released." },
      deps.changes,
    );
    if (!ended) continue; // it changed meanwhile (started, or ended): look again
    const handle = await upstreamHandleOf(db, jobId);
    if (handle !== null) await cancelUpstream(deps, jobId, JSON.parse(handle) as UpstreamHandle);
    return getJob(db, deps.publicBaseUrl, owner, jobId);
  }
  throw errors.jobNotCancelable("The job kept changing state while it was being canceled; read it and retry.");
}

/** Asks the source that accepted the job to cancel it (D28); logs instead of throwing. */
async function cancelUpstream(deps: CancelDeps, jobId: string, handle: UpstreamHandle): Promise<void> {
  const slot = deps.sourceNamed?.(handle.source);
  if (slot === undefined) {
    deps.log.warn({ job: jobId, source: handle.source }, "canceled job's source is no longer configured; upstream request left running");
    return;
  }
  await slot.source
    .cancel(handle, AbortSignal.timeout(UPSTREAM_CANCEL_TIMEOUT_MS))
    .catch((err: unknown) => deps.log.warn({ err, job: jobId, source: handle.source }, "upstream cancel of a canceled job failed"));
}
