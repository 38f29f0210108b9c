/**
 * Fallback across sources and equivalent models (src/text/fallback.ts), with real OpenAI-compatible
 * adapters talking to two fake upstreams on loopback (fakes/openai-chat.ts): source "alpha" and
 * source "beta". The requested model `m-main` is at alpha (primary) and beta; its first equivalent
 * `m-equal` is at alpha, its second `m-other` at beta.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { buildFallbackPlan, runWithFallback, streamWithFallback } from "../../src/text/fallback.ts";
import type { FallbackDescription, FallbackStep } from "../../src/text/fallback.ts";
import { createOpenAICompatibleChat } from "../../src/upstreams/openai-compatible/chat.ts";
import type { OpenAICompatibleChat } from "../../src/upstreams/openai-compatible/chat.ts";
import { UpstreamError } from "../../src/upstreams/types.ts";
import type { ChatAdapter, ChatDelta, ChatRequest } from "../../src/upstreams/chat-types.ts";
import { completion, startFakeOpenAI, textStream } from "../../fakes/openai-chat.ts";
import type { FakeBehaviour, FakeOpenAI, RecordedRequest } from "../../fakes/openai-chat.ts";

const DESCRIPTION: FallbackDescription = {
  model: "m-main",
  sources: [
    { source: "alpha", upstreamModel: "alpha/main" },
    { source: "beta", upstreamModel: "beta-main" },
  ],
  equivalents: [
    { model: "m-equal", sources: [{ source: "alpha", upstreamModel: "alpha/equal" }] },
    { model: "m-other", sources: [{ source: "beta", upstreamModel: "beta-other" }] },
  ],
};

function baseRequest(): ChatRequest {
  return {
    upstreamModel: "",
    model: "m-main",
    messages: [{ role: "user", content: "Hi" }],
    tools: [],
    toolChoice: null,
    maxTokens: 256,
    temperature: null,
    cacheScope: "acct_1",
    simulate: null,
  };
}

/** The request of one step: the step's model and upstream name. */
function requestFor(step: FallbackStep): ChatRequest {
  return { ...baseRequest(), model: step.model, upstreamModel: step.upstreamModel };
}

const ERROR_500: FakeBehaviour = { kind: "json", status: 500, body: { error: { message: "boom" } } };
const ERROR_429: FakeBehaviour = { kind: "json", status: 429, body: { error: { message: "slow down" } } };
const ERROR_400: FakeBehaviour = { kind: "json", status: 400, body: { error: { message: "bad request" } } };

/** Answers by requested upstream model; unlisted models get a normal answer naming the model. */
function byModel(fake: FakeOpenAI, table: Record<string, FakeBehaviour>, stream = false): void {
  fake.respond = (req: RecordedRequest) => {
    const model = String((req.body as { model?: unknown }).model);
    return (
      table[model] ??
      (stream ? { kind: "sse", events: textStream([`from ${model}`]) } : { kind: "json", body: completion({ content: `from ${model}` }) })
    );
  };
}

function modelsAsked(fake: FakeOpenAI): string[] {
  return fake.requests.map((req) => String((req.body as { model?: unknown }).model));
}

let alphaFake: FakeOpenAI;
let betaFake: FakeOpenAI;
let alpha: OpenAICompatibleChat;
let beta: OpenAICompatibleChat;
let plan: FallbackStep[];

before(async () => {
  alphaFake = await startFakeOpenAI();
  betaFake = await startFakeOpenAI();
  alpha = createOpenAICompatibleChat({ baseUrl: alphaFake.baseUrl, apiKey: "key-alpha-123", timeoutMs: 1000, name: "alpha" });
  beta = createOpenAICompatibleChat({ baseUrl: betaFake.baseUrl, apiKey: "key-beta-456", timeoutMs: 1000, name: "beta" });
  const adapters = new Map<string, ChatAdapter>([
    ["alpha", alpha],
    ["beta", beta],
  ]);
  plan = buildFallbackPlan(DESCRIPTION, (source) => adapters.get(source));
});

after(async () => {
  await Promise.all([alpha.close(), beta.close()]);
  await Promise.all([alphaFake.close(), betaFake.close()]);
});

beforeEach(() => {
  alphaFake.reset();
  betaFake.reset();
});

const chatAttempt = (step: FallbackStep) => step.adapter.chat(requestFor(step));

describe("buildFallbackPlan", () => {
  test("numbers layers: primary 0, other source 1, first equivalent 2, second 3", () => {
    assert.deepEqual(
      plan.map((s) => [s.layer, s.model, s.source, s.upstreamModel]),
      [
        [0, "m-main", "alpha", "alpha/main"],
        [1, "m-main", "beta", "beta-main"],
        [2, "m-equal", "alpha", "alpha/equal"],
        [3, "m-other", "beta", "beta-other"],
      ],
    );
    assert.equal(plan[0].adapter, alpha);
    assert.equal(plan[1].adapter, beta);
  });

  test("skips unconfigured sources and duplicates, ignores a third equivalent", () => {
    const stub: ChatAdapter = { chat: () => Promise.reject(new Error("unused")), chatStream: () => [] as never };
    const steps = buildFallbackPlan(
      {
        model: "m",
        sources: [
          { source: "gone", upstreamModel: "g-m" },
          { source: "a", upstreamModel: "a-m" },
          { source: "a", upstreamModel: "a-m" },
          { source: "b", upstreamModel: "b-m" },
        ],
        equivalents: [
          { model: "m", sources: [{ source: "c", upstreamModel: "c-m" }] },
          { model: "e1", sources: [{ source: "gone", upstreamModel: "g-e1" }] },
          { model: "e2", sources: [{ source: "b", upstreamModel: "b-e2" }, { source: "a", upstreamModel: "a-e2" }] },
          { model: "e3", sources: [{ source: "a", upstreamModel: "a-e3" }] },
          { model: "e4", sources: [{ source: "a", upstreamModel: "a-e4" }] },
        ],
      },
      (source) => (source === "gone" ? undefined : stub),
    );
    assert.deepEqual(
      steps.map((s) => [s.layer, s.model, s.source]),
      [
        [0, "m", "a"],
        [1, "m", "b"],
        [2, "e2", "b"],
        [2, "e2", "a"],
        [3, "e3", "a"],
      ],
    );
  });

  test("an empty plan is refused by runWithFallback", async () => {
    await assert.rejects(runWithFallback([], chatAttempt), RangeError);
  });
});

describe("runWithFallback", () => {
  test("the primary source answers: layer 0", async () => {
    byModel(alphaFake, {});
    const outcome = await runWithFallback(plan, chatAttempt);
    assert.equal(outcome.layer, 0);
    assert.equal(outcome.step.source, "alpha");
    assert.equal(outcome.result.content, "from alpha/main");
    assert.deepEqual(modelsAsked(alphaFake), ["alpha/main"]);
    assert.equal(betaFake.requests.length, 0);
  });

  test("primary 500: the same model at the other source, layer 1", async () => {
    byModel(alphaFake, { "alpha/main": ERROR_500 });
    byModel(betaFake, {});
    const failures: string[] = [];
    const outcome = await runWithFallback(plan, chatAttempt, {
      onFallback: (err, failed, next) => failures.push(`${failed.source}->${next.source}: ${(err as Error).message}`),
    });
    assert.equal(outcome.layer, 1);
    assert.equal(outcome.step.model, "m-main");
    assert.equal(outcome.result.content, "from beta-main");
    assert.deepEqual(modelsAsked(betaFake), ["beta-main"]);
    assert.equal(betaFake.requests[0].headers.authorization, "Bearer key-beta-456");
    assert.deepEqual(failures, ["alpha->beta: alpha: HTTP 500: boom"]);
  });

  test("both sources of the model fail: the equivalent model, layer 2, under its upstream name", async () => {
    byModel(alphaFake, { "alpha/main": ERROR_500 });
    byModel(betaFake, { "beta-main": ERROR_429 });
    const outcome = await runWithFallback(plan, chatAttempt);
    assert.equal(outcome.layer, 2);
    assert.equal(outcome.step.model, "m-equal");
    assert.equal(outcome.result.content, "from alpha/equal");
    assert.deepEqual(modelsAsked(alphaFake), ["alpha/main", "alpha/equal"]);
    assert.deepEqual(modelsAsked(betaFake), ["beta-main"]);
  });

  test("a timeout falls back too; layer 3 when everything before fails", async () => {
    byModel(alphaFake, { "alpha/main": { kind: "hang" }, "alpha/equal": ERROR_500 });
    byModel(betaFake, { "beta-main": ERROR_500 });
    const outcome = await runWithFallback(plan, chatAttempt);
    assert.equal(outcome.layer, 3);
    assert.equal(outcome.result.content, "from beta-other");
  });

  test("a 400 does not fall back", async () => {
    byModel(alphaFake, { "alpha/main": ERROR_400 });
    byModel(betaFake, {});
    await assert.rejects(runWithFallback(plan, chatAttempt), (err: unknown) => {
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.retryable, false);
      return true;
    });
    assert.equal(betaFake.requests.length, 0);
    assert.equal(alphaFake.requests.length, 1);
  });

  test("when every step fails the last error is rethrown", async () => {
    byModel(alphaFake, { "alpha/main": ERROR_500, "alpha/equal": ERROR_500 });
    byModel(betaFake, { "beta-main": ERROR_500, "beta-other": ERROR_429 });
    await assert.rejects(runWithFallback(plan, chatAttempt), (err: unknown) => {
      assert.ok(err instanceof UpstreamError);
      assert.match(err.message, /^beta: HTTP 429/);
      return true;
    });
    assert.equal(alphaFake.requests.length + betaFake.requests.length, 4);
  });

  test("a caller abort stops the plan", async () => {
    byModel(alphaFake, { "alpha/main": { kind: "hang" } });
    byModel(betaFake, {});
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(
      runWithFallback(plan, (step) => step.adapter.chat(requestFor(step), controller.signal), { signal: controller.signal }),
      { name: "AbortError" },
    );
    assert.equal(betaFake.requests.length, 0);
  });
});

describe("streamWithFallback", () => {
  const open = (step: FallbackStep) => step.adapter.chatStream(requestFor(step));

  async function collect(stream: AsyncIterable<ChatDelta>): Promise<ChatDelta[]> {
    const out: ChatDelta[] = [];
    for await (const delta of stream) out.push(delta);
    return out;
  }

  test("the primary streams: layer 0, all deltas", async () => {
    byModel(alphaFake, {}, true);
    const stream = await streamWithFallback(plan, open);
    assert.equal(stream.layer, 0);
    const deltas = await collect(stream.deltas);
    assert.equal(deltas[0].content, "from alpha/main");
    assert.equal(deltas.at(-1)?.finishReason, "stop");
  });

  test("failures before the first delta fall back (500, then a hang past the timeout)", async () => {
    byModel(alphaFake, { "alpha/main": ERROR_500 }, true);
    byModel(betaFake, { "beta-main": { kind: "hang" } }, true);
    const stream = await streamWithFallback(plan, open);
    assert.equal(stream.layer, 2);
    assert.equal(stream.step.upstreamModel, "alpha/equal");
    const deltas = await collect(stream.deltas);
    assert.deepEqual(
      deltas.map((d) => d.content ?? d.finishReason),
      ["from alpha/equal", "stop"],
    );
  });

  test("after the first delta an error propagates and nothing else is tried", async () => {
    byModel(alphaFake, { "alpha/main": { kind: "sse", events: textStream(["one", "two", "three"]), dropAfter: 2, delayMs: 10 } }, true);
    byModel(betaFake, {}, true);
    const stream = await streamWithFallback(plan, open);
    assert.equal(stream.layer, 0);
    const got: ChatDelta[] = [];
    await assert.rejects(
      (async () => {
        for await (const delta of stream.deltas) got.push(delta);
      })(),
      (err: unknown) => err instanceof UpstreamError,
    );
    assert.deepEqual(got, [{ content: "one" }]);
    assert.equal(betaFake.requests.length, 0);
  });

  test("a 400 before the first delta does not fall back", async () => {
    byModel(alphaFake, { "alpha/main": ERROR_400 }, true);
    await assert.rejects(streamWithFallback(plan, open), (err: unknown) => err instanceof UpstreamError && !err.retryable);
    assert.equal(betaFake.requests.length, 0);
  });

  test("a stream without any delta falls back; stopping early closes the winning stream", async () => {
    let closed = false;
    const steps: FallbackStep[] = plan.slice(0, 2);
    const stream = await streamWithFallback(steps, (step) => {
      if (step.layer === 0) {
        return (async function* (): AsyncGenerator<ChatDelta> {})();
      }
      return (async function* (): AsyncGenerator<ChatDelta> {
        try {
          yield { content: "a" };
          yield { content: "b" };
          yield { finishReason: "stop" };
        } finally {
          closed = true;
        }
      })();
    });
    assert.equal(stream.layer, 1);
    for await (const delta of stream.deltas) {
      assert.deepEqual(delta, { content: "a" });
      break;
    }
    assert.equal(closed, true);
  });
});
