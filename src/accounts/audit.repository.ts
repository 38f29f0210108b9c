/**
 * SQL of the `audit_log` table (D45; storage/migrations/021_audit_log.ts): the insert made in the
 * transaction of each audited change, and the pages of the organization's and the operator's views. No
 * function here updates or deletes an entry: the log is append-only (a retention sweep is the
 * only thing that removes old entries).
 */
import type { Executor } from "../billing/executor.ts";
import type { AuditActorType } from "../storage/schema.ts";

/** An entry as stored (times in epoch ms, `changes` as JSON text). */
export interface AuditRow {
  id: string;
  at: number;
  orgId: string | null;
  actorType: AuditActorType;
  actorId: string;
  actorEmail: string | null;
  action: string;
  targetType: string;
  targetId: string;
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  changesJson: string | null;
}

/** Writes one entry; `db` is the transaction of the change it records. */
export async function insertAuditRow(db: Executor, row: AuditRow): Promise<void> {
  await db
    .insertInto("audit_log")
    .values({
      id: row.id,
      at: row.at,
      org_id: row.orgId,
      actor_type: row.actorType,
      actor_id: row.actorId,
      actor_email: row.actorEmail,
      action: row.action,
      target_type: row.targetType,
      target_id: row.targetId,
      request_id: row.requestId,
      ip: row.ip,
      user_agent: row.userAgent,
      changes_json: row.changesJson,
    })
    .execute();
}

/** Filters of a page of the log; times in epoch ms (`to` exclusive); null = no filter. */
export interface AuditFilters {
  /** One organization's entries (its view), or undefined for every entry (the operator's view). */
  orgId?: string;
  action: string | null;
  actorId: string | null;
  from: number | null;
  to: number | null;
  /** The id of the last entry of the previous page; one that names no entry in scope is ignored (the first page). */
  after: string | null;
  limit: number;
}

const COLUMNS = [
  "id",
  "at",
  "org_id",
  "actor_type",
  "actor_id",
  "actor_email",
  "action",
  "target_type",
  "target_id",
  "request_id",
  "ip",
  "user_agent",
  "changes_json",
] as const;

/**
 * Up to `f.limit + 1` entries matching `f`, newest first (by time, then id); the extra one tells the
 * caller more follow.
 */
export async function auditPage(db: Executor, f: AuditFilters): Promise<AuditRow[]> {
  let q = db.selectFrom("audit_log").select([...COLUMNS]).orderBy("at", "desc").orderBy("id", "desc").limit(f.limit + 1);
  if (f.orgId !== undefined) q = q.where("org_id", "=", f.orgId);
  if (f.action !== null) q = q.where("action", "=", f.action);
  if (f.actorId !== null) q = q.where("actor_id", "=", f.actorId);
  if (f.from !== null) q = q.where("at", ">=", f.from);
  if (f.to !== null) q = q.where("at", "<", f.to);
  if (f.after !== null) {
    let a = db.selectFrom("audit_log").select(["at", "id"]).where("id", "=", f.after);
    if (f.orgId !== undefined) a = a.where("org_id", "=", f.orgId);
    const anchor = await a.executeTakeFirst();
    if (anchor) {
      const at = Number(anchor.at);
      q = q.where((eb) => eb(eb.refTuple("at", "id"), "<", eb.tuple(at, anchor.id)));
    }
  }
  const rows = await q.execute();
  return rows.map((r) => ({
    id: r.id,
    at: Number(r.at),
    orgId: r.org_id,
    actorType: r.actor_type,
    actorId: r.actor_id,
    actorEmail: r.actor_email,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    requestId: r.request_id,
    ip: r.ip,
    userAgent: r.user_agent,
    changesJson: r.changes_json,
  }));
}
