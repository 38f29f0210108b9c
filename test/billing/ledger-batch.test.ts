/**
 * The PostgreSQL ledger batcher (billing/ledger-pg-batch.ts, issue 14): holds, captures and releases made
 * at the same moment share one statement, and each call still gets exactly the result it would get alone
 * in call order; the money invariants (docs/architecture.md 1, 2, 9) hold after every batch.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Kysely } from "kysely";
import {
  captureHold,
  getBalance,
  type Hold,
  InsufficientFundsError,
  ledgerSum,
  placeHold,
  releaseHold,
} from "../../src/billing/ledger.ts";
import { liveContext, type UsageStart } from "../../src/billing/usage.ts";
import { LEDGER_BATCH_MAX, pgLedgerBatcher } from "../../src/billing/ledger-pg-batch.ts";
import { openDatabase } from "../../src/storage/db.ts";
import type { Database } from "../../src/storage/schema.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const pg = BACKENDS.find((b) => b.name === "postgres");

/** Amounts that make the balance run out part-way, with small holds after large refused ones. */
function amounts(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return [10_000, 25_000, 40_000, 90_000, 150_000][x % 5];
  });
}

/** Which holds a balance accepts when they run one after the other: the greedy walk in call order. */
function sequential(balance: number, holds: number[]): { placed: boolean; balance: number }[] {
  let left = balance;
  return holds.map((a) => {
    if (a <= left) {
      left -= a;
      return { placed: true, balance: left };
    }
    return { placed: false, balance: left };
  });
}

function usage(kind: UsageStart["kind"] = "speech"): UsageStart {
  return { ...liveContext(), kind, units: { characters: 12 } };
}

describe("ledger batches on postgres", { skip: pg?.skip ?? "no postgres backend" }, () => {
  let gw: TestGateway;
  let db: Kysely<Database>;
  before(async () => {
    gw = await startGateway("postgres");
    db = gw.services.db.kysely;
  });
  after(async () => {
    await gw?.close();
  });

  /** Balance >= 0, == ledger sum, and each entry's balance_after is the running sum in seq order (D17). */
  async function invariants(accountId: string): Promise<number> {
    const balance = await getBalance(db, accountId);
    assert.ok(balance !== null && balance >= 0, "balance is never negative");
    assert.equal(balance, await ledgerSum(db, accountId), "balance equals the ledger sum");
    const rows = await db
      .selectFrom("ledger_entries")
      .select(["seq", "kind", "amount_micros", "balance_after_micros"])
      .where("account_id", "=", accountId)
      .orderBy("seq", "asc")
      .execute();
    let running = 0;
    for (const r of rows) {
      running += Number(r.amount_micros);
      assert.equal(Number(r.balance_after_micros), running, `balance_after of entry ${r.seq} (${r.kind})`);
    }
    assert.equal(running, balance);
    return balance;
  }

  test("parallel holds on one account: exactly the ones a sequential run places, in call order", async () => {
    const u = await gw.register();
    const want = amounts(60, 7);
    const stats = pgLedgerBatcher(db).stats;
    const before = { ...stats };
    const results = await Promise.allSettled(
      want.map((amountMicros) => placeHold(db, { accountId: u.org_id, amountMicros, reference: "m", usage: usage() })),
    );
    const expected = sequential(500_000, want);
    results.forEach((r, i) => {
      const e = expected[i];
      if (e.placed) {
        assert.equal(r.status, "fulfilled", `hold ${i} of ${want[i]} is placed`);
        assert.equal((r as PromiseFulfilledResult<Hold>).value.balanceAfterMicros, e.balance);
      } else {
        assert.equal(r.status, "rejected", `hold ${i} of ${want[i]} is refused`);
        const err = (r as PromiseRejectedResult).reason as unknown;
        assert.ok(err instanceof InsufficientFundsError);
        assert.equal(err.balanceMicros, e.balance, "the refusal names the balance left before it");
      }
    });
    assert.ok(expected.some((e) => !e.placed) && expected.some((e) => e.placed));
    assert.equal(await invariants(u.org_id), expected.at(-1)?.balance);
    // Holds were batched: far fewer statements than calls.
    assert.ok(stats.batches > before.batches, "at least one batch statement ran");
    assert.ok(stats.requeued > before.requeued, "small holds after a refused one went to the next batch");
    assert.ok(stats.statements - before.statements < want.length / 2, `${stats.statements - before.statements} statements`);
    // Every placed hold has its usage record, a refused one none.
    const records = await db.selectFrom("usage_records").select(["status", "hold_micros"]).where("account_id", "=", u.org_id).execute();
    assert.equal(records.length, expected.filter((e) => e.placed).length);
    for (const r of records) assert.equal(r.status, "processing");
  });

  test("parallel holds over many accounts: each account as if alone", async () => {
    const users = await Promise.all(Array.from({ length: 8 }, () => gw.register()));
    const plans = users.map((_, i) => amounts(15, 100 + i));
    // Interleaved: call k goes to account k % 8.
    const calls: Promise<Hold>[][] = users.map(() => []);
    for (let k = 0; k < 15; k++) {
      users.forEach((user, i) => calls[i].push(placeHold(db, { accountId: user.org_id, amountMicros: plans[i][k], usage: usage() })));
    }
    const settled = await Promise.all(calls.map((c) => Promise.allSettled(c)));
    for (const [i, user] of users.entries()) {
      const results = settled[i];
      const expected = sequential(500_000, plans[i]);
      assert.deepEqual(
        results.map((r) => r.status === "fulfilled"),
        expected.map((e) => e.placed),
        `account ${i}`,
      );
      assert.equal(await invariants(user.org_id), expected.at(-1)?.balance);
    }
  });

  test("more calls than one batch holds: all served, in order", async () => {
    const u = await gw.register();
    const n = LEDGER_BATCH_MAX * 2 + 50;
    const holds = await Promise.all(Array.from({ length: n }, () => placeHold(db, { accountId: u.org_id, amountMicros: 1_000 })));
    assert.deepEqual(
      holds.map((h) => h.balanceAfterMicros),
      Array.from({ length: n }, (_, i) => 500_000 - (i + 1) * 1_000),
    );
    assert.equal(await invariants(u.org_id), 500_000 - n * 1_000);
    await Promise.all(holds.map((h, i) => (i % 3 === 0 ? releaseHold(db, h.id) : captureHold(db, h.id, 400))));
    const captured = holds.filter((_, i) => i % 3 !== 0).length;
    assert.equal(await invariants(u.org_id), 500_000 - captured * 400);
  });

  test("captures and releases in parallel over many accounts; usage records finished", async () => {
    const users = await Promise.all(Array.from({ length: 6 }, () => gw.register()));
    const holds = await Promise.all(
      users.flatMap((user) =>
        Array.from({ length: 10 }, () => placeHold(db, { accountId: user.org_id, amountMicros: 30_000, reference: "m", usage: usage() })),
      ),
    );
    const finals = holds.map((_, i) => (i % 4 === 0 ? null : (i * 997) % 30_001)); // null: release; some captures of 0
    const settled = await Promise.all(
      holds.map((h, i) => {
        const final = finals[i];
        return final === null
          ? releaseHold(db, h.id, { status: "failed" })
          : captureHold(db, h.id, final, { status: "succeeded", units: { characters: 20 }, fallbackLayer: 1 });
      }),
    );
    assert.ok(settled.every((s) => s !== null));
    for (const user of users) {
      const charged = holds.reduce((sum, h, i) => (h.accountId === user.org_id ? sum + (finals[i] ?? 0) : sum), 0);
      assert.equal(await invariants(user.org_id), 500_000 - charged);
    }
    const records = await db
      .selectFrom("usage_records")
      .select(["id", "status", "cost_micros", "characters", "fallback_layer", "latency_ms"])
      .where("account_id", "in", users.map((x) => x.org_id))
      .execute();
    assert.equal(records.length, holds.length);
    const holdRows = await db.selectFrom("holds").select(["id", "request_id", "status", "captured_micros"]).where("id", "in", holds.map((h) => h.id)).execute();
    const byRequest = new Map(records.map((r) => [r.id, r]));
    for (const [i, h] of holds.entries()) {
      const row = holdRows.find((r) => r.id === h.id);
      assert.ok(row?.request_id);
      const rec = byRequest.get(row.request_id);
      const final = finals[i];
      if (final === null) {
        assert.equal(row.status, "released");
        assert.equal(row.captured_micros, null);
        assert.deepEqual([rec?.status, Number(rec?.cost_micros), Number(rec?.characters)], ["failed", 0, 12]);
      } else {
        assert.equal(row.status, "captured");
        assert.equal(Number(row.captured_micros), final);
        assert.deepEqual([rec?.status, Number(rec?.cost_micros), Number(rec?.characters), rec?.fallback_layer], ["succeeded", final, 20, 1]);
      }
      assert.ok(rec?.latency_ms !== null && Number(rec?.latency_ms) >= 0);
    }
    // Ledger kinds: each capture above 0 wrote hold_release then charge, each release or capture of 0 a hold_release.
    const kinds = await db.selectFrom("ledger_entries").select(["kind"]).where("hold_id", "in", holds.map((h) => h.id)).execute();
    const charges = finals.filter((f) => f !== null && f > 0).length;
    assert.equal(kinds.filter((k) => k.kind === "charge").length, charges);
    assert.equal(kinds.filter((k) => k.kind === "hold_release").length, holds.length);
  });

  test("two processes batching holds and captures on the same accounts in opposite orders: no deadlock, no fallback", async () => {
    // A second database handle has its own batcher, as another gateway process would.
    const other = openDatabase(gw.services.config.databaseUrl);
    try {
      const users = await Promise.all(Array.from({ length: 6 }, () => gw.register()));
      const ids = users.map((x) => x.org_id);
      const fallbacks = [pgLedgerBatcher(db).stats.fallbacks, pgLedgerBatcher(other.kysely).stats.fallbacks];
      // Enough rounds for statements of the two handles to overlap: with the accounts locked in random
      // order instead of by id, this run saw 27 deadlocks (each one a second of PostgreSQL's
      // deadlock_timeout and a fallback).
      const rounds = 40;
      const loop = async (h: Kysely<Database>, order: string[]) => {
        for (let round = 0; round < rounds; round++) {
          const holds = await Promise.all(order.map((accountId) => placeHold(h, { accountId, amountMicros: 2_000, usage: usage() })));
          await Promise.all(holds.map((x, i) => (i % 2 ? releaseHold(h, x.id, { status: "failed" }) : captureHold(h, x.id, 1_000, { status: "succeeded" }))));
        }
      };
      const reversed = [...ids].reverse();
      await Promise.all([loop(db, ids), loop(other.kysely, reversed), loop(db, reversed), loop(other.kysely, ids)]);
      assert.deepEqual([pgLedgerBatcher(db).stats.fallbacks, pgLedgerBatcher(other.kysely).stats.fallbacks], fallbacks);
      for (const [i, id] of ids.entries()) {
        // 4 x rounds holds per account; those at the even positions of each order captured at 1_000.
        const captured = [ids, reversed, reversed, ids].reduce((n, order) => n + (order.indexOf(id) % 2 === 0 ? rounds : 0), 0);
        assert.equal(await invariants(id), 500_000 - captured * 1_000, `account ${i}`);
      }
    } finally {
      await other.close();
    }
  });

  test("a capture of a hold already settled fails alone; two settlements of one hold in one moment: the first wins", async () => {
    const u = await gw.register();
    const [h1, h2, h3, h4] = await Promise.all(
      Array.from({ length: 4 }, () => placeHold(db, { accountId: u.org_id, amountMicros: 50_000 })),
    );
    await captureHold(db, h1.id, 10_000);
    const results = await Promise.allSettled([
      captureHold(db, h1.id, 10_000), // already captured
      captureHold(db, h2.id, 20_000),
      captureHold(db, h2.id, 20_000), // same hold again, same moment
      releaseHold(db, h3.id),
      captureHold(db, h4.id, 50_001), // above the hold
      releaseHold(db, h1.id), // already captured: nothing
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ["rejected", "fulfilled", "rejected", "fulfilled", "rejected", "fulfilled"],
    );
    assert.match(String((results[0] as PromiseRejectedResult).reason), /not open/);
    assert.equal((results[5] as PromiseFulfilledResult<unknown>).value, null);
    // h4 is still open (50_000 held); charged 10_000 + 20_000.
    assert.equal(await invariants(u.org_id), 500_000 - 30_000 - 50_000);
    await releaseHold(db, h4.id);
    assert.equal(await invariants(u.org_id), 470_000);
  });

  test("a batch statement that fails runs its calls one by one: only the faulty call fails", async () => {
    const u = await gw.register();
    const taken = usage();
    await placeHold(db, { accountId: u.org_id, amountMicros: 1_000, usage: taken });
    const stats = pgLedgerBatcher(db).stats;
    const fallbacks = stats.fallbacks;
    // The fourth reuses a request id: its usage record violates the primary key, which fails the batch.
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        placeHold(db, { accountId: u.org_id, amountMicros: 10_000, usage: i === 3 ? { ...taken } : usage() }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ["fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"],
    );
    assert.ok(!((results[3] as PromiseRejectedResult).reason instanceof InsufficientFundsError));
    assert.equal(stats.fallbacks, fallbacks + 1);
    assert.equal(await invariants(u.org_id), 500_000 - 1_000 - 5 * 10_000);
  });

  test("a hold for an unknown account is refused; inside a transaction a hold is not batched and rolls back with it", async () => {
    const u = await gw.register();
    const [missing, ok] = await Promise.allSettled([
      placeHold(db, { accountId: "usr_missing", amountMicros: 1_000 }),
      placeHold(db, { accountId: u.org_id, amountMicros: 1_000 }),
    ]);
    assert.equal(missing.status, "rejected");
    assert.ok((missing as PromiseRejectedResult).reason instanceof InsufficientFundsError);
    assert.equal(((missing as PromiseRejectedResult).reason as InsufficientFundsError).balanceMicros, null);
    assert.equal(ok.status, "fulfilled");
    const statements = pgLedgerBatcher(db).stats.statements;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await placeHold(trx, { accountId: u.org_id, amountMicros: 2_000 });
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.equal(pgLedgerBatcher(db).stats.statements, statements);
    assert.equal(await invariants(u.org_id), 499_000);
  });
});
