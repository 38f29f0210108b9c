/**
 * Spend limits of API keys (D34): the period a key's spend counts in, and the counter that makes the
 * limit atomic with the hold.
 *
 * A key with a limit keeps a counter on its row (`api_keys.spent_micros` for the period starting at
 * `spent_period_start`): every hold of the key raises it by the amount held, in the hold's transaction and
 * only if the result stays within the limit; a capture lowers it by what the hold gave back, a release by
 * the whole hold, a refund by the amount refunded. So the counter is always "open holds plus captured
 * charges of the period", parallel calls cannot overrun the limit (each sees the holds placed before it),
 * and a hold counts in the period in which it was placed (its settlement in a later period changes the old
 * period's count, which no longer matters). Keys without a limit keep no counter; their `spent_usd` is
 * read from the usage log (usage.ts).
 */
import { sql } from "kysely";
import type { Executor } from "./ledger.ts";
import type { Micros } from "./money.ts";
import type { SpendPeriod } from "../storage/schema.ts";

/** The periods of D34, in the order the API lists them. */
export const SPEND_PERIODS: readonly SpendPeriod[] = ["day", "week", "month", "total"];

/** The spend limit of the key a call is made with (D34); amounts in micro-USD. */
export interface KeySpend {
  keyId: string;
  limitMicros: Micros;
  period: SpendPeriod;
}

/** The hold would take the key past its spend limit. Services translate it to 402 `key_spend_limit`. */
export class KeySpendLimitError extends Error {
  readonly limitMicros: Micros;
  readonly spentMicros: Micros;
  readonly neededMicros: Micros;
  readonly period: SpendPeriod;
  constructor(a: { limitMicros: Micros; spentMicros: Micros; neededMicros: Micros; period: SpendPeriod }) {
    super("key spend limit reached");
    this.name = "KeySpendLimitError";
    this.limitMicros = a.limitMicros;
    this.spentMicros = a.spentMicros;
    this.neededMicros = a.neededMicros;
    this.period = a.period;
  }
}

/**
 * The start of the UTC period containing `nowMs` (epoch ms): midnight for `day`, Monday midnight for
 * `week` (ISO weeks), the first of the month for `month`, and 0 for `total` (one period forever).
 */
export function periodStart(period: SpendPeriod, nowMs: number): number {
  if (period === "total") return 0;
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === "month") return Date.UTC(y, m, 1);
  const day = Date.UTC(y, m, d.getUTCDate());
  if (period === "day") return day;
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  return day - sinceMonday * 86_400_000;
}

/**
 * Counts `amountMicros` (> 0) against the key's counter for the period starting at `period`, if the key's
 * limit allows it (a key whose limit was removed meanwhile counts without a check). A counter still on an
 * earlier period starts again from 0; one already on a later period (another process's clock ran ahead)
 * stays there and the hold counts in it. Runs in the caller's transaction, which must also place the hold.
 * Returns the period the hold counts in, or null (nothing written) when it would pass the limit.
 */
export async function countKeySpend(trx: Executor, keyId: string, amountMicros: Micros, period: number): Promise<number | null> {
  const p = sql<number>`cast(${period} as bigint)`;
  const amount = sql<number>`cast(${amountMicros} as bigint)`;
  const current = sql<number>`(case when spent_period_start >= ${p} then spent_micros else 0 end)`;
  const row = await trx
    .updateTable("api_keys")
    .set({
      spent_micros: sql<number>`${current} + ${amount}`,
      spent_period_start: sql<number>`(case when spent_period_start > ${p} then spent_period_start else ${p} end)`,
    })
    .where("id", "=", keyId)
    .where((eb) => eb.or([eb("spend_limit_micros", "is", null), eb(sql<number>`${current} + ${amount}`, "<=", eb.ref("spend_limit_micros"))]))
    .returning("spent_period_start")
    .executeTakeFirst();
  return row ? Number(row.spent_period_start) : null;
}

/** The key's limit and what it has spent in the period starting at `period` (for the 402's message). */
export async function keySpendState(trx: Executor, keyId: string, period: number): Promise<{ limitMicros: Micros; spentMicros: Micros } | null> {
  const row = await trx
    .selectFrom("api_keys")
    .select(["spend_limit_micros", "spent_micros", "spent_period_start"])
    .where("id", "=", keyId)
    .executeTakeFirst();
  if (!row || row.spend_limit_micros === null) return null;
  return {
    limitMicros: Number(row.spend_limit_micros),
    spentMicros: Number(row.spent_period_start) >= period ? Number(row.spent_micros) : 0,
  };
}

/**
 * Gives `amountMicros` back to the counter a hold was counted in (a capture's unused part, a release, a
 * refund), in the settlement's transaction; nothing when the counter has moved on to another period.
 */
export async function uncountKeySpend(trx: Executor, keyId: string, period: number, amountMicros: Micros): Promise<void> {
  if (amountMicros <= 0) return;
  await trx
    .updateTable("api_keys")
    .set({ spent_micros: sql<number>`spent_micros - cast(${amountMicros} as bigint)` })
    .where("id", "=", keyId)
    .where("spent_period_start", "=", period)
    .execute();
}

/**
 * What the live calls of `keyId` since `fromMs` (epoch ms) hold or were charged, from the usage log (D29):
 * the hold of each call still open (`pending`, `processing`) plus the cost of each succeeded one, micro-USD.
 * Equal to the counter a limit keeps (for keys without one, and to start a counter when a limit is set).
 */
export async function countedSpend(db: Executor, accountId: string, keyId: string, fromMs: number): Promise<Micros> {
  return (await countedSpendOfKeys(db, accountId, [keyId], fromMs)).get(keyId) ?? 0;
}

/** {@link countedSpend} of several keys of the account since the same `fromMs`, in one query; keys with nothing spent map to 0. */
export async function countedSpendOfKeys(db: Executor, accountId: string, keyIds: readonly string[], fromMs: number): Promise<Map<string, Micros>> {
  const out = new Map<string, Micros>(keyIds.map((k) => [k, 0]));
  if (keyIds.length === 0) return out;
  const rows = await db
    .selectFrom("usage_records")
    .select([
      "key_id",
      sql<number>`coalesce(sum(case when status in ('pending', 'processing') then hold_micros when status = 'succeeded' then coalesce(cost_micros, 0) else 0 end), 0)`.as("spent"),
    ])
    .where("account_id", "=", accountId)
    .where("mode", "=", "live")
    .where("created_at", ">=", fromMs)
    .where("key_id", "in", [...keyIds])
    .groupBy("key_id")
    .execute();
  for (const r of rows) if (r.key_id !== null) out.set(r.key_id, Number(r.spent));
  return out;
}

/**
 * Starts (or restarts) the counter of a key whose limit or period changed: the counter takes what the
 * key's live calls since the start of the period hold or were charged (the usage log), and the open holds
 * of those calls are marked as counted in it, so their settlements give back to it. In `trx`; the holds are
 * updated before the key row (settlements lock holds before keys: no deadlock).
 */
export async function restartKeyCounter(trx: Executor, accountId: string, keyId: string, period: SpendPeriod, nowMs = Date.now()): Promise<void> {
  const from = periodStart(period, nowMs);
  await trx
    .updateTable("holds")
    .set({ key_id: keyId, key_period_start: from })
    .where("status", "=", "open")
    .where("account_id", "=", accountId)
    .where("created_at", ">=", from)
    .where("request_id", "in", (eb) =>
      eb.selectFrom("usage_records").select("id").where("key_id", "=", keyId).where("account_id", "=", accountId).where("mode", "=", "live").where("created_at", ">=", from),
    )
    .execute();
  const spent = await countedSpend(trx, accountId, keyId, from);
  await trx
    .updateTable("api_keys")
    .set({ spent_micros: spent, spent_period_start: sql<number>`cast(${from} as bigint)` })
    .where("id", "=", keyId)
    .execute();
}

