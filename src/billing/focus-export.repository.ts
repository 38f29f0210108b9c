/**
 * The SQL of the FOCUS export (billing/focus-export.ts): an organization's charged calls of a window
 * summed by UTC day, model, member and key, and the organization's display name. One range scan of the
 * index `usage_account_status` (`account_id, mode, status, created_at, id`, migration 008) per export.
 */
import type { KeyMode, UsageKind } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";
import { UNIT_COLUMNS, type UnitValues } from "./usage-units.ts";

/** One UTC day in ms (the width of a FOCUS charge period here). */
export const DAY_MS = 86_400_000;

/**
 * One group of {@link chargedSums}: the UTC day (days since the epoch), the model and kind, the member
 * (null: a record from before organizations knew) and key (null: a call made without one), the number of calls,
 * what they were charged (micro-USD) and their unit sums (null where no call of the group has the unit).
 */
export interface ChargedSum {
  day: number;
  model: string;
  kind: UsageKind;
  userId: string | null;
  keyId: string | null;
  requests: number;
  costMicros: Micros;
  units: UnitValues;
}

/**
 * The organization's charged calls created in `[from, to)` (ms since the epoch, whole UTC days) in
 * `mode`, summed by UTC day, model, kind, member and key. A charged call is a record in status
 * `succeeded`: its charge was captured and kept (a refunded call's record is `refunded` and costs 0;
 * failed, expired and unfinished calls charge nothing). Groups come ordered by day, model, member, key.
 */
export async function chargedSums(db: Executor, accountId: string, opts: { from: number; to: number; mode: KeyMode }): Promise<ChargedSum[]> {
  // A literal divisor: integer division on both databases, and the same expression in GROUP BY.
  const rows = await db
    .selectFrom("usage_records")
    .where("account_id", "=", accountId)
    .where("mode", "=", opts.mode)
    .where("status", "=", "succeeded")
    .where("created_at", ">=", opts.from)
    .where("created_at", "<", opts.to)
    .select((eb) => [
      eb(eb.ref("created_at"), "/", eb.lit(DAY_MS)).as("day"),
      "model",
      "kind",
      "user_id",
      "key_id",
      eb.fn.countAll<number>().as("requests"),
      eb.fn.sum<number>(eb.fn.coalesce("cost_micros", eb.lit(0))).as("cost"),
      ...UNIT_COLUMNS.map((c) => eb.fn.sum<number | null>(c).as(c)),
    ])
    .groupBy((eb) => [eb(eb.ref("created_at"), "/", eb.lit(DAY_MS)), "model", "kind", "user_id", "key_id"])
    .execute();
  const out = rows.map(
    (r): ChargedSum => ({
      // PostgreSQL's SUM of a bigint is a numeric and its COUNT a bigint, both read as strings.
      day: Math.floor(Number(r.day)),
      model: r.model,
      kind: r.kind,
      userId: r.user_id,
      keyId: r.key_id,
      requests: Number(r.requests),
      costMicros: Number(r.cost ?? 0),
      units: Object.fromEntries(UNIT_COLUMNS.map((c) => [c, r[c] === null ? null : Number(r[c])])) as UnitValues,
    }),
  );
  const cmp = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);
  return out.sort((a, b) => a.day - b.day || cmp(a.model, b.model) || cmp(a.userId, b.userId) || cmp(a.keyId, b.keyId));
}

/** The organization's display name (a personal organization: its owner's email), or null when it has none. */
export async function organizationName(db: Executor, accountId: string): Promise<string | null> {
  const row = await db.selectFrom("accounts").select("name").where("id", "=", accountId).executeTakeFirst();
  return row?.name ?? null;
}
