/**
 * Readings and writings of a key's controls (D34) shared by the keys page: the model allow-list as the text
 * a user types, the expiry as a `datetime-local` field's value, and how a spend period reads in a sentence.
 *
 * Pure functions of their arguments (the zone defaults to the browser's), so Node tests import this file
 * directly (test/console/format.test.ts).
 */

/** A key's spend-limit period (D34), in UTC. */
export type SpendPeriod = "day" | "week" | "month" | "total";

/** The periods in the order a select offers them, with their labels. */
export const SPEND_PERIODS: [SpendPeriod, string][] = [
  ["day", "per day"],
  ["week", "per week"],
  ["month", "per month"],
  ["total", "in total"],
];

/** How the current period reads after an amount: "$0.12 of $5.00 this month". */
export function periodPhrase(period: SpendPeriod): string {
  return { day: "today", week: "this week", month: "this month", total: "in total" }[period];
}

/**
 * The allow-list typed as comma- (or space-) separated ids and prefixes: `"txtA-large, imgA-*"` ->
 * `["txtA-large", "imgA-*"]`, duplicates dropped; an empty text is null (every model, D34).
 */
export function parseModels(text: string): string[] | null {
  const list = [...new Set(text.split(/[\s,]+/).filter((s) => s !== ""))];
  return list.length === 0 ? null : list;
}

/** An allow-list as the text field shows it (null: empty). */
export function modelsText(models: readonly string[] | null): string {
  return models === null ? "" : models.join(", ");
}

/**
 * An ISO instant as the value of a `datetime-local` field in `timeZone` (default: the browser's), to the
 * minute: `2027-01-01T00:00:00Z` in UTC -> `2027-01-01T00:00`. Null: empty.
 */
export function toLocalInput(iso: string | null, timeZone?: string): string {
  if (iso === null) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const parts = new Intl.DateTimeFormat("en-CA", {
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZone,
  }).formatToParts(d);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${get("year")}-${get("month")}-${get("day")}T${get("hour")}:${get("minute")}`;
}

/**
 * The value of a `datetime-local` field (`2027-01-01T09:30`, read in the browser's zone, as the field
 * shows it) as an ISO instant for `expires_at`; empty: null (never expires). An unreadable value is
 * returned as it is, so the gateway's 400 names the field.
 */
export function fromLocalInput(value: string): string | null {
  if (value.trim() === "") return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}

/**
 * The value of a number field (a USD limit, an rpm): empty is null (none), else the number. The field's
 * own validation (`type="number"`) keeps unreadable input from being submitted.
 */
export function parseNumberInput(value: string): number | null {
  return value.trim() === "" ? null : Number(value);
}
