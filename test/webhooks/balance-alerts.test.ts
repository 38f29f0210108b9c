/**
 * Low-balance alerts (D34) over real HTTP on both databases: `PUT /v1/billing/alerts`, one signed
 * `balance.low` event (D31) when a run of calls crosses the threshold, whether the calls come one after
 * another or all at once, armed again once the balance is back above (by the very write that gives money
 * back: deposits, refunds, releases, captures), so the next fall sends one more event whatever the timing;
 * job holds (made inside the submit's transaction) are heard once the submit committed.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getModelOf } from "../../src/catalog/models.ts";
import { quoteSpeech } from "../../src/catalog/quote.ts";
import { captureHold, credit, inTransaction, placeHold, releaseHold } from "../../src/billing/ledger.ts";
import { pgLedgerBatcher } from "../../src/billing/ledger-pg-batch.ts";
import { getLowBalanceAlert, setLowBalanceAlert } from "../../src/webhooks/balance-alerts.ts";
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
      // The balance when the check that fired ran (balance-alerts.ts: the first check after the fall wins,
      // the crossing call's own or the sweep's): the crossing call's, or a later call's of the run when it
      // committed before that check read the balance (seen on PostgreSQL under load).
      const seen = [3, 4, 5, 6, 7, 8].map((k) => (start - k * p) / 1e6);
      assert.ok(seen.includes(Number(ev.data.balance_usd)), `a balance of the run at or after the crossing: ${ev.data.balance_usd} in ${seen.join(", ")}`);
      assert.equal((await gw.request("GET", "/v1/billing/alerts", { token: u.api_key })).json.armed, false);

      // A deposit takes it back above: armed again in the deposit's own transaction, and the next fall sends a second event.
      await gw.deposit(u.user_id, 1);
      assert.equal((await gw.request("GET", "/v1/billing/alerts", { token: u.api_key })).json.armed, true, "re-armed by the deposit itself");
      const again = await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: ((await balanceMicros(u.api_key)) - Math.round(0.5 * p)) / 1e6 } });
      assert.equal(again.status, 200);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })).status, 200);
      await rx.waitFor(() => rx.on("/run").length >= 2, "the second balance.low");
    });

    test("600 characters fall below: one event; a deposit of 1 USD; 5,000 characters right after fall below again: a second event", async () => {
      // The prices of the two calls (the cost header of each is checked against them).
      const turbo = getModelOf(SPEECH.model, "speech")!;
      const c600 = quoteSpeech(turbo, 600);
      const c5000 = quoteSpeech(turbo, 5000);
      const cost = async (token: string, chars: number) => {
        const r = await gw.request("POST", "/v1/audio/speech", { token, body: { ...SPEECH, input: "a".repeat(chars) } });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        return micros(Number(r.headers.get("x-svc-cost-usd")));
      };
      const margin = 10_000;
      assert.ok(c600 > margin && c5000 > 1_000_000 - margin, `the scenario needs 5,000 characters to cost about 1 USD (got ${c5000} micro-USD)`);

      const u = await gw.register();
      const ep = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url: rx.url + "/recover", events: ["balance.low"] } });
      assert.equal(ep.status, 201);
      const start = await balanceMicros(u.api_key);
      const threshold = start - c600 + margin;
      assert.equal((await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: threshold / 1e6 } })).json.armed, true);

      assert.equal(await cost(u.api_key, 600), c600);
      await rx.waitFor(() => rx.on("/recover").length >= 1, "balance.low after 600 characters");
      await gw.deposit(u.user_id, 1);
      assert.equal(await cost(u.api_key, 5000), c5000);
      await rx.waitFor(() => rx.on("/recover").length >= 2, "balance.low after the deposit and 5,000 characters");
      const [first, second] = rx.on("/recover").map((x) => verify(ep.json.secret as string, x));
      assert.deepEqual([first.data.balance_usd, second.data.balance_usd], [(start - c600) / 1e6, (start - c600 + 1_000_000 - c5000) / 1e6]);
      await settle();
      assert.equal(rx.on("/recover").length, 2, "one event per fall, none more");
    });

    test("every way money comes back re-arms the alert in its own statement; staying below does not", async () => {
      const db = gw.services.db.kysely;
      // The sweep would re-arm too (every 5 s): stopped, so what re-arms here is the write itself.
      await gw.services.alerts.stop();
      try {
        /** An account whose alert fired: balance 0.20 USD (0.30 held by `hold`) below a threshold of 0.25. */
        const fired = async () => {
          const u = await gw.register();
          const hold = await placeHold(db, { accountId: u.org_id, amountMicros: 300_000, reference: "m" });
          assert.equal((await setLowBalanceAlert(db, null, u.org_id, 250_000, { actor: { type: "operator", id: "operator" }, requestId: "req_alert_test", ip: null, userAgent: null })).armed, false);
          return { id: u.org_id, hold: hold.id };
        };
        const armed = async (id: string) => (await getLowBalanceAlert(db, id)).armed;
        const cases: [string, (a: { id: string; hold: string }) => Promise<unknown>, boolean][] = [
          ["a deposit in the operator's transaction", (a) => inTransaction(db, (trx) => credit(trx, { accountId: a.id, kind: "deposit", amountMicros: 100_000 })), true],
          ["a deposit that stays below", (a) => credit(db, { accountId: a.id, kind: "deposit", amountMicros: 40_000 }), false],
          ["a refund", (a) => credit(db, { accountId: a.id, kind: "refund", amountMicros: 60_000, holdId: a.hold }), true],
          ["an adjustment", (a) => credit(db, { accountId: a.id, kind: "adjustment", amountMicros: 60_000 }), true],
          ["a release", (a) => releaseHold(db, a.hold), true],
          ["a release in a transaction", (a) => inTransaction(db, (trx) => releaseHold(trx, a.hold)), true],
          ["a capture of less than held", (a) => captureHold(db, a.hold, 100_000), true],
          ["a capture in a transaction", (a) => inTransaction(db, (trx) => captureHold(trx, a.hold, 100_000)), true],
          ["a capture that leaves it below", (a) => captureHold(db, a.hold, 290_000), false],
        ];
        for (const [what, act, rearmed] of cases) {
          const a = await fired();
          await act(a);
          assert.equal(await armed(a.id), rearmed, what);
        }
        // Settlements of the same moment share one statement on PostgreSQL (ledger-pg-batch.ts).
        const many = await Promise.all(Array.from({ length: 6 }, () => fired()));
        const batches = backend.name === "postgres" ? pgLedgerBatcher(db).stats.batches : 0;
        await Promise.all(many.map((a, i) => (i % 2 === 0 ? releaseHold(db, a.hold) : captureHold(db, a.hold, 10_000))));
        if (backend.name === "postgres") assert.ok(pgLedgerBatcher(db).stats.batches > batches, "the settlements shared a batch statement");
        for (const a of many) assert.equal(await armed(a.id), true, "a batched settlement");
        // No threshold: nothing to arm, and nothing breaks.
        const plain = await gw.register();
        await credit(db, { accountId: plain.org_id, kind: "deposit", amountMicros: 1 });
        assert.equal((await getLowBalanceAlert(db, plain.org_id)).low_balance_usd, null);
      } finally {
        gw.services.alerts.start();
      }
    });

    test("after a recovery, 30 calls at once crossing the threshold again send exactly one more event", async () => {
      const u = await account("/again");
      const p = await price(u.api_key);
      const start = await balanceMicros(u.api_key);
      await gw.request("PUT", "/v1/billing/alerts", { token: u.api_key, body: { low_balance_usd: (start - 2 * p) / 1e6 } });
      for (let i = 0; i < 3; i++) await price(u.api_key);
      await rx.waitFor(() => rx.on("/again").length >= 1, "the first balance.low");
      await gw.deposit(u.user_id, (3 * p) / 1e6);
      assert.equal((await gw.request("GET", "/v1/billing/alerts", { token: u.api_key })).json.armed, true, "back above: armed");
      const answers = await Promise.all(Array.from({ length: 30 }, () => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: SPEECH })));
      assert.ok(answers.every((a) => a.status === 200));
      assert.equal(await balanceMicros(u.api_key), start - 30 * p, "the burst took the balance below again");
      await rx.waitFor(() => rx.on("/again").length >= 2, "the second balance.low");
      await settle();
      assert.equal(rx.on("/again").length, 2);
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

    test("a job's hold (made in the submit's transaction) fires once it committed, without the sweep; setting a threshold above the balance fires at once", async () => {
      // The sweep would find it too (every 5 s): stopped, so what fires here is the submit itself.
      await gw.services.alerts.stop();
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
