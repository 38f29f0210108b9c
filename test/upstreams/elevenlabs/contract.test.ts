/**
 * Contract tests of the strict ElevenLabs fake (fakes/elevenlabs.ts, "Validation") and of the adapter's
 * answer to "no such model" (D35): a wrong field name or a bogus number is refused by the fake in
 * ElevenLabs' own shapes (400 `{detail: {status, message}}`, FastAPI's 422 `{detail: [{type, loc, msg,
 * input}]}`), called directly and through the adapter with a bad `models` override; a retired model is
 * answered as ElevenLabs answers a removed one, and the adapter raises `modelNotFound` naming it.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { isModelNotFound } from "../../../src/upstreams/elevenlabs/api.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { UpstreamError } from "../../../src/upstreams/types.ts";
import { EL_KEY, elFailure, musicRequest, RACHEL, seenMessages, sfxRequest, speechRequest } from "./helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-main", baseUrl: fake.url, apiKey: EL_KEY });
});

after(async () => {
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(EL_KEY));
});

beforeEach(() => {
  fake.reset();
  fake.setRetired([]);
});

/** One call straight to the fake: status and parsed JSON body. */
async function call(method: string, path: string, body?: unknown, raw?: string): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: { "xi-api-key": EL_KEY, "content-type": "application/json" },
    ...(body === undefined && raw === undefined ? {} : { body: raw ?? JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    // audio
  }
  return { status: res.status, json };
}

type Detail = { status: string; message: string };
type FieldErrors = { type: string; loc: (string | number)[]; msg: string; input: unknown }[];

const tts = `/v1/text-to-speech/${RACHEL}?output_format=pcm_16000`;

describe("the fake refuses what ElevenLabs refuses (called directly)", () => {
  test("speech: the catalog id instead of ElevenLabs' model_id is 400 model_not_found naming it", async () => {
    const r = await call("POST", tts, { text: "hi", model_id: "alpha-multilingual-v2" });
    assert.equal(r.status, 400);
    const detail = (r.json as { detail: Detail }).detail;
    assert.equal(detail.status, "model_not_found");
    assert.match(detail.message, /^A model with model ID alpha-multilingual-v2 does not exist/);
  });

  test("speech: a dropped turbo model is model_not_found too (D35); the current ids are served", async () => {
    for (const id of ["eleven_turbo_v2_5", "eleven_turbo_v2", "eleven_monolingual_v1"]) {
      const r = await call("POST", tts, { text: "hi", model_id: id });
      assert.equal(r.status, 400, id);
      assert.equal((r.json as { detail: Detail }).detail.status, "model_not_found");
    }
    for (const id of ["eleven_v3", "eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_flash_v2"]) {
      assert.equal((await call("POST", tts, { text: "hi", model_id: id })).status, 200, id);
    }
  });

  test("speech: a wrong field name (`prompt` for `text`) is FastAPI's 422 missing; unknown fields are ignored", async () => {
    const r = await call("POST", tts, { prompt: "hi", model_id: "eleven_v3" });
    assert.equal(r.status, 422);
    const [e] = (r.json as { detail: FieldErrors }).detail;
    assert.deepEqual([e.type, e.loc, e.msg], ["missing", ["body", "text"], "Field required"]);
    assert.equal((await call("POST", tts, { text: "hi", modelId: "whatever" })).status, 200, "pydantic ignores unknown fields");
  });

  test("speech: voice_settings numbers out of range are 400 invalid_voice_settings; wrong types 422, every field listed", async () => {
    for (const [settings, field] of [
      [{ stability: 1.5 }, "stability"],
      [{ similarity_boost: -0.1 }, "similarity_boost"],
      [{ style: 2 }, "style"],
      [{ speed: 1.5 }, "speed"],
      [{ speed: 0.5 }, "speed"],
    ] as const) {
      const r = await call("POST", tts, { text: "hi", voice_settings: settings });
      assert.equal(r.status, 400, JSON.stringify(settings));
      const detail = (r.json as { detail: Detail }).detail;
      assert.equal(detail.status, "invalid_voice_settings");
      assert.match(detail.message, new RegExp(`^Invalid setting for ${field} received`));
    }
    const r = await call("POST", tts, { text: 5, voice_settings: { stability: "high", use_speaker_boost: "maybe" }, seed: -1 });
    assert.equal(r.status, 422);
    assert.deepEqual(
      (r.json as { detail: FieldErrors }).detail.map((e) => [e.type, e.loc.join(".")]),
      [
        ["string_type", "body.text"],
        ["greater_than_equal", "body.seed"],
        ["float_parsing", "body.voice_settings.stability"],
        ["bool_parsing", "body.voice_settings.use_speaker_boost"],
      ],
    );
    assert.equal((await call("POST", tts, { text: "hi", voice_settings: { stability: 0, similarity_boost: 1, style: 0.5, speed: 1.2, use_speaker_boost: true } })).status, 200);
  });

  test("output_format outside the endpoint's enum: 422 enum at the query", async () => {
    for (const path of [`/v1/text-to-speech/${RACHEL}?output_format=mp3_44100_999`, "/v1/music?output_format=wav_44100", "/v1/sound-generation?output_format=flac"]) {
      const body = path.includes("music") ? { prompt: "p", music_length_ms: 3000 } : { text: "hi" };
      const r = await call("POST", path, body);
      assert.equal(r.status, 422, path);
      const [e] = (r.json as { detail: FieldErrors }).detail;
      assert.deepEqual([e.type, e.loc], ["enum", ["query", "output_format"]]);
    }
  });

  test("music: the length out of 3000..600000, an unknown model_id (enum), prompt with seed, neither prompt nor plan", async () => {
    const cases: [unknown, string, string][] = [
      [{ prompt: "p", music_length_ms: 2000 }, "greater_than_equal", "body.music_length_ms"],
      [{ prompt: "p", music_length_ms: 600_001 }, "less_than_equal", "body.music_length_ms"],
      [{ prompt: "p", music_length_ms: 3000.5 }, "int_from_float", "body.music_length_ms"],
      [{ prompt: "p", model_id: "music_v3" }, "enum", "body.model_id"],
      [{ prompt: "p", seed: 7 }, "value_error", "body"],
      [{ music_length_ms: 3000 }, "value_error", "body"],
    ];
    for (const [body, type, loc] of cases) {
      const r = await call("POST", "/v1/music?output_format=pcm_16000", body);
      assert.equal(r.status, 422, JSON.stringify(body));
      const [e] = (r.json as { detail: FieldErrors }).detail;
      assert.deepEqual([e.type, e.loc.join(".")], [type, loc], JSON.stringify(body));
    }
    assert.equal((await call("POST", "/v1/music?output_format=pcm_16000", { prompt: "p", music_length_ms: 3000, model_id: "music_v1" })).status, 200, "music_v1 is deprecated, still served");
  });

  test("sound effects: duration and influence ranges, the model_id literal", async () => {
    const cases: [unknown, string, string][] = [
      [{ text: "boom", duration_seconds: 45 }, "value_error", "body.duration_seconds"],
      [{ text: "boom", duration_seconds: 0.2 }, "value_error", "body.duration_seconds"],
      [{ text: "boom", prompt_influence: 1.5 }, "less_than_equal", "body.prompt_influence"],
      [{ text: "boom", model_id: "eleven_text_to_sound_v1" }, "literal_error", "body.model_id"],
      [{ text: "boom", loop: "sometimes" }, "bool_parsing", "body.loop"],
    ];
    for (const [body, type, loc] of cases) {
      const r = await call("POST", "/v1/sound-generation?output_format=pcm_16000", body);
      assert.equal(r.status, 422, JSON.stringify(body));
      const [e] = (r.json as { detail: FieldErrors }).detail;
      assert.deepEqual([e.type, e.loc.join(".")], [type, loc], JSON.stringify(body));
    }
  });

  test("an unknown endpoint is 404, a known one with another method 405, a body that is not JSON 422 json_invalid", async () => {
    assert.deepEqual(await call("POST", "/v1/text-to-music", { prompt: "p" }), { status: 404, json: { detail: "Not Found" } });
    assert.deepEqual(await call("GET", "/v1/music"), { status: 405, json: { detail: "Method Not Allowed" } });
    const r = await call("POST", tts, undefined, "{not json");
    assert.equal(r.status, 422);
    assert.equal((r.json as { detail: FieldErrors }).detail[0].type, "json_invalid");
  });

  test("a retired model answers 400 model_not_found on every endpoint", async () => {
    fake.setRetired(["eleven_v3", "music_v2", "eleven_text_to_sound_v2"]);
    for (const [path, body] of [
      [tts, { text: "hi", model_id: "eleven_v3" }],
      ["/v1/music?output_format=pcm_16000", { prompt: "p", music_length_ms: 3000, model_id: "music_v2" }],
      ["/v1/sound-generation?output_format=pcm_16000", { text: "boom" }],
    ] as const) {
      const r = await call("POST", path, body);
      assert.equal(r.status, 400, path);
      assert.equal((r.json as { detail: Detail }).detail.status, "model_not_found");
    }
  });
});

/** Asserts `err` is the adapter's "no such model" error naming `model` (D35). */
function assertModelNotFound(err: UpstreamError & { status?: number | null }, model: string, status: number): void {
  assert.equal(err.modelNotFound, true);
  assert.equal(err.upstreamModel, model);
  assert.equal(err.retryable, false);
  assert.equal(err.unsupported, false);
  assert.equal(err.status, status);
  assert.ok(err.message.includes(JSON.stringify(model)), err.message);
}

describe("through the adapter (D35: modelNotFound naming the upstream model)", () => {
  test("a bad `models` override: the catalog id sent as model_id", async () => {
    const bad = createElevenLabsSource({ name: "el-bad", baseUrl: fake.url, apiKey: EL_KEY, models: { "alpha-multilingual-v2": "alpha-multilingual-v2" } });
    try {
      const err = await elFailure(bad.speech(speechRequest()));
      assertModelNotFound(err, "alpha-multilingual-v2", 400);
      assert.match(err.message, /^el-bad: text-to-speech: ElevenLabs has no model "alpha-multilingual-v2": HTTP 400: A model with model ID alpha-multilingual-v2 does not exist/);
      assert.equal((fake.requests[0].body as { model_id: string }).model_id, "alpha-multilingual-v2");
    } finally {
      await bad.close();
    }
  });

  test("unknown music and sound-effect ids (FastAPI's 422 on model_id) are modelNotFound too", async () => {
    const bad = createElevenLabsSource({ name: "el-bad", baseUrl: fake.url, apiKey: EL_KEY, models: { "alpha-music": "music_v3", "alpha-sfx": "eleven_sfx_v9" } });
    try {
      assertModelNotFound(await elFailure(bad.music(musicRequest())), "music_v3", 422);
      assertModelNotFound(await elFailure(bad.sfx(sfxRequest())), "eleven_sfx_v9", 422);
    } finally {
      await bad.close();
    }
  });

  test("a retired default: alpha-turbo-v2-5 and alpha-flash-v2-5 name eleven_flash_v2_5; alpha-music names music_v2", async () => {
    fake.setRetired(["eleven_flash_v2_5", "music_v2"]);
    for (const model of ["alpha-turbo-v2-5", "alpha-flash-v2-5"]) {
      assertModelNotFound(await elFailure(source.speech(speechRequest({ model }))), "eleven_flash_v2_5", 400);
    }
    assertModelNotFound(await elFailure(source.music(musicRequest())), "music_v2", 400);
    assert.equal(fake.requests.length, 3, "one request each, no retry inside the adapter");
    // Other models are still served.
    assert.equal((await source.speech(speechRequest({ model: "alpha-v3" }))).kind, "bytes");
  });

  test("the `retired` option at start works the same", async () => {
    const old = await startElevenLabsFake({ apiKey: EL_KEY, retired: ["eleven_v3"] });
    const s = createElevenLabsSource({ name: "el-old", baseUrl: old.url, apiKey: EL_KEY });
    try {
      assertModelNotFound(await elFailure(s.speech(speechRequest({ model: "alpha-v3" }))), "eleven_v3", 400);
    } finally {
      await s.close();
      await old.close();
    }
  });

  test("other refusals are not modelNotFound: a bad voice setting, a missing voice, a 422 on another field", async () => {
    const settings = await elFailure(source.speech(speechRequest({ voiceSettings: { stability: 1.5 } })));
    assert.equal(settings.status, 400);
    assert.equal(settings.errorStatus, "invalid_voice_settings");
    assert.equal(settings.modelNotFound, false);
    assert.equal(settings.upstreamModel, null);
    const voice = await elFailure(source.speech(speechRequest({ voiceId: "AAAAAAAAAAAAAAAAAAAA" })));
    assert.equal(voice.voiceUnavailable, true);
    assert.equal(voice.modelNotFound, false);
    const marker = await elFailure(source.speech(speechRequest({ text: "x [fake:422]" })));
    assert.equal(marker.status, 422);
    assert.equal(marker.modelNotFound, false);
  });

  test("isModelNotFound reads both shapes and nothing else", () => {
    assert.equal(isModelNotFound(400, { detail: { status: "model_not_found", message: "m" } }), true);
    assert.equal(isModelNotFound(404, { detail: { type: "not_found", code: "model_not_found", message: "m" } }), true);
    assert.equal(isModelNotFound(422, { detail: [{ type: "enum", loc: ["body", "model_id"], msg: "m", input: "x" }] }), true);
    assert.equal(isModelNotFound(422, { detail: [{ type: "literal_error", loc: ["body", "model_id"], msg: "m", input: "x" }] }), true);
    assert.equal(isModelNotFound(422, { detail: [{ type: "string_type", loc: ["body", "model_id"], msg: "m", input: 5 }] }), false);
    assert.equal(isModelNotFound(422, { detail: [{ type: "enum", loc: ["query", "output_format"], msg: "m", input: "x" }] }), false);
    assert.equal(isModelNotFound(400, { detail: { status: "voice_not_found", message: "m" } }), false);
    assert.equal(isModelNotFound(500, { detail: { status: "model_not_found" } }), false);
    assert.equal(isModelNotFound(400, "model_not_found"), false);
  });
});
