/**
 * The job runner (design.md "Asynchronous jobs"; spec "GET /v1/jobs/{id}"; D3): claims pending image and
 * video jobs within each account's concurrency cap, calls the adapter, rehosts the outputs in blob
 * storage and then, in one transaction, marks the job `succeeded` and captures the final amount
 * (releasing the rest). Every other end releases the whole hold.
 *
 * Heartbeats are written when the adapter reports progress; a worker that stops reporting (a dead
 * process, or `X-Svc-Simulate: hang`) is left to the sweep, which refunds the job. On stop (SIGTERM) the
 * runner aborts its upstream calls and hands its claimed jobs back as `pending`.
 *
 * D30: the fraction done that the upstream reports is stored on the row (`progress`) with the heartbeats,
 * and every change the runner commits is announced on the process's job feed (changes.ts). A job ended
 * elsewhere while the runner works on it (a cancel) is noticed at once when this process ended it (the
 * feed) and otherwise at the next heartbeat, whose update no longer matches the row; either way the runner
 * drops its work, and its success update, conditional on `processing` by this worker, cannot charge.
 */
import { hostname } from "node:os";
import type { Kysely } from "kysely";
import { inTransaction } from "../billing/ledger.ts";
import { settleCapture } from "../billing/paid-call.ts";
import { type Micros, usdToMicros } from "../billing/money.ts";
import { getModelOf } from "../catalog/models.ts";
import { quoteImage, quoteImageAtMegapixels, quoteVideo, upstreamListPrice } from "../catalog/quote.ts";
import { newId } from "../ids.ts";
import { observeUpstream } from "../metrics.ts";
import { limitsOf } from "../accounts/accounts.ts";
import { mediaCaps } from "../limits/effective.ts";
import type { BlobStore } from "../storage/blobs.ts";
import { type AccountLimitsRow, type ClaimedJob, claimJobs, type ConcurrencyCaps, DEFAULT_LEASE_MS, deferJob } from "../storage/job-queue.ts";
import { prepare } from "../storage/prepared.ts";
import type { Database } from "../storage/schema.ts";
import type { ImageRequest, MediaOutput, UpstreamHandle, VideoRequest, VisualAdapter } from "../upstreams/types.ts";
import { fetchDirect } from "../upstreams/direct-fetch.ts";
import { mp4DurationSec, pngDimensions } from "../upstreams/media-probe.ts";
import { DEFAULT_POLL_TIMING, type DurableHooks, type PollTiming, runDurable, type SourceSlot } from "./durable.ts";
import { endJobWithoutCharge, GIVE_UP_MS, type SweepConfig, sweepJobs } from "./sweep.ts";
import { onJobEnded } from "./ended.ts";
import { jobChanges } from "./changes.ts";
import type { JobStarter } from "./jobs.ts";
import { jobUsageEnd } from "./job-usage.ts";

/** Minimal logger (pino-compatible). */
export interface RunnerLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Downloads an upstream output URL with a size cap and timeout (safe-fetch in production). */
export type OutputFetcher = (url: string, opts: { maxBytes: number; timeoutMs: number }) => Promise<{ bytes: Uint8Array; contentType: string | null }>;

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
}

export interface RunnerOptions {
  /** Jobs processed at once by this runner. */
  maxInFlight?: number;
  /** Polling interval for new jobs, ms. */
  pollMs?: number;
  /** Sweep interval, ms (D15: at least every 10 s). */
  sweepMs?: number;
  /** Minimum gap between two heartbeat writes of one job, ms. */
  heartbeatMs?: number;
  /** A job on a real source without a heartbeat for this long may be taken over by another runner, ms (D28 `JOB_LEASE_S`). */
  leaseMs?: number;
  /** Polling cadence of jobs on real sources (default: 1 s between polls, backoff up to 15 s). */
  upstreamPoll?: PollTiming;
}

/** What a real source reported with its outputs (D26): used for the final charge and the job row. */
interface Delivery {
  durationSec: number | null;
  megapixels: number | null;
  upstreamCostUsd: number | null;
  layer: number;
  source: string | null;
}

/**
 * A job's success (one compiled statement, storage/prepared.ts): status, charge and outputs, and where
 * known (not null) the delivered length, the serving layer and the upstream cost; only while the job is
 * still `processing` by this worker. Parameters: cost, output JSON, duration, layer, upstream cost and
 * its basis, now, job id, worker id.
 */
const markSucceeded = prepare((db, p) =>
  db
    .updateTable("jobs")
    .set((eb) => ({
      status: "succeeded",
      cost_micros: p<number>(0),
      output_json: p<string>(1),
      duration_sec: eb.fn.coalesce(eb.val(p<number | null>(2)), eb.ref("duration_sec")),
      fallback_layer: eb.fn.coalesce(eb.val(p<number | null>(3)), eb.ref("fallback_layer")),
      upstream_cost_micros: eb.fn.coalesce(eb.val(p<number | null>(4)), eb.ref("upstream_cost_micros")),
      upstream_cost_basis: eb.fn.coalesce(eb.val(p<"reported" | "list_price" | null>(5)), eb.ref("upstream_cost_basis")),
      updated_at: p<number>(6),
    }))
    .where("id", "=", p<string>(7))
    .where("status", "=", "processing")
    .where("worker_id", "=", p<string>(8)),
);

/** How long a job whose family's sources are all full waits in its queue before it is tried again, ms. */
const WAIT_FOR_SOURCE_MS = 1000;

/** Largest output downloads, bytes. */
const MAX_OUTPUT_BYTES = { image: 50 * 1024 * 1024, video: 500 * 1024 * 1024 } as const;
const DOWNLOAD_TIMEOUT_MS = 120_000;

class StopError extends Error {}
class GiveUpError extends Error {}
/** The job is no longer this runner's (a cancel or the sweep ended it): drop the work, touch nothing. */
class LostError extends Error {}

/** A progress fraction as stored and shown: 0..1, two decimals (finer steps only make noise in event streams). */
function roundProgress(fraction: number | null | undefined): number | null {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return null;
  return Math.round(Math.min(1, Math.max(0, fraction)) * 100) / 100;
}

function extensionOf(contentType: string): string {
  if (contentType.includes("svg")) return "svg";
  if (contentType.includes("png")) return "png";
  if (contentType.includes("jpeg")) return "jpg";
  if (contentType.includes("webp")) return "webp";
  if (contentType.includes("mp4")) return "mp4";
  if (contentType.includes("webm")) return "webm";
  return "bin";
}

/** An account's concurrency caps from its limits columns (the claim reads them with its lock). */
function capsOf(account: AccountLimitsRow): ConcurrencyCaps {
  const limits = limitsOf(account);
  const img = mediaCaps(limits, "image");
  const vid = mediaCaps(limits, "video");
  return { image: img.concurrent, video: vid.concurrent, combined: img.pool === "combined" ? img.concurrent : null };
}

/** How long {@link JobRunner.stop} waits for submits that hold a place on the runner to start or give it back, ms. */
const RESERVATIONS_DRAIN_MS = 5000;

/**
 * Runs jobs until stopped. Jobs reach it two ways: its claims (`claimJobs`: pending jobs, oldest first,
 * on a nudge after a submit left a job pending, when a job of a backlog ends, and on its timer), and the
 * submits of this process, which start a job on it at once when it has room and no backlog
 * ({@link JobStarter}: jobs.ts).
 */
export class JobRunner implements JobStarter {
  readonly workerId = `${hostname()}-${process.pid}-${newId("w").slice(2, 10)}`;
  readonly #deps: RunnerDeps;
  readonly #maxInFlight: number;
  /** Free places that make a nudge or a job's end claim while the runner is busy (a quarter of it). */
  readonly #claimBatch: number;
  readonly #pollMs: number;
  readonly #sweepMs: number;
  readonly #heartbeatMs: number;
  readonly #leaseMs: number;
  readonly #upstreamPoll: PollTiming;
  readonly #inFlight = new Map<string, AbortController>();
  /** Jobs of `#inFlight` on the simulator path: aborted at once when ended elsewhere (no upstream to orphan). */
  readonly #local = new Set<string>();
  #unsubscribe: (() => void) | null = null;
  readonly #done = new Set<Promise<void>>();
  #pollTimer: NodeJS.Timeout | null = null;
  #sweepTimer: NodeJS.Timeout | null = null;
  #claiming = false;
  #again = false;
  #stopped = true;
  /** Places taken by submits that may start a job here (reserve, then start or unreserve). */
  #reserved = 0;
  /**
   * Pending jobs may wait that this runner could start: set by a nudge (a submit left a job pending, the
   * timer), cleared when a claim found fewer claimable jobs than it had room for. While set, submits do
   * not start jobs here (they would overtake the waiting ones) and every job's end claims again.
   */
  #backlog = true;
  /** The timer asked for a look at lapsed leases (D28) with the next claim. */
  #takeOverDue = true;
  /**
   * Accounts whose pending jobs a claim left at their concurrency cap: when one of their jobs ends here,
   * the runner claims at once (the timer finds those that end in other processes).
   */
  readonly #capped = new Set<string>();

  constructor(deps: RunnerDeps, opts: RunnerOptions = {}) {
    this.#deps = deps;
    this.#maxInFlight = opts.maxInFlight ?? 64;
    this.#claimBatch = Math.max(1, Math.floor(this.#maxInFlight / 4));
    this.#pollMs = opts.pollMs ?? 250;
    this.#sweepMs = opts.sweepMs ?? 5000;
    this.#heartbeatMs = opts.heartbeatMs ?? 2000;
    this.#leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.#upstreamPoll = opts.upstreamPoll ?? DEFAULT_POLL_TIMING;
  }

  /** Starts polling for jobs and sweeping. */
  start(): void {
    this.#stopped = false;
    // A job of this runner ended by someone else in this process (a cancel): stop working on it now. Jobs
    // on real sources are not aborted mid-call (a submit cut short could leave an accepted upstream job
    // nobody knows of): their next heartbeat or progress update finds the row ended and returns.
    this.#unsubscribe ??= jobChanges.subscribeAll((c) => {
      if (c.ended && c.by !== this.workerId && this.#local.has(c.jobId)) this.#inFlight.get(c.jobId)?.abort(new LostError("job ended elsewhere"));
    });
    // Other processes' pending jobs and lapsed leases are found by this timer's claims.
    this.#pollTimer = setInterval(() => {
      if (this.#stopped) return;
      this.#takeOverDue = true;
      this.#backlog = true;
      this.#claimSoon(true);
    }, this.#pollMs);
    this.#sweepTimer = setInterval(() => void this.#sweep(), this.#sweepMs);
    this.nudge();
    void this.#sweep();
  }

  /**
   * A job was left pending (a submit in this process): claims now when a batch of places is free or the
   * runner is idle, else the end of a running job claims once a batch is free.
   */
  nudge(): void {
    if (this.#stopped) return;
    this.#backlog = true;
    this.#claimSoon(false);
  }

  /** Free places: `maxInFlight` less the jobs running and the places submits hold. */
  #room(): number {
    return this.#maxInFlight - this.#inFlight.size - this.#reserved;
  }

  /**
   * Claims (or has the running claim loop go round again) when `any` room will do, or when a batch of
   * places is free, or when nothing runs. A claim is a transaction of four statements whatever it takes:
   * while the runner is saturated, claiming a batch at a time rather than a job at a time saves most of
   * them, and the jobs would not start sooner (the runner is busy).
   */
  #claimSoon(any: boolean): void {
    if (!any && this.#room() < this.#claimBatch && this.#inFlight.size > 0) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    void this.#claim();
  }

  /** Jobs being processed by this runner. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** {@link JobStarter.reserve}: a place when the runner runs, has room, is not claiming and knows of no backlog. */
  reserve(): boolean {
    if (this.#stopped || this.#claiming || this.#backlog) return false;
    if (this.#inFlight.size + this.#reserved >= this.#maxInFlight) return false;
    this.#reserved++;
    return true;
  }

  /** {@link JobStarter.unreserve}. */
  unreserve(): void {
    this.#reserved--;
  }

  /**
   * {@link JobStarter.adopt}: runs a job a submit committed as `processing` by this runner. A runner that
   * began stopping meanwhile hands it back as `pending` at once, as it does its other jobs.
   */
  adopt(job: ClaimedJob): void {
    this.#reserved--;
    this.#launch(job);
    if (this.#stopped) this.#inFlight.get(job.id)?.abort(new StopError("runner stopping"));
  }

  /** Stops claiming, aborts upstream calls and hands claimed jobs back as `pending`. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    if (this.#pollTimer) clearInterval(this.#pollTimer);
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    for (const c of this.#inFlight.values()) c.abort(new StopError("runner stopping"));
    await Promise.allSettled([...this.#done]);
    // A submit that took a place before the stop starts its job (handed back at once) or gives the place
    // back when its transaction ends: wait for those too, so every job of this runner is handed back.
    const until = Date.now() + RESERVATIONS_DRAIN_MS;
    while ((this.#reserved > 0 || this.#done.size > 0) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 5));
      await Promise.allSettled([...this.#done]);
    }
  }

  async #sweep(): Promise<void> {
    try {
      const { upstreamToCancel, ...r } = await sweepJobs(this.#deps.db, this.#deps.sweep);
      if (r.refunded + r.expired + r.syncHolds > 0) this.#deps.log.warn(r, "sweep released holds of dead or expired work");
      for (const handle of upstreamToCancel) {
        const slot = this.#deps.sourceNamed?.(handle.source);
        await slot?.source
          .cancel(handle, AbortSignal.timeout(10_000))
          .catch((err: unknown) => this.#deps.log.warn({ err, source: handle.source }, "upstream cancel after sweep failed"));
      }
    } catch (err) {
      this.#deps.log.error({ err }, "sweep failed");
    }
  }

  async #claim(): Promise<void> {
    this.#claiming = true;
    try {
      do {
        this.#again = false;
        const room = this.#room();
        // Full: the backlog stays, and the end of running jobs claims again.
        if (room <= 0 || this.#stopped) break;
        const takeOver = this.#takeOverDue;
        this.#takeOverDue = false;
        const { jobs, capped } = await claimJobs(this.#deps.db, this.workerId, room, capsOf, { leaseMs: this.#leaseMs, takeOver });
        for (const a of capped) this.#capped.add(a);
        for (const job of jobs) {
          jobChanges.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: this.workerId });
          this.#launch(job);
        }
        if (jobs.length === room) this.#again = true;
        // Fewer than there was room for: nothing claimable waits (unless a nudge came meanwhile: again).
        else if (!this.#again) this.#backlog = false;
      } while (this.#again && !this.#stopped);
    } catch (err) {
      this.#deps.log.error({ err }, "claiming jobs failed");
    } finally {
      this.#claiming = false;
    }
  }

  #launch(job: ClaimedJob): void {
    const controller = new AbortController();
    this.#inFlight.set(job.id, controller);
    const p = this.#process(job, controller)
      .catch((err: unknown) => this.#deps.log.error({ err, job: job.id }, "job processing failed"))
      .finally(() => {
        this.#inFlight.delete(job.id);
        this.#local.delete(job.id);
        this.#done.delete(p);
        if (this.#stopped) return;
        // A slot of an account whose jobs wait at its cap is free: they may start now.
        if (this.#capped.delete(job.account_id)) {
          this.#backlog = true;
          this.#claimSoon(true);
        }
        // A place is free: claim when jobs may be waiting for one (else submits start theirs directly).
        else if (this.#backlog) this.#claimSoon(false);
      });
    this.#done.add(p);
  }

  async #process(job: ClaimedJob, controller: AbortController): Promise<void> {
    const { db } = this.#deps;
    const kind = job.kind as "image" | "video";
    const giveUpAfter = GIVE_UP_MS[kind] - (Date.now() - Number(job.started_at ?? Date.now()));
    const giveUp = setTimeout(() => controller.abort(new GiveUpError("gave up")), Math.max(0, giveUpAfter));
    let lastBeat = Date.now();
    let lastProgress: number | null = null;
    const onProgress = (fraction?: number) => {
      const now = Date.now();
      if (now - lastBeat < this.#heartbeatMs) return;
      lastBeat = now;
      const progress = roundProgress(fraction);
      db.updateTable("jobs")
        .set({ heartbeat_at: now, updated_at: now, ...(progress !== null ? { progress } : {}) })
        .where("id", "=", job.id)
        .where("status", "=", "processing")
        .where("worker_id", "=", this.workerId)
        .executeTakeFirst()
        .then((res) => {
          // No row: the job was ended by another process (a cancel) or taken back; stop working on it.
          if (Number(res.numUpdatedRows) === 0) controller.abort(new LostError("job no longer ours"));
          else if (progress !== null && progress !== lastProgress) {
            lastProgress = progress;
            jobChanges.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: this.workerId });
          }
        })
        .catch((err: unknown) => this.#deps.log.warn({ err, job: job.id }, "heartbeat failed"));
    };

    const request = JSON.parse(job.request_json) as Record<string, unknown>;
    // A test-mode job (D32) is always the simulator's, whatever sources its family has.
    const slots = job.mode === "test" ? [] : (this.#deps.sourcesFor?.({ kind, model: job.model }) ?? []);
    if (slots.length > 0 || job.upstream_handle_json !== null) {
      try {
        await this.#processDurable(job, kind, request, slots, controller);
      } finally {
        clearTimeout(giveUp);
      }
      return;
    }

    this.#local.add(job.id);
    let outputs: MediaOutput[];
    try {
      if (kind === "image") {
        outputs = await observeUpstream(job.model, () =>
          this.#deps.visual.generateImages(request as unknown as ImageRequest, controller.signal, onProgress),
        );
      } else {
        outputs = [
          await observeUpstream(job.model, () =>
            this.#deps.visual.generateVideo(request as unknown as VideoRequest, controller.signal, onProgress),
          ),
        ];
      }
    } catch (err) {
      clearTimeout(giveUp);
      const reason: unknown = controller.signal.reason;
      if (reason instanceof LostError) return;
      if (reason instanceof StopError) {
        await endJobWithoutCharge(db, { id: job.id, from: "processing", to: "pending", code: null, message: null, workerId: this.workerId });
        return;
      }
      const timedOut = reason instanceof GiveUpError;
      await endJobWithoutCharge(db, {
        id: job.id,
        from: "processing",
        to: "failed",
        code: timedOut ? "timeout" : "provider_error",
        message: timedOut
          ? `The upstream did not finish within ${GIVE_UP_MS[kind] / 60_000} minutes; the hold was released.`
          : `The upstream failed: ${err instanceof Error ? err.message : "unknown error"}. The hold was released.`,
        workerId: this.workerId,
      });
      return;
    }
    clearTimeout(giveUp);
    await this.#deliver(job, kind, outputs, null);
  }

  /**
   * A job on real sources (D27, D28): submit with failover or resume by polling (durable.ts), then
   * deliver. Stop hands the job back with its handle; give-up cancels it upstream.
   */
  async #processDurable(
    job: ClaimedJob,
    kind: "image" | "video",
    request: Record<string, unknown>,
    slots: SourceSlot[],
    controller: AbortController,
  ): Promise<void> {
    const { db } = this.#deps;
    const mine = (trx: Kysely<Database>) =>
      trx.updateTable("jobs").where("id", "=", job.id).where("status", "=", "processing").where("worker_id", "=", this.workerId);
    let lastBeat = 0;
    // The row's progress was cleared when the job was claimed (a takeover keeps the last one: unknown here).
    let lastProgress: number | null | undefined = job.upstream_handle_json === null ? null : undefined;
    const hooks: DurableHooks = {
      recordHandle: async (handle, layer) => {
        const now = Date.now();
        lastBeat = now;
        const res = await mine(db)
          .set({ upstream_source: handle.source, upstream_handle_json: JSON.stringify(handle), fallback_layer: layer, heartbeat_at: now, updated_at: now })
          .executeTakeFirst();
        return Number(res.numUpdatedRows) === 1;
      },
      moveToLayer: async (layer) => {
        const now = Date.now();
        const res = await mine(db)
          .set({ upstream_source: null, upstream_handle_json: null, fallback_layer: layer, heartbeat_at: now, updated_at: now })
          .executeTakeFirst();
        return Number(res.numUpdatedRows) === 1;
      },
      heartbeat: async () => {
        const now = Date.now();
        if (now - lastBeat < this.#heartbeatMs) return true;
        lastBeat = now;
        const res = await mine(db).set({ heartbeat_at: now, updated_at: now }).executeTakeFirst();
        return Number(res.numUpdatedRows) === 1;
      },
      progress: async (fraction) => {
        // Written only when it changes (a poll a second must not mean a write a second); it counts as a heartbeat.
        const progress = roundProgress(fraction);
        if (progress === lastProgress) return true;
        const now = Date.now();
        lastBeat = now;
        const res = await mine(db).set({ progress, heartbeat_at: now, updated_at: now }).executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1) return false;
        lastProgress = progress;
        jobChanges.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: this.workerId });
        return true;
      },
    };
    const current: { handle: UpstreamHandle | null; slot: SourceSlot | null } = { handle: null, slot: null };
    const handle = job.upstream_handle_json === null ? null : (JSON.parse(job.upstream_handle_json) as UpstreamHandle);
    let outcome;
    try {
      outcome = await observeUpstream(job.model, () =>
        runDurable(
          { id: job.id, kind, request: request as unknown as ImageRequest | VideoRequest, handle, layer: Number(job.fallback_layer) },
          slots,
          hooks,
          controller.signal,
          current,
          this.#upstreamPoll,
        ),
      );
    } catch (err) {
      const reason: unknown = controller.signal.reason;
      if (reason instanceof StopError) {
        // Shutdown: the job keeps its handle; any runner resumes it by polling (D28).
        await endJobWithoutCharge(db, { id: job.id, from: "processing", to: "pending", code: null, message: null, workerId: this.workerId });
        return;
      }
      if (reason instanceof GiveUpError) {
        if (current.handle && current.slot) {
          const { handle: h, slot } = current;
          await slot.source.cancel(h, AbortSignal.timeout(10_000)).catch((e: unknown) => this.#deps.log.warn({ err: e, job: job.id }, "upstream cancel failed"));
        }
        await endJobWithoutCharge(db, {
          id: job.id,
          from: "processing",
          to: "failed",
          code: "timeout",
          message: `The upstream did not finish within ${GIVE_UP_MS[kind] / 60_000} minutes; the hold was released.`,
          workerId: this.workerId,
        });
        return;
      }
      throw err;
    }
    switch (outcome.kind) {
      case "lost":
        return;
      case "wait":
        // Every source is at max_concurrency: the job waits in its queue (D28) and is asked for again
        // after a second, rather than in a tight loop.
        if (await deferJob(db, job.id, this.workerId, Date.now() + WAIT_FOR_SOURCE_MS)) {
          jobChanges.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: this.workerId });
        }
        return;
      case "failed":
        await endJobWithoutCharge(db, {
          id: job.id,
          from: "processing",
          to: "failed",
          code: outcome.code,
          message: `${outcome.message} The hold was released.`,
          workerId: this.workerId,
        });
        return;
      case "succeeded": {
        const r = outcome.result;
        await this.#deliver(job, kind, r.outputs, {
          durationSec: r.durationSec,
          megapixels: r.megapixels,
          upstreamCostUsd: r.upstreamCostUsd,
          layer: outcome.layer,
          source: outcome.source,
        });
      }
    }
  }

  /**
   * Rehosts `outputs` in blob storage, then in one transaction marks the job `succeeded` and captures the
   * final amount; every failure on the way ends the job without a charge (D3).
   */
  async #deliver(job: ClaimedJob, kind: "image" | "video", outputs: MediaOutput[], reported: Delivery | null): Promise<void> {
    const { db } = this.#deps;
    if (outputs.length === 0) {
      await endJobWithoutCharge(db, { id: job.id, from: "processing", to: "failed", code: "provider_error", message: "The upstream returned no output.", workerId: this.workerId });
      return;
    }

    // Rehost every output in our blob store: `output.url` never points at the upstream.
    const keys: string[] = [];
    let contentType = "application/octet-stream";
    let firstBytes: Uint8Array | null = null;
    let stage: "download" | "store" = "download";
    try {
      for (const [i, out] of outputs.entries()) {
        let bytes: Uint8Array;
        let type: string;
        if (out.kind === "bytes") {
          bytes = out.body;
          type = out.contentType;
        } else {
          // A source's own hosts are fetched directly (D25); any other URL through the SSRF-safe fetch.
          const slot = reported?.source ? this.#deps.sourceNamed?.(reported.source) : undefined;
          const fetcher: OutputFetcher = slot?.downloadsDirectly?.(out.url) ? fetchDirect : this.#deps.fetchOutput;
          const got = await fetcher(out.url, { maxBytes: MAX_OUTPUT_BYTES[kind], timeoutMs: DOWNLOAD_TIMEOUT_MS });
          bytes = got.bytes;
          type = out.contentType ?? got.contentType ?? "application/octet-stream";
        }
        // One folder per kind (as audio): a folder per job cost an inode and a `mkdir` per job.
        const key = kind === "video" ? `videos/${job.id}.${extensionOf(type)}` : `images/${job.id}-${i}.${extensionOf(type)}`;
        stage = "store";
        await this.#deps.blobs.put(key, bytes, { contentType: type });
        stage = "download";
        keys.push(key);
        if (i === 0) {
          contentType = type;
          firstBytes = bytes;
        }
      }
    } catch (err) {
      for (const k of keys) await this.#deps.blobs.delete(k).catch(() => {});
      await endJobWithoutCharge(db, {
        id: job.id,
        from: "processing",
        to: "failed",
        code: stage === "store" ? "storage_error" : "provider_error",
        message: `The output could not be ${stage === "store" ? "stored" : "downloaded from the upstream"}: ${err instanceof Error ? err.message : "error"}. The hold was released.`,
        workerId: this.workerId,
      });
      return;
    }

    // D26: a video's delivered length is what the source reports, else what the file's header says.
    const delivery: Delivery | null =
      kind === "video" && reported !== null && reported.durationSec === null && firstBytes !== null
        ? { ...reported, durationSec: mp4DurationSec(firstBytes) }
        : reported;
    const final = this.#finalAmount(job, firstBytes, delivery);
    const upstreamCost = delivery ? this.#upstreamCost(job, final, firstBytes, delivery) : null;
    // The usage record's end from the row as the update below leaves it (D29): finished by the capture,
    // in its statement on PostgreSQL, rather than read back and updated in two more round trips.
    const requestedSec = kind === "video" ? ((JSON.parse(job.request_json) as { durationSec?: number }).durationSec ?? null) : null;
    const usageEnd = jobUsageEnd({
      status: "succeeded",
      kind,
      fallbackLayer: delivery ? delivery.layer : job.fallback_layer,
      durationSec: kind === "video" ? (delivery?.durationSec ?? requestedSec) : null,
      requestJson: job.request_json,
    });
    const committed = await inTransaction(db, async (trx) => {
      const res = await markSucceeded(
        trx,
        final,
        JSON.stringify({ key: keys[0], content_type: contentType, keys }),
        kind === "video" ? (delivery?.durationSec ?? null) : null,
        delivery ? delivery.layer : null,
        upstreamCost?.micros ?? null,
        upstreamCost?.basis ?? null,
        Date.now(),
        job.id,
        this.workerId,
      );
      if (Number(res.numAffectedRows ?? 0) !== 1) return false;
      await onJobEnded(trx, { id: job.id, accountId: job.account_id, status: "succeeded", usageFinished: job.hold_id !== null, webhookUrl: job.webhook_url });
      // The capture last: on PostgreSQL it locks the account row until the commit, and the account's
      // submits (their holds) wait for that lock; the webhook reads above need not hold it.
      if (job.hold_id) await settleCapture(trx, job.hold_id, final, undefined, usageEnd);
      return true;
    });
    if (!committed) {
      // The sweep, a cancel (D30) or a stop ended the job meanwhile and released its hold: keep nothing.
      for (const k of keys) await this.#deps.blobs.delete(k).catch(() => {});
      return;
    }
    jobChanges.publish({ accountId: job.account_id, jobId: job.id, ended: true, by: this.workerId });
  }

  /**
   * What the delivered job cost upstream (issue "Real upstreams, part 1" point 6), micro-USD: what the
   * source reported (BFL's `cost`), else the provider's list price of what was delivered
   * (`upstreamListPrice`: the final charge without the x1.35 markup; imgB-2-pro by delivered megapixels).
   */
  #upstreamCost(job: ClaimedJob, final: Micros, firstBytes: Uint8Array | null, delivery: Delivery): { micros: Micros; basis: "reported" | "list_price" } | null {
    if (delivery.upstreamCostUsd !== null && Number.isFinite(delivery.upstreamCostUsd) && delivery.upstreamCostUsd >= 0) {
      const micros = usdToMicros(delivery.upstreamCostUsd.toFixed(6));
      if (micros !== null) return { micros, basis: "reported" };
    }
    const model = job.kind === "video" ? getModelOf(job.model, "video") : getModelOf(job.model, "image");
    if (!model) return null;
    const size = delivery.megapixels === null && firstBytes ? pngDimensions(firstBytes) : null;
    const megapixels = delivery.megapixels ?? (size ? (size.width * size.height) / 1_000_000 : null);
    return { micros: upstreamListPrice(model, final, megapixels), basis: "list_price" };
  }

  /**
   * The amount to charge, micro-USD, never more than the hold: the hold, except (D26)
   * - per-megapixel images pay for the delivered megapixels: the source's report, else the PNG header;
   * - per-second videos pay rate x min(requested, delivered seconds) when the source reports the length.
   */
  #finalAmount(job: ClaimedJob, firstBytes: Uint8Array | null, delivery: Delivery | null): Micros {
    const held = Number(job.hold_micros);
    if (job.kind === "video") {
      const video = getModelOf(job.model, "video");
      const requested = (JSON.parse(job.request_json) as { durationSec?: number }).durationSec;
      if (!video || video.pricing.mode !== "per-second" || delivery?.durationSec == null || requested === undefined) return held;
      const seconds = Math.max(1, Math.min(requested, Math.round(delivery.durationSec)));
      return Math.min(held, quoteVideo(video, seconds));
    }
    const model = getModelOf(job.model, "image");
    if (!model || model.pricing.mode !== "per-mp") return held;
    if (delivery?.megapixels != null && delivery.megapixels > 0) return Math.min(held, quoteImageAtMegapixels(model, delivery.megapixels));
    const size = firstBytes ? pngDimensions(firstBytes) : null;
    if (!size) return held;
    return Math.min(held, quoteImage(model, { n: 1, width: size.width, height: size.height }));
  }
}
