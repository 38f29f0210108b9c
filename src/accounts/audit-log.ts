/**
 * Reading the audit log (D45): an organization's log for its owners and admins, and the operator's over
 * every organization, newest first, with filters (action, actor, time), pages, and CSV. Nothing here
 * writes: entries are written by the changes themselves (audit.ts `recordAudit`) and never changed.
 */
import type { AdminAuditQueryString, AuditQueryString } from "../contracts/audit.ts";
import type { Executor } from "../billing/executor.ts";
import { parseTimeBound } from "../billing/usage-report.ts";
import { errors } from "../errors.ts";
import { type AuditEntryView, type AuditQuery, listAudit } from "./audit.ts";
import { type OrgCaller, roleIn } from "./orgs.ts";
import { requireRole } from "./roles.ts";

/** Most entries one CSV answer holds (`limit` may ask for fewer). */
export const MAX_CSV_ENTRIES = 10_000;
/** Most entries one JSON page holds. */
const MAX_PAGE = 100;

/** A page of the log as the API answers it (JSON), or its entries for a CSV. */
export interface AuditPage {
  object: "list";
  data: AuditEntryView[];
  has_more: boolean;
}

/**
 * The filters of a query string: `limit` 1-100 (default 20) for a JSON page, up to
 * {@link MAX_CSV_ENTRIES} (the default) for CSV; `from`/`to` ISO dates (UTC days) or instants.
 * @throws AppError 400 `invalid_request` (a bad time, `from` after `to`, a JSON limit over 100).
 */
function filtersOf(q: AuditQueryString, orgId: string | undefined): AuditQuery {
  const csv = q.format === "csv";
  const limit = q.limit === undefined ? (csv ? MAX_CSV_ENTRIES : 20) : Number(q.limit);
  if (!csv && limit > MAX_PAGE) throw errors.invalidRequest("limit must be an integer from 1 to 100 (10000 with format=csv).", "limit");
  const from = q.from === undefined ? null : parseTimeBound(q.from, "UTC", "from");
  const to = q.to === undefined ? null : parseTimeBound(q.to, "UTC", "to");
  if (from !== null && to !== null && from > to) throw errors.invalidRequest("from must not be after to.", "from");
  return {
    ...(orgId === undefined ? {} : { orgId }),
    action: q.action ?? null,
    actorId: q.actor_id ?? null,
    from,
    to,
    after: q.after ?? null,
    limit,
  };
}

/**
 * `GET /v1/orgs/{org_id}/audit-log` (D45): the organization's entries, newest first; owners and admins only.
 * @throws AppError 404 `org_not_found` (unknown, or the caller is not a member; a key reaches only its
 *   own), 403 `forbidden_role` (member, viewer), 400 `invalid_request` (a bad filter).
 */
export async function orgAuditLog(db: Executor, caller: OrgCaller, orgId: string, q: AuditQueryString): Promise<AuditPage> {
  requireRole(await roleIn(db, caller, orgId), "admin", "Reading the audit log");
  const page = await listAudit(db, filtersOf(q, orgId));
  return { object: "list", data: page.data, has_more: page.hasMore };
}

/**
 * The operator's `GET /v1/admin/audit-log` (D45): every organization's entries (and those without one),
 * or one organization's with `org_id`, newest first. @throws AppError 400 `invalid_request` (a bad filter).
 */
export async function operatorAuditLog(db: Executor, q: AdminAuditQueryString): Promise<AuditPage> {
  const page = await listAudit(db, filtersOf(q, q.org_id));
  return { object: "list", data: page.data, has_more: page.hasMore };
}

/** The columns of the CSV, in order (the header row). */
export const AUDIT_CSV_COLUMNS = [
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
  "changes",
] as const;

/** One CSV field: quoted when it holds a comma, a quote or a line break; a leading `=+-@` is neutralized (spreadsheet formulas). */
function csvField(v: string | null): string {
  if (v === null) return "";
  const s = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Entries as CSV text: a header row ({@link AUDIT_CSV_COLUMNS}), then one row per entry; `changes` is its JSON. */
export function auditCsv(entries: readonly AuditEntryView[]): string {
  const lines = [AUDIT_CSV_COLUMNS.join(",")];
  for (const e of entries) {
    lines.push(
      [
        e.id,
        e.at,
        e.org_id,
        e.actor.type,
        e.actor.id,
        e.actor.email ?? null,
        e.action,
        e.target.type,
        e.target.id,
        e.request_id,
        e.ip,
        e.user_agent,
        Object.keys(e.changes).length === 0 ? null : JSON.stringify(e.changes),
      ]
        .map(csvField)
        .join(","),
    );
  }
  return `${lines.join("\r\n")}\r\n`;
}
