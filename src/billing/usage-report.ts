/**
 * Reading the usage log (D29): `GET /v1/requests` (one page of records, newest first),
 * `GET /v1/requests/{id}` (a record and its ledger entries) and `GET /v1/usage` (records summed by day in
 * an IANA time zone, by model or by key). Every read is confined to one account and one mode: test-mode
 * records (D32) show only when asked for with `mode=test`.
 *
 * Each query is one index range scan on `(account_id, mode, ..., created_at, id)` (migration 008 lists the
 * plans). Days in a time zone are not computed in SQL (SQLite has no zones): records are summed in SQL by
 * 15-minute UTC buckets, and each bucket is given its local day here; every zone's offset from UTC, DST
 * included, is a whole number of quarter hours, so no bucket straddles a local midnight.
 */
import { errors } from "../errors.ts";
import { type Executor, type LedgerEntry, ledgerOfRequest } from "./ledger.ts";
import type { Micros } from "./money.ts";
import type { KeyMode, UsageKind, UsageStatus } from "./usage.ts";

/** The unit totals or values of a record or group, as the API shows them (absent when not applicable). */
export interface UnitsView {
  characters?: number;
  seconds?: number;
  images?: number;
  input_tokens?: number;
  output_tokens?: number;
  cached_tokens?: number;
  minutes?: number;
}

/** The unit names, in the order of the CSV's columns. */
export const UNIT_NAMES = ["characters", "seconds", "images", "input_tokens", "output_tokens", "cached_tokens", "minutes"] as const;

/** One usage record (D29). Amounts in micro-USD, times in ms since the epoch. */
export interface UsageRecord {
  id: string;
  keyId: string | null;
  model: string;
  kind: UsageKind;
  status: UsageStatus;
  mode: KeyMode;
  units: UnitsView;
  /** Null while pending or processing. */
  costMicros: Micros | null;
  holdMicros: Micros;
  fallbackLayer: number;
  latencyMs: number | null;
  jobId: string | null;
  createdAt: number;
}

const RECORD_COLUMNS = [
  "id",
  "key_id",
  "model",
  "kind",
  "status",
  "mode",
  "cost_micros",
  "hold_micros",
  "characters",
  "duration_ms",
  "images",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "minutes",
  "fallback_layer",
  "latency_ms",
  "job_id",
  "created_at",
] as const;

type UnitSums = {
  characters: number | null;
  duration_ms: number | null;
  images: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  minutes: number | null;
};

/** The API form of unit columns: seconds from milliseconds, nulls left out. */
function unitsView(r: UnitSums): UnitsView {
  const out: UnitsView = {};
  const n = (v: number | null) => (v === null ? undefined : Number(v));
  const set = <K extends keyof UnitsView>(k: K, v: number | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set("characters", n(r.characters));
  set("seconds", r.duration_ms === null ? undefined : Number(r.duration_ms) / 1000);
  set("images", n(r.images));
  set("input_tokens", n(r.input_tokens));
  set("output_tokens", n(r.output_tokens));
  set("cached_tokens", n(r.cached_tokens));
  set("minutes", n(r.minutes));
  return out;
}

function recordOf(r: UnitSums & {
  id: string;
  key_id: string | null;
  model: string;
  kind: UsageKind;
  status: UsageStatus;
  mode: KeyMode;
  cost_micros: number | null;
  hold_micros: number;
  fallback_layer: number;
  latency_ms: number | null;
  job_id: string | null;
  created_at: number;
}): UsageRecord {
  return {
    id: r.id,
    keyId: r.key_id,
    model: r.model,
    kind: r.kind,
    status: r.status,
    mode: r.mode,
    units: unitsView(r),
    costMicros: r.cost_micros === null ? null : Number(r.cost_micros),
    holdMicros: Number(r.hold_micros),
    fallbackLayer: Number(r.fallback_layer),
    latencyMs: r.latency_ms === null ? null : Number(r.latency_ms),
    jobId: r.job_id,
    createdAt: Number(r.created_at),
  };
}

/** Filters of `GET /v1/requests`; times in ms since the epoch (`to` exclusive). */
export interface RequestFilters {
  limit: number;
  after: string | null;
  model: string | null;
  keyId: string | null;
  status: UsageStatus | null;
  from: number | null;
  to: number | null;
  mode: KeyMode;
}

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
  let q = db
    .selectFrom("usage_records")
    .select([...RECORD_COLUMNS])
    .where("account_id", "=", accountId)
    .where("mode", "=", f.mode)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(f.limit + 1);
  if (f.model !== null) q = q.where("model", "=", f.model);
  if (f.keyId !== null) q = q.where("key_id", "=", f.keyId);
  if (f.status !== null) q = q.where("status", "=", f.status);
  if (f.from !== null) q = q.where("created_at", ">=", f.from);
  if (f.to !== null) q = q.where("created_at", "<", f.to);
  if (f.after !== null) {
    const anchor = await db
      .selectFrom("usage_records")
      .select(["created_at", "id"])
      .where("id", "=", f.after)
      .where("account_id", "=", accountId)
      .where("mode", "=", f.mode)
      .executeTakeFirst();
    if (anchor) {
      const at = Number(anchor.created_at);
      q = q.where((eb) => eb(eb.refTuple("created_at", "id"), "<", eb.tuple(at, anchor.id)));
    }
  }
  const rows = await q.execute();
  return { records: rows.slice(0, f.limit).map(recordOf), hasMore: rows.length > f.limit };
}

/**
 * A record of the account (either mode) and its ledger entries, oldest first (none in test mode).
 * @throws AppError 404 `request_not_found` for an unknown id or another account's.
 */
export async function getRequest(db: Executor, accountId: string, id: string): Promise<{ record: UsageRecord; ledger: LedgerEntry[] }> {
  const row = await db
    .selectFrom("usage_records")
    .select([...RECORD_COLUMNS])
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  if (!row) throw errors.requestNotFound();
  return { record: recordOf(row), ledger: await ledgerOfRequest(db, accountId, id) };
}

/** How `GET /v1/usage` groups. */
export type GroupBy = "day" | "model" | "key";

/** One group of a usage summary. */
export interface UsageGroup {
  /** `YYYY-MM-DD` in the zone (day), the model id (model) or the key id (key; `none` for calls without one). */
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
  const base = db
    .selectFrom("usage_records")
    .where("account_id", "=", accountId)
    .where("mode", "=", opts.mode)
    .where("created_at", ">=", opts.from)
    .where("created_at", "<", opts.to);
  const sums = base.select((eb) => [
    eb.fn.countAll<number>().as("requests"),
    eb.fn.sum<number>(eb.fn.coalesce("cost_micros", eb.lit(0))).as("cost"),
    eb.fn.sum<number | null>("characters").as("characters"),
    eb.fn.sum<number | null>("duration_ms").as("duration_ms"),
    eb.fn.sum<number | null>("images").as("images"),
    eb.fn.sum<number | null>("input_tokens").as("input_tokens"),
    eb.fn.sum<number | null>("output_tokens").as("output_tokens"),
    eb.fn.sum<number | null>("cached_tokens").as("cached_tokens"),
    eb.fn.sum<number | null>("minutes").as("minutes"),
  ]);
  type Row = UnitSums & { group: string | number | null; requests: number; cost: number | null };
  let rows: Row[];
  if (opts.groupBy === "model") {
    rows = await sums.select("model as group").groupBy("model").execute();
  } else if (opts.groupBy === "key") {
    rows = await sums.select("key_id as group").groupBy("key_id").execute();
  } else {
    // A literal divisor: integer division on both databases, and the same expression in GROUP BY.
    rows = await sums
      .select((eb) => eb(eb.ref("created_at"), "/", eb.lit(BUCKET_MS)).as("group"))
      .groupBy((eb) => eb(eb.ref("created_at"), "/", eb.lit(BUCKET_MS)))
      .execute();
  }
  const dayOf = opts.groupBy === "day" ? localDateFormatter(opts.tz) : null;
  const groups = new Map<string, { requests: number; cost: number; units: Record<keyof UnitSums, number | null> }>();
  for (const r of rows) {
    const key = dayOf ? dayOf(Math.floor(Number(r.group)) * BUCKET_MS) : r.group === null ? "none" : String(r.group);
    const g = groups.get(key) ?? { requests: 0, cost: 0, units: { characters: null, duration_ms: null, images: null, input_tokens: null, output_tokens: null, cached_tokens: null, minutes: null } };
    g.requests += Number(r.requests);
    g.cost += Number(r.cost ?? 0);
    for (const u of Object.keys(g.units) as (keyof UnitSums)[]) {
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
