/**
 * Readings and writings of budgets (D44) for the budgets page: a budget's window in its own time zone, its
 * period and thresholds in words, the thresholds a user types, and the time zones a form offers.
 *
 * Pure functions of their arguments (the zone list comes from the runtime's `Intl`), so Node tests import
 * this file directly (test/console/format.test.ts).
 */

/** A budget's calendar window (D44). */
export type BudgetPeriod = "day" | "week" | "month" | "total";
/** What a budget does at its amount (D44). */
export type BudgetAction = "block" | "alert";

/** The periods in the order a select offers them, with their labels. */
export const BUDGET_PERIODS: [BudgetPeriod, string][] = [
  ["day", "per day"],
  ["week", "per week (from Monday)"],
  ["month", "per month"],
  ["total", "in total (never resets)"],
];

/** The default alert thresholds of a new budget, percent (D44). */
export const DEFAULT_THRESHOLDS = [50, 80, 100];

/** A period as an adjective: `Daily`, `Weekly`, `Monthly`, `Total`. */
export function periodLabel(period: BudgetPeriod): string {
  return { day: "Daily", week: "Weekly", month: "Monthly", total: "Total" }[period];
}

const wallFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * An instant as the wall clock of `timeZone` (`Nov 30, 00:00`, with the year when `withYear`), in
 * `locale` (default the browser's); an unknown zone reads in UTC.
 */
export function wallClock(iso: string, timeZone: string, withYear = false, locale?: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const key = `${locale ?? ""}|${timeZone}|${withYear}`;
  let f = wallFormats.get(key);
  if (!f) {
    const opts: Intl.DateTimeFormatOptions = { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23", ...(withYear ? { year: "numeric" } : {}) };
    try {
      f = new Intl.DateTimeFormat(locale, { ...opts, timeZone });
    } catch {
      f = new Intl.DateTimeFormat(locale, { ...opts, timeZone: "UTC" });
    }
    wallFormats.set(key, f);
  }
  return f.format(d);
}

/**
 * A budget's current window in its own zone: `Nov 30, 00:00 – Dec 1, 00:00` (the end exclusive: the next
 * window's start), or `since Nov 1, 2026, 09:30` for a `total` budget.
 */
export function windowText(b: { window_start: string; window_end: string | null; timezone: string }, locale?: string): string {
  if (b.window_end === null) return `since ${wallClock(b.window_start, b.timezone, true, locale)}`;
  return `${wallClock(b.window_start, b.timezone, false, locale)} – ${wallClock(b.window_end, b.timezone, false, locale)}`;
}

/** Thresholds in words: `50%, 80%, 100%`, or `none`. */
export function thresholdsText(thresholds: readonly number[]): string {
  return thresholds.length === 0 ? "none" : thresholds.map((t) => `${t}%`).join(", ");
}

/**
 * The thresholds typed as whole percentages separated by commas or spaces (`50, 80 100`, `%` allowed):
 * sorted, duplicates dropped; empty: `[]` (no alerts). Null when a part is not a whole number from 1 to
 * 100 (the form says so before sending).
 */
export function parseThresholds(text: string): number[] | null {
  const parts = text.split(/[\s,]+/).map((p) => p.replace(/%$/, "")).filter((p) => p !== "");
  if (parts.some((p) => !/^\d+$/.test(p))) return null;
  const list = [...new Set(parts.map(Number))].sort((a, b) => a - b);
  return list.some((n) => n < 1 || n > 100) ? null : list;
}

/** The IANA time zones the runtime knows, `UTC` first (for a datalist); a short list where `Intl` lists none. */
export function timeZones(): string[] {
  const all = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : ["Europe/London", "Europe/Paris", "America/New_York", "Asia/Tokyo"];
  return ["UTC", ...all.filter((z) => z !== "UTC")];
}

/** Whether `zone` is a time zone the runtime knows. */
export function isTimeZone(zone: string): boolean {
  if (zone.trim() === "") return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The share of the amount spent, 0 to 1 (a budget of 0 counts as full). */
export function spentShare(b: { spent_usd: number; amount_usd: number }): number {
  if (b.amount_usd <= 0) return 1;
  return Math.min(1, Math.max(0, b.spent_usd / b.amount_usd));
}
