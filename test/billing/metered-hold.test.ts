/**
 * The money of a realtime socket (D42, D43) on both databases: one hold per socket, extended block by block
 * in one step that never overdraws and that the key's spend limit counts at once; the exact capture at
 * close; the running count persisted so that the sweep settles a dead socket's hold; test mode moves nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  extendMeteredHold,
  getBalance,
  InsufficientFundsError,
  ledgerSum,
  persistMetered,
  placeMeteredHold,
  releaseHold,
  releaseStaleHolds,
  settleStaleMeteredHolds,
} from "../../src/billing/ledger.ts";
import { KeySpendLimitError } from "../../src/billing/key-spend.ts";
import { MeteredHold, type MeterPricing } from "../../src/billing/metered-hold.ts";
import { AppError } from "../../src/errors.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** 0.405 USD per 1000 characters, blocks of 1000 characters (alpha-multilingual-v2 with REALTIME_HOLD_CHARS). */
const PRICING: MeterPricing = {
  price: (chars) => Math.round((chars * 405) / 1000),
  blockUnits: 1000,
  usageUnits: (chars) => ({ characters: chars }),
};

for (const backend of BACKENDS) {
  describe(`metered holds on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      // No runner: its sweep would settle the stale holds these tests make before the tests' own sweeps do.
      gw = await startGateway(backend.name, {}, { runner: false });
    });
    after(async () => {
      await gw?.close();
    });

    async function exact(accountId: string): Promise<number> {
      const db = gw.services.db.kysely;
      const balance = await getBalance(db, accountId);
      assert.ok(balance !== null && balance >= 0, "never negative");
      assert.equal(balance, await ledgerSum(db, accountId), "balance equals the ledger sum");
      return balance;
    }

    function usage(requestId: string, extra: Record<string, unknown> = {}) {
      return { requestId, keyId: null, mode: "live" as const, kind: "speech" as const, units: { characters: 0 }, ...extra };
    }

    async function record(requestId: string) {
      return gw.services.db.kysely.selectFrom("usage_records").selectAll().where("id", "=", requestId).executeTakeFirstOrThrow();
    }

    /** Drains `accountId`'s balance down to `leftMicros` with a plain hold that stays open. */
    async function leave(accountId: string, leftMicros: number) {
      const balance = (await getBalance(gw.services.db.kysely, accountId))!;
      if (balance > leftMicros) {
        await gw.services.db.kysely.transaction().execute(async (trx) => {
          const { placeHold } = await import("../../src/billing/ledger.ts");
          await placeHold(trx, { accountId, amountMicros: balance - leftMicros, reference: "drain" });
        });
      }
    }

    test("placeMeteredHold holds one block, or what the balance covers, at least the minimum", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const a = await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 405, minMicros: 1, reference: "m", usage: usage(`req_a${Date.now()}`) });
      assert.equal(a.amountMicros, 405);
      await leave(u.org_id, 100);
      const b = await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 405, minMicros: 1, reference: "m", usage: usage(`req_b${Date.now()}`) });
      assert.equal(b.amountMicros, 100, "what the balance covers");
      assert.equal(await exact(u.org_id), 0);
      await assert.rejects(placeMeteredHold(db, { accountId: u.org_id, amountMicros: 405, minMicros: 1, reference: "m", usage: usage(`req_c${Date.now()}`) }), InsufficientFundsError);
      const hold = await db.selectFrom("holds").select(["metered_micros", "heartbeat_at"]).where("id", "=", a.id).executeTakeFirstOrThrow();
      assert.equal(Number(hold.metered_micros), 0);
      assert.ok(Number(hold.heartbeat_at) > 0);
    });

    test("extendMeteredHold adds a hold entry of the same hold; never past the balance", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const req = `req_x${Date.now()}`;
      const h = await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 405, minMicros: 1, reference: "m", usage: usage(req) });
      const ext = await extendMeteredHold(db, h.id, { wantMicros: 405, minMicros: 10, meteredMicros: 300 });
      assert.deepEqual([ext.addedMicros, ext.amountMicros], [405, 810]);
      assert.equal(await exact(u.org_id), 500_000 - 810);
      const entries = await db.selectFrom("ledger_entries").select(["kind", "amount_micros", "hold_id", "request_id"]).where("hold_id", "=", h.id).orderBy("seq").execute();
      assert.deepEqual(entries.map((e) => [e.kind, Number(e.amount_micros), e.request_id]), [["hold", -405, req], ["hold", -405, req]]);
      assert.equal(Number((await record(req)).hold_micros), 810, "the record holds what the hold holds");
      await leave(u.org_id, 50);
      const partial = await extendMeteredHold(db, h.id, { wantMicros: 405, minMicros: 20, meteredMicros: 300 });
      assert.equal(partial.addedMicros, 50, "what the balance allows, at least the minimum");
      await assert.rejects(extendMeteredHold(db, h.id, { wantMicros: 405, minMicros: 1, meteredMicros: 300 }), InsufficientFundsError);
      assert.equal(await exact(u.org_id), 0);
    });

    test("race: 40 extensions of 10 holds on a balance that covers some never overdraw", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const holds = [];
      for (let i = 0; i < 10; i++) holds.push(await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 1000, minMicros: 1000, reference: "m", usage: usage(`req_r${i}_${Date.now()}`) }));
      await leave(u.org_id, 25_000);
      const results = await Promise.allSettled(holds.flatMap((h) => [0, 1, 2, 3].map(() => extendMeteredHold(db, h.id, { wantMicros: 1000, minMicros: 1000, meteredMicros: 0 }))));
      const ok = results.filter((r) => r.status === "fulfilled").length;
      assert.equal(ok, 25, "exactly what the balance covers");
      for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof InsufficientFundsError, String(r.reason));
      assert.equal(await exact(u.org_id), 0);
    });

    test("a key's spend limit counts an extension at once", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const created = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "capped", spend_limit_usd: 0.001, spend_limit_period: "day" } });
      assert.equal(created.status, 201);
      const keyId = created.json.key_id as string;
      const keySpend = { keyId, limitMicros: 1000, period: "day" as const };
      const h = await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 600, minMicros: 1, reference: "m", usage: usage(`req_k${Date.now()}`, { keyId, keySpend }) });
      const e = await extendMeteredHold(db, h.id, { wantMicros: 600, minMicros: 1, meteredMicros: 0 });
      assert.equal(e.addedMicros, 400, "the key's limit leaves 400");
      await assert.rejects(extendMeteredHold(db, h.id, { wantMicros: 600, minMicros: 1, meteredMicros: 0 }), KeySpendLimitError);
      const key = await db.selectFrom("api_keys").select("spent_micros").where("id", "=", keyId).executeTakeFirstOrThrow();
      assert.equal(Number(key.spent_micros), 1000);
      await assert.rejects(placeMeteredHold(db, { accountId: u.org_id, amountMicros: 600, minMicros: 1, reference: "m", usage: usage(`req_k2${Date.now()}`, { keyId, keySpend }) }), KeySpendLimitError);
      assert.equal(await exact(u.org_id), 500_000 - 1000);
    });

    test("MeteredHold: reserve extends by blocks, charge, close captures the exact price of what was delivered", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const req = `req_m${Date.now()}`;
      const meter = await MeteredHold.open({ db, paidCalls: gw.services.paidCalls }, { accountId: u.org_id, model: "alpha-multilingual-v2", usage: usage(req), pricing: PRICING, heartbeatMs: 5000 }, () => new AppError(402, "billing_error", "low"));
      assert.equal(meter.heldMicros, 405);
      // 2,600 characters in chunks of 260: the hold is extended twice (to 3 blocks) on the way.
      for (let i = 0; i < 10; i++) {
        assert.equal(await meter.reserve(260), null);
        meter.charge(260);
      }
      assert.equal(meter.heldMicros, 405 * 3);
      // A chunk the upstream failed: reserved, then given back: not charged.
      assert.equal(await meter.reserve(100), null);
      meter.unreserve(100);
      const settled = await meter.close({ closeCode: 1000, contexts: 2 });
      assert.deepEqual([settled.units, settled.costMicros], [2600, Math.round((2600 * 405) / 1000)]);
      assert.equal(await exact(u.org_id), 500_000 - 1053);
      const r = await record(req);
      assert.deepEqual([r.status, Number(r.cost_micros), Number(r.characters), Number(r.realtime), Number(r.contexts), Number(r.close_code)], ["succeeded", 1053, 2600, 1, 2, 1000]);
      assert.ok(Number(r.session_ms) >= 0);
      const kinds = await db.selectFrom("ledger_entries").select(["kind", "amount_micros"]).where("request_id", "=", req).orderBy("seq").execute();
      assert.deepEqual(kinds.map((k) => k.kind), ["hold", "hold", "hold", "hold_release", "charge"]);
      assert.equal(kinds.reduce((s, k) => s + Number(k.amount_micros), 0), -1053, "the request nets its cost");
    });

    test("MeteredHold: out of funds is a refusal (nothing reserved); nothing charged releases the hold", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      await leave(u.org_id, 500);
      const req = `req_o${Date.now()}`;
      const meter = await MeteredHold.open({ db, paidCalls: gw.services.paidCalls }, { accountId: u.org_id, model: "m", usage: usage(req), pricing: PRICING, heartbeatMs: 5000 }, () => new AppError(402, "billing_error", "low"));
      assert.equal(meter.heldMicros, 405);
      assert.equal(await meter.reserve(1000), null);
      meter.charge(1000);
      const refusal = await meter.reserve(300);
      assert.equal(refusal?.code, "insufficient_balance");
      const settled = await meter.close({ closeCode: 1008, contexts: 1 });
      assert.equal(settled.costMicros, 405);
      assert.equal(await exact(u.org_id), 95);
      const empty = await MeteredHold.open({ db, paidCalls: gw.services.paidCalls }, { accountId: u.org_id, model: "m", usage: usage(`${req}e`), pricing: PRICING, heartbeatMs: 5000 }, () => new AppError(402, "billing_error", "low"));
      assert.equal((await empty.close({ closeCode: 1000, contexts: 0 })).costMicros, 0);
      assert.equal((await record(`${req}e`)).status, "failed");
      assert.equal(await exact(u.org_id), 95);
      await leave(u.org_id, 0);
      await assert.rejects(
        MeteredHold.open({ db, paidCalls: gw.services.paidCalls }, { accountId: u.org_id, model: "m", usage: usage(`${req}z`), pricing: PRICING, heartbeatMs: 5000 }, () => new AppError(402, "billing_error", "low")),
        (err: unknown) => err instanceof AppError && err.status === 402,
      );
    });

    test("test mode: the record is priced, no hold, no ledger entry", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const before = await exact(u.org_id);
      const req = `req_t${Date.now()}`;
      const meter = await MeteredHold.open({ db, paidCalls: gw.services.paidCalls }, { accountId: u.org_id, model: "m", usage: usage(req, { mode: "test" }), pricing: PRICING, heartbeatMs: 5000 }, () => new AppError(402, "billing_error", "low"));
      for (let i = 0; i < 5; i++) {
        assert.equal(await meter.reserve(900), null);
        meter.charge(900);
      }
      const s = await meter.close({ closeCode: 1000, contexts: 1 });
      assert.equal(s.costMicros, Math.round((4500 * 405) / 1000));
      assert.equal(await exact(u.org_id), before);
      const r = await record(req);
      assert.deepEqual([r.mode, r.status, Number(r.cost_micros), Number(r.realtime)], ["test", "succeeded", s.costMicros, 1]);
      assert.equal((await db.selectFrom("ledger_entries").select("id").where("request_id", "=", req).execute()).length, 0);
    });

    test("the sweep captures a dead socket's persisted count and releases the rest; the sync sweep leaves it", async () => {
      const db = gw.services.db.kysely;
      const u = await gw.register();
      const req = `req_s${Date.now()}`;
      const h = await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 405, minMicros: 1, reference: "m", usage: usage(req) });
      await extendMeteredHold(db, h.id, { wantMicros: 405, minMicros: 1, meteredMicros: 0 });
      await persistMetered(db, h.id, 500, { requestId: req, units: { characters: 1235, duration_ms: null, images: null, input_tokens: null, output_tokens: null, cached_tokens: null, minutes: null } }, Date.now() - 60_000);
      await releaseStaleHolds(db, 0);
      const still = await db.selectFrom("holds").select("status").where("id", "=", h.id).executeTakeFirstOrThrow();
      assert.equal(still.status, "open", "the sweep of synchronous holds leaves a socket's hold alone");
      assert.equal(await settleStaleMeteredHolds(db, 30_000, Date.now() + 1), 1);
      assert.equal(await exact(u.org_id), 500_000 - 500);
      const r = await record(req);
      assert.deepEqual([r.status, Number(r.cost_micros), Number(r.characters), r.close_code], ["succeeded", 500, 1235, null]);
      const open = await db.selectFrom("holds").select("status").where("id", "=", h.id).executeTakeFirstOrThrow();
      assert.equal(open.status, "captured");
      assert.equal(await settleStaleMeteredHolds(db, 30_000), 0, "once");
      // A fresh heartbeat keeps a live socket's hold open.
      const live = await placeMeteredHold(db, { accountId: u.org_id, amountMicros: 405, minMicros: 1, reference: "m", usage: usage(`${req}l`) });
      assert.equal(await settleStaleMeteredHolds(db, 30_000), 0);
      assert.ok(await releaseHold(db, live.id));
      assert.equal(await exact(u.org_id), 500_000 - 500);
    });
  });
}
