/**
 * Budgets (D44) on the realtime speech socket (D42), on both databases: a socket's hold is sized by what a
 * `block` budget leaves and extended through it block by block, so one socket stops at the budget with
 * `budget_exceeded` and 1008, and 20 sockets at once never pass it together; the budget's spend equals what
 * was charged once every socket settled.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { connect, fundedOrg, open, wsUrl } from "../helpers/realtime.ts";

for (const backend of BACKENDS) {
  describe(`budgets on speech sockets on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, { REALTIME_HOLD_CHARS: "40", REALTIME_HEARTBEAT_MS: "200", REALTIME_SWEEP_AFTER_S: "1" });
    });
    after(async () => {
      await gw?.close();
    });
    const db = () => gw.services.db.kysely;
    const path = () => wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5&output_format=pcm_16000`);

    async function withBudget(usd: number, balanceUsd: number) {
      const u = await fundedOrg(gw, balanceUsd);
      const lift = await gw.request("PUT", `/v1/admin/orgs/${u.org_id}/limits`, {
        token: ADMIN_TOKEN,
        body: { rpm: 100_000, per_model_rpm: 100_000, audio_concurrent_per_provider: { host_1: 50, host_2: 50, alpha: 50, beta: 50, host_3: 50 } },
      });
      assert.equal(lift.status, 200, JSON.stringify(lift.json));
      const b = await gw.request("POST", "/v1/budgets", { token: u.session_token, headers: { "x-svc-org": u.org_id }, body: { scope: { type: "org", id: u.org_id }, amount_usd: usd, period: "day", timezone: "Asia/Kolkata" } });
      assert.equal(b.status, 201, JSON.stringify(b.json));
      return { ...u, budgetId: b.json.id as string };
    }
    async function charged(orgId: string): Promise<number> {
      const rows = await db().selectFrom("usage_records").select(["cost_micros", "status"]).where("account_id", "=", orgId).execute();
      assert.ok(rows.every((r) => r.status !== "processing"), "every socket settled");
      return rows.reduce((a, r) => a + Number(r.cost_micros ?? 0), 0);
    }
    async function spentMicros(token: string, budgetId: string): Promise<number> {
      const r = await gw.request("GET", `/v1/budgets/${budgetId}`, { token });
      return Math.round(Number(r.json.spent_usd) * 1_000_000);
    }

    test("one socket stops at the budget (100 characters of 0.02 USD) with budget_exceeded and 1008; the balance could pay more", async () => {
      const u = await withBudget(0.02, 5);
      const s = await open(path(), { "xi-api-key": u.api_key });
      s.send({ text: " ", generation_config: { chunk_length_schedule: [50] } });
      for (let i = 0; i < 100; i++) s.send({ text: `Word${i} ` });
      s.send({ text: "", flush: true });
      const close = await s.waitClose();
      assert.equal(close.code, 1008);
      assert.equal(s.messages.find((m) => typeof m.error === "string")?.error, "budget_exceeded");
      assert.ok(s.audio().length > 0, "the paid text was spoken");
      const cost = await charged(u.org_id);
      assert.ok(cost > 0 && cost <= 20_000, `never more than the budget: ${cost}`);
      assert.equal(await spentMicros(u.api_key, u.budgetId), cost, "the budget counts exactly what was charged");
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
    });

    test("20 sockets at once against one budget: together they never pass it", async () => {
      const u = await withBudget(0.1, 5);
      const text = "Sixty characters of text for every socket in the crowd now. ";
      const closes = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const c = await connect(path(), { "xi-api-key": u.api_key });
          if ("status" in c) return c.status;
          c.send({ text: " " });
          for (let i = 0; i < 20; i++) c.send({ text, flush: true });
          c.send({ text: "" });
          return (await c.waitClose(60_000)).code;
        }),
      );
      assert.ok(closes.every((c) => c === 1000 || c === 1008 || c === 402), JSON.stringify(closes));
      assert.ok(closes.includes(1008) || closes.includes(402), "the budget ran out");
      const cost = await charged(u.org_id);
      assert.ok(cost <= 100_000, `never more than the budget: ${cost}`);
      assert.equal(await spentMicros(u.api_key, u.budgetId), cost);
      assert.equal(await getBalance(db(), u.org_id), await ledgerSum(db(), u.org_id));
      const open2 = await db().selectFrom("holds").select("id").where("account_id", "=", u.org_id).where("status", "=", "open").execute();
      assert.equal(open2.length, 0);
    });
  });
}
