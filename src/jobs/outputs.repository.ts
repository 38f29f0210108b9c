/**
 * The SQL of stored outputs (outputs.ts): the gallery's page of succeeded jobs, one job's output for its
 * share page, and the keyset narrowing that job listings share (jobs.repository.ts). Free functions
 * taking the Kysely handle or a transaction first.
 */
import type { SelectQueryBuilder } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import type { Database } from "../storage/schema.ts";

/** The columns of a gallery item (outputs.ts `toItem`). */
const OUTPUT_COLUMNS = ["id", "kind", "model", "output_json", "duration_sec", "cost_micros", "created_at", "request_json", "mode"] as const;

/** A succeeded job's output row, as read for the gallery and the share page. */
export interface OutputRow {
  id: string;
  kind: string;
  model: string;
  output_json: string | null;
  duration_sec: number | null;
  cost_micros: number | null;
  created_at: number;
  /** The validated request (JSON text): the item's prompt comes from it. */
  request_json: string;
  /** The mode of the key that made the job (D32). */
  mode: string;
}

/**
 * The keyset page after job `after` of `accountId` (newest first: `created_at desc, id desc`): `q`
 * narrowed to the jobs older than that one, or `q` as it is when `after` is null or not the account's job
 * (the listing then starts at the newest).
 */
export async function olderThanJob<O>(
  db: Executor,
  q: SelectQueryBuilder<Database, "jobs", O>,
  accountId: string,
  after: string | null,
): Promise<SelectQueryBuilder<Database, "jobs", O>> {
  if (after === null) return q;
  const anchor = await db.selectFrom("jobs").select(["created_at", "id"]).where("id", "=", after).where("account_id", "=", accountId).executeTakeFirst();
  if (!anchor) return q;
  const at = Number(anchor.created_at);
  return q.where((eb) => eb.or([eb("created_at", "<", at), eb.and([eb("created_at", "=", at), eb("id", "<", anchor.id)])]));
}

/** At most `limit` succeeded jobs with a stored output of `accountId`, newest first, older than job `after` (null: from the newest). */
export async function galleryRows(db: Executor, accountId: string, limit: number, after: string | null): Promise<OutputRow[]> {
  let q = db
    .selectFrom("jobs")
    .select([...OUTPUT_COLUMNS])
    .where("account_id", "=", accountId)
    .where("status", "=", "succeeded")
    .where("output_json", "is not", null)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(limit);
  q = await olderThanJob(db, q, accountId, after);
  return q.execute();
}

/** Job `jobId` when it succeeded with a stored output (any account), else undefined. */
export async function sharedOutputRow(db: Executor, jobId: string): Promise<OutputRow | undefined> {
  return db
    .selectFrom("jobs")
    .select([...OUTPUT_COLUMNS])
    .where("id", "=", jobId)
    .where("status", "=", "succeeded")
    .where("output_json", "is not", null)
    .executeTakeFirst();
}
