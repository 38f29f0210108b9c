/**
 * The decoders of the ElevenLabs adapter on ElevenLabs' own shapes (fixtures.ts): voices of both
 * listings to library records, error bodies to flags and messages, request bodies from requests.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createElevenLabsApi, describeElevenLabsError, elevenLabsErrorStatus } from "../../../src/upstreams/elevenlabs/api.ts";
import type { KeyedBytesAnswer } from "../../../src/upstreams/keyed-http.ts";
import { musicBody, musicLengthToAsk, sfxBody } from "../../../src/upstreams/elevenlabs/music.ts";
import { speechBody } from "../../../src/upstreams/elevenlabs/speech.ts";
import { voiceRecordOf } from "../../../src/upstreams/elevenlabs/voices.ts";
import { checkModelOverrides, upstreamModelId } from "../../../src/upstreams/elevenlabs/models.ts";
import {
  ERROR_CHARACTER_LIMIT,
  ERROR_INVALID_KEY,
  ERROR_PAYMENT_REQUIRED,
  ERROR_QUOTA,
  ERROR_SYSTEM_BUSY,
  ERROR_VALIDATION,
  ERROR_VOICE_DOES_NOT_EXIST,
  ERROR_VOICE_NOT_FOUND,
  PREMADE_VOICE_ROGER,
  SHARED_VOICE_ALITA,
  V2_VOICE_RACHEL,
} from "./fixtures.ts";
import { EL_KEY, musicRequest, sfxRequest, speechRequest } from "./helpers.ts";

describe("voice records", () => {
  test("an account voice (GET /v2/voices): labels from `labels`, extra labels dropped", () => {
    assert.deepEqual(voiceRecordOf(V2_VOICE_RACHEL), {
      provider: "alpha",
      voice_id: "21m00Tcm4TlvDq8ikWAM",
      name: "Rachel",
      category: "professional",
      labels: { gender: "female", age: "middle-aged", accent: "American", use_case: "social media" },
      preview_url: V2_VOICE_RACHEL.preview_url,
      description: "A warm, expressive voice with a touch of humor.",
    });
  });

  test("a library voice (GET /v1/shared-voices): gender, age, accent, use case from its top level", () => {
    assert.deepEqual(voiceRecordOf(SHARED_VOICE_ALITA), {
      provider: "alpha",
      voice_id: "sB1b5zUrxQVAFl2PhZFp",
      name: "Alita",
      category: "professional",
      labels: { gender: "Female", age: "young", accent: "american", use_case: "characters_animation" },
      preview_url: SHARED_VOICE_ALITA.preview_url,
      description: "Perfectly calm, neutral and strong voice. Great for a young female protagonist.",
    });
  });

  test("null description and preview, a missing label: empty strings", () => {
    const record = voiceRecordOf(PREMADE_VOICE_ROGER);
    assert.ok(record !== null);
    assert.equal(record.description, "");
    assert.equal(record.preview_url, "");
    assert.deepEqual(record.labels, { gender: "male", age: "middle_aged", accent: "american", use_case: "" });
  });

  test("a voice without voice_id, or not an object, is skipped", () => {
    assert.equal(voiceRecordOf({ name: "nameless" }), null);
    assert.equal(voiceRecordOf({ voice_id: "", name: "empty id" }), null);
    assert.equal(voiceRecordOf({ voice_id: 42 }), null);
    assert.equal(voiceRecordOf("21m00Tcm4TlvDq8ikWAM"), null);
    assert.equal(voiceRecordOf(null), null);
  });

  test("fields of the wrong type become empty strings", () => {
    assert.deepEqual(voiceRecordOf({ voice_id: "abc", name: 7, category: null, labels: { gender: 1 }, preview_url: {}, description: [] }), {
      provider: "alpha",
      voice_id: "abc",
      name: "",
      category: "",
      labels: { gender: "", age: "", accent: "", use_case: "" },
      preview_url: "",
      description: "",
    });
  });
});

describe("error bodies", () => {
  test("machine-readable status: detail.status, else detail.code, else the FastAPI type", () => {
    assert.equal(elevenLabsErrorStatus(ERROR_QUOTA), "quota_exceeded");
    assert.equal(elevenLabsErrorStatus(ERROR_PAYMENT_REQUIRED), "payment_required");
    assert.equal(elevenLabsErrorStatus({ detail: { code: "paid_plan_required", message: "x" } }), "paid_plan_required");
    assert.equal(elevenLabsErrorStatus(ERROR_VALIDATION), "less_than_equal");
    assert.equal(elevenLabsErrorStatus({ detail: "Not Found" }), null);
    assert.equal(elevenLabsErrorStatus(undefined), null);
  });

  test("descriptions: message and status, FastAPI fields, raw text", () => {
    assert.equal(describeElevenLabsError(ERROR_SYSTEM_BUSY, ""), `${ERROR_SYSTEM_BUSY.detail.message} (system_busy)`);
    assert.equal(describeElevenLabsError({ detail: { status: "system_busy" } }, ""), "system_busy");
    assert.equal(describeElevenLabsError(ERROR_VALIDATION, ""), "music_length_ms: Input should be less than or equal to 600000 (less_than_equal)");
    assert.equal(describeElevenLabsError(undefined, "Internal Server Error"), "Internal Server Error");
    assert.equal(describeElevenLabsError(undefined, "<html><body><h1>502 Bad Gateway</h1></body></html>"), "502 Bad Gateway");
    assert.ok(describeElevenLabsError({ detail: { status: "x", message: "m".repeat(1000) } }, "").length <= 303);
  });

  const api = createElevenLabsApi({ name: "el-decode", apiKey: EL_KEY, baseUrl: "http://127.0.0.1:9" });
  after(() => api.close());
  const answer = (status: number, body: unknown): KeyedBytesAnswer => ({
    status,
    headers: { "content-type": "application/json" },
    body: new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body)),
  });
  const cases: { name: string; status: number; body: unknown; speech: boolean; retryable: boolean; voiceUnavailable: boolean }[] = [
    { name: "401 invalid_api_key", status: 401, body: ERROR_INVALID_KEY, speech: true, retryable: false, voiceUnavailable: false },
    { name: "401 quota_exceeded (another source may have credits)", status: 401, body: ERROR_QUOTA, speech: true, retryable: true, voiceUnavailable: false },
    { name: "429 system_busy", status: 429, body: ERROR_SYSTEM_BUSY, speech: true, retryable: true, voiceUnavailable: false },
    { name: "429 concurrent_limit_exceeded", status: 429, body: { detail: { status: "concurrent_limit_exceeded", message: "Too many concurrent requests." } }, speech: false, retryable: true, voiceUnavailable: false },
    { name: "429 rate_limit_exceeded", status: 429, body: { detail: { status: "rate_limit_exceeded", message: "Rate limit." } }, speech: false, retryable: true, voiceUnavailable: false },
    { name: "500 text", status: 500, body: "Internal Server Error", speech: true, retryable: true, voiceUnavailable: false },
    { name: "503 html", status: 503, body: "<html>unavailable</html>", speech: false, retryable: true, voiceUnavailable: false },
    { name: "400 voice_not_found on speech", status: 400, body: ERROR_VOICE_NOT_FOUND, speech: true, retryable: false, voiceUnavailable: true },
    { name: "404 voice_not_found on speech", status: 404, body: ERROR_VOICE_NOT_FOUND, speech: true, retryable: false, voiceUnavailable: true },
    { name: "400 voice_does_not_exist on speech", status: 400, body: ERROR_VOICE_DOES_NOT_EXIST, speech: true, retryable: false, voiceUnavailable: true },
    { name: "400 voice_not_found elsewhere", status: 400, body: ERROR_VOICE_NOT_FOUND, speech: false, retryable: false, voiceUnavailable: false },
    { name: "400 max_character_limit_exceeded", status: 400, body: ERROR_CHARACTER_LIMIT, speech: true, retryable: false, voiceUnavailable: false },
    { name: "402 payment_required", status: 402, body: ERROR_PAYMENT_REQUIRED, speech: true, retryable: false, voiceUnavailable: false },
    { name: "403", status: 403, body: { detail: { status: "missing_permissions", message: "The API key lacks text_to_speech." } }, speech: true, retryable: false, voiceUnavailable: false },
    { name: "422 FastAPI", status: 422, body: ERROR_VALIDATION, speech: false, retryable: false, voiceUnavailable: false },
    { name: "302 redirect", status: 302, body: "", speech: false, retryable: false, voiceUnavailable: false },
  ];
  for (const c of cases) {
    test(`${c.name} -> retryable ${c.retryable}, voiceUnavailable ${c.voiceUnavailable}`, () => {
      const err = api.httpError(answer(c.status, c.body), "text-to-speech", { speech: c.speech });
      assert.equal(err.status, c.status);
      assert.equal(err.kind, "http");
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.voiceUnavailable, c.voiceUnavailable);
      assert.equal(err.contentRejected, false);
      assert.match(err.message, new RegExp(`^el-decode: text-to-speech: HTTP ${c.status}`));
    });
  }

  test("a body echoing the key is redacted", () => {
    const err = api.httpError(answer(401, { detail: { status: "invalid_api_key", message: `Invalid API key: ${EL_KEY}` } }), "music");
    assert.match(err.message, /Invalid API key: \[redacted\] \(invalid_api_key\)$/);
    assert.ok(!err.message.includes(EL_KEY));
  });
});

describe("request bodies", () => {
  test("speech: voice_settings only with the fields given, left out when none is", () => {
    assert.deepEqual(speechBody(speechRequest({ text: "hi" }), "eleven_v3"), { text: "hi", model_id: "eleven_v3" });
    assert.deepEqual(speechBody(speechRequest({ text: "hi", voiceSettings: { stability: 0.4, use_speaker_boost: false } }), "m"), {
      text: "hi",
      model_id: "m",
      voice_settings: { stability: 0.4, use_speaker_boost: false },
    });
    assert.deepEqual(speechBody(speechRequest({ text: "hi", voiceSettings: { stability: 0, similarity_boost: 1, style: 0.5, use_speaker_boost: true } }), "m").voice_settings, {
      stability: 0,
      similarity_boost: 1,
      style: 0.5,
      use_speaker_boost: true,
    });
  });

  test("music: at least 3000 ms asked, whole ms, at most 600000", () => {
    assert.equal(musicLengthToAsk(1000), 3000);
    assert.equal(musicLengthToAsk(2999.6), 3000);
    assert.equal(musicLengthToAsk(45_000), 45_000);
    assert.equal(musicLengthToAsk(700_000), 600_000);
    assert.deepEqual(musicBody(musicRequest({ lengthMs: 1200, lyrics: "la la" }), "music_v2"), { prompt: "calm lo-fi piano", music_length_ms: 3000, model_id: "music_v2" });
  });

  test("sfx: duration_seconds only when given", () => {
    assert.deepEqual(sfxBody(sfxRequest({ durationSec: null, promptInfluence: 0.7 }), "eleven_text_to_sound_v2"), {
      text: "a door creaks open",
      prompt_influence: 0.7,
      model_id: "eleven_text_to_sound_v2",
    });
    assert.equal(sfxBody(sfxRequest({ durationSec: 4 }), "x").duration_seconds, 4);
  });
});

describe("models", () => {
  test("defaults (D35: turbo served by flash, music_v2), overrides, and models of another call or family", () => {
    const overrides = checkModelOverrides({ "alpha-v3": "eleven_v3_preview" });
    assert.equal(upstreamModelId("alpha-v3", "speech", overrides), "eleven_v3_preview");
    assert.equal(upstreamModelId("alpha-flash-v2-5", "speech", overrides), "eleven_flash_v2_5");
    assert.equal(upstreamModelId("alpha-turbo-v2-5", "speech", overrides), "eleven_flash_v2_5");
    assert.equal(upstreamModelId("alpha-multilingual-v2", "speech", overrides), "eleven_multilingual_v2");
    assert.equal(upstreamModelId("alpha-music", "music", overrides), "music_v2");
    assert.equal(upstreamModelId("alpha-sfx", "sfx", overrides), "eleven_text_to_sound_v2");
    assert.equal(upstreamModelId("alpha-music", "speech", overrides), null);
    assert.equal(upstreamModelId("beta-speech-hd", "speech", overrides), null);
    assert.equal(upstreamModelId("constructor", "speech", overrides), null);
  });

  test("a bad override is a RangeError", () => {
    assert.throws(() => checkModelOverrides({ "beta-music": "music-1.5" }), RangeError);
    assert.throws(() => checkModelOverrides({ "alpha-v3": "" }), RangeError);
    assert.throws(() => checkModelOverrides({ "alpha-v3": "../v1/voices" }), RangeError);
  });
});
