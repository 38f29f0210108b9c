/**
 * Contract of the OpenAI images protocol against the strict fake (fakes/openai-images.ts), called directly
 * and through the adapter: a wrong field name is refused with OpenAI's 400 `unknown_parameter`, a retired
 * or unknown model answers 404 `model_not_found` and the adapter raises `modelNotFound` naming the id
 * (D35), an unknown endpoint answers 404, each field's documented values are enforced, and every body the
 * adapter can send is accepted.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { RETIRED_IMAGE_MODELS, SERVED_IMAGE_MODELS, startOpenAIImagesFake } from "../../../fakes/openai-images.ts";
import type { OpenAIImagesFake } from "../../../fakes/openai-images.ts";
import { createOpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { OpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { AspectRatio } from "../../../src/upstreams/types.ts";
import { MODEL_RETIRED_ERROR, UNKNOWN_PARAMETER_ERROR } from "./fixtures.ts";
import { imageRequest, OPENAI_KEY, openAIFailure } from "./helpers.ts";

let fake: OpenAIImagesFake;
let source: OpenAIImagesSource;

before(async () => {
  fake = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0 });
  source = createOpenAIImagesSource({ name: "openai-main", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, timeoutMs: 30_000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

interface Answer {
  status: number;
  error: { message: string; type: string; param: string | null; code: string | null } | undefined;
}

async function post(body: unknown, path = "/v1/images/generations", method = "POST", url = fake.url): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${OPENAI_KEY}`, "content-type": "application/json" },
    body: method === "GET" ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { error?: Answer["error"] };
  return { status: res.status, error: json.error };
}

describe("the fake, called directly", () => {
  test("a wrong field name: 400 unknown_parameter in OpenAI's words", async () => {
    const answer = await post({ model: "gpt-image-2", prompt: "x", num_images: 2 });
    assert.deepEqual(answer, {
      status: 400,
      error: { message: "Unknown parameter: 'num_images'.", type: "invalid_request_error", param: "num_images", code: "unknown_parameter" },
    });
    for (const field of ["promt", "imageSize", "image_size", "aspect_ratio", "width"]) {
      assert.equal((await post({ model: "gpt-image-2", prompt: "x", [field]: 1 })).error?.code, "unknown_parameter", field);
    }
  });

  test("DALL-E's response_format and style are refused for the GPT image models (vercel/ai#6102)", async () => {
    const format = await post({ model: "gpt-image-2", prompt: "x", response_format: "b64_json" });
    assert.deepEqual({ status: format.status, ...format.error }, { status: 400, ...UNKNOWN_PARAMETER_ERROR.error });
    assert.equal((await post({ model: "gpt-image-2", prompt: "x", style: "vivid" })).error?.param, "style");
  });

  test("a retired model answers 404 model_not_found as OpenAI does; an unknown one too", async () => {
    for (const model of RETIRED_IMAGE_MODELS) {
      const answer = await post({ model, prompt: "x" });
      assert.equal(answer.status, 404, model);
      assert.deepEqual(answer.error, {
        ...MODEL_RETIRED_ERROR.error,
        message: `The model \`${model}\` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations`,
      });
    }
    assert.deepEqual(await post({ model: "gpt-image-9", prompt: "x" }), {
      status: 404,
      error: { message: "The model `gpt-image-9` does not exist or you do not have access to it.", type: "invalid_request_error", param: null, code: "model_not_found" },
    });
    assert.deepEqual(RETIRED_IMAGE_MODELS, ["dall-e-2", "dall-e-3", "gpt-image-1"]);
    for (const model of SERVED_IMAGE_MODELS) assert.equal((await post({ model, prompt: "x", quality: "low" })).status, 200, model);
  });

  test("the retired option retires a served model", async () => {
    const retiring = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0, retired: ["gpt-image-2"] });
    try {
      const answer = await post({ model: "gpt-image-2", prompt: "x" }, undefined, undefined, retiring.url);
      assert.equal(answer.status, 404);
      assert.equal(answer.error?.code, "model_not_found");
      assert.match(answer.error?.message ?? "", /`gpt-image-2` has been deprecated/);
      assert.equal((await post({ model: "gpt-image-2.5-flare", prompt: "x" }, undefined, undefined, retiring.url)).status, 200);
    } finally {
      await retiring.close();
    }
  });

  test("an unknown endpoint or method: 404 Invalid URL", async () => {
    for (const [path, method] of [
      ["/v1/images/generate", "POST"],
      ["/v1/images/edits", "POST"],
      ["/images/generations", "POST"],
      ["/v1/images/generations", "GET"],
    ] as const) {
      const answer = await post({ model: "gpt-image-2", prompt: "x" }, path, method);
      assert.equal(answer.status, 404, path);
      assert.equal(answer.error?.message, `Invalid URL (${method} ${path})`);
    }
  });

  test("required fields and their types", async () => {
    assert.deepEqual((await post({ prompt: "x" })).error?.code, "missing_required_parameter");
    assert.deepEqual((await post({ model: "gpt-image-2" })).error?.param, "prompt");
    assert.equal((await post({ model: "gpt-image-2", prompt: "" })).error?.code, "string_below_min_length");
    assert.equal((await post({ model: "gpt-image-2", prompt: "x".repeat(32_001) })).error?.code, "string_above_max_length");
    const typed = await post({ model: "gpt-image-2", prompt: "x", n: "2" });
    assert.deepEqual(typed.error, { message: "Invalid type for 'n': expected an integer, but got a string instead.", type: "invalid_request_error", param: "n", code: "invalid_type" });
    assert.equal((await post({ model: "gpt-image-2", prompt: "x", n: 1.5 })).error?.code, "invalid_type");
    assert.equal((await post({ model: "gpt-image-2", prompt: 7 })).error?.code, "invalid_type");
    assert.equal((await post({ model: "gpt-image-2", prompt: "x", stream: "no" })).error?.code, "invalid_type");
    assert.equal((await post([1, 2])).status, 400);
    // A field the SDK types `| null` takes null as its default.
    assert.equal((await post({ model: "gpt-image-2", prompt: "x", n: null, size: null, quality: null, background: null })).status, 200);
  });

  test("value ranges: n 1 to 10, quality per model, size per model, background, moderation, output_format", async () => {
    const code = async (extra: Record<string, unknown>, model = "gpt-image-2") => (await post({ model, prompt: "x", quality: "low", ...extra })).error?.code ?? "ok";
    assert.equal(await code({ n: 0 }), "integer_below_min_value");
    assert.equal(await code({ n: 11 }), "integer_above_max_value");
    assert.equal(await code({ n: 10 }), "ok");
    assert.equal(await code({ quality: "hd" }), "invalid_value");
    assert.equal(await code({ quality: "standard" }), "invalid_value");
    assert.equal(await code({ quality: "xhigh" }), "invalid_value");
    assert.equal(await code({ quality: "xhigh" }, "gpt-image-2.5-flare"), "ok");
    assert.equal(await code({ quality: "max" }, "gpt-image-2.5-sunburst-2026-09-08"), "ok");
    assert.equal(await code({ size: "1792x1024" }, "gpt-image-1.5"), "invalid_value");
    assert.equal(await code({ size: "1536x864" }, "gpt-image-1.5"), "invalid_value");
    assert.equal(await code({ size: "1536x864" }), "ok");
    assert.equal(await code({ size: "1000x1000" }), "invalid_value");
    assert.equal(await code({ size: "3840x2160" }), "ok");
    assert.equal(await code({ size: "4096x2048" }), "invalid_value");
    assert.equal(await code({ size: "3072x768" }), "invalid_value");
    assert.equal(await code({ size: "big" }), "invalid_value");
    assert.equal(await code({ background: "none" }), "invalid_value");
    assert.equal(await code({ background: "transparent", moderation: "low" }), "ok");
    assert.equal(await code({ moderation: "high" }), "invalid_value");
    assert.equal(await code({ output_format: "bmp" }), "invalid_value");
    assert.equal(await code({ output_compression: 101 }), "integer_above_max_value");
    assert.equal(await code({ partial_images: 4 }), "integer_above_max_value");
  });
});

describe("through the adapter", () => {
  test("a wrong field name passed through (D3) comes back as OpenAI's 400: not retryable, an input error", async () => {
    const err = await openAIFailure(source.submitImage(imageRequest({ model: "imgC-q1", parameters: { num_images: 2 } })));
    assert.equal(err.status, 400);
    assert.equal(err.code, "unknown_parameter");
    assert.equal(err.retryable, false);
    assert.equal(err.modelNotFound, false);
    assert.equal(err.contentRejected, false);
    assert.equal(err.unsupported, false);
    assert.match(err.message, /openai-main: HTTP 400: Unknown parameter: 'num_images'\./);
    assert.equal(fake.submits().length, 1);
  });

  test("a value OpenAI refuses (an invalid background) is the same non-retryable input error", async () => {
    const err = await openAIFailure(source.submitImage(imageRequest({ parameters: { background: "none" } })));
    assert.equal(err.status, 400);
    assert.equal(err.code, "invalid_value");
    assert.equal(err.retryable, false);
    assert.equal(err.modelNotFound, false);
  });

  test("a retired model: modelNotFound, not retryable, the message names the model and not the key", async () => {
    const retiring = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0, retired: ["gpt-image-2"] });
    const s = createOpenAIImagesSource({ name: "openai-old", baseUrl: `${retiring.url}/v1`, apiKey: OPENAI_KEY });
    try {
      for (const model of ["imgC-v3", "imgC-q1"]) {
        const err = await openAIFailure(s.submitImage(imageRequest({ model })));
        assert.equal(err.status, 404);
        assert.equal(err.code, "model_not_found");
        assert.equal(err.modelNotFound, true);
        assert.equal(err.upstreamModel, "gpt-image-2");
        assert.equal(err.retryable, false);
        assert.equal(err.contentRejected, false);
        assert.match(err.message, /^openai-old: the upstream model "gpt-image-2" does not exist at this source \(HTTP 404: The model `gpt-image-2` has been deprecated/);
      }
    } finally {
      await s.close();
      await retiring.close();
    }
  });

  test("an override naming a model OpenAI shut down (gpt-image-1): modelNotFound naming it", async () => {
    const s = createOpenAIImagesSource({ name: "openai-pinned", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, models: { "imgC-q1": "gpt-image-1" } });
    try {
      const err = await openAIFailure(s.submitImage(imageRequest({ model: "imgC-q1" })));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "gpt-image-1");
      assert.match(err.message, /"gpt-image-1"/);
    } finally {
      await s.close();
    }
  });

  test("a wrong base URL (an unknown endpoint): 404, not retryable, not modelNotFound", async () => {
    const s = createOpenAIImagesSource({ name: "openai-wrong-path", baseUrl: `${fake.url}/v2`, apiKey: OPENAI_KEY });
    try {
      const err = await openAIFailure(s.submitImage(imageRequest()));
      assert.equal(err.status, 404);
      assert.equal(err.retryable, false);
      assert.equal(err.modelNotFound, false);
      assert.match(err.message, /Invalid URL \(POST \/v2\/images\/generations\)/);
    } finally {
      await s.close();
    }
  });

  test("every body the adapter sends is accepted by the strict fake: both models, every aspect, tier and n", async () => {
    const aspects: AspectRatio[] = ["1:1", "16:9", "4:3", "21:9", "9:16", "3:4"];
    let calls = 0;
    for (const model of ["imgC-v3", "imgC-q1"]) {
      for (const aspect of aspects) {
        for (const quality of [null, "low", "medium", "high"] as const) {
          const n = aspect === "1:1" ? 1 + (calls % 4) : 1;
          const handle = await source.submitImage(imageRequest({ model, aspect, quality, n, parameters: { background: "auto", moderation: "auto", user: "u-1" } }));
          const state = await source.poll(handle);
          assert.ok(state.state === "succeeded" && state.outputs.length === n, `${model} ${aspect} ${quality} ${n}`);
          calls++;
        }
      }
    }
    assert.equal(fake.submits().length, calls);
  });
});
