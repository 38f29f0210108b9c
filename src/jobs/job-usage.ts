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
import { endedJobFacts } from "./execution.repository.ts";
import { decodeJobRequest, requestedSeconds } from "./request.ts";

/** The job row's facts a usage record's end is computed from, as the terminal transition left them. */
export interface EndedJobFacts {
  status: Exclude<JobStatus, "pending" | "processing">;
  kind: "image" | "video" | "audio";
  fallbackLayer: number;
  /** The row's `duration_sec`: a video's delivered length when the source said, else the requested one. */
  durationSec: number | null;
  /** A video's requested seconds (its stored request's `durationSec`, request.ts), else null. */
  requestedSec: number | null;
}

/**
 * What the terminal transition writes on the job's usage record, but the cost (the ledger's charge, set
 * by whoever charges): the status, the fallback layer and, for a succeeded video, the seconds billed.
 */
export function jobUsageEnd(job: EndedJobFacts): Omit<UsageEnd, "costMicros"> {
  let units: Units | undefined;
  if (job.status === "succeeded" && job.kind === "video" && job.durationSec !== null) {
    const requested = job.requestedSec;
    const delivered = Math.max(1, Math.round(Number(job.durationSec)));
    units = { seconds: requested === null ? delivered : Math.min(requested, delivered) };
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
  const row = await endedJobFacts(trx, job.id);
  if (!row) return;
  // Only a succeeded video's record needs its request (the seconds asked for); audio jobs store another shape.
  const requestedSec = job.status === "succeeded" && row.kind === "video" ? requestedSeconds(decodeJobRequest(row.request_json)) : null;
  const end = jobUsageEnd({
    status: job.status,
    kind: row.kind,
    fallbackLayer: Number(row.fallback_layer),
    durationSec: row.duration_sec === null ? null : Number(row.duration_sec),
    requestedSec,
  });
  await finishJobUsage(trx, job.id, { ...end, costMicros: job.status === "succeeded" ? Number(row.cost_micros ?? 0) : 0 });
}
