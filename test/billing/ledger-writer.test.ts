/**
 * The ledger's writer thread on SQLite (billing/ledger-writer.ts, issue 33): holds, captures and releases
 * made outside a transaction run on a worker thread with its own connection, and answer as they would on
 * the event loop: the same results, the same error classes with their fields, the money invariants under
 * concurrent writes from both threads, the ledger metrics counted where `GET /metrics` reads them, and the
 * event loop taking the calls back once the thread is gone.
 */
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";
import { after, before, describe, test } from "node:test";
import {
  captureHold,
  credit,
  getBalance,
  InsufficientFundsError,
  inTransaction,
  ledgerSum,
  placeHold,
  placeHoldAhead,
  releaseHold,
} from "../../src/billing/ledger.ts";
import type { BalanceEvents } from "../../src/billing/balance-events.ts";
import { ledgerWriterOf, startLedgerWriter } from "../../src/billing/ledger-writer.ts";
import { ledgerEntries } from "../../src/metrics.ts";
import { ThreadWriteLock } from "../../src/storage/sqlite-thread-lock.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("the ledger's writer thread (SQLite)", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  async function invariant(accountId: string): Promise<number> {
    const db = gw.services.db.kysely;
    const balance = await getBalance(db, accountId);
    assert.ok(balance !== null && balance >= 0, "balance is never negative");
    assert.equal(balance, await ledgerSum(db, accountId), "balance equals the ledger sum");
    return balance;
  }

  test("is on by default for an SQLite file, and off with SQLITE_LEDGER_THREAD=off", async () => {
    assert.ok(ledgerWriterOf(gw.services.db.kysely), "a writer is attached to the gateway's database");
    const off = await startGateway("sqlite", { SQLITE_LEDGER_THREAD: "off" });
    try {
      assert.equal(ledgerWriterOf(off.services.db.kysely), undefined);
    } finally {
      await off.close();
    }
  });

  test("a hold, a capture and a release give the results and entries of the event loop's ledger", async () => {
    const u = await gw.register();
    const db = gw.services.db.kysely;
    const rowsBefore = new ThreadWriteLock(gw.services.db.sqliteFile!.threadLock).rows();
    const hold = await placeHold(db, { accountId: u.org_id, amountMicros: 300_000, reference: "m" });
    assert.equal(hold.accountId, u.org_id);
    assert.equal(hold.amountMicros, 300_000);
    assert.equal(hold.balanceAfterMicros, 200_000);
    assert.equal(await invariant(u.org_id), 200_000, "committed before the hold returned");
    const settled = await captureHold(db, hold.id, 123_457);
    assert.deepEqual(settled, { chargedMicros: 123_457, balanceAfterMicros: 376_543 });
    const second = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
    assert.deepEqual(await releaseHold(db, second.id), { chargedMicros: 0, balanceAfterMicros: 376_543 });
    assert.equal(await releaseHold(db, second.id), null, "a second release changes nothing");
    assert.equal(await invariant(u.org_id), 376_543);
    const kinds = await db.selectFrom("ledger_entries").select(["kind", "amount_micros"]).where("account_id", "=", u.org_id).orderBy("seq").execute();
    assert.deepEqual(
      kinds.map((k) => [k.kind, Number(k.amount_micros)]),
      [
        ["signup_credit", 500_000],
        ["hold", -300_000],
        ["hold_release", 300_000],
        ["charge", -123_457],
        ["hold", -100_000],
        ["hold_release", 100_000],
      ],
    );
    // The checkpointer counts the thread's rows too (storage/sqlite-thread-lock.ts).
    assert.ok(new ThreadWriteLock(gw.services.db.sqliteFile!.threadLock).rows() > rowsBefore);
  });

  test("errors cross back as the classes the ledger throws, with their fields, and write nothing", async () => {
    const u = await gw.register();
    const db = gw.services.db.kysely;
    await assert.rejects(placeHold(db, { accountId: u.org_id, amountMicros: 600_000 }), (err: unknown) => {
      assert.ok(err instanceof InsufficientFundsError);
      assert.equal(err.neededMicros, 600_000);
      assert.equal(err.balanceMicros, 500_000);
      return true;
    });
    await assert.rejects(placeHold(db, { accountId: u.org_id, amountMicros: 0 }), RangeError);
    const hold = await placeHold(db, { accountId: u.org_id, amountMicros: 50_000 });
    await assert.rejects(captureHold(db, hold.id, 50_001), /is not open or is smaller than 50001/);
    await captureHold(db, hold.id, 50_000);
    await assert.rejects(captureHold(db, hold.id, 1), /is not open/);
    assert.equal(await invariant(u.org_id), 450_000);
  });

  test("concurrent holds on the writer and transactions on the event loop never overdraw (race)", async () => {
    const u = await gw.register();
    const db = gw.services.db.kysely;
    // 0.50 USD: 100 holds of 0.01 on the thread and 40 inside event-loop transactions ask for 1.40.
    const onThread = Array.from({ length: 100 }, () => placeHold(db, { accountId: u.org_id, amountMicros: 10_000 }).then((h) => h, (e: unknown) => e));
    const onLoop = Array.from({ length: 40 }, () =>
      inTransaction(db, (trx) => placeHold(trx, { accountId: u.org_id, amountMicros: 10_000 })).then((h) => h, (e: unknown) => e),
    );
    const credits = Array.from({ length: 5 }, () => credit(db, { accountId: u.org_id, kind: "adjustment", amountMicros: 20_000 }));
    const results = await Promise.all([...onThread, ...onLoop]);
    await Promise.all(credits);
    const placed = results.filter((r) => !(r instanceof Error)) as { id: string }[];
    assert.ok(results.every((r) => !(r instanceof Error) || r instanceof InsufficientFundsError), "every refusal is insufficient funds");
    // 0.50 + 5 x 0.02 = 0.60 covers at most 60 holds; at least the 50 of the start were placed.
    assert.ok(placed.length >= 50 && placed.length <= 60, `placed ${placed.length}`);
    assert.equal(await invariant(u.org_id), 600_000 - placed.length * 10_000);
    await Promise.all(placed.map((h, i) => (i % 2 ? captureHold(db, h.id, 5_000) : releaseHold(db, h.id))));
    const captured = Math.floor(placed.length / 2);
    assert.equal(await invariant(u.org_id), 600_000 - captured * 5_000);
    const open = await db.selectFrom("holds").select("id").where("account_id", "=", u.org_id).where("status", "=", "open").execute();
    assert.equal(open.length, 0);
  });

  test("a paid call's hold (placeHoldAhead) returns before its commit: its capture sees it, the event loop once committed, listeners after the commit", async () => {
    const u = await gw.register();
    const db = gw.services.db.kysely;
    const heard: number[] = [];
    let told!: () => void;
    const toldOnce = new Promise<void>((r) => (told = r));
    const events = {
      changed: (_db: unknown, accountId: string) => void getBalance(db, accountId).then((b) => (heard.push(b!), told())),
    } as unknown as BalanceEvents;
    const hold = await placeHoldAhead(db, { accountId: u.org_id, amountMicros: 200_000, reference: "m" }, events);
    assert.equal(hold.balanceAfterMicros, 300_000);
    // The capture runs on the thread's connection: it finds the hold whether or not its group committed yet.
    assert.deepEqual(await captureHold(db, hold.id, 150_000), { chargedMicros: 150_000, balanceAfterMicros: 350_000 });
    assert.equal(await invariant(u.org_id), 350_000);
    // The listener heard of the hold once committed: the balance it read already had the hold in it.
    await toldOnce;
    assert.equal(heard.length, 1);
    assert.ok(heard[0] === 300_000 || heard[0] === 350_000, `read after the commit: ${heard[0]}`);
    await assert.rejects(placeHoldAhead(db, { accountId: u.org_id, amountMicros: 400_000 }), (err: unknown) => {
      assert.ok(err instanceof InsufficientFundsError);
      assert.equal(err.balanceMicros, 350_000);
      return true;
    });
    // Many at once: never more placed than the balance covers (race).
    const results = await Promise.all(
      Array.from({ length: 50 }, () => placeHoldAhead(db, { accountId: u.org_id, amountMicros: 10_000 }).then((h) => h, (e: unknown) => e)),
    );
    const placed = results.filter((r) => !(r instanceof Error)) as Awaited<ReturnType<typeof placeHoldAhead>>[];
    assert.equal(placed.length, 35);
    await Promise.all(placed.map((h) => h.committed));
    assert.equal(await invariant(u.org_id), 0, "committed: the event loop sees every hold");
  });

  test("the thread's ledger entries are counted in the event loop's metrics", async () => {
    const u = await gw.register();
    const db = gw.services.db.kysely;
    const count = async (kind: string) => (await ledgerEntries.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;
    const before = await count("charge");
    const hold = await placeHold(db, { accountId: u.org_id, amountMicros: 20_000 });
    await captureHold(db, hold.id, 10_000);
    assert.equal(await count("charge"), before + 1);
  });

  test("once its thread is closed, the calls run on the event loop again", async () => {
    const own = await startGateway("sqlite");
    try {
      const u = await own.register();
      const db = own.services.db.kysely;
      const writer = ledgerWriterOf(db)!;
      await writer.close();
      assert.equal(ledgerWriterOf(db), undefined);
      const hold = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
      await captureHold(db, hold.id, 40_000);
      assert.equal(await getBalance(db, u.org_id), 460_000);
      assert.equal(await ledgerSum(db, u.org_id), 460_000);
      // A second writer on the same file takes over (the thread lock and checkpoint counter are the file's).
      const again = startLedgerWriter(db, own.services.db.sqliteFile!);
      const h2 = await placeHold(db, { accountId: u.org_id, amountMicros: 60_000 });
      assert.equal(h2.balanceAfterMicros, 400_000);
      await releaseHold(db, h2.id);
      await again.close();
    } finally {
      await own.close();
    }
  });
});

describe("the SQLite thread lock (storage/sqlite-thread-lock.ts)", () => {
  test("another thread holding it makes this one wait without blocking, in ticket order, and a dead holder's lock is freed", async () => {
    const lock = new ThreadWriteLock();
    // A thread takes the lock and keeps it until told to exit without releasing it.
    const worker = new Worker(
      `const { workerData, parentPort } = require("node:worker_threads");
       const i32 = new Int32Array(workerData, 0, 4);
       const ticket = Atomics.add(i32, 0, 1);
       while (Atomics.load(i32, 1) !== ticket) Atomics.wait(i32, 1, Atomics.load(i32, 1), 10);
       Atomics.store(i32, 2, require("node:worker_threads").threadId + 1);
       parentPort.postMessage("held");
       parentPort.once("message", () => process.exit(0));`,
      { eval: true, workerData: lock.buffer },
    );
    await new Promise((r) => worker.once("message", r));
    const order: string[] = [];
    const first = lock.acquire();
    assert.ok(first instanceof Promise, "held by the other thread: this one waits");
    const second = lock.acquire();
    void first.then(() => order.push("first"));
    void second!.then(() => order.push("second"));
    // The event loop keeps running meanwhile.
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(order, []);
    const threadId = worker.threadId;
    worker.postMessage("exit");
    await new Promise((r) => worker.once("exit", r));
    assert.equal(lock.releaseIfHeldBy(threadId), true, "the dead thread held it");
    await first;
    assert.equal(lock.releaseIfHeldBy(threadId), false);
    lock.release();
    await second;
    assert.deepEqual(order, ["first", "second"]);
    lock.release();
    assert.equal(lock.acquire(), undefined, "free again: taken at once");
    lock.release();
  });
});
