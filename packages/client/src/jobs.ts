/**
 * Image and video jobs on top of the typed client: submit one and follow it to a terminal status
 * ({@link submitAndWait}, {@link waitForJob}), by the job's events stream (`GET /v1/jobs/{id}/events`, D30)
 * when the gateway has one and by polling `GET /v1/jobs/{id}` (honouring `Retry-After`) otherwise; list and
 * cancel jobs (D30). Saving the outputs is in `download.ts`.
 *
 * ```ts
 * const job = await submitAndWait(api, "/v1/images/generations", { model: "imgA-v4", prompt: "a fox" }, {
 *   onUpdate: (j) => console.error(j.status, j.queue_position ?? "", j.progress ?? ""),
 * });
 * if (job.status === "succeeded") await downloadOutput(job, "fox.png");
 * ```
 */
import { setTimeout as sleep } from "node:timers/promises";
import { GatewayError, gatewayError, retryAfterSeconds } from "./errors.ts";
import type { GatewayClient } from "./index.ts";
import { looseCall } from "./loose.ts";
import { sseEvents } from "./sse.ts";
import type { components, paths } from "./schema.ts";

// The events parser lives in sse.ts, free of Node modules, so the web console can use it too.
export { sseEvents, type ServerSentEvent } from "./sse.ts";

/**
 * The job object of D3, plus the D30 fields a non-terminal job carries: `queue_position` (pending: 1 =
 * starts next among the caller's jobs of its pool) and `progress` (processing: 0..1, or null when the
 * source does not report it). Both are absent on gateways without D30.
 */
export type MediaJob = components["schemas"]["MediaJob"] & { queue_position?: number | null; progress?: number | null };

/** A job's status (D3). */
export type JobStatus = MediaJob["status"];

/** The submit routes of media jobs. */
export type JobSubmitPath = "/v1/images/generations" | "/v1/videos/generations" | "/v1/genmedia/jobs";

/** The JSON body of a submit route, as the OpenAPI document has it. */
export type JobSubmitBody<P extends JobSubmitPath> = NonNullable<paths[P]["post"]["requestBody"]>["content"]["application/json"];

/** The statuses after which a job never changes again (spec "Facts that hold for jobs", 3). */
export const TERMINAL_STATUSES: readonly JobStatus[] = ["succeeded", "failed", "refunded", "expired"];

/** Whether `status` is terminal. */
export function isTerminal(status: string): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** Options of {@link waitForJob} and {@link submitAndWait}. */
export interface WaitOptions {
  /** Called with the job at the start and at every change of `status`, `queue_position` or `progress`. */
  onUpdate?: (job: MediaJob) => void;
  /** Aborts the wait (the job itself keeps running: cancel it with {@link cancelJob}). Rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Milliseconds between polls when an answer carries no `Retry-After`: default 1000 for images and
   * 2000 for video (the spec's "every 1-2 s" and "every 2-5 s").
   */
  pollIntervalMs?: number;
  /** Follow `GET /v1/jobs/{id}/events` when the gateway serves it (default true); false polls only. */
  events?: boolean;
}

/** Options of {@link submitAndWait}: those of the wait, plus headers for the submit (e.g. `X-Svc-Simulate`). */
export interface SubmitOptions extends WaitOptions {
  headers?: Record<string, string>;
}

/**
 * Submits a media job at `path` with `body` and follows it until its status is terminal (see
 * {@link waitForJob}). Resolves with the terminal job, whatever its status: `succeeded` (with
 * `output`), or `failed`, `refunded`, `expired` (with `error`; the hold was released, nothing charged, D3).
 * Throws a {@link GatewayError} when the submit is refused (400 `invalid_model`, 402 `insufficient_balance`,
 * 429 `rate_limited`, ...) or a poll fails for good; an aborted `signal` rejects with its reason.
 */
export async function submitAndWait<P extends JobSubmitPath>(
  client: GatewayClient,
  path: P,
  body: JobSubmitBody<P>,
  options: SubmitOptions = {},
): Promise<MediaJob> {
  // The three routes share one body shape per kind; openapi-fetch's overloads cannot narrow a generic path.
  const post = client.POST as unknown as (
    p: string,
    init: { body: unknown; headers?: Record<string, string>; signal?: AbortSignal },
  ) => Promise<{ data?: MediaJob; error?: unknown; response: Response }>;
  const { data, error, response } = await post(path, { body, headers: options.headers, signal: options.signal });
  if (!response.ok || !data) throw gatewayError(response, error);
  return waitForJob(client, data, options);
}

/**
 * Follows a job (given as the object a submit answered, or as its id) until its status is terminal and
 * resolves with the terminal job. `onUpdate` sees the first state and every change.
 *
 * The events stream of D30 is tried first: one `job` event at once and at every change, ending after a
 * terminal status. A gateway without it (404 `not_found` or 405 for the path) or a stream that ends early
 * is followed by polling `GET /v1/jobs/{id}`, waiting `Retry-After` seconds when the answer sets it (D30)
 * and `pollIntervalMs` otherwise. A poll answered 429 or 5xx, or lost to a network error, is retried after
 * `Retry-After` (or a growing backoff, at most 10 times in a row); any other error is thrown, e.g. 404
 * `job_not_found`.
 */
export async function waitForJob(client: GatewayClient, jobOrId: MediaJob | string, options: WaitOptions = {}): Promise<MediaJob> {
  const { signal } = options;
  signal?.throwIfAborted();
  let job: MediaJob;
  let lastRetryAfterS: number | null = null;
  if (typeof jobOrId === "string") {
    const first = await getJob(client, jobOrId, signal);
    job = first.job;
    lastRetryAfterS = first.retryAfterS;
  } else {
    job = jobOrId;
  }
  const updates = changeTracker(options.onUpdate);
  updates(job);
  if (isTerminal(job.status)) return job;

  if (options.events !== false) {
    const followed = await followEvents(client, job.id, updates, signal);
    if (followed.job) job = followed.job;
    if (isTerminal(job.status)) return job;
    // No stream (an older gateway) or one that ended early: poll at once, then at the usual pace.
    if (followed.outcome === "ended") lastRetryAfterS = 0;
  }

  const interval = options.pollIntervalMs ?? (job.kind === "video" ? 2000 : 1000);
  let failures = 0;
  for (;;) {
    const delayMs = lastRetryAfterS !== null ? lastRetryAfterS * 1000 : interval;
    // A floor keeps a `Retry-After: 0` from turning into a busy loop.
    await sleep(Math.max(100, delayMs), undefined, { signal });
    try {
      const polled = await getJob(client, job.id, signal);
      failures = 0;
      job = polled.job;
      lastRetryAfterS = polled.retryAfterS;
      updates(job);
      if (isTerminal(job.status)) return job;
    } catch (err) {
      signal?.throwIfAborted();
      const transient = !(err instanceof GatewayError) || err.status === 429 || err.status >= 500;
      if (!transient || ++failures > 10) throw err;
      const backoffS = Math.min(30, 2 ** failures / 2);
      lastRetryAfterS = err instanceof GatewayError && err.retryAfterS !== null ? err.retryAfterS : backoffS;
    }
  }
}

/** `GET /v1/jobs/{id}`: the job and the answer's `Retry-After` (seconds, or null). */
export async function getJob(client: GatewayClient, id: string, signal?: AbortSignal): Promise<{ job: MediaJob; retryAfterS: number | null }> {
  const { data, error, response } = await client.GET("/v1/jobs/{id}", { params: { path: { id } }, signal });
  if (!response.ok || !data) throw gatewayError(response, error);
  return { job: data, retryAfterS: retryAfterSeconds(response.headers) };
}

/** A page of `GET /v1/jobs` (D30), newest first. */
export interface JobList {
  object: "list";
  data: MediaJob[];
  has_more: boolean;
}

/** Filters of `GET /v1/jobs` (D30); `after` is the `id` of the last job of the previous page. */
export interface JobListQuery {
  limit?: number;
  after?: string;
  status?: string;
  kind?: string;
  model?: string;
}

/** `GET /v1/jobs` (D30): the caller's jobs, newest first. Throws a {@link GatewayError} on a non-2xx answer. */
export async function listJobs(client: GatewayClient, query: JobListQuery = {}, signal?: AbortSignal): Promise<JobList> {
  const { data } = await looseCall(client, "GET", "/v1/jobs", { query: { ...query }, signal });
  return data as JobList;
}

/**
 * `POST /v1/jobs/{id}/cancel` (D30): a pending or processing job ends `failed` with `error.code`
 * `canceled` and its whole hold released; resolves with that job. A terminal job: 409
 * `job_not_cancelable`; unknown or another user's: 404 `job_not_found` (thrown as {@link GatewayError}).
 */
export async function cancelJob(client: GatewayClient, id: string, signal?: AbortSignal): Promise<MediaJob> {
  const { data } = await looseCall(client, "POST", `/v1/jobs/${encodeURIComponent(id)}/cancel`, { signal });
  return data as MediaJob;
}

/** Calls `onUpdate` for the first job it is given and then only when status, queue position or progress changed. */
function changeTracker(onUpdate: ((job: MediaJob) => void) | undefined): (job: MediaJob) => void {
  let last: string | null = null;
  return (job) => {
    const key = JSON.stringify([job.status, job.queue_position ?? null, job.progress ?? null]);
    if (key === last) return;
    last = key;
    onUpdate?.(job);
  };
}

/**
 * Follows `GET /v1/jobs/{id}/events`. `outcome` is `unavailable` when the gateway has no such route,
 * `ended` when the stream closed (after a terminal job, or early); `job` is the last job it carried.
 */
async function followEvents(
  client: GatewayClient,
  id: string,
  updates: (job: MediaJob) => void,
  signal: AbortSignal | undefined,
): Promise<{ outcome: "unavailable" | "ended"; job: MediaJob | null }> {
  let stream: ReadableStream<Uint8Array>;
  try {
    const { data, response } = await looseCall(client, "GET", `/v1/jobs/${encodeURIComponent(id)}/events`, {
      headers: { accept: "text/event-stream" },
      parseAs: "stream",
      signal,
    });
    if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream") || !data) {
      await (data as ReadableStream | null)?.cancel().catch(() => {});
      return { outcome: "unavailable", job: null };
    }
    stream = data as ReadableStream<Uint8Array>;
  } catch (err) {
    // The route is unknown to this gateway (it predates D30): polling does the same job.
    if (err instanceof GatewayError && ((err.status === 404 && err.code === "not_found") || err.status === 405)) return { outcome: "unavailable", job: null };
    signal?.throwIfAborted();
    // A network failure or a busy answer here is no reason to give up on the job: poll instead.
    if (!(err instanceof GatewayError) || err.status === 429 || err.status >= 500) return { outcome: "ended", job: null };
    throw err;
  }
  let job: MediaJob | null = null;
  try {
    for await (const event of sseEvents(stream)) {
      if (event.event !== "job") continue;
      job = JSON.parse(event.data) as MediaJob;
      updates(job);
      if (isTerminal(job.status)) break;
    }
  } catch {
    // A dropped connection: the caller polls from here.
    signal?.throwIfAborted();
  } finally {
    await stream.cancel().catch(() => {});
  }
  return { outcome: "ended", job };
}
