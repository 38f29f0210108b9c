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
import { AppError, errors } from "../errors.ts";
import type { Database } from "../storage/schema.ts";
import type { UpstreamHandle } from "../upstreams/types.ts";
import type { JobChangeFeed } from "./changes.ts";
import type { SourceSlot } from "./durable.ts";
import { getJob, type JobOwner, type JobView } from "./jobs.ts";
import { jobStatusOf, overdueDeadlineJobs, upstreamHandleOf } from "./jobs.repository.ts";
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
  const accountId = typeof owner === "string" ? owner : owner.accountId;
  await endAsCanceled(deps, accountId, jobId, OWNER_CANCEL);
  return getJob(deps.db, deps.publicBaseUrl, owner, jobId);
}

/** Why a job is canceled: the `error` it ends `failed` with, by the status it was in. */
type CancelReason = (from: "pending" | "processing") => { code: string; message: string };

/** Canceled by its owner (D30). */
const OWNER_CANCEL: CancelReason = () => ({ code: "canceled", message: "The job was canceled by its owner; the hold was released." });

/**
 * Its deadline passed (`Cancel-After`, D47): `aborted` when it had not started (Replicate's status for a
 * prediction ended before it ran), `canceled` when it was running.
 */
const DEADLINE_CANCEL: CancelReason = (from) =>
  from === "pending"
    ? { code: "aborted", message: "The job's Cancel-After deadline passed before it started; the hold was released." }
    : { code: "canceled", message: "The job's Cancel-After deadline passed while it ran; it was canceled and the hold released." };

/**
 * Ends job `jobId` of `accountId` `failed` with `why`'s error and its hold released (see the module
 * comment), then withdraws the upstream request.
 * @throws AppError 404 `job_not_found`, 409 `job_not_cancelable` (ended, or kept changing).
 */
async function endAsCanceled(deps: Omit<CancelDeps, "publicBaseUrl">, accountId: string, jobId: string, why: CancelReason): Promise<void> {
  const { db } = deps;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const status = await jobStatusOf(db, jobId, accountId);
    if (status === undefined) throw jobNotFound();
    if (status !== "pending" && status !== "processing") {
      throw errors.jobNotCancelable(`The job already ended (${status}); only pending and processing jobs can be canceled.`);
    }
    const ended = await endJobWithoutCharge(db, { id: jobId, from: status, to: "failed", ...why(status) }, deps.changes);
    if (!ended) continue; // it changed meanwhile (started, or ended): look again
    const handle = await upstreamHandleOf(db, jobId);
    if (handle !== null) await cancelUpstream(deps, jobId, JSON.parse(handle) as UpstreamHandle);
    return;
  }
  throw errors.jobNotCancelable("The job kept changing state while it was being canceled; read it and retry.");
}

/** Jobs a deadline pass ends at most (the next pass takes the rest). */
const DEADLINE_BATCH = 200;

/**
 * Cancels the jobs whose deadline (`Cancel-After`, D47) passed by `now` (epoch ms): `aborted` if not
 * started, else `canceled`, each hold released and its upstream request withdrawn; returns how many. Run by
 * the runner's sweep on every process (each end is conditional on the status read), and at a deadline by
 * the process that took the job ({@link cancelAtDeadline}). A job that ended meanwhile is skipped.
 */
export async function cancelOverdueJobs(deps: Omit<CancelDeps, "publicBaseUrl">, now = Date.now()): Promise<number> {
  let n = 0;
  for (const j of await overdueDeadlineJobs(deps.db, now, DEADLINE_BATCH)) {
    try {
      await endAsCanceled(deps, j.account_id, j.id, DEADLINE_CANCEL);
      n++;
    } catch (err) {
      if (!(err instanceof AppError)) throw err; // ended or gone meanwhile: nothing to do
    }
  }
  return n;
}

/**
 * Ends job `jobId` of `accountId` at its deadline `deadlineAt` (epoch ms) if it is still running then: a
 * timer of this process (unref'd, so it never keeps the process alive); the sweep's
 * {@link cancelOverdueJobs} covers a process that stops first.
 */
export function cancelAtDeadline(deps: Omit<CancelDeps, "publicBaseUrl">, accountId: string, jobId: string, deadlineAt: number): void {
  const timer = setTimeout(() => {
    endAsCanceled(deps, accountId, jobId, DEADLINE_CANCEL).catch((err: unknown) => {
      if (!(err instanceof AppError)) deps.log.warn({ err, job: jobId }, "cancel at the job's deadline failed; the sweep retries");
    });
  }, Math.max(0, deadlineAt - Date.now()));
  timer.unref();
}

/** Asks the source that accepted the job to cancel it (D28); logs instead of throwing. */
async function cancelUpstream(deps: Omit<CancelDeps, "publicBaseUrl">, jobId: string, handle: UpstreamHandle): Promise<void> {
  const slot = deps.sourceNamed?.(handle.source);
  if (slot === undefined) {
    deps.log.warn({ job: jobId, source: handle.source }, "canceled job's source is no longer configured; upstream request left running");
    return;
  }
  await slot.source
    .cancel(handle, AbortSignal.timeout(UPSTREAM_CANCEL_TIMEOUT_MS))
    .catch((err: unknown) => deps.log.warn({ err, job: jobId, source: handle.source }, "upstream cancel of a canceled job failed"));
}
