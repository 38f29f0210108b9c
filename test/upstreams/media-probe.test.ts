/**
 * Reading what a delivered output says about itself (D26, issue 42): the format, the pixel size of PNG,
 * JPEG, WebP, GIF and SVG images, and the length, size and frame rate of an MP4; from real files (the
 * simulator's, and images made by another encoder: test/helpers/media-fixtures.ts) checked against an
 * independent reader, and from hand-built headers. Hostile input (random bytes, truncations, mutations
 * of real files) gives null or a null fact and never throws (fast-check properties).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  gifDimensions,
  jpegDimensions,
  type MediaFacts,
  mp4DurationSec,
  mp4VideoTrack,
  pngDimensions,
  probeMedia,
  svgDimensions,
  webpDimensions,
} from "../../src/upstreams/media-probe.ts";
import { renderPng, renderSvg } from "../../src/upstreams/simulator/visual.ts";
import { renderMp4, VIDEO_FPS } from "../../src/upstreams/simulator/video.ts";
import { decodedPngSize, FIXTURE_SIZE, GIF, independentVideoFacts, JPEG, JPEG_PROGRESSIVE_EXIF, WEBP_EXTENDED, WEBP_LOSSLESS, WEBP_LOSSY } from "../helpers/media-fixtures.ts";

/** An ISO BMFF box: 32-bit size, type, payload. */
function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.byteLength);
  head.write(type, 4, "latin1");
  return Buffer.concat([head, body]);
}

/** An `mvhd` payload of `version` with `timescale` and `duration` (the rest zero). */
function mvhd(version: 0 | 1, timescale: number, duration: number): Uint8Array {
  const p = Buffer.alloc(version === 1 ? 112 : 100);
  p[0] = version;
  const at = version === 1 ? 20 : 12;
  p.writeUInt32BE(timescale, at);
  if (version === 1) p.writeBigUInt64BE(BigInt(duration), at + 4);
  else p.writeUInt32BE(duration, at + 4);
  return box("mvhd", p);
}

describe("pngDimensions", () => {
  test("reads the IHDR size of a real PNG; refuses anything else", () => {
    assert.deepEqual(pngDimensions(renderPng({ prompt: "x", width: 96, height: 64, index: 0 })), { width: 96, height: 64 });
    assert.equal(pngDimensions(new Uint8Array(10)), null);
    assert.equal(pngDimensions(Buffer.from("GIF89a........................")), null);
  });
});

describe("mp4DurationSec", () => {
  test("the length of MP4s rendered by the simulator", async () => {
    for (const seconds of [1, 3]) {
      const mp4 = (await renderMp4({ prompt: "waves", durationSec: seconds })).body;
      assert.equal(mp4DurationSec(mp4), seconds);
    }
  });

  test("movie headers of version 0 and 1, a moov after the media data", () => {
    const ftyp = box("ftyp", Buffer.from("isom\0\0\0\0isom", "latin1"));
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("moov", mvhd(0, 1000, 6040))])), 6.04);
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("mdat", new Uint8Array(5000)), box("moov", mvhd(1, 90_000, 720_000))])), 8);
  });

  test("no movie header, a zero length or a truncated box: null", () => {
    const ftyp = box("ftyp", Buffer.from("isom\0\0\0\0", "latin1"));
    assert.equal(mp4DurationSec(new Uint8Array(0)), null);
    assert.equal(mp4DurationSec(ftyp), null);
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("moov", mvhd(0, 0, 100))])), null);
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("moov", mvhd(0, 1000, 0))])), null);
    const whole = Buffer.concat([ftyp, box("moov", mvhd(0, 1000, 5000))]);
    assert.equal(mp4DurationSec(whole.subarray(0, whole.byteLength - 20)), null);
    assert.equal(mp4DurationSec(Buffer.from("<html>not a video</html>")), null);
  });
});

/** A full box: version, flags (0), payload. */
function fullBox(type: string, version: number, ...payload: Uint8Array[]): Uint8Array {
  return box(type, Buffer.from([version, 0, 0, 0]), ...payload);
}

/** A `tkhd` of `version` with a 16.16 `width` x `height` and a matrix turning the picture by `turn` quarter turns. */
function tkhd(version: 0 | 1, width: number, height: number, turn: 0 | 1 = 0): Uint8Array {
  const p = Buffer.alloc((version === 1 ? 32 : 20) + 16 + 36 + 8);
  const matrix = (version === 1 ? 32 : 20) + 16;
  const m = turn === 0 ? [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000] : [0, 0x10000, 0, -0x10000, 0, 0, 0, 0, 0x40000000];
  m.forEach((v, i) => p.writeInt32BE(v, matrix + i * 4));
  p.writeUInt32BE(width * 65536, matrix + 36);
  p.writeUInt32BE(height * 65536, matrix + 40);
  return fullBox("tkhd", version, p);
}

/** A video `trak`: `tkhd`, `mdia` with `mdhd` (timescale), `hdlr` (`vide`), `stsd` (one `avc1` entry of `coded` size) and `stts` (`[count, delta]` runs). */
function videoTrak(opts: { tkhd: Uint8Array; timescale: number; coded: [number, number]; stts: [number, number][]; handler?: string }): Uint8Array {
  const mdhd = Buffer.alloc(20);
  mdhd.writeUInt32BE(opts.timescale, 8);
  const hdlr = Buffer.alloc(20);
  hdlr.write(opts.handler ?? "vide", 4, "latin1");
  const entry = Buffer.alloc(78);
  entry.writeUInt16BE(1, 6);
  entry.writeUInt16BE(opts.coded[0], 24);
  entry.writeUInt16BE(opts.coded[1], 26);
  const stsd = Buffer.concat([Buffer.from([0, 0, 0, 1]), box("avc1", entry)]);
  const stts = Buffer.alloc(4 + opts.stts.length * 8);
  stts.writeUInt32BE(opts.stts.length, 0);
  opts.stts.forEach(([n, d], i) => {
    stts.writeUInt32BE(n, 4 + i * 8);
    stts.writeUInt32BE(d, 8 + i * 8);
  });
  const stbl = box("stbl", fullBox("stsd", 0, stsd), fullBox("stts", 0, stts));
  return box("trak", opts.tkhd, box("mdia", fullBox("mdhd", 0, mdhd), fullBox("hdlr", 0, hdlr), box("minf", stbl)));
}

const FTYP = box("ftyp", Buffer.from("isom\0\0\0\0isomavc1", "latin1"));

/** Checks the invariants of any probe answer: null, or facts whose numbers are positive and finite. */
function assertSane(facts: MediaFacts | null): void {
  if (facts === null) return;
  assert.match(facts.contentType, /^(image|video)\//);
  for (const v of [facts.width, facts.height, facts.durationSec, facts.fps, facts.frames]) {
    if (v !== null) assert.ok(Number.isFinite(v) && v > 0, String(v));
  }
  for (const v of [facts.width, facts.height, facts.frames]) if (v !== null) assert.ok(Number.isInteger(v));
}

describe("probeMedia: simulated MP4s against another parser", () => {
  test("size, length, frame rate and frame count of clips at 640x360, 1280x720, 720x1280 and 910x512 (with sound)", async () => {
    for (const opts of [
      { durationSec: 2 },
      { durationSec: 1, width: 1280, height: 720 },
      { durationSec: 1, width: 720, height: 1280 },
      { durationSec: 1, width: 910, height: 512, audio: true },
    ]) {
      const mp4 = (await renderMp4({ prompt: "a lighthouse", ...opts })).body;
      const facts = probeMedia(mp4);
      const other = await independentVideoFacts(mp4);
      const label = JSON.stringify(opts);
      assert.equal(facts?.contentType, "video/mp4", label);
      assert.deepEqual({ width: facts?.width, height: facts?.height }, { width: other.width, height: other.height }, label);
      assert.equal(facts?.durationSec, other.durationSec, label);
      assert.equal(facts?.frames, other.frames, label);
      assert.equal(facts?.fps, other.frames / other.durationSec, label);
      // And what the renderer was asked for.
      assert.deepEqual([facts?.width, facts?.height, facts?.durationSec, facts?.fps], [opts.width ?? 640, opts.height ?? 360, opts.durationSec, VIDEO_FPS], label);
    }
  });
});

describe("mp4VideoTrack: hand-built movies", () => {
  const mvhd0 = mvhd(0, 1000, 10_010);

  test("the track header's size, a quarter turn swaps it; version 1; NTSC frame rate from stts and mdhd", () => {
    const trak = (t: Uint8Array) => videoTrak({ tkhd: t, timescale: 30_000, coded: [1920, 1088], stts: [[300, 1001]] });
    const movie = (t: Uint8Array) => Buffer.concat([FTYP, box("moov", mvhd0, trak(t))]);
    assert.deepEqual(mp4VideoTrack(movie(tkhd(0, 1920, 1080))), { width: 1920, height: 1080, fps: 29.97, frames: 300 });
    assert.deepEqual(mp4VideoTrack(movie(tkhd(0, 1920, 1080, 1))), { width: 1080, height: 1920, fps: 29.97, frames: 300 });
    assert.deepEqual(mp4VideoTrack(movie(tkhd(1, 1280, 720))), { width: 1280, height: 720, fps: 29.97, frames: 300 });
    assert.deepEqual(probeMedia(movie(tkhd(0, 1920, 1080))), { contentType: "video/mp4", width: 1920, height: 1080, durationSec: 10.01, fps: 29.97, frames: 300 });
  });

  test("a zero track size falls back to the sample entry's coded size; variable durations average", () => {
    const t = videoTrak({ tkhd: tkhd(0, 0, 0), timescale: 90_000, coded: [854, 480], stts: [[10, 3000], [20, 4500]] });
    // 30 frames over (10 x 3000 + 20 x 4500) / 90 000 = 4/3 s: 22.5 fps.
    assert.deepEqual(mp4VideoTrack(Buffer.concat([FTYP, box("moov", mvhd0, t)])), { width: 854, height: 480, fps: 22.5, frames: 30 });
  });

  test("the first video track is read, not a sound track before it; no video track, no stts: nulls", () => {
    const sound = videoTrak({ tkhd: tkhd(0, 0, 0), timescale: 16_000, coded: [0, 0], stts: [[50, 1024]], handler: "soun" });
    const video = videoTrak({ tkhd: tkhd(0, 640, 360), timescale: 12_288, coded: [640, 360], stts: [[48, 512]] });
    assert.deepEqual(mp4VideoTrack(Buffer.concat([FTYP, box("moov", mvhd0, sound, video)])), { width: 640, height: 360, fps: 24, frames: 48 });
    assert.equal(mp4VideoTrack(Buffer.concat([FTYP, box("moov", mvhd0, sound)])), null);
    assert.equal(mp4VideoTrack(FTYP), null);
    const noStts = videoTrak({ tkhd: tkhd(0, 640, 360), timescale: 12_288, coded: [640, 360], stts: [] });
    assert.deepEqual(mp4VideoTrack(Buffer.concat([FTYP, box("moov", mvhd0, noStts)])), { width: 640, height: 360, fps: null, frames: null });
  });

  test("QuickTime and WebM are told by their bytes; an MP4 without a movie box has a type and no facts", () => {
    const qt = box("ftyp", Buffer.from("qt  \0\0\0\0qt  ", "latin1"));
    assert.equal(probeMedia(Buffer.concat([qt, box("moov", mvhd0)]))?.contentType, "video/quicktime");
    assert.deepEqual(probeMedia(Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01])), { contentType: "video/webm", width: null, height: null, durationSec: null, fps: null, frames: null });
    assert.deepEqual(probeMedia(Buffer.concat([FTYP, box("mdat", new Uint8Array(64))])), { contentType: "video/mp4", width: null, height: null, durationSec: null, fps: null, frames: null });
  });
});

describe("image sizes: files of another encoder, and the simulator's", () => {
  test("JPEG (baseline; progressive after EXIF and ICC segments: the stored size), WebP (lossy, lossless, extended), GIF", () => {
    assert.deepEqual(jpegDimensions(JPEG), FIXTURE_SIZE);
    assert.deepEqual(jpegDimensions(JPEG_PROGRESSIVE_EXIF), FIXTURE_SIZE);
    for (const webp of [WEBP_LOSSY, WEBP_LOSSLESS, WEBP_EXTENDED]) assert.deepEqual(webpDimensions(webp), FIXTURE_SIZE);
    assert.deepEqual(gifDimensions(GIF), FIXTURE_SIZE);
    const expect = [
      [JPEG, "image/jpeg"],
      [JPEG_PROGRESSIVE_EXIF, "image/jpeg"],
      [WEBP_LOSSY, "image/webp"],
      [WEBP_LOSSLESS, "image/webp"],
      [WEBP_EXTENDED, "image/webp"],
      [GIF, "image/gif"],
    ] as const;
    for (const [bytes, contentType] of expect) {
      assert.deepEqual(probeMedia(bytes), { contentType, ...FIXTURE_SIZE, durationSec: null, fps: null, frames: null });
    }
  });

  test("PNG and SVG of the simulator at their requested sizes; the PNG's size also by decoding it", () => {
    for (const [width, height] of [[96, 64], [1, 1], [333, 777]]) {
      const png = renderPng({ prompt: "a harbour", width, height, index: 0 });
      assert.deepEqual(probeMedia(png), { contentType: "image/png", width, height, durationSec: null, fps: null, frames: null });
      assert.deepEqual(decodedPngSize(png), { width, height });
      const svg = new TextEncoder().encode(renderSvg({ prompt: "a harbour", width, height, index: 0 }));
      assert.deepEqual(probeMedia(svg), { contentType: "image/svg+xml", width, height, durationSec: null, fps: null, frames: null });
    }
  });

  test("SVG: width and height in px, else the viewBox; an XML declaration and comments first; other units give no size", () => {
    const svg = (s: string) => new TextEncoder().encode(s);
    assert.deepEqual(svgDimensions(svg('<?xml version="1.0"?>\n<!-- made by hand --><svg xmlns="http://www.w3.org/2000/svg" width="120px" height=\'80\'></svg>')), { width: 120, height: 80 });
    assert.deepEqual(svgDimensions(svg('<svg viewBox="0 0 1024 768" xmlns="http://www.w3.org/2000/svg"/>')), { width: 1024, height: 768 });
    assert.equal(svgDimensions(svg('<svg width="100%" height="100%"></svg>')), null);
    assert.equal(probeMedia(svg('<svg width="10em" height="4em"></svg>'))?.width, null);
    assert.equal(probeMedia(svg("<html><svg></svg></html>")), null);
  });

  test("not an image of its kind: null", () => {
    assert.equal(jpegDimensions(PNG_OF(8, 8)), null);
    assert.equal(webpDimensions(JPEG), null);
    assert.equal(gifDimensions(WEBP_LOSSY), null);
    assert.equal(pngDimensions(GIF), null);
    assert.equal(probeMedia(new Uint8Array(0)), null);
    assert.equal(probeMedia(Buffer.from("plain text")), null);
  });
});

/** A simulated PNG of `width` x `height`. */
function PNG_OF(width: number, height: number): Uint8Array {
  return renderPng({ prompt: "p", width, height, index: 0 });
}

describe("hostile input never throws (properties)", () => {
  const realFiles = async (): Promise<Uint8Array[]> => [
    (await renderMp4({ prompt: "fuzz", durationSec: 0.25, audio: true })).body,
    PNG_OF(40, 30),
    new TextEncoder().encode(renderSvg({ prompt: "fuzz", width: 40, height: 30, index: 0 })),
    JPEG,
    JPEG_PROGRESSIVE_EXIF,
    WEBP_LOSSY,
    WEBP_LOSSLESS,
    WEBP_EXTENDED,
    GIF,
  ];

  test("random bytes, and random bytes behind each format's magic: null or sane facts", () => {
    const magic = fc.constantFrom(
      [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      [0xff, 0xd8, 0xff],
      [...Buffer.from("RIFF\0\0\0\0WEBPVP8X")],
      [...Buffer.from("RIFF\0\0\0\0WEBPVP8 ")],
      [...Buffer.from("RIFF\0\0\0\0WEBPVP8L")],
      [...Buffer.from("GIF89a")],
      [0, 0, 0, 0x18, ...Buffer.from("ftypisom")],
      [0, 0, 0, 0x10, ...Buffer.from("ftypqt  "), 0, 0, 0, 0, 0, 0, 0, 0, ...Buffer.from("moov")],
      [...Buffer.from("<svg ")],
    );
    fc.assert(
      fc.property(magic, fc.uint8Array({ maxLength: 512 }), (head, tail) => {
        assertSane(probeMedia(Uint8Array.from([...head, ...tail])));
        assertSane(probeMedia(tail));
      }),
      { numRuns: 2000 },
    );
  });

  test("every truncation and random mutations of real files: null or sane facts, and a kept header keeps its size", async () => {
    const files = await realFiles();
    const whole = files.map((f) => probeMedia(f));
    fc.assert(
      fc.property(fc.nat({ max: files.length - 1 }), fc.double({ min: 0, max: 1, noNaN: true }), (i, cut) => {
        const prefix = files[i].subarray(0, Math.floor(files[i].byteLength * cut));
        const facts = probeMedia(prefix);
        assertSane(facts);
        if (facts !== null && facts.width !== null && whole[i]?.contentType !== "image/svg+xml") {
          assert.deepEqual([facts.width, facts.height], [whole[i]?.width, whole[i]?.height]);
        }
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.nat({ max: files.length - 1 }), fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 })), { minLength: 1, maxLength: 16 }), (i, edits) => {
        const copy = Uint8Array.from(files[i]);
        for (const [at, value] of edits) copy[at % copy.byteLength] = value;
        assertSane(probeMedia(copy));
      }),
      { numRuns: 2000 },
    );
  });

  test("hand-built headers give back any size they hold", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0xffff }), fc.integer({ min: 1, max: 0xffff }), (width, height) => {
        const sof = Buffer.from([0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        assert.deepEqual(jpegDimensions(sof), { width, height });
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1 << 24 }), fc.integer({ min: 1, max: 1 << 24 }), (width, height) => {
        const vp8x = Buffer.alloc(30);
        vp8x.write("RIFF", 0, "latin1");
        vp8x.write("WEBPVP8X", 8, "latin1");
        vp8x.writeUIntLE(width - 1, 24, 3);
        vp8x.writeUIntLE(height - 1, 27, 3);
        assert.deepEqual(webpDimensions(vp8x), { width, height });
        const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.from("IHDR"), Buffer.alloc(8)]);
        png.writeUInt32BE(width, 16);
        png.writeUInt32BE(height, 20);
        assert.deepEqual(pngDimensions(png), { width, height });
      }),
    );
  });
});
