/**
 * Per-key controls (D34): spend limit with its period, expiry, model allow-list and the key's own requests
 * per minute. Parsed here from `POST /v1/auth/keys` and `PATCH /v1/auth/keys/{key_id}` bodies, stored on
 * the key's row, carried by the authenticated principal, and enforced where each belongs: expiry and rpm
 * by the auth hook, the allow-list by the call guard (limits/), the spend limit with the hold
 * (billing/key-spend.ts). A key with an allow-list has the rpm of its model calls counted by the call
 * guard right after the allow-list (http/auth.ts, D34 order of checks).
 */
import { countedSpendOfKeys, periodStart, SPEND_PERIODS } from "../billing/key-spend.ts";
import type { KeyControlsBody } from "../contracts/auth.ts";
import type { Executor } from "../billing/ledger.ts";
import { type Micros, microsToUsd, usdToMicros } from "../money.ts";
import { getModel } from "../catalog/models.ts";
import { getTextModel } from "../catalog/text-models.ts";
import { errors } from "../errors.ts";
import type { SpendPeriod } from "../storage/schema.ts";

/** The controls of one key as the principal carries them (D34). */
export interface KeyControls {
  /** When the key stops working, epoch ms, or null. */
  expiresAt: number | null;
  /** Model ids and `prefix*` patterns the key may call, or null for every model. */
  models: readonly string[] | null;
  /** The key's own requests per minute, or null. */
  rpm: number | null;
  /** The spend limit, micro-USD, or null. */
  spendLimitMicros: Micros | null;
  /** The period of the limit and of `spent_usd` (default `month`). */
  spendLimitPeriod: SpendPeriod;
}

/** The key row columns the controls come from. */
export interface KeyControlColumns {
  expires_at: number | null;
  models_json: string | null;
  rpm: number | null;
  spend_limit_micros: number | null;
  spend_limit_period: SpendPeriod | null;
}

const MAX_MODELS = 100;
const MODEL_PATTERN = /^[A-Za-z0-9._:/-]{1,100}\*?$/;
/** The largest spend limit accepted, micro-USD (one million USD, as a deposit). */
const MAX_LIMIT_MICROS = 1_000_000 * 1_000_000;

/** The controls of a key row (values as the database returns them). */
export function controlsOf(row: KeyControlColumns): KeyControls {
  return {
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    models: row.models_json === null ? null : (JSON.parse(row.models_json) as string[]),
    rpm: row.rpm === null ? null : Number(row.rpm),
    spendLimitMicros: row.spend_limit_micros === null ? null : Number(row.spend_limit_micros),
    spendLimitPeriod: row.spend_limit_period ?? "month",
  };
}

/** Column values parsed from a body; a field absent from the body is absent here (PATCH leaves it). */
export type KeyControlUpdate = Partial<KeyControlColumns>;

/**
 * Validates the D34 fields present in `body` (`null` clears a field; `spend_limit_period` null means
 * `month`) against the account's requests per minute `accountRpm`.
 * @throws AppError 400 `invalid_request` naming the field: a limit that is not a non-negative USD amount
 *   with at most 6 decimals, a period outside `day|week|month|total`, an `expires_at` that is not ISO 8601
 *   or not in the future, `models` that is not a non-empty list of known model ids or `prefix*` patterns,
 *   an `rpm` that is not a whole number from 1 to the account's.
 */
export function parseKeyControls(body: KeyControlsBody, accountRpm: number, nowMs = Date.now()): KeyControlUpdate {
  const out: KeyControlUpdate = {};
  if (body.spend_limit_usd !== undefined) {
    const raw = body.spend_limit_usd;
    if (raw === null) out.spend_limit_micros = null;
    else {
      const micros = typeof raw === "number" ? usdToMicros(raw) : null;
      if (micros === null || micros < 0 || micros > MAX_LIMIT_MICROS) {
        throw errors.invalidRequest("spend_limit_usd must be a non-negative number of USD with at most 6 decimals, or null.", "spend_limit_usd");
      }
      out.spend_limit_micros = micros;
    }
  }
  if (body.spend_limit_period !== undefined) {
    const p = body.spend_limit_period;
    if (p !== null && !(typeof p === "string" && (SPEND_PERIODS as readonly string[]).includes(p))) {
      throw errors.invalidRequest("spend_limit_period must be one of day, week, month, total.", "spend_limit_period");
    }
    out.spend_limit_period = (p ?? "month") as SpendPeriod;
  }
  if (body.expires_at !== undefined) {
    const v = body.expires_at;
    if (v === null) out.expires_at = null;
    else {
      const at = typeof v === "string" && /^\d{4}-\d{2}-\d{2}(T|$)/.test(v) ? Date.parse(v) : Number.NaN;
      if (!Number.isFinite(at)) throw errors.invalidRequest("expires_at must be an ISO 8601 date or time, or null.", "expires_at");
      if (at <= nowMs) throw errors.invalidRequest("expires_at must be in the future.", "expires_at");
      out.expires_at = at;
    }
  }
  if (body.models !== undefined) {
    const m = body.models;
    if (m === null) out.models_json = null;
    else {
      if (!Array.isArray(m) || m.length === 0 || m.length > MAX_MODELS) {
        throw errors.invalidRequest(`models must be a list of 1 to ${MAX_MODELS} model ids or prefixes such as "alpha-*", or null.`, "models");
      }
      for (const entry of m) {
        if (typeof entry !== "string" || !MODEL_PATTERN.test(entry) || entry === "*") {
          throw errors.invalidRequest(`models entries must be model ids or prefixes such as "alpha-*"; got ${JSON.stringify(entry).slice(0, 60)}.`, "models");
        }
        if (!entry.endsWith("*") && !getModel(entry) && !getTextModel(entry)) {
          throw errors.invalidRequest(`models: unknown model ${entry} (see GET /v1/pricing); use a prefix such as "alpha-*" for a family.`, "models");
        }
      }
      out.models_json = JSON.stringify([...new Set(m as string[])]);
    }
  }
  if (body.rpm !== undefined) {
    const r = body.rpm;
    if (r === null) out.rpm = null;
    else {
      if (typeof r !== "number" || !Number.isInteger(r) || r < 1 || r > accountRpm) {
        throw errors.invalidRequest(`rpm must be a whole number from 1 to ${accountRpm} (the account's requests per minute), or null.`, "rpm");
      }
      out.rpm = r;
    }
  }
  return out;
}

/** The D34 fields of a key as the API shows them (`GET /v1/auth/keys`, creation, `PATCH`); USD amounts. */
export interface KeyControlsView {
  spend_limit_usd: number | null;
  spend_limit_period: SpendPeriod;
  spent_usd: number;
  expires_at: string | null;
  models: string[] | null;
  rpm: number | null;
}

/** Renders a key's controls with what it spent in its current period (micro-USD). */
export function controlsView(c: KeyControls, spentMicros: Micros): KeyControlsView {
  return {
    spend_limit_usd: c.spendLimitMicros === null ? null : microsToUsd(c.spendLimitMicros),
    spend_limit_period: c.spendLimitPeriod,
    spent_usd: microsToUsd(spentMicros),
    expires_at: c.expiresAt === null ? null : new Date(c.expiresAt).toISOString(),
    models: c.models === null ? null : [...c.models],
    rpm: c.rpm,
  };
}

/** A key row with what {@link spentOfKeys} needs. */
export interface SpentKeyRow extends KeyControlColumns {
  id: string;
  mode: string;
  spent_micros: number;
  spent_period_start: number;
}

/**
 * What each key spent in its current period (D34 `spent_usd`), micro-USD: open holds plus captured charges
 * of live calls. A key with a limit reads its counter (the figure the limit is enforced on); others sum
 * their usage records. Test-mode keys spend nothing.
 */
export async function spentOfKeys(db: Executor, accountId: string, rows: readonly SpentKeyRow[], nowMs = Date.now()): Promise<Map<string, Micros>> {
  const out = new Map<string, Micros>();
  // Keys without a counter, by the start of their period: one query per period (at most four).
  const summed = new Map<number, string[]>();
  for (const r of rows) {
    const from = periodStart(r.spend_limit_period ?? "month", nowMs);
    if (r.mode === "test") out.set(r.id, 0);
    else if (r.spend_limit_micros !== null) out.set(r.id, Number(r.spent_period_start) >= from ? Number(r.spent_micros) : 0);
    else summed.set(from, [...(summed.get(from) ?? []), r.id]);
  }
  for (const [from, ids] of summed) for (const [id, spent] of await countedSpendOfKeys(db, accountId, ids, from)) out.set(id, spent);
  return out;
}
