import assert from "node:assert/strict";
import { test } from "node:test";
import { audioDurationSec, PcmStreamEncoder, pcmToFormat, trimAudio } from "../../src/upstreams/audio-convert.ts";
import { encodeAudio } from "../../src/upstreams/simulator/encode.ts";

/** `sec` seconds of a 440 Hz tone at `rate` Hz. */
function tone(sec: number, rate: number): Float32Array {
  const out = new Float32Array(Math.round(sec * rate));
  for (let i = 0; i < out.length; i++) out[i] = 0.5 * Math.sin((2 * Math.PI * 440 * i) / rate);
  return out;
}

test("an MP3's duration is read from its frames, within one frame", () => {
  const mp3 = encodeAudio(tone(2, 44100), 44100, "mp3_44100_128");
  const d = audioDurationSec(mp3, "mp3_44100_128");
  assert.ok(Math.abs(d - 2) < 0.1, `got ${d}`);
  const low = encodeAudio(tone(1.5, 22050), 22050, "mp3_22050_32");
  assert.ok(Math.abs(audioDurationSec(low, "mp3_22050_32") - 1.5) < 0.1);
});

test("raw formats: duration by size", () => {
  assert.equal(audioDurationSec(new Uint8Array(48000), "pcm_24000"), 1);
  assert.equal(audioDurationSec(new Uint8Array(4000), "ulaw_8000"), 0.5);
  assert.equal(audioDurationSec(new Uint8Array(48001), "pcm_24000"), 1);
});

test("trimming cuts MP3 at a frame boundary and raw audio at a sample", () => {
  const mp3 = encodeAudio(tone(3, 44100), 44100, "mp3_44100_128");
  const cut = trimAudio(mp3, "mp3_44100_128", 1.2);
  const d = audioDurationSec(cut, "mp3_44100_128");
  assert.ok(d >= 1.2 && d < 1.2 + 0.03, `got ${d}`);
  assert.deepEqual(cut, mp3.subarray(0, cut.length));
  assert.equal(trimAudio(new Uint8Array(3 * 32000), "pcm_16000", 1.5).length, 48000);
  assert.equal(trimAudio(new Uint8Array(3 * 8000), "ulaw_8000", 1.25).length, 10000);
  const short = new Uint8Array(1000);
  assert.equal(trimAudio(short, "pcm_16000", 5), short);
});

test("PCM becomes 192 kbps MP3 and mu-law, whole or chunk by chunk with odd splits", () => {
  const pcm = encodeAudio(tone(1, 44100), 44100, "pcm_44100");
  const whole = pcmToFormat(pcm, 44100, "mp3_44100_192");
  assert.ok(Math.abs(audioDurationSec(whole, "mp3_44100_192") - 1) < 0.1);
  // A 192 kbps frame at 44.1 kHz is 626 or 627 bytes.
  assert.equal(whole[0], 0xff);
  assert.equal(whole[2]! >> 4, 11);
  const enc = new PcmStreamEncoder("mp3_44100_192", 44100);
  const parts: Uint8Array[] = [];
  for (let i = 0; i < pcm.length; i += 1001) parts.push(enc.push(pcm.subarray(i, i + 1001)));
  parts.push(enc.end());
  assert.deepEqual(Buffer.concat(parts), Buffer.from(whole));

  const pcm8 = encodeAudio(tone(0.5, 8000), 8000, "pcm_16000");
  const ulaw = pcmToFormat(pcm8, 16000, "ulaw_8000");
  assert.equal(ulaw.length, 4000);
  const uenc = new PcmStreamEncoder("ulaw_8000", 8000);
  const odd = Buffer.concat([uenc.push(pcm8.subarray(0, 7)), uenc.push(pcm8.subarray(7, 9)), uenc.push(pcm8.subarray(9))]);
  assert.equal(odd.length, pcm8.length / 2);
});

test("MP3: a leading ID3v2 tag is skipped, even a malformed one, and kept by trimming; a cut last frame does not count", () => {
  const mp3 = encodeAudio(tone(2, 44100), 44100, "mp3_44100_128");
  const d = audioDurationSec(mp3, "mp3_44100_128");
  // A tag of major version 5 with a size byte's top bit set (not a tag to the reference-audio sniffer):
  // its stated size is trusted, so a frame sync inside it is not taken for audio.
  const tag = new Uint8Array(10 + 100);
  tag.set([0x49, 0x44, 0x33, 5, 0, 0, 0, 0, 0x80, 100]);
  tag.set([0xff, 0xfb, 0x90, 0x00], 20);
  const tagged = Buffer.concat([tag, mp3]);
  assert.equal(audioDurationSec(tagged, "mp3_44100_128"), d);
  const cut = trimAudio(tagged, "mp3_44100_128", 1);
  assert.deepEqual(Buffer.from(cut), Buffer.concat([tag, trimAudio(mp3, "mp3_44100_128", 1)]));
  const short = mp3.subarray(0, mp3.length - 10);
  assert.ok(Math.abs(audioDurationSec(short, "mp3_44100_128") - (d - 1152 / 44100)) < 1e-9);
});
