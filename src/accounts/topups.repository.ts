/**
 * SQL of the `topups` table (D33): one row per credited Stripe Checkout Session, keyed by the session id,
 * written in the transaction of its deposit (storage/migrations/013_topups.ts).
 */
import type { Executor } from "../billing/ledger.ts";

/**
 * Inserts the row of a credited session (amount in micro-USD, time in epoch ms).
 * @throws the driver's unique violation when the session was credited before (`isUniqueViolation`).
 */
export async function insertTopup(
  db: Executor,
  row: { sessionId: string; accountId: string; amountMicros: number; eventId: string; createdAt: number },
): Promise<void> {
  await db
    .insertInto("topups")
    .values({
      session_id: row.sessionId,
      account_id: row.accountId,
      amount_micros: row.amountMicros,
      event_id: row.eventId,
      created_at: row.createdAt,
    })
    .execute();
}
