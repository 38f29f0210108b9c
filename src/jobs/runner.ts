/**
 * The job runner (docs/architecture.md "Asynchronous jobs"; spec "GET /v1/jobs/{id}"; D3): claims pending image and
 * video jobs within each account's concurrency cap, calls the adapter, rehosts the outputs in blob
 * storage and then, in one transaction, marks the job `succeeded` and captures the final amount
 * (releasing the rest). Every other end releases the whole hold.
 *
 * This module is the scheduler (claims, the loop, concurrency, start and stop, the sweep's timer); one
 * job's execution is executor.ts, its delivery (final price, capture) delivery.ts, the storing of its
 * outputs rehost.ts, and the runner's SQL execution.repository.ts.
 *
 * Heartbeats are written when the adapter reports progress; a worker that stops reporting (a dead
 * process, or `X-Svc-Simulate: hang`) is left to the sweep, which refunds the job. On stop (SIGTERM) the
 * runner aborts its upstream calls and hands its claimed jobs back as `pending`.
 *
 * D30: the fraction done that the upstream reports is stored on the row (`progress`) with the heartbeats,
 * and every change the runner commits is announced on the gateway's job feed (changes.ts). A job ended
 * elsewhere while the runner works on it (a cancel) is noticed at once when this process ended it (the
 * feed) and otherwise at the next heartbeat, whose update no longer matches the row; either way the runner
 * drops its work, and its success update, conditional on `processing` by this worker, cannot charge.
 */
import { hostname } from "node:os";
import { newId } from "../ids.ts";
import { limitsOf } from "../accounts/limits.ts";
import { mediaCaps } from "../limits/effective.ts";
import { type AccountLimitsRow, type ClaimedJob, claimJobs, type ConcurrencyCaps, DEFAULT_LEASE_MS } from "../storage/job-queue.ts";
import type { JobChangeFeed } from "./changes.ts";
import { DEFAULT_POLL_TIMING, type PollTiming } from "./durable.ts";
import { type ExecutionContext, executeJob, LostError, type RunnerDeps, StopError } from "./executor.ts";
import type { JobStarter } from "./submit.ts";
import { endJobWithoutCharge, sweepJobs } from "./sweep.ts";
import { cancelOverdueJobs } from "./cancel.ts";
import { TEST_VIDEO_CONCURRENT } from "./submit.ts";
import { inTrace } from "../observability/tracing.ts";
import { sweepIdempotentCalls } from "../billing/idempotent-calls.ts";
import { sweepRetention } from "./retention.ts";
import { pendingJobsHeldBy } from "./retention.repository.ts";
import { PROMPT_UNAVAILABLE_MESSAGE } from "./texts.ts";

export type { RunnerDeps, RunnerLog } from "./executor.ts";
export type { OutputFetcher } from "./rehost.ts";

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
  /** Interval of the retention sweep (D46, retention.ts), ms; default one minute (its windows are days). */
  retentionSweepMs?: number;
}

/**
 * An account's concurrency caps from its limits columns (the claim reads them with its lock). A video pool
 * of size 0 (Tier 0) runs test-mode videos one at a time (D48; live ones are refused at submit): without
 * that, a test-mode video the submit could not start at once stayed queued until it expired.
 */
function capsOf(account: AccountLimitsRow): ConcurrencyCaps {
  const limits = limitsOf(account);
  const img = mediaCaps(limits, "image");
  const vid = mediaCaps(limits, "video");
  const video = vid.pool === "video" && vid.concurrent === 0 ? TEST_VIDEO_CONCURRENT : vid.concurrent;
  return { image: img.concurrent, video, combined: img.pool === "combined" ? img.concurrent : null };
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
  /** The gateway's job feed (changes.ts, D30): this runner announces its changes there and hears cancels. */
  readonly changes: JobChangeFeed;
  /** What running one job needs of this runner (executor.ts). */
  readonly #execution: ExecutionContext;
  readonly #maxInFlight: number;
  /** Free places that make a nudge or a job's end claim while the runner is busy (a quarter of it). */
  readonly #claimBatch: number;
  readonly #pollMs: number;
  readonly #sweepMs: number;
  readonly #leaseMs: number;
  readonly #inFlight = new Map<string, AbortController>();
  /** Jobs of `#inFlight` on the simulator path: aborted at once when ended elsewhere (no upstream to orphan). */
  readonly #local = new Set<string>();
  #unsubscribe: (() => void) | null = null;
  readonly #done = new Set<Promise<void>>();
  #pollTimer: NodeJS.Timeout | null = null;
  #sweepTimer: NodeJS.Timeout | null = null;
  #retentionTimer: NodeJS.Timeout | null = null;
  readonly #retentionSweepMs: number;
  #retentionRunning = false;
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
    this.#leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.#retentionSweepMs = opts.retentionSweepMs ?? 60_000;
    this.changes = deps.changes;
    this.#execution = {
      deps,
      changes: this.changes,
      workerId: this.workerId,
      heartbeatMs: opts.heartbeatMs ?? 2000,
      upstreamPoll: opts.upstreamPoll ?? DEFAULT_POLL_TIMING,
      markLocal: (jobId) => this.#local.add(jobId),
    };
  }

  /** Starts polling for jobs and sweeping. */
  start(): void {
    this.#stopped = false;
    // A job of this runner ended by someone else in this process (a cancel): stop working on it now. Jobs
    // on real sources are not aborted mid-call (a submit cut short could leave an accepted upstream job
    // nobody knows of): their next heartbeat or progress update finds the row ended and returns.
    this.#unsubscribe ??= this.changes.subscribeAll((c) => {
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
    if (this.#deps.retention) this.#retentionTimer = setInterval(() => void this.#sweepRetention(), this.#retentionSweepMs);
    this.nudge();
    void this.#sweep();
  }

  /** One retention sweep (D46), unless the previous one still runs (a large first pass may take a while). */
  async #sweepRetention(): Promise<void> {
    const windows = this.#deps.retention;
    if (!windows || this.#retentionRunning || this.#stopped) return;
    this.#retentionRunning = true;
    try {
      const r = await sweepRetention({ db: this.#deps.db, blobs: this.#deps.blobs, windows, log: this.#deps.log });
      if (r.promptsCleared + r.outputsExpired + r.usageDeleted + (r.auditDeleted ?? 0) > 0) this.#deps.log.info(r, "retention sweep removed what its windows passed");
    } catch (err) {
      this.#deps.log.error({ err }, "retention sweep failed");
    } finally {
      this.#retentionRunning = false;
    }
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
    if (this.#retentionTimer) clearInterval(this.#retentionTimer);
    for (const c of this.#inFlight.values()) c.abort(new StopError("runner stopping"));
    await Promise.allSettled([...this.#done]);
    // A submit that took a place before the stop starts its job (handed back at once) or gives the place
    // back when its transaction ends: wait for those too, so every job of this runner is handed back.
    const until = Date.now() + RESERVATIONS_DRAIN_MS;
    while ((this.#reserved > 0 || this.#done.size > 0) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 5));
      await Promise.allSettled([...this.#done]);
    }
    await this.#endWithheldPending();
  }

  /**
   * D46 zero retention: the pending jobs whose texts only this process holds, and that no upstream accepted,
   * could never be claimed by another runner; end them now (`prompt_unavailable`, holds released) rather than
   * at their give-up time.
   */
  async #endWithheldPending(): Promise<void> {
    const withheld = this.#deps.withheld;
    if (!withheld) return;
    try {
      for (const id of await pendingJobsHeldBy(this.#deps.db, withheld.holderId)) {
        await endJobWithoutCharge(this.#deps.db, { id, from: "pending", to: "failed", code: "prompt_unavailable", message: PROMPT_UNAVAILABLE_MESSAGE }, this.changes);
        withheld.drop(id);
      }
    } catch (err) {
      this.#deps.log.error({ err }, "ending the pending jobs whose texts this process held failed");
    }
  }

  async #sweep(): Promise<void> {
    try {
      const { upstreamToCancel, ...r } = await sweepJobs(this.#deps.db, this.#deps.sweep, this.changes);
      // Jobs past their `Cancel-After` deadline (D47) whose process did not end them.
      await cancelOverdueJobs({ db: this.#deps.db, sourceNamed: this.#deps.sourceNamed, log: this.#deps.log, changes: this.changes });
      if (r.refunded + r.expired + r.syncHolds + r.realtimeHolds > 0) this.#deps.log.warn(r, "sweep released holds of dead or expired work");
      for (const handle of upstreamToCancel) {
        const slot = this.#deps.sourceNamed?.(handle.source);
        await slot?.source
          .cancel(handle, AbortSignal.timeout(10_000))
          .catch((err: unknown) => this.#deps.log.warn({ err, source: handle.source }, "upstream cancel after sweep failed"));
      }
      // Stored answers of idempotent synchronous calls past their 24 h, with their blobs (D37).
      await sweepIdempotentCalls(this.#deps.db, this.#deps.blobs);
      // Texts held for zero-retention jobs that ended elsewhere (a cancel, the sweep) are forgotten (D46).
      this.#deps.withheld?.prune();
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
        const { jobs, capped } = await claimJobs(this.#deps.db, this.workerId, room, capsOf, {
          leaseMs: this.#leaseMs,
          takeOver,
          textsHolder: this.#deps.withheld?.holderId ?? null,
        });
        for (const a of capped) this.#capped.add(a);
        for (const job of jobs) {
          this.changes.publish({ accountId: job.account_id, jobId: job.id, ended: false, by: this.workerId });
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
    // D40: the job's work is a span of its submit's trace (the row's traceparent), whatever request or
    // claim started it here.
    const p = inTrace(this.#deps.tracing, job.traceparent, "job.run", "consumer", { "gw.job.id": job.id, "gw.job.kind": job.kind, "gw.account.id": job.account_id, "gw.test_mode": job.mode === "test" }, () =>
      executeJob(this.#execution, job, controller),
    )
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
}
