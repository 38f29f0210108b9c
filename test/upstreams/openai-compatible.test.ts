/**
 * The OpenAI-compatible chat adapter (src/upstreams/openai-compatible/) against a fake upstream on
 * loopback (fakes/openai-chat.ts): request shape, answer mapping, streaming assembly, error
 * mapping (a 404 `model_not_found` as `modelNotFound`, D35), timeouts and aborts.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenAICompatibleChat, sseData } from "../../src/upstreams/openai-compatible/chat.ts";
import type { OpenAICompatibleChat } from "../../src/upstreams/openai-compatible/chat.ts";
import { OpenAICompatibleError } from "../../src/upstreams/openai-compatible/api.ts";
import { UpstreamError } from "../../src/upstreams/types.ts";
import type { ChatDelta, ChatRequest } from "../../src/upstreams/chat-types.ts";
import { chunk, completion, startFakeOpenAI, textStream, usageChunk } from "../../fakes/openai-chat.ts";
import type { FakeBehaviour, FakeOpenAI } from "../../fakes/openai-chat.ts";

const API_KEY = "sk-test-secret-key-0123456789";

function request(extra: Partial<ChatRequest> = {}): ChatRequest {
  return {
    upstreamModel: "upstream-model",
    model: "our-model",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hello" },
    ],
    tools: [],
    toolChoice: null,
    maxTokens: 4096,
    temperature: null,
    cacheScope: "acct_1",
    simulate: null,
    ...extra,
  };
}

async function collect(stream: AsyncIterable<ChatDelta>): Promise<ChatDelta[]> {
  const out: ChatDelta[] = [];
  for await (const delta of stream) out.push(delta);
  return out;
}

/** Awaits `promise`, asserts it rejects with an UpstreamError, and returns that error. */
async function upstreamFailure(promise: Promise<unknown>): Promise<OpenAICompatibleError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, `expected an UpstreamError, got ${String(err)}`);
    assert.ok(err instanceof OpenAICompatibleError);
    assert.ok(!err.message.includes(API_KEY), "the API key leaked into the message");
    return err;
  }
  assert.fail("expected a rejection");
}

let fake: FakeOpenAI;
let adapter: OpenAICompatibleChat;

before(async () => {
  fake = await startFakeOpenAI();
  adapter = createOpenAICompatibleChat({ baseUrl: fake.baseUrl, apiKey: API_KEY, timeoutMs: 2000, name: "fake" });
});

after(async () => {
  await adapter.close();
  await fake.close();
});

beforeEach(() => fake.reset());

describe("non-streaming chat", () => {
  test("sends the OpenAI request with the bearer key and maps the answer with cached tokens", async () => {
    fake.enqueue({
      kind: "json",
      body: completion({ content: "Hi there", usage: { prompt: 1500, completion: 7, cached: 1024 } }),
    });
    const result = await adapter.chat(request());
    assert.deepEqual(result, {
      content: "Hi there",
      toolCalls: [],
      finishReason: "stop",
      usage: { promptTokens: 1500, completionTokens: 7, cachedTokens: 1024 },
    });

    assert.equal(fake.requests.length, 1);
    const sent = fake.requests[0];
    assert.equal(sent.method, "POST");
    assert.equal(sent.path, "/v1/chat/completions");
    assert.equal(sent.headers.authorization, `Bearer ${API_KEY}`);
    assert.match(String(sent.headers["content-type"]), /^application\/json/);
    assert.deepEqual(sent.body, {
      model: "upstream-model",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hello" },
      ],
      max_tokens: 4096,
      stream: false,
    });
  });

  test("forwards tools, tool_choice and temperature, and maps tool calls", async () => {
    const tools = [
      { type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: {} } } },
    ];
    fake.enqueue({
      kind: "json",
      body: completion({
        content: null,
        toolCalls: [{ id: "call_abc", name: "get_weather", arguments: '{"city":"Paris"}' }],
      }),
    });
    const result = await adapter.chat(request({ tools, toolChoice: "auto", temperature: 0.2, maxTokens: 100 }));
    assert.equal(result.content, null);
    assert.equal(result.finishReason, "tool_calls");
    assert.deepEqual(result.toolCalls, [
      { id: "call_abc", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ]);
    const body = fake.requests[0].body as Record<string, unknown>;
    assert.deepEqual(body.tools, tools);
    assert.equal(body.tool_choice, "auto");
    assert.equal(body.temperature, 0.2);
    assert.equal(body.max_tokens, 100);
  });

  test("length finish reason and missing cached-token details", async () => {
    const body = completion({ content: "cut", finishReason: "length" });
    (body.usage as Record<string, unknown>).prompt_tokens_details = undefined;
    fake.enqueue({ kind: "json", body });
    const result = await adapter.chat(request());
    assert.equal(result.finishReason, "length");
    assert.deepEqual(result.usage, { promptTokens: 10, completionTokens: 5, cachedTokens: 0 });
  });
});

describe("streaming chat", () => {
  test("yields content pieces and a last delta with finish reason and usage (cached tokens)", async () => {
    fake.enqueue({ kind: "sse", events: textStream(["Hel", "lo", "!"], { prompt: 2000, completion: 3, cached: 1536 }) });
    const deltas = await collect(adapter.chatStream(request()));
    assert.deepEqual(deltas, [
      { content: "Hel" },
      { content: "lo" },
      { content: "!" },
      { finishReason: "stop", usage: { promptTokens: 2000, completionTokens: 3, cachedTokens: 1536 } },
    ]);
    const body = fake.requests[0].body as Record<string, unknown>;
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal(fake.requests[0].headers.authorization, `Bearer ${API_KEY}`);
  });

  test("assembles tool calls split over several chunks, by index", async () => {
    fake.enqueue({
      kind: "sse",
      events: [
        chunk({ role: "assistant", content: null }),
        chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
        chunk({ tool_calls: [{ index: 1, id: "call_2", type: "function", function: { name: "get_time", arguments: '{"tz"' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Paris"}' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: ':"UTC"}' } }] }),
        chunk({}, "tool_calls"),
        usageChunk({ prompt: 50, completion: 20 }),
      ],
      delayMs: 5,
    });
    const deltas = await collect(adapter.chatStream(request()));
    assert.deepEqual(deltas, [
      {
        finishReason: "tool_calls",
        toolCalls: [
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "call_2", type: "function", function: { name: "get_time", arguments: '{"tz":"UTC"}' } },
        ],
        usage: { promptTokens: 50, completionTokens: 20, cachedTokens: 0 },
      },
    ]);
  });

  test("without a usage chunk the last delta has no usage (the caller estimates)", async () => {
    fake.enqueue({ kind: "sse", events: textStream(["a", "b"], null) });
    const deltas = await collect(adapter.chatStream(request()));
    assert.deepEqual(deltas, [{ content: "a" }, { content: "b" }, { finishReason: "stop" }]);
    assert.equal(deltas.at(-1)?.usage, undefined);
  });

  test("accepts CRLF framing and data lines without a space", async () => {
    const events = textStream(["x"], { prompt: 1, completion: 1 });
    const body = [...events.map((e) => `data:${JSON.stringify(e)}\r\n\r\n`), ": keep-alive\r\n\r\n", "data: [DONE]\r\n\r\n"].join("");
    fake.enqueue({ kind: "raw", contentType: "text/event-stream", body });
    const deltas = await collect(adapter.chatStream(request()));
    assert.deepEqual(deltas, [{ content: "x" }, { finishReason: "stop", usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0 } }]);
  });

  test("the request is sent only when iteration starts", async () => {
    const stream = adapter.chatStream(request());
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(fake.requests.length, 0);
    fake.enqueue({ kind: "sse", events: textStream(["z"]) });
    await collect(stream);
    assert.equal(fake.requests.length, 1);
  });
});

describe("sseData", () => {
  async function* pieces(parts: string[]): AsyncGenerator<Uint8Array> {
    for (const part of parts) yield new TextEncoder().encode(part);
  }

  test("splits events across arbitrary chunk boundaries, CR/LF/CRLF, multi-line data and comments", async () => {
    const parts = ["data: one\r", "\n\r\ndata: t", "wo\n", "data: lines\n\n: comment\n", "event: x\rdata: three\r\r", "data: unterminated"];
    const out: string[] = [];
    for await (const data of sseData(pieces(parts))) out.push(data);
    assert.deepEqual(out, ["one", "two\nlines", "three"]);
  });

  test("decodes multi-byte characters split between chunks", async () => {
    const bytes = new TextEncoder().encode("data: héllo ✓\n\n");
    async function* split(): AsyncGenerator<Uint8Array> {
      yield bytes.subarray(0, 8);
      yield bytes.subarray(8, 15);
      yield bytes.subarray(15);
    }
    const out: string[] = [];
    for await (const data of sseData(split())) out.push(data);
    assert.deepEqual(out, ["héllo ✓"]);
  });
});

describe("errors", () => {
  test("HTTP 500 is retryable and carries the status", async () => {
    fake.enqueue({ kind: "json", status: 500, body: { error: { message: "internal failure", type: "server_error" } } });
    const err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 500);
    assert.equal(err.kind, "http");
    assert.match(err.message, /fake: HTTP 500: internal failure/);
  });

  test("HTTP 429 is retryable", async () => {
    fake.enqueue({ kind: "json", status: 429, body: { error: { message: "rate limited" } } });
    const err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 429);
  });

  test("HTTP 400 is not retryable", async () => {
    fake.enqueue({ kind: "json", status: 400, body: { error: { message: "bad request: messages is empty" } } });
    const err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.retryable, false);
    assert.equal(err.status, 400);
  });

  test("HTTP 404 model_not_found (chat and stream): modelNotFound naming the model sent, not retryable (D35)", async () => {
    const retired = {
      error: {
        message: "The model `upstream-model` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations",
        type: "invalid_request_error",
        param: null,
        code: "model_not_found",
      },
    };
    fake.enqueue({ kind: "json", status: 404, body: retired }, { kind: "json", status: 404, body: retired });
    for (const call of [() => adapter.chat(request()), () => collect(adapter.chatStream(request()))]) {
      const err = await upstreamFailure(call());
      assert.equal(err.status, 404);
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "upstream-model");
      assert.equal(err.retryable, false);
      assert.equal(err.code, "model_not_found");
      assert.match(err.message, /^fake: the upstream model "upstream-model" does not exist at this source \(HTTP 404: The model `upstream-model` has been deprecated/);
    }
  });

  test("a 404 naming the model without OpenAI's code is modelNotFound too; other 404s and other codes are not", async () => {
    fake.enqueue(
      { kind: "json", status: 404, body: { error: { message: "Model 'upstream-model' not found", type: "invalid_request_error", param: null, code: null } } },
      { kind: "json", status: 404, body: { error: { message: "Invalid URL (POST /v1/chat/completions)", type: "invalid_request_error", param: null, code: null } } },
      { kind: "json", status: 400, body: { error: { message: "The model `upstream-model` does not support tools.", type: "invalid_request_error", param: "tools", code: "invalid_value" } } },
    );
    const named = await upstreamFailure(adapter.chat(request()));
    assert.equal(named.modelNotFound, true);
    assert.equal(named.upstreamModel, "upstream-model");
    for (let i = 0; i < 2; i++) {
      const other = await upstreamFailure(adapter.chat(request()));
      assert.equal(other.modelNotFound, false);
      assert.equal(other.upstreamModel, null);
      assert.equal(other.retryable, false);
    }
    // The model must be named as a whole id: at the end of a sentence yes, inside a path or a longer id no.
    const notFound = (message: string): FakeBehaviour => ({ kind: "json", status: 404, body: { error: { message, type: "invalid_request_error", param: null, code: null } } });
    for (const [model, message, expected] of [
      ["upstream-model", "Model not found: upstream-model.", true],
      ["v1", "Invalid URL (POST /v1/chat/completions)", false],
      ["gpt-image-2", "Model gpt-image-2.5 is not enabled for this key", false],
      ["gpt-image-2", "gpt-image-2 not found", true],
    ] as const) {
      fake.enqueue(notFound(message));
      const err = await upstreamFailure(adapter.chat(request({ upstreamModel: model })));
      assert.equal(err.modelNotFound, expected, message);
    }
  });

  test("an upstream that echoes the key does not leak it", async () => {
    fake.enqueue({ kind: "json", status: 401, body: { error: { message: `Incorrect API key provided: ${API_KEY}` } } });
    const err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /\[redacted\]/);
  });

  test("malformed JSON, a wrong shape and an answer without usage are retryable malformed answers", async () => {
    fake.enqueue({ kind: "raw", body: '{"choices": [' });
    let err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);

    fake.enqueue({ kind: "json", body: { choices: "nope" } });
    err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.kind, "malformed");

    const noUsage = completion({ content: "x" });
    delete noUsage.usage;
    fake.enqueue({ kind: "json", body: noUsage });
    err = await upstreamFailure(adapter.chat(request()));
    assert.equal(err.kind, "malformed");
  });

  test("a refused connection is a retryable network error", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dead = createOpenAICompatibleChat({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: API_KEY, timeoutMs: 2000, name: "dead" });
    try {
      const err = await upstreamFailure(dead.chat(request()));
      assert.equal(err.kind, "network");
      assert.equal(err.retryable, true);
    } finally {
      await dead.close();
    }
  });

  test("stream errors: HTTP 500, a malformed chunk, an error chunk, a drop mid-stream, an early end", async () => {
    fake.enqueue({ kind: "json", status: 503, body: { error: { message: "overloaded" } } });
    let err = await upstreamFailure(collect(adapter.chatStream(request())));
    assert.equal(err.status, 503);
    assert.equal(err.retryable, true);

    fake.enqueue({ kind: "sse", events: [chunk({ content: "a" }), "{not json"] });
    err = await upstreamFailure(collect(adapter.chatStream(request())));
    assert.equal(err.kind, "malformed");

    fake.enqueue({ kind: "sse", events: [chunk({ content: "a" }), { error: { message: "model crashed" } }] });
    err = await upstreamFailure(collect(adapter.chatStream(request())));
    assert.match(err.message, /model crashed/);

    fake.enqueue({ kind: "sse", events: textStream(["a", "b", "c"]), dropAfter: 2, delayMs: 10 });
    const got: ChatDelta[] = [];
    err = await upstreamFailure(
      (async () => {
        for await (const delta of adapter.chatStream(request())) got.push(delta);
      })(),
    );
    assert.deepEqual(got, [{ content: "a" }]);
    assert.equal(err.retryable, true);

    fake.enqueue({ kind: "sse", events: [chunk({ content: "a" })], done: false });
    err = await upstreamFailure(collect(adapter.chatStream(request())));
    assert.match(err.message, /ended before the answer was complete/);
  });

  test("a JSON answer to a stream request is malformed", async () => {
    fake.enqueue({ kind: "json", body: completion({ content: "not streamed" }) });
    const err = await upstreamFailure(collect(adapter.chatStream(request())));
    assert.equal(err.kind, "malformed");
  });
});

describe("timeouts and aborts", () => {
  let quick: OpenAICompatibleChat;
  before(() => {
    quick = createOpenAICompatibleChat({ baseUrl: fake.baseUrl, apiKey: API_KEY, timeoutMs: 300, name: "quick" });
  });
  after(async () => {
    await quick.close();
  });

  test("a hanging upstream times out with a retryable error", async () => {
    fake.enqueue({ kind: "hang" });
    const started = performance.now();
    const err = await upstreamFailure(quick.chat(request()));
    const elapsed = performance.now() - started;
    assert.equal(err.kind, "timeout");
    assert.equal(err.retryable, true);
    assert.ok(elapsed >= 250, `timed out after ${elapsed} ms`);
  });

  test("the total timeout covers a slow stream", async () => {
    fake.enqueue({ kind: "sse", events: textStream(["a", "b", "c", "d", "e"]), delayMs: 150 });
    const got: ChatDelta[] = [];
    const err = await upstreamFailure(
      (async () => {
        for await (const delta of quick.chatStream(request())) got.push(delta);
      })(),
    );
    assert.equal(err.kind, "timeout");
    assert.ok(got.length >= 1 && got.length < 5);
  });

  test("the caller's abort rethrows its reason, not an UpstreamError", async () => {
    fake.enqueue({ kind: "hang" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(adapter.chat(request(), controller.signal), (err: unknown) => {
      assert.ok(!(err instanceof UpstreamError));
      assert.equal((err as Error).name, "AbortError");
      return true;
    });
  });

  test("aborting a stream mid-way and an already aborted signal", async () => {
    fake.enqueue({ kind: "sse", events: textStream(["a", "b", "c", "d"]), delayMs: 100 });
    const controller = new AbortController();
    const got: ChatDelta[] = [];
    await assert.rejects(
      (async () => {
        for await (const delta of adapter.chatStream(request(), controller.signal)) {
          got.push(delta);
          controller.abort();
        }
      })(),
      { name: "AbortError" },
    );
    assert.equal(got.length, 1);

    const before = fake.requests.length;
    await assert.rejects(adapter.chat(request(), AbortSignal.abort()), { name: "AbortError" });
    assert.equal(fake.requests.length, before, "nothing is sent for an aborted signal");
  });
});
