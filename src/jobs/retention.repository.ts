/**
 * The SQL of the retention sweep (D46, jobs/retention.ts) on jobs and on the audit log: pages of jobs whose
 * texts or outputs are past a window, the conditional updates that clear them, the lookups of the 410 of an
 * expired output, and the deletion of old audit entries. Every page reads one of migration 022's partial
 * indexes (the rows still to clear, by creation time, for every organization or for one) in `(created_at,
 * id)` order after a cursor, so a pass never reads a row it cleared, and every update is conditional on
 * the state it expects: several processes may sweep at once.
 */
import type { Kysely } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import type { Database, JobsTable } from "../storage/schema.ts";

/** The statuses after which a job's request is never read again to run it (the texts may go). */
const ENDED = ["succeeded", "failed", "refunded", "expired"] as const;

/** Where a page starts: after this job in `(created_at, id)` order; null for the first page. */
export type PageCursor = { createdAt: number; id: string } | null;

/** Which jobs a page takes: created before `before` (epoch ms), of `accountId` or (null) of every organization. */
export interface PageOf {
  before: number;
  accountId: string | null;
  after: PageCursor;
  limit: number;
}

/** A job whose texts are still stored. */
export type JobWithTexts = Pick<JobsTable, "id" | "kind" | "model" | "request_json"> & { dialect_json: string | null; created_at: number };

/**
 * Up to `p.limit` ended jobs created before `p.before` whose texts are still stored (`texts_cleared_at` null),
 * oldest first after `p.after`.
 */
export async function jobsWithTexts(db: Executor, p: PageOf): Promise<JobWithTexts[]> {
  let q = db
    .selectFrom("jobs")
    .select(["id", "kind", "model", "request_json", "dialect_json", "created_at"])
    .where("texts_cleared_at", "is", null)
    .where("created_at", "<", p.before)
    .where("status", "in", [...ENDED]);
  if (p.accountId !== null) q = q.where("account_id", "=", p.accountId);
  const after = p.after;
  if (after !== null) q = q.where((eb) => eb.or([eb("created_at", ">", after.createdAt), eb.and([eb("created_at", "=", after.createdAt), eb("id", ">", after.id)])]));
  const rows = await q.orderBy("created_at").orderBy("id").limit(p.limit).execute();
  return rows.map((r) => ({ ...r, created_at: Number(r.created_at) }));
}

/** Writes job `id`'s request and dialect data without their texts, if no one cleared them meanwhile; false when someone did. */
export async function clearJobTexts(db: Executor, id: string, v: { requestJson: string; dialectJson: string | null; now: number }): Promise<boolean> {
  const res = await db
    .updateTable("jobs")
    .set({ request_json: v.requestJson, dialect_json: v.dialectJson, texts_cleared_at: v.now })
    .where("id", "=", id)
    .where("texts_cleared_at", "is", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** A job whose generated files are still kept. */
export interface JobWithOutput {
  id: string;
  created_at: number;
  output_json: string;
}

/** Up to `p.limit` jobs created before `p.before` whose output is still kept, oldest first after `p.after`. */
export async function jobsWithOutputs(db: Executor, p: PageOf): Promise<JobWithOutput[]> {
  let q = db.selectFrom("jobs").select(["id", "created_at", "output_json"]).where("output_json", "is not", null).where("created_at", "<", p.before);
  if (p.accountId !== null) q = q.where("account_id", "=", p.accountId);
  const after = p.after;
  if (after !== null) q = q.where((eb) => eb.or([eb("created_at", ">", after.createdAt), eb.and([eb("created_at", "=", after.createdAt), eb("id", ">", after.id)])]));
  const rows = await q.orderBy("created_at").orderBy("id").limit(p.limit).execute();
  return rows.map((r) => ({ id: r.id, created_at: Number(r.created_at), output_json: r.output_json ?? "" }));
}

/**
 * Marks the outputs of `ids` expired at `now` (their files are deleted): `output_json` null, so no answer
 * names the files again, and `output_expired_at` set, so their URLs answer 410. One statement; returns how
 * many jobs it changed (a job whose output was deleted meanwhile is left as it is).
 */
export async function markOutputsExpired(db: Executor, ids: readonly string[], now: number): Promise<number> {
  if (ids.length === 0) return 0;
  const res = await db
    .updateTable("jobs")
    .set({ output_json: null, output_expired_at: now })
    .where("id", "in", [...ids])
    .where("output_json", "is not", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** When job `jobId`'s output expired (epoch ms), or null (it did not, or there is no such job). */
export async function outputExpiredAt(db: Executor, jobId: string): Promise<number | null> {
  const row = await db.selectFrom("jobs").select("output_expired_at").where("id", "=", jobId).executeTakeFirst();
  return row?.output_expired_at === null || row?.output_expired_at === undefined ? null : Number(row.output_expired_at);
}

/** The pending jobs written without their texts whose texts `holderId` holds, that no upstream accepted. */
export async function pendingJobsHeldBy(db: Executor, holderId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("jobs")
    .select("id")
    .where("texts_holder", "=", holderId)
    .where("status", "=", "pending")
    .where("upstream_handle_json", "is", null)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Deletes up to `limit` audit-log entries (`audit_log`, migration 021; `at` in epoch ms, index
 * `audit_log_at`) older than `before`, oldest first, in one statement; returns how many, or null when the
 * database has no `audit_log` table yet (nothing to delete). The table is written by accounts/audit.ts,
 * append-only; this is the only statement that deletes from it.
 */
export async function deleteAuditBefore(db: Kysely<Database>, before: number, limit: number): Promise<number | null> {
  try {
    const res = await db
      .deleteFrom("audit_log")
      .where("id", "in", (eb) => eb.selectFrom("audit_log").select("id").where("at", "<", before).orderBy("at").limit(limit))
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  } catch (err) {
    if (isMissingTable(err)) return null;
    throw err;
  }
}

/** Whether `err` says the table does not exist (SQLite's message, PostgreSQL's `42P01`). */
function isMissingTable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; message?: unknown };
  if (e.code === "42P01") return true;
  return typeof e.message === "string" && e.message.includes("no such table");
}
