/**
 * Live jobs for the console's pages (D30): a job that has not ended is followed on its events stream
 * (`GET /v1/jobs/{id}/events`, `text/event-stream`), read with `fetch` because `EventSource` cannot send the
 * session token in the `Authorization` header. Every `job` event is written to the TanStack Query cache under
 * `["job", id]`, so every component showing that job (a row of the job list, its detail page, its cancel
 * button) sees the same live state, and one stream serves them all however many are mounted.
 *
 * When a job ends, the lists it changes are refetched: jobs, gallery, balance (`["me"]`), ledger and usage.
 *
 * ```tsx
 * const job = useLiveJob(listedJob); // re-renders at every status, queue position or progress change
 * ```
 */
import { type QueryClient, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { gatewayError } from "../../packages/client/src/errors.ts";
import { sseEvents } from "../../packages/client/src/sse.ts";
import { api, GatewayError, type Schemas, unwrap } from "./api.ts";

/** A media job (D3) with its D30 fields `queue_position` and `progress`. */
export type MediaJob = Schemas["MediaJob"];
/** A job's status (D3). */
export type JobStatus = MediaJob["status"];

/** Every status, in the order a job goes through them; the last four are terminal. */
export const JOB_STATUSES: readonly JobStatus[] = ["pending", "processing", "succeeded", "failed", "refunded", "expired"];

/** Whether a job in `status` never changes again (spec "Facts that hold for jobs"). */
export function isTerminal(status: JobStatus): boolean {
  return status !== "pending" && status !== "processing";
}

/** Whether `POST /v1/jobs/{id}/cancel` applies: pending and processing jobs (D30). */
export function isCancelable(status: JobStatus): boolean {
  return !isTerminal(status);
}

/** The query key of one job: the detail page's query and the live state of the events stream. */
export function jobKey(id: string): readonly ["job", string] {
  return ["job", id];
}

/** The query keys a job's end (or its cancel) changes: lists, balance, money records. */
const AFFECTED = [["jobs"], ["gallery"], ["me"], ["ledger"], ["usage"]];

function refreshAfterEnd(qc: QueryClient): void {
  for (const queryKey of AFFECTED) void qc.invalidateQueries({ queryKey });
}

/** How far along a state is: by status, then by last change, then by progress. */
function rank(j: MediaJob): [number, string, number] {
  const step = j.status === "pending" ? 0 : j.status === "processing" ? 1 : 2;
  return [step, j.updated_at, j.progress ?? 0];
}

/**
 * The later of two states of one job: a list fetched after the stream's last event may be newer than the
 * cache, and the other way round. Jobs only move forward, so the further state is the newer one.
 */
export function laterState(a: MediaJob, b: MediaJob | undefined): MediaJob {
  if (!b || b.id !== a.id) return a;
  const [ra, rb] = [rank(a), rank(b)];
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i] > rb[i] ? a : b;
  return b;
}

/** `GET /v1/jobs/{id}` as a query function. Throws {@link GatewayError} (404 `job_not_found`...). */
export function fetchJob(id: string, signal?: AbortSignal): Promise<MediaJob> {
  return unwrap(api.GET("/v1/jobs/{id}", { params: { path: { id } }, signal }));
}

/**
 * Reads the events stream of job `id` once, writing each job event to the cache. Resolves with the last job
 * seen (null if none) when the stream ends; throws {@link GatewayError} for a refused request.
 */
async function readStream(qc: QueryClient, id: string, signal: AbortSignal): Promise<MediaJob | null> {
  const { data, error, response } = await api.GET("/v1/jobs/{id}/events", {
    params: { path: { id } },
    headers: { accept: "text/event-stream" },
    parseAs: "stream",
    signal,
  });
  if (!response.ok) throw gatewayError(response, error);
  if (!data) return null;
  let last: MediaJob | null = null;
  try {
    for await (const event of sseEvents(data)) {
      if (event.event !== "job") continue;
      last = JSON.parse(event.data) as MediaJob;
      qc.setQueryData(jobKey(id), last);
      if (isTerminal(last.status)) break;
    }
  } finally {
    await data.cancel().catch(() => {});
  }
  return last;
}

/**
 * Follows job `id` until it ends or `signal` aborts. A stream that drops (network, a gateway restart, a
 * 429 or 5xx) is opened again after a growing pause (1 s doubling to 30 s); any other refusal (404: the job
 * is not this account's; 401: the session ended and the console signs out) stops following.
 */
async function followUntilEnd(qc: QueryClient, id: string, signal: AbortSignal): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    try {
      const last = await readStream(qc, id, signal);
      if (last && isTerminal(last.status)) {
        refreshAfterEnd(qc);
        return;
      }
      failures = last ? 0 : failures + 1;
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof GatewayError && err.status !== 429 && err.status < 500) return;
      failures++;
    }
    const pauseMs = Math.min(30_000, 1000 * 2 ** Math.max(0, failures - 1));
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, pauseMs);
      signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
    });
  }
}

/** One stream per job, shared by every component showing it; stopped when the last one unmounts. */
const followers = new Map<string, { users: number; controller: AbortController }>();

function follow(qc: QueryClient, id: string): () => void {
  let f = followers.get(id);
  if (!f) {
    const entry = { users: 0, controller: new AbortController() };
    followers.set(id, entry);
    void followUntilEnd(qc, id, entry.controller.signal).finally(() => {
      if (followers.get(id) === entry) followers.delete(id);
    });
    f = entry;
  }
  const mine = f;
  mine.users++;
  return () => {
    if (--mine.users > 0) return;
    mine.controller.abort();
    if (followers.get(id) === mine) followers.delete(id);
  };
}

/**
 * The live state of `job` (as a list or a fetch gave it): while it has not ended, its events stream is
 * followed and the component re-renders at every change; the later of the given and the streamed state is
 * returned (see {@link laterState}).
 */
export function useLiveJob(job: MediaJob): MediaJob {
  const qc = useQueryClient();
  // Only reads the cache the stream writes (the detail page's own query fetches it).
  const cached = useQuery({ queryKey: jobKey(job.id), queryFn: ({ signal }) => fetchJob(job.id, signal), enabled: false }).data;
  const current = laterState(job, cached);
  const live = !isTerminal(current.status);
  useEffect(() => (live ? follow(qc, job.id) : undefined), [qc, job.id, live]);
  return current;
}

/**
 * `POST /v1/jobs/{id}/cancel` (D30) as a mutation: the canceled job (`failed`, `error.code` `canceled`, the
 * hold released) goes into the cache and the affected lists and balance are refetched. A job that ended
 * meanwhile answers 409 `job_not_cancelable` (the mutation's error); its state is refetched then too.
 */
export function useCancelJob(onCanceled?: (job: MediaJob) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => unwrap(api.POST("/v1/jobs/{id}/cancel", { params: { path: { id } } })),
    onSuccess: (job) => {
      qc.setQueryData(jobKey(job.id), job);
      refreshAfterEnd(qc);
      onCanceled?.(job);
    },
    onError: (_err, id) => {
      void qc.invalidateQueries({ queryKey: jobKey(id) });
      refreshAfterEnd(qc);
    },
  });
}
