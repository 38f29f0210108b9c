/**
 * The simulated chat upstream (src/upstreams/simulator/chat.ts): deterministic answers, `maxTokens` cuts,
 * tool calls, usage from the token counter, the D23 prompt cache, streaming, and `X-Svc-Simulate`.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { countMessageTokens, countTokens } from "../../../src/upstreams/tokens.ts";
import type { ChatDelta, ChatMessage, ChatRequest, ChatResult, ToolDefinition } from "../../../src/upstreams/chat-types.ts";
import { createSimulatedChat, SIM_PROMPT_CACHE } from "../../../src/upstreams/simulator/chat.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";

function req(over: Partial<ChatRequest> = {}): ChatRequest {
  return {
    upstreamModel: "txta-large-2026-05",
    model: "txtA-large",
    messages: [{ role: "user", content: "How should I structure a small TypeScript web service?" }],
    tools: [],
    toolChoice: null,
    maxTokens: 4096,
    temperature: null,
    cacheScope: "acct_1",
    simulate: null,
    ...over,
  };
}

const WEATHER: ToolDefinition = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather of a city.",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string" },
        days: { type: "integer", minimum: 1 },
        metric: { type: "boolean" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        note: { type: "string" },
      },
      required: ["city", "days", "metric", "unit"],
    },
  },
};
const SEARCH: ToolDefinition = {
  type: "function",
  function: {
    name: "search_docs",
    parameters: { type: "object", properties: { query: { type: "string" }, limit: { type: "number" } }, required: ["query", "limit"] },
  },
};

/** About 1500 tokens of system prompt. */
const LONG_SYSTEM = Array.from({ length: 120 }, (_, i) => `Rule ${i}: answer carefully and cite section ${i * 7}.`).join("\n");

async function collect(stream: AsyncIterable<ChatDelta>): Promise<ChatDelta[]> {
  const out: ChatDelta[] = [];
  for await (const d of stream) out.push(d);
  return out;
}

describe("answers", () => {
  test("deterministic: same request, same answer, across instances", async () => {
    const a = createSimulatedChat({ latencyScale: 0 });
    const b = createSimulatedChat({ latencyScale: 0 });
    const r1 = await a.chat(req());
    const r2 = await b.chat(req());
    assert.deepEqual(r1, r2);
    assert.equal(r1.finishReason, "stop");
    assert.ok(r1.content?.includes("How should I structure a small TypeScript web service?"), r1.content ?? "");
    // Different conversations get different answers.
    const others = await Promise.all(
      ["Explain recursion.", "What is a monad?", "Best pizza topping?", "Plan a trip to Rome."].map((q) =>
        a.chat(req({ messages: [{ role: "user", content: q }] })),
      ),
    );
    assert.ok(new Set(others.map((r) => r.content)).size >= 3);
  });

  test("usage: prompt via countMessageTokens, completion via countTokens of the answer", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const messages: ChatMessage[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Summarize the plot of a heist movie." }] },
    ];
    const r = await sim.chat(req({ messages }));
    assert.equal(r.usage.promptTokens, countMessageTokens(messages, []));
    assert.equal(r.usage.completionTokens, countTokens(r.content ?? ""));
    assert.equal(r.usage.cachedTokens, 0);
  });

  test("an empty or odd user message still gets an answer", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    for (const content of ["", "   ", "\uD800<|endoftext|>😀", "x".repeat(100_000)]) {
      const r = await sim.chat(req({ messages: [{ role: "user", content }] }));
      assert.ok((r.content ?? "").length > 0);
      assert.ok((r.content ?? "").length < 2000, "the quote is bounded");
      assert.equal(r.usage.completionTokens, countTokens(r.content ?? ""));
    }
  });

  test("maxTokens cuts the answer at whole words with finish_reason length", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const full = await sim.chat(req());
    assert.ok(full.usage.completionTokens > 12);
    const cut = await sim.chat(req({ maxTokens: 8 }));
    assert.equal(cut.finishReason, "length");
    assert.ok(cut.usage.completionTokens <= 8);
    assert.equal(cut.usage.completionTokens, countTokens(cut.content ?? ""));
    assert.ok(full.content?.startsWith(cut.content ?? "\u0000"));
    // Exactly enough room: not cut.
    const exact = await sim.chat(req({ maxTokens: full.usage.completionTokens }));
    assert.equal(exact.finishReason, "stop");
    assert.equal(exact.content, full.content);
    const zero = await sim.chat(req({ maxTokens: 0 }));
    assert.deepEqual([zero.content, zero.finishReason, zero.usage.completionTokens], ["", "length", 0]);
  });
});

describe("tools", () => {
  test("a user turn with tools gets one call to the first tool, arguments from its schema", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const r = await sim.chat(req({ tools: [WEATHER, SEARCH], messages: [{ role: "user", content: "What's the weather in Paris?" }] }));
    assert.equal(r.finishReason, "tool_calls");
    assert.equal(r.content, null);
    assert.equal(r.toolCalls.length, 1);
    const call = r.toolCalls[0];
    assert.equal(call.type, "function");
    assert.match(call.id, /^call_[0-9a-f]{24}$/);
    assert.equal(call.function.name, "get_weather");
    const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
    assert.deepEqual(Object.keys(args).sort(), ["city", "days", "metric", "unit"]);
    assert.equal(typeof args.city, "string");
    assert.ok(String(args.city).includes("Paris"));
    assert.equal(args.days, 1);
    assert.equal(args.metric, true);
    assert.equal(args.unit, "celsius");
    assert.equal(r.usage.completionTokens, countTokens(call.function.name) + countTokens(call.function.arguments));
    assert.equal(r.usage.promptTokens, countMessageTokens([{ role: "user", content: "What's the weather in Paris?" }], [WEATHER, SEARCH]));
  });

  test("tool_choice: none answers in text, a named function is called, required forces a call", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const none = await sim.chat(req({ tools: [WEATHER, SEARCH], toolChoice: "none" }));
    assert.equal(none.finishReason, "stop");
    assert.deepEqual(none.toolCalls, []);
    const named = await sim.chat(req({ tools: [WEATHER, SEARCH], toolChoice: { type: "function", function: { name: "search_docs" } } }));
    assert.equal(named.toolCalls[0].function.name, "search_docs");
    assert.deepEqual(Object.keys(JSON.parse(named.toolCalls[0].function.arguments) as object).sort(), ["limit", "query"]);
    const required = await sim.chat(req({ tools: [WEATHER], toolChoice: "required" }));
    assert.equal(required.finishReason, "tool_calls");
  });

  test("after a tool result the answer is text that uses it", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const first = await sim.chat(req({ tools: [WEATHER], messages: [{ role: "user", content: "Weather in Oslo?" }] }));
    const call = first.toolCalls[0];
    const messages: ChatMessage[] = [
      { role: "user", content: "Weather in Oslo?" },
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", tool_call_id: call.id, content: '{"temp_c": -3, "sky": "snow"}' },
    ];
    const r = await sim.chat(req({ tools: [WEATHER], messages }));
    assert.equal(r.finishReason, "stop");
    assert.deepEqual(r.toolCalls, []);
    assert.ok(r.content?.includes("get_weather"), r.content ?? "");
    assert.ok(r.content?.includes("snow"), r.content ?? "");
    assert.equal(r.usage.promptTokens, countMessageTokens(messages, [WEATHER]));
  });
});

describe("prompt cache (D23)", () => {
  const messages = (question: string): ChatMessage[] => [
    { role: "system", content: LONG_SYSTEM },
    { role: "user", content: question },
  ];

  test("a ~1500-token prefix sent twice from the same scope is cached", async () => {
    let now = 1_000_000;
    const sim = createSimulatedChat({ latencyScale: 0, now: () => now });
    const first = await sim.chat(req({ messages: messages("Question one?") }));
    assert.ok(first.usage.promptTokens >= 1400 && first.usage.promptTokens <= 1700, String(first.usage.promptTokens));
    assert.equal(first.usage.cachedTokens, 0);

    now += 60_000;
    const second = await sim.chat(req({ messages: messages("Question one?") }));
    const { cachedTokens, promptTokens } = second.usage;
    assert.ok(cachedTokens >= SIM_PROMPT_CACHE.minTokens, String(cachedTokens));
    assert.ok(cachedTokens <= promptTokens);
    assert.ok(promptTokens - cachedTokens < SIM_PROMPT_CACHE.stepTokens, "the longest boundary is used");
    assert.equal((cachedTokens - SIM_PROMPT_CACHE.minTokens) % SIM_PROMPT_CACHE.stepTokens, 0);

    // A different question shares the system-prompt prefix.
    const other = await sim.chat(req({ messages: messages("A completely different question?") }));
    assert.ok(other.usage.cachedTokens >= SIM_PROMPT_CACHE.minTokens);
    assert.ok(other.usage.cachedTokens <= countMessageTokens([{ role: "system", content: LONG_SYSTEM }], []));
  });

  test("never across scopes", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    await sim.chat(req({ messages: messages("Q?"), cacheScope: "acct_1" }));
    const r = await sim.chat(req({ messages: messages("Q?"), cacheScope: "acct_2" }));
    assert.equal(r.usage.cachedTokens, 0);
  });

  test("expires after 5 minutes; each use refreshes it", async () => {
    let now = 0;
    const sim = createSimulatedChat({ latencyScale: 0, now: () => now });
    await sim.chat(req({ messages: messages("Q?") }));
    now += 4 * 60_000;
    assert.ok((await sim.chat(req({ messages: messages("Q?") }))).usage.cachedTokens >= 1024);
    now += 4 * 60_000; // 8 minutes after the first call, 4 after the refresh
    assert.ok((await sim.chat(req({ messages: messages("Q?") }))).usage.cachedTokens >= 1024);
    now += 5 * 60_000;
    assert.equal((await sim.chat(req({ messages: messages("Q?") }))).usage.cachedTokens, 0);
    now += SIM_PROMPT_CACHE.ttlMs + 1;
    assert.equal((await sim.chat(req({ messages: messages("Q?") }))).usage.cachedTokens, 0);
  });

  test("prompts under 1024 tokens are never cached; a changed prefix misses", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const short: ChatMessage[] = [{ role: "system", content: "Short rules." }, { role: "user", content: "Hi" }];
    await sim.chat(req({ messages: short }));
    assert.equal((await sim.chat(req({ messages: short }))).usage.cachedTokens, 0);
    await sim.chat(req({ messages: messages("Q?") }));
    const changed: ChatMessage[] = [{ role: "system", content: `Changed. ${LONG_SYSTEM}` }, { role: "user", content: "Q?" }];
    assert.equal((await sim.chat(req({ messages: changed }))).usage.cachedTokens, 0);
  });

  test("a failed call caches nothing; streams report cached tokens too", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    await assert.rejects(sim.chat(req({ messages: messages("Q?"), simulate: "fail" })), UpstreamError);
    assert.equal(sim.cacheSize(), 0);
    await sim.chat(req({ messages: messages("Q?") }));
    const deltas = await collect(sim.chatStream(req({ messages: messages("Q?") })));
    assert.ok((deltas.at(-1)?.usage?.cachedTokens ?? 0) >= 1024);
  });

  test("memory is bounded per scope and in all; close() drops the cache", async () => {
    const sim = createSimulatedChat({ latencyScale: 0, cacheMaxEntriesPerScope: 3, cacheMaxEntries: 7 });
    const huge: ChatMessage[] = [{ role: "system", content: `${LONG_SYSTEM}\n${LONG_SYSTEM}` }, { role: "user", content: "Q?" }];
    await sim.chat(req({ messages: huge }));
    assert.equal(sim.cacheSize(), 3);
    for (let i = 0; i < 10; i++) await sim.chat(req({ messages: huge, cacheScope: `acct_${i}` }));
    assert.ok(sim.cacheSize() <= 7, String(sim.cacheSize()));
    // The most recent scope still hits (its longest prefixes were kept).
    assert.ok((await sim.chat(req({ messages: huge, cacheScope: "acct_9" }))).usage.cachedTokens >= 1024);
    sim.close();
    assert.equal(sim.cacheSize(), 0);
    assert.equal((await sim.chat(req({ messages: huge, cacheScope: "acct_9" }))).usage.cachedTokens, 0);
  });
});

describe("streaming", () => {
  test("pieces concatenate to the non-streamed content; the last piece has finish_reason and usage", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const whole: ChatResult = await sim.chat(req());
    const deltas = await collect(sim.chatStream(req()));
    const contentDeltas = deltas.filter((d) => d.content !== undefined);
    assert.ok(contentDeltas.length >= 3, "several pieces");
    assert.equal(contentDeltas.map((d) => d.content).join(""), whole.content);
    const last = deltas.at(-1);
    assert.equal(last?.finishReason, "stop");
    assert.deepEqual(last?.usage, whole.usage);
    assert.ok(deltas.slice(0, -1).every((d) => d.usage === undefined && d.finishReason === undefined));
  });

  test("a cut stream ends with length", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const deltas = await collect(sim.chatStream(req({ maxTokens: 5 })));
    assert.equal(deltas.at(-1)?.finishReason, "length");
    assert.equal(deltas.at(-1)?.usage?.completionTokens, countTokens(deltas.map((d) => d.content ?? "").join("")));
  });

  test("tool calls arrive in one piece, then the final piece", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const whole = await sim.chat(req({ tools: [WEATHER] }));
    const deltas = await collect(sim.chatStream(req({ tools: [WEATHER] })));
    assert.equal(deltas.length, 2);
    assert.deepEqual(deltas[0].toolCalls, whole.toolCalls);
    assert.deepEqual(deltas[1], { finishReason: "tool_calls", usage: whole.usage });
  });

  test("latency: first piece after ~0.3 s x scale, ~20 ms x scale between pieces", async () => {
    const sim = createSimulatedChat({ latencyScale: 0.5 });
    const t0 = performance.now();
    const times: number[] = [];
    for await (const _d of sim.chatStream(req())) times.push(performance.now() - t0);
    assert.ok(times[0] >= 140, `first piece at ${times[0]} ms`);
    assert.ok(times.at(-1)! - times[0] >= 5 * (times.length - 2), "gaps between pieces");
  });
});

describe("X-Svc-Simulate and abort", () => {
  test("fail: chat rejects with UpstreamError; a stream rejects before its first piece", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    await assert.rejects(sim.chat(req({ simulate: "fail" })), UpstreamError);
    const it = sim.chatStream(req({ simulate: "fail" }))[Symbol.asyncIterator]();
    await assert.rejects(it.next(), UpstreamError);
  });

  test("slow: at least 1 s extra even at scale 0", async () => {
    const sim = createSimulatedChat({ latencyScale: 0 });
    const t0 = performance.now();
    const r = await sim.chat(req({ simulate: "slow" }));
    assert.ok(performance.now() - t0 >= 990);
    assert.equal(r.finishReason, "stop");
  });

  test("abort before the answer and in the middle of a stream", async () => {
    const sim = createSimulatedChat({ latencyScale: 1 });
    const ac = new AbortController();
    const pending = sim.chat(req(), ac.signal);
    setTimeout(() => ac.abort(), 20);
    await assert.rejects(pending, { name: "AbortError" });

    const sim2 = createSimulatedChat({ latencyScale: 0.2 });
    const ac2 = new AbortController();
    const it = sim2.chatStream(req(), ac2.signal)[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.done, false);
    ac2.abort();
    await assert.rejects(it.next(), { name: "AbortError" });

    const already = AbortSignal.abort();
    await assert.rejects(createSimulatedChat({ latencyScale: 0 }).chat(req(), already), { name: "AbortError" });
  });
});
