/**
 * The sweep (spec "States and transitions" 4; D3, D11, D15): jobs whose worker stopped reporting are
 * `refunded` after `SWEEP_VIDEO_AFTER_S` / `SWEEP_IMAGE_AFTER_S` without a heartbeat; jobs that waited in
 * their queue past the runner's give-up time without starting are `expired`. Both release the whole hold
 * in the same transaction as the status change. Safe to run from every process at once: each change is
 * conditional on the status it expects.
 */
import type { Kysely } from "kysely";
import { inTransaction, releaseStaleHolds } from "../billing/ledger.ts";
import { settleRelease } from "../billing/paid-call.ts";
import { onJobEnded } from "./ended.ts";
import { jobChanges } from "./changes.ts";
import type { Database, JobStatus } from "../storage/schema.ts";
import type { UpstreamHandle } from "../upstreams/types.ts";

/** The runner gives up on a job after this long (spec "GET /v1/jobs/{id}"), ms. */
export const GIVE_UP_MS = { image: 5 * 60_000, video: 10 * 60_000 } as const;

/** Sweep thresholds, seconds (D11). */
export interface SweepConfig {
  sweepVideoAfterS: number;
  sweepImageAfterS: number;
  /** Open holds of synchronous calls older than this were orphaned by a dead process. */
  sweepSyncHoldsAfterS: number;
}

/**
 * Ends job `id` (expected in `from`) as `to` with `error`, releasing its hold and running
 * {@link onJobEnded}, in one transaction (`to: "pending"` hands a claimed job back instead: nothing ends).
 * Returns false when the job was no longer in `from` (someone else ended it). `workerId` additionally
 * requires that this worker holds the claim. After the commit the change is announced on the process's
 * job feed (changes.ts, D30), so call it outside a transaction.
 */
export async function endJobWithoutCharge(
  db: Kysely<Database>,
  args: { id: string; from: JobStatus; to: "failed" | "refunded" | "expired" | "pending"; code: string | null; message: string | null; workerId?: string },
): Promise<boolean> {
  const accountId = await inTransaction(db, async (trx) => {
    const now = Date.now();
    let q = trx
      .updateTable("jobs")
      .set(
        args.to === "pending"
          ? { status: "pending", worker_id: null, started_at: null, heartbeat_at: null, progress: null, updated_at: now }
          : { status: args.to, error_code: args.code, error_message: args.message, updated_at: now },
      )
      .where("id", "=", args.id)
      .where("status", "=", args.from);
    if (args.workerId !== undefined) q = q.where("worker_id", "=", args.workerId);
    const res = await q.returning(["hold_id", "account_id"]).executeTakeFirst();
    if (!res) return null;
    if (args.to !== "pending") {
      if (res.hold_id) await settleRelease(trx, res.hold_id);
      await onJobEnded(trx, { id: args.id, accountId: res.account_id, status: args.to });
    }
    return res.account_id;
  });
  if (accountId === null) return false;
  // After the commit: event streams and waiting requests of this process see the change at once (D30).
  jobChanges.publish({ accountId, jobId: args.id, ended: args.to !== "pending", by: args.workerId ?? null });
  return true;
}

/**
 * One sweep pass; returns how many jobs it refunded and expired, how many orphaned synchronous holds it
 * released (design.md invariant 4: a process killed between hold and capture), and the upstream handles
 * of refunded jobs, which the caller asks their sources to cancel (D28).
 */
export async function sweepJobs(
  db: Kysely<Database>,
  cfg: SweepConfig,
  now = Date.now(),
): Promise<{ refunded: number; expired: number; syncHolds: number; upstreamToCancel: UpstreamHandle[] }> {
  let refunded = 0;
  const upstreamToCancel: UpstreamHandle[] = [];
  let expired = 0;
  const syncHolds = await releaseStaleHolds(db, cfg.sweepSyncHoldsAfterS * 1000);
  for (const kind of ["image", "video"] as const) {
    const staleBefore = now - (kind === "video" ? cfg.sweepVideoAfterS : cfg.sweepImageAfterS) * 1000;
    const stale = await db
      .selectFrom("jobs")
      .select(["id", "upstream_handle_json"])
      .where("status", "=", "processing")
      .where("kind", "=", kind)
      .where("heartbeat_at", "<", staleBefore)
      .limit(500)
      .execute();
    for (const j of stale) {
      const ok = await endJobWithoutCharge(db, {
        id: j.id,
        from: "processing",
        to: "refunded",
        code: "worker_lost",
        message: "The worker processing this job stopped reporting; the hold was released.",
      });
      if (ok) refunded++;
      // D28: a refunded job is also cancelled at the source that accepted it.
      if (ok && j.upstream_handle_json !== null) upstreamToCancel.push(JSON.parse(j.upstream_handle_json) as UpstreamHandle);
    }
    const old = await db
      .selectFrom("jobs")
      .select("id")
      .where("status", "=", "pending")
      .where("kind", "=", kind)
      .where("created_at", "<", now - GIVE_UP_MS[kind])
      .limit(500)
      .execute();
    for (const j of old) {
      const ok = await endJobWithoutCharge(db, {
        id: j.id,
        from: "pending",
        to: "expired",
        code: "expired",
        message: "The job waited in its queue longer than the runner's give-up time without starting.",
      });
      if (ok) expired++;
    }
  }
  return { refunded, expired, syncHolds, upstreamToCancel };
}
