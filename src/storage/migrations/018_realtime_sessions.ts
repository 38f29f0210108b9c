/**
 * Realtime sockets (D42, D43): a socket is one paid call whose hold grows block by block and whose
 * running count is persisted while it is open, so that a process killed mid-session loses at most a few
 * seconds of metering and the sweep settles its hold.
 *
 * - `holds`: `metered_micros` is what the session has charged so far (the price of the characters or
 *   seconds delivered, persisted at least every 5 s and at every extension) and `heartbeat_at` (epoch ms)
 *   when it was last persisted; both null for every other hold. The sweep captures `metered_micros` of an
 *   open hold whose heartbeat stopped and releases the rest (billing/ledger.ts); the sweep of synchronous
 *   holds leaves these alone.
 * - `usage_records`: `realtime` (0/1) marks a socket's record; `session_ms` how long the socket was open,
 *   `contexts` how many speech contexts it used, `close_code` the WebSocket close code it ended with
 *   (null while open, or when the sweep settled it).
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("holds").addColumn("metered_micros", "bigint").execute();
  await db.schema.alterTable("holds").addColumn("heartbeat_at", "bigint").execute();
  await db.schema.alterTable("usage_records").addColumn("realtime", "integer", (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable("usage_records").addColumn("session_ms", "bigint").execute();
  await db.schema.alterTable("usage_records").addColumn("contexts", "integer").execute();
  await db.schema.alterTable("usage_records").addColumn("close_code", "integer").execute();
}
