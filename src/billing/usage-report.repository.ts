/**
 * The SQL of the usage log's reads (D29, billing/usage-report.ts): a page of records, one record, and the
 * records of a window summed by group. Every query is one index range scan on `(account_id, mode, ...,
 * created_at, id)` (migration 008 lists the plans); rows are mapped to the API's shapes here, the
 * grouping by local day is usage-report.ts's.
 */
import type { KeyMode, UsageKind, UsageStatus } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";
import { UNIT_COLUMNS, type UnitValues, type UnitsView, unitsView } from "./usage-units.ts";

/** One usage record (D29). Amounts in micro-USD, times in ms since the epoch. */
export interface UsageRecord {
  id: string;
  /** The organization (D41). */
  accountId: string;
  /** The member who made the call (D41), or null (records from before it knew). */
  userId: string | null;
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
  /**
   * A realtime socket's record (D42, D43): how long the socket was open (ms, null until it closed), the
   * speech contexts it used (null for transcription) and its close code (null while open or when the sweep
   * settled it); null for every other record.
   */
  realtime: { sessionMs: number | null; contexts: number | null; closeCode: number | null } | null;
}

const RECORD_COLUMNS = [
  "id",
  "account_id",
  "user_id",
  "key_id",
  "model",
  "kind",
  "status",
  "mode",
  "cost_micros",
  "hold_micros",
  ...UNIT_COLUMNS,
  "fallback_layer",
  "latency_ms",
  "job_id",
  "created_at",
  "realtime",
  "session_ms",
  "contexts",
  "close_code",
] as const;

function recordOf(r: UnitValues & {
  id: string;
  account_id: string;
  user_id: string | null;
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
  realtime: number;
  session_ms: number | null;
  contexts: number | null;
  close_code: number | null;
}): UsageRecord {
  const n = (v: number | null) => (v === null ? null : Number(v));
  return {
    id: r.id,
    accountId: r.account_id,
    userId: r.user_id,
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
    realtime: Number(r.realtime) === 1 ? { sessionMs: n(r.session_ms), contexts: n(r.contexts), closeCode: n(r.close_code) } : null,
  };
}

/** Filters of `GET /v1/requests`; times in ms since the epoch (`to` exclusive). */
export interface RequestFilters {
  limit: number;
  after: string | null;
  model: string | null;
  keyId: string | null;
  /** Only calls of this member (D41). */
  userId?: string | null;
  status: UsageStatus | null;
  from: number | null;
  to: number | null;
  mode: KeyMode;
}

/**
 * Up to `f.limit + 1` records of the account and mode matching `f`, newest first (by time, then id); the
 * extra one tells the caller more follow. `after` is the id of the last record of the previous page; one
 * that names no record of this account and mode is ignored (the first page).
 */
export async function requestsPage(db: Executor, accountId: string, f: RequestFilters): Promise<UsageRecord[]> {
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
  if (f.userId != null) q = q.where("user_id", "=", f.userId);
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
  return rows.map(recordOf);
}

/** The record `id` of the account (either mode), or null for an unknown id or another account's. */
export async function requestOfAccount(db: Executor, accountId: string, id: string): Promise<UsageRecord | null> {
  const row = await db
    .selectFrom("usage_records")
    .select([...RECORD_COLUMNS])
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  return row ? recordOf(row) : null;
}

/** How `GET /v1/usage` groups: `member` and `user` both by member (the user id; `user` is the older name). */
export type GroupBy = "day" | "model" | "key" | "member" | "user";

/**
 * One row of {@link usageSums}: the group (the model, the key id or null, the user id or null, or for `day` the index of the
 * `bucketMs` UTC bucket since the epoch), its record count, cost (micro-USD) and unit sums.
 */
export type UsageSumRow = UnitValues & { group: string | number | null; requests: number; cost: number | null };

/**
 * The account's records in `[from, to)` (ms since the epoch) and `mode`, summed by model, by key, by
 * member or (for `day`) by UTC bucket of `bucketMs`. Pending and processing records count as requests with no cost yet.
 */
export async function usageSums(
  db: Executor,
  accountId: string,
  opts: { from: number; to: number; groupBy: GroupBy; mode: KeyMode; bucketMs: number },
): Promise<UsageSumRow[]> {
  const base = db
    .selectFrom("usage_records")
    .where("account_id", "=", accountId)
    .where("mode", "=", opts.mode)
    .where("created_at", ">=", opts.from)
    .where("created_at", "<", opts.to);
  const sums = base.select((eb) => [
    eb.fn.countAll<number>().as("requests"),
    eb.fn.sum<number>(eb.fn.coalesce("cost_micros", eb.lit(0))).as("cost"),
    ...UNIT_COLUMNS.map((c) => eb.fn.sum<number | null>(c).as(c)),
  ]);
  if (opts.groupBy === "model") {
    return (await sums.select("model as group").groupBy("model").execute()) as UsageSumRow[];
  }
  if (opts.groupBy === "key") {
    return (await sums.select("key_id as group").groupBy("key_id").execute()) as UsageSumRow[];
  }
  if (opts.groupBy === "member" || opts.groupBy === "user") {
    // D41: by member (the key's creator or the session's user); records without one group as `none`.
    return (await sums.select("user_id as group").groupBy("user_id").execute()) as UsageSumRow[];
  }
  // A literal divisor: integer division on both databases, and the same expression in GROUP BY.
  return (await sums
    .select((eb) => eb(eb.ref("created_at"), "/", eb.lit(opts.bucketMs)).as("group"))
    .groupBy((eb) => eb(eb.ref("created_at"), "/", eb.lit(opts.bucketMs)))
    .execute()) as UsageSumRow[];
}

/**
 * The characters the account was billed for in `[from, to)` (ms since the epoch): the sum of `characters`
 * over its live (not test-mode, D32), succeeded records created in the window (speech records them; the
 * ElevenLabs dialect's `character_count`, D36). A record still pending, failed or refunded counts
 * nothing; 0 when none counts. One range scan of the index `usage_account_status` (migration 008).
 */
export async function billedCharacters(db: Executor, accountId: string, from: number, to: number): Promise<number> {
  const row = await db
    .selectFrom("usage_records")
    .select((eb) => eb.fn.sum<number | string | null>("characters").as("chars"))
    .where("account_id", "=", accountId)
    .where("mode", "=", "live")
    .where("status", "=", "succeeded")
    .where("created_at", ">=", from)
    .where("created_at", "<", to)
    .executeTakeFirst();
  // PostgreSQL's SUM of a bigint is a numeric, read as a string.
  return Number(row?.chars ?? 0);
}
