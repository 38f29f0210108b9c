/**
 * Retention windows of organizations (D46). The operator sets four windows (config.ts `RetentionWindows`);
 * an organization's owner may shorten the first two for the organization (`PATCH /v1/orgs/{org_id}
 * {"retention": {"prompts_days", "outputs_days"}}`), from 0 up to the operator's, or give them back to the
 * operator (null). What applies to an organization is the smaller of its own and the operator's (the
 * operator may shorten theirs after an organization chose). A prompts window of 0 is zero retention: the
 * organization's request texts are never written (jobs/submit.ts, audio/generate.ts) rather than removed
 * later. The sweep that applies the windows is jobs/retention.ts.
 */
import type { RetentionWindows } from "../config.ts";
import { type Executor, inTransaction } from "../billing/ledger.ts";
import { errors } from "../errors.ts";
import type { Role } from "../storage/schema.ts";
import type { OrgPatchBody } from "../contracts/orgs.ts";
import { getOrg, type OrgCaller, orgName, type OrgView, renameOrg, roleIn } from "./orgs.ts";
import { orgById, updateOrgName } from "./orgs.repository.ts";
import { requireRole } from "./roles.ts";
import { type AuditContext, changesOf, recordAudit } from "./audit.ts";
import { ownPromptsDays, ownWindowsOf, updateOwnWindows } from "./retention.repository.ts";

/** The windows that apply to an organization, days, as `GET /v1/orgs/{org_id}` shows them. */
export interface RetentionView {
  /** Request texts are removed after this many days; 0: never written. */
  prompts_days: number;
  /** Generated files are deleted after this many days. */
  outputs_days: number;
  /** Usage records are deleted after this many days (the operator's). */
  usage_days: number;
  /** Audit-log entries are deleted after this many days (the operator's). */
  audit_days: number;
}

/** A change of an organization's own windows: a number of days, null (the operator's), or absent (unchanged). */
export interface RetentionChange {
  prompts_days?: number | null;
  outputs_days?: number | null;
}

/** The window that applies: the organization's own (`own`, days) when it has one, never longer than the operator's. */
export function effectiveDays(own: number | null, operatorDays: number): number {
  return own === null ? operatorDays : Math.min(own, operatorDays);
}

/** The view of the windows of each of `orgIds` that exists, by id. One read. */
export async function retentionViews(db: Executor, operator: RetentionWindows, orgIds: readonly string[]): Promise<Map<string, RetentionView>> {
  const rows = await ownWindowsOf(db, [...new Set(orgIds)]);
  return new Map(
    rows.map((r) => [
      r.id,
      {
        prompts_days: effectiveDays(r.promptsDays, operator.promptsDays),
        outputs_days: effectiveDays(r.outputsDays, operator.outputsDays),
        usage_days: operator.usageDays,
        audit_days: operator.auditDays,
      },
    ]),
  );
}

/**
 * `views` (organizations as the API shows them) each with its `retention`. One read whatever their number.
 * An organization that has gone meanwhile shows the operator's windows.
 */
export async function withRetention<V extends { id: string }>(db: Executor, operator: RetentionWindows, views: V[]): Promise<(V & { retention: RetentionView })[]> {
  const byId = await retentionViews(db, operator, views.map((v) => v.id));
  const fallback: RetentionView = { prompts_days: operator.promptsDays, outputs_days: operator.outputsDays, usage_days: operator.usageDays, audit_days: operator.auditDays };
  return views.map((v) => ({ ...v, retention: byId.get(v.id) ?? fallback }));
}

/**
 * Whether the request texts of `orgId`'s calls may be written (its prompts window, or the operator's, is
 * more than 0 days). False: zero retention, the texts must not reach the database at all. An unknown
 * organization follows the operator's window. One primary-key read (none when the operator's window is 0).
 */
export async function promptsKept(db: Executor, operator: RetentionWindows, orgId: string): Promise<boolean> {
  if (operator.promptsDays === 0) return false;
  const own = await ownPromptsDays(db, orgId);
  return effectiveDays(own ?? null, operator.promptsDays) > 0;
}

/**
 * Checks a change of the windows by a caller of `role`: only an owner changes them; each value is null (the
 * operator's window again) or a whole number of days from 0 up to the operator's window.
 * @returns the change to write (absent fields unchanged).
 * @throws AppError 403 `forbidden_role` (not an owner: API keys act as admin at most), 400 `invalid_request`
 *   (a value that is not a whole number from 0 to the operator's window; `param` names it).
 */
export function checkRetentionChange(role: Role, change: RetentionChange, operator: RetentionWindows): { promptsDays?: number | null; outputsDays?: number | null } {
  requireRole(role, "owner", "Changing the organization's retention windows");
  const days = (value: number | null | undefined, max: number, field: "prompts_days" | "outputs_days"): number | null | undefined => {
    if (value === undefined || value === null) return value;
    if (!Number.isInteger(value) || value < 0 || value > max) {
      throw errors.invalidRequest(`retention.${field} must be a whole number of days from 0 to ${max} (the operator's window), or null for the operator's.`, `retention.${field}`);
    }
    return value;
  };
  const promptsDays = days(change.prompts_days, operator.promptsDays, "prompts_days");
  const outputsDays = days(change.outputs_days, operator.outputsDays, "outputs_days");
  return { ...(promptsDays !== undefined ? { promptsDays } : {}), ...(outputsDays !== undefined ? { outputsDays } : {}) };
}

/**
 * Writes a change checked by {@link checkRetentionChange} on `orgId` in `trx` and returns its audit changes:
 * `{"retention.prompts_days"|"retention.outputs_days": [before, after]}` of the organization's own values
 * (null: the operator's), only those that changed. Takes effect for the next call of every process: the
 * window is read where texts are written, not cached.
 */
export async function applyRetentionChange(
  trx: Executor,
  orgId: string,
  change: { promptsDays?: number | null; outputsDays?: number | null },
): Promise<Record<string, [unknown, unknown]>> {
  const before = (await ownWindowsOf(trx, [orgId]))[0];
  await updateOwnWindows(trx, orgId, change);
  if (before === undefined) return {};
  const was = { "retention.prompts_days": before.promptsDays, "retention.outputs_days": before.outputsDays };
  const now = {
    "retention.prompts_days": change.promptsDays !== undefined ? change.promptsDays : before.promptsDays,
    "retention.outputs_days": change.outputsDays !== undefined ? change.outputsDays : before.outputsDays,
  };
  return changesOf(was, now);
}

/**
 * `PATCH /v1/orgs/{org_id}`: a new `name` (admins and owners) and the organization's own retention windows
 * (owners). A rename alone is orgs.ts `renameOrg`. With `retention`, every check runs first (the role, the
 * name, each window), then the name and the windows are written in one transaction with one audit entry
 * (D45) `org.updated` holding every field that changed, so a refused part changes nothing.
 * @returns the organization with its windows.
 * @throws AppError 404 `org_not_found`, 403 `forbidden_role`, 400 `invalid_request` (name, a window).
 */
export async function updateOrg(
  db: Executor,
  operator: RetentionWindows,
  caller: OrgCaller,
  orgId: string,
  body: OrgPatchBody,
  audit: AuditContext,
): Promise<OrgView & { retention: RetentionView }> {
  if (body.retention === undefined) {
    if (body.name === undefined) throw errors.invalidRequest("Send name, retention or both.");
    return (await withRetention(db, operator, [await renameOrg(db, caller, orgId, { name: body.name }, audit)]))[0];
  }
  const role = await roleIn(db, caller, orgId);
  const change = checkRetentionChange(role, body.retention, operator);
  let name: string | undefined;
  if (body.name !== undefined) {
    requireRole(role, "admin", "Renaming the organization");
    name = orgName(body.name);
  }
  await inTransaction(db, async (trx) => {
    const before = await orgById(trx, orgId);
    if (!before) throw errors.orgNotFound("org_id");
    const changes: Record<string, [unknown, unknown]> = {};
    if (name !== undefined && name !== before.name) {
      await updateOrgName(trx, orgId, name);
      changes.name = [before.name, name];
    }
    Object.assign(changes, await applyRetentionChange(trx, orgId, change));
    await recordAudit(trx, audit, { orgId, action: "org.updated", target: { type: "org", id: orgId }, changes });
  });
  return (await withRetention(db, operator, [await getOrg(db, caller, orgId)]))[0];
}
