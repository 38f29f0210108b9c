/**
 * Per-key controls (D34) over HTTP on both databases: spend limit with period (atomic with the hold, given
 * back by releases and counted by captures, for calls and jobs), expiry, model allow-list, the key's own
 * rpm, `PATCH` and `spent_usd`; and the period arithmetic.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { periodStart } from "../../src/billing/key-spend.ts";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const ALPHA_VOICE = "pNx4Lq8TzR2vWk7HdM3s";
const SPEECH = { model: "alpha-turbo-v2-5", input: "Hello there.", voice_id: ALPHA_VOICE };
const BETA_SPEECH = { model: "beta-speech-turbo", input: "Hello there.", voice_id: DEMO_BETA_VOICE_ID };
const micros = (usd: number) => Math.round(usd * 1_000_000);

describe("periodStart (D34 periods, UTC)", () => {
  const t = Date.parse("2026-11-26T15:04:05.678Z"); // a Thursday
  test("day, week (Monday), month, total", () => {
    assert.equal(new Date(periodStart("day", t)).toISOString(), "2026-11-26T00:00:00.000Z");
    assert.equal(new Date(periodStart("week", t)).toISOString(), "2026-11-23T00:00:00.000Z");
    assert.equal(new Date(periodStart("month", t)).toISOString(), "2026-11-01T00:00:00.000Z");
    assert.equal(periodStart("total", t), 0);
  });
  test("a Sunday belongs to the week that started on the Monday before; a Monday starts its own", () => {
    assert.equal(new Date(periodStart("week", Date.parse("2026-11-29T23:59:59Z"))).toISOString(), "2026-11-23T00:00:00.000Z");
    assert.equal(new Date(periodStart("week", Date.parse("2026-11-30T00:00:00Z"))).toISOString(), "2026-11-30T00:00:00.000Z");
    assert.equal(new Date(periodStart("month", Date.parse("2027-01-01T00:00:00Z"))).toISOString(), "2027-01-01T00:00:00.000Z");
  });
});

for (const backend of BACKENDS) {
  describe(`per-key controls (D34) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });
    const db = () => gw.services.db.kysely;
    const admin = { token: ADMIN_TOKEN };

    /** A funded account whose own limits let many calls run at once. */
    async function account(depositUsd = 20) {
      const u = await gw.register();
      await gw.deposit(u.user_id, depositUsd);
      const r = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, {
        ...admin,
        body: { rpm: 10_000, per_model_rpm: 10_000, audio_concurrent_per_provider: { alpha: 100, beta: 100 }, image_concurrent: 50, image_queue_depth_cap: 100 },
      });
      assert.equal(r.status, 200);
      return u;
    }
    async function newKey(token: string, body: Record<string, unknown>) {
      const r = await gw.request("POST", "/v1/auth/keys", { token, body });
      assert.equal(r.status, 201, JSON.stringify(r.json));
      return r.json as { key_id: string; api_key: string } & Record<string, unknown>;
    }
    async function keyRow(token: string, keyId: string) {
      const r = await gw.request("GET", "/v1/auth/keys", { token });
      assert.equal(r.status, 200);
      return (r.json.data as Array<Record<string, unknown>>).find((k) => k.key_id === keyId)!;
    }
    async function assertInvariants(accountId: string) {
      assert.equal(await getBalance(db(), accountId), await ledgerSum(db(), accountId), "balance == ledger sum");
      const open = await db().selectFrom("holds").select("id").where("account_id", "=", accountId).where("status", "=", "open").execute();
      assert.equal(open.length, 0, "no hold left open");
    }
    async function priceOf(token: string, body: object): Promise<number> {
      const r = await gw.request("POST", "/v1/audio/speech", { token, body });
      assert.equal(r.status, 200);
      return micros(Number(r.headers.get("x-svc-cost-usd")));
    }

    test("controls are set at creation, shown by the list, and bad values refused with nothing created", async () => {
      const u = await account();
      const expires = new Date(Date.now() + 86_400_000).toISOString();
      const k = await newKey(u.session_token, { name: "ci", spend_limit_usd: 1.5, spend_limit_period: "day", expires_at: expires, models: ["alpha-*", "imgA-v4"], rpm: 20 });
      assert.equal(k.spend_limit_usd, 1.5);
      assert.equal(k.spend_limit_period, "day");
      assert.equal(k.expires_at, expires);
      assert.deepEqual(k.models, ["alpha-*", "imgA-v4"]);
      assert.equal(k.rpm, 20);
      assert.equal(k.spent_usd, 0);
      const row = await keyRow(u.session_token, k.key_id);
      assert.deepEqual(
        { l: row.spend_limit_usd, p: row.spend_limit_period, e: row.expires_at, m: row.models, r: row.rpm, s: row.spent_usd },
        { l: 1.5, p: "day", e: expires, m: ["alpha-*", "imgA-v4"], r: 20, s: 0 },
      );
      const plain = await keyRow(u.session_token, (await newKey(u.session_token, {})).key_id);
      assert.deepEqual(
        { l: plain.spend_limit_usd, p: plain.spend_limit_period, e: plain.expires_at, m: plain.models, r: plain.rpm },
        { l: null, p: "month", e: null, m: null, r: null },
        "defaults: no limit, period month",
      );

      const before = (await gw.request("GET", "/v1/auth/keys", { token: u.session_token })).json.data.length;
      const bad: [Record<string, unknown>, string][] = [
        [{ expires_at: "2020-01-01T00:00:00Z" }, "expires_at"],
        [{ expires_at: "tomorrow" }, "expires_at"],
        [{ spend_limit_usd: -1 }, "spend_limit_usd"],
        [{ spend_limit_usd: 0.0000001 }, "spend_limit_usd"],
        [{ spend_limit_period: "year" }, "spend_limit_period"],
        [{ models: [] }, "models"],
        [{ models: ["no-such-model"] }, "models"],
        [{ models: "alpha-*" }, "models"],
        [{ rpm: 0 }, "rpm"],
        [{ rpm: 10_001 }, "rpm"],
        [{ rpm: 2.5 }, "rpm"],
      ];
      for (const [body, param] of bad) {
        const r = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, "invalid_request");
        assert.equal(r.json.error.param, param, JSON.stringify(body));
      }
      assert.equal((await gw.request("GET", "/v1/auth/keys", { token: u.session_token })).json.data.length, before);
    });

    test("a model outside the allow-list answers 403 model_not_allowed on every kind of call, and charges nothing", async () => {
      const u = await account();
      const k = await newKey(u.api_key, { models: ["alpha-*"] });
      const balance = await getBalance(db(), u.org_id);
      const calls: [string, string, object][] = [
        ["POST", "/v1/audio/speech", BETA_SPEECH],
        ["POST", "/v1/audio/music", { model: "beta-music", prompt: "calm piano", music_length_ms: 2000 }],
        ["POST", "/v1/images/generations", { model: "imgA-v4", prompt: "a lighthouse" }],
        ["POST", "/v1/chat/completions", { model: "fast", messages: [{ role: "user", content: "hi" }] }],
        ["POST", "/v1/messages", { model: "fast", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }],
      ];
      for (const [method, path, body] of calls) {
        const r = await gw.request(method, path, { token: k.api_key, body });
        assert.equal(r.status, 403, `${path}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error.code, "model_not_allowed");
        assert.equal(r.json.error.type, "permission_error");
      }
      assert.equal(await getBalance(db(), u.org_id), balance, "nothing charged");
      const usage = await db().selectFrom("usage_records").select("id").where("key_id", "=", k.key_id).execute();
      assert.equal(usage.length, 0, "no usage record");
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200, "an allowed model works");
      // An exact id and a text alias in the list.
      const exact = await newKey(u.api_key, { models: ["beta-speech-turbo", "fast"] });
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: exact.api_key, body: BETA_SPEECH })).status, 200);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: exact.api_key, body: SPEECH })).status, 403);
      const chat = await gw.request("POST", "/v1/chat/completions", { token: exact.api_key, body: { model: "fast", messages: [{ role: "user", content: "hi" }] } });
      assert.equal(chat.status, 200, JSON.stringify(chat.json));
    });

    test("an expired key answers 401 auth_error; PATCH extends it; an expiry in the past is refused", async () => {
      const u = await account();
      const k = await newKey(u.api_key, { expires_at: new Date(Date.now() + 1500).toISOString() });
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: k.api_key })).status, 200);
      await new Promise((r) => setTimeout(r, 1600));
      const gone = await gw.request("GET", "/v1/auth/me", { token: k.api_key });
      assert.equal(gone.status, 401);
      assert.equal(gone.json.error.code, "auth_error");
      assert.match(gone.json.error.message, /expired/);
      const past = await gw.request("PATCH", `/v1/auth/keys/${k.key_id}`, { token: u.api_key, body: { expires_at: "2001-01-01" } });
      assert.equal(past.status, 400);
      assert.equal(past.json.error.param, "expires_at");
      const ext = await gw.request("PATCH", `/v1/auth/keys/${k.key_id}`, { token: u.api_key, body: { expires_at: null } });
      assert.equal(ext.status, 200);
      assert.equal(ext.json.expires_at, null);
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: k.api_key })).status, 200, "works again at once");
    });

    test("a key's rpm counts every request made with it; other keys of the account are not affected", async () => {
      const u = await account();
      const k = await newKey(u.api_key, { rpm: 3 });
      for (let i = 0; i < 3; i++) assert.equal((await gw.request("GET", "/v1/auth/me", { token: k.api_key })).status, 200);
      const over = await gw.request("GET", "/v1/auth/me", { token: k.api_key });
      assert.equal(over.status, 429);
      assert.equal(over.json.error.code, "rate_limited");
      assert.ok(Number(over.headers.get("retry-after")) >= 1);
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).status, 200, "the account's other key still works");
      const patched = await gw.request("PATCH", `/v1/auth/keys/${k.key_id}`, { token: u.api_key, body: { rpm: null } });
      assert.equal(patched.status, 200);
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: k.api_key })).status, 200, "no key rpm any more");
    });

    test("D34 order: the allow-list comes before the key's rpm, and a refused model takes no place in any window", async () => {
      const u = await account();
      const k = await newKey(u.api_key, { models: ["alpha-*"], rpm: 3 });
      const remaining = (r: { headers: Headers }) => Number(r.headers.get("x-ratelimit-remaining"));
      const start = remaining(await gw.request("GET", "/v1/auth/me", { token: u.api_key }));
      // Refused models, on a synchronous call, a chat and a job: none counts in the key's or the account's window.
      for (let i = 0; i < 4; i++) {
        for (const [path, body] of [
          ["/v1/audio/speech", BETA_SPEECH],
          ["/v1/chat/completions", { model: "fast", messages: [{ role: "user", content: "hi" }] }],
          ["/v1/images/generations", { model: "imgA-v4", prompt: "a lighthouse" }],
        ] as const) {
          const r = await gw.request("POST", path, { token: k.api_key, body });
          assert.equal(r.status, 403, `${path}: ${JSON.stringify(r.json)}`);
          assert.equal(r.json.error.code, "model_not_allowed");
          assert.equal(remaining(r), start, "the 403 carries the account window's headers, unchanged");
        }
      }
      // The key's rpm is whole: three allowed calls, then 429.
      for (let i = 0; i < 3; i++) {
        const r = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
        assert.equal(r.status, 200, `allowed call ${i + 1}: ${JSON.stringify(r.json)}`);
        assert.equal(remaining(r), start - 1 - i, "each allowed call counts once in the account's window");
      }
      const over = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(over.status, 429);
      assert.equal(over.json.error.code, "rate_limited");
      // With the rpm used up, a refused model still answers the allow-list's 403, not 429.
      for (const [path, body] of [
        ["/v1/audio/speech", BETA_SPEECH],
        ["/v1/messages", { model: "fast", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }],
        ["/v1/videos/generations", { model: "vidA-2.5-pro", prompt: "waves" }],
      ] as const) {
        const r = await gw.request("POST", path, { token: k.api_key, body });
        assert.equal(r.status, 403, `${path}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error.code, "model_not_allowed");
        assert.equal(r.headers.get("retry-after"), null);
      }
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: k.api_key })).status, 429, "other requests still meet the used-up rpm");
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).status, 200, "the account's other key goes on");
    });

    test("a model call refused before its model is checked (a malformed body) still counts in the key's rpm", async () => {
      const u = await account();
      const k = await newKey(u.api_key, { models: ["alpha-*"], rpm: 2 });
      const bad = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: { ...SPEECH, input: 5 } });
      assert.equal(bad.status, 400, JSON.stringify(bad.json));
      assert.ok(bad.headers.get("x-ratelimit-remaining") !== null, "a 400 carries the D13 headers");
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200);
      const over = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(over.status, 429, "the malformed call took the first place");
      const none = await newKey(u.api_key, { rpm: 1 });
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: none.api_key, body: SPEECH })).status, 200);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: none.api_key, body: SPEECH })).status, 429, "a key without an allow-list counts the same way (its guard counts its windows)");
    });

    test("50 parallel calls on a key whose limit covers 3: exactly 3 succeed, the rest 402 key_spend_limit, the spend never passes the limit", async () => {
      const u = await account();
      const price = await priceOf(u.api_key, SPEECH);
      const k = await newKey(u.api_key, { spend_limit_usd: (3 * price + price / 2) / 1e6 });
      const answers = await Promise.all(Array.from({ length: 50 }, () => gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })));
      const ok = answers.filter((a) => a.status === 200).length;
      const refused = answers.filter((a) => a.status === 402);
      assert.equal(ok, 3, `statuses: ${answers.map((a) => a.status).join(",")}`);
      assert.equal(refused.length, 47);
      for (const r of refused) {
        assert.equal(r.json.error.code, "key_spend_limit");
        assert.equal(r.json.error.type, "billing_error");
      }
      const row = await keyRow(u.api_key, k.key_id);
      assert.equal(micros(row.spent_usd as number), 3 * price);
      assert.ok(micros(row.spent_usd as number) <= micros(row.spend_limit_usd as number));
      const charged = await db()
        .selectFrom("usage_records")
        .select((eb) => eb.fn.sum<number>("cost_micros").as("total"))
        .where("key_id", "=", k.key_id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(charged.total), 3 * price, "the usage log agrees");
      await assertInvariants(u.org_id);
    });

    test("a failed call gives its hold back to the key; a test-mode key is never counted", async () => {
      const u = await account();
      const price = await priceOf(u.api_key, SPEECH);
      const k = await newKey(u.api_key, { spend_limit_usd: (2 * price) / 1e6 });
      const failed = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH, headers: { "x-svc-simulate": "fail" } });
      assert.equal(failed.status, 502);
      assert.equal((await keyRow(u.api_key, k.key_id)).spent_usd, 0, "released hold no longer counts");
      for (let i = 0; i < 2; i++) assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200);
      const third = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(third.status, 402);
      assert.equal(third.json.error.code, "key_spend_limit");
      const t = await newKey(u.api_key, { mode: "test", spend_limit_usd: price / 1e6 });
      for (let i = 0; i < 3; i++) assert.equal((await gw.request("POST", "/v1/audio/speech", { token: t.api_key, body: SPEECH })).status, 200);
      assert.equal((await keyRow(u.api_key, t.key_id)).spent_usd, 0);
      await assertInvariants(u.org_id);
    });

    test("a job's hold counts at submit; success counts its cost, failure gives it back", async () => {
      const u = await account();
      const k = await newKey(u.api_key, { spend_limit_usd: 1 });
      const ok = await gw.request("POST", "/v1/images/generations", { token: k.api_key, body: { model: "imgA-v4", prompt: "a lighthouse" }, headers: { prefer: "wait=30" } });
      assert.ok(ok.status === 200 || ok.status === 202, JSON.stringify(ok.json));
      const done = await gw.waitForJob(k.api_key, ok.json.id);
      assert.equal(done.json.status, "succeeded");
      const bad = await gw.request("POST", "/v1/images/generations", { token: k.api_key, body: { model: "imgA-v4", prompt: "a storm" }, headers: { "x-svc-simulate": "fail" } });
      const failed = await gw.waitForJob(k.api_key, bad.json.id);
      assert.equal(failed.json.status, "failed");
      // The failed job's release may be committed just before the answer the waiter read; the counter moves with it.
      assert.equal(micros((await keyRow(u.api_key, k.key_id)).spent_usd as number), micros(done.json.cost_usd));
      const big = await gw.request("POST", "/v1/images/generations", { token: k.api_key, body: { model: "imgA-v4", prompt: "many", n: 10 } });
      if (micros(done.json.cost_usd) + micros(big.json?.hold_usd ?? 0) > 1_000_000) assert.equal(big.status, 402);
      await assertInvariants(u.org_id);
    });

    test("PATCH sets a limit on a key already in use: what it spent this period counts at once", async () => {
      const u = await account();
      const price = await priceOf(u.api_key, SPEECH);
      const k = await newKey(u.api_key, { name: "old" });
      for (let i = 0; i < 2; i++) assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200);
      assert.equal(micros((await keyRow(u.api_key, k.key_id)).spent_usd as number), 2 * price, "spent_usd without a limit, from the usage log");
      const p = await gw.request("PATCH", `/v1/auth/keys/${k.key_id}`, { token: u.session_token, body: { name: "capped", spend_limit_usd: (3 * price) / 1e6, spend_limit_period: "week" } });
      assert.equal(p.status, 200, JSON.stringify(p.json));
      assert.equal(p.json.name, "capped");
      assert.equal(p.json.spend_limit_period, "week");
      assert.equal(micros(p.json.spent_usd), 2 * price);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200);
      const over = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(over.status, 402);
      assert.equal(over.json.error.code, "key_spend_limit");
      const raised = await gw.request("PATCH", `/v1/auth/keys/${k.key_id}`, { token: u.api_key, body: { spend_limit_usd: null } });
      assert.equal(raised.json.spend_limit_usd, null);
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH })).status, 200, "no limit any more");
      const other = await gw.register();
      const notMine = await gw.request("PATCH", `/v1/auth/keys/${k.key_id}`, { token: other.api_key, body: { rpm: 5 } });
      assert.equal(notMine.status, 404);
      assert.equal(notMine.json.error.code, "key_not_found");
      await assertInvariants(u.org_id);
    });
  });
}
