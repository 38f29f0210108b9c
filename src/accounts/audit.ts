/**
 * The audit log (D45): who changed what through the API. Every change (keys, members, invites,
 * organizations, budgets, webhooks, alerts, top-ups, the operator's deposits, tiers and limits, sign-ins
 * and failed sign-ins) writes one entry with {@link recordAudit} in the transaction of the change, so a
 * change never commits without its entry, nor an entry without its change; a change that fails (a 4xx, a
 * rollback) leaves none. The log is append-only: nothing here or in any route updates or deletes an entry.
 *
 * An entry never holds a secret: values of fields named like a secret (`secret`, `token`, `password`,
 * `hash`, `api_key`, ...) and strings that look like one of the gateway's secrets (`gw_...` API keys,
 * `sess_...` session tokens, `whsec_...` webhook secrets) are stored as `[redacted]`, whatever the caller
 * passed ({@link redactSecrets}).
 */
import type { Executor } from "../billing/executor.ts";
import { newTimeOrderedId } from "../ids.ts";
import { type AuditFilters, auditPage, type AuditRow, insertAuditRow } from "./audit.repository.ts";

/** Who made a change: a session's user (with the email), an API key (its id), or the operator. */
export interface AuditActor {
  type: "user" | "key" | "operator";
  id: string;
  email?: string | null;
}

/** The request a change came with: its actor, its `X-Svc-Request-Id`, the client's address and user agent. */
export interface AuditContext {
  actor: AuditActor;
  requestId: string;
  ip: string | null;
  userAgent: string | null;
}

/**
 * One change to record: the organization it belongs to (null for an event without one, such as a failed
 * sign-in of an unknown email), the action (`<object>.<verb>`: `key.created`, `member.removed`, ...), what
 * it was done to, and for an update `{field: [before, after]}` of the fields that changed.
 */
export interface AuditChange {
  orgId: string | null;
  action: string;
  target: { type: string; id: string };
  changes?: Record<string, [unknown, unknown]>;
}

/** The request facts of an {@link AuditContext} without its actor, for services that name the actor themselves (sign-ins, top-ups). */
export type AuditRequest = Omit<AuditContext, "actor">;

/** What a redacted value is stored as. */
export const REDACTED = "[redacted]";

/** Parts of a field name (split at `_`, `-`, `.` and case changes) that make its value a secret. */
const SECRET_NAME_PARTS = new Set(["secret", "secrets", "token", "password", "passwd", "hash", "apikey", "whsec", "credential", "credentials"]);
/** A string that is, or carries, one of the gateway's secrets: an API key, a session token, a webhook secret. */
const SECRET_VALUE = /(^|[^A-Za-z0-9])(gw|sess|whsec)_[A-Za-z0-9+/=_-]/;

/** Whether a field called `name` holds a secret (`secret`, `key_secret`, `session_token`, `password_hash`, `api_key`, ...). */
export function isSecretField(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === "api_key" || lower === "apikey" || lower === "key_secret") return true;
  const parts = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  return parts.some((p) => SECRET_NAME_PARTS.has(p));
}

/**
 * `value` with every secret replaced by `[redacted]`: strings that look like a gateway secret (`gw_`,
 * `sess_`, `whsec_`), and the values of fields named like a secret ({@link isSecretField}), at any depth
 * of objects and arrays. Other values are kept as they are (JSON values; anything else becomes its JSON form).
 */
export function redactSecrets(value: unknown): unknown {
  if (typeof value === "string") return SECRET_VALUE.test(value) ? REDACTED : value;
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = isSecretField(k) ? REDACTED : redactSecrets(v);
    return out;
  }
  if (value === undefined) return null;
  return value;
}

/** A string that is safe to store as an identifier: a gateway secret becomes `[redacted]`. */
function safeText(value: string): string {
  return SECRET_VALUE.test(value) ? REDACTED : value;
}

/**
 * The `{field: [before, after]}` of the fields whose values differ between `before` and `after` (compared
 * as JSON); `fields` limits the comparison (default: every field of either). Secrets are redacted later,
 * by {@link recordAudit}.
 */
export function changesOf(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
  fields?: readonly string[],
): Record<string, [unknown, unknown]> {
  const b = before ?? {};
  const a = after ?? {};
  const names = fields ?? [...new Set([...Object.keys(b), ...Object.keys(a)])];
  const out: Record<string, [unknown, unknown]> = {};
  for (const f of names) {
    const x = b[f] === undefined ? null : b[f];
    const y = a[f] === undefined ? null : a[f];
    if (JSON.stringify(x) !== JSON.stringify(y)) out[f] = [x, y];
  }
  return out;
}

/**
 * Writes one audit entry (`aud_<random>`, now) for `change`, made by `ctx`, in `trx`: the transaction of
 * the change itself, so both commit or neither does. Secrets never reach the table: the values of
 * secret-named fields and any gateway secret in `changes`, the actor's email or the target id are
 * replaced by `[redacted]` ({@link redactSecrets}). An empty `changes` is stored as null.
 * @throws Error when `trx` is not a transaction (a programming error: the entry must commit with its change).
 */
export async function recordAudit(trx: Executor, ctx: AuditContext, change: AuditChange): Promise<void> {
  if (!trx.isTransaction) throw new Error(`recordAudit(${change.action}) must run in the transaction of the change it records`);
  const changes: Record<string, [unknown, unknown]> = {};
  for (const [field, pair] of Object.entries(change.changes ?? {})) {
    const [before, after] = Array.isArray(pair) ? pair : [null, pair];
    changes[field] = isSecretField(field) ? [REDACTED, REDACTED] : [redactSecrets(before), redactSecrets(after)];
  }
  const at = Date.now();
  await insertAuditRow(trx, {
    id: newTimeOrderedId("aud", at),
    at,
    orgId: change.orgId,
    actorType: ctx.actor.type,
    actorId: safeText(ctx.actor.id),
    actorEmail: ctx.actor.email == null ? null : safeText(ctx.actor.email.slice(0, 320)),
    action: change.action,
    targetType: change.target.type,
    targetId: safeText(change.target.id),
    requestId: ctx.requestId,
    ip: ctx.ip === null ? null : ctx.ip.slice(0, 100),
    userAgent: ctx.userAgent === null ? null : safeText(ctx.userAgent.slice(0, 512)),
    changesJson: Object.keys(changes).length === 0 ? null : JSON.stringify(changes),
  });
}

/** An entry as the API shows it (D45). */
export interface AuditEntryView {
  id: string;
  object: "audit.entry";
  /** ISO 8601. */
  at: string;
  org_id: string | null;
  actor: { type: AuditActor["type"]; id: string; email?: string };
  action: string;
  target: { type: string; id: string };
  request_id: string;
  ip: string | null;
  user_agent: string | null;
  /** `{field: [before, after]}`; `{}` when the action changed no field (a creation, a deletion). */
  changes: Record<string, [unknown, unknown]>;
}

/** The API view of a stored entry. */
export function auditEntryView(r: AuditRow): AuditEntryView {
  return {
    id: r.id,
    object: "audit.entry",
    at: new Date(r.at).toISOString(),
    org_id: r.orgId,
    actor: r.actorEmail === null ? { type: r.actorType, id: r.actorId } : { type: r.actorType, id: r.actorId, email: r.actorEmail },
    action: r.action,
    target: { type: r.targetType, id: r.targetId },
    request_id: r.requestId,
    ip: r.ip,
    user_agent: r.userAgent,
    changes: r.changesJson === null ? {} : (JSON.parse(r.changesJson) as Record<string, [unknown, unknown]>),
  };
}

/** Filters of a page of the log (see {@link AuditFilters}): `orgId` undefined reads every organization's (the operator). */
export type AuditQuery = AuditFilters;

/**
 * A page of the log matching `f`, newest first, with whether more follow (the next page: `after` = the
 * last id of this one).
 */
export async function listAudit(db: Executor, f: AuditQuery): Promise<{ data: AuditEntryView[]; hasMore: boolean }> {
  const rows = await auditPage(db, f);
  return { data: rows.slice(0, f.limit).map(auditEntryView), hasMore: rows.length > f.limit };
}
