/**
 * The audio of one text of MiniMax's T2A socket in the gateway format (src/upstreams/minimax/socket-audio.ts):
 * MP3 passed on as whole audio frames only (tags, Info frames and junk dropped, bytes cut anywhere), PCM in
 * whole samples, and the formats MiniMax lacks transcoded per text (D26).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { encodeAudio } from "../../../src/upstreams/simulator/encode.ts";
import { audioPlan, SPEECH_RATES } from "../../../src/upstreams/minimax/models.ts";
import { MalformedAudioError, Mp3FrameFilter, textAudio } from "../../../src/upstreams/minimax/socket-audio.ts";
import type { AudioFormat } from "../../../src/upstreams/types.ts";
import { concat } from "./helpers.ts";
import { walkMp3 } from "./socket-helpers.ts";

function tone(seconds: number, rate: number, format: AudioFormat): Uint8Array {
  const n = Math.round(seconds * rate);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = 0.3 * Math.sin((2 * Math.PI * 440 * i) / rate);
  return encodeAudio(samples, rate, format);
}

/** Feeds `bytes` to `push` in pieces of `size` bytes (the last shorter). */
function feed(push: (b: Uint8Array) => Uint8Array, bytes: Uint8Array, size: number): Uint8Array {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(push(bytes.subarray(i, i + size)));
  return concat(out);
}

describe("Mp3FrameFilter", () => {
  const mp3 = tone(0.5, 44100, "mp3_44100_128");
  const frames = walkMp3(mp3);

  test("bytes cut anywhere come out as the same frames, whole", () => {
    for (const size of [1, 3, 7, 417, 1000, mp3.length]) {
      const f = new Mp3FrameFilter(44100);
      const out = feed((b) => f.push(b), mp3, size);
      assert.equal(f.end().length, 0);
      assert.deepEqual(Buffer.from(out), Buffer.from(mp3.subarray(0, frames.end)), `pieces of ${size} bytes`);
    }
  });

  test("an ID3v2 tag, an Info frame, an ID3v1 tag and junk are dropped", () => {
    const first = mp3.subarray(0, 4);
    const frameLen = walkMp3(mp3).frames[0]!.length;
    const info = new Uint8Array(frameLen);
    info.set(first);
    info.set(Buffer.from("Info"), 4 + 17);
    const id3 = new Uint8Array(10 + 20);
    id3.set([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 20]);
    const v1 = new Uint8Array(128);
    v1.set(Buffer.from("TAG"));
    const junk = Buffer.from("garbage!");
    const file = concat([junk, id3, info, mp3, v1, id3, mp3]);
    for (const size of [5, 333, file.length]) {
      const f = new Mp3FrameFilter(44100);
      const out = feed((b) => f.push(b), file, size);
      const walked = walkMp3(out);
      assert.equal(walked.end, out.length, "frames only");
      assert.equal(walked.frames.length, frames.frames.length * 2);
    }
  });

  test("MP3 at another sample rate than asked is refused", () => {
    const f = new Mp3FrameFilter(22050);
    assert.throws(() => f.push(mp3), MalformedAudioError);
  });
});

describe("textAudio", () => {
  test("raw PCM: whole samples whatever the cuts; an odd byte left at the end is dropped", () => {
    const a = textAudio("pcm_24000", audioPlan("pcm_24000", SPEECH_RATES));
    const pcm = tone(0.1, 24000, "pcm_24000");
    const out = feed((b) => a.push(b), pcm, 7);
    assert.deepEqual(Buffer.from(out), Buffer.from(pcm));
    const b = textAudio("pcm_24000", audioPlan("pcm_24000", SPEECH_RATES));
    assert.equal(b.push(new Uint8Array(3)).length, 2);
    assert.equal(b.end().length, 0);
  });

  test("mu-law and 192 kbps MP3 from MiniMax's PCM: complete at the text's end", () => {
    const u = textAudio("ulaw_8000", audioPlan("ulaw_8000", SPEECH_RATES));
    // encodeAudio takes any `pcm_<rate>` name; MiniMax answers mu-law requests with PCM at 8 kHz.
    const pcm8 = tone(0.25, 8000, "pcm_8000" as AudioFormat);
    const ulaw = concat([feed((b) => u.push(b), pcm8, 101), u.end()]);
    assert.equal(ulaw.length, pcm8.length / 2);

    const m = textAudio("mp3_44100_192", audioPlan("mp3_44100_192", SPEECH_RATES));
    const pcm44 = tone(0.5, 44100, "pcm_44100");
    const out = concat([feed((b) => m.push(b), pcm44, 999), m.end()]);
    const walked = walkMp3(out);
    assert.equal(walked.end, out.length);
    assert.ok(walked.frames.every((f) => f.kbps === 192 && f.sampleRate === 44100));
  });
});
