/**
 * The SQL of running jobs (the runner, its sweep, and every end without a charge): the conditional
 * updates of a `processing` job by the worker that holds it, the success statement, the terminal
 * transition that releases a hold, and the sweep's reads. Free functions taking the Kysely handle or a
 * transaction first; each update is conditional on the status (and worker) it expects and says whether
 * it matched.
 */
import type { Kysely, Transaction, Updateable } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import { prepare } from "../storage/prepared.ts";
import type { Database, JobStatus, JobsTable } from "../storage/schema.ts";

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

/** What a job's success writes (see {@link markJobSucceeded}). Amounts in micro-USD, lengths in seconds. */
export interface JobSuccess {
  jobId: string;
  workerId: string;
  costMicros: number;
  /** The stored outputs (`jobs.output_json`). */
  outputJson: string;
  /** A video's delivered length; null keeps the row's. */
  durationSec: number | null;
  /** The layer that served the job; null keeps the row's. */
  fallbackLayer: number | null;
  /** What the job cost upstream and on which basis; null keeps the row's. */
  upstreamCostMicros: number | null;
  upstreamCostBasis: "reported" | "list_price" | null;
  /** Epoch ms. */
  now: number;
}

/** Marks job `s.jobId` `succeeded` while it is `processing` by `s.workerId`; false when it no longer was. */
export async function markJobSucceeded(trx: Executor, s: JobSuccess): Promise<boolean> {
  const res = await markSucceeded(
    trx,
    s.costMicros,
    s.outputJson,
    s.durationSec,
    s.fallbackLayer,
    s.upstreamCostMicros,
    s.upstreamCostBasis,
    s.now,
    s.jobId,
    s.workerId,
  );
  return Number(res.numAffectedRows ?? 0) === 1;
}

/** Columns a runner writes on a job it holds: its heartbeat, progress and upstream handle (D28, D30). */
export type RunningJobPatch = Pick<
  Updateable<JobsTable>,
  "heartbeat_at" | "updated_at" | "progress" | "upstream_source" | "upstream_handle_json" | "fallback_layer"
>;

/**
 * Writes `patch` on job `jobId` while it is `processing` by `workerId`; false when it no longer is (a
 * cancel or the sweep ended it, or another runner took it over): the caller drops its work.
 */
export async function updateRunningJob(db: Executor, jobId: string, workerId: string, patch: RunningJobPatch): Promise<boolean> {
  const res = await db
    .updateTable("jobs")
    .set(patch)
    .where("id", "=", jobId)
    .where("status", "=", "processing")
    .where("worker_id", "=", workerId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** The transition of {@link endJobRow}: a terminal status with its error, or `pending` (a hand-back). */
export interface JobEnd {
  id: string;
  from: JobStatus;
  to: "failed" | "refunded" | "expired" | "pending";
  code: string | null;
  message: string | null;
  /** Also requires that this worker holds the claim. */
  workerId?: string;
  /** Epoch ms. */
  now: number;
}

/**
 * Moves job `end.id` from `end.from` to `end.to` (a hand-back to `pending` clears its claim, heartbeat
 * and progress); returns its hold and owner, or null when the row was no longer in `from` (or not held
 * by `workerId`).
 */
export async function endJobRow(trx: Transaction<Database>, end: JobEnd): Promise<{ hold_id: string | null; account_id: string } | null> {
  let q = trx
    .updateTable("jobs")
    .set(
      end.to === "pending"
        ? { status: "pending", worker_id: null, started_at: null, heartbeat_at: null, progress: null, updated_at: end.now }
        : { status: end.to, error_code: end.code, error_message: end.message, updated_at: end.now },
    )
    .where("id", "=", end.id)
    .where("status", "=", end.from);
  if (end.workerId !== undefined) q = q.where("worker_id", "=", end.workerId);
  return (await q.returning(["hold_id", "account_id"]).executeTakeFirst()) ?? null;
}

/** At most `limit` `processing` jobs of `kind` whose last heartbeat is older than `staleBefore` (epoch ms). */
export async function staleRunningJobs(
  db: Kysely<Database>,
  kind: "image" | "video",
  staleBefore: number,
  limit: number,
): Promise<{ id: string; upstream_handle_json: string | null }[]> {
  return db
    .selectFrom("jobs")
    .select(["id", "upstream_handle_json"])
    .where("status", "=", "processing")
    .where("kind", "=", kind)
    .where("heartbeat_at", "<", staleBefore)
    .limit(limit)
    .execute();
}

/** At most `limit` `pending` jobs of `kind` created before `createdBefore` (epoch ms). */
export async function overduePendingJobs(db: Kysely<Database>, kind: "image" | "video", createdBefore: number, limit: number): Promise<{ id: string }[]> {
  return db
    .selectFrom("jobs")
    .select("id")
    .where("status", "=", "pending")
    .where("kind", "=", kind)
    .where("created_at", "<", createdBefore)
    .limit(limit)
    .execute();
}

/** The facts of job `jobId` its usage record's end is computed from (job-usage.ts), or undefined. */
export async function endedJobFacts(trx: Executor, jobId: string) {
  return trx
    .selectFrom("jobs")
    .select(["kind", "cost_micros", "fallback_layer", "duration_sec", "request_json"])
    .where("id", "=", jobId)
    .executeTakeFirst();
}
