/**
 * Image synthesis for the built-in simulator (decision D10): real PNG and SVG files whose picture is
 * derived from the prompt.
 *
 * A prompt (plus a seed and the image's index within the request) is turned into a small scene plan:
 * a colour palette (steered by colour and mood words such as "red", "ocean", "night", "sunset") and
 * either a landscape (sky gradient, sun or moon, stars at night, layered hills) or an abstract
 * composition (gradient background with circles, rings, rotated rectangles and bands). Words such as
 * "landscape", "mountain", "abstract", "geometric" pick the style; otherwise the prompt's hash does.
 * The same plan is rasterized by {@link renderPng} (anti-aliased, 8-bit RGB) and drawn as vector
 * shapes by {@link renderSvg}, so both look alike. Everything is deterministic: the same options give
 * the same bytes; no `Math.random`.
 *
 * Coordinates in the plan are normalized (x in 0..1 of the width, y in 0..1 of the height, lengths
 * relative to the shorter side), so a plan looks the same at any size and aspect ratio.
 */

import { deflate, deflateSync, crc32 } from "node:zlib";
import { promisify } from "node:util";
import type { AspectRatio } from "../types.ts";
import { createRng, type Rng, seedFrom } from "./rng.ts";

const deflateAsync = promisify(deflate);

// ---------------------------------------------------------------------------------------------------
// Sizes
// ---------------------------------------------------------------------------------------------------

/** Longest side (px) the simulator renders at; larger requests are scaled down by {@link fitRenderSize}. */
export const MAX_RENDER_SIDE = 2048;

/** Hard limits of {@link renderPng} / {@link renderSvg}: each side 1..4096 px. */
const MAX_SIDE = 4096;

/**
 * The size (px) the simulator actually renders for a requested `width` x `height`: the request itself
 * when both sides are at most {@link MAX_RENDER_SIDE}, otherwise scaled down (aspect ratio kept, sides
 * rounded, at least 1) so that the longer side is {@link MAX_RENDER_SIDE}. Invalid sizes (not positive
 * finite numbers) give `null`.
 */
export function fitRenderSize(width: number, height: number): { width: number; height: number } | null {
  if (!(Number.isFinite(width) && Number.isFinite(height) && width >= 1 && height >= 1)) return null;
  let w = Math.round(width);
  let h = Math.round(height);
  const long = Math.max(w, h);
  if (long > MAX_RENDER_SIDE) {
    const k = MAX_RENDER_SIDE / long;
    w = Math.max(1, Math.round(w * k));
    h = Math.max(1, Math.round(h * k));
  }
  return { width: w, height: h };
}

/**
 * A default pixel size of about one megapixel (sides multiples of 64) for each aspect ratio:
 * 1:1 1024x1024, 16:9 1344x768, 9:16 768x1344, 4:3 1152x896, 3:4 896x1152, 21:9 1536x640.
 */
export function sizeForAspect(aspect: AspectRatio): { width: number; height: number } {
  switch (aspect) {
    case "1:1":
      return { width: 1024, height: 1024 };
    case "16:9":
      return { width: 1344, height: 768 };
    case "9:16":
      return { width: 768, height: 1344 };
    case "4:3":
      return { width: 1152, height: 896 };
    case "3:4":
      return { width: 896, height: 1152 };
    case "21:9":
      return { width: 1536, height: 640 };
  }
}

// ---------------------------------------------------------------------------------------------------
// Scene planning
// ---------------------------------------------------------------------------------------------------

/** Options of {@link renderPng} and {@link renderSvg}. */
export interface RenderImageOptions {
  /** The prompt; its words and hash drive the palette, style and composition. */
  prompt: string;
  /** Output size in pixels, integers 1..4096 (rendered exactly). */
  width: number;
  height: number;
  /** Extra seed material (for example the model id and a pass-through `seed`); default "". */
  seed?: string | number;
  /** Index of the image within one request (0-based): each index gives a different variation. */
  index?: number;
}

/** An RGB colour, each channel 0..255. */
type Rgb = readonly [number, number, number];

/** A shape of the plan (normalized coordinates, see the module comment). `alpha` is 0..1. */
type Shape =
  | { kind: "circle"; cx: number; cy: number; r: number; color: Rgb; alpha: number }
  | { kind: "ring"; cx: number; cy: number; r: number; w: number; color: Rgb; alpha: number }
  | { kind: "rect"; cx: number; cy: number; hw: number; hh: number; angle: number; color: Rgb; alpha: number }
  | { kind: "band"; offset: number; w: number; angle: number; color: Rgb; alpha: number }
  | { kind: "hill"; base: number; waves: readonly Wave[]; color: Rgb; alpha: number };

/** One sine of a hill ridge: `amp x sin(2 pi (freq x + phase))`, amp relative to the height. */
interface Wave {
  amp: number;
  freq: number;
  phase: number;
}

/** A linear gradient from `c0` to `c1` along direction `angle` (radians, in pixel space). */
interface Gradient {
  c0: Rgb;
  c1: Rgb;
  angle: number;
}

interface ImagePlan {
  style: "landscape" | "abstract";
  background: Gradient;
  shapes: Shape[];
}

/** Hue (degrees) suggested by colour and mood words; the first match wins. */
const HUE_WORDS: readonly (readonly [RegExp, number])[] = [
  [/\b(red|crimson|scarlet|fire|blood|ruby)\b/, 0],
  [/\b(orange|sunset|autumn|amber|copper)\b/, 28],
  [/\b(yellow|gold|golden|desert|sand|lemon|sunny)\b/, 50],
  [/\b(green|forest|jungle|grass|leaf|emerald|meadow)\b/, 120],
  [/\b(teal|turquoise|cyan|aqua|lagoon)\b/, 178],
  [/\b(blue|ocean|sea|sky|water|ice|winter|sapphire)\b/, 215],
  [/\b(purple|violet|lavender|galaxy|space|amethyst)\b/, 272],
  [/\b(pink|magenta|rose|candy|flamingo)\b/, 325],
];

const LANDSCAPE_WORDS = /\b(landscape|mountains?|hills?|valley|sunset|sunrise|sky|nature|scenery|horizon|dawn|dusk|lake|field)\b/;
const ABSTRACT_WORDS = /\b(abstract|pattern|geometric|shapes?|logo|icon|minimal|bauhaus|modern art|circles?)\b/;
const NIGHT_WORDS = /\b(night|dark|midnight|moon|stars?|starry|noir|gloomy)\b/;
const PASTEL_WORDS = /\b(pastel|soft|light|bright|airy|dreamy)\b/;

/** HSL (h degrees, s and l in 0..1) to RGB 0..255. */
function hsl(h: number, s: number, l: number): Rgb {
  const hh = (((h % 360) + 360) % 360) / 60;
  const c = (1 - Math.abs(2 * l - 1)) * s;
  const x = c * (1 - Math.abs((hh % 2) - 1));
  const m = l - c / 2;
  let r = 0;
  let g = 0;
  let b = 0;
  if (hh < 1) [r, g, b] = [c, x, 0];
  else if (hh < 2) [r, g, b] = [x, c, 0];
  else if (hh < 3) [r, g, b] = [0, c, x];
  else if (hh < 4) [r, g, b] = [0, x, c];
  else if (hh < 5) [r, g, b] = [x, 0, c];
  else [r, g, b] = [c, 0, x];
  return [Math.round((r + m) * 255), Math.round((g + m) * 255), Math.round((b + m) * 255)];
}

function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return [
    Math.round(a[0] + (b[0] - a[0]) * t),
    Math.round(a[1] + (b[1] - a[1]) * t),
    Math.round(a[2] + (b[2] - a[2]) * t),
  ];
}

function between(rng: Rng, lo: number, hi: number): number {
  return lo + (hi - lo) * rng();
}

/** The deterministic scene plan of `opts` (independent of the output size). */
function planImage(opts: RenderImageOptions): ImagePlan {
  const text = opts.prompt.normalize("NFC").toLowerCase();
  const index = opts.index ?? 0;
  const styleRng = createRng(seedFrom("image-style", text, String(opts.seed ?? "")));
  const rng = createRng(seedFrom("image", text, String(opts.seed ?? ""), String(index)));

  let hue = styleRng() * 360;
  for (const [re, h] of HUE_WORDS) {
    if (re.test(text)) {
      hue = h + (styleRng() - 0.5) * 20;
      break;
    }
  }
  hue += (rng() - 0.5) * 30; // each image of a request varies a little
  const night = NIGHT_WORDS.test(text);
  const pastel = PASTEL_WORDS.test(text);
  const sat = pastel ? 0.45 : between(styleRng, 0.55, 0.85);
  const light = night ? 0.18 : pastel ? 0.78 : 0.55;
  const accentHue = hue + (styleRng() < 0.5 ? 150 : 200) + (rng() - 0.5) * 30;

  let style: ImagePlan["style"];
  if (LANDSCAPE_WORDS.test(text)) style = "landscape";
  else if (ABSTRACT_WORDS.test(text)) style = "abstract";
  else style = styleRng() < 0.5 ? "landscape" : "abstract";

  const shapes: Shape[] = [];
  if (style === "landscape") {
    const top = hsl(hue, sat, Math.max(0.08, light - 0.25));
    const horizon = night ? hsl(hue + 20, sat * 0.8, light + 0.1) : hsl(hue + 35, sat, Math.min(0.9, light + 0.25));
    const background: Gradient = { c0: top, c1: horizon, angle: Math.PI / 2 };
    if (night) {
      const stars = 25 + Math.floor(rng() * 40);
      for (let i = 0; i < stars; i++) {
        shapes.push({
          kind: "circle",
          cx: rng(),
          cy: rng() * 0.55,
          r: between(rng, 0.0015, 0.0045),
          color: [255, 255, 240],
          alpha: between(rng, 0.5, 1),
        });
      }
    }
    const sunColor: Rgb = night ? [240, 240, 225] : mix(hsl(hue + 30, 0.9, 0.7), [255, 232, 150], 0.6);
    const sun = { cx: between(rng, 0.15, 0.85), cy: between(rng, 0.15, 0.45), r: between(rng, 0.06, 0.14) };
    shapes.push({ kind: "circle", ...sun, r: sun.r * 1.9, color: sunColor, alpha: 0.14 });
    shapes.push({ kind: "circle", ...sun, color: sunColor, alpha: 0.95 });
    const layers = 3 + Math.floor(rng() * 2);
    for (let i = 0; i < layers; i++) {
      const depth = (i + 1) / layers; // 1 = front
      const waves: Wave[] = [];
      for (let k = 0; k < 3; k++) {
        waves.push({
          amp: between(rng, 0.01, 0.06) / (k + 1),
          freq: between(rng, 0.6, 2.2) * (k + 1),
          phase: rng(),
        });
      }
      const hillHue = hue + 60 + i * 12 + (styleRng() - 0.5) * 40;
      shapes.push({
        kind: "hill",
        base: 0.48 + depth * 0.4 - 0.08,
        waves,
        color: hsl(hillHue, sat * 0.6, Math.max(0.06, (night ? 0.22 : 0.5) * (1.15 - depth * 0.7))),
        alpha: 1,
      });
    }
    return { style, background, shapes };
  }

  const background: Gradient = {
    c0: hsl(hue, sat, light),
    c1: hsl(hue + 40, sat, Math.max(0.1, light - 0.2)),
    angle: rng() * Math.PI * 2,
  };
  const palette: Rgb[] = [
    hsl(accentHue, sat, Math.min(0.85, light + 0.15)),
    hsl(hue + 180, sat * 0.9, light),
    hsl(hue - 30, sat, Math.min(0.9, light + 0.3)),
    mix(hsl(accentHue + 60, sat, light), [255, 255, 255], 0.3),
    hsl(hue, sat, Math.max(0.08, light - 0.3)),
  ];
  const count = 5 + Math.floor(rng() * 5);
  for (let i = 0; i < count; i++) {
    const color = palette[Math.floor(rng() * palette.length)];
    const alpha = between(rng, 0.55, 0.95);
    const cx = between(rng, 0.1, 0.9);
    const cy = between(rng, 0.1, 0.9);
    const roll = rng();
    if (roll < 0.35) shapes.push({ kind: "circle", cx, cy, r: between(rng, 0.05, 0.25), color, alpha });
    else if (roll < 0.55) {
      const r = between(rng, 0.08, 0.3);
      shapes.push({ kind: "ring", cx, cy, r, w: r * between(rng, 0.08, 0.3), color, alpha });
    } else if (roll < 0.85) {
      shapes.push({
        kind: "rect",
        cx,
        cy,
        hw: between(rng, 0.04, 0.22),
        hh: between(rng, 0.04, 0.22),
        angle: rng() * Math.PI,
        color,
        alpha,
      });
    } else {
      shapes.push({
        kind: "band",
        offset: between(rng, -0.3, 0.3),
        w: between(rng, 0.03, 0.12),
        angle: rng() * Math.PI,
        color,
        alpha: alpha * 0.6,
      });
    }
  }
  return { style, background, shapes };
}

/** Height (fraction of the image height, 0 = top) of a hill ridge at normalized `x`. */
function ridgeAt(base: number, waves: readonly Wave[], x: number): number {
  let y = base;
  for (const w of waves) y += w.amp * Math.sin(2 * Math.PI * (w.freq * x + w.phase));
  return y;
}

/** Start/end points (px) of a gradient along `angle` that spans a `w` x `h` image from 0 to 1. */
function gradientLine(w: number, h: number, angle: number): { x1: number; y1: number; x2: number; y2: number } {
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const half = (Math.abs(w * c) + Math.abs(h * s)) / 2;
  return { x1: w / 2 - c * half, y1: h / 2 - s * half, x2: w / 2 + c * half, y2: h / 2 + s * half };
}

function checkSize(width: number, height: number): void {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width >= 1 && height >= 1)) {
    throw new RangeError(`image size must be positive integers, got ${width}x${height}`);
  }
  if (width > MAX_SIDE || height > MAX_SIDE) throw new RangeError(`image side over ${MAX_SIDE} px: ${width}x${height}`);
}

// ---------------------------------------------------------------------------------------------------
// Rasterization
// ---------------------------------------------------------------------------------------------------

/**
 * An RGB canvas whose memory is the PNG scanline buffer itself: each row is one filter-type byte
 * followed by `width x 3` bytes.
 */
class Canvas {
  readonly w: number;
  readonly h: number;
  readonly stride: number;
  readonly data: Uint8ClampedArray;

  constructor(w: number, h: number) {
    this.w = w;
    this.h = h;
    this.stride = w * 3 + 1;
    this.data = new Uint8ClampedArray(this.stride * h);
  }

  gradient(g: Gradient): void {
    const { w, h, data, stride } = this;
    const { x1, y1, x2, y2 } = gradientLine(w, h, g.angle);
    const dx = x2 - x1;
    const dy = y2 - y1;
    const len2 = dx * dx + dy * dy || 1;
    const [r0, g0, b0] = g.c0;
    const dr = g.c1[0] - r0;
    const dg = g.c1[1] - g0;
    const db = g.c1[2] - b0;
    const stepX = dx / len2;
    for (let y = 0; y < h; y++) {
      let t = ((0.5 - x1) * dx + (y + 0.5 - y1) * dy) / len2;
      let o = y * stride + 1;
      for (let x = 0; x < w; x++, o += 3, t += stepX) {
        const tt = t < 0 ? 0 : t > 1 ? 1 : t;
        data[o] = r0 + dr * tt;
        data[o + 1] = g0 + dg * tt;
        data[o + 2] = b0 + db * tt;
      }
    }
  }

  /** Blends `color` at pixel (x, y) with coverage `a` (0..1). */
  private blend(x: number, y: number, color: Rgb, a: number): void {
    const o = y * this.stride + 1 + x * 3;
    const d = this.data;
    d[o] += (color[0] - d[o]) * a;
    d[o + 1] += (color[1] - d[o + 1]) * a;
    d[o + 2] += (color[2] - d[o + 2]) * a;
  }

  /**
   * Fills the pixels inside the box (px) for which `dist(px, py)` (a signed distance in px, negative
   * inside) is below 0.5, with a one-pixel anti-aliased edge.
   */
  private fillSdf(
    x0: number,
    y0: number,
    x1: number,
    y1: number,
    color: Rgb,
    alpha: number,
    dist: (px: number, py: number) => number,
  ): void {
    const xa = Math.max(0, Math.floor(x0));
    const xb = Math.min(this.w - 1, Math.ceil(x1));
    const ya = Math.max(0, Math.floor(y0));
    const yb = Math.min(this.h - 1, Math.ceil(y1));
    for (let y = ya; y <= yb; y++) {
      const py = y + 0.5;
      for (let x = xa; x <= xb; x++) {
        const d = dist(x + 0.5, py);
        if (d >= 0.5) continue;
        const cov = d <= -0.5 ? 1 : 0.5 - d;
        this.blend(x, y, color, cov * alpha);
      }
    }
  }

  circle(cx: number, cy: number, r: number, color: Rgb, alpha: number): void {
    this.fillSdf(cx - r - 1, cy - r - 1, cx + r + 1, cy + r + 1, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      return Math.sqrt(dx * dx + dy * dy) - r;
    });
  }

  ring(cx: number, cy: number, r: number, width: number, color: Rgb, alpha: number): void {
    const outer = r + width / 2 + 1;
    const half = width / 2;
    this.fillSdf(cx - outer, cy - outer, cx + outer, cy + outer, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      return Math.abs(Math.sqrt(dx * dx + dy * dy) - r) - half;
    });
  }

  rect(cx: number, cy: number, hw: number, hh: number, angle: number, color: Rgb, alpha: number): void {
    const c = Math.cos(angle);
    const s = Math.sin(angle);
    const ex = Math.abs(hw * c) + Math.abs(hh * s) + 1;
    const ey = Math.abs(hw * s) + Math.abs(hh * c) + 1;
    this.fillSdf(cx - ex, cy - ey, cx + ex, cy + ey, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      const u = Math.abs(dx * c + dy * s) - hw;
      const v = Math.abs(-dx * s + dy * c) - hh;
      return Math.max(u, v);
    });
  }

  /** A straight band through the centre offset by `offset` px along its normal, `width` px wide. */
  band(offset: number, width: number, angle: number, color: Rgb, alpha: number): void {
    const nx = -Math.sin(angle);
    const ny = Math.cos(angle);
    const cx = this.w / 2;
    const cy = this.h / 2;
    const half = width / 2;
    this.fillSdf(0, 0, this.w - 1, this.h - 1, color, alpha, (px, py) => {
      return Math.abs((px - cx) * nx + (py - cy) * ny - offset) - half;
    });
  }

  /** Fills below a ridge given as a y value (px) per column. */
  below(ridge: Float64Array, color: Rgb, alpha: number): void {
    for (let x = 0; x < this.w; x++) {
      const top = ridge[x];
      const y0 = Math.max(0, Math.floor(top));
      for (let y = y0; y < this.h; y++) {
        const cov = Math.min(1, y + 1 - top);
        if (cov <= 0) continue;
        this.blend(x, y, color, cov * alpha);
      }
    }
  }
}

/** Draws `plan` onto a new canvas of `w` x `h` px. */
function rasterize(plan: ImagePlan, w: number, h: number): Canvas {
  const cv = new Canvas(w, h);
  cv.gradient(plan.background);
  const unit = Math.min(w, h);
  for (const s of plan.shapes) {
    switch (s.kind) {
      case "circle":
        cv.circle(s.cx * w, s.cy * h, s.r * unit, s.color, s.alpha);
        break;
      case "ring":
        cv.ring(s.cx * w, s.cy * h, s.r * unit, s.w * unit, s.color, s.alpha);
        break;
      case "rect":
        cv.rect(s.cx * w, s.cy * h, s.hw * unit, s.hh * unit, s.angle, s.color, s.alpha);
        break;
      case "band":
        cv.band(s.offset * unit, s.w * unit, s.angle, s.color, s.alpha);
        break;
      case "hill": {
        const ridge = new Float64Array(w);
        for (let x = 0; x < w; x++) ridge[x] = ridgeAt(s.base, s.waves, (x + 0.5) / w) * h;
        cv.below(ridge, s.color, s.alpha);
        break;
      }
    }
  }
  return cv;
}

// ---------------------------------------------------------------------------------------------------
// PNG encoding
// ---------------------------------------------------------------------------------------------------

const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

/** zlib level of the IDAT stream: fast, still small for these smooth pictures. */
const PNG_ZLIB_LEVEL = 3;

/** One PNG chunk: length, type, data, CRC-32 of type + data. */
function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  dv.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/**
 * Pixels per raster cell: the picture is drawn on a grid 4x coarser than the output and enlarged, so a
 * megapixel costs a few milliseconds of the event loop (the runner draws many images in the server
 * process). The enlarged rows compress to almost nothing: repeated rows use PNG's "Up" filter (all
 * zeros) and repeated pixels the "Sub" filter.
 */
const CELL = 4;

/** The scanline buffer (filtered, ready to deflate) of the picture of `opts`. */
function scanlines(opts: RenderImageOptions): Uint8Array {
  checkSize(opts.width, opts.height);
  const { width: w, height: h } = opts;
  const cw = Math.ceil(w / CELL);
  const ch = Math.ceil(h / CELL);
  const cv = rasterize(planImage(opts), cw, ch);
  const src = cv.data;
  const stride = w * 3 + 1;
  const raw = new Uint8Array(stride * h);
  for (let y = 0; y < h; y++) {
    const row = y * stride;
    if (y % CELL !== 0) {
      raw[row] = 2; // Up: identical to the row above; the filtered bytes stay 0.
      continue;
    }
    raw[row] = 1; // Sub: each byte minus the one 3 bytes (a pixel) to its left.
    const srcRow = (y / CELL) * (cw * 3 + 1) + 1; // the canvas rows carry a filter byte first
    let pr = 0;
    let pg = 0;
    let pb = 0;
    for (let x = 0; x < w; x++) {
      const si = srcRow + Math.floor(x / CELL) * 3;
      const r = src[si];
      const g = src[si + 1];
      const b = src[si + 2];
      const o = row + 1 + x * 3;
      raw[o] = (r - pr) & 0xff;
      raw[o + 1] = (g - pg) & 0xff;
      raw[o + 2] = (b - pb) & 0xff;
      pr = r;
      pg = g;
      pb = b;
    }
  }
  return raw;
}

function assemblePng(width: number, height: number, idat: Uint8Array): Uint8Array {
  const ihdr = new Uint8Array(13);
  const dv = new DataView(ihdr.buffer);
  dv.setUint32(0, width);
  dv.setUint32(4, height);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour RGB
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  const parts = [PNG_SIGNATURE, pngChunk("IHDR", ihdr), pngChunk("IDAT", idat), pngChunk("IEND", new Uint8Array(0))];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Renders the picture of `opts` as a PNG file (8-bit RGB, exactly `width` x `height` px; IHDR holds
 * that size). Deterministic. Throws `RangeError` for sizes that are not integers in 1..4096.
 * About 40 ms for 1024x1024 (rasterization and deflate on the calling thread); prefer
 * {@link renderPngAsync} on a server.
 */
export function renderPng(opts: RenderImageOptions): Uint8Array {
  const raw = scanlines(opts);
  const idat = deflateSync(raw, { level: PNG_ZLIB_LEVEL });
  return assemblePng(opts.width, opts.height, new Uint8Array(idat.buffer, idat.byteOffset, idat.byteLength));
}

/**
 * Same bytes as {@link renderPng}, but the deflate step (most of the work) runs on the libuv thread
 * pool, keeping the event loop free; only rasterization runs on the calling thread.
 */
export async function renderPngAsync(opts: RenderImageOptions): Promise<Uint8Array> {
  const raw = scanlines(opts);
  const idat = await deflateAsync(raw, { level: PNG_ZLIB_LEVEL });
  return assemblePng(opts.width, opts.height, new Uint8Array(idat.buffer, idat.byteOffset, idat.byteLength));
}

// ---------------------------------------------------------------------------------------------------
// SVG
// ---------------------------------------------------------------------------------------------------

/** Escapes text for XML content/attributes and drops characters XML 1.0 forbids. */
function xmlText(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

function num(v: number): string {
  const r = Math.round(v * 100) / 100;
  return Object.is(r, -0) ? "0" : String(r);
}

function hex(c: Rgb): string {
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Renders the picture of `opts` as a standalone SVG document (UTF-8 text, `image/svg+xml`): an
 * `<svg xmlns=... width height viewBox="0 0 width height">` root with a `<title>` (the prompt, at most
 * 200 characters), a gradient background and the plan's shapes in pixel units. Deterministic; same
 * composition as {@link renderPng}. Throws `RangeError` for sizes that are not integers in 1..4096.
 */
export function renderSvg(opts: RenderImageOptions): string {
  checkSize(opts.width, opts.height);
  const w = opts.width;
  const h = opts.height;
  const unit = Math.min(w, h);
  const plan = planImage(opts);
  const g = gradientLine(w, h, plan.background.angle);
  const title = Array.from(opts.prompt.normalize("NFC")).slice(0, 200).join("");
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">`,
    `<title>${xmlText(title)}</title>`,
    `<defs><linearGradient id="bg" gradientUnits="userSpaceOnUse" x1="${num(g.x1)}" y1="${num(g.y1)}" x2="${num(g.x2)}" y2="${num(g.y2)}">` +
      `<stop offset="0" stop-color="${hex(plan.background.c0)}"/><stop offset="1" stop-color="${hex(plan.background.c1)}"/>` +
      `</linearGradient></defs>`,
    `<rect width="${w}" height="${h}" fill="url(#bg)"/>`,
  ];
  for (const s of plan.shapes) {
    const fill = `fill="${hex(s.color)}" fill-opacity="${num(s.alpha)}"`;
    switch (s.kind) {
      case "circle":
        out.push(`<circle cx="${num(s.cx * w)}" cy="${num(s.cy * h)}" r="${num(s.r * unit)}" ${fill}/>`);
        break;
      case "ring":
        out.push(
          `<circle cx="${num(s.cx * w)}" cy="${num(s.cy * h)}" r="${num(s.r * unit)}" fill="none" ` +
            `stroke="${hex(s.color)}" stroke-opacity="${num(s.alpha)}" stroke-width="${num(s.w * unit)}"/>`,
        );
        break;
      case "rect": {
        const cx = s.cx * w;
        const cy = s.cy * h;
        const hw = s.hw * unit;
        const hh = s.hh * unit;
        const deg = (s.angle * 180) / Math.PI;
        out.push(
          `<rect x="${num(cx - hw)}" y="${num(cy - hh)}" width="${num(2 * hw)}" height="${num(2 * hh)}" ` +
            `transform="rotate(${num(deg)} ${num(cx)} ${num(cy)})" ${fill}/>`,
        );
        break;
      }
      case "band": {
        // A long rectangle through the centre, offset along its normal, rotated by `angle`.
        const len = Math.hypot(w, h) + 2;
        const cx = w / 2 - Math.sin(s.angle) * s.offset * unit;
        const cy = h / 2 + Math.cos(s.angle) * s.offset * unit;
        const half = (s.w * unit) / 2;
        const deg = (s.angle * 180) / Math.PI;
        out.push(
          `<rect x="${num(cx - len / 2)}" y="${num(cy - half)}" width="${num(len)}" height="${num(2 * half)}" ` +
            `transform="rotate(${num(deg)} ${num(cx)} ${num(cy)})" ${fill}/>`,
        );
        break;
      }
      case "hill": {
        const steps = 96;
        const pts: string[] = [`M0 ${h}`];
        for (let i = 0; i <= steps; i++) {
          const x = i / steps;
          pts.push(`L${num(x * w)} ${num(ridgeAt(s.base, s.waves, x) * h)}`);
        }
        pts.push(`L${w} ${h}Z`);
        out.push(`<path d="${pts.join(" ")}" ${fill}/>`);
        break;
      }
    }
  }
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
