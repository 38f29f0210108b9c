/**
 * Read-only figures about money in flight, for monitoring (the `/metrics` gauges of holds).
 */
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";

/** Open holds across every account: how many, and their total amount in micro-USD. */
export async function openHoldTotals(db: Executor): Promise<{ count: number; micros: Micros }> {
  const row = await db
    .selectFrom("holds")
    .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.coalesce(eb.fn.sum<number>("amount_micros"), eb.lit(0)).as("micros")])
    .where("status", "=", "open")
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), micros: Number(row.micros) };
}
