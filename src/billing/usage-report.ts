/**
 * Reading the usage log (D29): `GET /v1/requests` (one page of records, newest first),
 * `GET /v1/requests/{id}` (a record and its ledger entries) and `GET /v1/usage` (records summed by day in
 * an IANA time zone, by model, by key or by member). Every read is confined to one account and one mode: test-mode
 * records (D32) show only when asked for with `mode=test`.
 *
 * Each query is one index range scan on `(account_id, mode, ..., created_at, id)` (migration 008 lists the
 * plans). Days in a time zone are not computed in SQL (SQLite has no zones): records are summed in SQL by
 * 15-minute UTC buckets, and each bucket is given its local day here; every zone's offset from UTC, DST
 * included, is a whole number of quarter hours, so no bucket straddles a local midnight.
 */
import { errors } from "../errors.ts";
import type { KeyMode } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import { type LedgerEntry, ledgerOfRequest } from "./ledger.repository.ts";
import type { Micros } from "../money.ts";
import { billedCharacters, type GroupBy, requestOfAccount, requestsPage, type RequestFilters, type UsageRecord, usageSums } from "./usage-report.repository.ts";
import { noUnits, UNIT_COLUMNS, type UnitValues, type UnitsView, unitsView } from "./usage-units.ts";

export { UNIT_NAMES, type UnitsView } from "./usage-units.ts";
export type { GroupBy, RequestFilters, UsageRecord } from "./usage-report.repository.ts";

/**
 * One page of the account's usage records, newest first (by time, then id, so records of the same
 * millisecond keep a stable order), and whether more follow. `after` is the id of the last record of the
 * previous page; one that names no record of this account and mode is ignored (the first page).
 */
export async function listRequests(
  db: Executor,
  accountId: string,
  f: RequestFilters,
): Promise<{ records: UsageRecord[]; hasMore: boolean }> {
  const records = await requestsPage(db, accountId, f);
  return { records: records.slice(0, f.limit), hasMore: records.length > f.limit };
}

/**
 * A record of the account (either mode) and its ledger entries, oldest first (none in test mode).
 * @throws AppError 404 `request_not_found` for an unknown id or another account's.
 */
export async function getRequest(db: Executor, accountId: string, id: string): Promise<{ record: UsageRecord; ledger: LedgerEntry[] }> {
  const record = await requestOfAccount(db, accountId, id);
  if (!record) throw errors.requestNotFound();
  return { record, ledger: await ledgerOfRequest(db, accountId, id) };
}

/** One group of a usage summary. */
export interface UsageGroup {
  /**
   * `YYYY-MM-DD` in the zone (day), the model id (model), the key id (key; `none` for calls made without
   * one) or the member's user id (member; `none` for records that name no member).
   */
  group: string;
  requests: number;
  costMicros: Micros;
  units: UnitsView;
}

/** Width of the UTC buckets days are built from, ms: a quarter hour (see the module comment). */
export const BUCKET_MS = 900_000;

/**
 * The account's usage in `[from, to)` (ms since the epoch) and `mode`, grouped. Groups are sorted by
 * their value (days ascending). Pending and processing records count as requests with no cost yet.
 */
export async function summarizeUsage(
  db: Executor,
  accountId: string,
  opts: { from: number; to: number; groupBy: GroupBy; tz: string; mode: KeyMode },
): Promise<{ groups: UsageGroup[]; total: { requests: number; costMicros: Micros } }> {
  const rows = await usageSums(db, accountId, { ...opts, bucketMs: BUCKET_MS });
  const dayOf = opts.groupBy === "day" ? localDateFormatter(opts.tz) : null;
  const groups = new Map<string, { requests: number; cost: number; units: UnitValues }>();
  for (const r of rows) {
    const key = dayOf ? dayOf(Math.floor(Number(r.group)) * BUCKET_MS) : r.group === null ? "none" : String(r.group);
    const g = groups.get(key) ?? { requests: 0, cost: 0, units: noUnits() };
    g.requests += Number(r.requests);
    g.cost += Number(r.cost ?? 0);
    for (const u of UNIT_COLUMNS) {
      if (r[u] !== null) g.units[u] = (g.units[u] ?? 0) + Number(r[u]);
    }
    groups.set(key, g);
  }
  const out = [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([group, g]) => ({ group, requests: g.requests, costMicros: g.cost, units: unitsView(g.units) }));
  return {
    groups: out,
    total: { requests: out.reduce((n, g) => n + g.requests, 0), costMicros: out.reduce((n, g) => n + g.costMicros, 0) },
  };
}

/** The UTC calendar month holding the instant `now` (ms since the epoch): its first ms and the next month's. */
export function utcMonthOf(now: number): { from: number; to: number } {
  const d = new Date(now);
  return { from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), to: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/**
 * The characters the account was billed for in the UTC calendar month holding `now` (ms since the epoch,
 * default the present): the sum over its live, succeeded records of that month (test-mode records, D32,
 * and unfinished or failed calls count nothing). The ElevenLabs dialect's `character_count` (D36).
 */
export async function charactersBilledInMonth(db: Executor, accountId: string, now: number = Date.now()): Promise<number> {
  const { from, to } = utcMonthOf(now);
  return billedCharacters(db, accountId, from, to);
}

// ----------------------------------------------------------------------------------------- time zones

/** Whether `tz` is a time zone the runtime knows (IANA names such as `Europe/Berlin`, and `UTC`). */
export function isTimeZone(tz: string): boolean {
  if (tz.length === 0 || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock fields of instant `t` in `tz`. */
function wallClock(fmt: Intl.DateTimeFormat, t: number): { y: number; m: number; d: number; h: number; mi: number; s: number } {
  const parts: Record<string, number> = {};
  for (const p of fmt.formatToParts(new Date(t))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return { y: parts.year, m: parts.month, d: parts.day, h: parts.hour === 24 ? 0 : parts.hour, mi: parts.minute, s: parts.second };
}

function wallFormatter(tz: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-US", {
    timeZone: tz,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** A function giving the `YYYY-MM-DD` date in `tz` of an instant (ms since the epoch). */
export function localDateFormatter(tz: string): (t: number) => string {
  const fmt = wallFormatter(tz);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return (t) => {
    const w = wallClock(fmt, t);
    return `${pad(w.y, 4)}-${pad(w.m)}-${pad(w.d)}`;
  };
}

/** The instant (ms since the epoch) at which the local date `y-m-d` starts in `tz`. */
export function startOfLocalDay(y: number, m: number, d: number, tz: string): number {
  const fmt = wallFormatter(tz);
  const guess = Date.UTC(y, m - 1, d);
  const offsetAt = (t: number) => {
    const w = wallClock(fmt, t);
    return Date.UTC(w.y, w.m - 1, w.d, w.h, w.mi, w.s) - Math.floor(t / 1000) * 1000;
  };
  // Two rounds settle the offset across a DST change between the guess and the answer.
  const first = guess - offsetAt(guess);
  return guess - offsetAt(first);
}

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Reads a `from` or `to` query value: an ISO date (`2025-03-01`, a whole day in `tz`: its start for
 * `from`, the next day's start for `to`, so `to` includes that day) or an ISO instant with a zone
 * (`2025-03-01T12:00:00Z`). Returns ms since the epoch.
 * @throws AppError 400 `invalid_request` naming `param`.
 */
export function parseTimeBound(value: string, tz: string, bound: "from" | "to"): number {
  const bad = () => errors.invalidRequest(`${bound} must be an ISO date (YYYY-MM-DD) or an ISO instant with a zone (2025-01-31T23:00:00Z).`, bound);
  const date = DATE_RE.exec(value);
  if (date) {
    const [y, m, d] = [Number(date[1]), Number(date[2]), Number(date[3])];
    const check = new Date(Date.UTC(y, m - 1, d));
    if (check.getUTCFullYear() !== y || check.getUTCMonth() !== m - 1 || check.getUTCDate() !== d) throw bad();
    if (bound === "from") return startOfLocalDay(y, m, d, tz);
    const next = new Date(Date.UTC(y, m - 1, d + 1));
    return startOfLocalDay(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), tz);
  }
  if (!INSTANT_RE.test(value)) throw bad();
  const t = Date.parse(value);
  if (!Number.isFinite(t)) throw bad();
  return t;
}

/** The default window of `GET /v1/usage` (D29): the last 30 days up to now, ms. */
export const DEFAULT_USAGE_WINDOW_MS = 30 * 24 * 3600 * 1000;
