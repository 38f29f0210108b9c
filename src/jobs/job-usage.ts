/**
 * The usage record of a job (D29): created `pending` with the job's hold at submit (jobs.ts), finished
 * here in the transaction of the job's terminal transition (ended.ts), after the job row and its ledger
 * entries were written: the terminal status, what the ledger charged (0 unless succeeded), the fallback
 * layer that served it and, for a video, the seconds billed (requested, or fewer when the source
 * delivered less, D26).
 */
import type { Transaction } from "kysely";
import { finishJobUsage, type Units } from "../billing/usage.ts";
import type { Database, JobStatus } from "../storage/schema.ts";

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
  const succeeded = job.status === "succeeded";
  let units: Units | undefined;
  if (succeeded && row.kind === "video" && row.duration_sec !== null) {
    const requested = (JSON.parse(row.request_json) as { durationSec?: number }).durationSec;
    const delivered = Math.max(1, Math.round(Number(row.duration_sec)));
    units = { seconds: requested === undefined ? delivered : Math.min(requested, delivered) };
  }
  await finishJobUsage(trx, job.id, {
    status: job.status,
    costMicros: succeeded ? Number(row.cost_micros ?? 0) : 0,
    fallbackLayer: Number(row.fallback_layer),
    ...(units ? { units } : {}),
  });
}
