/**
 * The SQL of low-balance alerts (D34, webhooks/balance-alerts.ts): the threshold and `low_balance_armed`
 * columns of an account, and the one conditional UPDATE that moves the state (its module comment says why
 * one statement makes the event fire once per fall). Amounts in micro-USD.
 */
import type { ExpressionBuilder, Kysely, Transaction } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import type { Micros } from "../money.ts";
import type { Database } from "../storage/schema.ts";

/**
 * The accounts whose alert state must move (with a threshold set): armed with the balance below the
 * threshold (it fires), or disarmed with the balance strictly above it (it re-arms).
 */
function alertDue(eb: ExpressionBuilder<Database, "accounts">) {
  return eb.or([
    eb.and([eb("low_balance_armed", "=", 1), eb("balance_micros", "<", eb.ref("low_balance_micros"))]),
    eb.and([eb("low_balance_armed", "=", 0), eb("balance_micros", ">", eb.ref("low_balance_micros"))]),
  ]);
}

/** The account's balance, threshold (null: no alert) and whether the alert is armed; null when there is no such account. */
export async function alertState(db: Executor, accountId: string): Promise<{ balanceMicros: Micros; thresholdMicros: Micros | null; armed: boolean } | null> {
  const row = await db
    .selectFrom("accounts")
    .select(["balance_micros", "low_balance_micros", "low_balance_armed"])
    .where("id", "=", accountId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    balanceMicros: Number(row.balance_micros),
    thresholdMicros: row.low_balance_micros === null ? null : Number(row.low_balance_micros),
    armed: Number(row.low_balance_armed) === 1,
  };
}

/**
 * Moves the account's alert state if it is due ({@link alertDue}): disarms it when the balance is below
 * the threshold, arms it otherwise, in one conditional UPDATE (whoever runs it first wins). Returns the
 * state after the move, or null when nothing was due.
 */
export async function moveAlertState(trx: Transaction<Database>, accountId: string): Promise<{ balanceMicros: Micros; thresholdMicros: Micros; armed: boolean } | null> {
  const row = await trx
    .updateTable("accounts")
    .set((eb) => ({
      low_balance_armed: eb.case().when("balance_micros", "<", eb.ref("low_balance_micros")).then(0).else(1).end(),
    }))
    .where("id", "=", accountId)
    .where("low_balance_micros", "is not", null)
    .where(alertDue)
    .returning(["balance_micros", "low_balance_micros", "low_balance_armed"])
    .executeTakeFirst();
  if (!row) return null;
  return { balanceMicros: Number(row.balance_micros), thresholdMicros: Number(row.low_balance_micros), armed: Number(row.low_balance_armed) === 1 };
}

/** The account's threshold (null: no alert), or null when there is no such account. */
export async function alertThreshold(db: Executor, accountId: string): Promise<{ thresholdMicros: Micros | null } | null> {
  const row = await db.selectFrom("accounts").select("low_balance_micros").where("id", "=", accountId).executeTakeFirst();
  if (!row) return null;
  return { thresholdMicros: row.low_balance_micros == null ? null : Number(row.low_balance_micros) };
}

/** Up to `limit` ids of accounts with a threshold whose alert state is due ({@link alertDue}). */
export async function accountsAlertDue(db: Kysely<Database>, limit: number): Promise<string[]> {
  const due = await db
    .selectFrom("accounts")
    .select("id")
    .where("low_balance_micros", "is not", null)
    .where(alertDue)
    .limit(limit)
    .execute();
  return due.map((r) => r.id);
}

/** Sets (micro-USD) or removes (null) the account's threshold, armed. */
export async function setAlertThreshold(db: Executor, accountId: string, micros: Micros | null): Promise<void> {
  await db.updateTable("accounts").set({ low_balance_micros: micros, low_balance_armed: 1 }).where("id", "=", accountId).execute();
}
