/**
 * Budgets of an organization (D44): `GET|POST /v1/budgets`, `GET|PATCH|DELETE /v1/budgets/{budget_id}`
 * and the operator's `GET|POST /v1/admin/orgs/{org_id}/budgets`.
 *
 * A budget caps (`block`) or watches (`alert`) what the organization, one member or one key holds and is
 * charged in a calendar window of its time zone. The counting itself is billing/budgets.ts's, in every
 * hold's transaction; this module validates, stores and renders budgets, restarts a counter when its window
 * changes, and writes each change with its audit entry (D45) in one transaction.
 *
 * A key's spend limit (D34, set on the key) is one kind of budget: it is listed here as a key budget of
 * action `block` in UTC, with the id `bud_<key id>`, and changing or deleting it here changes the key's
 * limit (the key's own routes and this view always agree). It keeps its counter on the key
 * (billing/key-spend.ts) and its refusal code `key_spend_limit`, and announces no thresholds.
 *
 * A new budget, or one whose period or time zone changed, applies at once in this process and within
 * `AUTH_CACHE_MS` in others (the principal says whether an organization has budgets, as it carries a key's
 * limit).
 */
import { type AuditContext, changesOf, recordAudit } from "./audit.ts";
import type { AccountAuthChanges } from "./auth-cache.ts";
import { inTransaction, type Executor } from "../billing/ledger.ts";
import { budgetRoom, counterNow, restartBudgetCounter } from "../billing/budgets.ts";
import { budgetWindow, canonicalTimeZone, isoInZone } from "../billing/budget-windows.ts";
import type { CallContext } from "../billing/usage.ts";
import type { CreateBudgetBody, PatchBudgetBody } from "../contracts/budgets.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import { type Micros, microsToUsd, usdToMicros } from "../money.ts";
import type { BudgetAction, BudgetPeriod, BudgetScopeType, SpendPeriod } from "../storage/schema.ts";
import { type BudgetRow, budgetCountOf, budgetRowOf, budgetRowsOf, deleteBudgetRow, insertBudget, refreshHasBudgets, updateBudgetRow } from "./budgets.repository.ts";
import { type KeyCaller, listKeys, patchKey } from "./keys.ts";
import { keyRowOf } from "./keys.repository.ts";
import { spentOfKeys } from "./key-controls.ts";
import { roleOf } from "./orgs.repository.ts";

/** A budget as the API shows it; USD amounts, ISO times. */
export interface BudgetView {
  id: string;
  object: "budget";
  scope: { type: BudgetScopeType; id: string };
  amount_usd: number;
  period: BudgetPeriod;
  timezone: string;
  action: BudgetAction;
  thresholds: number[];
  /** Open holds plus captured charges of live calls in the current window. */
  spent_usd: number;
  /** `amount_usd - spent_usd`, never below 0. */
  remaining_usd: number;
  /** The current window's start in the budget's time zone (ISO 8601 with offset); the Unix epoch for `total`. */
  window_start: string;
  /** Its end (the next window's start), or null for `total`. */
  window_end: string | null;
  /** `budget` for a budget of this API; `key_spend_limit` for a key's spend limit (D34) shown as a budget. */
  source: "budget" | "key_spend_limit";
  created_at: string;
}

/** Most budgets one organization may have (key spend limits not counted). */
export const MAX_BUDGETS_PER_ORG = 100;
/** The largest budget accepted, micro-USD (one million USD, as a deposit). */
const MAX_AMOUNT_MICROS = 1_000_000 * 1_000_000;
const DEFAULT_THRESHOLDS = [50, 80, 100];
/** The id prefix of a key's spend limit shown as a budget: `bud_` + the key id. */
const KEY_LIMIT_PREFIX = "bud_key_";

function view(r: BudgetRow, nowMs: number): BudgetView {
  const amount = Number(r.amount_micros);
  const c = counterNow({ period: r.period, timezone: r.timezone, spentMicros: Number(r.spent_micros), windowStart: Number(r.window_start) }, nowMs);
  const w = budgetWindow(r.period, r.timezone, nowMs);
  return {
    id: r.id,
    object: "budget",
    scope: { type: r.scope_type, id: r.scope_id },
    amount_usd: microsToUsd(amount),
    period: r.period,
    timezone: r.timezone,
    action: r.action,
    thresholds: JSON.parse(r.thresholds_json) as number[],
    spent_usd: microsToUsd(c.spentMicros),
    remaining_usd: microsToUsd(Math.max(0, amount - c.spentMicros)),
    window_start: isoInZone(w.start, r.timezone),
    window_end: w.end === null ? null : isoInZone(w.end, r.timezone),
    source: "budget",
    created_at: new Date(Number(r.created_at)).toISOString(),
  };
}

/** The budget view of a key's spend limit (D34): UTC windows of the limit's period, its counter's spend. */
function keyLimitView(k: { key_id: string; spend_limit_usd: number; spend_limit_period: SpendPeriod; spent_usd: number; created_at: string }, nowMs: number): BudgetView {
  const w = budgetWindow(k.spend_limit_period, "UTC", nowMs);
  const limit = usdToMicros(k.spend_limit_usd) ?? 0;
  const spent = usdToMicros(k.spent_usd) ?? 0;
  return {
    id: `bud_${k.key_id}`,
    object: "budget",
    scope: { type: "key", id: k.key_id },
    amount_usd: k.spend_limit_usd,
    period: k.spend_limit_period,
    timezone: "UTC",
    action: "block",
    thresholds: [],
    spent_usd: k.spent_usd,
    remaining_usd: microsToUsd(Math.max(0, limit - spent)),
    window_start: isoInZone(w.start, "UTC"),
    window_end: w.end === null ? null : isoInZone(w.end, "UTC"),
    source: "key_spend_limit",
    created_at: k.created_at,
  };
}

async function keyLimitViews(db: Executor, accountId: string, nowMs: number): Promise<BudgetView[]> {
  const keys = await listKeys(db, accountId);
  const out: BudgetView[] = [];
  for (const k of keys) {
    if (k.spend_limit_usd === null || k.mode !== "live") continue;
    out.push(keyLimitView({ ...k, spend_limit_usd: k.spend_limit_usd }, nowMs));
  }
  return out;
}

/** `GET /v1/budgets`: the organization's budgets and its keys' spend limits, oldest first. */
export async function listBudgets(db: Executor, accountId: string, nowMs = Date.now()): Promise<{ object: "list"; data: BudgetView[] }> {
  const rows = (await budgetRowsOf(db, accountId)).map((r) => view(r, nowMs));
  const keys = await keyLimitViews(db, accountId, nowMs);
  const data = [...rows, ...keys].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
  return { object: "list", data };
}

/**
 * `GET /v1/budgets/{budget_id}`.
 * @throws AppError 404 `budget_not_found` when the organization has no such budget.
 */
export async function getBudget(db: Executor, accountId: string, budgetId: string, nowMs = Date.now()): Promise<BudgetView> {
  if (budgetId.startsWith(KEY_LIMIT_PREFIX)) {
    const found = (await keyLimitViews(db, accountId, nowMs)).find((b) => b.id === budgetId);
    if (!found) throw errors.budgetNotFound();
    return found;
  }
  const row = await budgetRowOf(db, accountId, budgetId);
  if (!row) throw errors.budgetNotFound();
  return view(row, nowMs);
}

/** Parsed fields of a body; absent fields stay absent (PATCH leaves them). */
interface BudgetFields {
  amountMicros?: Micros;
  period?: BudgetPeriod;
  timezone?: string;
  action?: BudgetAction;
  thresholds?: number[];
}

/**
 * The checks types cannot make: an amount above 0 in whole micro-USD up to one million USD, a time zone the
 * runtime knows (stored under its canonical name), thresholds without repeats (stored ascending).
 * @throws AppError 400 `invalid_request` naming the field.
 */
function parseFields(body: PatchBudgetBody): BudgetFields {
  const out: BudgetFields = {};
  if (body.amount_usd !== undefined) {
    const micros = usdToMicros(body.amount_usd);
    if (micros === null || micros <= 0 || micros > MAX_AMOUNT_MICROS) {
      throw errors.invalidRequest("amount_usd must be a number of USD above 0 and at most 1000000, with at most 6 decimals.", "amount_usd");
    }
    out.amountMicros = micros;
  }
  if (body.period !== undefined) out.period = body.period;
  if (body.timezone !== undefined) {
    const tz = canonicalTimeZone(body.timezone);
    if (tz === null) throw errors.invalidRequest(`timezone must be an IANA time zone name such as Europe/Paris; ${JSON.stringify(body.timezone.slice(0, 64))} is not one.`, "timezone");
    out.timezone = tz;
  }
  if (body.action !== undefined) out.action = body.action;
  if (body.thresholds !== undefined) out.thresholds = [...new Set(body.thresholds)].sort((a, b) => a - b);
  return out;
}

/**
 * Checks that the scope names this organization, one of its members or one of its keys.
 * @throws AppError 400 `invalid_request` (param `scope.id`) otherwise.
 */
async function checkScope(db: Executor, accountId: string, scope: { type: BudgetScopeType; id: string }): Promise<void> {
  const ok =
    scope.type === "org" ? scope.id === accountId : scope.type === "member" ? (await roleOf(db, accountId, scope.id)) !== null : (await keyRowOf(db, accountId, scope.id)) !== null;
  if (!ok) {
    const what = scope.type === "org" ? "this organization's id" : scope.type === "member" ? "the user id of a member of this organization" : "the id of one of this organization's API keys";
    throw errors.invalidRequest(`scope.id must be ${what}.`, "scope.id");
  }
}

/** The fields an audit entry records of a budget. */
function auditFields(r: { amount_micros: number; period: string; timezone: string; action: string; thresholds_json: string }): Record<string, unknown> {
  return { amount_usd: microsToUsd(Number(r.amount_micros)), period: r.period, timezone: r.timezone, action: r.action, thresholds: JSON.parse(r.thresholds_json) as number[] };
}

/**
 * `POST /v1/budgets` (and the operator's `POST /v1/admin/orgs/{org_id}/budgets`): a new budget whose
 * counter starts with what its scope's live calls already hold or were charged in the current window.
 * Written with its `budget.created` audit entry (D45) in one transaction.
 * @throws AppError 400 `invalid_request` (a bad field, a scope outside the organization, more than
 *   {@link MAX_BUDGETS_PER_ORG} budgets).
 */
export async function createBudget(
  db: Executor,
  auth: AccountAuthChanges,
  audit: AuditContext,
  accountId: string,
  body: CreateBudgetBody,
  nowMs = Date.now(),
): Promise<BudgetView> {
  const f = parseFields(body);
  await checkScope(db, accountId, body.scope);
  const id = newId("bud");
  const row = await inTransaction(db, async (trx) => {
    if ((await budgetCountOf(trx, accountId)) >= MAX_BUDGETS_PER_ORG) {
      throw errors.invalidRequest(`An organization may have at most ${MAX_BUDGETS_PER_ORG} budgets.`, null);
    }
    const values = {
      id,
      account_id: accountId,
      scope_type: body.scope.type,
      scope_id: body.scope.id,
      amount_micros: f.amountMicros ?? 0,
      period: f.period ?? "month",
      timezone: f.timezone ?? "UTC",
      action: f.action ?? "block",
      thresholds_json: JSON.stringify(f.thresholds ?? DEFAULT_THRESHOLDS),
      created_at: nowMs,
      updated_at: nowMs,
    };
    await insertBudget(trx, values);
    await restartBudgetCounter(trx, { id, accountId, scopeType: values.scope_type, scopeId: values.scope_id, period: values.period, timezone: values.timezone }, nowMs);
    await trx.updateTable("accounts").set({ has_budgets: 1 }).where("id", "=", accountId).execute();
    await recordAudit(trx, audit, {
      orgId: accountId,
      action: "budget.created",
      target: { type: "budget", id },
      changes: changesOf(null, { scope: body.scope, ...auditFields(values) }),
    });
    const stored = await budgetRowOf(trx, accountId, id);
    if (!stored) throw new Error(`budget ${id} vanished in its own transaction`);
    return stored;
  });
  auth.forgetAccount(accountId);
  return view(row, nowMs);
}

/**
 * `PATCH /v1/budgets/{budget_id}`: changes the fields present. A new period or time zone restarts the
 * counter from the usage log of the new current window. On a key's spend limit (`bud_key_...`) the change
 * is the key's (`amount_usd` and `period`; the time zone stays UTC, the action `block`, no thresholds).
 * Written with its `budget.updated` audit entry (D45) in one transaction.
 * @throws AppError 404 `budget_not_found`; 400 `invalid_request` (a bad field, a field a key's spend limit
 *   does not have).
 */
export async function patchBudget(
  db: Executor,
  auth: AccountAuthChanges,
  audit: AuditContext,
  caller: KeyCaller,
  budgetId: string,
  body: PatchBudgetBody,
  nowMs = Date.now(),
): Promise<BudgetView> {
  const f = parseFields(body);
  const accountId = caller.accountId;
  if (budgetId.startsWith(KEY_LIMIT_PREFIX)) {
    await getBudget(db, accountId, budgetId, nowMs);
    if (f.timezone !== undefined && f.timezone !== "UTC") throw errors.invalidRequest("A key's spend limit counts in UTC; create a budget of scope key for another time zone.", "timezone");
    if (f.action !== undefined && f.action !== "block") throw errors.invalidRequest("A key's spend limit blocks; create a budget of scope key with action alert to be alerted.", "action");
    if (f.thresholds !== undefined && f.thresholds.length > 0) throw errors.invalidRequest("A key's spend limit has no thresholds; create a budget of scope key with thresholds.", "thresholds");
    const patch: { spend_limit_usd?: number; spend_limit_period?: SpendPeriod } = {};
    if (f.amountMicros !== undefined) patch.spend_limit_usd = microsToUsd(f.amountMicros);
    if (f.period !== undefined) patch.spend_limit_period = f.period;
    // The key's own change, audited as `key.updated` (its spend limit is a field of the key).
    await patchKey(db, auth, caller, budgetId.slice("bud_".length), patch, audit);
    return getBudget(db, accountId, budgetId, nowMs);
  }
  const row = await inTransaction(db, async (trx) => {
    const before = await budgetRowOf(trx, accountId, budgetId);
    if (!before) throw errors.budgetNotFound();
    const set = {
      ...(f.amountMicros !== undefined ? { amount_micros: f.amountMicros } : {}),
      ...(f.period !== undefined ? { period: f.period } : {}),
      ...(f.timezone !== undefined ? { timezone: f.timezone } : {}),
      ...(f.action !== undefined ? { action: f.action } : {}),
      ...(f.thresholds !== undefined ? { thresholds_json: JSON.stringify(f.thresholds) } : {}),
      // A new amount or new thresholds: the next threshold due is worked out again (none announced twice).
      ...(f.amountMicros !== undefined || f.thresholds !== undefined ? { alert_next_micros: 0 } : {}),
      updated_at: nowMs,
    };
    await updateBudgetRow(trx, budgetId, set);
    const period = f.period ?? before.period;
    const timezone = f.timezone ?? before.timezone;
    if (period !== before.period || timezone !== before.timezone) {
      await restartBudgetCounter(trx, { id: budgetId, accountId, scopeType: before.scope_type, scopeId: before.scope_id, period, timezone }, nowMs);
    }
    const after = await budgetRowOf(trx, accountId, budgetId);
    if (!after) throw errors.budgetNotFound();
    const changes = changesOf(auditFields(before), auditFields(after));
    await recordAudit(trx, audit, { orgId: accountId, action: "budget.updated", target: { type: "budget", id: budgetId }, changes });
    return after;
  });
  return view(row, nowMs);
}

/**
 * `DELETE /v1/budgets/{budget_id}`: the budget stops counting at once. On a key's spend limit it removes
 * the key's limit. Written with its `budget.deleted` audit entry (D45) in one transaction.
 * @throws AppError 404 `budget_not_found`.
 */
export async function deleteBudget(
  db: Executor,
  auth: AccountAuthChanges,
  audit: AuditContext,
  caller: KeyCaller,
  budgetId: string,
): Promise<{ id: string; object: "budget"; deleted: true }> {
  const accountId = caller.accountId;
  if (budgetId.startsWith(KEY_LIMIT_PREFIX)) {
    await getBudget(db, accountId, budgetId);
    await patchKey(db, auth, caller, budgetId.slice("bud_".length), { spend_limit_usd: null }, audit);
    return { id: budgetId, object: "budget", deleted: true };
  }
  await inTransaction(db, async (trx) => {
    const before = await budgetRowOf(trx, accountId, budgetId);
    if (!before || !(await deleteBudgetRow(trx, accountId, budgetId))) throw errors.budgetNotFound();
    await refreshHasBudgets(trx, accountId);
    await recordAudit(trx, audit, {
      orgId: accountId,
      action: "budget.deleted",
      target: { type: "budget", id: budgetId },
      changes: changesOf({ scope: { type: before.scope_type, id: before.scope_id }, ...auditFields(before) }, null),
    });
  });
  auth.forgetAccount(accountId);
  return { id: budgetId, object: "budget", deleted: true };
}

/**
 * What the `block` budgets that apply to a call leave, micro-USD (`X-Svc-Budget-Remaining-USD`): the
 * smallest of the organization's, the member's and the key's budgets and the key's spend limit; null when
 * none applies (test-mode calls: none).
 */
export async function budgetRemaining(db: Executor, accountId: string, call: CallContext, nowMs = Date.now()): Promise<Micros | null> {
  if (call.mode === "test") return null;
  let left: Micros | null = null;
  if (call.budgets === true) {
    const room = await budgetRoom(db, { accountId, userId: call.userId ?? null, keyId: call.keyId }, nowMs);
    if (room !== null) left = room.leftMicros;
  }
  if (call.keySpend && call.keyId !== null) {
    // This key's row only: its limit's counter (spentOfKeys reads it, no usage sum).
    const row = await keyRowOf(db, accountId, call.keyId);
    if (row !== null && row.spend_limit_micros !== null) {
      const spent = (await spentOfKeys(db, accountId, [row], nowMs)).get(row.id) ?? 0;
      const k = Math.max(0, Number(row.spend_limit_micros) - spent);
      left = left === null ? k : Math.min(left, k);
    }
  }
  return left;
}
