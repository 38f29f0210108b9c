/**
 * Deleting a finished job's stored output by its owner (D37: `DELETE /v1/videos/{id}` of a video that has
 * ended). The job row stays (its ledger entries and usage record keep referring to it); its `output_json`
 * is cleared first, so no answer shows a URL whose file is gone, then the files are removed. The gallery and
 * share pages list only jobs with an output, so the job leaves them too. A running job is cancelled instead
 * (cancel.ts), never deleted.
 */
import type { Executor } from "../billing/ledger.ts";
import { AppError } from "../errors.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { clearJobOutput, jobOutputOf } from "./jobs.repository.ts";
import { jobNotFound, type JobOutput } from "./outputs.ts";
import { TERMINAL_STATUSES } from "./view.ts";

/** What {@link deleteJobOutput} needs. */
export interface DeleteOutputDeps {
  db: Executor;
  blobs: BlobStore;
  log: { warn(obj: object, msg?: string): void };
}

/**
 * Deletes the stored output of job `jobId` of `accountId` (nothing to delete for a job that failed, or
 * whose output was deleted before: answered the same, so a retried delete succeeds). A file that cannot be
 * removed is logged, not answered: the job no longer names it.
 * @throws AppError 404 `job_not_found` (unknown or another account's job), 409 `job_not_finished` for a job
 *   that is `pending` or `processing`.
 */
export async function deleteJobOutput(deps: DeleteOutputDeps, accountId: string, jobId: string): Promise<void> {
  const row = await jobOutputOf(deps.db, jobId, accountId);
  if (!row) throw jobNotFound();
  if (!TERMINAL_STATUSES.has(row.status)) throw new AppError(409, "job_not_finished", "The job is still running: cancel it instead.", "id");
  if (row.output_json === null) return;
  // Conditional on the output read: two deletes racing clear it once, and each removes the same files.
  await clearJobOutput(deps.db, jobId, row.output_json);
  const out = JSON.parse(row.output_json) as JobOutput;
  const keys = out.keys?.length ? out.keys : [out.key];
  for (const key of keys) {
    await deps.blobs.delete(key).catch((err: unknown) => deps.log.warn({ jobId, key, err: String(err) }, "a deleted job's output file could not be removed"));
  }
}
