/**
 * Watching a job until it changes or ends (D30): the event stream of `GET /v1/jobs/{id}/events`, the
 * `Prefer: wait=N` answers and the `Retry-After` of a poll.
 *
 * A watcher re-reads its job (one indexed read, plus the account's pending jobs while it is pending) when
 * this process announces a change of one of the account's jobs (changes.ts: the runner, a cancel, the
 * sweep; a `Prefer: wait` only for changes of its own job) and at the latest every {@link WATCH_POLL_MS}, which is how changes made by other processes
 * (worker processes, another gateway) are seen.
 */
import type { Executor } from "../billing/ledger.ts";
import type { JobChangeFeed } from "./changes.ts";
import { getJob, type JobOwner, type JobView, TERMINAL_STATUSES } from "./jobs.ts";

/** Longest time between two reads of a watched job, ms: the delay of a change made by another process. */
export const WATCH_POLL_MS = 500;

/** What a watcher reads with. */
export interface WatchDeps {
  db: Executor;
  publicBaseUrl: string;
  /** Between reads, ms (default {@link WATCH_POLL_MS}). */
  pollMs?: number;
  /** The gateway's job feed (changes.ts), whose notices wake the watcher before its next poll. */
  changes: JobChangeFeed;
}

/** Whether the job has ended (terminal status). */
export function isTerminal(job: JobView): boolean {
  return TERMINAL_STATUSES.has(job.status);
}

/**
 * Seconds until a sensible next poll of a job (`Retry-After` of `GET /v1/jobs/{id}`, D30), or null for a
 * terminal job. Within the cadence the spec recommends (images every 1-2 s, videos every 2-5 s): a running
 * job at the short end, a waiting one at the long end, as it cannot finish before it starts.
 */
export function pollAfterSeconds(job: JobView): number | null {
  if (isTerminal(job)) return null;
  const video = job.kind === "video";
  if (job.status === "pending") return video ? 5 : 2;
  return video ? 2 : 1;
}

/**
 * Wakes a waiting watcher early: a notice received while the watcher was reading is kept, so the next
 * wait returns at once instead of missing it.
 */
class Waker {
  #pending = false;
  #resolve: (() => void) | null = null;

  wake(): void {
    this.#pending = true;
    this.#resolve?.();
  }

  /** Resolves after a wake, after `ms`, or when `signal` aborts. */
  async wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#pending || signal?.aborted) {
      this.#pending = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.#resolve = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
      this.#resolve = done;
    });
    this.#pending = false;
  }
}

/** The fields whose change is an event (D30): status, queue position and progress. */
function eventKey(job: JobView): string {
  return `${job.status}|${job.queue_position ?? ""}|${job.progress ?? ""}`;
}

/**
 * The job `jobId` of `owner` (an account id, or the account with the limits of the caller's request, which
 * place a pending job in its queue without reading them at each change) now and at every later change of its status, `queue_position` or
 * `progress`, ending after the first terminal view, or when `signal` aborts (the client left, the server
 * closes).
 * @throws AppError 404 `job_not_found` from the first read (unknown or another account's job).
 */
export async function* watchJob(deps: WatchDeps, owner: string | JobOwner, jobId: string, signal?: AbortSignal): AsyncGenerator<JobView> {
  const accountId = typeof owner === "string" ? owner : owner.accountId;
  const waker = new Waker();
  const unsubscribe = deps.changes.subscribe(accountId, () => waker.wake());
  try {
    let last: string | null = null;
    for (;;) {
      const job = await getJob(deps.db, deps.publicBaseUrl, owner, jobId);
      const key = eventKey(job);
      if (key !== last) {
        last = key;
        yield job;
      }
      if (isTerminal(job) || signal?.aborted) return;
      await waker.wait(deps.pollMs ?? WATCH_POLL_MS, signal);
      if (signal?.aborted) return;
    }
  } finally {
    unsubscribe();
  }
}

/**
 * `Prefer: wait` (D30): the job once it is terminal, or as it is after `waitMs` (or when `signal` aborts),
 * whichever comes first. `first` is the view the caller already holds (a submit's new job), saving a read.
 * `owner`: an account id, or the account with the limits of the caller's request (see {@link watchJob}).
 * @throws AppError 404 `job_not_found` (unknown or another account's job).
 */
export async function waitForJobEnd(
  deps: WatchDeps,
  owner: string | JobOwner,
  jobId: string,
  waitMs: number,
  signal?: AbortSignal,
  first?: JobView,
): Promise<JobView> {
  if (first !== undefined && isTerminal(first)) return first;
  const accountId = typeof owner === "string" ? owner : owner.accountId;
  const deadline = Date.now() + waitMs;
  const waker = new Waker();
  // Only this job's end matters here (not the queue places an event stream shows): a change of another
  // job of the account does not wake it, so many waiting callers of one account cost one read each per
  // change of their own job, not one per change of any job of theirs.
  const unsubscribe = deps.changes.subscribe(accountId, (c) => {
    if (c.jobId === jobId) waker.wake();
  });
  try {
    let job = first ?? (await getJob(deps.db, deps.publicBaseUrl, owner, jobId));
    while (!isTerminal(job) && !signal?.aborted) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      await waker.wait(Math.min(left, deps.pollMs ?? WATCH_POLL_MS), signal);
      job = await getJob(deps.db, deps.publicBaseUrl, owner, jobId);
    }
    return job;
  } finally {
    unsubscribe();
  }
}
