/**
 * The sweep (spec "States and transitions" 4; D3, D11, D15): jobs whose worker stopped reporting are
 * `refunded` after `SWEEP_VIDEO_AFTER_S` / `SWEEP_IMAGE_AFTER_S` without a heartbeat; jobs that waited in
 * their queue past the runner's give-up time without starting are `expired`. Both release the whole hold
 * in the same transaction as the status change. Safe to run from every process at once: each change is
 * conditional on the status it expects.
 */
import type { Kysely } from "kysely";
import { inTransaction, releaseStaleHolds, settleStaleMeteredHolds } from "../billing/ledger.ts";
import { settleRelease } from "../billing/paid-call.ts";
import { onJobEnded } from "./ended.ts";
import type { JobChangeFeed } from "./changes.ts";
import { endJobRow, overduePendingJobs, staleRunningJobs } from "./execution.repository.ts";
import type { Database, JobStatus } from "../storage/schema.ts";
import type { UpstreamHandle } from "../upstreams/types.ts";

/** The runner gives up on a job after this long (spec "GET /v1/jobs/{id}"), ms. */
export const GIVE_UP_MS = { image: 5 * 60_000, video: 10 * 60_000 } as const;

/** Jobs of each kind and end a sweep pass reads at most (the next pass takes the rest). */
const SWEEP_BATCH = 500;

/** Sweep thresholds, seconds (D11). */
export interface SweepConfig {
  sweepVideoAfterS: number;
  sweepImageAfterS: number;
  /** Open holds of synchronous calls older than this were orphaned by a dead process. */
  sweepSyncHoldsAfterS: number;
  /**
   * A realtime socket's hold whose heartbeat is older than this was orphaned by a dead process (D42, D43):
   * the sweep captures its persisted count and releases the rest. Absent: 30 s.
   */
  sweepRealtimeAfterS?: number;
}

/**
 * Ends job `id` (expected in `from`) as `to` with `error`, releasing its hold and running
 * {@link onJobEnded}, in one transaction (`to: "pending"` hands a claimed job back instead: nothing ends).
 * Returns false when the job was no longer in `from` (someone else ended it). `workerId` additionally
 * requires that this worker holds the claim. After the commit the change is announced on the gateway's
 * job feed `changes` (changes.ts, D30), so call it outside a transaction.
 */
export async function endJobWithoutCharge(
  db: Kysely<Database>,
  args: { id: string; from: JobStatus; to: "failed" | "refunded" | "expired" | "pending"; code: string | null; message: string | null; workerId?: string },
  changes: JobChangeFeed,
): Promise<boolean> {
  const accountId = await inTransaction(db, async (trx) => {
    const res = await endJobRow(trx, { ...args, now: Date.now() });
    if (!res) return null;
    if (args.to !== "pending") {
      if (res.hold_id) await settleRelease(trx, res.hold_id);
      await onJobEnded(trx, { id: args.id, accountId: res.account_id, status: args.to });
    }
    return res.account_id;
  });
  if (accountId === null) return false;
  // After the commit: event streams and waiting requests of this gateway see the change at once (D30).
  changes.publish({ accountId, jobId: args.id, ended: args.to !== "pending", by: args.workerId ?? null });
  return true;
}

/**
 * One sweep pass; returns how many jobs it refunded and expired, how many orphaned synchronous holds it
 * released (docs/architecture.md invariant 4: a process killed between hold and capture), how many realtime
 * sockets' holds it settled (their process died: the persisted count captured, D42), and the upstream handles
 * of refunded jobs, which the caller asks their sources to cancel (D28). Each end is announced on
 * `changes`, the gateway's job feed.
 */
export async function sweepJobs(
  db: Kysely<Database>,
  cfg: SweepConfig,
  changes: JobChangeFeed,
  now = Date.now(),
): Promise<{ refunded: number; expired: number; syncHolds: number; realtimeHolds: number; upstreamToCancel: UpstreamHandle[] }> {
  let refunded = 0;
  const upstreamToCancel: UpstreamHandle[] = [];
  let expired = 0;
  const syncHolds = await releaseStaleHolds(db, cfg.sweepSyncHoldsAfterS * 1000);
  const realtimeHolds = await settleStaleMeteredHolds(db, (cfg.sweepRealtimeAfterS ?? 30) * 1000, now);
  for (const kind of ["image", "video"] as const) {
    const staleBefore = now - (kind === "video" ? cfg.sweepVideoAfterS : cfg.sweepImageAfterS) * 1000;
    const stale = await staleRunningJobs(db, kind, staleBefore, SWEEP_BATCH);
    for (const j of stale) {
      const ok = await endJobWithoutCharge(db, {
        id: j.id,
        from: "processing",
        to: "refunded",
        code: "worker_lost",
        message: "The worker processing this job stopped reporting; the hold was released.",
      }, changes);
      if (ok) refunded++;
      // D28: a refunded job is also cancelled at the source that accepted it.
      if (ok && j.upstream_handle_json !== null) upstreamToCancel.push(JSON.parse(j.upstream_handle_json) as UpstreamHandle);
    }
    const old = await overduePendingJobs(db, kind, now - GIVE_UP_MS[kind], SWEEP_BATCH);
    for (const j of old) {
      const ok = await endJobWithoutCharge(db, {
        id: j.id,
        from: "pending",
        to: "expired",
        code: "expired",
        message: "The job waited in its queue longer than the runner's give-up time without starting.",
      }, changes);
      if (ok) expired++;
    }
  }
  return { refunded, expired, syncHolds, realtimeHolds, upstreamToCancel };
}
