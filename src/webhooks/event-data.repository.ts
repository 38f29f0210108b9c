/**
 * The SQL of the rendered data of job events (D31 `webhook_events.data_json`) as the retention sweep reads
 * and rewrites it (D46: a job's texts are cleared from its events with the job). Free functions taking the
 * database or a transaction first.
 */
import type { Executor } from "../billing/ledger.ts";

/** The events of `jobIds` whose data was rendered (index `webhook_events_job`). */
export async function renderedEventsOfJobs(db: Executor, jobIds: readonly string[]): Promise<{ id: string; type: string; dataJson: string }[]> {
  if (jobIds.length === 0) return [];
  const rows = await db
    .selectFrom("webhook_events")
    .select(["id", "type", "data_json"])
    .where("job_id", "in", [...jobIds])
    .where("data_json", "is not", null)
    .execute();
  return rows.map((r) => ({ id: r.id, type: r.type, dataJson: r.data_json ?? "" }));
}

/** Replaces event `id`'s rendered data with `dataJson`. */
export async function replaceEventData(db: Executor, id: string, dataJson: string): Promise<void> {
  await db.updateTable("webhook_events").set({ data_json: dataJson }).where("id", "=", id).execute();
}
