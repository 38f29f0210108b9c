/**
 * Contract tests of the ElevenLabs source against the loopback fake: speech in every format decodes to
 * its format and length, music below ElevenLabs' minimum is trimmed (D26), sound effects, the requests
 * the fake recorded (path, `output_format`, body fields, the key header without the key), and `models`
 * overrides.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { audioDurationSec } from "../../../src/upstreams/audio-convert.ts";
import { ElevenLabsError } from "../../../src/upstreams/elevenlabs/api.ts";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import { ulawToLinear } from "../../../src/upstreams/simulator/encode.ts";
import { AUDIO_FORMATS, contentTypeOf } from "../../../src/upstreams/types.ts";
import type { AudioFormat, AudioResult } from "../../../src/upstreams/types.ts";
import { EL_KEY, mp3FrameSec, musicRequest, RACHEL, sfxRequest, speechRequest } from "./helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-main", baseUrl: fake.url, apiKey: EL_KEY });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

/** The bytes of a result, asserting it is whole bytes. */
function bytesOf(result: AudioResult): { body: Uint8Array; durationSec: number; contentType: string } {
  assert.equal(result.kind, "bytes");
  if (result.kind !== "bytes") throw new Error("unreachable");
  return result;
}

/**
 * Asserts `body` is real audio in `format` of about `seconds`: MP3 a stream of MPEG frames of the
 * format's rate (lamejs adds its encoder delay: up to 3 frames more), raw formats exactly, to the sample.
 */
function assertAudio(body: Uint8Array, format: AudioFormat, seconds: number): void {
  const measured = audioDurationSec(body, format);
  if (format.startsWith("mp3_")) {
    assert.equal(body[0], 0xff, "starts with an MPEG frame header");
    assert.ok(measured >= seconds - 1e-9 && measured <= seconds + 3 * mp3FrameSec(format), `${format}: ${measured} s for ${seconds} s`);
    // The frame header names the format's sample rate: MPEG-1 (44.1 kHz) or MPEG-2 (22.05 kHz).
    const version = (body[1]! >> 3) & 3;
    assert.equal(version, format === "mp3_22050_32" ? 2 : 3);
  } else {
    const rate = Number(format.split("_")[1]);
    assert.ok(Math.abs(measured - seconds) <= 1 / rate + 1e-9, `${format}: ${measured} s for ${seconds} s`);
    // Not silence: the fake's tone is there.
    const peak = format === "ulaw_8000" ? Math.max(...Array.from(body.subarray(0, 800), (b) => Math.abs(ulawToLinear(b)))) : Math.max(...Array.from(new Int16Array(body.buffer.slice(body.byteOffset, body.byteOffset + 1600)), Math.abs));
    assert.ok(peak > 1000, `${format}: peak ${peak}`);
  }
}

describe("speech", () => {
  for (const format of AUDIO_FORMATS) {
    test(`${format}: decodes to its format and the fake's length, with its content type`, async () => {
      const text = "Hello from the gateway, in every format.";
      const result = bytesOf(await source.speech(speechRequest({ text, format })));
      const expected = 0.06 * [...text].length;
      assertAudio(result.body, format, expected);
      assert.equal(result.contentType, contentTypeOf(format));
      assert.equal(result.durationSec, audioDurationSec(result.body, format));

      assert.equal(fake.requests.length, 1);
      const [r] = fake.requests;
      assert.equal(r.method, "POST");
      assert.equal(r.path, `/v1/text-to-speech/${RACHEL}?output_format=${format}`);
      assert.equal(r.headers["xi-api-key"], "[redacted]");
      assert.equal(r.headers["content-type"], "application/json");
      assert.deepEqual(r.body, { text, model_id: "eleven_multilingual_v2" });
    });
  }

  test("a short text lasts at least 0.3 s", async () => {
    const result = bytesOf(await source.speech(speechRequest({ text: "Hi", format: "pcm_24000" })));
    assert.equal(result.durationSec, 0.3);
  });

  test("voice settings: only the fields the request has", async () => {
    await source.speech(speechRequest({ text: "one", voiceSettings: { stability: 0.35, style: 0.2 } }));
    await source.speech(speechRequest({ text: "two", voiceSettings: { similarity_boost: 0.9, use_speaker_boost: true } }));
    assert.deepEqual(fake.requests[0].body, { text: "one", model_id: "eleven_multilingual_v2", voice_settings: { stability: 0.35, style: 0.2 } });
    assert.deepEqual(fake.requests[1].body, { text: "two", model_id: "eleven_multilingual_v2", voice_settings: { similarity_boost: 0.9, use_speaker_boost: true } });
  });

  test("every speech model goes out with its ElevenLabs id; `stream` changes nothing", async () => {
    const ids: Record<string, string> = {
      "alpha-v3": "eleven_v3",
      "alpha-multilingual-v2": "eleven_multilingual_v2",
      "alpha-flash-v2-5": "eleven_flash_v2_5",
      // D35: ElevenLabs dropped the turbo models; the flash model serves alpha-turbo-v2-5.
      "alpha-turbo-v2-5": "eleven_flash_v2_5",
    };
    for (const model of Object.keys(ids)) {
      const result = await source.speech(speechRequest({ model, text: "x", stream: true }));
      assert.equal(result.kind, "bytes");
    }
    assert.deepEqual(
      fake.requests.map((r) => (r.body as { model_id: string }).model_id),
      Object.values(ids),
    );
    assert.ok(fake.requests.every((r) => !r.path.includes("/stream")));
  });

  test("a library voice is spoken too; the voice id is escaped into the path", async () => {
    const libraryVoice = fake.voiceIds().at(-1)!;
    const result = bytesOf(await source.speech(speechRequest({ voiceId: libraryVoice, text: "library" })));
    assert.ok(result.durationSec > 0);
    await assert.rejects(source.speech(speechRequest({ voiceId: "a/b?c" })), { voiceUnavailable: true });
    assert.equal(fake.requests[1].path, "/v1/text-to-speech/a%2Fb%3Fc?output_format=mp3_44100_128");
  });

  test("the response headers of the fake are ElevenLabs' (request-id, character-cost)", async () => {
    const res = await fetch(`${fake.url}/v1/text-to-speech/${RACHEL}?output_format=pcm_16000`, {
      method: "POST",
      headers: { "xi-api-key": EL_KEY, "content-type": "application/json" },
      body: JSON.stringify({ text: "twelve chars" }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("character-cost"), "12");
    assert.match(res.headers.get("request-id") ?? "", /^[0-9a-f]{20}$/);
    assert.equal(res.headers.get("content-type"), "audio/pcm");
    assert.equal((await res.arrayBuffer()).byteLength, Math.round(0.72 * 16000) * 2);
  });
});

describe("music", () => {
  test("5000 ms as asked: the body fields and the length", async () => {
    const result = bytesOf(await source.music(musicRequest({ lengthMs: 5000, format: "pcm_22050" })));
    assertAudio(result.body, "pcm_22050", 5);
    assert.equal(result.durationSec, 5);
    assert.equal(fake.requests[0].path, "/v1/music?output_format=pcm_22050");
    assert.equal(fake.requests[0].headers["xi-api-key"], "[redacted]");
    assert.deepEqual(fake.requests[0].body, { prompt: "calm lo-fi piano", music_length_ms: 5000, model_id: "music_v2" });
  });

  for (const format of AUDIO_FORMATS) {
    test(`${format}: 1200 ms is generated at 3000 ms and trimmed (D26)`, async () => {
      const result = bytesOf(await source.music(musicRequest({ lengthMs: 1200, format })));
      assert.equal((fake.requests[0].body as { music_length_ms: number }).music_length_ms, 3000);
      assert.equal(result.durationSec, audioDurationSec(result.body, format));
      if (format.startsWith("mp3_")) {
        // Cut after the last whole frame that starts before 1.2 s: within one frame of the request.
        assert.ok(result.durationSec >= 1.2 - 1e-9 && result.durationSec < 1.2 + mp3FrameSec(format), `${format}: ${result.durationSec}`);
      } else {
        assert.equal(result.durationSec, 1.2);
      }
      assert.equal(result.contentType, contentTypeOf(format));
    });
  }

  test("2999.5 ms: 3000 ms asked, trimmed to 2999.5 ms of PCM (to the sample)", async () => {
    const result = bytesOf(await source.music(musicRequest({ lengthMs: 2999.5, format: "pcm_16000" })));
    assert.equal((fake.requests[0].body as { music_length_ms: number }).music_length_ms, 3000);
    assert.equal(result.body.byteLength, Math.round(2.9995 * 16000) * 2);
  });
});

describe("sound effects", () => {
  test("the body fields, the length asked", async () => {
    const result = bytesOf(await source.sfx(sfxRequest({ durationSec: 1.5, promptInfluence: 0.4, format: "pcm_16000" })));
    assertAudio(result.body, "pcm_16000", 1.5);
    assert.equal(result.durationSec, 1.5);
    assert.equal(fake.requests[0].path, "/v1/sound-generation?output_format=pcm_16000");
    assert.deepEqual(fake.requests[0].body, { text: "a door creaks open", duration_seconds: 1.5, prompt_influence: 0.4, model_id: "eleven_text_to_sound_v2" });
  });

  test("no duration: duration_seconds is left out and ElevenLabs picks (the fake: 2 s)", async () => {
    const result = bytesOf(await source.sfx(sfxRequest({ durationSec: null, format: "ulaw_8000" })));
    assert.equal(result.durationSec, 2);
    assert.equal(result.contentType, "audio/basic");
    assert.ok(!("duration_seconds" in (fake.requests[0].body as object)));
  });

  test("mp3: decodes to the asked length", async () => {
    const result = bytesOf(await source.sfx(sfxRequest({ durationSec: 3, format: "mp3_22050_32" })));
    assertAudio(result.body, "mp3_22050_32", 3);
  });
});

describe("models overrides (D25)", () => {
  test("each call uses the override of its model, the default otherwise", async () => {
    const s = createElevenLabsSource({
      name: "el-custom",
      baseUrl: fake.url,
      apiKey: EL_KEY,
      // Ids the (strict) fake serves: an override names a real ElevenLabs model.
      models: { "alpha-v3": "eleven_flash_v2", "alpha-music": "music_v2_5" },
    });
    try {
      await s.speech(speechRequest({ model: "alpha-v3" }));
      await s.speech(speechRequest({ model: "alpha-flash-v2-5" }));
      await s.music(musicRequest({ lengthMs: 3000 }));
      await s.sfx(sfxRequest());
      assert.deepEqual(
        fake.requests.map((r) => (r.body as { model_id: string }).model_id),
        ["eleven_flash_v2", "eleven_flash_v2_5", "music_v2_5", "eleven_text_to_sound_v2"],
      );
    } finally {
      await s.close();
    }
  });

  test("a model the source does not serve for the call: unsupported, nothing sent", async () => {
    for (const call of [
      () => source.speech(speechRequest({ model: "alpha-music" })),
      () => source.speech(speechRequest({ model: "beta-speech-hd" })),
      () => source.music(musicRequest({ model: "beta-music" })),
      () => source.sfx(sfxRequest({ model: "alpha-v3" })),
    ]) {
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof ElevenLabsError);
        assert.equal(err.kind, "unsupported");
        assert.equal(err.unsupported, true);
        assert.equal(err.retryable, false);
        return true;
      });
    }
    assert.equal(fake.requests.length, 0);
  });
});

describe("base URL with a path prefix", () => {
  test("the prefix is kept in front of every path", async () => {
    const s = createElevenLabsSource({ name: "el-prefixed", baseUrl: `${fake.url}/proxy/`, apiKey: EL_KEY });
    try {
      await assert.rejects(s.speech(speechRequest()), { status: 404 });
      assert.equal(fake.requests[0].path, `/proxy/v1/text-to-speech/${RACHEL}?output_format=mp3_44100_128`);
    } finally {
      await s.close();
    }
  });
});
