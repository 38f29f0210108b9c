/**
 * Text upstreams configured with `TEXT_UPSTREAMS` (OpenAI-compatible, here two fake servers on loopback):
 * the gateway forwards the request (model name mapped, key of the upstream, `max_tokens` unchanged),
 * bills the upstream's reported usage, and falls back: same model at the other source (layer 1), then
 * an equivalent model (layer 2), marking the answer `X-Svc-Fallback`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { getTextModel, quoteTextCall } from "../../src/catalog/text-models.ts";
import { completion, type FakeOpenAI, startFakeOpenAI, textStream } from "../../fakes/openai-chat.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("text upstreams and fallback", () => {
  let a: FakeOpenAI;
  let b: FakeOpenAI;
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };

  before(async () => {
    a = await startFakeOpenAI();
    b = await startFakeOpenAI();
    gw = await startGateway("sqlite", {
      TEXT_UPSTREAMS: JSON.stringify([
        { name: "primary", baseUrl: a.baseUrl, apiKey: "key-a", timeoutMs: 5000 },
        { name: "secondary", baseUrl: b.baseUrl, apiKey: "key-b", timeoutMs: 5000 },
      ]),
    });
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  const chat = () =>
    gw.request("POST", "/v1/chat/completions", {
      token: user.api_key,
      body: { model: "best", messages: [{ role: "user", content: "hi" }], max_tokens: 777 },
    });

  test("the plan: the model at each configured source, then its first two equivalents at theirs", () => {
    const best = getTextModel("best")!;
    const equivalents = best.equivalents.slice(0, 2).map((id) => getTextModel(id)!);
    const plan = gw.services.chatPlanFor(best).map((s) => [s.model, s.source, s.upstreamModel, s.layer]);
    assert.deepEqual(plan, [
      [best.id, "primary", best.upstreamModel, 0],
      [best.id, "secondary", best.upstreamModel, 1],
      ...equivalents.flatMap((eq, i) => [
        [eq.id, "primary", eq.upstreamModel, 2 + i],
        [eq.id, "secondary", eq.upstreamModel, 2 + i],
      ]),
    ]);
  });

  test("forwarded to the primary: mapped model, its key, max_tokens unchanged, usage billed", async () => {
    a.reset();
    b.reset();
    a.enqueue({ kind: "json", body: completion({ content: "from A", usage: { prompt: 1000, completion: 200 } }) });
    const before = await getBalance(gw.services.db.kysely, user.org_id);
    const r = await chat();
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.choices[0].message.content, "from A");
    assert.equal(r.headers.get("x-svc-fallback"), null);
    const sent = a.requests[0];
    assert.equal(sent.headers.authorization, "Bearer key-a");
    const body = sent.body as { model: string; max_tokens: number };
    const best = getTextModel("best")!;
    assert.equal(body.model, best.upstreamModel);
    assert.equal(body.max_tokens, 777);
    const cost = quoteTextCall(best, { inputTokens: 1000, cachedTokens: 0, outputTokens: 200 });
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, user.org_id), (before ?? 0) - cost);
    assert.equal(await ledgerSum(db, user.org_id), (before ?? 0) - cost);
  });

  test("primary fails: same model at the secondary, layer 1", async () => {
    a.reset();
    b.reset();
    a.enqueue({ kind: "json", status: 500, body: { error: { message: "down" } } });
    b.enqueue({ kind: "json", body: completion({ content: "from B" }) });
    const r = await chat();
    assert.equal(r.status, 200);
    assert.equal(r.json.choices[0].message.content, "from B");
    assert.equal(r.headers.get("x-svc-fallback"), "true");
    assert.equal(r.headers.get("x-svc-fallback-layer"), "1");
    assert.equal(r.json.model, getTextModel("best")!.id);
  });

  test("both sources fail: the first equivalent model, layer 2; a 400 does not fall back", async () => {
    a.reset();
    b.reset();
    const best = getTextModel("best")!;
    const eq = getTextModel(best.equivalents[0])!;
    a.respond = (req) =>
      (req.body as { model: string }).model === eq.upstreamModel
        ? { kind: "json", body: completion({ content: "equivalent" }) }
        : { kind: "json", status: 503, body: { error: { message: "busy" } } };
    b.respond = () => ({ kind: "json", status: 502, body: { error: { message: "bad gateway" } } });
    const r = await chat();
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.model, eq.id);
    assert.equal(r.headers.get("x-svc-fallback-layer"), "2");

    a.respond = () => ({ kind: "json", status: 400, body: { error: { message: "bad request" } } });
    const before = await getBalance(gw.services.db.kysely, user.org_id);
    const refused = await chat();
    assert.equal(refused.status, 502);
    assert.equal(b.requests.filter((q) => (q.body as { model: string }).model === best.upstreamModel).length, 1, "no fallback after a 400");
    assert.equal(await getBalance(gw.services.db.kysely, user.org_id), before);
    a.respond = null;
    b.respond = null;
  });
});

describe("a streamed chat that breaks off", () => {
  test("the hold is released: nothing is charged for a partial answer", async () => {
    const up = await startFakeOpenAI();
    const gw = await startGateway("sqlite", { TEXT_UPSTREAMS: JSON.stringify([{ name: "only", baseUrl: up.baseUrl, apiKey: "k" }]) });
    try {
      const u = await gw.register();
      up.respond = () => ({ kind: "sse", events: textStream(["one ", "two ", "three ", "four "]), dropAfter: 3 });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hi" }], stream: true }),
      });
      const text = await res.text();
      assert.match(text, /provider_error/);
      assert.doesNotMatch(text, /\[DONE\]/);
      await new Promise((r) => setTimeout(r, 100));
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), 500_000);
      assert.equal(await ledgerSum(db, u.org_id), 500_000);
    } finally {
      await gw.close();
      await up.close();
    }
  });
});

describe("text sources in UPSTREAMS (D25)", () => {
  test("an openai entry naming a text family serves chat, with its models override, before TEXT_UPSTREAMS", async () => {
    const main = await startFakeOpenAI();
    const legacy = await startFakeOpenAI();
    const gw = await startGateway("sqlite", {
      TXT_KEY: "key-upstreams-entry",
      UPSTREAMS: JSON.stringify([
        { name: "openai-text", protocol: "openai", base_url: main.baseUrl, api_key: "env:TXT_KEY", families: ["txtA"], models: { "txtA-small": "gpt-next-mini" }, timeout_s: 200 },
      ]),
      TEXT_UPSTREAMS: JSON.stringify([{ name: "legacy", baseUrl: legacy.baseUrl, apiKey: "key-legacy", timeoutMs: 5000 }]),
    });
    try {
      const small = getTextModel("txtA-small")!;
      assert.deepEqual(
        gw.services.chatPlanFor(small).filter((s) => s.model === small.id).map((s) => [s.source, s.upstreamModel, s.layer]),
        [
          ["openai-text", "gpt-next-mini", 0],
          ["legacy", small.upstreamModel, 1],
        ],
      );
      const u = await gw.register();
      main.enqueue({ kind: "json", body: completion({ content: "from the UPSTREAMS entry" }) });
      const r = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: { model: "txtA-small", messages: [{ role: "user", content: "hi" }] } });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.json.choices[0].message.content, "from the UPSTREAMS entry");
      assert.equal(main.requests[0].headers.authorization, "Bearer key-upstreams-entry");
      assert.equal((main.requests[0].body as { model: string }).model, "gpt-next-mini");
      assert.equal(legacy.requests.length, 0);
      // The sync-hold sweep waits past the whole chat fallback chain (200 s + 5 s, plus its margin).
      assert.equal(gw.services.sweep.sweepSyncHoldsAfterS, 200 + 5 + 60);
    } finally {
      await gw.close();
      await main.close();
      await legacy.close();
    }
  });
});
