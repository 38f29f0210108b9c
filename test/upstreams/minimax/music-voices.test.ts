/**
 * Music, voice design, voice clone and the voice catalog on the MiniMax fake: the exact requests
 * (`[Instrumental]` as `is_instrumental` on music-2.6, as written on music-2.5; gender and age folded
 * into the design prompt; the int64 `file_id` kept to the digit; the minted clone id) and the results
 * (audio in exactly the gateway format, voices that then speak, library records).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { createMiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import type { MiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import { DEFAULT_PREVIEW_TEXT } from "../../../src/upstreams/minimax/voices.ts";
import type { VoiceCloneRequest, VoiceDesignRequest } from "../../../src/upstreams/types.ts";
import { bytesOf, measuredSec, MM_KEY, mmFailure, mp3Headers, musicRequest, seenMessages, speechRequest } from "./helpers.ts";

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

beforeEach(() => fake.reset());

const lastBody = (): Record<string, unknown> => fake.submits().at(-1)?.body as Record<string, unknown>;

describe("music", () => {
  test("lyrics go as written; MP3 44.1 kHz 128 kbps is asked as it is; length from extra_info", async () => {
    const req = musicRequest();
    const result = await source.music(req);
    assert.equal(result.contentType, "audio/mpeg");
    const lines = req.lyrics!.split("\n").filter((l) => l.trim() !== "").length;
    assert.equal(result.durationSec, Math.max(5, 2 * lines));
    assert.ok(Math.abs(measuredSec(result.body, req.format) - result.durationSec) < 0.12);
    assert.ok(mp3Headers(result.body).every((f) => f.kbps === 128 && f.sampleRate === 44100));
    assert.deepEqual(lastBody(), {
      model: "music-2.5",
      prompt: req.prompt,
      lyrics: req.lyrics,
      audio_setting: { format: "mp3", sample_rate: 44100, bitrate: 128000 },
      output_format: "hex",
    });
    assert.equal(fake.submits().at(-1)?.path, "/v1/music_generation");
  });

  test("[Instrumental] alone on beta-music-pro (music-2.6, D35): is_instrumental true and no lyrics", async () => {
    for (const lyrics of ["[Instrumental]", "  [instrumental]\n", "\t[INSTRUMENTAL] "]) {
      const result = await source.music(musicRequest({ model: "beta-music-pro", lyrics }));
      assert.ok(result.body.length > 0);
      const body = lastBody();
      assert.equal(body.model, "music-2.6");
      assert.equal(body.is_instrumental, true);
      assert.ok(!("lyrics" in body));
    }
  });

  test("[Instrumental] on beta-music (music-2.5, which has no is_instrumental): the lyrics as written", async () => {
    await source.music(musicRequest({ lyrics: "[Instrumental]" }));
    const body = lastBody();
    assert.equal(body.lyrics, "[Instrumental]");
    assert.ok(!("is_instrumental" in body));
  });

  test("an override id with the flag (music-2.6 on beta-music) takes is_instrumental too; lyrics with more than the tag stay lyrics", async () => {
    const over = createMiniMaxSource({ name: "mm-over", baseUrl: fake.url, apiKey: MM_KEY, models: { "beta-music": "music-2.6" } });
    try {
      await over.music(musicRequest({ lyrics: "[Instrumental]" }));
      assert.equal(lastBody().model, "music-2.6");
      assert.equal(lastBody().is_instrumental, true);
      await over.music(musicRequest({ lyrics: "[Instrumental]\nla la la" }));
      assert.equal(lastBody().lyrics, "[Instrumental]\nla la la");
      assert.ok(!("is_instrumental" in lastBody()));
    } finally {
      await over.close();
    }
  });

  test("empty lyrics are left out (MiniMax then refuses: 2013, not retryable)", async () => {
    for (const lyrics of [null, "", "  \n "]) {
      const err = await mmFailure(source.music(musicRequest({ lyrics })));
      assert.equal(err.code, 2013);
      assert.equal(err.retryable, false);
      assert.ok(!("lyrics" in lastBody()));
    }
  });

  test("formats music lacks are asked as PCM at the nearest rate and converted exactly", async () => {
    const cases = [
      { format: "pcm_22050", asked: { format: "pcm", sample_rate: 24000 } },
      { format: "mp3_22050_32", asked: { format: "pcm", sample_rate: 24000 } },
      { format: "mp3_44100_192", asked: { format: "pcm", sample_rate: 44100 } },
      { format: "ulaw_8000", asked: { format: "pcm", sample_rate: 16000 } },
      { format: "pcm_16000", asked: { format: "pcm", sample_rate: 16000 } },
    ] as const;
    for (const c of cases) {
      const result = await source.music(musicRequest({ format: c.format }));
      assert.deepEqual(lastBody().audio_setting, c.asked, c.format);
      const seconds = result.durationSec;
      if (c.format.startsWith("pcm")) assert.equal(result.body.length, Math.round(seconds * Number(c.format.split("_")[1])) * 2, c.format);
      else if (c.format === "ulaw_8000") assert.equal(result.body.length, seconds * 8000);
      else {
        const [, rate, kbps] = c.format.split("_");
        const frames = mp3Headers(result.body);
        assert.ok(frames.length > 10 && frames.every((f) => f.sampleRate === Number(rate) && f.kbps === Number(kbps)), c.format);
        assert.ok(Math.abs(measuredSec(result.body, c.format) - seconds) < 0.12, c.format);
      }
    }
  });

  test("[fake:bad-hex]: a retryable malformed answer", async () => {
    const err = await mmFailure(source.music(musicRequest({ prompt: "x [fake:bad-hex]" })));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
  });

  test("a speech model on music() is unsupported", async () => {
    const err = await mmFailure(source.music(musicRequest({ model: "beta-speech-hd" })));
    assert.equal(err.unsupported, true);
  });
});

const design = (extra: Partial<VoiceDesignRequest> = {}): VoiceDesignRequest => ({
  description: "A warm, slightly husky storyteller with a gentle pace.",
  name: "Storyteller",
  previewText: null,
  gender: null,
  ageGroup: null,
  simulate: null,
  ...extra,
});

describe("voice design", () => {
  test("gender and age are folded into the prompt; the default preview text is supplied", async () => {
    const { upstreamVoiceId } = await source.designVoice(design({ gender: "female", ageGroup: "elderly" }));
    assert.deepEqual(lastBody(), {
      prompt: "A warm, slightly husky storyteller with a gentle pace. Gender: female. Age: elderly.",
      preview_text: DEFAULT_PREVIEW_TEXT,
    });
    assert.equal(fake.submits().at(-1)?.path, "/v1/voice_design");
    assert.ok(fake.clonedVoiceIds().includes(upstreamVoiceId));
  });

  test("the request's preview text is used; without gender and age the description stays as it is", async () => {
    await source.designVoice(design({ previewText: "Once upon a time." }));
    assert.deepEqual(lastBody(), { prompt: "A warm, slightly husky storyteller with a gentle pace.", preview_text: "Once upon a time." });
    await source.designVoice(design({ gender: "male" }));
    assert.equal(lastBody().prompt, "A warm, slightly husky storyteller with a gentle pace. Gender: male.");
  });

  test("the designed voice speaks", async () => {
    const { upstreamVoiceId } = await source.designVoice(design());
    const result = await source.speech(speechRequest({ voiceId: upstreamVoiceId, format: "pcm_16000" }));
    assert.ok(bytesOf(result).length > 0);
  });

  test("a content refusal of the description: contentRejected", async () => {
    const err = await mmFailure(source.designVoice(design({ description: "x [fake:1026]" })));
    assert.equal(err.contentRejected, true);
  });
});

const clone = (extra: Partial<VoiceCloneRequest> = {}): VoiceCloneRequest => ({
  audio: new Uint8Array(48_000).map((_, i) => (i * 7) & 0xff),
  format: "wav",
  durationSec: 12,
  name: "My voice",
  simulate: null,
  ...extra,
});

describe("voice clone", () => {
  test("upload (multipart, purpose voice_clone) then clone with the minted id; file_id kept to the digit", async () => {
    const { upstreamVoiceId } = await source.cloneVoice(clone());
    const [upload, cloneCall] = fake.submits();
    assert.equal(upload.path, "/v1/files/upload");
    assert.match(upload.headers["content-type"], /^multipart\/form-data; boundary=/);
    assert.deepEqual(upload.body, { purpose: "voice_clone", file: { filename: "reference.wav", type: "audio/wav", size: 48_000 } });
    assert.equal(cloneCall.path, "/v1/voice_clone");
    // The fake's file ids exceed 2^53: a double would have rounded them (and the fake would not find the file).
    const sent = /"file_id":(\d+)/.exec(cloneCall.raw)?.[1];
    assert.ok(sent !== undefined && BigInt(sent) > 2n ** 53n, cloneCall.raw);
    assert.equal((cloneCall.body as Record<string, unknown>).voice_id, upstreamVoiceId);
    assert.match(upstreamVoiceId, /^gw[A-Za-z0-9]{24}$/);
    assert.ok(fake.clonedVoiceIds().includes(upstreamVoiceId));
  });

  test("the content type and file name follow the format; ids are unique", async () => {
    const ids = new Set<string>();
    for (const [format, filename, type] of [["mp3", "reference.mp3", "audio/mpeg"], ["m4a", "reference.m4a", "audio/mp4"]] as const) {
      ids.add((await source.cloneVoice(clone({ format }))).upstreamVoiceId);
      const upload = fake.submits().at(-2);
      assert.deepEqual((upload?.body as { file: unknown }).file, { filename, type, size: 48_000 });
    }
    assert.equal(ids.size, 2);
  });

  test("the cloned voice speaks; once MiniMax forgets it, speech is voiceUnavailable (2042)", async () => {
    const { upstreamVoiceId } = await source.cloneVoice(clone());
    assert.ok(bytesOf(await source.speech(speechRequest({ voiceId: upstreamVoiceId }))).length > 0);
    fake.forgetVoice(upstreamVoiceId);
    const err = await mmFailure(source.speech(speechRequest({ voiceId: upstreamVoiceId })));
    assert.equal(err.code, 2042);
    assert.equal(err.voiceUnavailable, true);
    assert.equal(err.retryable, false);
  });
});

describe("voice listing", () => {
  test("about 300 system voices as beta library records", async () => {
    const voices = await source.listVoices();
    assert.deepEqual(fake.submits().at(-1)?.body, { voice_type: "system" });
    assert.equal(fake.submits().at(-1)?.path, "/v1/get_voice");
    assert.equal(voices.length, fake.systemVoiceIds().length);
    assert.ok(voices.length >= 250);
    const lady = voices.find((v) => v.voice_id === "English_Graceful_Lady");
    assert.deepEqual(lady, { provider: "beta", voice_id: "English_Graceful_Lady", name: "Graceful Lady", description: ["A graceful, elegant female voice."] });
    for (const v of voices) {
      assert.equal(v.provider, "beta");
      assert.ok(v.provider === "beta" && Array.isArray(v.description) && v.name !== "");
    }
  });

  test("every listed voice is accepted by speech", async () => {
    const voices = await source.listVoices();
    for (const v of [voices[0], voices[voices.length - 1]]) {
      assert.ok(bytesOf(await source.speech(speechRequest({ voiceId: v.voice_id, format: "pcm_16000", text: "Hi" }))).length > 0);
    }
  });
});
