/**
 * The usage record of a job (D29): created `pending` with the job's hold at submit (jobs.ts), finished
 * in the transaction of the job's terminal transition (ended.ts), from the job row as the transition
 * left it: the terminal status, what the ledger charged (0 unless succeeded), the fallback
 * layer that served it and, for a video, the seconds billed (requested, or fewer when the source
 * delivered less, D26).
 */
import type { Transaction } from "kysely";
import { finishJobUsage, type Units, type UsageEnd } from "../billing/usage.ts";
import type { Database, JobStatus } from "../storage/schema.ts";

/** The job row's facts a usage record's end is computed from, as the terminal transition left them. */
export interface EndedJobFacts {
  status: Exclude<JobStatus, "pending" | "processing">;
  kind: "image" | "video" | "audio";
  fallbackLayer: number;
  /** The row's `duration_sec`: a video's delivered length when the source said, else the requested one. */
  durationSec: number | null;
  /** The row's `request_json` (a video's requested `durationSec`). */
  requestJson: string;
}

/**
 * What the terminal transition writes on the job's usage record, but the cost (the ledger's charge, set
 * by whoever charges): the status, the fallback layer and, for a succeeded video, the seconds billed.
 */
export function jobUsageEnd(job: EndedJobFacts): Omit<UsageEnd, "costMicros"> {
  let units: Units | undefined;
  if (job.status === "succeeded" && job.kind === "video" && job.durationSec !== null) {
    const requested = (JSON.parse(job.requestJson) as { durationSec?: number }).durationSec;
    const delivered = Math.max(1, Math.round(Number(job.durationSec)));
    units = { seconds: requested === undefined ? delivered : Math.min(requested, delivered) };
  }
  return { status: job.status, fallbackLayer: job.fallbackLayer, ...(units ? { units } : {}) };
}

/**
 * Finishes the usage record of job `job.id` as `job.status`. Jobs without a record (submitted before the
 * usage log existed) are left alone.
 */
export async function finishEndedJobUsage(
  trx: Transaction<Database>,
  job: { id: string; status: Exclude<JobStatus, "pending" | "processing"> },
): Promise<void> {
  const row = await trx
    .selectFrom("jobs")
    .select(["kind", "cost_micros", "fallback_layer", "duration_sec", "request_json"])
    .where("id", "=", job.id)
    .executeTakeFirst();
  if (!row) return;
  const end = jobUsageEnd({
    status: job.status,
    kind: row.kind,
    fallbackLayer: Number(row.fallback_layer),
    durationSec: row.duration_sec === null ? null : Number(row.duration_sec),
    requestJson: row.request_json,
  });
  await finishJobUsage(trx, job.id, { ...end, costMicros: job.status === "succeeded" ? Number(row.cost_micros ?? 0) : 0 });
}
