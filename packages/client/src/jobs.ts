/**
 * Image, video and stored-audio jobs on top of the SDK's base ({@link APIClient}): submit one and follow
 * it to a terminal status ({@link submitAndWait}, {@link waitForJob}), by the job's events stream
 * (`GET /v1/jobs/{id}/events`, D30) and, when the stream is unavailable or ends early, by polling
 * `GET /v1/jobs/{id}` (honouring `Retry-After`). Saving the outputs is in `download.ts`. The resource
 * namespaces (`client.jobs.wait`, `client.images.generateAndWait`...) call these.
 *
 * ```ts
 * const job = await submitAndWait(client, "/v1/images/generations", { model: "imgA-v4", prompt: "a fox" }, {
 *   onUpdate: (j) => console.error(j.status, j.queue_position ?? "", j.progress ?? ""),
 * });
 * if (job.status === "succeeded") await downloadOutput(job, "fox.png");
 * ```
 */
import { type APIClient, type RequestOptions, sleep, unwrap } from "./core.ts";
import { GatewayError, gatewayError, retryAfterSeconds } from "./errors.ts";
import type { components, paths } from "./schema.ts";
import { sseEvents } from "./sse.ts";

// The events parser lives in sse.ts, free of Node modules, so the web console can use it too.
export { sseEvents, type ServerSentEvent } from "./sse.ts";

/**
 * The job object of D3 with the D30 fields of a non-terminal job: `queue_position` (pending: 1 = starts
 * next among the caller's jobs of its pool) and `progress` (processing: 0..1, or null when the source
 * does not report it).
 */
export type MediaJob = components["schemas"]["MediaJob"];

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
  /** Aborts the wait (the job itself keeps running: cancel it with `client.jobs.cancel`). Rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Milliseconds between polls when an answer carries no `Retry-After`: default 1000 for images and
   * 2000 for video (the spec's "every 1-2 s" and "every 2-5 s").
   */
  pollIntervalMs?: number;
  /** Follow `GET /v1/jobs/{id}/events` (default true); false polls only. */
  events?: boolean;
}

/**
 * Options of {@link submitAndWait}: those of the wait, plus the submit's own request options (`headers`
 * such as `X-Svc-Simulate`, `timeout`, `maxRetries`: a submit is retried only when its body carries an
 * `idempotency_key`).
 */
export interface SubmitOptions extends WaitOptions, Omit<RequestOptions, "signal"> {}

/**
 * `POST` of a media job at `path` with `body`: resolves with the submitted job (202, or 200 for the
 * replay of an `idempotency_key`: the existing job, no new charge). Retried on 429/5xx and lost
 * connections only when `body.idempotency_key` is set. Throws the `APIError` of a refusal (400
 * `invalid_model`, 402 `insufficient_balance`, 429 `rate_limited`, ...).
 */
export async function submitJob<P extends JobSubmitPath>(client: APIClient, path: P, body: JobSubmitBody<P>, options: RequestOptions = {}): Promise<MediaJob> {
  // The three routes share one answer shape; openapi-fetch's overloads cannot narrow a generic path.
  const post = client.raw.POST as unknown as (p: string, init: { body: unknown } & ReturnType<APIClient["requestInit"]>) => Promise<{ data?: MediaJob; error?: unknown; response: Response }>;
  const idempotent = typeof (body as { idempotency_key?: unknown }).idempotency_key === "string";
  return unwrap(post(path, { body, ...client.requestInit(options, idempotent) }));
}

/**
 * Submits a media job at `path` with `body` and follows it until its status is terminal (see
 * {@link waitForJob}). Resolves with the terminal job, whatever its status: `succeeded` (with
 * `output`), or `failed`, `refunded`, `expired` (with `error`; the hold was released, nothing charged, D3).
 * Throws the `APIError` of a refused submit (400 `invalid_model`, 402 `insufficient_balance`, 429
 * `rate_limited`, ...) or of a poll that fails for good; an aborted `signal` rejects with its reason.
 */
export async function submitAndWait<P extends JobSubmitPath>(client: APIClient, path: P, body: JobSubmitBody<P>, options: SubmitOptions = {}): Promise<MediaJob> {
  const { onUpdate, signal, pollIntervalMs, events, ...request } = options;
  const job = await submitJob(client, path, body, { ...request, signal });
  return waitForJob(client, job, { onUpdate, signal, pollIntervalMs, events });
}

/**
 * Follows a job (given as the object a submit answered, or as its id) until its status is terminal and
 * resolves with the terminal job. `onUpdate` sees the first state and every change.
 *
 * The events stream of D30 is followed first: one `job` event at once and at every change, ending after
 * a terminal status. A stream that is unavailable (404 `not_found` or 405 for the path) or ends early is
 * followed by polling `GET /v1/jobs/{id}`, waiting `Retry-After` seconds when the answer sets it (D30)
 * and `pollIntervalMs` otherwise. A poll answered 429 or 5xx, or lost to a network error, is retried after
 * `Retry-After` (or a growing backoff, at most 10 times in a row); any other error is thrown, e.g. 404
 * `job_not_found`.
 */
export async function waitForJob(client: APIClient, jobOrId: MediaJob | string, options: WaitOptions = {}): Promise<MediaJob> {
  const { signal } = options;
  signal?.throwIfAborted();
  let job: MediaJob;
  let lastRetryAfterS: number | null = null;
  if (typeof jobOrId === "string") {
    const first = await getJob(client, jobOrId, { signal });
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
    // No stream, or one that ended early: poll at once, then at the usual pace.
    if (followed.outcome === "ended") lastRetryAfterS = 0;
  }

  const interval = options.pollIntervalMs ?? (job.kind === "video" ? 2000 : 1000);
  let failures = 0;
  for (;;) {
    const delayMs = lastRetryAfterS !== null ? lastRetryAfterS * 1000 : interval;
    // A floor keeps a `Retry-After: 0` from turning into a busy loop.
    await sleep(Math.max(100, delayMs), signal);
    try {
      // One attempt per poll: the loop below is the retry, paced by the job's own Retry-After.
      const polled = await getJob(client, job.id, { signal, maxRetries: 0 });
      failures = 0;
      job = polled.job;
      lastRetryAfterS = polled.retryAfterS;
      updates(job);
      if (isTerminal(job.status)) return job;
    } catch (err) {
      signal?.throwIfAborted();
      const transient = !(err instanceof GatewayError) || err.status === 0 || err.status === 429 || err.status >= 500;
      if (!transient || ++failures > 10) throw err;
      const backoffS = Math.min(30, 2 ** failures / 2);
      lastRetryAfterS = err instanceof GatewayError && err.retryAfterS !== null ? err.retryAfterS : backoffS;
    }
  }
}

/**
 * `GET /v1/jobs/{id}`: the job and the answer's `Retry-After` (seconds, or null: D30 sets it on a
 * non-terminal job to pace polls). Throws `NotFoundError` (404 `job_not_found`) for an unknown job.
 */
export async function getJob(client: APIClient, id: string, options: RequestOptions = {}): Promise<{ job: MediaJob; retryAfterS: number | null }> {
  const { data, error, response } = await client.raw.GET("/v1/jobs/{id}", { params: { path: { id } }, ...client.requestInit(options) });
  if (!response.ok || !data) throw gatewayError(response, error);
  return { job: data, retryAfterS: retryAfterSeconds(response.headers) };
}

/**
 * The states of a job from `GET /v1/jobs/{id}/events` (D30): one at once, then one at every change; the
 * stream (and the iteration) ends after a terminal status, or when the gateway closes it. Throws the
 * `APIError` of a refusal (404 `job_not_found`); breaking out of the loop closes the stream.
 */
export async function* jobEvents(client: APIClient, id: string, options: RequestOptions = {}): AsyncGenerator<MediaJob> {
  const { data, error, response } = await client.raw.GET("/v1/jobs/{id}/events", {
    params: { path: { id } },
    parseAs: "stream",
    ...client.requestInit({ ...options, headers: { accept: "text/event-stream", ...options.headers } }),
  });
  if (!response.ok) throw gatewayError(response, error);
  const stream = data as ReadableStream<Uint8Array> | null | undefined;
  if (!stream) return;
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    // Not a stream of events (a proxy's page, say): nothing to read; a waiter polls instead.
    await stream.cancel().catch(() => {});
    return;
  }
  try {
    for await (const event of sseEvents(stream)) {
      if (event.event !== "job") continue;
      const job = JSON.parse(event.data) as MediaJob;
      yield job;
      if (isTerminal(job.status)) return;
    }
  } finally {
    await stream.cancel().catch(() => {});
  }
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
  client: APIClient,
  id: string,
  updates: (job: MediaJob) => void,
  signal: AbortSignal | undefined,
): Promise<{ outcome: "unavailable" | "ended"; job: MediaJob | null }> {
  let job: MediaJob | null = null;
  try {
    // One attempt: a failure here is no reason to give up on the job, polling takes over.
    for await (const next of jobEvents(client, id, { signal, maxRetries: 0 })) {
      job = next;
      updates(job);
    }
  } catch (err) {
    signal?.throwIfAborted();
    // A gateway without the route (one that predates D30): polling does the same job.
    if (job === null && err instanceof GatewayError && ((err.status === 404 && err.code === "not_found") || err.status === 405)) return { outcome: "unavailable", job: null };
    // A network failure, a busy answer or a dropped connection: the caller polls from here.
    const transient = !(err instanceof GatewayError) || err.status === 0 || err.status === 429 || err.status >= 500;
    if (!transient) throw err;
  }
  return { outcome: "ended", job };
}
