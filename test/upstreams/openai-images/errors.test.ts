/**
 * Failure mapping of the OpenAI images source: every class of failure of the generation call mapped to a
 * retryable or non-retryable error (the fake's markers, then OpenAI's own error bodies replayed), the
 * moderation refusal as `contentRejected`, a 404 `model_not_found` as `modelNotFound` naming the model
 * (D35), the caller's abort, and no key in any message (D25). The strict fake's own rules are in
 * contract.test.ts.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startOpenAIImagesFake } from "../../../fakes/openai-images.ts";
import type { OpenAIImagesFake } from "../../../fakes/openai-images.ts";
import { createOpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { OpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import { startFakeOpenAI } from "../../../fakes/openai-chat.ts";
import { freePort } from "../../helpers/process.ts";
import {
  CONTENT_POLICY_ERROR,
  MODEL_RETIRED_ERROR,
  MODEL_UNKNOWN_ERROR,
  MODERATION_BLOCKED_ERROR,
  RATE_LIMIT_ERROR,
  SERVER_ERROR,
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
      body: JSON.stringify({ model: "gpt-image-2", prompt: "x [fake:429]" }),
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
  for (const model of ["imgC-v3", "imgC-q1"]) {
    test(`${model}: 400 moderation_blocked -> contentRejected, not retryable`, async () => {
      const err = await openAIFailure(source.submitImage(imageRequest({ model, prompt: "x [fake:moderation]" })));
      assert.equal(err.status, 400);
      assert.equal(err.code, "moderation_blocked");
      assert.equal(err.type, "image_generation_user_error");
      assert.equal(err.contentRejected, true);
      assert.equal(err.retryable, false);
      assert.match(err.message, /rejected/);
    });
  }
});

describe("OpenAI's own error bodies, replayed", () => {
  const cases = [
    { name: "DALL-E's moderation code", status: 400, body: CONTENT_POLICY_ERROR, retryable: false, contentRejected: true, modelNotFound: false },
    { name: "gpt-image moderation", status: 400, body: MODERATION_BLOCKED_ERROR, retryable: false, contentRejected: true, modelNotFound: false },
    { name: "unknown parameter", status: 400, body: UNKNOWN_PARAMETER_ERROR, retryable: false, contentRejected: false, modelNotFound: false },
    { name: "retired model", status: 404, body: MODEL_RETIRED_ERROR, retryable: false, contentRejected: false, modelNotFound: true },
    { name: "unknown model", status: 404, body: MODEL_UNKNOWN_ERROR, retryable: false, contentRejected: false, modelNotFound: true },
    {
      name: "a 404 without a code that names the model (an OpenAI-compatible server; shape of nearai/ironclaw#2450)",
      status: 404,
      body: { error: { message: "Model 'gpt-image-2' not found", type: "invalid_request_error", param: null, code: null } },
      retryable: false,
      contentRejected: false,
      modelNotFound: true,
    },
    {
      name: "a 404 for an unknown URL (a wrong base URL)",
      status: 404,
      body: { error: { message: "Invalid URL (POST /v1/images/generations)", type: "invalid_request_error", param: null, code: null } },
      retryable: false,
      contentRejected: false,
      modelNotFound: false,
    },
    { name: "rate limit", status: 429, body: RATE_LIMIT_ERROR, retryable: true, contentRejected: false, modelNotFound: false },
    { name: "server error", status: 500, body: SERVER_ERROR, retryable: true, contentRejected: false, modelNotFound: false },
    { name: "bad gateway without OpenAI's body", status: 502, body: "<html>502 Bad Gateway</html>", retryable: true, contentRejected: false, modelNotFound: false },
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
        assert.equal(err.modelNotFound, c.modelNotFound);
        assert.equal(err.upstreamModel, c.modelNotFound ? "gpt-image-2" : null);
        assert.equal(err.code, typeof c.body === "string" ? null : c.body.error.code);
      } finally {
        await s.close();
        await replay.close();
      }
    });
  }
});

describe("the fake's markers and record", () => {
  test("unknown markers are ignored; every request is recorded without the key", async () => {
    const res = await fetch(`${fake.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-image-2", prompt: "x [fake:no-such-marker]", quality: "low" }),
    });
    assert.equal(res.status, 200);
    for (const r of fake.requests) {
      assert.equal(r.headers.authorization, "Bearer [redacted]");
      assertNoKey(JSON.stringify(r));
    }
  });
});
