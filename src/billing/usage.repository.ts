/**
 * The SQL of the usage log (D29, billing/usage.ts): a record's insert with the hold, its finish with the
 * settlement, and the record of a job. The unit columns are those of usage-units.ts. The PostgreSQL
 * one-statement forms write the same columns inside the ledger's statements (ledger-pg*.repository.ts).
 */
import { prepare } from "../storage/prepared.ts";
import type { UsageRecordsTable, UsageStatus } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";
import { UNIT_COLUMNS, type UnitValues, unitValueList } from "./usage-units.ts";

/** A usage record as inserted: storage/schema.ts `UsageRecordsTable` with a new record's status and no settlement yet. */
export type UsageRow = Omit<
  UsageRecordsTable,
  "status" | "cost_micros" | "fallback_layer" | "latency_ms" | "updated_at" | "user_id" | "realtime" | "session_ms" | "contexts" | "close_code"
> & {
  status: "pending" | "processing";
  user_id: string | null;
};

/** What a finish writes: status, cost (micro-USD), the units measured (a null keeps the start's) and the fallback layer. */
export interface UsageEndValues {
  status: Exclude<UsageStatus, "pending" | "processing">;
  cost: Micros;
  units: UnitValues;
  fallbackLayer: number | null;
}

const ROW_FIELDS = ["id", "account_id", "user_id", "key_id", "mode", "model", "kind", "status", "job_id", "hold_micros", ...UNIT_COLUMNS, "created_at"] as const;

/** The values of a row in {@link ROW_FIELDS} order (the prepared insert's parameters). */
function rowValues(row: UsageRow): unknown[] {
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

/** Parameter of the first unit column in {@link finishStmt}; the fallback layer and the time follow the units. */
const FIRST_UNIT = 2;
const AFTER_UNITS = FIRST_UNIT + UNIT_COLUMNS.length;

// Finishing a record: status and cost, the units measured (a null keeps the start's), the fallback layer,
// and the latency since the record was made.
const finishStmt = prepare((db, p) =>
  db
    .updateTable("usage_records")
    .set((eb) => ({
      status: p<UsageStatus>(0),
      cost_micros: p<number>(1),
      ...(Object.fromEntries(UNIT_COLUMNS.map((c, i) => [c, eb.fn.coalesce(eb.val(p<number | null>(FIRST_UNIT + i)), eb.ref(c))])) as Record<
        (typeof UNIT_COLUMNS)[number],
        never
      >),
      fallback_layer: eb.fn.coalesce(eb.val(p<number | null>(AFTER_UNITS)), eb.ref("fallback_layer")),
      latency_ms: eb(eb.val(p<number>(AFTER_UNITS + 1)), "-", eb.ref("created_at")),
      updated_at: p<number>(AFTER_UNITS + 1),
    }))
    .where("id", "=", p<string>(AFTER_UNITS + 2)),
);

/** Finishes the record `requestId` with `v` at `now` (epoch ms); returns whether a record was updated. */
export async function finishUsageRow(db: Executor, requestId: string, v: UsageEndValues, now: number): Promise<boolean> {
  const res = await finishStmt(db, v.status, v.cost, ...unitValueList(v.units), v.fallbackLayer, now, requestId);
  return Number(res.numAffectedRows ?? 0) > 0;
}

/** The id of the usage record of job `jobId`, or null (jobs submitted before the usage log have none). */
export async function usageIdOfJob(db: Executor, jobId: string): Promise<string | null> {
  const row = await db.selectFrom("usage_records").select("id").where("job_id", "=", jobId).executeTakeFirst();
  return row?.id ?? null;
}

/** Marks the record `requestId` as a realtime socket's (D42, D43), in the transaction of its hold. */
export async function markUsageRealtime(db: Executor, requestId: string): Promise<void> {
  await db.updateTable("usage_records").set({ realtime: 1 }).where("id", "=", requestId).execute();
}

/**
 * Notes on the record `requestId` the units a realtime socket has delivered so far (a null unit is left
 * as it is), with the hold's persisted count, so that a record the sweep settles after a crash names what
 * was charged.
 */
export async function noteUsageUnits(db: Executor, requestId: string, units: UnitValues, now: number): Promise<void> {
  await db
    .updateTable("usage_records")
    .set((eb) => ({
      ...(Object.fromEntries(UNIT_COLUMNS.map((c) => [c, eb.fn.coalesce(eb.val(units[c]), eb.ref(c))])) as Record<(typeof UNIT_COLUMNS)[number], never>),
      updated_at: now,
    }))
    .where("id", "=", requestId)
    .execute();
}

/** What a realtime socket's record gets at its end (D42): the session's length, its contexts, its close code. */
export interface RealtimeEnd {
  /** How long the socket was open, ms. */
  sessionMs: number;
  /** Speech contexts used (null for a transcription socket). */
  contexts: number | null;
  /** The WebSocket close code, or null when unknown (the sweep settled it). */
  closeCode: number | null;
}

/** Writes the end of a realtime socket's record `requestId` (run it in the transaction of its settlement). */
export async function endRealtimeUsage(db: Executor, requestId: string, end: RealtimeEnd): Promise<void> {
  await db
    .updateTable("usage_records")
    .set({ session_ms: end.sessionMs, contexts: end.contexts, close_code: end.closeCode })
    .where("id", "=", requestId)
    .execute();
}

/** Sets what the record `requestId` holds, micro-USD: a realtime socket's hold grows (D42), in the growth's transaction. */
export async function noteUsageHold(db: Executor, requestId: string, holdMicros: number): Promise<void> {
  await db.updateTable("usage_records").set({ hold_micros: holdMicros }).where("id", "=", requestId).execute();
}

/**
 * Deletes up to `limit` usage records of `mode` created before `before` (epoch ms), the oldest first, in one
 * statement (D46 `RETENTION_USAGE_DAYS`; index `usage_mode_created`); returns how many it deleted. Ledger
 * entries that name them (`request_id`) stay as they are.
 */
export async function deleteUsageBefore(db: Executor, mode: "live" | "test", before: number, limit: number): Promise<number> {
  const res = await db
    .deleteFrom("usage_records")
    .where("id", "in", (eb) =>
      eb.selectFrom("usage_records").select("id").where("mode", "=", mode).where("created_at", "<", before).orderBy("created_at").limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
