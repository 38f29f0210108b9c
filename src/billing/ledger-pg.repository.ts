/**
 * PostgreSQL forms of the hottest ledger writes (hold, capture, release), each one statement (one round
 * trip) instead of a BEGIN/UPDATE/INSERT/INSERT/COMMIT exchange. Data-modifying CTEs are PostgreSQL-only;
 * billing/ledger.ts calls these on PostgreSQL (storage/dialect.ts says which) and keeps the portable form
 * (ledger.repository.ts) for SQLite. Each is atomic on its own and also runs inside an enclosing
 * transaction. Outside a transaction, calls go through the batcher of ledger-pg-batch.ts, which runs these
 * for a lone call and its batch statements (ledger-pg-batch.repository.ts) for several.
 */
import { type RawBuilder, sql, type Transaction } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import type { Database, UsageRecordsTable } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import { UNIT_COLUMNS, type UnitColumn, type UnitValues } from "./usage-units.ts";

/** A usage record (D29) inserted by {@link pgPlaceHold} with the hold: the columns of schema.ts's table set at insert. */
export type PgUsageRow = Omit<
  UsageRecordsTable,
  "cost_micros" | "fallback_layer" | "latency_ms" | "updated_at" | "user_id" | "realtime" | "session_ms" | "contexts" | "close_code"
> & { user_id: string | null };

/** How {@link pgCaptureHold} finishes the hold's usage record: status, cost and measured units (null keeps). */
export interface PgUsageEnd {
  status: string;
  cost: number;
  units: UnitValues;
  fallbackLayer: number | null;
}

/** The unit columns (usage-units.ts), comma-separated, each name after `prefix` (a table, a CTE column prefix). */
export function unitColumnList(prefix = ""): RawBuilder<unknown> {
  return sql.raw(UNIT_COLUMNS.map((c) => prefix + c).join(", "));
}

/** One SQL value per unit column, comma-separated, in {@link UNIT_COLUMNS} order. */
export function unitValueList(value: (c: UnitColumn) => RawBuilder<unknown>): RawBuilder<unknown> {
  return sql.join(UNIT_COLUMNS.map(value));
}

/** `column = coalesce(new, old)` for every unit column: a finish keeps the start's unit where it measured none. */
export function keepUnitsSet(value: (c: UnitColumn) => RawBuilder<unknown>, oldPrefix: string): RawBuilder<unknown> {
  return sql.join(UNIT_COLUMNS.map((c) => sql`${sql.raw(c)} = coalesce(${value(c)}, ${sql.raw(oldPrefix + c)})`));
}

/**
 * D34: the SET item of an UPDATE of `accounts` that adds `credit` (an SQL expression, micro-USD >= 0) to
 * the balance: the low-balance alert is armed again when the new balance is above its threshold, as
 * ledger.repository.ts `rearmedAfterCredit` does for the portable statements.
 */
export function rearmAfterCredit(credit: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`low_balance_armed = case when accounts.balance_micros + ${credit} > accounts.low_balance_micros then 1 else accounts.low_balance_armed end`;
}

/** A hold as {@link pgPlaceHold} (and the batched form, ledger-pg-batch.ts) takes it; amounts in micro-USD, times in ms. */
export interface PgHoldArgs {
  holdId: string;
  accountId: string;
  amount: number;
  jobId: string | null;
  requestId: string | null;
  reference: string | null;
  now: number;
  usage: PgUsageRow | null;
  /** The key whose spend counter counted this hold, and the counter's period start (D34); null for none. */
  keyId: string | null;
  keyPeriod: number | null;
}

/** Locks the account's row until the end of the transaction `trx` (a hold counted against a key's limit takes it first). */
export async function pgLockAccount(trx: Transaction<Database>, accountId: string): Promise<void> {
  await sql`select 1 from accounts where id = ${accountId} for update`.execute(trx);
}

/**
 * Debits `amount` (micro-USD, > 0) if the balance covers it, inserts the open hold and its `hold` ledger
 * entry, and with `usage` the call's usage record (D29): still one statement. Returns the balance after,
 * or null (nothing written) when the balance is too low.
 */
export async function pgPlaceHold(db: Executor, a: PgHoldArgs): Promise<number | null> {
  const u = a.usage;
  const usageCte = u
    ? sql`, u as (
      insert into usage_records (id, account_id, user_id, key_id, mode, model, kind, status, job_id, hold_micros, cost_micros,
        ${unitColumnList()}, fallback_layer, latency_ms, created_at, updated_at)
      select ${u.id}, ${u.account_id}, ${u.user_id}, ${u.key_id}, ${u.mode}, ${u.model}, ${u.kind}, ${u.status}, ${u.job_id}, ${u.hold_micros}::bigint, null,
        ${unitValueList((c) => sql`${u[c]}::bigint`)}, 0, null, ${u.created_at}::bigint, ${u.created_at}::bigint
      from acc
    )`
    : sql``;
  const res = await sql<{ balance_after_micros: number }>`
    with acc as (
      update accounts set balance_micros = balance_micros - ${a.amount}::bigint
      where id = ${a.accountId} and balance_micros >= ${a.amount}::bigint
      returning balance_micros
    ), h as (
      insert into holds (id, account_id, amount_micros, status, captured_micros, job_id, request_id, reference, created_at, settled_at,
        key_id, key_period_start)
      select ${a.holdId}, ${a.accountId}, ${a.amount}::bigint, 'open', null, ${a.jobId}, ${a.requestId}, ${a.reference}, ${a.now}::bigint, null,
        ${a.keyId}, ${a.keyPeriod}::bigint
      from acc
    )${usageCte}
    insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at)
    select ${newTimeOrderedId("le")}, ${a.accountId}, 'hold', -${a.amount}::bigint, balance_micros, ${a.holdId}, ${a.jobId}, ${a.requestId}, ${a.reference}, ${a.now}::bigint
    from acc
    returning balance_after_micros`.execute(db);
  const row = res.rows[0];
  return row ? Number(row.balance_after_micros) : null;
}

/**
 * The CTE `u` that finishes the usage record of the settled hold `h` (D29), or nothing without `e`.
 * Data-modifying CTEs run to completion even when the main statement does not read them.
 */
function finishUsageCte(e: PgUsageEnd | null | undefined, now: number) {
  return e
    ? sql`, u as (
      update usage_records set status = ${e.status}, cost_micros = ${e.cost}::bigint,
        ${keepUnitsSet((c) => sql`${e.units[c]}::bigint`, "")},
        fallback_layer = coalesce(${e.fallbackLayer}::integer, fallback_layer),
        latency_ms = ${now}::bigint - usage_records.created_at, updated_at = ${now}::bigint
      from h where usage_records.id = h.request_id
    )`
    : sql``;
}

/**
 * The CTE `k` that gives a settled hold's unused amount (`amount_micros - final`) back to the key counter
 * it was counted in (D34). It reads `acc`, so the key row is locked after the account row, as a counted
 * hold locks them.
 */
function uncountKeyCte(final: number) {
  return sql`, k as (
      update api_keys set spent_micros = api_keys.spent_micros - (acc.amount_micros - ${final}::bigint)
      from acc where api_keys.id = acc.key_id and api_keys.spent_period_start = acc.key_period_start
    )`;
}

/**
 * The CTE `b` that gives a settled hold's unused amount back to the budget counters (D44) it was counted in
 * and that are still on the hold's window. It reads `acc` (budgets after the account, as a counted hold
 * locks them) and looks for the hold's counters only when the hold was budgeted.
 */
function uncountBudgetsCte(holdId: string, final: number) {
  return sql`, b as (
      update budgets set spent_micros = budgets.spent_micros - (acc.amount_micros - ${final}::bigint)
      from acc, hold_budgets hb
      where acc.budgeted = 1 and hb.hold_id = ${holdId} and budgets.id = hb.budget_id and budgets.window_start = hb.window_start
    )`;
}

/**
 * Captures an open hold for `final` micro-USD (0 <= final <= held): marks it captured, returns the
 * difference to the balance and writes `hold_release` (+held) then `charge` (-final, omitted when 0);
 * with `usage`, finishes the usage record of the hold's request (D29) in the same statement. Returns the
 * balance after and the entries written, or null when the hold is not open or smaller than `final`
 * (nothing written).
 */
export async function pgCaptureHold(
  db: Executor,
  a: { holdId: string; final: number; now: number; usage?: PgUsageEnd | null },
): Promise<{ balance: number; entries: { kind: string; amount: number }[] } | null> {
  const usageCte = finishUsageCte(a.usage, a.now);
  const res = await sql<{ kind: string; amount_micros: number; balance_after_micros: number }>`
    with h as (
      update holds set status = 'captured', captured_micros = ${a.final}::bigint, settled_at = ${a.now}::bigint
      where id = ${a.holdId} and status = 'open' and amount_micros >= ${a.final}::bigint
      returning account_id, amount_micros, job_id, request_id, reference, key_id, key_period_start, budgeted
    ), acc as (
      update accounts set balance_micros = accounts.balance_micros + h.amount_micros - ${a.final}::bigint,
        ${rearmAfterCredit(sql`(h.amount_micros - ${a.final}::bigint)`)}
      from h where accounts.id = h.account_id
      returning accounts.balance_micros, h.amount_micros, h.account_id, h.job_id, h.request_id, h.reference, h.key_id, h.key_period_start, h.budgeted
    )${usageCte}${uncountKeyCte(a.final)}${uncountBudgetsCte(a.holdId, a.final)}
    insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at)
    select ${newTimeOrderedId("le")}, account_id, 'hold_release', amount_micros, balance_micros + ${a.final}::bigint, ${a.holdId}, job_id, request_id, reference, ${a.now}::bigint from acc
    union all
    select ${newTimeOrderedId("le")}, account_id, 'charge', -${a.final}::bigint, balance_micros, ${a.holdId}, job_id, request_id, reference, ${a.now}::bigint from acc
    where ${a.final}::bigint > 0
    returning kind, amount_micros, balance_after_micros`.execute(db);
  if (res.rows.length === 0) return null;
  return {
    balance: Math.min(...res.rows.map((r) => Number(r.balance_after_micros))),
    entries: res.rows.map((r) => ({ kind: r.kind, amount: Number(r.amount_micros) })),
  };
}

/**
 * Releases an open hold in full in one statement: marks it released, returns the amount to the balance and
 * writes its `hold_release` entry; with `usage`, finishes the usage record of the hold's request (D29,
 * cost 0). Returns the balance after and the amount released, or null when the hold is not open (nothing
 * written).
 */
export async function pgReleaseHold(
  db: Executor,
  a: { holdId: string; now: number; usage?: PgUsageEnd | null },
): Promise<{ balance: number; amount: number } | null> {
  const usageCte = finishUsageCte(a.usage, a.now);
  const res = await sql<{ balance_after_micros: number; amount_micros: number }>`
    with h as (
      update holds set status = 'released', settled_at = ${a.now}::bigint
      where id = ${a.holdId} and status = 'open'
      returning account_id, amount_micros, job_id, request_id, reference, key_id, key_period_start, budgeted
    ), acc as (
      update accounts set balance_micros = accounts.balance_micros + h.amount_micros, ${rearmAfterCredit(sql`h.amount_micros`)}
      from h where accounts.id = h.account_id
      returning accounts.balance_micros, h.amount_micros, h.account_id, h.job_id, h.request_id, h.reference, h.key_id, h.key_period_start, h.budgeted
    )${usageCte}${uncountKeyCte(0)}${uncountBudgetsCte(a.holdId, 0)}
    insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at)
    select ${newTimeOrderedId("le")}, account_id, 'hold_release', amount_micros, balance_micros, ${a.holdId}, job_id, request_id, reference, ${a.now}::bigint from acc
    returning balance_after_micros, amount_micros`.execute(db);
  const row = res.rows[0];
  return row ? { balance: Number(row.balance_after_micros), amount: Number(row.amount_micros) } : null;
}
