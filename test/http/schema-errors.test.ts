/**
 * Schema failures answer the spec's per-endpoint codes through one mapping (issue 9): the failing
 * field's `x-error-code` / `x-error-message`, else 400 `invalid_request` naming the field, always with
 * the D1 body and `type` following the status (D16).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

describe("schema errors", () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startGateway("sqlite");
    key = (await gw.register()).api_key;
  });
  after(async () => {
    await gw?.close();
  });

  const post = (path: string, body: unknown) => gw.request("POST", path, { token: key, body });
  const assertError = (r: TestResponse, code: string, param: string | null, message?: RegExp) => {
    assert.equal(r.status, 400, JSON.stringify(r.json));
    assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(r.json.error.code, code);
    assert.equal(r.json.error.type, "invalid_request_error");
    assert.equal(r.json.error.param, param);
    if (message) assert.match(r.json.error.message, message);
  };

  test("a speech model longer than 200 characters is not_a_tts_model (issue 9, point 6)", async () => {
    const long = "m".repeat(250);
    assertError(await post("/v1/audio/speech", { model: long, input: "hi", voice_id: DEMO_ALPHA_VOICE_ID }), "not_a_tts_model", "model", /^'m{80}\.\.\.' is not a speech model\.$/);
    assertError(await post("/v1/audio/speech", { model: 5, input: "hi", voice_id: DEMO_ALPHA_VOICE_ID }), "not_a_tts_model", "model");
  });

  test("per-endpoint codes: unknown models, prompts, durations", async () => {
    assertError(await post("/v1/audio/music", { model: "nope", prompt: "x" }), "not_a_music_model", "model", /'nope' is not a music model/);
    assertError(await post("/v1/audio/sfx", { model: "nope", prompt: "x" }), "not_an_sfx_model", "model");
    assertError(await post("/v1/audio/voice-design", { model: "nope", description: "x" }), "not_a_voice_design_model", "model");
    assertError(await post("/v1/images/generations", { model: "nope", prompt: "x" }), "invalid_model", "model");
    assertError(await post("/v1/images/generations", { prompt: "x" }), "invalid_model", "model", /^model is required\.$/);
    assertError(await post("/v1/videos/generations", { model: "vidA-3-pro", prompt: "p".repeat(4001) }), "invalid_prompt", "prompt");
    assertError(await post("/v1/videos/generations", { model: "vidA-3-pro", prompt: "   " }), "invalid_prompt", "prompt");
    assertError(await post("/v1/genmedia/jobs", { model: "vidA-3-pro", prompt: "p" }), "invalid_model", "model", /vidD-\* only/);
    assertError(await post("/v1/audio/music", { prompt: "x", music_length_ms: 999 }), "invalid_duration", "music_length_ms");
    assertError(await post("/v1/audio/music", { prompt: "x", music_length_ms: "3000" }), "invalid_request", "music_length_ms");
    assertError(await post("/v1/images/generations", { model: "imgA-v4", prompt: "x", image_url: "http://example.com/a.png" }), "invalid_image_url", "image_url");
  });

  test("defaults: invalid_request naming the field, array items as name[i]", async () => {
    assertError(await post("/v1/audio/speech", { input: "hi", voice_id: DEMO_ALPHA_VOICE_ID, voice_settings: { style: 2 } }), "invalid_request", "voice_settings.style", /from 0 to 1/);
    assertError(await post("/v1/chat/completions", { model: "fast", messages: [{ role: "robot", content: "x" }] }), "invalid_request", "messages[0].role");
    assertError(await post("/v1/chat/completions", { messages: [] }), "invalid_request", "model", /^model is required\.$/);
    assertError(await gw.request("GET", "/v1/billing/ledger?limit=0", { token: key }), "invalid_request", "limit", /from 1 to 100/);
    assertError(await gw.request("GET", "/v1/models?tier=7", { token: key }), "invalid_request", "tier");
  });

  test("the schemas leave unknown fields alone and do not coerce types", async () => {
    const r = await post("/v1/auth/keys", { name: "x", extra: true });
    assert.equal(r.status, 201);
    assertError(await post("/v1/images/generations", { model: "imgA-v4", prompt: "x", n: "2" }), "invalid_request", "n");
  });
});
