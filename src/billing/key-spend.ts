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
import type { SpendPeriod } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import { countedSpendOfKeys, markHoldsCounted, setKeyCounter } from "./key-spend.repository.ts";
import type { Micros } from "../money.ts";

export { countedSpendOfKeys, countKeySpend, keySpendState, uncountKeySpend } from "./key-spend.repository.ts";

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
 * What the live calls of `keyId` since `fromMs` (epoch ms) hold or were charged, from the usage log (D29):
 * the hold of each call still open (`pending`, `processing`) plus the cost of each succeeded one, micro-USD.
 * Equal to the counter a limit keeps (for keys without one, and to start a counter when a limit is set).
 */
export async function countedSpend(db: Executor, accountId: string, keyId: string, fromMs: number): Promise<Micros> {
  return (await countedSpendOfKeys(db, accountId, [keyId], fromMs)).get(keyId) ?? 0;
}

/**
 * Starts (or restarts) the counter of a key whose limit or period changed: the counter takes what the
 * key's live calls since the start of the period hold or were charged (the usage log), and the open holds
 * of those calls are marked as counted in it, so their settlements give back to it. In `trx`; the holds are
 * updated before the key row (settlements lock holds before keys: no deadlock).
 */
export async function restartKeyCounter(trx: Executor, accountId: string, keyId: string, period: SpendPeriod, nowMs = Date.now()): Promise<void> {
  const from = periodStart(period, nowMs);
  await markHoldsCounted(trx, accountId, keyId, from);
  const spent = await countedSpend(trx, accountId, keyId, from);
  await setKeyCounter(trx, keyId, spent, from);
}

