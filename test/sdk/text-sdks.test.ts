/**
 * The official `openai` and `@anthropic-ai/sdk` packages pointed at the gateway (issue "Text and audio
 * understanding"): chat, streaming chat with usage, tool calls, messages and streamed messages; each
 * call's ledger charge equals its reported usage at the model's prices, to the micro-dollar (cached
 * input at 10 %).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { getBalance, ledgerSum, listLedger } from "../../src/billing/ledger.ts";
import { getTextModel, quoteTextCall } from "../../src/catalog/text-models.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("text SDKs against the gateway", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
    await gw.deposit(user.user_id, 50);
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
    openai = new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: user.api_key, baseURL: gw.url, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
  });

  /** The last charge entry, micro-USD (positive). */
  async function lastCharge(): Promise<number> {
    const page = await listLedger(gw.services.db.kysely, user.org_id, { limit: 5, after: null });
    const charge = page.entries.find((e) => e.kind === "charge");
    assert.ok(charge, "a charge entry");
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, user.org_id), await ledgerSum(db, user.org_id));
    return -charge.amountMicros;
  }
  /** The price of a call from its reported usage: `input` excludes the cached tokens. */
  function expected(model: string, usage: { input: number; cached: number; output: number }): number {
    const m = getTextModel(model);
    assert.ok(m);
    return quoteTextCall(m, { inputTokens: usage.input + usage.cached, cachedTokens: usage.cached, outputTokens: usage.output });
  }

  test("openai chat.completions.create: answer, usage, and the charge to the micro-dollar", async () => {
    const r = await openai.chat.completions.create({
      model: "fast",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Say hello to the gateway." },
      ],
      max_tokens: 200,
    });
    assert.equal(r.object, "chat.completion");
    assert.ok(getTextModel(r.model), `concrete model id: ${r.model}`);
    assert.notEqual(r.model, "fast");
    assert.equal(typeof r.choices[0].message.content, "string");
    assert.ok(r.usage && r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
    const cached = r.usage.prompt_tokens_details?.cached_tokens ?? 0;
    assert.equal(await lastCharge(), expected(r.model, { input: r.usage.prompt_tokens - cached, cached, output: r.usage.completion_tokens }));
  });

  test("openai streaming with include_usage: chunks, a final usage chunk, the same charge rule", async () => {
    const stream = await openai.chat.completions.create({
      model: "best",
      messages: [{ role: "user", content: "Tell me about streaming in two sentences." }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined;
    let model = "";
    for await (const chunk of stream) {
      model = chunk.model;
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) {
        usage = chunk.usage;
        assert.deepEqual(chunk.choices, []);
      }
    }
    assert.ok(text.length > 0);
    assert.ok(usage);
    const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
    assert.equal(await lastCharge(), expected(model, { input: usage.prompt_tokens - cached, cached, output: usage.completion_tokens }));
  });

  test("openai tool calls", async () => {
    const r = await openai.chat.completions.create({
      model: "agent",
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [
        {
          type: "function",
          function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
        },
      ],
    });
    const call = r.choices[0].message.tool_calls?.[0];
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    assert.ok(call && call.type === "function");
    assert.equal(call.function.name, "get_weather");
    assert.equal(typeof JSON.parse(call.function.arguments).city, "string");
  });

  test("a repeated long prefix is served as cached input and charged at 10 %", async () => {
    const system = "You are a careful assistant. ".repeat(300);
    const ask = () =>
      openai.chat.completions.create({
        model: "cheap",
        messages: [
          { role: "system", content: system },
          { role: "user", content: "Summarize." },
        ],
        max_tokens: 50,
      });
    await ask();
    const second = await ask();
    const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    assert.ok(cached >= 1024, `cached ${cached}`);
    assert.equal(
      await lastCharge(),
      expected(second.model, { input: (second.usage?.prompt_tokens ?? 0) - cached, cached, output: second.usage?.completion_tokens ?? 0 }),
    );
  });

  test("anthropic messages.create and streaming, with x-api-key", async () => {
    const m = await anthropic.messages.create({
      model: "fast",
      max_tokens: 300,
      system: "Be brief.",
      messages: [{ role: "user", content: "Hello there!" }],
    });
    assert.equal(m.type, "message");
    assert.equal(m.role, "assistant");
    assert.equal(m.content[0].type, "text");
    assert.ok(["end_turn", "max_tokens"].includes(m.stop_reason ?? ""));
    const cached = m.usage.cache_read_input_tokens ?? 0;
    assert.equal(await lastCharge(), expected(m.model, { input: m.usage.input_tokens, cached, output: m.usage.output_tokens }));

    const stream = anthropic.messages.stream({ model: "fast", max_tokens: 300, messages: [{ role: "user", content: "Stream a short answer." }] });
    const types = new Set<string>();
    stream.on("streamEvent", (e) => types.add(e.type));
    const final = await stream.finalMessage();
    for (const t of ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]) {
      assert.ok(types.has(t), t);
    }
    assert.ok(final.content.length > 0);
    const c2 = final.usage.cache_read_input_tokens ?? 0;
    assert.equal(await lastCharge(), expected(final.model, { input: final.usage.input_tokens, cached: c2, output: final.usage.output_tokens }));
  });

  test("errors: unknown model 400, balance too low 402, bad body 400; nothing charged", async () => {
    await assert.rejects(openai.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] }), (e: unknown) => e instanceof OpenAI.BadRequestError);
    const poor = await gw.register();
    const poorClient = new OpenAI({ apiKey: poor.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await assert.rejects(
      poorClient.chat.completions.create({ model: "best", messages: [{ role: "user", content: "x" }], max_tokens: 1_000_000 }),
      (e: unknown) => e instanceof OpenAI.APIError && (e.status === 402 || e.status === 429),
    );
    const bad = await gw.request("POST", "/v1/chat/completions", { token: poor.api_key, body: { model: "fast", messages: "hi" } });
    assert.equal(bad.status, 400);
    assert.equal(await getBalance(gw.services.db.kysely, poor.org_id), 500_000);
  });
});
