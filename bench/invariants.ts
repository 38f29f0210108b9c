/**
 * The money invariants of docs/architecture.md, checked on a benchmark's database once its gateway has stopped
 * (issue "Fast on the scale path" point 3: no correctness traded for speed):
 * - every account's balance equals the sum of its ledger entries (invariant 1);
 * - no hold is left open (invariant 2: every call and job settled);
 * - per account, what the live usage records say was charged equals what the ledger charged net of
 *   refunds (invariant 9).
 * Returns the problems found (empty when all hold); amounts in micro-USD.
 */
import { sql } from "kysely";
import { openDatabase } from "../src/storage/db.ts";

/** What {@link checkInvariants} found. */
export interface InvariantReport {
  accounts: number;
  problems: string[];
}

/** Checks the invariants on the database at `databaseUrl` (SQLite `sqlite:` path or `postgres://`). */
export async function checkInvariants(databaseUrl: string): Promise<InvariantReport> {
  const db = openDatabase(databaseUrl, { poolSize: 2 });
  const problems: string[] = [];
  try {
    const k = db.kysely;
    const balances = await k
      .selectFrom("accounts as a")
      .leftJoin(
        k.selectFrom("ledger_entries").select(["account_id", sql<string>`sum(amount_micros)`.as("sum")]).groupBy("account_id").as("l"),
        "l.account_id",
        "a.id",
      )
      .select(["a.id", "a.balance_micros", "l.sum"])
      .execute();
    for (const b of balances) {
      const sum = Number(b.sum ?? 0);
      if (Number(b.balance_micros) !== sum) problems.push(`account ${b.id}: balance ${b.balance_micros} != ledger sum ${sum}`);
      if (Number(b.balance_micros) < 0) problems.push(`account ${b.id}: negative balance ${b.balance_micros}`);
    }
    const open = await k.selectFrom("holds").select(sql<string>`count(*)`.as("n")).where("status", "=", "open").executeTakeFirstOrThrow();
    if (Number(open.n) > 0) problems.push(`${open.n} holds left open`);
    // Net charge per account: charges are negative entries, refunds of a charge positive ones.
    const charged = await k
      .selectFrom("ledger_entries")
      .select(["account_id", sql<string>`sum(amount_micros)`.as("net")])
      .where("kind", "in", ["charge", "refund"])
      .groupBy("account_id")
      .execute();
    const used = await k
      .selectFrom("usage_records")
      .select(["account_id", sql<string>`sum(coalesce(cost_micros, 0))`.as("cost")])
      .where("mode", "=", "live")
      .groupBy("account_id")
      .execute();
    const usage = new Map(used.map((u) => [u.account_id, Number(u.cost)]));
    const ledger = new Map(charged.map((c) => [c.account_id, -Number(c.net)]));
    for (const id of new Set([...usage.keys(), ...ledger.keys()])) {
      const u = usage.get(id) ?? 0;
      const l = ledger.get(id) ?? 0;
      if (u !== l) problems.push(`account ${id}: usage records ${u} != ledger charges ${l}`);
    }
    return { accounts: balances.length, problems };
  } finally {
    await db.close();
  }
}
