/**
 * The usage record inside the paid-call flow (src/billing/paid-call.ts, D29) on both databases: it is
 * written with the hold and finished in the transaction that moves the money, for the endings the HTTP
 * tests cannot time: a stream that breaks after it was charged (refunded in the refund's transaction), a
 * stream left early, and a call whose process died (the sync-hold sweep releases it and ends the record).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum, releaseStaleHolds } from "../../src/billing/ledger.ts";
import { usageFor } from "../../src/billing/usage.ts";
import { errors } from "../../src/errors.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const refuse = () => errors.billing("too low");

async function* chunks(n: number, failAt: number | null = null): AsyncGenerator<string> {
  for (let i = 0; i < n; i++) {
    if (i === failAt) throw new Error("upstream broke off");
    yield `c${i}`;
  }
}

for (const backend of BACKENDS) {
  describe(`usage records in the paid-call flow on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, {}, { runner: false });
    });
    after(async () => {
      await gw?.close();
    });
    const db = () => gw.services.db.kysely;
    const paidCalls = () => gw.services.paidCalls;
    const record = (id: string) => db().selectFrom("usage_records").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    /**
     * The record read inside the call: on an SQLite file the hold (and its record) goes ahead of its commit
     * (ledger.ts `placeHoldAhead`), so a read on the event loop's connection may come a moment before it;
     * the read waits for the commit (a few ms), as anything the caller reads after the answer does.
     */
    const recordInCall = async (id: string) => {
      for (let i = 0; ; i++) {
        const r = await db().selectFrom("usage_records").selectAll().where("id", "=", id).executeTakeFirst();
        if (r !== undefined || i >= 200) return r ?? record(id);
        await new Promise((res) => setTimeout(res, 5));
      }
    };
    const entries = (id: string) =>
      db().selectFrom("ledger_entries").select(["kind", "amount_micros", "request_id"]).where("request_id", "=", id).orderBy("seq").execute();

    async function assertAgrees(accountId: string, requestId: string): Promise<void> {
      const r = await record(requestId);
      const net = (await entries(requestId)).reduce((n, e) => n + Number(e.amount_micros), 0);
      assert.equal(Number(r.cost_micros) + net, 0, "the record costs what the ledger netted");
      assert.equal(await getBalance(db(), accountId), await ledgerSum(db(), accountId));
    }

    test("a charged stream that breaks off is refunded, and its record ends refunded in the same transaction", async () => {
      const u = await gw.register();
      const usage = usageFor(undefined, "speech", { characters: 12 });
      const stream = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 30_000, reference: "beta-speech-turbo", usage }, { onInsufficient: refuse }, async (hold) => {
        assert.equal((await recordInCall(usage.requestId)).status, "processing", "written with the hold");
        hold.note({ fallbackLayer: 1 });
        await hold.capture(30_000);
        return hold.stream(chunks(5, 2));
      });
      const got: string[] = [];
      await assert.rejects(async () => {
        for await (const c of stream) got.push(c);
      });
      assert.deepEqual(got, ["c0", "c1"]);
      const r = await record(usage.requestId);
      assert.equal(r.status, "refunded");
      assert.equal(Number(r.cost_micros), 0);
      assert.equal(Number(r.fallback_layer), 1);
      assert.equal(Number(r.characters), 12);
      assert.deepEqual((await entries(usage.requestId)).map((e) => e.kind), ["hold", "hold_release", "charge", "refund"]);
      await assertAgrees(u.org_id, usage.requestId);
    });

    test("a stream settled at its end notes its units before the charge; one left early is released as failed", async () => {
      const u = await gw.register();
      const done = usageFor(undefined, "chat");
      const full = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 5_000, reference: "txtA-small", usage: done }, { onInsufficient: refuse }, async (hold) =>
        hold.stream(chunks(3), {
          finalMicros: () => {
            hold.note({ units: { inputTokens: 10, outputTokens: 3, cachedTokens: 0 } });
            return 1_234;
          },
        }),
      );
      for await (const _ of full);
      const r = await record(done.requestId);
      assert.equal(r.status, "succeeded");
      assert.equal(Number(r.cost_micros), 1_234);
      assert.deepEqual([Number(r.input_tokens), Number(r.output_tokens), Number(r.cached_tokens)], [10, 3, 0]);
      await assertAgrees(u.org_id, done.requestId);

      const left = usageFor(undefined, "chat");
      const early = await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 5_000, reference: "txtA-small", usage: left }, { onInsufficient: refuse }, async (hold) =>
        hold.stream(chunks(3), { finalMicros: () => 1_000 }),
      );
      for await (const _ of early) break;
      assert.equal((await record(left.requestId)).status, "failed");
      assert.equal(Number((await record(left.requestId)).cost_micros), 0);
      await assertAgrees(u.org_id, left.requestId);
    });

    test("a call whose process died: the sync-hold sweep releases the hold and ends its record failed", async () => {
      const u = await gw.register();
      // A stream handed over but never read leaves its hold open, as a process that died before the
      // stream ended would: the sweep of orphaned synchronous holds releases it.
      const orphan = usageFor(undefined, "sfx");
      let holdId = "";
      await paidCalls().withHold(db(), { accountId: u.org_id, amountMicros: 27_000, reference: "alpha-sfx", usage: orphan }, { onInsufficient: refuse }, async (h) => {
        holdId = h.id!;
        return h.stream(chunks(1));
      });
      assert.equal((await record(orphan.requestId)).status, "processing");
      await db().updateTable("holds").set({ created_at: Date.now() - 3_600_000 }).where("id", "=", holdId).execute();
      assert.ok((await releaseStaleHolds(db(), 60_000)) >= 1);
      const swept = await record(orphan.requestId);
      assert.equal(swept.status, "failed");
      assert.equal(Number(swept.cost_micros), 0);
      await assertAgrees(u.org_id, orphan.requestId);
    });
  });
}
