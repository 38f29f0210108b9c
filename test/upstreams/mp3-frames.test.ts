/**
 * The one MP3 frame parser (src/upstreams/mp3-frames.ts): frame headers of MPEG-1, 2 and 2.5, the walk,
 * the verified start, and the two readings of an ID3v2 tag header (strict for the reference-audio sniffer,
 * lenient for the trimmer of upstream audio).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { findMp3Frame, id3v2LengthAt, mp3ChainAt, mp3FrameAt, mp3FramesFrom } from "../../src/upstreams/mp3-frames.ts";

/** `count` frames of the header `h` (4 bytes), each `length` bytes long, zero-filled after the header. */
function frames(h: readonly number[], length: number, count: number): Uint8Array {
  const out = new Uint8Array(length * count);
  for (let i = 0; i < count; i++) out.set(h, i * length);
  return out;
}

const MPEG1_128K_44K = [0xff, 0xfb, 0x90, 0x00]; // 417 bytes (no padding), stereo
const MPEG2_64K_22K = [0xff, 0xf3, 0x80, 0xc0]; // 208 bytes, mono
const MPEG25_8K_8K = [0xff, 0xe3, 0x18, 0x00]; // 72 bytes

test("frame headers of MPEG-1, MPEG-2 and MPEG-2.5 Layer III", () => {
  assert.deepEqual(mp3FrameAt(new Uint8Array(MPEG1_128K_44K), 0), {
    offset: 0,
    version: 1,
    sampleRate: 44100,
    samplesPerFrame: 1152,
    length: 417,
    sideInfoLength: 32,
  });
  assert.deepEqual(mp3FrameAt(new Uint8Array(MPEG2_64K_22K), 0), {
    offset: 0,
    version: 2,
    sampleRate: 22050,
    samplesPerFrame: 576,
    length: 208,
    sideInfoLength: 9,
  });
  const v25 = mp3FrameAt(new Uint8Array([0, ...MPEG25_8K_8K]), 1);
  assert.equal(v25?.offset, 1);
  assert.equal(v25?.version, 2.5);
  assert.equal(v25?.sampleRate, 8000);
  assert.equal(v25?.length, 72);
});

test("no frame: free format, bad bit rate or sample rate, reserved version, another layer, too short", () => {
  for (const h of [
    [0xff, 0xfb, 0x00, 0x00], // free format
    [0xff, 0xfb, 0xf0, 0x00], // bit-rate index 15
    [0xff, 0xfb, 0x9c, 0x00], // sample-rate index 3
    [0xff, 0xeb, 0x90, 0x00], // reserved version
    [0xff, 0xfd, 0x90, 0x00], // layer II
    [0xff, 0xfb, 0x90], // 3 bytes
  ]) {
    assert.equal(mp3FrameAt(new Uint8Array(h), 0), null, String(h));
  }
  assert.equal(mp3FrameAt(new Uint8Array(MPEG1_128K_44K), -1), null);
});

test("the walk yields consecutive frames, the last one possibly cut, and stops at bytes that are not a frame", () => {
  const b = frames(MPEG25_8K_8K, 72, 5);
  assert.deepEqual([...mp3FramesFrom(b, 0)].map((f) => f.offset), [0, 72, 144, 216, 288]);
  assert.deepEqual([...mp3FramesFrom(b.subarray(0, 300), 0)].map((f) => f.offset), [0, 72, 144, 216, 288]);
  const broken = b.slice();
  broken[216] = 0;
  assert.deepEqual([...mp3FramesFrom(broken, 0)].map((f) => f.offset), [0, 72, 144]);
});

test("a start is verified by a chain of frames of one version and rate (or the end of the bytes)", () => {
  const b = new Uint8Array([1, 2, 3, ...frames(MPEG25_8K_8K, 72, 4)]);
  assert.equal(findMp3Frame(b, 0), 3);
  assert.equal(findMp3Frame(b, 0, 4), 3);
  assert.equal(findMp3Frame(b, 0, 4, 2), -1);
  assert.equal(findMp3Frame(b, b.length), -1);
  assert.equal(mp3ChainAt(b.subarray(0, 3 + 72 + 10), 3, 4), true);
  const mixed = new Uint8Array([...frames(MPEG25_8K_8K, 72, 2), ...frames(MPEG2_64K_22K, 208, 2)]);
  assert.equal(mp3ChainAt(mixed, 0, 2), true);
  assert.equal(mp3ChainAt(mixed, 0, 3), false);
});

test("an ID3v2 tag's length, read strictly and leniently", () => {
  const tag = (major: number, flags: number, size: readonly number[]) => new Uint8Array([0x49, 0x44, 0x33, major, 0, flags, ...size]);
  // A well-formed v2.3 and v2.4 tag: the same for both readings; only v2.4 has a footer (strict).
  assert.equal(id3v2LengthAt(tag(3, 0, [0, 0, 1, 0]), 0, "strict"), 10 + 128);
  assert.equal(id3v2LengthAt(tag(3, 0, [0, 0, 1, 0]), 0, "lenient"), 10 + 128);
  assert.equal(id3v2LengthAt(tag(4, 0x10, [0, 0, 0, 5]), 0, "strict"), 10 + 5 + 10);
  assert.equal(id3v2LengthAt(tag(3, 0x10, [0, 0, 0, 5]), 0, "strict"), 10 + 5);
  assert.equal(id3v2LengthAt(tag(3, 0x10, [0, 0, 0, 5]), 0, "lenient"), 10 + 5 + 10);
  // Not a tag when strict; the lenient reading trusts it, ignoring the size bytes' top bits.
  assert.equal(id3v2LengthAt(tag(5, 0, [0, 0, 0, 5]), 0, "strict"), 0);
  assert.equal(id3v2LengthAt(tag(5, 0, [0, 0, 0, 5]), 0, "lenient"), 15);
  assert.equal(id3v2LengthAt(tag(3, 0, [0, 0, 0x81, 5]), 0, "strict"), 0);
  assert.equal(id3v2LengthAt(tag(3, 0, [0, 0, 0x81, 5]), 0, "lenient"), 10 + 128 + 5);
  // No tag at all.
  assert.equal(id3v2LengthAt(new Uint8Array(MPEG1_128K_44K), 0, "lenient"), 0);
  assert.equal(id3v2LengthAt(tag(3, 0, [0, 0, 0]), 0, "lenient"), 0);
});
