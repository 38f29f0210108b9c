/**
 * The usage log (D29): one record per paid call, written where its money moves.
 *
 * A record is inserted with the call's hold (status `processing` for a synchronous call, `pending` for a
 * job) and finished in the transaction that captures, releases or refunds it, so for every call the
 * record's `cost_micros` is exactly what the ledger charged (design.md invariant 9). A test-mode call
 * (D32) writes the same record with no hold and no ledger entry. This module holds the record's shapes
 * and its portable writes; the PostgreSQL single-statement hold and capture write it inside their own
 * statement (billing/ledger-pg.repository.ts).
 */
import type { KeySpend } from "./key-spend.ts";
import type { Kysely, Transaction } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import { prepare } from "../storage/prepared.ts";
import type { Database, KeyMode, UsageKind, UsageRecordsTable, UsageStatus } from "../storage/schema.ts";
import type { Micros } from "./money.ts";

type Executor = Kysely<Database> | Transaction<Database>;

export type { KeyMode, UsageKind, UsageStatus };

/**
 * The units of a call (D29), whichever apply: speech `characters`; music, sound effects and video
 * `seconds`; images `images`; chat the three token counts (`inputTokens` includes `cachedTokens`, as
 * OpenAI's `prompt_tokens`); transcription and understanding billed `minutes`; voice design and cloning
 * none.
 */
export interface Units {
  characters?: number;
  seconds?: number;
  images?: number;
  inputTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
  minutes?: number;
}

/** Who makes a paid call and under which request (D29, D32); built once per HTTP request. */
export interface CallContext {
  /** `req_<random>`, the `X-Svc-Request-Id` of the answer and the id of the usage record. */
  requestId: string;
  /** The API key used, or null (a session token). */
  keyId: string | null;
  /** `test` for a test-mode key: simulator only, no money moves (D32). */
  mode: KeyMode;
  /** The key's spend limit (D34), counted with the call's hold; null or absent when the key has none. */
  keySpend?: KeySpend | null;
}

/** A context for a call made outside an HTTP request (direct service calls in tests): a fresh live request. */
export function liveContext(): CallContext {
  return { requestId: newTimeOrderedId("req"), keyId: null, mode: "live" };
}

/** What a usage record starts with; the account, model, hold amount and job come from the hold request. */
export interface UsageStart extends CallContext {
  kind: UsageKind;
  /** Units known before the call (the rest can be noted before the capture). */
  units?: Units;
}

/** What a settlement writes on the record. `costMicros` is what the ledger charged (0 when nothing). */
export interface UsageEnd {
  status: Exclude<UsageStatus, "pending" | "processing">;
  costMicros: Micros;
  /** Units measured by the call; a unit left undefined keeps its value from the start. */
  units?: Units;
  fallbackLayer?: number;
}

/** The unit columns of `units` (null where a unit does not apply); seconds are stored as milliseconds. */
export function unitColumns(units: Units = {}): {
  characters: number | null;
  duration_ms: number | null;
  images: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  minutes: number | null;
} {
  const n = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? null : Math.round(v));
  return {
    characters: n(units.characters),
    duration_ms: units.seconds === undefined ? null : n(units.seconds * 1000),
    images: n(units.images),
    input_tokens: n(units.inputTokens),
    output_tokens: n(units.outputTokens),
    cached_tokens: n(units.cachedTokens),
    minutes: n(units.minutes),
  };
}

/** A usage record as inserted: storage/schema.ts `UsageRecordsTable` with a new record's status and no settlement yet. */
export type UsageRow = Omit<UsageRecordsTable, "status" | "cost_micros" | "fallback_layer" | "latency_ms" | "updated_at"> & {
  status: "pending" | "processing";
};

/** The row of a record that starts now. */
export function usageRow(
  start: UsageStart,
  hold: { accountId: string; amountMicros: Micros; jobId?: string | null; model: string },
  now: number,
): UsageRow {
  return {
    id: start.requestId,
    account_id: hold.accountId,
    key_id: start.keyId,
    mode: start.mode,
    model: hold.model,
    kind: start.kind,
    status: hold.jobId ? "pending" : "processing",
    job_id: hold.jobId ?? null,
    hold_micros: hold.amountMicros,
    ...unitColumns(start.units),
    created_at: now,
  };
}

const ROW_FIELDS = [
  "id",
  "account_id",
  "key_id",
  "mode",
  "model",
  "kind",
  "status",
  "job_id",
  "hold_micros",
  "characters",
  "duration_ms",
  "images",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "minutes",
  "created_at",
] as const;

/** The values of a row in {@link ROW_FIELDS} order (the prepared insert's and the PostgreSQL CTE's parameters). */
export function rowValues(row: UsageRow): unknown[] {
  return ROW_FIELDS.map((f) => row[f]);
}

const insertStmt = prepare((db, p) =>
  db.insertInto("usage_records").values({
    ...(Object.fromEntries(ROW_FIELDS.map((f, i) => [f, p(i)])) as Record<(typeof ROW_FIELDS)[number], never>),
    cost_micros: null,
    latency_ms: null,
    updated_at: p<number>(ROW_FIELDS.indexOf("created_at")),
  }),
);

/** Inserts a record (in the hold's transaction when `db` is one). */
export async function insertUsage(db: Executor, row: UsageRow): Promise<void> {
  await insertStmt(db, ...rowValues(row));
}

// Finishing a record: status and cost, the units measured (a null keeps the start's), the fallback layer,
// and the latency since the record was made.
const finishStmt = prepare((db, p) =>
  db
    .updateTable("usage_records")
    .set((eb) => ({
      status: p<UsageStatus>(0),
      cost_micros: p<number>(1),
      characters: eb.fn.coalesce(eb.val(p<number | null>(2)), eb.ref("characters")),
      duration_ms: eb.fn.coalesce(eb.val(p<number | null>(3)), eb.ref("duration_ms")),
      images: eb.fn.coalesce(eb.val(p<number | null>(4)), eb.ref("images")),
      input_tokens: eb.fn.coalesce(eb.val(p<number | null>(5)), eb.ref("input_tokens")),
      output_tokens: eb.fn.coalesce(eb.val(p<number | null>(6)), eb.ref("output_tokens")),
      cached_tokens: eb.fn.coalesce(eb.val(p<number | null>(7)), eb.ref("cached_tokens")),
      minutes: eb.fn.coalesce(eb.val(p<number | null>(8)), eb.ref("minutes")),
      fallback_layer: eb.fn.coalesce(eb.val(p<number | null>(9)), eb.ref("fallback_layer")),
      latency_ms: eb(eb.val(p<number>(10)), "-", eb.ref("created_at")),
      updated_at: p<number>(10),
    }))
    .where("id", "=", p<string>(11)),
);

/** The parameters of a finish, in the order the statements above and in billing/ledger-pg.repository.ts take them. */
export function endValues(end: UsageEnd): {
  status: UsageEnd["status"];
  cost: Micros;
  units: ReturnType<typeof unitColumns>;
  fallbackLayer: number | null;
} {
  return { status: end.status, cost: end.costMicros, units: unitColumns(end.units), fallbackLayer: end.fallbackLayer ?? null };
}

/**
 * Finishes the record `requestId` (run it in the transaction that moves the call's money).
 * @returns whether a record was updated.
 */
export async function finishUsage(db: Executor, requestId: string, end: UsageEnd, now = Date.now()): Promise<boolean> {
  const v = endValues(end);
  const u = v.units;
  const res = await finishStmt(
    db,
    v.status,
    v.cost,
    u.characters,
    u.duration_ms,
    u.images,
    u.input_tokens,
    u.output_tokens,
    u.cached_tokens,
    u.minutes,
    v.fallbackLayer,
    now,
    requestId,
  );
  return Number(res.numAffectedRows ?? 0) > 0;
}

/**
 * Finishes the record of job `jobId` (the job's terminal transition, jobs/ended.ts).
 * @returns whether a record was updated (jobs submitted before the usage log have none).
 */
export async function finishJobUsage(db: Executor, jobId: string, end: UsageEnd, now = Date.now()): Promise<boolean> {
  const row = await db.selectFrom("usage_records").select("id").where("job_id", "=", jobId).executeTakeFirst();
  if (!row) return false;
  return finishUsage(db, row.id, end, now);
}

/** The usage start of a call of `kind` in `call` (a fresh live request when there is none). */
export function usageFor(call: CallContext | undefined, kind: UsageKind, units?: Units): UsageStart {
  return { ...(call ?? liveContext()), kind, ...(units ? { units } : {}) };
}
