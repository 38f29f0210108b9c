/**
 * Contract tests of the strict MiniMax fake (fakes/minimax.ts, "Validation") and of the adapter's answer
 * to "no such model" (D35): a wrong field name or a bogus number is refused by the fake as MiniMax
 * refuses it (HTTP 200, `base_resp` 2013 `invalid params, ...`), called directly and through the adapter
 * with a bad `models` override; a retired model is answered with the 2013 naming it, and the adapter
 * raises `modelNotFound` naming it (whole, streamed, music and video).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { isModelNotFound } from "../../../src/upstreams/minimax/api.ts";
import type { MiniMaxError } from "../../../src/upstreams/minimax/api.ts";
import { createMiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import type { MiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import { createMiniMaxVideoSource } from "../../../src/upstreams/minimax/video-source.ts";
import { MM_KEY, mmFailure, musicRequest, seenMessages, speechRequest, videoRequest } from "./helpers.ts";

let fake: MiniMaxFake;
let source: MiniMaxSource;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY });
  source = createMiniMaxSource({ name: "mm-main", baseUrl: fake.url, apiKey: MM_KEY });
});

after(async () => {
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(MM_KEY));
});

beforeEach(() => {
  fake.reset();
  fake.setRetired([]);
});

type BaseResp = { status_code: number; status_msg: string };

/** One POST straight to the fake: HTTP status and `base_resp`. */
async function post(path: string, body: unknown): Promise<{ status: number; base: BaseResp | undefined }> {
  const res = await fetch(`${fake.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${MM_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { base_resp?: BaseResp };
  return { status: res.status, base: json.base_resp };
}

const speechBody = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: "speech-2.8-hd",
  text: "Hello there.",
  stream: false,
  voice_setting: { voice_id: "Wise_Woman", speed: 1, vol: 1, pitch: 0 },
  audio_setting: { format: "mp3", sample_rate: 32000, bitrate: 128000, channel: 1 },
  output_format: "hex",
  ...extra,
});

const musicBody = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: "music-2.6",
  prompt: "folk",
  lyrics: "[Verse]\nla la la",
  audio_setting: { format: "mp3", sample_rate: 44100, bitrate: 256000 },
  output_format: "hex",
  ...extra,
});

/** Asserts a 2013 refusal whose message matches `message`. */
function assertInvalid(r: { status: number; base: BaseResp | undefined }, message: RegExp, what: string): void {
  assert.equal(r.status, 200, what);
  assert.equal(r.base?.status_code, 2013, what);
  assert.match(r.base?.status_msg ?? "", message, what);
}

describe("the fake refuses what MiniMax refuses (called directly)", () => {
  test("the catalog id instead of MiniMax's model is 2013 naming it; every current id is served", async () => {
    assertInvalid(await post("/v1/t2a_v2", speechBody({ model: "beta-speech-hd" })), /^invalid params, model beta-speech-hd is not supported$/, "speech");
    assertInvalid(await post("/v1/music_generation", musicBody({ model: "music-1.5" })), /model music-1\.5 is not supported/, "music");
    assertInvalid(await post("/v1/video_generation", { model: "vidC-02-768p", prompt: "fox", duration: 6, resolution: "768P" }), /model vidC-02-768p/, "video");
    for (const model of ["speech-2.8-hd", "speech-2.8-turbo", "speech-2.6-hd", "speech-02-hd"]) {
      assert.equal((await post("/v1/t2a_v2", speechBody({ model }))).base?.status_code, 0, model);
    }
    for (const model of ["music-2.6", "music-2.5", "music-2.5+"]) {
      assert.equal((await post("/v1/music_generation", musicBody({ model }))).base?.status_code, 0, model);
    }
  });

  test("a wrong field name: ElevenLabs' `voice_settings` for MiniMax's `voice_setting` leaves no voice_id", async () => {
    const { voice_setting: vs, ...rest } = speechBody();
    assertInvalid(await post("/v1/t2a_v2", { ...rest, voice_settings: vs }), /voice_id is required/, "voice_settings");
    assertInvalid(await post("/v1/t2a_v2", speechBody({ text: undefined, input: "hi" })), /text is required/, "input for text");
  });

  test("voice_setting numbers out of MiniMax's ranges", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ speed: 3 }, /speed should be in \[0\.5, 2\]/],
      [{ speed: 0.4 }, /speed/],
      [{ vol: 0 }, /vol should be in \(0, 10\]/],
      [{ vol: 11 }, /vol/],
      [{ pitch: 1.5 }, /pitch should be an integer in \[-12, 12\]/],
      [{ pitch: -13 }, /pitch/],
      [{ speed: "fast" }, /speed/],
      [{ emotion: "ecstatic" }, /emotion/],
    ];
    for (const [setting, message] of cases) {
      const body = speechBody({ voice_setting: { voice_id: "Wise_Woman", ...setting } });
      assertInvalid(await post("/v1/t2a_v2", body), message, JSON.stringify(setting));
    }
    const fine = speechBody({ voice_setting: { voice_id: "Wise_Woman", speed: 2, vol: 10, pitch: -12, emotion: "calm" } });
    assert.equal((await post("/v1/t2a_v2", fine)).base?.status_code, 0);
  });

  test("audio_setting enums (format, sample_rate, bitrate, channel) and output_format", async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["/v1/t2a_v2", { audio_setting: { format: "ogg", sample_rate: 32000 } }, /audio_setting\.format/],
      ["/v1/t2a_v2", { audio_setting: { format: "mp3", sample_rate: 48000, bitrate: 128000 } }, /audio_setting\.sample_rate/],
      ["/v1/t2a_v2", { audio_setting: { format: "mp3", sample_rate: 32000, bitrate: 192000 } }, /audio_setting\.bitrate/],
      ["/v1/t2a_v2", { audio_setting: { format: "mp3", sample_rate: 32000, channel: 3 } }, /audio_setting\.channel/],
      ["/v1/t2a_v2", { output_format: "base64" }, /output_format/],
      ["/v1/t2a_v2", { stream: "yes" }, /stream should be a boolean/],
      ["/v1/music_generation", { audio_setting: { format: "mp3", sample_rate: 22050, bitrate: 128000 } }, /audio_setting\.sample_rate/],
      ["/v1/music_generation", { audio_setting: { format: "flac", sample_rate: 44100 } }, /audio_setting\.format/],
    ];
    for (const [path, extra, message] of cases) {
      const body = path === "/v1/t2a_v2" ? speechBody(extra) : musicBody(extra);
      assertInvalid(await post(path, body), message, `${path} ${JSON.stringify(extra)}`);
    }
  });

  test("music: is_instrumental only where the model has it; lyrics and prompt lengths; lyrics required", async () => {
    assertInvalid(await post("/v1/music_generation", musicBody({ model: "music-2.5", lyrics: undefined, is_instrumental: true })), /is_instrumental is not supported by music-2\.5$/, "music-2.5");
    assert.equal((await post("/v1/music_generation", musicBody({ lyrics: undefined, is_instrumental: true }))).base?.status_code, 0, "music-2.6");
    assertInvalid(await post("/v1/music_generation", musicBody({ lyrics: "la\n".repeat(1200) })), /lyrics should be at most 3500/, "long lyrics");
    assertInvalid(await post("/v1/music_generation", musicBody({ prompt: "p".repeat(2001) })), /prompt should be at most 2000/, "long prompt");
    assertInvalid(await post("/v1/music_generation", musicBody({ lyrics: "  " })), /lyrics is required/, "no lyrics");
    assertInvalid(await post("/v1/music_generation", musicBody({ is_instrumental: "true" })), /is_instrumental should be a boolean/, "string flag");
  });

  test("an unknown endpoint is HTTP 404", async () => {
    const r = await post("/v1/text_to_music", musicBody());
    assert.equal(r.status, 404);
  });

  test("a retired model is the same 2013 naming it, on every endpoint", async () => {
    fake.setRetired(["speech-2.8-hd", "music-2.6", "MiniMax-Hailuo-02"]);
    assertInvalid(await post("/v1/t2a_v2", speechBody()), /model speech-2\.8-hd is not supported/, "speech");
    assertInvalid(await post("/v1/music_generation", musicBody()), /model music-2\.6 is not supported/, "music");
    assertInvalid(await post("/v1/video_generation", { model: "MiniMax-Hailuo-02", prompt: "fox", duration: 6, resolution: "768P" }), /model MiniMax-Hailuo-02/, "video");
    assert.equal((await post("/v1/t2a_v2", speechBody({ model: "speech-2.8-turbo" }))).base?.status_code, 0, "others still served");
  });
});

/** Asserts `err` is the adapter's "no such model" error naming `model` (D35). */
function assertModelNotFound(err: MiniMaxError, model: string): void {
  assert.equal(err.modelNotFound, true);
  assert.equal(err.upstreamModel, model);
  assert.equal(err.code, 2013);
  assert.equal(err.retryable, false);
  assert.equal(err.unsupported, false);
  assert.ok(err.message.includes(`MiniMax has no model ${JSON.stringify(model)}`), err.message);
}

describe("through the adapter (D35: modelNotFound naming the upstream model)", () => {
  test("a bad `models` override: the catalog id sent as model", async () => {
    const bad = createMiniMaxSource({ name: "mm-bad", baseUrl: fake.url, apiKey: MM_KEY, models: { "beta-speech-hd": "beta-speech-hd", "beta-music": "music-1.5" } });
    try {
      const err = await mmFailure(bad.speech(speechRequest()));
      assertModelNotFound(err, "beta-speech-hd");
      assert.match(err.message, /^mm-bad: t2a_v2: MiniMax has no model "beta-speech-hd": MiniMax error 2013: invalid params, model beta-speech-hd is not supported$/);
      assertModelNotFound(await mmFailure(bad.music(musicRequest())), "music-1.5");
    } finally {
      await bad.close();
    }
  });

  test("a retired default, whole and streamed: beta-speech-turbo names speech-2.8-turbo", async () => {
    fake.setRetired(["speech-2.8-turbo"]);
    assertModelNotFound(await mmFailure(source.speech(speechRequest({ model: "beta-speech-turbo" }))), "speech-2.8-turbo");
    assertModelNotFound(await mmFailure(source.speech(speechRequest({ model: "beta-speech-turbo", stream: true }))), "speech-2.8-turbo");
    assert.equal(fake.submits().length, 2, "one request each, no retry inside the adapter");
    assert.equal((await source.speech(speechRequest())).kind, "bytes", "beta-speech-hd still served");
  });

  test("a retired music-2.6 fails beta-music-pro; beta-music (music-2.5) is still served", async () => {
    fake.setRetired(["music-2.6"]);
    assertModelNotFound(await mmFailure(source.music(musicRequest({ model: "beta-music-pro" }))), "music-2.6");
    assert.ok((await source.music(musicRequest())).body.length > 0);
  });

  test("video: a retired Hailuo model on submit", async () => {
    const old = await startMiniMaxFake({ apiKey: MM_KEY, retired: ["MiniMax-Hailuo-02"] });
    const video = createMiniMaxVideoSource({ name: "mm-video", baseUrl: old.url, apiKey: MM_KEY });
    try {
      assertModelNotFound(await mmFailure(video.submitVideo(videoRequest())), "MiniMax-Hailuo-02");
    } finally {
      await video.close();
      await old.close();
    }
  });

  test("other 2013s are not modelNotFound (missing lyrics, the marker); nor a 2042 voice", async () => {
    const lyrics = await mmFailure(source.music(musicRequest({ lyrics: null })));
    assert.equal(lyrics.code, 2013);
    assert.equal(lyrics.modelNotFound, false);
    assert.equal(lyrics.upstreamModel, null);
    const marker = await mmFailure(source.speech(speechRequest({ text: "x [fake:2013]" })));
    assert.equal(marker.modelNotFound, false);
    const voice = await mmFailure(source.speech(speechRequest({ voiceId: "No_Such_Voice" })));
    assert.equal(voice.voiceUnavailable, true);
    assert.equal(voice.modelNotFound, false);
  });

  test("isModelNotFound: 2013 with the model as a whole token only", () => {
    assert.equal(isModelNotFound(2013, "invalid params, model speech-2.8-hd is not supported", "speech-2.8-hd"), true);
    assert.equal(isModelNotFound(2013, "invalid params, unknown model: Speech-2.8-HD.", "speech-2.8-hd"), true);
    assert.equal(isModelNotFound(2013, "invalid params, model music-2.5+ is not supported", "music-2.5"), false);
    assert.equal(isModelNotFound(2013, "invalid params, model music-2.5.1 is not supported", "music-2.5"), false);
    assert.equal(isModelNotFound(2013, "invalid params, model xmusic-2.5 is not supported", "music-2.5"), false);
    assert.equal(isModelNotFound(2013, "invalid params, lyrics is required", "music-2.5"), false);
    assert.equal(isModelNotFound(1004, "login fail: model speech-2.8-hd", "speech-2.8-hd"), false);
    assert.equal(isModelNotFound(2013, "invalid params, model speech-2.8-hd", undefined), false);
  });
});
