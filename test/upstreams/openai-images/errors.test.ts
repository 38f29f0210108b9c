/**
 * Failure mapping of the OpenAI images source: every class of failure of the generation call mapped to a
 * retryable or non-retryable error (the fake's markers, then OpenAI's own error bodies replayed), the
 * moderation refusals of both models as `contentRejected`, dall-e-3's fan-out failing as a whole, the
 * caller's abort, the fake's validation, and no key in any message (D25).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startOpenAIImagesFake } from "../../../fakes/openai-images.ts";
import type { OpenAIImagesFake } from "../../../fakes/openai-images.ts";
import { createOpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { OpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import { startFakeOpenAI } from "../../../fakes/openai-chat.ts";
import { freePort } from "../../helpers/process.ts";
import {
  CONTENT_POLICY_ERROR,
  INVALID_SIZE_ERROR,
  MODERATION_BLOCKED_ERROR,
  RATE_LIMIT_ERROR,
  SERVER_ERROR,
  SMALL_PNG_B64,
  UNKNOWN_PARAMETER_ERROR,
} from "./fixtures.ts";
import { assertNoKey, imageRequest, OPENAI_KEY, openAIFailure, seenMessages } from "./helpers.ts";

let fake: OpenAIImagesFake;
let source: OpenAIImagesSource;

before(async () => {
  fake = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0, slowMs: 60_000 });
  source = createOpenAIImagesSource({ name: "openai-main", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, timeoutMs: 30_000 });
});

after(async () => {
  await source.close();
  await fake.close();
  assert.ok(seenMessages.length >= 15, `only ${seenMessages.length} messages were checked`);
  for (const message of seenMessages) assert.ok(!message.includes(OPENAI_KEY));
});

beforeEach(() => fake.reset());

describe("failures of the generation call (fake markers)", () => {
  const cases: { marker: string; status: number; retryable: boolean; code: string | null; message: RegExp }[] = [
    { marker: "429", status: 429, retryable: true, code: "rate_limit_exceeded", message: /HTTP 429: Rate limit reached/ },
    { marker: "500", status: 500, retryable: true, code: null, message: /HTTP 500: The server had an error/ },
    { marker: "400", status: 400, retryable: false, code: "invalid_value", message: /HTTP 400: Invalid 'prompt'/ },
    { marker: "401", status: 401, retryable: false, code: "invalid_api_key", message: /HTTP 401: Incorrect API key provided/ },
  ];
  for (const c of cases) {
    for (const model of ["imgC-v3", "imgC-q1"]) {
      test(`${model} [fake:${c.marker}] -> HTTP ${c.status}, retryable ${c.retryable}`, async () => {
        const err = await openAIFailure(source.submitImage(imageRequest({ model, prompt: `fox [fake:${c.marker}]` })));
        assert.equal(err.kind, "http");
        assert.equal(err.status, c.status);
        assert.equal(err.retryable, c.retryable);
        assert.equal(err.code, c.code);
        assert.equal(err.contentRejected, false);
        assert.match(err.message, c.message);
        assert.equal(fake.submits().length, 1);
      });
    }
  }

  test("a 429 carries retry-after", async () => {
    const res = await fetch(`${fake.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-image-1", prompt: "x [fake:429]" }),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "1");
  });

  test("a 200 that is not JSON is malformed: retryable", async () => {
    const err = await openAIFailure(source.submitImage(imageRequest({ prompt: "x [fake:malformed]" })));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
  });

  test("no answer in time: a retryable timeout", async () => {
    const quick = createOpenAIImagesSource({ name: "openai-quick", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, timeoutMs: 150 });
    try {
      for (const marker of ["hang", "slow"]) {
        const err = await openAIFailure(quick.submitImage(imageRequest({ prompt: `x [fake:${marker}]` })));
        assert.equal(err.kind, "timeout");
        assert.equal(err.retryable, true);
      }
    } finally {
      await quick.close();
    }
  });

  test("nobody listening: a retryable network error", async () => {
    const gone = createOpenAIImagesSource({ name: "openai-gone", baseUrl: `http://127.0.0.1:${await freePort()}/v1`, apiKey: OPENAI_KEY });
    try {
      const err = await openAIFailure(gone.submitImage(imageRequest()));
      assert.equal(err.kind, "network");
      assert.equal(err.retryable, true);
    } finally {
      await gone.close();
    }
  });

  test("the caller's abort rethrows its reason, not an upstream error", async () => {
    const controller = new AbortController();
    const pending = source.submitImage(imageRequest({ prompt: "x [fake:slow]" }), controller.signal);
    while (fake.submits().length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await assert.rejects(pending, (err: unknown) => err instanceof DOMException && err.name === "AbortError");
  });

  test("a key echoed back by the upstream is redacted", async () => {
    const err = await openAIFailure(source.submitImage(imageRequest({ model: "imgC-q1", prompt: "x [fake:echo-key]" })));
    assert.equal(err.status, 401);
    assert.match(err.message, /\[redacted\]/);
  });

  test("a wrong key: 401, not retryable, the key not shown", async () => {
    const wrong = createOpenAIImagesSource({ name: "openai-wrong", baseUrl: `${fake.url}/v1`, apiKey: "sk-wrong-key-00000000000000000000" });
    try {
      const err = await openAIFailure(wrong.submitImage(imageRequest()));
      assert.equal(err.status, 401);
      assert.equal(err.retryable, false);
      assert.ok(!err.message.includes("sk-wrong-key-00000000000000000000"));
    } finally {
      await wrong.close();
    }
  });
});

describe("moderation refusals", () => {
  for (const [model, code, type] of [
    ["imgC-v3", "content_policy_violation", "invalid_request_error"],
    ["imgC-q1", "moderation_blocked", "image_generation_user_error"],
  ] as const) {
    test(`${model}: 400 ${code} -> contentRejected, not retryable`, async () => {
      const err = await openAIFailure(source.submitImage(imageRequest({ model, prompt: "x [fake:moderation]" })));
      assert.equal(err.status, 400);
      assert.equal(err.code, code);
      assert.equal(err.type, type);
      assert.equal(err.contentRejected, true);
      assert.equal(err.retryable, false);
      assert.match(err.message, /rejected/);
    });
  }
});

describe("OpenAI's own error bodies, replayed", () => {
  const cases = [
    { name: "dall-e-3 moderation", status: 400, body: CONTENT_POLICY_ERROR, retryable: false, contentRejected: true },
    { name: "gpt-image moderation", status: 400, body: MODERATION_BLOCKED_ERROR, retryable: false, contentRejected: true },
    { name: "unknown parameter", status: 400, body: UNKNOWN_PARAMETER_ERROR, retryable: false, contentRejected: false },
    { name: "invalid size", status: 400, body: INVALID_SIZE_ERROR, retryable: false, contentRejected: false },
    { name: "rate limit", status: 429, body: RATE_LIMIT_ERROR, retryable: true, contentRejected: false },
    { name: "server error", status: 500, body: SERVER_ERROR, retryable: true, contentRejected: false },
    { name: "bad gateway without OpenAI's body", status: 502, body: "<html>502 Bad Gateway</html>", retryable: true, contentRejected: false },
  ];
  for (const c of cases) {
    test(`${c.name}: HTTP ${c.status} -> retryable ${c.retryable}, contentRejected ${c.contentRejected}`, async () => {
      const replay = await startFakeOpenAI();
      const s = createOpenAIImagesSource({ name: "openai-replay", baseUrl: replay.baseUrl, apiKey: OPENAI_KEY });
      try {
        replay.enqueue(typeof c.body === "string" ? { kind: "raw", status: c.status, contentType: "text/html", body: c.body } : { kind: "json", status: c.status, body: c.body });
        const err = await openAIFailure(s.submitImage(imageRequest()));
        assert.equal(err.status, c.status);
        assert.equal(err.retryable, c.retryable);
        assert.equal(err.contentRejected, c.contentRejected);
        assert.equal(err.code, typeof c.body === "string" ? null : c.body.error.code);
      } finally {
        await s.close();
        await replay.close();
      }
    });
  }
});

describe("dall-e-3 fan-out is all-or-nothing", () => {
  test("one failed part fails the job and aborts the parts still running", async () => {
    // Nothing is answered before all four parts arrived; then part 0 succeeds, part 1 fails, and the
    // others hang until the client gives up on them.
    let seen = 0;
    const waiting: http.ServerResponse[] = [];
    const closed: number[] = [];
    const server = http.createServer((req, res) => {
      const index = seen++;
      res.on("close", () => {
        if (!res.writableFinished) closed.push(index);
      });
      req.resume();
      req.on("end", () => {
        waiting[index] = res;
        if (waiting.filter(Boolean).length < 4) return;
        waiting[0].writeHead(200, { "content-type": "application/json" });
        waiting[0].end(JSON.stringify({ created: 1, data: [{ b64_json: SMALL_PNG_B64 }] }));
        waiting[1].writeHead(500, { "content-type": "application/json" });
        waiting[1].end(JSON.stringify(SERVER_ERROR));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const s = createOpenAIImagesSource({ name: "openai-parts", baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: OPENAI_KEY, timeoutMs: 60_000 });
    try {
      const err = await openAIFailure(s.submitImage(imageRequest({ model: "imgC-v3", n: 4 })));
      assert.equal(err.status, 500);
      assert.equal(err.retryable, true);
      assert.equal(seen, 4, "all four parts were sent");
      while (closed.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.deepEqual(closed.sort(), [2, 3]);
    } finally {
      await s.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("the fake validates like OpenAI", () => {
  async function post(body: Record<string, unknown>): Promise<{ status: number; error: { code: string | null; param: string | null; type: string } }> {
    const res = await fetch(`${fake.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { error: { code: string | null; param: string | null; type: string } };
    return { status: res.status, error: json.error };
  }

  test("dall-e-3 with n > 1, gpt-image-1 with response_format, a size the model lacks: 400", async () => {
    const n = await post({ model: "dall-e-3", prompt: "x", n: 2 });
    assert.equal(n.status, 400);
    assert.equal(n.error.param, "n");
    const format = await post({ model: "gpt-image-1", prompt: "x", response_format: "b64_json" });
    assert.deepEqual({ status: format.status, ...format.error }, { status: 400, ...UNKNOWN_PARAMETER_ERROR.error });
    const size = await post({ model: "dall-e-3", prompt: "x", size: "1536x1024" });
    assert.deepEqual({ status: size.status, ...size.error }, { status: 400, ...INVALID_SIZE_ERROR.error });
    const gptSize = await post({ model: "gpt-image-1", prompt: "x", size: "1792x1024" });
    assert.equal(gptSize.status, 400);
    assert.equal(gptSize.error.param, "size");
    const prompt = await post({ model: "gpt-image-1" });
    assert.equal(prompt.error.code, "missing_required_parameter");
    const model = await post({ model: "dall-e-2", prompt: "x" });
    assert.equal(model.error.param, "model");
  });

  test("the moderation answers have the fixtures' code and type", async () => {
    const dalle = await post({ model: "dall-e-3", prompt: "x [fake:moderation]" });
    assert.equal(dalle.error.code, CONTENT_POLICY_ERROR.error.code);
    assert.equal(dalle.error.type, CONTENT_POLICY_ERROR.error.type);
    const gpt = await post({ model: "gpt-image-1", prompt: "x [fake:moderation]" });
    assert.equal(gpt.error.code, MODERATION_BLOCKED_ERROR.error.code);
    assert.equal(gpt.error.type, MODERATION_BLOCKED_ERROR.error.type);
  });

  test("unknown markers are ignored; every request is recorded without the key", async () => {
    const res = await post({ model: "gpt-image-1", prompt: "x [fake:no-such-marker]", quality: "low" });
    assert.equal(res.status, 200);
    for (const r of fake.requests) {
      assert.equal(r.headers.authorization, "Bearer [redacted]");
      assertNoKey(JSON.stringify(r));
    }
  });
});
