/**
 * ElevenLabs' own JavaScript client (`@elevenlabs/elevenlabs-js`, a development dependency) pointed at
 * the loopback fake with its documented `baseUrl` option: when the vendor's client accepts the fake's
 * answers (it validates every JSON answer against its schemas, `parseOrThrow`), the fake speaks
 * ElevenLabs' protocol (upstreams.md, "Testing without the internet"). Method names are those of the
 * installed version's `api/resources/*\/client/Client.d.ts`.
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { ElevenLabs, ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";
import { audioDurationSec } from "../../../src/upstreams/audio-convert.ts";
import { FAKE_ACCOUNT_VOICES, FAKE_SHARED_VOICES, startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { AudioFormat } from "../../../src/upstreams/types.ts";
import { EL_KEY, mp3FrameSec, RACHEL } from "./helpers.ts";

let fake: ElevenLabsFake;
let client: ElevenLabsClient;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  // No retries: each call is exactly one request, so the recorded requests can be asserted.
  client = new ElevenLabsClient({ apiKey: EL_KEY, baseUrl: fake.url, maxRetries: 0 });
});

after(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

/** Reads a whole audio stream the client returns. */
async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return new Uint8Array(Buffer.concat(parts));
}

test("textToSpeech.convert: audio in the asked format, the request as the client wrote it", async () => {
  for (const format of ["mp3_44100_128", "pcm_24000", "ulaw_8000"] as const satisfies readonly AudioFormat[]) {
    const text = "The vendor's own client, pointed at the fake.";
    const bytes = await readAll(
      await client.textToSpeech.convert(RACHEL, {
        text,
        modelId: "eleven_multilingual_v2",
        outputFormat: format,
        voiceSettings: { stability: 0.5, similarityBoost: 0.75 },
      }),
    );
    const expected = 0.06 * [...text].length;
    const seconds = audioDurationSec(bytes, format);
    assert.ok(seconds >= expected - 1e-9 && seconds <= expected + 3 * mp3FrameSec(format), `${format}: ${seconds}`);
  }
  const [r] = fake.requests;
  assert.equal(r.path, `/v1/text-to-speech/${RACHEL}?output_format=mp3_44100_128`);
  assert.equal(r.headers["xi-api-key"], "[redacted]");
  assert.deepEqual(r.body, {
    text: "The vendor's own client, pointed at the fake.",
    model_id: "eleven_multilingual_v2",
    voice_settings: { stability: 0.5, similarity_boost: 0.75 },
  });
});

test("textToSpeech.stream: the same bytes, chunked", async () => {
  const bytes = await readAll(await client.textToSpeech.stream(RACHEL, { text: "streamed", outputFormat: "pcm_16000" }));
  assert.equal(bytes.byteLength, Math.round(0.48 * 16000) * 2);
  assert.equal(fake.requests[0].path, `/v1/text-to-speech/${RACHEL}/stream?output_format=pcm_16000`);
});

test("music.compose: exactly music_length_ms", async () => {
  const bytes = await readAll(await client.music.compose({ prompt: "an upbeat synth loop", musicLengthMs: 4000, modelId: "music_v2", outputFormat: "pcm_44100" }));
  assert.equal(audioDurationSec(bytes, "pcm_44100"), 4);
  assert.deepEqual(fake.requests[0].body, { prompt: "an upbeat synth loop", music_length_ms: 4000, model_id: "music_v2" });
  assert.equal(fake.requests[0].path, "/v1/music?output_format=pcm_44100");
});

test("music.compose without output_format: `auto`, MP3 48 kHz 192 kbps for the v2 models", async () => {
  const bytes = await readAll(await client.music.compose({ prompt: "a calm pad", musicLengthMs: 3000, modelId: "music_v2_5" }));
  assert.equal(bytes[0], 0xff, "an MPEG frame");
  // MPEG-1 layer III, 192 kbps (index 11), 48 kHz (index 1).
  assert.equal((bytes[1]! >> 3) & 3, 3);
  assert.equal(bytes[2]! >> 4, 11);
  assert.equal((bytes[2]! >> 2) & 3, 1);
  assert.equal(fake.requests[0].path, "/v1/music");
});

test("textToSoundEffects.convert: duration_seconds and prompt_influence", async () => {
  const bytes = await readAll(
    await client.textToSoundEffects.convert({ text: "glass shattering", durationSeconds: 2.5, promptInfluence: 0.6, modelId: "eleven_text_to_sound_v2", outputFormat: "mp3_22050_32" }),
  );
  const seconds = audioDurationSec(bytes, "mp3_22050_32");
  assert.ok(seconds >= 2.5 && seconds <= 2.5 + 3 * mp3FrameSec("mp3_22050_32"), String(seconds));
  assert.deepEqual(fake.requests[0].body, { text: "glass shattering", duration_seconds: 2.5, prompt_influence: 0.6, model_id: "eleven_text_to_sound_v2" });
});

test("voices.search pages with next_page_token until has_more is false", async () => {
  const first = await client.voices.search({ pageSize: 100 });
  assert.equal(first.voices.length, 100);
  assert.equal(first.hasMore, true);
  assert.equal(first.totalCount, FAKE_ACCOUNT_VOICES);
  assert.equal(typeof first.nextPageToken, "string");
  assert.equal(first.voices[0].voiceId, RACHEL);
  assert.equal(first.voices[0].name, "Rachel");
  assert.equal(first.voices[0].category, "premade");
  const second = await client.voices.search({ pageSize: 100, nextPageToken: first.nextPageToken });
  assert.equal(second.voices.length, FAKE_ACCOUNT_VOICES - 100);
  assert.equal(second.hasMore, false);
  assert.equal(second.nextPageToken, undefined);
});

test("voices.getAll: every account voice with its labels", async () => {
  const all = await client.voices.getAll();
  assert.equal(all.voices.length, FAKE_ACCOUNT_VOICES);
  assert.equal(typeof all.voices[0].labels?.gender, "string");
  assert.equal(fake.requests[0].path, "/v1/voices");
});

test("voices.getShared: library pages with their top-level labels", async () => {
  const page0 = await client.voices.getShared({ pageSize: 100, page: 0 });
  assert.equal(page0.voices.length, 100);
  assert.equal(page0.hasMore, true);
  assert.equal(page0.totalCount, FAKE_SHARED_VOICES);
  assert.equal(page0.voices[0].voiceId, "sB1b5zUrxQVAFl2PhZFp");
  assert.equal(page0.voices[0].useCase.length > 0, true);
  const last = await client.voices.getShared({ pageSize: 100, page: Math.ceil(FAKE_SHARED_VOICES / 100) - 1 });
  assert.equal(last.hasMore, false);
  assert.equal(last.voices.length, FAKE_SHARED_VOICES % 100 || 100);
  assert.equal(fake.requests[0].path, "/v1/shared-voices?page_size=100&page=0");
});

test("errors reach the client as ElevenLabsError with ElevenLabs' body; 422 as UnprocessableEntityError", async () => {
  await assert.rejects(client.textToSpeech.convert("AAAAAAAAAAAAAAAAAAAA", { text: "who?" }), (err: unknown) => {
    assert.ok(err instanceof ElevenLabsError);
    assert.equal(err.statusCode, 400);
    assert.deepEqual((err.body as { detail: { status: string } }).detail.status, "voice_not_found");
    return true;
  });
  await assert.rejects(client.music.compose({ prompt: "too short", musicLengthMs: 1000 }), (err: unknown) => {
    assert.ok(err instanceof ElevenLabs.UnprocessableEntityError);
    assert.equal(err.statusCode, 422);
    return true;
  });
  await assert.rejects(client.textToSoundEffects.convert({ text: "x [fake:429]" }), (err: unknown) => {
    assert.ok(err instanceof ElevenLabsError);
    assert.equal(err.statusCode, 429);
    return true;
  });
  // D35: a dropped model (turbo) is ElevenLabs' 400 model_not_found; an unknown music model FastAPI's 422 enum.
  await assert.rejects(client.textToSpeech.convert(RACHEL, { text: "old model", modelId: "eleven_turbo_v2_5" }), (err: unknown) => {
    assert.ok(err instanceof ElevenLabsError);
    assert.equal(err.statusCode, 400);
    assert.deepEqual((err.body as { detail: { status: string } }).detail.status, "model_not_found");
    return true;
  });
  await assert.rejects(
    client.textToSpeech.convert(RACHEL, { text: "too stable", voiceSettings: { stability: 1.5 } }),
    (err: unknown) => err instanceof ElevenLabsError && (err.body as { detail: { status: string } }).detail.status === "invalid_voice_settings",
  );
  const wrong = new ElevenLabsClient({ apiKey: "sk_not-the-key", baseUrl: fake.url, maxRetries: 0 });
  await assert.rejects(wrong.voices.search(), (err: unknown) => {
    assert.ok(err instanceof ElevenLabsError);
    assert.equal(err.statusCode, 401);
    assert.equal((err.body as { detail: { status: string } }).detail.status, "invalid_api_key");
    return true;
  });
});
