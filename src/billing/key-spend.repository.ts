/**
 * The SQL of the key spend counters (D34, billing/key-spend.ts): the counter on `api_keys` that a counted
 * hold raises and its settlement lowers, the holds counted in it, and the usage log's sums that start it.
 * Amounts are micro-USD, periods and times epoch ms. Every function runs in the caller's transaction.
 */
import { sql } from "kysely";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";

/**
 * Counts `amountMicros` (> 0) against the key's counter for the period starting at `period`, if the key's
 * limit allows it (a key whose limit was removed meanwhile counts without a check). A counter still on an
 * earlier period starts again from 0; one already on a later period (another process's clock ran ahead)
 * stays there and the hold counts in it. Runs in the caller's transaction, which must also place the hold.
 * Returns the period the hold counts in, or null (nothing written) when it would pass the limit.
 */
export async function countKeySpend(trx: Executor, keyId: string, amountMicros: Micros, period: number): Promise<number | null> {
  const p = sql<number>`cast(${period} as bigint)`;
  const amount = sql<number>`cast(${amountMicros} as bigint)`;
  const current = sql<number>`(case when spent_period_start >= ${p} then spent_micros else 0 end)`;
  const row = await trx
    .updateTable("api_keys")
    .set({
      spent_micros: sql<number>`${current} + ${amount}`,
      spent_period_start: sql<number>`(case when spent_period_start > ${p} then spent_period_start else ${p} end)`,
    })
    .where("id", "=", keyId)
    .where((eb) => eb.or([eb("spend_limit_micros", "is", null), eb(sql<number>`${current} + ${amount}`, "<=", eb.ref("spend_limit_micros"))]))
    .returning("spent_period_start")
    .executeTakeFirst();
  return row ? Number(row.spent_period_start) : null;
}

/** The key's limit and what it has spent in the period starting at `period` (for the 402's message). */
export async function keySpendState(trx: Executor, keyId: string, period: number): Promise<{ limitMicros: Micros; spentMicros: Micros } | null> {
  const row = await trx
    .selectFrom("api_keys")
    .select(["spend_limit_micros", "spent_micros", "spent_period_start"])
    .where("id", "=", keyId)
    .executeTakeFirst();
  if (!row || row.spend_limit_micros === null) return null;
  return {
    limitMicros: Number(row.spend_limit_micros),
    spentMicros: Number(row.spent_period_start) >= period ? Number(row.spent_micros) : 0,
  };
}

/**
 * Gives `amountMicros` back to the counter a hold was counted in (a capture's unused part, a release, a
 * refund), in the settlement's transaction; nothing when the counter has moved on to another period.
 */
export async function uncountKeySpend(trx: Executor, keyId: string, period: number, amountMicros: Micros): Promise<void> {
  if (amountMicros <= 0) return;
  await trx
    .updateTable("api_keys")
    .set({ spent_micros: sql<number>`spent_micros - cast(${amountMicros} as bigint)` })
    .where("id", "=", keyId)
    .where("spent_period_start", "=", period)
    .execute();
}

/** {@link countedSpend} of several keys of the account since the same `fromMs`, in one query; keys with nothing spent map to 0. */
export async function countedSpendOfKeys(db: Executor, accountId: string, keyIds: readonly string[], fromMs: number): Promise<Map<string, Micros>> {
  const out = new Map<string, Micros>(keyIds.map((k) => [k, 0]));
  if (keyIds.length === 0) return out;
  const rows = await db
    .selectFrom("usage_records")
    .select([
      "key_id",
      sql<number>`coalesce(sum(case when status in ('pending', 'processing') then hold_micros when status = 'succeeded' then coalesce(cost_micros, 0) else 0 end), 0)`.as("spent"),
    ])
    .where("account_id", "=", accountId)
    .where("mode", "=", "live")
    .where("created_at", ">=", fromMs)
    .where("key_id", "in", [...keyIds])
    .groupBy("key_id")
    .execute();
  for (const r of rows) if (r.key_id !== null) out.set(r.key_id, Number(r.spent));
  return out;
}

/**
 * Marks the open holds of the key's live calls since `from` (epoch ms, the usage log says which calls are
 * the key's) as counted in the key's counter for the period starting at `from`, so their settlements give
 * back to it. Run before {@link setKeyCounter}: settlements lock holds before keys (no deadlock).
 */
export async function markHoldsCounted(trx: Executor, accountId: string, keyId: string, from: number): Promise<void> {
  await trx
    .updateTable("holds")
    .set({ key_id: keyId, key_period_start: from })
    .where("status", "=", "open")
    .where("account_id", "=", accountId)
    .where("created_at", ">=", from)
    .where("request_id", "in", (eb) =>
      eb.selectFrom("usage_records").select("id").where("key_id", "=", keyId).where("account_id", "=", accountId).where("mode", "=", "live").where("created_at", ">=", from),
    )
    .execute();
}

/** Sets the key's counter to `spentMicros` for the period starting at `from` (epoch ms). */
export async function setKeyCounter(trx: Executor, keyId: string, spentMicros: Micros, from: number): Promise<void> {
  await trx
    .updateTable("api_keys")
    .set({ spent_micros: spentMicros, spent_period_start: sql<number>`cast(${from} as bigint)` })
    .where("id", "=", keyId)
    .execute();
}
