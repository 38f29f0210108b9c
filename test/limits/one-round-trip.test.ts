/**
 * A model call's windows in one round trip to the limit store (issue 33), on the memory store and on
 * Redis: a chat completion counts the key's rpm, the account's rpm, the per-model window and the token
 * window with ONE store call (one Redis script), in the D34 order with today's answers: the first window
 * that refuses answers its own 429 (body, `Retry-After`, the account window's D13 headers), counts, and the
 * windows after it are not counted; a body refused before the model is checked still counts in the
 * request windows and carries the headers; a model outside the key's allow-list counts nothing. Audio
 * calls and job submits take the same path (an audio call's pool slot is taken concurrently).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { LimitStore } from "../../src/limits/store.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { REDIS_SKIP, REDIS_TEST_URL } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

const STORES: { name: string; skip: string | false; env: () => Record<string, string> }[] = [
  { name: "memory", skip: false, env: () => ({}) },
  { name: "Redis", skip: REDIS_SKIP, env: () => ({ REDIS_URL: REDIS_TEST_URL, REDIS_PREFIX: `gwtest-rt-${randomBytes(4).toString("hex")}` }) },
];

/** `fast` resolves to this model (its per-model window is named after the concrete id). */
const CHAT = { model: "fast", max_tokens: 16, messages: [{ role: "user", content: "hi" }] };

/** The store calls made during `fn` (each one round trip with Redis: a script, or a MULTI sent at once). */
async function storeCalls(store: LimitStore, fn: () => Promise<unknown>): Promise<string[]> {
  const calls: string[] = [];
  const methods = ["hit", "hitAll", "peek", "hitWindow", "peekWindow", "resetWindow", "acquire", "release", "refresh", "inUse"] as const;
  const target = store as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const m of methods) {
    const orig = target[m];
    target[m] = function (this: unknown, ...args: unknown[]) {
      calls.push(m);
      return orig.apply(store, args);
    };
  }
  try {
    await fn();
  } finally {
    for (const m of methods) delete target[m];
  }
  return calls;
}

for (const kind of STORES) {
  describe(`a model call's windows in one round trip (${kind.name} store)`, { skip: kind.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway("sqlite", kind.env());
    });
    after(async () => {
      await gw?.close();
    });
    const store = () => gw.services.limiter.store;
    const count = async (key: string) => (await store().peek(key)).count;
    const chat = (token: string, body: unknown = CHAT) => gw.request("POST", "/v1/chat/completions", { token, body });
    const rate = (r: TestResponse) => ({
      limit: r.headers.get("x-ratelimit-limit"),
      remaining: r.headers.get("x-ratelimit-remaining"),
      reset: r.headers.get("x-ratelimit-reset"),
    });

    /** A funded account with `limits` (admin overrides) and a key with `key` controls. */
    async function setup(limits: Record<string, number>, key: Record<string, unknown> = {}) {
      const u = await gw.register();
      await gw.deposit(u.user_id, 20);
      const set = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: limits });
      assert.equal(set.status, 200, JSON.stringify(set.json));
      const k = await gw.request("POST", "/v1/auth/keys", { token: u.api_key, body: key });
      assert.equal(k.status, 201, JSON.stringify(k.json));
      const account = u.org_id;
      const keyId = k.json.key_id as string;
      const model = (await chat(k.json.api_key as string)).json.model as string;
      return {
        token: k.json.api_key as string,
        windows: async () => ({
          krpm: await count(`krpm:${keyId}`),
          rpm: await count(`rpm:${account}`),
          mrpm: await count(`mrpm:${account}:${model}`),
          tpm: await count(`tpm:${account}`),
        }),
      };
    }

    test("a chat completion makes one store call: key rpm, account rpm, per-model and token windows together", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1000, tpm: 1_000_000 }, { rpm: 100 });
      const before = await a.windows();
      let answer: TestResponse | undefined;
      const calls = await storeCalls(store(), async () => {
        answer = await chat(a.token);
      });
      assert.equal(answer?.status, 200, JSON.stringify(answer?.json));
      assert.deepEqual(calls, ["hitAll"], "one round trip before the hold");
      const after = await a.windows();
      assert.equal(after.krpm, before.krpm + 1);
      assert.equal(after.rpm, before.rpm + 1);
      assert.equal(after.mrpm, before.mrpm + 1);
      assert.ok(after.tpm > before.tpm + 16, "input + max_tokens counted");
      const headers = rate(answer!);
      assert.deepEqual([headers.limit, headers.remaining], ["1000", String(1000 - after.rpm)]);
      assert.ok(Number(headers.reset) > 0 && Number(headers.reset) <= 60);
      // A streamed answer too (its headers are written by hand from the reply's).
      const streamed = await storeCalls(store(), async () => {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${a.token}`, "content-type": "application/json" },
          body: JSON.stringify({ ...CHAT, stream: true }),
        });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("x-ratelimit-remaining"), String(1000 - after.rpm - 1));
        await res.arrayBuffer();
      });
      assert.deepEqual(streamed, ["hitAll"]);
      // Other requests: one store call for the key's and the account's windows.
      assert.deepEqual(await storeCalls(store(), () => gw.request("GET", "/v1/auth/me", { token: a.token })), ["hitAll"]);
    });

    test("over the key's rpm: 429 of the key, nothing after it counted", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1000, tpm: 1_000_000 }, { rpm: 2 });
      // setup made the first call; the second fills the key's window.
      assert.equal((await chat(a.token)).status, 200);
      const before = await a.windows();
      const over = await chat(a.token);
      assert.equal(over.status, 429);
      assert.equal(over.json.error.code, "rate_limited");
      assert.equal(over.json.error.message, "Rate limit of 2 requests per minute for this API key reached.");
      assert.ok(Number(over.headers.get("retry-after")) >= 1);
      assert.equal(over.headers.get("x-ratelimit-remaining"), null, "a key's refusal names no account window");
      assert.deepEqual(await a.windows(), { ...before, krpm: before.krpm + 1 });
    });

    test("over the account's rpm: 429 with the window's headers, the model and token windows not counted", async () => {
      const a = await setup({ rpm: 4, per_model_rpm: 1000, tpm: 1_000_000 });
      // Key creation and the first chat took 2 of 4 places (the deposit and limits are the operator's).
      assert.equal((await chat(a.token)).status, 200);
      assert.equal((await chat(a.token)).status, 200);
      const before = await a.windows();
      assert.equal(before.rpm, 4);
      const over = await chat(a.token);
      assert.equal(over.status, 429);
      assert.match(over.json.error.message, /^Rate limit of 4 requests per minute reached \(Tier \d\); retry in \d+ s\.$/);
      assert.ok(Number(over.headers.get("retry-after")) >= 1);
      assert.deepEqual([rate(over).limit, rate(over).remaining], ["4", "0"]);
      assert.deepEqual(await a.windows(), { ...before, rpm: 5 });
    });

    test("over the per-model window: 429 naming the model, the request counted (headers), the token window not", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1, tpm: 1_000_000 });
      const before = await a.windows();
      const over = await chat(a.token);
      assert.equal(over.status, 429);
      assert.match(over.json.error.message, /^Rate limit of 1 requests per minute for \S+ reached \(Tier \d\)\.$/);
      assert.ok(Number(over.headers.get("retry-after")) >= 1);
      assert.deepEqual([rate(over).limit, rate(over).remaining], ["1000", String(1000 - before.rpm - 1)]);
      assert.deepEqual(await a.windows(), { ...before, rpm: before.rpm + 1, mrpm: 2 });
    });

    test("over the token window, or over max_single_request: 429, the windows before counted, the token window only when reached", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1000, tpm: 100, max_single_request: 60 });
      const before = await a.windows();
      assert.ok(before.tpm > 16 && before.tpm < 60, String(before.tpm));
      const big = await chat(a.token, { ...CHAT, max_tokens: 100 });
      assert.equal(big.status, 429);
      assert.match(big.json.error.message, /^This request needs about \d+ tokens; Tier \d allows 60 in one request\. Send a shorter request, or: The gateway's operator set this limit/);
      // No wait lifts it (D48): no Retry-After, and SDKs told not to retry.
      assert.equal(big.headers.get("retry-after"), null);
      assert.equal(big.headers.get("x-should-retry"), "false");
      assert.equal(rate(big).limit, "1000");
      const mid = await a.windows();
      assert.deepEqual(mid, { ...before, rpm: before.rpm + 1, mrpm: before.mrpm + 1 }, "max_single_request: the token window not counted");
      assert.ok(before.tpm < 38, "a call of max_tokens 40 fits once in the token window");
      assert.equal((await chat(a.token, { ...CHAT, max_tokens: 40 })).status, 200);
      const full = await a.windows();
      const over = await chat(a.token, { ...CHAT, max_tokens: 40 });
      assert.equal(over.status, 429);
      assert.match(over.json.error.message, /^Token limit of 100 per minute reached \(Tier \d\)\.$/);
      assert.ok(Number(over.headers.get("retry-after")) >= 1);
      assert.equal(rate(over).remaining, String(1000 - full.rpm - 1));
      const after = await a.windows();
      assert.deepEqual({ ...after, tpm: 0 }, { ...full, rpm: full.rpm + 1, mrpm: full.mrpm + 1, tpm: 0 });
      assert.ok(after.tpm > 100, "the refused tokens counted (a client hammering stays refused)");
    });

    test("a body refused before its model is checked counts in the request windows and carries the headers", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1000, tpm: 1_000_000 }, { rpm: 50 });
      const before = await a.windows();
      const bad = await chat(a.token, { model: "fast" });
      assert.equal(bad.status, 400, JSON.stringify(bad.json));
      assert.deepEqual([rate(bad).limit, rate(bad).remaining], ["1000", String(1000 - before.rpm - 1)]);
      const notText = await chat(a.token, { ...CHAT, model: "no-such-model" });
      assert.equal(notText.status, 400);
      assert.equal(rate(notText).remaining, String(1000 - before.rpm - 2));
      assert.deepEqual(await a.windows(), { ...before, krpm: before.krpm + 2, rpm: before.rpm + 2 });
    });

    test("a model outside the key's allow-list counts nothing and carries the unchanged headers", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1000, tpm: 1_000_000 }, { rpm: 50 });
      const k = await gw.request("POST", "/v1/auth/keys", { token: a.token, body: { models: ["alpha-*"], rpm: 5 } });
      const before = await a.windows();
      const r = await chat(k.json.api_key as string);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, "model_not_allowed");
      assert.equal(rate(r).remaining, String(1000 - before.rpm));
      assert.deepEqual(await a.windows(), before);
      assert.equal(await count(`krpm:${k.json.key_id as string}`), 0);
    });

    test("an audio call (windows, then its pool slot concurrently) and a job submit: one windows call", async () => {
      const a = await setup({ rpm: 1000, per_model_rpm: 1000, tpm: 1_000_000 }, { rpm: 50 });
      let speech: TestResponse | undefined;
      const audio = await storeCalls(store(), async () => {
        speech = await gw.request("POST", "/v1/audio/speech", { token: a.token, body: { input: "hi", voice_id: DEMO_ALPHA_VOICE_ID } });
      });
      assert.equal(speech?.status, 200);
      assert.ok(speech?.headers.get("x-ratelimit-remaining") !== null);
      assert.deepEqual(audio.filter((c) => c !== "release").sort(), ["acquire", "hitAll"]);
      let job: TestResponse | undefined;
      const submit = await storeCalls(store(), async () => {
        job = await gw.request("POST", "/v1/images/generations", { token: a.token, body: { model: "imgA-v4", prompt: "a lighthouse" } });
      });
      assert.equal(job?.status, 202, JSON.stringify(job?.json));
      assert.ok(job?.headers.get("x-ratelimit-remaining") !== null);
      assert.deepEqual(submit, ["hitAll"]);
    });

    test("changed (issue 33): over the account's rpm, a malformed model call answers its 400, counted, with the headers", async () => {
      const a = await setup({ rpm: 2, per_model_rpm: 1000, tpm: 1_000_000 });
      // Key creation and setup's chat used the window.
      const before = await a.windows();
      assert.equal(before.rpm, 2);
      const bad = await chat(a.token, { model: "fast" });
      assert.equal(bad.status, 400, "the body is read before the windows are counted (was 429 at auth)");
      assert.deepEqual([rate(bad).limit, rate(bad).remaining], ["2", "0"]);
      assert.equal(bad.headers.get("retry-after"), null);
      assert.deepEqual(await a.windows(), { ...before, rpm: 3 });
      // A well-formed call still meets the window; other requests too.
      assert.equal((await chat(a.token)).status, 429);
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: a.token })).status, 429);
    });
  });
}
