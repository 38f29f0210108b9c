/**
 * Running one claimed job (docs/architecture.md "Asynchronous jobs"; D3, D25, D27, D28, D30): on the simulator when
 * its family has no configured source (or it is a test-mode job, D32), else on its real sources with
 * failover and a durable upstream handle (durable.ts); then its delivery (delivery.ts), or its end without
 * a charge: failed, given up (timeout), or handed back as `pending` when the runner stops.
 *
 * Heartbeats are written when the adapter reports progress; the fraction done is stored on the row
 * (`progress`, D30) and announced on the gateway's job feed. A job ended elsewhere while it runs (a
 * cancel, the sweep) is noticed by the heartbeat whose conditional update no longer matches, and its work
 * is dropped.
 */
import type { Kysely } from "kysely";
import type { RetentionWindows } from "../config.ts";
import { observeUpstream } from "../metrics.ts";
import { type AttemptInfo, inAttemptSpan, type Tracing } from "../observability/tracing.ts";
import type { ClaimedJob } from "../storage/job-queue.ts";
import { deferJob } from "../storage/job-queue.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import type { Database } from "../storage/schema.ts";
import type { MediaOutput, UpstreamHandle, VisualAdapter } from "../upstreams/types.ts";
import type { JobChangeFeed } from "./changes.ts";
import { deliverJob } from "./delivery.ts";
import { type DurableHooks, type PollTiming, runDurable, type SourceSlot } from "./durable.ts";
import { updateRunningJob } from "./execution.repository.ts";
import type { OutputFetcher } from "./rehost.ts";
import { decodeJobRequest, isVideoRequest, type JobRequest, withJobTexts } from "./request.ts";
import { endJobWithoutCharge, GIVE_UP_MS, type SweepConfig } from "./sweep.ts";
import { PROMPT_UNAVAILABLE_MESSAGE, type WithheldTexts } from "./texts.ts";

/** Minimal logger (pino-compatible). */
export interface RunnerLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** What a runner is built with (services.ts). */
export interface RunnerDeps {
  db: Kysely<Database>;
  blobs: BlobStore;
  /** The built-in simulator: serves every job whose family has no configured source (D25). */
  visual: VisualAdapter;
  /**
   * The configured sources of a job's family, in failover order (D25, D27); empty when the family has
   * none. Jobs with sources take the durable path (durable.ts, D28).
   */
  sourcesFor?: (job: { kind: "image" | "video"; model: string }) => SourceSlot[];
  /** The configured source named `name` (to cancel the upstream work of a job the sweep refunded). */
  sourceNamed?: (name: string) => SourceSlot | undefined;
  fetchOutput: OutputFetcher;
  sweep: SweepConfig;
  log: RunnerLog;
  /** The gateway's job feed (changes.ts, D30), which its watchers and cancels share. */
  changes: JobChangeFeed;
  /** Tracing (D40), or null/absent when off: a job's work continues the trace of its submit. */
  tracing?: Tracing | null;
  /**
   * This process's store of the texts of jobs written without them (D46 zero retention, texts.ts): its
   * runner claims those jobs (`holderId`) and runs them with the texts held there.
   */
  withheld?: WithheldTexts | null;
  /** The operator's retention windows (D46): the runner's retention sweep applies them; absent, it does not run. */
  retention?: RetentionWindows | null;
}

/** What running a job needs of its runner. */
export interface ExecutionContext {
  deps: RunnerDeps;
  changes: JobChangeFeed;
  /** The runner's `worker_id`. */
  workerId: string;
  /** Minimum gap between two heartbeat writes of one job, ms. */
  heartbeatMs: number;
  /** Polling cadence of jobs on real sources. */
  upstreamPoll: PollTiming;
  /** Marks job `jobId` as running on the simulator: the runner aborts it at once when it is ended elsewhere. */
  markLocal(jobId: string): void;
}

/** The runner is stopping: hand the job back as `pending`. */
export class StopError extends Error {}
/** The job ran past its give-up time (`GIVE_UP_MS`): it fails with `timeout`. */
export class GiveUpError extends Error {}
/** The job is no longer this runner's (a cancel or the sweep ended it): drop the work, touch nothing. */
export class LostError extends Error {}

/** How long a job whose family's sources are all full waits in its queue before it is tried again, ms. */
const WAIT_FOR_SOURCE_MS = 1000;

/** A progress fraction as stored and shown: 0..1, two decimals (finer steps only make noise in event streams). */
function roundProgress(fraction: number | null | undefined): number | null {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return null;
  return Math.round(Math.min(1, Math.max(0, fraction)) * 100) / 100;
}

/** The message of a job that ran past its give-up time. */
function gaveUpMessage(kind: "image" | "video"): string {
  return `The upstream did not finish within ${GIVE_UP_MS[kind] / 60_000} minutes; the hold was released.`;
}

/**
 * Runs `job` (claimed, or adopted from a submit, `processing` by `ctx.workerId`) to its end. `controller`
 * aborts it: with {@link StopError} (hand back), {@link GiveUpError} (set here, at the job's give-up time)
 * or {@link LostError} (ended elsewhere). The stored request is decoded once here and passed down.
 */
export async function executeJob(ctx: ExecutionContext, job: ClaimedJob, controller: AbortController): Promise<void> {
  const { deps, workerId, changes } = ctx;
  const { db } = deps;
  const kind = job.kind as "image" | "video";
  const giveUpAfter = GIVE_UP_MS[kind] - (Date.now() - Number(job.started_at ?? Date.now()));
  const giveUp = setTimeout(() => controller.abort(new GiveUpError("gave up")), Math.max(0, giveUpAfter));
  let lastBeat = Date.now();
  let lastProgress: number | null = null;
  const onProgress = (fraction?: number) => {
    const now = Date.now();
    if (now - lastBeat < ctx.heartbeatMs) return;
    lastBeat = now;
    const progress = roundProgress(fraction);
    updateRunningJob(db, job.id, workerId, { heartbeat_at: now, updated_at: now, ...(progress !== null ? { progress } : {}) })
      .then((mine) => {
        // No row: the job was ended by another process (a cancel) or taken back; stop working on it.
        if (!mine) controller.abort(new LostError("job no longer ours"));
        else if (progress !== null && progress !== lastProgress) {
          lastProgress = progress;
          changes.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: workerId });
        }
      })
      .catch((err: unknown) => deps.log.warn({ err, job: job.id }, "heartbeat failed"));
  };

  // D46 zero retention: a job stored without its texts runs with the ones this process holds, if any.
  const stored = decodeJobRequest(job.request_json);
  const held = stored.textsRemoved === true ? deps.withheld?.get(job.id) : undefined;
  const request = held !== undefined ? withJobTexts(stored, held) : stored;
  const textsMissing = request.textsRemoved === true;
  let deferred = false;
  try {
    if (textsMissing && job.upstream_handle_json === null) {
      // Nothing was sent upstream and nobody has the prompt any more: end it now, nothing charged.
      clearTimeout(giveUp);
      await endJobWithoutCharge(db, { id: job.id, from: "processing", to: "failed", code: "prompt_unavailable", message: PROMPT_UNAVAILABLE_MESSAGE, workerId }, changes);
      return;
    }
    deferred = await executeWithTexts(ctx, job, kind, request, controller, giveUp, onProgress, held !== undefined);
  } finally {
    // Texts held for a job that waits in its queue again (its sources were full) are needed by its next run.
    if (!deferred) deps.withheld?.drop(job.id);
  }
}

/**
 * {@link executeJob} once the job's request is whole (or, `request.textsRemoved`, known to lack its texts:
 * an upstream accepted the job, so it is only polled). `inMemory`: the texts are held by this process only
 * (D46 zero retention), so a stop hands the job back only when an upstream accepted it and otherwise ends it
 * `prompt_unavailable`. Returns true when the job went back to its queue to wait for a source (D28).
 */
async function executeWithTexts(
  ctx: ExecutionContext,
  job: ClaimedJob,
  kind: "image" | "video",
  request: JobRequest,
  controller: AbortController,
  giveUp: NodeJS.Timeout,
  onProgress: (fraction?: number) => void,
  inMemory: boolean,
): Promise<boolean> {
  const { deps, workerId, changes } = ctx;
  const { db } = deps;
  // A test-mode job (D32) is always the simulator's, whatever sources its family has.
  const slots = job.mode === "test" ? [] : (deps.sourcesFor?.({ kind, model: job.model }) ?? []);
  if (slots.length > 0 || job.upstream_handle_json !== null) {
    try {
      return await executeDurable(ctx, job, kind, request, slots, controller, inMemory);
    } finally {
      clearTimeout(giveUp);
    }
  }

  ctx.markLocal(job.id);
  let outputs: MediaOutput[];
  try {
    if (isVideoRequest(request)) {
      outputs = [
        await inAttemptSpan(simulatorAttempt(job, "generate_video", request.prompt), () =>
          observeUpstream(job.model, () => deps.visual.generateVideo(request, controller.signal, onProgress)),
        ),
      ];
    } else {
      outputs = await inAttemptSpan(simulatorAttempt(job, "generate_image", request.prompt), () =>
        observeUpstream(job.model, () => deps.visual.generateImages(request, controller.signal, onProgress)),
      );
    }
  } catch (err) {
    clearTimeout(giveUp);
    const reason: unknown = controller.signal.reason;
    if (reason instanceof LostError) return false;
    if (reason instanceof StopError) {
      // Texts held only here (D46) cannot follow the job to another runner: it ends, nothing charged.
      await endJobWithoutCharge(db, inMemory ? withheldEnd(job.id, workerId) : { id: job.id, from: "processing", to: "pending", code: null, message: null, workerId }, changes);
      return false;
    }
    const timedOut = reason instanceof GiveUpError;
    await endJobWithoutCharge(
      db,
      {
        id: job.id,
        from: "processing",
        to: "failed",
        code: timedOut ? "timeout" : "provider_error",
        message: timedOut
          ? gaveUpMessage(kind)
          : `The upstream failed: ${err instanceof Error ? err.message : "unknown error"}. The hold was released.`,
        workerId,
      },
      changes,
    );
    return false;
  }
  clearTimeout(giveUp);
  await deliverJob(deliveryContext(ctx), job, request, outputs, null);
  return false;
}

/** The end of a job whose texts only this stopping process held (D46): `failed`, `prompt_unavailable`. */
function withheldEnd(id: string, workerId: string) {
  return { id, from: "processing" as const, to: "failed" as const, code: "prompt_unavailable", message: PROMPT_UNAVAILABLE_MESSAGE, workerId };
}

/** The CLIENT span (D40) of a job served by the simulator: one attempt, no source. */
function simulatorAttempt(job: ClaimedJob, operation: "generate_image" | "generate_video", prompt: string): () => AttemptInfo {
  return () => ({ operation, model: job.model, provider: "simulator", source: null, attempt: 1, fallbackLayer: 0, content: () => prompt });
}

/** The delivery's context from the runner's. */
function deliveryContext(ctx: ExecutionContext) {
  const { db, blobs, fetchOutput, sourceNamed } = ctx.deps;
  return { db, blobs, fetchOutput, sourceNamed, changes: ctx.changes, workerId: ctx.workerId };
}

/**
 * A job on real sources (D27, D28): submit with failover or resume by polling (durable.ts), then
 * deliver. Stop hands the job back with its handle (one without a handle whose texts only this process
 * holds, `inMemory`, ends `prompt_unavailable`); give-up cancels it upstream. A request still without its
 * texts (D46) is only polled: a failover that would submit it again ends it `prompt_unavailable`. Returns
 * true when the job went back to its queue to wait for a source.
 */
async function executeDurable(
  ctx: ExecutionContext,
  job: ClaimedJob,
  kind: "image" | "video",
  request: JobRequest,
  slots: SourceSlot[],
  controller: AbortController,
  inMemory: boolean,
): Promise<boolean> {
  const { deps, workerId, changes } = ctx;
  const { db } = deps;
  let lastBeat = 0;
  // The row's progress was cleared when the job was claimed (a takeover keeps the last one: unknown here).
  let lastProgress: number | null | undefined = job.upstream_handle_json === null ? null : undefined;
  const hooks: DurableHooks = {
    recordHandle: async (handle, layer) => {
      const now = Date.now();
      lastBeat = now;
      return updateRunningJob(db, job.id, workerId, {
        upstream_source: handle.source,
        upstream_handle_json: JSON.stringify(handle),
        fallback_layer: layer,
        heartbeat_at: now,
        updated_at: now,
      });
    },
    moveToLayer: async (layer) => {
      const now = Date.now();
      return updateRunningJob(db, job.id, workerId, { upstream_source: null, upstream_handle_json: null, fallback_layer: layer, heartbeat_at: now, updated_at: now });
    },
    heartbeat: async () => {
      const now = Date.now();
      if (now - lastBeat < ctx.heartbeatMs) return true;
      lastBeat = now;
      return updateRunningJob(db, job.id, workerId, { heartbeat_at: now, updated_at: now });
    },
    progress: async (fraction) => {
      // Written only when it changes (a poll a second must not mean a write a second); it counts as a heartbeat.
      const progress = roundProgress(fraction);
      if (progress === lastProgress) return true;
      const now = Date.now();
      lastBeat = now;
      if (!(await updateRunningJob(db, job.id, workerId, { progress, heartbeat_at: now, updated_at: now }))) return false;
      lastProgress = progress;
      changes.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: workerId });
      return true;
    },
  };
  const current: { handle: UpstreamHandle | null; slot: SourceSlot | null } = { handle: null, slot: null };
  const handle = job.upstream_handle_json === null ? null : (JSON.parse(job.upstream_handle_json) as UpstreamHandle);
  let outcome;
  try {
    outcome = await observeUpstream(job.model, () =>
      runDurable(
        { id: job.id, kind, request, handle, layer: Number(job.fallback_layer), resubmit: request.textsRemoved !== true },
        slots,
        hooks,
        controller.signal,
        current,
        ctx.upstreamPoll,
      ),
    );
  } catch (err) {
    const reason: unknown = controller.signal.reason;
    if (reason instanceof StopError) {
      // Shutdown: the job keeps its handle; any runner resumes it by polling (D28). Without a handle, a job
      // whose texts only this process holds (D46) cannot be run elsewhere: it ends, nothing charged.
      const end = inMemory && current.handle === null ? withheldEnd(job.id, workerId) : { id: job.id, from: "processing" as const, to: "pending" as const, code: null, message: null, workerId };
      await endJobWithoutCharge(db, end, changes);
      return false;
    }
    if (reason instanceof GiveUpError) {
      if (current.handle && current.slot) {
        const { handle: h, slot } = current;
        await slot.source.cancel(h, AbortSignal.timeout(10_000)).catch((e: unknown) => deps.log.warn({ err: e, job: job.id }, "upstream cancel failed"));
      }
      await endJobWithoutCharge(db, { id: job.id, from: "processing", to: "failed", code: "timeout", message: gaveUpMessage(kind), workerId }, changes);
      return false;
    }
    throw err;
  }
  switch (outcome.kind) {
    case "lost":
      return false;
    case "wait":
      // Every source is at max_concurrency: the job waits in its queue (D28) and is asked for again
      // after a second, rather than in a tight loop.
      if (await deferJob(db, job.id, workerId, Date.now() + WAIT_FOR_SOURCE_MS)) {
        changes.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: workerId });
      }
      return true;
    case "failed":
      await endJobWithoutCharge(
        db,
        { id: job.id, from: "processing", to: "failed", code: outcome.code, message: `${outcome.message} The hold was released.`, workerId },
        changes,
      );
      return false;
    case "succeeded": {
      const r = outcome.result;
      await deliverJob(deliveryContext(ctx), job, request, r.outputs, {
        durationSec: r.durationSec,
        megapixels: r.megapixels,
        upstreamCostUsd: r.upstreamCostUsd,
        layer: outcome.layer,
        source: outcome.source,
      });
      return false;
    }
  }
}
