/**
 * Durable upstream work for image and video jobs on real sources (D27, D28; issue "Real upstreams,
 * part 1", points 3 and 4). One job, one hold:
 *
 * 1. Without a handle, the family's sources are tried in order from the job's `fallback_layer`: a source
 *    at its `max_concurrency` is skipped, and so is one that does not serve the request
 *    (`UpstreamError.unsupported`: a variant it lacks, more references than it takes), and so is one that
 *    answers that the upstream model or endpoint does not exist (`UpstreamError.modelNotFound`, D35: the
 *    source is healthy, it just lacks that id; when no source is left the job fails naming the model); a
 *    retryable submit failure (connection, timeout, 429, 5xx, an
 *    open circuit) moves on to the next source; a non-retryable one ends the job `provider_error`, or
 *    `content_rejected` when the error says the source refused the content (`UpstreamError.contentRejected`:
 *    a synchronous source such as OpenAI images refuses at submit). The
 *    moment a source accepts, its handle and layer are written on the job row (`recordHandle`), so the job
 *    is never submitted to it again, whichever runner continues it.
 * 2. With a handle, the job is polled on that source only. A retryable polling error is retried on the same
 *    source with a growing delay; when the source ends the job failed for a retryable reason (its own
 *    infrastructure, or a poll answering that the model does not exist), the handle is cleared and the next
 *    source is tried under the same hold; a moderation refusal ends the job `content_rejected`. A job the
 *    source ended for its input (a non-retryable failure: fal's `error_type`, BFL's input error, an OpenAI
 *    400) is never moved to the next source (D27, D35): it ends `failed`, `provider_error`, nothing charged.
 * 3. When every remaining source is full (and none failed), the job waits: it goes back to its queue.
 *
 * This module decides; the runner (runner.ts) owns the row, the heartbeats, rehosting and the money.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { JobSourceSlot } from "../upstreams/sources.ts";
import { modelNotFoundMessage } from "../upstreams/sync-failover.ts";
import { inAttemptSpan } from "../observability/tracing.ts";
import {
  type ImageRequest,
  UpstreamError,
  type UpstreamHandle,
  type UpstreamJobState,
  type VideoRequest,
} from "../upstreams/types.ts";

/** One source of a family as the runner uses it (the upstream layer's {@link JobSourceSlot}). */
export type SourceSlot = JobSourceSlot;

/** A job as the durable path sees it. */
export interface DurableJob {
  id: string;
  kind: "image" | "video";
  request: ImageRequest | VideoRequest;
  /** The handle recorded on the row, when a source already accepted the job. */
  handle: UpstreamHandle | null;
  /** The layer (index into the family's sources) the job is at. */
  layer: number;
  /**
   * False when the request lacks its texts (D46 zero retention, taken over by a runner that does not hold
   * them): the job can be polled where it runs, never submitted again (a failover ends it
   * `prompt_unavailable`). Absent: true.
   */
  resubmit?: boolean;
}

/** What the runner gives the durable path: row updates conditional on still owning the job. */
export interface DurableHooks {
  /** Writes `handle` and `layer` on the job row; false when the job is no longer this runner's. */
  recordHandle(handle: UpstreamHandle, layer: number): Promise<boolean>;
  /** Clears the handle and moves the job to `layer` (failover); false when the job is no longer this runner's. */
  moveToLayer(layer: number): Promise<boolean>;
  /** A heartbeat (throttled by the runner); false when the job is no longer this runner's (lease lost). */
  heartbeat(): Promise<boolean>;
  /**
   * What the source said of an unfinished job (D30 `progress`): 0 while it waits in the source's queue, the
   * fraction it reports while running, null when it reports none. False when the job is no longer this
   * runner's (ended elsewhere, a cancel). Absent: not recorded.
   */
  progress?(fraction: number | null): Promise<boolean>;
}

/** How the durable path ended. `handle` is the last handle (for a cancel on give-up). */
export type DurableOutcome =
  | { kind: "succeeded"; result: Extract<UpstreamJobState, { state: "succeeded" }>; layer: number; source: string }
  | { kind: "failed"; code: "provider_error" | "content_rejected" | "prompt_unavailable"; message: string }
  /** Every remaining source is at `max_concurrency`: back to the queue. */
  | { kind: "wait" }
  /** Another runner or the sweep owns the job now: touch nothing. */
  | { kind: "lost" };

/** Polling cadence, ms: between polls of a working job, and the retry backoff after a polling error. */
export interface PollTiming {
  pollMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_POLL_TIMING: PollTiming = { pollMs: 1000, backoffMaxMs: 15_000 };

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : "unknown error");
const retryable = (err: unknown): boolean => !(err instanceof UpstreamError) || err.retryable;
const contentRejected = (err: unknown): boolean => err instanceof UpstreamError && err.contentRejected;
/** The error when `err` says the source does not have the upstream model (D35), else null. */
const notFoundOf = (err: unknown): UpstreamError | null => (err instanceof UpstreamError && err.modelNotFound ? err : null);

/**
 * Runs `job` on `slots` (the family's sources in order) until it succeeds, fails, must wait or is lost.
 * `current.handle` is kept up to date so the caller can cancel upstream on give-up.
 * Throws only when `signal` aborts (its reason), so the runner can tell stop from give-up.
 */
export async function runDurable(
  job: DurableJob,
  slots: SourceSlot[],
  hooks: DurableHooks,
  signal: AbortSignal,
  current: { handle: UpstreamHandle | null; slot: SourceSlot | null },
  timing: PollTiming = DEFAULT_POLL_TIMING,
): Promise<DurableOutcome> {
  let layer = job.layer;
  let handle = job.handle;
  let attempts = 0;
  for (;;) {
    let slot: SourceSlot | null = null;
    let acquired = false;
    if (handle === null && job.resubmit === false) {
      return { kind: "failed", code: "prompt_unavailable", message: "The source that accepted the job failed it, and the job cannot be sent to another source: its texts were not stored (zero retention) and this process does not hold them." };
    }
    if (handle === null) {
      let sawFull = false;
      let lastError: unknown = null;
      let unsupportedError: unknown = null;
      let notFoundError: UpstreamError | null = null;
      for (let i = layer; i < slots.length && handle === null; i++) {
        const candidate = slots[i];
        if (!candidate.tryAcquire()) {
          sawFull = true;
          continue;
        }
        // A submit may take minutes (OpenAI images generate synchronously): keep the heartbeat going so the
        // sweep does not take the runner for dead meanwhile.
        const beat = setInterval(() => void hooks.heartbeat().catch(() => false), timing.pollMs);
        try {
          // D40: each submit to a source is one CLIENT span of the job's trace.
          const attempt = ++attempts;
          const h = await inAttemptSpan(
            () => ({
              operation: job.kind === "image" ? "generate_image" : "generate_video",
              model: job.request.model,
              provider: candidate.protocol ?? "unknown",
              source: candidate.name,
              baseUrl: candidate.baseUrl ?? null,
              attempt,
              fallbackLayer: i === 0 ? 0 : 1,
              content: () => job.request.prompt,
            }),
            () =>
              candidate.call(() =>
                job.kind === "image"
                  ? candidate.source.submitImage(job.request as ImageRequest, signal)
                  : candidate.source.submitVideo(job.request as VideoRequest, signal),
              ),
          ).finally(() => clearInterval(beat));
          handle = h;
          layer = i;
          slot = candidate;
          acquired = true;
        } catch (err) {
          candidate.release();
          signal.throwIfAborted();
          if (err instanceof UpstreamError && err.unsupported) {
            // This source does not serve the request (nothing was sent): the next one may.
            unsupportedError ??= err;
            continue;
          }
          if (notFoundOf(err) !== null) {
            // This source does not have the upstream model (D35; the registry logged it): the next one may.
            notFoundError = notFoundOf(err);
            continue;
          }
          if (contentRejected(err)) return { kind: "failed", code: "content_rejected", message: `The upstream refused the content: ${messageOf(err)}` };
          if (!retryable(err)) return { kind: "failed", code: "provider_error", message: `The upstream refused the job: ${messageOf(err)}` };
          lastError = err;
        }
      }
      if (handle === null || slot === null) {
        if (lastError === null && sawFull) return { kind: "wait" };
        if (lastError === null && notFoundError !== null) {
          return { kind: "failed", code: "provider_error", message: modelNotFoundMessage(job.request.model, notFoundError) };
        }
        if (lastError === null && unsupportedError !== null) {
          return { kind: "failed", code: "provider_error", message: `No upstream source serves this request: ${messageOf(unsupportedError)}` };
        }
        return {
          kind: "failed",
          code: "provider_error",
          message: `Every upstream source failed: ${lastError === null ? "no source is configured" : messageOf(lastError)}`,
        };
      }
      current.handle = handle;
      current.slot = slot;
      if (!(await hooks.recordHandle(handle, layer))) {
        // The job ended while the source was accepting it (a cancel, D30, or the sweep): nobody will ever
        // poll this accepted request, so it is withdrawn at the source (best effort) rather than left running.
        slot.release();
        await slot.source.cancel(handle, AbortSignal.timeout(10_000)).catch(() => {});
        return { kind: "lost" };
      }
    } else {
      const name = handle.source;
      slot = slots.find((s) => s.name === name) ?? null;
      if (slot === null) {
        return { kind: "failed", code: "provider_error", message: `The source '${name}' that accepted the job is no longer configured.` };
      }
      // Resuming a job this source already runs: it counts against the source's concurrency, but it
      // never waits for a place (the work is already under way upstream).
      acquired = slot.tryAcquire();
      current.handle = handle;
      current.slot = slot;
    }

    try {
      const state = await pollUntilDone(slot, handle, hooks, signal, timing);
      if (state === "lost") return { kind: "lost" };
      if (state.state === "succeeded") return { kind: "succeeded", result: state, layer, source: slot.name };
      if (state.contentRejected) return { kind: "failed", code: "content_rejected", message: `The upstream refused the content: ${state.message}` };
      if (!state.retryable || layer + 1 >= slots.length) {
        const message = state.notFound ? modelNotFoundMessage(job.request.model, state.notFound) : `The upstream failed the job: ${state.message}`;
        return { kind: "failed", code: "provider_error", message };
      }
    } finally {
      if (acquired) slot.release();
    }
    // Failover: the source failed the job for a reason of its own; the next source gets it, same hold.
    layer += 1;
    handle = null;
    current.handle = null;
    current.slot = null;
    if (!(await hooks.moveToLayer(layer))) return { kind: "lost" };
  }
}

/**
 * How a polled job ended at its source; `notFound` is set when a poll answered that the upstream model does
 * not exist (D35), which moves the job to the next source like a failure of the source's own.
 */
type PollEnd =
  | Extract<UpstreamJobState, { state: "succeeded" }>
  | (Extract<UpstreamJobState, { state: "failed" }> & { notFound?: UpstreamError });

/**
 * Polls `handle` until the source ends the job; retryable polling errors are retried with backoff. A poll
 * answering that the model does not exist (D35) ends it as a failure that moves to the next source.
 */
async function pollUntilDone(
  slot: SourceSlot,
  handle: UpstreamHandle,
  hooks: DurableHooks,
  signal: AbortSignal,
  timing: PollTiming,
): Promise<PollEnd | "lost"> {
  let backoff = timing.pollMs;
  for (;;) {
    if (!(await hooks.heartbeat())) return "lost";
    let state: UpstreamJobState;
    try {
      state = await slot.call(() => slot.source.poll(handle, signal));
    } catch (err) {
      signal.throwIfAborted();
      const notFound = notFoundOf(err);
      if (notFound !== null) return { state: "failed", retryable: true, contentRejected: false, message: messageOf(err), notFound };
      if (!retryable(err)) return { state: "failed", retryable: false, contentRejected: contentRejected(err), message: messageOf(err) };
      backoff = Math.min(backoff * 2, timing.backoffMaxMs);
      await sleep(backoff, undefined, { signal });
      continue;
    }
    backoff = timing.pollMs;
    if (state.state === "succeeded" || state.state === "failed") return state;
    if (hooks.progress && !(await hooks.progress(state.state === "queued" ? 0 : state.progress))) return "lost";
    await sleep(timing.pollMs, undefined, { signal });
  }
}
