/**
 * Low-balance alerts (D34) over real HTTP on both databases: `PUT /v1/billing/alerts`, one signed
 * `balance.low` event (D31) when a run of calls crosses the threshold, whether the calls come one after
 * another or all at once, armed again once the balance is back above; job holds (made inside the submit's
 * transaction) are found by the sweep.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Receiver, startReceiver, verify } from "./receiver.ts";

const ALPHA_VOICE = "pNx4Lq8TzR2vWk7HdM3s";
const SPEECH = { model: "alpha-turbo-v2-5", input: "Hello there.", voice_id: ALPHA_VOICE };
const micros = (usd: number) => Math.round(usd * 1_000_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const backend of BACKENDS) {
  describe(`low-balance alerts (D34) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let rx: Receiver;
    before(async () => {
      rx = await startReceiver();
      gw = await startGateway(backend.name, { WEBHOOK_ALLOW_PRIVATE: "1" });
    });
    after(async () => {
      await gw?.close();
      await rx?.close();
    });

    /** A funded account with an endpoint taking `balance.low` at `path`; returns its secret. */
    async function account(path: string) {
      const u = await gw.register();
      await gw.deposit(u.user_id, 1);
      const limits = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, {
        token: ADMIN_TOKEN,
        body: { rpm: 10_000, per_model_rpm: 10_000, audio_concurrent_per_provider: { alpha: 100 } },
      });
      assert.equal(limits.status, 200);
      const ep = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url: rx.url + path, events: ["balance.low"] } });
      assert.equal(ep.status, 201);
      return { ...u, secret: ep.json.secret as string };
    }
    async function balanceMicros(token: string) {
      return micros((await gw.request("GET", "/v1/auth/me", { token })).json.balance_usd);
    }
    async function price(token: string) {
      const r = await gw.request("POST", "/v1/audio/speech", { token, body: SPEECH });
      assert.equal(r.status, 200);
      return micros(Number(r.headers.get("x-svc-cost-usd")));
    }
    /** Waits past the sweep interval (5 s) so that a second event, if any were due, would have arrived. */
    const settle = () => sleep(6500);

    test("the setting is read back; bad values are refused; null removes it", async () => {
      const u = await account("/a");
      const r = await gw.request("GET", "/v1/billing/alerts", { token: u.session_token });
      assert.equal(r.status, 200);
      assert.deepEqual({ l: r.json.low_balance_usd, a: r.json.armed }, { l: null, a: true });
      for (const body of [{ low_balance_usd: -1 }, { low_balance_usd: "5" }, { low_balance_usd: 0.0000001 }, {}]) {
        const bad = await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body });
        assert.equal(bad.status, 400, JSON.stringify(body));
        assert.equal(bad.json.error.code, "invalid_request");
      }
      const set = await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: 0.25 } });
      assert.equal(set.status, 200);
      assert.equal(set.json.low_balance_usd, 0.25);
      assert.equal(set.json.armed, true);
      const off = await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: null } });
      assert.equal(off.json.low_balance_usd, null);
    });

    test("a run of calls crossing the threshold sends one signed balance.low; back above re-arms it", async () => {
      const u = await account("/run");
      const p = await price(u.api_key);
      const start = await balanceMicros(u.api_key);
      const threshold = start - Math.round(2.5 * p);
      const set = await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: threshold / 1e6 } });
      assert.equal(set.json.armed, true);
      for (let i = 0; i < 8; i++) assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })).status, 200);
      await rx.waitFor(() => rx.on("/run").length >= 1, "balance.low");
      await settle();
      const got = rx.on("/run");
      assert.equal(got.length, 1, "one event for the whole run");
      const ev = verify(u.secret, got[0]);
      assert.equal(ev.type, "balance.low");
      assert.equal(ev.data.threshold_usd, threshold / 1e6);
      assert.equal(ev.data.balance_usd, (start - 3 * p) / 1e6, "the balance of the call that crossed it");
      assert.equal((await gw.request("GET", "/v1/billing/alerts", { token: u.api_key })).json.armed, false);

      // A deposit takes it back above: armed again (by the sweep), and the next fall sends a second event.
      await gw.deposit(u.user_id, 1);
      const end = Date.now() + 15_000;
      while (!(await gw.request("GET", "/v1/billing/alerts", { token: u.api_key })).json.armed) {
        assert.ok(Date.now() < end, "re-armed within the sweep interval");
        await sleep(100);
      }
      const again = await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: ((await balanceMicros(u.api_key)) - Math.round(0.5 * p)) / 1e6 } });
      assert.equal(again.status, 200);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })).status, 200);
      await rx.waitFor(() => rx.on("/run").length >= 2, "the second balance.low");
    });

    test("30 calls at once crossing the threshold send exactly one event", async () => {
      const u = await account("/burst");
      const p = await price(u.api_key);
      const start = await balanceMicros(u.api_key);
      await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: (start - 10 * p) / 1e6 } });
      const answers = await Promise.all(Array.from({ length: 30 }, () => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })));
      assert.ok(answers.every((a) => a.status === 200));
      await rx.waitFor(() => rx.on("/burst").length >= 1, "balance.low");
      await settle();
      assert.equal(rx.on("/burst").length, 1);
    });

    test("a job's hold (made in the submit's transaction) is found by the sweep; setting a threshold above the balance fires at once", async () => {
      const u = await account("/job");
      const start = await balanceMicros(u.api_key);
      await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: (start - 1000) / 1e6 } });
      const job = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "a lighthouse" } });
      assert.ok(job.status === 202 || job.status === 200);
      await rx.waitFor(() => rx.on("/job").length >= 1, "balance.low after the job's hold", 15_000);
      assert.equal(verify(u.secret, rx.on("/job")[0]).type, "balance.low");

      const v = await account("/above");
      const r = await gw.request("PUT", "/v1/billing/alerts", { token: v.api_key, body: { low_balance_usd: 1000 } });
      assert.equal(r.json.armed, false, "fired at once");
      await rx.waitFor(() => rx.on("/above").length >= 1, "balance.low at once");
      const same = await gw.request("PUT", "/v1/billing/alerts", { token: v.api_key, body: { low_balance_usd: 1000 } });
      assert.equal(same.json.armed, false, "the same threshold again keeps its state");
      await settle();
      assert.equal(rx.on("/above").length, 1);
    });
  });
}
