/**
 * The usage log (D29): one record per paid call, written where its money moves.
 *
 * A record is inserted with the call's hold (status `processing` for a synchronous call, `pending` for a
 * job) and finished in the transaction that captures, releases or refunds it, so for every call the
 * record's `cost_micros` is exactly what the ledger charged (docs/architecture.md invariant 9). A test-mode call
 * (D32) writes the same record with no hold and no ledger entry. This module holds the record's shapes
 * and its portable writes; the PostgreSQL single-statement hold and capture write it inside their own
 * statement (billing/ledger-pg.repository.ts).
 */
import { newTimeOrderedId } from "../ids.ts";
import type { KeyMode, UsageKind, UsageStatus } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import type { KeySpend } from "./key-spend.ts";
import type { Micros } from "../money.ts";
import { finishUsageRow, type UsageEndValues, usageIdOfJob, type UsageRow } from "./usage.repository.ts";
import { noUnits, UNIT_COLUMNS, UNIT_OF_COLUMN, type Units, type UnitValues } from "./usage-units.ts";

export type { KeyMode, UsageKind, UsageStatus };
export type { Units } from "./usage-units.ts";
export { insertUsage, type UsageRow } from "./usage.repository.ts";

/** Who makes a paid call and under which request (D29, D32); built once per HTTP request. */
export interface CallContext {
  /** `req_<random>`, the `X-Svc-Request-Id` of the answer and the id of the usage record. */
  requestId: string;
  /** The API key used, or null (a session token). */
  keyId: string | null;
  /** `test` for a test-mode key: simulator only, no money moves (D32). */
  mode: KeyMode;
  /** The key's spend limit (D34), counted with the call's hold; null or absent when the key has none. */
  keySpend?: KeySpend | null;
  /** The member making the call (D41: the key's creator or the session's user), written on the usage record. */
  userId?: string | null;
  /** The organization has budgets (D44): a live call's hold is counted against those that apply to it. */
  budgets?: boolean;
}

/** A context for a call made outside an HTTP request (direct service calls in tests): a fresh live request. */
export function liveContext(): CallContext {
  return { requestId: newTimeOrderedId("req"), keyId: null, mode: "live" };
}

/** What a usage record starts with; the account, model, hold amount and job come from the hold request. */
export interface UsageStart extends CallContext {
  kind: UsageKind;
  /** Units known before the call (the rest can be noted before the capture). */
  units?: Units;
}

/** What a settlement writes on the record. `costMicros` is what the ledger charged (0 when nothing). */
export interface UsageEnd {
  status: Exclude<UsageStatus, "pending" | "processing">;
  costMicros: Micros;
  /** Units measured by the call; a unit left undefined keeps its value from the start. */
  units?: Units;
  fallbackLayer?: number;
}

/** The unit columns of `units` (null where a unit does not apply); seconds are stored as milliseconds. */
export function unitColumns(units: Units = {}): UnitValues {
  const n = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? null : Math.round(v));
  const out = noUnits();
  for (const c of UNIT_COLUMNS) {
    const { field, scale } = UNIT_OF_COLUMN[c];
    const v = units[field];
    out[c] = v === undefined ? null : n(v * scale);
  }
  return out;
}

/** The row of a record that starts now. */
export function usageRow(
  start: UsageStart,
  hold: { accountId: string; amountMicros: Micros; jobId?: string | null; model: string },
  now: number,
): UsageRow {
  return {
    id: start.requestId,
    account_id: hold.accountId,
    user_id: start.userId ?? null,
    key_id: start.keyId,
    mode: start.mode,
    model: hold.model,
    kind: start.kind,
    status: hold.jobId ? "pending" : "processing",
    job_id: hold.jobId ?? null,
    hold_micros: hold.amountMicros,
    ...unitColumns(start.units),
    created_at: now,
  };
}

/** The values a finish writes (the statements of usage.repository.ts and billing/ledger-pg*.repository.ts take them). */
export function endValues(end: UsageEnd): UsageEndValues {
  return { status: end.status, cost: end.costMicros, units: unitColumns(end.units), fallbackLayer: end.fallbackLayer ?? null };
}

/**
 * Finishes the record `requestId` (run it in the transaction that moves the call's money).
 * @returns whether a record was updated.
 */
export async function finishUsage(db: Executor, requestId: string, end: UsageEnd, now = Date.now()): Promise<boolean> {
  return finishUsageRow(db, requestId, endValues(end), now);
}

/**
 * Finishes the record of job `jobId` (the job's terminal transition, jobs/ended.ts).
 * @returns whether a record was updated (jobs submitted before the usage log have none).
 */
export async function finishJobUsage(db: Executor, jobId: string, end: UsageEnd, now = Date.now()): Promise<boolean> {
  const id = await usageIdOfJob(db, jobId);
  if (id === null) return false;
  return finishUsage(db, id, end, now);
}

/** The usage start of a call of `kind` in `call` (a fresh live request when there is none). */
export function usageFor(call: CallContext | undefined, kind: UsageKind, units?: Units): UsageStart {
  return { ...(call ?? liveContext()), kind, ...(units ? { units } : {}) };
}
