/**
 * The simulator's images and video (D10): real PNG/SVG at the requested size, playable MP4 of the
 * requested length, and the `X-Svc-Simulate` behaviours of the visual adapter.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { crc32, inflateSync } from "node:zlib";
import { parseBuffer, TrackType } from "music-metadata";
import { loadConfig } from "../../../src/config.ts";
import { renderPng, renderPngAsync } from "../../../src/upstreams/simulator/images/png.ts";
import { fitRenderSize, sizeForAspect } from "../../../src/upstreams/simulator/images/size.ts";
import { renderSvg } from "../../../src/upstreams/simulator/images/svg.ts";
import { motifOf } from "../../../src/upstreams/simulator/images/plan.ts";
import { wrapCaption } from "../../../src/upstreams/simulator/images/font.ts";
import {
  fitVideoSize,
  MAX_VIDEO_SIDE,
  renderMp4,
  renderSizeOf,
  requestedVideoSize,
  videoAspectOf,
  videoOrientationOf,
  videoSize,
} from "../../../src/upstreams/simulator/video.ts";
import { createSimulatedVisualUpstream, simulatedVideoHasAudio, simulatedVideoSize } from "../../../src/upstreams/simulator/visual.ts";
import { MODELS } from "../../../src/catalog/models.ts";
import { probeMedia } from "../../../src/upstreams/media-probe.ts";
import { type ImageRequest, type MediaOutput, UpstreamError, type VideoRequest } from "../../../src/upstreams/types.ts";

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

interface PngInfo {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  chunks: string[];
  /** Inflated IDAT data (filter byte + scanline per row). */
  raw: Uint8Array;
}

/** Parses and checks a PNG: signature, chunk CRCs, IHDR first, IEND last, inflatable IDAT. */
function parsePng(bytes: Uint8Array): PngInfo {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: string[] = [];
  const idat: Uint8Array[] = [];
  let ihdr: Uint8Array | null = null;
  let o = 8;
  while (o < bytes.length) {
    const len = dv.getUint32(o);
    const type = String.fromCharCode(...bytes.subarray(o + 4, o + 8));
    const data = bytes.subarray(o + 8, o + 8 + len);
    assert.equal(dv.getUint32(o + 8 + len), crc32(bytes.subarray(o + 4, o + 8 + len)), `CRC of ${type}`);
    chunks.push(type);
    if (type === "IHDR") ihdr = data;
    if (type === "IDAT") idat.push(data);
    o += 12 + len;
  }
  assert.equal(o, bytes.length, "no trailing bytes");
  assert.equal(chunks[0], "IHDR");
  assert.equal(chunks.at(-1), "IEND");
  assert.ok(ihdr);
  const h = new DataView(ihdr.buffer, ihdr.byteOffset, 13);
  return {
    width: h.getUint32(0),
    height: h.getUint32(4),
    bitDepth: ihdr[8],
    colorType: ihdr[9],
    chunks,
    raw: new Uint8Array(inflateSync(Buffer.concat(idat))),
  };
}

/** The top-level MP4 boxes: [type, size]. */
function topBoxes(bytes: Uint8Array): [string, number][] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: [string, number][] = [];
  let o = 0;
  while (o + 8 <= bytes.length) {
    const size = dv.getUint32(o);
    assert.ok(size >= 8, "box size");
    out.push([String.fromCharCode(...bytes.subarray(o + 4, o + 8)), size]);
    o += size;
  }
  assert.equal(o, bytes.length, "boxes cover the file exactly");
  return out;
}

/** Durations (s) of the video and audio tracks, read with music-metadata. */
async function mp4Tracks(bytes: Uint8Array): Promise<{ video: number[]; audio: number[]; width?: number; height?: number }> {
  const meta = await parseBuffer(bytes, { mimeType: "video/mp4" });
  const video = meta.format.trackInfo.filter((t) => t.type === TrackType.video);
  const audio = meta.format.trackInfo.filter((t) => t.type === TrackType.audio);
  return {
    video: video.map((t) => t.duration ?? NaN),
    audio: audio.map((t) => t.duration ?? NaN),
    width: video[0]?.video?.pixelWidth,
    height: video[0]?.video?.pixelHeight,
  };
}

/** The RGB pixels of a PNG written by the simulator (filters None, Sub and Up only). */
function pngPixels(bytes: Uint8Array): { width: number; height: number; rgb: Uint8Array } {
  const png = parsePng(bytes);
  const { width: w, height: h, raw } = png;
  const rgb = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (w * 3 + 1)];
    for (let i = 0; i < w * 3; i++) {
      const v = raw[y * (w * 3 + 1) + 1 + i];
      const left = i >= 3 ? rgb[y * w * 3 + i - 3] : 0;
      const up = y > 0 ? rgb[(y - 1) * w * 3 + i] : 0;
      assert.ok(f <= 2, `filter ${f}`);
      rgb[y * w * 3 + i] = (v + (f === 1 ? left : f === 2 ? up : 0)) & 0xff;
    }
  }
  return { width: w, height: h, rgb };
}

/** Share of pixels (0..1) whose colour differs by more than 48 (sum over channels) between two pictures. */
function differingShare(a: Uint8Array, b: Uint8Array): number {
  assert.equal(a.length, b.length);
  let n = 0;
  for (let i = 0; i < a.length; i += 3) {
    if (Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) + Math.abs(a[i + 2] - b[i + 2]) > 48) n++;
  }
  return n / (a.length / 3);
}

/** A minimal well-formedness check: every start tag is closed in order; one root element. */
function assertBalancedXml(xml: string): void {
  const stack: string[] = [];
  let roots = 0;
  for (const m of xml.matchAll(/<(\/?)([A-Za-z][\w:-]*)([^<>]*?)(\/?)>/g)) {
    const [, close, name, , selfClose] = m;
    if (close) assert.equal(stack.pop(), name, `closing </${name}>`);
    else {
      if (stack.length === 0) roots++;
      if (!selfClose) stack.push(name);
    }
  }
  assert.deepEqual(stack, [], "all elements closed");
  assert.equal(roots, 1, "one root element");
  assert.ok(!/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(xml), "only escaped ampersands");
}

function imageRequest(over: Partial<ImageRequest> = {}): ImageRequest {
  return {
    model: "imgA-v4",
    prompt: "a lighthouse on a cliff at sunset",
    n: 1,
    aspect: "1:1",
    width: 1024,
    height: 1024,
    quality: null,
    output: "png",
    imageUrls: [],
    parameters: {},
    simulate: null,
    ...over,
  };
}

function videoRequest(over: Partial<VideoRequest> = {}): VideoRequest {
  return {
    model: "vidA-3-pro",
    prompt: "a paper boat drifting down a rainy street",
    durationSec: 5,
    imageUrl: null,
    parameters: {},
    simulate: null,
    ...over,
  };
}

function bytesOf(out: MediaOutput): Extract<MediaOutput, { kind: "bytes" }> {
  assert.equal(out.kind, "bytes");
  return out as Extract<MediaOutput, { kind: "bytes" }>;
}

// ---------------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------------

describe("simulated PNG images", () => {
  for (const [w, h] of [
    [1024, 1024],
    [1792, 1024],
    [1024, 1792],
    [1448, 1448],
    [1344, 768],
    [1536, 640],
    [33, 7],
  ] as const) {
    test(`${w}x${h}: a valid RGB PNG of exactly that size`, () => {
      const png = parsePng(renderPng({ prompt: "a red fox in the snow", width: w, height: h, seed: "imgB-2-pro", index: 0 }));
      assert.equal(png.width, w);
      assert.equal(png.height, h);
      assert.equal(png.bitDepth, 8);
      assert.equal(png.colorType, 2);
      assert.equal(png.raw.length, (w * 3 + 1) * h, "scanline data covers the image");
      for (let y = 0; y < h; y++) assert.ok(png.raw[y * (w * 3 + 1)] <= 4, "valid filter type");
    });
  }

  test("deterministic; prompt, index and seed change the picture; the async variant gives the same bytes", async () => {
    const base = { prompt: "abstract geometric shapes", width: 256, height: 192, seed: "m", index: 0 };
    const a = renderPng(base);
    assert.deepEqual(renderPng(base), a);
    assert.deepEqual(await renderPngAsync(base), a);
    assert.notDeepEqual(renderPng({ ...base, prompt: "a calm green meadow" }), a);
    assert.notDeepEqual(renderPng({ ...base, index: 1 }), a);
    assert.notDeepEqual(renderPng({ ...base, seed: "other" }), a);
  });

  test("the prompt decides the picture: different prompts differ in most pixels, the same prompt and seed give the same bytes", () => {
    const opts = { width: 512, height: 384, seed: "imgA-v4", index: 0 };
    const prompts = ["a lighthouse at dawn", "a red fox in the snow", "city skyline at night", "a bouquet of yellow flowers"];
    const pics = prompts.map((prompt) => pngPixels(renderPng({ ...opts, prompt })).rgb);
    for (let i = 0; i < pics.length; i++) {
      for (let j = i + 1; j < pics.length; j++) {
        const share = differingShare(pics[i], pics[j]);
        assert.ok(share > 0.3, `${prompts[i]} / ${prompts[j]}: ${(share * 100).toFixed(1)}% of pixels differ`);
      }
    }
    assert.deepEqual(renderPng({ ...opts, prompt: prompts[0] }), renderPng({ ...opts, prompt: prompts[0] }));
  });

  test("subjects from the prompt's words; the prompt is written at the bottom", () => {
    assert.equal(motifOf("a lighthouse at dawn"), "lighthouse");
    assert.equal(motifOf("a red fox in the snow"), "animal");
    assert.equal(motifOf("a fox by the lighthouse"), "animal");
    assert.equal(motifOf("tokyo city skyline at night"), "city");
    assert.equal(motifOf("portrait of an old man"), "face");
    assert.equal(motifOf("a red sports car"), "car");
    assert.equal(motifOf("misty pine forest"), "forest");
    assert.equal(motifOf("snowy mountain peaks"), "mountain");
    assert.equal(motifOf("a sailboat on the ocean"), "sea");
    assert.equal(motifOf("the full moon"), "sky");
    assert.equal(motifOf("a vase of roses"), "flower");
    assert.equal(motifOf("an eagle"), "bird");
    assert.equal(motifOf("synthwave vibes"), "abstract");
    // Only the caption changes: the band at the bottom differs, the scene above it does not.
    const a = pngPixels(renderPng({ prompt: "a lighthouse at dawn", width: 800, height: 600, seed: "s" }));
    const b = pngPixels(renderPng({ prompt: "a lighthouse at dawn", width: 800, height: 600, seed: "s", index: 0 }));
    assert.deepEqual(a.rgb, b.rgb);
    const c = pngPixels(renderPng({ prompt: "A LIGHTHOUSE AT DAWN", width: 800, height: 600, seed: "s" }));
    const row = 800 * 3;
    const share = differingShare(a.rgb.subarray(520 * row), c.rgb.subarray(520 * row));
    assert.ok(share > 0.03, `the caption differs: ${share}`);
    assert.equal(differingShare(a.rgb.subarray(0, 400 * row), c.rgb.subarray(0, 400 * row)), 0, "the scene is the same");
  });

  test("captions wrap on words and are cut with an ellipsis", () => {
    assert.deepEqual(wrapCaption("a lighthouse at dawn", 40, 2), ["a lighthouse at dawn"]);
    assert.deepEqual(wrapCaption("one two three four five", 9, 2), ["one two", "three..."]);
    assert.deepEqual(wrapCaption("  café\n crème  ", 40, 2), ["cafe creme"]);
    assert.deepEqual(wrapCaption("", 40, 2), []);
    assert.deepEqual(wrapCaption("supercalifragilistic", 10, 1), ["superca..."]);
  });

  test("the picture is not flat: many distinct colours, not noise (compresses well)", () => {
    const bytes = renderPng({ prompt: "starry night over a lake", width: 512, height: 512 });
    const png = parsePng(bytes);
    const colours = new Set<number>();
    const stride = 512 * 3 + 1;
    // Compare (filtered) rows: a flat picture would repeat the same row.
    for (let y = 0; y < 512; y += 16) colours.add(crc32(png.raw.subarray(y * stride, (y + 1) * stride)));
    assert.ok(colours.size > 8, "rows differ");
    assert.ok(bytes.length < 512 * 512 * 3 * 0.5, `compressed size ${bytes.length}`);
  });

  test("rejects sizes outside 1..4096", () => {
    assert.throws(() => renderPng({ prompt: "x", width: 0, height: 10 }), RangeError);
    assert.throws(() => renderPng({ prompt: "x", width: 5000, height: 10 }), RangeError);
    assert.throws(() => renderPng({ prompt: "x", width: 10.5, height: 10 }), RangeError);
  });

  test("fitRenderSize keeps sizes up to 2048 and scales larger ones down; sizeForAspect is about 1 MP", () => {
    assert.deepEqual(fitRenderSize(2048, 2048), { width: 2048, height: 2048 });
    assert.deepEqual(fitRenderSize(1792, 1024), { width: 1792, height: 1024 });
    assert.deepEqual(fitRenderSize(4096, 2048), { width: 2048, height: 1024 });
    assert.equal(fitRenderSize(0, 100), null);
    assert.equal(fitRenderSize(Number.NaN, 100), null);
    for (const a of ["1:1", "16:9", "9:16", "4:3", "3:4", "21:9"] as const) {
      const s = sizeForAspect(a);
      const [x, y] = a.split(":").map(Number);
      assert.ok(Math.abs(s.width / s.height - x / y) < 0.1, a);
      assert.equal(Math.max(1, Math.round((s.width * s.height) / 1e6)), 1, a);
    }
  });

  test("rendering time of 2048x2048 and 1024x1024 (printed)", (t) => {
    for (const side of [1024, 2048]) {
      const start = performance.now();
      const bytes = renderPng({ prompt: "abstract geometric blue shapes", width: side, height: side });
      t.diagnostic(`${side}x${side}: ${(performance.now() - start).toFixed(1)} ms, ${bytes.length} bytes`);
    }
  });
});

describe("simulated SVG images", () => {
  test("a standalone SVG document with xmlns, width, height and viewBox; escaped title", () => {
    const svg = renderSvg({ prompt: 'logo for "Tom & Jerry" <cartoon> \u0001', width: 1792, height: 1024, index: 0 });
    assert.ok(svg.startsWith("<svg "));
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="1792" height="1024" viewBox="0 0 1792 1024">/);
    assert.match(svg, /<title>logo for &quot;Tom &amp; Jerry&quot; &lt;cartoon&gt; <\/title>/);
    assert.ok(!svg.includes("\u0001"));
    assertBalancedXml(svg);
    assert.match(svg, /<(circle|rect|path) /);
  });

  test("deterministic; different prompts and indexes differ", () => {
    const base = { prompt: "minimal mountain landscape", width: 800, height: 600, index: 0 };
    assert.equal(renderSvg(base), renderSvg(base));
    assert.notEqual(renderSvg({ ...base, prompt: "abstract circles" }), renderSvg(base));
    assert.notEqual(renderSvg({ ...base, index: 2 }), renderSvg(base));
  });
});

// ---------------------------------------------------------------------------------------------------
// Video
// ---------------------------------------------------------------------------------------------------

describe("simulated MP4 video", () => {
  for (const sec of [1, 5]) {
    test(`${sec} s: ftyp, moov, mdat; the video track lasts ${sec} s; 640x360`, async () => {
      const v = await renderMp4({ prompt: "waves on a beach", durationSec: sec });
      assert.equal(v.contentType, "video/mp4");
      assert.equal(v.durationSec, sec);
      assert.deepEqual(
        topBoxes(v.body).map(([type]) => type),
        ["ftyp", "moov", "mdat"],
      );
      const tracks = await mp4Tracks(v.body);
      assert.equal(tracks.video.length, 1);
      assert.equal(tracks.audio.length, 0);
      assert.ok(Math.abs(tracks.video[0] - sec) < 0.1, `duration ${tracks.video[0]}`);
      assert.equal(tracks.width, 640);
      assert.equal(tracks.height, 360);
      assert.deepEqual([v.width, v.height], [640, 360]);
    });
  }

  test("with audio: both tracks last the requested time; portrait clips are 360x640", async () => {
    const v = await renderMp4({ prompt: "a dancer", durationSec: 6, orientation: "portrait", audio: true });
    assert.equal(v.width, 360);
    assert.equal(v.height, 640);
    assert.equal(v.hasAudio, true);
    const tracks = await mp4Tracks(v.body);
    assert.ok(Math.abs(tracks.video[0] - 6) < 0.1, `video ${tracks.video[0]}`);
    assert.equal(tracks.audio.length, 1);
    assert.ok(Math.abs(tracks.audio[0] - 6) < 0.1, `audio ${tracks.audio[0]}`);
    assert.equal(tracks.width, 360);
  });

  test("deterministic; the prompt changes the clip; the size grows with the length; invalid lengths are refused", async () => {
    const a = await renderMp4({ prompt: "a lighthouse at dawn", durationSec: 2 });
    assert.deepEqual((await renderMp4({ prompt: "a lighthouse at dawn", durationSec: 2 })).body, a.body);
    assert.notDeepEqual((await renderMp4({ prompt: "a red fox in the snow", durationSec: 2 })).body, a.body);
    assert.ok((await renderMp4({ prompt: "a lighthouse at dawn", durationSec: 4 })).body.length > a.body.length * 1.3);
    for (const bad of [0, -1, Number.NaN, 61]) await assert.rejects(renderMp4({ prompt: "p", durationSec: bad }), RangeError);
  });

  test("the requested aspect ratio, at least 640 px on the long side", async () => {
    for (const [aspect, w, h] of [
      ["16:9", 640, 360],
      ["9:16", 360, 640],
      ["1:1", 640, 640],
      ["4:3", 640, 480],
      ["21:9", 640, 274],
    ] as const) {
      assert.deepEqual(videoSize(aspect), { width: w, height: h }, aspect);
      assert.ok(Math.max(w, h) >= 640);
    }
    const v = await renderMp4({ prompt: "a red car", durationSec: 1, aspect: "1:1" });
    const tracks = await mp4Tracks(v.body);
    assert.deepEqual([tracks.width, tracks.height, v.width, v.height], [640, 640, 640, 640]);
    assert.equal(videoAspectOf({ aspect_ratio: "4:3" }), "4:3");
    assert.equal(videoAspectOf({ size: "1280x720" }), "1280:720");
    assert.equal(videoAspectOf({}), null);
  });

  test("the pixel size asked for: size or resolution as WxH, resolution as a video class at the aspect ratio", () => {
    assert.deepEqual(requestedVideoSize({ size: "1280x720" }), { width: 1280, height: 720 });
    assert.deepEqual(requestedVideoSize({ aspect_ratio: "9:16", size: " 720 X 1280 " }), { width: 720, height: 1280 });
    assert.deepEqual(requestedVideoSize({ resolution: "1920x1080" }), { width: 1920, height: 1080 });
    assert.deepEqual(requestedVideoSize({ resolution: "720p" }), { width: 1280, height: 720 });
    assert.deepEqual(requestedVideoSize({ resolution: "1080P", aspect_ratio: "9:16" }), { width: 1080, height: 1920 });
    assert.deepEqual(requestedVideoSize({ resolution: "768P", aspect_ratio: "1:1" }), { width: 768, height: 768 });
    for (const none of [{}, { aspect_ratio: "16:9" }, { size: "big" }, { size: 1280 }, { resolution: "0p" }, { size: "0x720" }]) {
      assert.equal(requestedVideoSize(none), null, JSON.stringify(none));
    }
  });

  test("fitted to a model's largest output: scaled down with its aspect ratio, never up, even sides", () => {
    assert.deepEqual(fitVideoSize({ width: 1280, height: 720 }, 720), { width: 1280, height: 720 });
    assert.deepEqual(fitVideoSize({ width: 720, height: 1280 }, 720), { width: 720, height: 1280 });
    assert.deepEqual(fitVideoSize({ width: 1920, height: 1080 }, 720), { width: 1280, height: 720 });
    assert.deepEqual(fitVideoSize({ width: 1280, height: 720 }, 512), { width: 910, height: 512 });
    assert.deepEqual(fitVideoSize({ width: 1920, height: 1080 }, 768), { width: 1366, height: 768 });
    assert.deepEqual(fitVideoSize({ width: 1000, height: 1000 }, 720), { width: 720, height: 720 });
    assert.deepEqual(fitVideoSize({ width: 641, height: 359 }, 1080), { width: 640, height: 358 });
    assert.deepEqual(fitVideoSize({ width: 8000, height: 8000 }), { width: 1080, height: 1080 });
    assert.deepEqual(fitVideoSize({ width: 10, height: 10 }, 720), { width: 32, height: 32 });
    // Every catalog video model: a 4k ask gets at most its class, in both orientations.
    for (const model of MODELS.filter((m) => m.capability === "video")) {
      const cap = (model as { maxShortSidePx: number }).maxShortSidePx;
      for (const size of ["3840x2160", "2160x3840"]) {
        const got = simulatedVideoSize(model.id, { size });
        assert.ok(got !== null && Math.min(got.width, got.height) === cap, `${model.id} ${size}: ${JSON.stringify(got)}`);
        assert.ok(Math.max(got.width, got.height) <= Math.min(MAX_VIDEO_SIDE, Math.round((cap * 8) / 9) * 2), model.id);
        assert.equal(got.width > got.height, size === "3840x2160", model.id);
      }
    }
    assert.deepEqual(simulatedVideoSize("vidD-3-fast", { size: "1920x1080" }), { width: 1280, height: 720 });
    assert.deepEqual(simulatedVideoSize("vidC-02-768p", { resolution: "1080p" }), { width: 1366, height: 768 });
    assert.equal(simulatedVideoSize("vidD-3", {}), null);
  });

  test("renderMp4 draws the size given, and refuses a size it cannot encode", async () => {
    const v = await renderMp4({ prompt: "a red car", durationSec: 0.25, width: 320, height: 568 });
    assert.deepEqual([v.width, v.height], [320, 568]);
    const facts = probeMedia(v.body);
    assert.deepEqual([facts?.width, facts?.height], [320, 568]);
    assert.deepEqual(renderSizeOf({ aspect: "4:3" }), { width: 640, height: 480 });
    for (const bad of [{ width: 321, height: 200 }, { width: 320 }, { width: 2000, height: 1000 }, { width: 16, height: 16 }, { width: 1.5, height: 2 }]) {
      assert.throws(() => renderSizeOf(bad), RangeError, JSON.stringify(bad));
      await assert.rejects(renderMp4({ prompt: "p", durationSec: 1, ...bad }), RangeError);
    }
  });

  test("orientation and audio choices", () => {
    assert.equal(videoOrientationOf({}), "landscape");
    assert.equal(videoOrientationOf({ aspect_ratio: "9:16" }), "portrait");
    assert.equal(videoOrientationOf({ size: "720x1280" }), "portrait");
    assert.equal(videoOrientationOf({ aspect_ratio: "16:9" }), "landscape");
    assert.equal(simulatedVideoHasAudio("vidA-3-pro-audio", {}), true);
    assert.equal(simulatedVideoHasAudio("vidB-2-fast", {}), true);
    assert.equal(simulatedVideoHasAudio("vidD-3", {}), true);
    assert.equal(simulatedVideoHasAudio("vidD-3-fast", {}), false);
    assert.equal(simulatedVideoHasAudio("vidA-3-pro", {}), false);
    assert.equal(simulatedVideoHasAudio("vidA-3-pro", { generate_audio: true }), true);
  });
});

// ---------------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------------

describe("simulated visual upstream", () => {
  test("n PNG images of the requested size, each different; progress is reported", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    let progress = 0;
    const outs = await up.generateImages(imageRequest({ n: 3, aspect: "16:9", width: 1792, height: 1024 }), undefined, () => progress++);
    assert.equal(outs.length, 3);
    for (const o of outs) {
      const b = bytesOf(o);
      assert.equal(b.contentType, "image/png");
      assert.equal(b.width, 1792);
      assert.equal(b.height, 1024);
      const png = parsePng(b.body);
      assert.equal(png.width, 1792);
      assert.equal(png.height, 1024);
    }
    assert.notDeepEqual(bytesOf(outs[0]).body, bytesOf(outs[1]).body);
    assert.ok(progress >= 1);
    // Deterministic per request.
    const again = await up.generateImages(imageRequest({ n: 1, aspect: "16:9", width: 1792, height: 1024 }));
    assert.deepEqual(bytesOf(again[0]).body, bytesOf(outs[0]).body);
    await up.close();
  });

  test("the real output size: 1448x1448 kept, 4096x4096 scaled to 2048, invalid sizes use the aspect default", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    const [a] = await up.generateImages(imageRequest({ width: 1448, height: 1448 }));
    assert.equal(parsePng(bytesOf(a).body).width, 1448);
    const [b] = await up.generateImages(imageRequest({ prompt: "x", width: 4096, height: 4096 }));
    assert.deepEqual([bytesOf(b).width, bytesOf(b).height], [2048, 2048]);
    assert.equal(parsePng(bytesOf(b).body).height, 2048);
    const [c] = await up.generateImages(imageRequest({ aspect: "9:16", width: 0, height: 0 }));
    assert.deepEqual([bytesOf(c).width, bytesOf(c).height], [768, 1344]);
    await up.close();
  });

  test("vector models get SVG documents", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    const outs = await up.generateImages(imageRequest({ model: "imgA-v4-vector", output: "svg", n: 2, width: 1024, height: 1024 }));
    assert.equal(outs.length, 2);
    for (const o of outs) {
      const b = bytesOf(o);
      assert.equal(b.contentType, "image/svg+xml");
      const text = new TextDecoder().decode(b.body);
      assert.ok(text.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="1024" height="1024" viewBox="0 0 1024 1024"'));
      assertBalancedXml(text);
    }
    await up.close();
  });

  test("images: placeholder answers flat grey PNGs of the real size from a per-size cache, and SVG documents", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0, images: "placeholder" });
    const outs = await up.generateImages(imageRequest({ n: 2, width: 1792, height: 1024 }));
    assert.equal(outs.length, 2);
    const png = parsePng(bytesOf(outs[0]).body);
    assert.deepEqual([png.width, png.height, png.bitDepth, png.colorType], [1792, 1024, 8, 2]);
    assert.deepEqual([bytesOf(outs[0]).width, bytesOf(outs[0]).height], [1792, 1024]);
    // Every pixel is the same grey: unfiltered, the first row is grey throughout and the rest repeat it.
    assert.deepEqual([png.raw[0], png.raw[1], png.raw[2], png.raw[3], png.raw[4]], [1, 0x80, 0x80, 0x80, 0]);
    assert.ok(png.raw.subarray(4, 1792 * 3 + 1).every((b) => b === 0));
    assert.ok(bytesOf(outs[0]).body.length < 10_000, `small: ${bytesOf(outs[0]).body.length} bytes`);
    // Encoded once per size: other prompts and requests of the same size get the same bytes.
    const [again] = await up.generateImages(imageRequest({ prompt: "something else", width: 1792, height: 1024 }));
    assert.equal(bytesOf(again).body, bytesOf(outs[0]).body);
    const [other] = await up.generateImages(imageRequest({ width: 4096, height: 4096 }));
    assert.deepEqual([parsePng(bytesOf(other).body).width, bytesOf(other).height], [2048, 2048]);
    const [svg] = await up.generateImages(imageRequest({ model: "imgA-v4-vector", output: "svg", width: 512, height: 256 }));
    assert.equal(bytesOf(svg).contentType, "image/svg+xml");
    const text = new TextDecoder().decode(bytesOf(svg).body);
    assert.ok(text.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="512" height="256" viewBox="0 0 512 256"'));
    assertBalancedXml(text);
    // X-Svc-Simulate still applies.
    await assert.rejects(up.generateImages(imageRequest({ simulate: "fail" })), UpstreamError);
    await up.close();
    // SIM_IMAGES selects it; drawing stays the default.
    assert.equal(loadConfig({}).simImages, "draw");
    assert.equal(loadConfig({ SIM_IMAGES: "placeholder" }).simImages, "placeholder");
    assert.throws(() => loadConfig({ SIM_IMAGES: "flat" }), /SIM_IMAGES must be one of draw, placeholder/);
  });

  test("video: the requested length (vidC 6 s), MP4 bytes with size and duration", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    for (const [model, sec] of [
      ["vidC-02-768p", 6],
      ["vidA-3-pro-audio", 2],
    ] as const) {
      const out = bytesOf(await up.generateVideo(videoRequest({ model, durationSec: sec })));
      assert.equal(out.contentType, "video/mp4");
      assert.equal(out.durationSec, sec);
      assert.deepEqual([out.width, out.height], [640, 360]);
      const tracks = await mp4Tracks(out.body);
      assert.ok(Math.abs(tracks.video[0] - sec) < 0.1, `${model}: ${tracks.video[0]}`);
      assert.equal(tracks.audio.length, model === "vidA-3-pro-audio" ? 1 : 0, model);
    }
    const portrait = bytesOf(
      await up.generateVideo(videoRequest({ imageUrl: "https://example.com/first.png", parameters: { aspect_ratio: "9:16" } })),
    );
    assert.deepEqual([portrait.width, portrait.height], [360, 640]);
    assert.deepEqual([(await mp4Tracks(portrait.body)).width, (await mp4Tracks(portrait.body)).height], [360, 640]);
    // A pixel size asked for (the OpenAI dialect's `size`), up to the model's largest: vidC-02-512p at most 910x512.
    for (const [model, size, want] of [
      ["vidD-3-fast", "720x1280", [720, 1280]],
      ["vidC-02-512p", "1280x720", [910, 512]],
    ] as const) {
      const sized = bytesOf(await up.generateVideo(videoRequest({ model, durationSec: 1, imageUrl: "https://example.com/first.png", parameters: { size } })));
      const tracks = await mp4Tracks(sized.body);
      assert.deepEqual([sized.width, sized.height, tracks.width, tracks.height], [...want, ...want], model);
    }
    await assert.rejects(up.generateVideo(videoRequest({ durationSec: 0 })), (e: unknown) => e instanceof UpstreamError && !e.retryable);
    await up.close();
  });

  test("X-Svc-Simulate: fail throws a non-retryable UpstreamError", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    const isFail = (e: unknown) => e instanceof UpstreamError && !e.retryable;
    await assert.rejects(up.generateImages(imageRequest({ simulate: "fail" })), isFail);
    await assert.rejects(up.generateVideo(videoRequest({ simulate: "fail" })), isFail);
    await up.close();
  });

  test("X-Svc-Simulate: slow adds at least 1 s at scale 0", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    const start = performance.now();
    const [img, vid] = await Promise.all([
      up.generateImages(imageRequest({ simulate: "slow", width: 64, height: 64 })),
      up.generateVideo(videoRequest({ simulate: "slow", durationSec: 1 })),
    ]);
    assert.ok(performance.now() - start >= 990);
    assert.equal(img.length, 1);
    assert.equal(bytesOf(vid).contentType, "video/mp4");
    await up.close();
  });

  test("X-Svc-Simulate: hang never answers nor reports progress until aborted", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 0 });
    const ac = new AbortController();
    let progress = 0;
    let settled = false;
    const p = up.generateVideo(videoRequest({ simulate: "hang" }), ac.signal, () => progress++);
    p.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(settled, false);
    assert.equal(progress, 0);
    const reason = new Error("runner gave up");
    ac.abort(reason);
    await assert.rejects(p, (e: unknown) => e === reason);

    // Without a signal it stays pending until the upstream is closed (then an AbortError).
    const q = up.generateImages(imageRequest({ simulate: "hang" }));
    await up.close();
    await assert.rejects(q, (e: unknown) => e instanceof DOMException && e.name === "AbortError");
    await assert.rejects(up.generateImages(imageRequest()), UpstreamError);
  });

  test("an abort during the latency rejects with the signal's reason", async () => {
    const up = createSimulatedVisualUpstream({ latencyScale: 1 });
    const ac = new AbortController();
    const p = up.generateImages(imageRequest(), ac.signal);
    setTimeout(() => ac.abort(new Error("stop")), 20);
    await assert.rejects(p, /stop/);
    await up.close();
  });
});
