/**
 * The paid-call flow (src/billing/paid-call.ts) on both databases: the hold goes back on every failure,
 * the 402 is the endpoint's, a capture never exceeds the hold and commits with the caller's writes,
 * streams settle once; after each case the balance is the ledger sum and never negative.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { callUpstream, holdOrRefuse, settleCapture, settleRelease } from "../../src/billing/paid-call.ts";
import { AppError, errors } from "../../src/errors.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const SIGNUP = 500_000;
const refuse = () => errors.insufficientCredits("9.99");

async function* chunks(n: number, failAt: number | null = null): AsyncGenerator<string> {
  for (let i = 0; i < n; i++) {
    if (i === failAt) throw new Error("upstream broke off");
    yield `c${i}`;
  }
}

for (const backend of BACKENDS) {
  describe(`paid-call flow on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, {}, { runner: false });
    });
    after(async () => {
      await gw?.close();
    });

    const db = () => gw.services.db.kysely;
    const paidCalls = () => gw.services.paidCalls;

    /** Asserts invariant 1 and returns the balance. */
    async function balanceOf(accountId: string): Promise<number> {
      const balance = await getBalance(db(), accountId);
      assert.ok(balance !== null && balance >= 0, "balance is never negative");
      assert.equal(balance, await ledgerSum(db(), accountId), "balance equals the ledger sum");
      return balance;
    }

    async function holdsOf(accountId: string) {
      return db()
        .selectFrom("holds")
        .select(["status", "amount_micros", "captured_micros"])
        .where("account_id", "=", accountId)
        .execute();
    }

    test("a capture charges the final amount, and never more than the hold", async () => {
      const u = await gw.register();
      const out = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000, reference: "m" }, { onInsufficient: refuse }, async (hold) => {
        assert.equal(hold.balanceAfterMicros, SIGNUP - 100_000);
        return hold.capture(40_000);
      });
      assert.equal(out.chargedMicros, 40_000);
      assert.equal(await balanceOf(u.org_id), SIGNUP - 40_000);

      const capped = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, (hold) =>
        hold.capture(250_000),
      );
      assert.equal(capped.chargedMicros, 100_000, "capped at the hold");
      assert.equal(await balanceOf(u.org_id), SIGNUP - 140_000);
    });

    test("a balance below the amount answers the endpoint's 402 and writes nothing", async () => {
      const u = await gw.register();
      let ran = false;
      await assert.rejects(
        paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: SIGNUP + 1 }, { onInsufficient: refuse }, async () => {
          ran = true;
        }),
        (err: unknown) => err instanceof AppError && err.status === 402 && err.code === "insufficient_credits",
      );
      assert.equal(ran, false);
      await assert.rejects(
        holdOrRefuse(db(), { accountId: u.org_id, amountMicros: SIGNUP + 1 }, () => errors.insufficientBalance()),
        (err: unknown) => err instanceof AppError && err.code === "insufficient_balance",
      );
      assert.deepEqual(await holdsOf(u.org_id), []);
      assert.equal(await balanceOf(u.org_id), SIGNUP);
    });

    test("a throw before the capture releases the hold and propagates (upstream failure -> 502)", async () => {
      const u = await gw.register();
      await assert.rejects(
        paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async () =>
          callUpstream("m", async () => {
            throw new Error("upstream secret detail");
          }),
        ),
        (err: unknown) => err instanceof AppError && err.status === 502 && err.code === "provider_error" && !err.message.includes("secret"),
      );
      assert.deepEqual(
        (await holdsOf(u.org_id)).map((h) => h.status),
        ["released"],
      );
      assert.equal(await balanceOf(u.org_id), SIGNUP);
    });

    test("a throw inside the capture transaction rolls the charge back with the writes and releases the hold", async () => {
      const u = await gw.register();
      await assert.rejects(
        paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, (hold) =>
          hold.capture(100_000, async (trx) => {
            await trx
              .insertInto("voices")
              .values({ id: "voice_rolled_back", account_id: u.org_id, name: null, source: "design", upstream_voice_id: "x", description: null, created_at: Date.now() })
              .execute();
            throw new Error("the second write failed");
          }),
        ),
        /the second write failed/,
      );
      const voice = await db().selectFrom("voices").select("id").where("id", "=", "voice_rolled_back").executeTakeFirst();
      assert.equal(voice, undefined, "the write of the failed transaction is gone");
      assert.deepEqual(
        (await holdsOf(u.org_id)).map((h) => h.status),
        ["released"],
      );
      assert.equal(await balanceOf(u.org_id), SIGNUP);
    });

    test("a capture commits together with the caller's writes", async () => {
      const u = await gw.register();
      await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, (hold) =>
        hold.capture(100_000, async (trx) => {
          await trx
            .insertInto("voices")
            .values({ id: `voice_${u.org_id}`, account_id: u.org_id, name: null, source: "design", upstream_voice_id: "x", description: null, created_at: Date.now() })
            .execute();
        }),
      );
      const voice = await db().selectFrom("voices").select("id").where("id", "=", `voice_${u.org_id}`).executeTakeFirst();
      assert.ok(voice);
      assert.equal(await balanceOf(u.org_id), SIGNUP - 100_000);
    });

    test("a throw after the capture refunds the charge; a second capture is refused", async () => {
      const u = await gw.register();
      await assert.rejects(
        paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) => {
          await hold.capture(60_000);
          await assert.rejects(hold.capture(1), /already captured/);
          throw new Error("failed after the charge");
        }),
        /failed after the charge/,
      );
      assert.equal(await balanceOf(u.org_id), SIGNUP);
    });

    test("returning without settling releases the hold and reports the bug", async () => {
      const u = await gw.register();
      await assert.rejects(
        paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async () => "forgot"),
        /without settling/,
      );
      assert.equal(await balanceOf(u.org_id), SIGNUP);
    });

    test("a stream that settles at its end captures the final amount", async () => {
      const u = await gw.register();
      let captured = -1;
      const stream = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) =>
        hold.stream(chunks(3), { finalMicros: () => 30_000, onCaptured: (s) => (captured = s.chargedMicros) }),
      );
      assert.equal(await balanceOf(u.org_id), SIGNUP - 100_000, "held while streaming");
      const got: string[] = [];
      for await (const c of stream) got.push(c);
      assert.deepEqual(got, ["c0", "c1", "c2"]);
      assert.equal(captured, 30_000);
      assert.equal(await balanceOf(u.org_id), SIGNUP - 30_000);
    });

    test("a stream that breaks before it settles, or is abandoned, releases the hold", async () => {
      const u = await gw.register();
      const broken = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) =>
        hold.stream(chunks(3, 1), { finalMicros: () => 30_000 }),
      );
      await assert.rejects(async () => {
        for await (const _ of broken) void _;
      }, /broke off/);
      assert.equal(await balanceOf(u.org_id), SIGNUP);

      const abandoned = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) =>
        hold.stream(chunks(3), { finalMicros: () => 30_000 }),
      );
      for await (const _ of abandoned) break;
      assert.equal(await balanceOf(u.org_id), SIGNUP);
      assert.deepEqual(
        (await holdsOf(u.org_id)).map((h) => h.status),
        ["released", "released"],
      );
    });

    test("a stream charged at its first chunk is refunded when it breaks later", async () => {
      const u = await gw.register();
      const stream = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) => {
        await hold.capture(100_000);
        return hold.stream(chunks(4, 2));
      });
      assert.equal(await balanceOf(u.org_id), SIGNUP - 100_000);
      const got: string[] = [];
      await assert.rejects(async () => {
        for await (const c of stream) got.push(c);
      }, /broke off/);
      assert.deepEqual(got, ["c0", "c1"]);
      assert.equal(await balanceOf(u.org_id), SIGNUP, "refunded");
      const kinds = await db().selectFrom("ledger_entries").select("kind").where("account_id", "=", u.org_id).orderBy("seq").execute();
      assert.deepEqual(
        kinds.map((k) => k.kind),
        ["signup_credit", "hold", "hold_release", "charge", "refund"],
      );
    });

    test("a stream that fails before its first chunk is charged nothing", async () => {
      const u = await gw.register();
      await assert.rejects(
        paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) => {
          const it = chunks(3, 0)[Symbol.asyncIterator]();
          await callUpstream("m", () => it.next());
          return hold.capture(100_000);
        }),
        (err: unknown) => err instanceof AppError && err.code === "provider_error",
      );
      assert.equal(await balanceOf(u.org_id), SIGNUP);
    });

    test("job helpers: capture and release in the caller's transaction, release idempotent", async () => {
      const u = await gw.register();
      const h1 = await holdOrRefuse(db(), { accountId: u.org_id, amountMicros: 100_000, jobId: "job_a" }, refuse);
      await settleCapture(db(), h1.id, 70_000);
      assert.equal(await settleRelease(db(), h1.id), null, "a captured hold is not released");
      const h2 = await holdOrRefuse(db(), { accountId: u.org_id, amountMicros: 100_000, jobId: "job_b" }, refuse);
      assert.notEqual(await settleRelease(db(), h2.id), null);
      assert.equal(await settleRelease(db(), h2.id), null);
      await assert.rejects(settleCapture(db(), h2.id, 1));
      assert.equal(await balanceOf(u.org_id), SIGNUP - 70_000);
    });

    test("a shutdown drain waits for calls whose hold is still being placed", async () => {
      const u = await gw.register();
      let captured = false;
      const call = paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 10_000 }, { onInsufficient: refuse }, async (hold) => {
        const s = await hold.capture(4_000);
        captured = true;
        return s;
      });
      // The hold's statement has not even been sent: no PaidHold exists yet.
      assert.equal(await paidCalls().drain(5_000), 0);
      assert.ok(captured, "the drain returned only after the call settled");
      await call;
      assert.equal(await balanceOf(u.org_id), SIGNUP - 4_000);
    });

    test("parallel calls on one account: the balance covers some, the rest get 402, no overdraft", async () => {
      const u = await gw.register();
      // 0.50 covers five holds of 0.10; twelve calls race, and half of the winners fail upstream.
      let n = 0;
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, () =>
          paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 100_000 }, { onInsufficient: refuse }, async (hold) => {
            const i = n++;
            await new Promise((r) => setTimeout(r, 5));
            if (i % 2 === 1) {
              await callUpstream("m", async () => {
                throw new Error("boom");
              });
            }
            return hold.capture(25_000);
          }),
        ),
      );
      const ok = results.filter((r) => r.status === "fulfilled").length;
      const refused = results.filter((r) => r.status === "rejected" && r.reason instanceof AppError && r.reason.status === 402).length;
      const failed = results.filter((r) => r.status === "rejected" && r.reason instanceof AppError && r.reason.status === 502).length;
      assert.equal(ok + refused + failed, 12);
      assert.ok(ok >= 1 && refused >= 1, `some succeed (${ok}) and some are refused (${refused})`);
      assert.equal(await balanceOf(u.org_id), SIGNUP - 25_000 * ok);
      assert.ok((await holdsOf(u.org_id)).every((h) => h.status !== "open"), "no hold left open");
    });
  });
}
