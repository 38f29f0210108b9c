/**
 * Voice-clone reference recordings (spec "POST /v1/audio/voice-clone" and its error table; D20):
 * format sniffing from content, durations read from headers, the inclusive 10 s / 300 s limits, and
 * that no input (random, truncated, mutated, pathological 10 MB) produces anything but a result or an
 * AppError 400/415, quickly.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  inspectReferenceAudio,
  type ReferenceAudioInfo,
  sniffAudioFormat,
} from "../../src/audio/reference-audio.ts";
import { AppError } from "../../src/errors.ts";
import {
  corruptAudio,
  loopMp3Frames,
  makeM4a,
  makeMp3,
  makeMp3HeaderClaiming,
  makeVbrMp3,
  makeWav,
  pngBytes,
  withId3v2,
} from "../helpers/audio-fixtures.ts";

const bytesOf = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "latin1"));

function cat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Deterministic pseudo-random bytes (xorshift32). */
function noise(n: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed | 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Asserts that `p` rejects with an AppError of this status and code, `param` "file"; returns it. */
async function rejectsWith(p: Promise<unknown>, status: number, code: string): Promise<AppError> {
  try {
    const r = await p;
    assert.fail(`expected ${status} ${code}, got ${JSON.stringify(r)}`);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    assert.equal(err.status, status, err.message);
    assert.equal(err.code, code, err.message);
    assert.equal(err.param, "file");
    assert.equal(err.type, "invalid_request_error"); // D16 for 400 and 415
    return err;
  }
}

function assertNear(actual: number, expected: number, tolerance: number): void {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} is not within ${tolerance} of ${expected}`);
}

describe("sniffAudioFormat", () => {
  test("recognises WAV, MP3 (frame sync or ID3) and M4A by their magic bytes", () => {
    assert.equal(sniffAudioFormat(makeWav(1)), "wav");
    assert.equal(sniffAudioFormat(makeMp3(1)), "mp3");
    assert.equal(sniffAudioFormat(withId3v2(makeMp3(1))), "mp3");
    assert.equal(sniffAudioFormat(makeMp3HeaderClaiming(360)), "mp3");
    assert.equal(sniffAudioFormat(makeM4a(1)), "m4a");
    assert.equal(sniffAudioFormat(makeM4a(1, 16000, "isom")), "m4a");
    assert.equal(sniffAudioFormat(makeM4a(1, 16000, "mp42")), "m4a");
    assert.equal(sniffAudioFormat(makeM4a(1, 16000, "dash")), "m4a");
    // Only a compatible brand is an audio brand.
    assert.equal(sniffAudioFormat(makeM4a(1, 16000, "XYZ ")), "m4a");
    // A head is enough.
    assert.equal(sniffAudioFormat(makeWav(1).subarray(0, 12)), "wav");
    assert.equal(sniffAudioFormat(makeMp3(1).subarray(0, 4)), "mp3");
    assert.equal(sniffAudioFormat(withId3v2(makeMp3(1)).subarray(0, 10)), "mp3");
  });

  test("anything else is null", () => {
    assert.equal(sniffAudioFormat(new Uint8Array(0)), null);
    assert.equal(sniffAudioFormat(new Uint8Array([0xff, 0xfb])), null);
    assert.equal(sniffAudioFormat(pngBytes()), null);
    const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46]);
    assert.equal(sniffAudioFormat(jpeg), null);
    assert.equal(sniffAudioFormat(bytesOf("hello, this is not audio")), null);
    assert.equal(sniffAudioFormat(bytesOf("ID3 is a tag format, says this text file")), null);
    assert.equal(sniffAudioFormat(bytesOf("RIFF\x24\x00\x00\x00AVI LIST")), null);
    assert.equal(sniffAudioFormat(bytesOf("OggS\x00\x02\x00\x00")), null);
    assert.equal(sniffAudioFormat(bytesOf("fLaC\x00\x00\x00\x22")), null);
    const adts = new Uint8Array([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]); // AAC in ADTS frames
    assert.equal(sniffAudioFormat(adts), null);
    assert.equal(sniffAudioFormat(new Uint8Array([0xff, 0xfd, 0x90, 0x64])), null); // MPEG-1 Layer II
    assert.equal(sniffAudioFormat(new Uint8Array([0xff, 0xfb, 0xf0, 0x64])), null); // bad bit-rate index
    assert.equal(sniffAudioFormat(new Uint8Array([0xff, 0xfb, 0x9c, 0x64])), null); // bad sample-rate index
    assert.equal(sniffAudioFormat(bytesOf("\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  ")), null);
    assert.equal(sniffAudioFormat(bytesOf("\x00\x00\x00\x14ftypheic\x00\x00\x00\x00mif1")), null);
    assert.equal(sniffAudioFormat(noise(4096)), null);
  });
});

describe("inspectReferenceAudio: accepted files", () => {
  test("a 12 s WAV", async () => {
    const r = await inspectReferenceAudio(makeWav(12));
    assert.deepEqual(r, { format: "wav", durationSec: 12, mimeType: "audio/wav" });
  });

  test("exactly 10.0 s and exactly 300.0 s are accepted (D20)", async () => {
    assert.equal((await inspectReferenceAudio(makeWav(10))).durationSec, 10);
    assert.equal((await inspectReferenceAudio(makeWav(10, 44100))).durationSec, 10);
    assert.equal((await inspectReferenceAudio(makeWav(300, 8000))).durationSec, 300);
    const mp3 = await inspectReferenceAudio(makeMp3HeaderClaiming(300));
    assert.deepEqual(mp3, { format: "mp3", durationSec: 300, mimeType: "audio/mpeg" });
    assert.equal((await inspectReferenceAudio(makeM4a(10))).durationSec, 10);
    assert.equal((await inspectReferenceAudio(makeM4a(300))).durationSec, 300);
  });

  test("a real 12 s MP3 (CBR, duration from the size), with and without an ID3v2 tag", async () => {
    const plain = await inspectReferenceAudio(makeMp3(12));
    assert.equal(plain.format, "mp3");
    assert.equal(plain.mimeType, "audio/mpeg");
    assertNear(plain.durationSec, 12, 0.1);
    const tagged = await inspectReferenceAudio(withId3v2(makeMp3(12), "x".repeat(500), 2048));
    assertNear(tagged.durationSec, plain.durationSec, 1e-9);
  });

  test("a VBR MP3 without a Xing/VBRI tag is measured by counting its frames", async () => {
    const r = await inspectReferenceAudio(makeVbrMp3(12));
    assert.equal(r.format, "mp3");
    assertNear(r.durationSec, 12, 0.1);
    await rejectsWith(inspectReferenceAudio(makeVbrMp3(6)), 400, "reference_too_short");
  });

  test("a truncated MP3 is measured by its header, not by the bytes present", async () => {
    const head = makeMp3HeaderClaiming(60);
    assert.ok(head.length < 8 * 1024, `${head.length} bytes`);
    assert.equal((await inspectReferenceAudio(head)).durationSec, 60);
    assert.equal((await inspectReferenceAudio(makeMp3HeaderClaiming(60, { tag: "Xing" }))).durationSec, 60);
    assert.equal((await inspectReferenceAudio(makeMp3HeaderClaiming(60, { tag: "VBRI" }))).durationSec, 60);
    assert.equal((await inspectReferenceAudio(withId3v2(head))).durationSec, 60);
  });

  test("a 12 s M4A (AAC-LC), whatever the MP4 brand", async () => {
    assert.deepEqual(await inspectReferenceAudio(makeM4a(12)), {
      format: "m4a",
      durationSec: 12,
      mimeType: "audio/mp4",
    });
    assert.equal((await inspectReferenceAudio(makeM4a(12, 44100, "isom"))).durationSec, 12);
  });

  test("a streamed WAV (RIFF and data sizes 0xFFFFFFFF) is measured by the bytes present", async () => {
    const wav = makeWav(12);
    const dv = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
    dv.setUint32(4, 0xffffffff, true);
    dv.setUint32(40, 0xffffffff, true);
    assert.equal((await inspectReferenceAudio(wav)).durationSec, 12);
  });

  test("a WAV with extra chunks (LIST/INFO before the data, junk after) is measured", async () => {
    const wav = makeWav(12);
    const info = cat(bytesOf("INFOINAM"), new Uint8Array([6, 0, 0, 0]), bytesOf("title\0"));
    const list = cat(bytesOf("LIST"), new Uint8Array([info.length, 0, 0, 0]), info);
    const junk = cat(bytesOf("junk"), new Uint8Array([3, 0, 0, 0]), bytesOf("abc\0"));
    const body = cat(wav.subarray(12, 36), list, wav.subarray(36), junk);
    const riff = cat(bytesOf("RIFF"), new Uint8Array(4), bytesOf("WAVE"), body);
    new DataView(riff.buffer).setUint32(4, riff.length - 8, true);
    assert.equal((await inspectReferenceAudio(riff)).durationSec, 12);
  });

  test("custom limits", async () => {
    assert.equal((await inspectReferenceAudio(makeWav(5), { minSec: 1, maxSec: 6 })).durationSec, 5);
    await rejectsWith(inspectReferenceAudio(makeWav(12), { maxSec: 11 }), 400, "reference_too_long");
  });
});

describe("inspectReferenceAudio: refused files", () => {
  test("under 10 s: reference_too_short, naming the duration and the limit", async () => {
    const err = await rejectsWith(inspectReferenceAudio(makeWav(5)), 400, "reference_too_short");
    assert.match(err.message, /\b5 s\b/);
    assert.match(err.message, /\b10 s\b/);
    const almost = await rejectsWith(inspectReferenceAudio(makeWav(9.9999)), 400, "reference_too_short");
    assert.match(almost.message, /9\.999 s/); // rounded down, never shown as "10"
    await rejectsWith(inspectReferenceAudio(makeMp3(5)), 400, "reference_too_short");
    await rejectsWith(inspectReferenceAudio(makeM4a(4)), 400, "reference_too_short");
  });

  test("a 6-minute MP3 header: reference_too_long, naming the duration and the limit", async () => {
    for (const tag of ["Info", "Xing", "VBRI"] as const) {
      const err = await rejectsWith(
        inspectReferenceAudio(makeMp3HeaderClaiming(360, { tag })),
        400,
        "reference_too_long",
      );
      assert.match(err.message, /\b360 s\b/);
      assert.match(err.message, /\b300 s\b/);
    }
    // One frame (24 ms) over the limit.
    const over = await rejectsWith(
      inspectReferenceAudio(makeMp3HeaderClaiming(300.024)),
      400,
      "reference_too_long",
    );
    assert.match(over.message, /300\.024 s/);
    await rejectsWith(inspectReferenceAudio(makeWav(300.01, 8000)), 400, "reference_too_long");
    await rejectsWith(inspectReferenceAudio(makeM4a(400)), 400, "reference_too_long");
  });

  test("sniffs as audio but cannot be parsed: audio_unreadable", async () => {
    await rejectsWith(inspectReferenceAudio(corruptAudio()), 400, "audio_unreadable");
    // WAV: header without data; fmt chunk truncated; zero block align (infinite duration).
    await rejectsWith(inspectReferenceAudio(makeWav(12).subarray(0, 36)), 400, "audio_unreadable");
    await rejectsWith(inspectReferenceAudio(makeWav(12).subarray(0, 30)), 400, "audio_unreadable");
    const noAlign = makeWav(12);
    new DataView(noAlign.buffer).setUint16(32, 0, true);
    await rejectsWith(inspectReferenceAudio(noAlign), 400, "audio_unreadable");
    // MP3: an ID3 tag and nothing else; a frame header followed by garbage.
    await rejectsWith(inspectReferenceAudio(withId3v2(new Uint8Array(0))), 400, "audio_unreadable");
    await rejectsWith(inspectReferenceAudio(withId3v2(noise(50_000))), 400, "audio_unreadable");
    const garbage = cat(makeMp3(1).subarray(0, 4), noise(50_000));
    assert.equal(sniffAudioFormat(garbage), "mp3");
    await rejectsWith(inspectReferenceAudio(garbage), 400, "audio_unreadable");
    // M4A: the ftyp box alone; ftyp + garbage.
    const m4a = makeM4a(12);
    await rejectsWith(inspectReferenceAudio(m4a.subarray(0, 28)), 400, "audio_unreadable");
    await rejectsWith(inspectReferenceAudio(cat(m4a.subarray(0, 28), noise(5000))), 400, "audio_unreadable");
    // M4A cut in the middle of its moov box.
    await rejectsWith(inspectReferenceAudio(m4a.subarray(0, 200)), 400, "audio_unreadable");
  });

  test("not MP3, WAV or M4A: 415 whatever the file name would say", async () => {
    for (const bytes of [pngBytes(), new Uint8Array(0), noise(10_000), bytesOf("just text\n")]) {
      const err = await rejectsWith(inspectReferenceAudio(bytes), 415, "invalid_request");
      assert.match(err.message, /not MP3, WAV or M4A/);
      assert.deepEqual(err.toBody().error.type, "invalid_request_error");
    }
  });
});

describe("inspectReferenceAudio: hostile input", () => {
  const MB10 = 10 * 1024 * 1024;
  const ff = new Uint8Array(MB10).fill(0xff);
  const repeat = (unit: Uint8Array, size: number) => {
    const out = new Uint8Array(size);
    for (let i = 0; i + unit.length <= size; i += unit.length) out.set(unit, i);
    return out;
  };
  const riffHeader = bytesOf("RIFF\xff\xff\xff\xffWAVE");
  const ftyp = bytesOf("\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00isom");
  const cases: [string, () => Uint8Array, string][] = [
    ["ID3 tag + 10 MB of 0xFF", () => cat(withId3v2(new Uint8Array(0)), ff), "audio_unreadable"],
    ["MP3 frame header + 10 MB of 0xFF", () => cat(makeMp3(1).subarray(0, 4), ff), "audio_unreadable"],
    ["1 s VBR MP3 + 10 MB of 0xFF", () => cat(makeVbrMp3(1), ff), "reference_too_short"],
    [
      "WAV + 10 MB of 8-byte chunks",
      () => cat(riffHeader, repeat(bytesOf("JUNK\0\0\0\0"), MB10)),
      "audio_unreadable",
    ],
    ["WAV + 10 MB of zero bytes", () => cat(riffHeader, new Uint8Array(MB10)), "audio_unreadable"],
    ["WAV + 10 MB LIST of tiny INFO items", () => {
      const items = repeat(bytesOf("INAM\x02\x00\x00\x00a\0"), MB10);
      const list = cat(bytesOf("LIST"), new Uint8Array(4), bytesOf("INFO"), items);
      new DataView(list.buffer).setUint32(4, list.length - 8, true);
      return cat(riffHeader, makeWav(12).subarray(12, 36), list, makeWav(12).subarray(36));
    }, "ok 12"],
    [
      "M4A + 10 MB of 8-byte boxes",
      () => cat(ftyp, repeat(bytesOf("\x00\x00\x00\x08free"), MB10)),
      "audio_unreadable",
    ],
    ["M4A + 10 MB of nested udta boxes", () => {
      const depth = MB10 / 8;
      const out = new Uint8Array(depth * 8);
      const dv = new DataView(out.buffer);
      for (let i = 0; i < depth; i++) {
        dv.setUint32(i * 8, (depth - i) * 8);
        out.set(bytesOf(i === 0 ? "moov" : "udta"), i * 8 + 4);
      }
      return cat(ftyp, out);
    }, "audio_unreadable"],
    ["10 MB CBR MP3", () => loopMp3Frames(makeMp3(2), 100_000), "reference_too_long"],
    ["10 MB VBR MP3 without a tag", () => loopMp3Frames(makeVbrMp3(2), 80_000), "reference_too_long"],
    ["9.6 MB WAV", () => makeWav(300), "ok 300"],
  ];
  for (const [name, make, expected] of cases) {
    test(`${name}: ${expected}`, async (t) => {
      const bytes = make();
      const t0 = performance.now();
      let outcome: string;
      try {
        const r = await inspectReferenceAudio(bytes);
        outcome = `ok ${r.durationSec}`;
      } catch (err) {
        assert.ok(err instanceof AppError, String(err));
        assert.ok(err.status === 400 || err.status === 415, err.message);
        outcome = err.code;
      }
      const ms = performance.now() - t0;
      assert.equal(outcome, expected);
      t.diagnostic(`${name}: ${ms.toFixed(0)} ms`);
    });
  }
});

describe("inspectReferenceAudio: properties", () => {
  const allowed = new Set([
    "invalid_request",
    "audio_unreadable",
    "reference_too_short",
    "reference_too_long",
  ]);

  /**
   * Asserts a valid result within the limits, or an AppError 400/415 with an allowed code; nothing
   * else. Returns `ok <format>` or the error code.
   */
  async function onlyResultOrAppError(bytes: Uint8Array): Promise<string> {
    let r: ReferenceAudioInfo;
    try {
      r = await inspectReferenceAudio(bytes);
    } catch (err) {
      assert.ok(err instanceof AppError, `not an AppError: ${String(err)}`);
      assert.ok(err.status === 400 || err.status === 415, `${err.status} ${err.code}`);
      assert.ok(allowed.has(err.code), err.code);
      assert.equal(err.param, "file");
      assert.equal(err.status === 415, err.code === "invalid_request");
      return err.code;
    }
    assert.ok(["mp3", "wav", "m4a"].includes(r.format));
    assert.ok(Number.isFinite(r.durationSec) && r.durationSec >= 10 - 1e-6 && r.durationSec <= 300 + 1e-6);
    return `ok ${r.format}`;
  }

  const magics: Uint8Array[] = [
    new Uint8Array(0),
    bytesOf("RIFF\x00\x10\x00\x00WAVE"),
    cat(makeWav(1).subarray(0, 40), bytesOf("\xff\xff\xff\xff")), // fmt, then data of unknown length
    bytesOf("ID3\x04\x00\x00\x00\x00\x00\x0a"),
    bytesOf("ID3\x03\x00\x00\x00\x00\x00\x00"),
    new Uint8Array([0xff, 0xfb, 0x90, 0x64]),
    new Uint8Array([0xff, 0xf3, 0x64, 0xc4]),
    bytesOf("\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00isom"),
    bytesOf("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"),
    bytesOf("\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00isom\x00\x00\x00\x08moov"),
  ];

  test("random bytes, alone or after each magic, give a result or an AppError 400/415", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...magics),
        fc.uint8Array({ maxLength: 2048 }),
        async (magic, tail) => {
          await onlyResultOrAppError(cat(magic, tail));
        },
      ),
      { numRuns: 1500 },
    );
  });

  const valid: Uint8Array[] = [
    makeWav(12, 8000),
    makeMp3(11),
    withId3v2(makeMp3HeaderClaiming(60)),
    makeMp3HeaderClaiming(30, { tag: "VBRI" }),
    makeVbrMp3(11),
    makeM4a(12),
  ];

  test("valid files, cut and with bytes overwritten, give a result or an AppError 400/415", async () => {
    const outcomes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...valid.keys()),
        // Where to cut, in thousandths of the length (null: keep the whole file).
        fc.option(fc.integer({ min: 0, max: 1000 }), { freq: 2 }),
        // Bytes to overwrite: mostly past the magic, in the headers; sometimes anywhere.
        fc.array(
          fc.tuple(
            fc.oneof(fc.integer({ min: 8, max: 300 }), fc.integer({ min: 0, max: 1 << 30 })),
            fc.integer({ min: 0, max: 255 }),
          ),
          { maxLength: 8 },
        ),
        async (which, cut, edits) => {
          const source = valid[which];
          const keep = cut === null ? source.length : Math.round((source.length * cut) / 1000);
          const bytes = source.slice(0, keep);
          for (const [at, value] of edits) if (bytes.length > 0) bytes[at % bytes.length] = value;
          outcomes.add(await onlyResultOrAppError(bytes));
        },
      ),
      { numRuns: 1500 },
    );
    // The mutations reach every outcome, not just the magic check.
    const expected = ["ok wav", "ok mp3", "ok m4a", "audio_unreadable", "reference_too_short"];
    for (const o of [...expected, "invalid_request"]) {
      assert.ok(outcomes.has(o), `${o} never seen: ${[...outcomes].join(", ")}`);
    }
  });
});
