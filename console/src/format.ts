/**
 * Display formats of the console: money in USD, instants in the browser's time zone, and counts with a
 * noun that agrees with them (`1 call`, `2 calls`: {@link plural}).
 *
 * Amounts arrive from the API as USD decimals with at most 6 decimals (D7: micro-dollar precision). They
 * are shown with at least 2 decimals and up to all 6, never rounded to cents: a speech call of 0.000200 USD
 * or an image hold of 0.054 USD must read as such, not as "$0.00" or "$0.05".
 *
 * Pure functions of their arguments (the locale and zone default to the browser's), so Node tests can
 * import this file directly (test/console/format.test.ts).
 */

/** The USD formatter for `locale`, kept per locale (building an Intl formatter is not free). */
const usdFormatters = new Map<string, Intl.NumberFormat>();

/**
 * `amountUsd` (USD, at most 6 decimals) as a currency string, e.g. `$0.054`, `$12.50`, `$0.0002`,
 * `-$1,234.567891`. `locale` defaults to the browser's. Not a number (NaN, Infinity): an em dash.
 */
export function formatUsd(amountUsd: number, locale?: string): string {
  if (!Number.isFinite(amountUsd)) return "—";
  const key = locale ?? "";
  let f = usdFormatters.get(key);
  if (!f) {
    f = new Intl.NumberFormat(locale, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 });
    usdFormatters.set(key, f);
  }
  // -0 (a zero charge computed as a negative) reads as $0.00.
  return f.format(amountUsd === 0 ? 0 : amountUsd);
}

/** The to-the-cent USD formatter for `locale`, kept per locale. */
const centFormatters = new Map<string, Intl.NumberFormat>();

/**
 * `amountUsd` to the cent, for summaries (a balance, a period's total, a job card): `$12.50`, `$0.05`.
 * An amount that is not zero but rounds to zero cents reads `<$0.01` (`-<$0.01` below zero), never a
 * misleading `$0.00`. The exact amount is {@link formatUsd}'s, shown where it matters (ledger, request
 * details) and in the title of a rounded amount (`<Usd amount cents>`). Not a number: an em dash.
 */
export function formatUsdCents(amountUsd: number, locale?: string): string {
  if (!Number.isFinite(amountUsd)) return "—";
  const key = locale ?? "";
  let f = centFormatters.get(key);
  if (!f) {
    f = new Intl.NumberFormat(locale, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 });
    centFormatters.set(key, f);
  }
  if (amountUsd !== 0 && Math.abs(amountUsd) < 0.005) return `${amountUsd < 0 ? "-" : ""}<${f.format(0.01)}`;
  return f.format(amountUsd === 0 ? 0 : amountUsd);
}

/** The IANA time zone of the browser (`Europe/Berlin`), sent as `tz` to the usage endpoints (D29). */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/**
 * An ISO instant (`2025-03-01T12:00:00.000Z`) as a date and time in `timeZone` (default: the browser's),
 * e.g. `Mar 1, 2025, 1:00 PM`. An unreadable string is returned as it is; null/undefined: an em dash.
 */
export function formatDateTime(iso: string | null | undefined, opts: { timeZone?: string; locale?: string } = {}): string {
  if (iso === null || iso === undefined) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return new Intl.DateTimeFormat(opts.locale, { dateStyle: "medium", timeStyle: "short", timeZone: opts.timeZone }).format(d);
}

/**
 * The calendar date `daysAgo` days before `now` in `timeZone` (default: the browser's), as `YYYY-MM-DD`:
 * a `from` bound of the usage endpoints, which read a date as midnight in `tz` (D29). 0 is today.
 */
export function isoDateDaysAgo(daysAgo: number, opts: { now?: Date; timeZone?: string } = {}): string {
  const now = opts.now ?? new Date();
  // Calendar arithmetic on the zone's date, not on the instant: a day is not always 24 h (DST).
  const parts = new Intl.DateTimeFormat("en-CA", { year: "numeric", month: "2-digit", day: "2-digit", timeZone: opts.timeZone ?? browserTimeZone() })
    .formatToParts(now);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const day = new Date(Date.UTC(get("year"), get("month") - 1, get("day") - daysAgo));
  return day.toISOString().slice(0, 10);
}

/** A whole number with the locale's grouping (`12,345`); null/undefined: an em dash. */
export function formatCount(n: number | null | undefined, locale?: string): string {
  return n === null || n === undefined ? "—" : new Intl.NumberFormat(locale).format(n);
}

/**
 * A count and its noun, in agreement: `plural(1, "call")` is `1 call`, `plural(12345, "call")` `12,345 calls`,
 * `plural(0, "job")` `0 jobs`, `plural(2, "entry", "entries")` `2 entries`. The number is grouped like
 * {@link formatCount}; only one (or minus one) takes the singular, as in English, the console's language.
 * Every count the console shows in a sentence goes through it (issue 42: never "1 calls").
 */
export function plural(n: number, singular: string, pluralForm = `${singular}s`, locale?: string): string {
  return `${formatCount(n, locale)} ${pluralNoun(n, singular, pluralForm)}`;
}

/** The noun alone, agreeing with `n`: `pluralNoun(1, "voice")` is `voice`, otherwise `voices` (or `pluralForm`). */
export function pluralNoun(n: number, singular: string, pluralForm = `${singular}s`): string {
  return Math.abs(n) === 1 ? singular : pluralForm;
}
