/**
 * The calendar windows of budgets (D44): a day, an ISO week (Monday to Monday) or a month of the budget's
 * IANA time zone, or one window forever (`total`). Calendar arithmetic is luxon's, over the runtime's `Intl`
 * time-zone data: no zone table is kept here, and days that are 23 or 25 hours long (daylight saving) end
 * at the zone's next midnight.
 */
import { DateTime } from "luxon";
import type { BudgetPeriod } from "../storage/schema.ts";

/** The periods of D44, in the order the API lists them. */
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ["day", "week", "month", "total"];

/** A window: `start` and `end` in epoch ms; `end` null for `total` (`start` is then 0). */
export interface BudgetWindow {
  start: number;
  end: number | null;
}

const UNIT = { day: "day", week: "week", month: "month" } as const;

/**
 * The window of `period` in `timeZone` (an IANA name the runtime knows) that contains `nowMs` (epoch ms):
 * from that zone's midnight (of the day, the week's Monday, the month's first) to the next one.
 * @throws RangeError when the zone is unknown (check it first with {@link canonicalTimeZone}).
 */
export function budgetWindow(period: BudgetPeriod, timeZone: string, nowMs: number): BudgetWindow {
  if (period === "total") return { start: 0, end: null };
  const local = DateTime.fromMillis(nowMs, { zone: timeZone });
  if (!local.isValid) throw new RangeError(`unknown time zone ${timeZone}`);
  const unit = UNIT[period];
  const start = local.startOf(unit);
  return { start: start.toMillis(), end: start.plus({ [`${unit}s`]: 1 }).toMillis() };
}

/**
 * The runtime's canonical name of an IANA time zone (`utc` -> `UTC`, `Asia/Calcutta` stays as the runtime
 * names it), or null when the runtime does not know the zone. Offsets such as `+05:00` are refused: a
 * budget follows a place's calendar.
 */
export function canonicalTimeZone(name: string): string | null {
  if (name.length === 0 || name.length > 64 || /^[+-]/.test(name)) return null;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** `ms` (epoch ms) as ISO 8601 text in `timeZone` with its offset (`2026-11-30T00:00:00.000+14:00`). */
export function isoInZone(ms: number, timeZone: string): string {
  return DateTime.fromMillis(ms, { zone: timeZone }).toISO() ?? new Date(ms).toISOString();
}
