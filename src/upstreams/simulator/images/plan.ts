/**
 * Scene planning of the simulated images and video frames (issue 28: the picture shows the prompt).
 * A prompt (plus a seed, the image's index within the request and, for video frames, a time) becomes a
 * small scene plan:
 *
 * - subject: the motif named earliest in the prompt among lighthouse, animal (fox, cat, dog, wolf...),
 *   bird, mountain, city, sea (waves, boat), forest (trees), sun/moon/sky, car, flower and face/person;
 *   a prompt naming none gets an abstract composition seeded by the prompt. Scenery words the subject
 *   does not cover still show (sea, mountains or trees behind a lighthouse, a fox...).
 * - palette: the time of day from words (dawn/sunrise, day, dusk/sunset, night: sky, sun or moon and
 *   stars, lit windows), the ground from words (snow, sand, sea, grass) and the subject's colour from
 *   colour words ("red", "blue", "golden"...); what the words leave open is seeded.
 * - composition: placement, sizes and counts seeded by (prompt, seed, index).
 * - the prompt itself, written on the picture (see `font.ts`; drawn by `raster.ts` and `svg.ts`).
 * - motion (`timeSec`, video frames): the sun or moon moves, clouds drift, hills pan with parallax,
 *   waves roll, a lighthouse beam turns, cars and boats travel, tails sway, stars twinkle.
 *
 * Deterministic; no `Math.random`. Coordinates are normalized (x in 0..1 of the width, y in 0..1 of the
 * height, lengths relative to the shorter side), so a plan looks the same at any size; motifs keep
 * their proportions at any aspect ratio (the plan knows it from `width`/`height`).
 */
import { createRng, type Rng, seedFrom } from "../rng.ts";

/** Options of {@link renderPng} and {@link renderSvg}. */
export interface RenderImageOptions {
  /** The prompt: its words pick subject and palette, its hash the rest; it is written on the picture. */
  prompt: string;
  /** Output size in pixels, integers 1..4096 (rendered exactly). */
  width: number;
  height: number;
  /** Extra seed material (for example the model id and a pass-through `seed`); default "". */
  seed?: string | number;
  /** Index of the image within one request (0-based): each index gives a different variation. */
  index?: number;
  /** Time in seconds of a video frame (default 0: a still picture); moves the scene, see the module comment. */
  timeSec?: number;
}

/** An RGB colour, each channel 0..255. */
export type Rgb = readonly [number, number, number];

/** A shape of the plan (normalized coordinates, see the module comment). `alpha` is 0..1. */
export type Shape =
  | { kind: "circle"; cx: number; cy: number; r: number; color: Rgb; alpha: number }
  | { kind: "ring"; cx: number; cy: number; r: number; w: number; color: Rgb; alpha: number }
  | { kind: "rect"; cx: number; cy: number; hw: number; hh: number; angle: number; color: Rgb; alpha: number }
  | { kind: "band"; offset: number; w: number; angle: number; color: Rgb; alpha: number }
  | { kind: "hill"; base: number; waves: readonly Wave[]; color: Rgb; alpha: number }
  /** An ellipse: radii `rx`, `ry` (relative to the shorter side) rotated by `angle` radians. */
  | { kind: "ellipse"; cx: number; cy: number; rx: number; ry: number; angle: number; color: Rgb; alpha: number }
  /** A polygon: vertices as x, y pairs (normalized like `cx`, `cy`). */
  | { kind: "poly"; pts: readonly number[]; color: Rgb; alpha: number };

/** One sine of a hill ridge: `amp x sin(2 pi (freq x + phase))`, amp relative to the height. */
export interface Wave {
  amp: number;
  freq: number;
  phase: number;
}

/** A linear gradient from `c0` to `c1` along direction `angle` (radians, in pixel space). */
export interface Gradient {
  c0: Rgb;
  c1: Rgb;
  angle: number;
}

/** The subjects a prompt can name (see the module comment); `abstract` when it names none. */
export type Motif =
  | "lighthouse"
  | "animal"
  | "bird"
  | "mountain"
  | "city"
  | "sea"
  | "forest"
  | "sky"
  | "car"
  | "flower"
  | "face"
  | "abstract";

/** A scene: its subject, background gradient, shapes back to front, and the caption (the prompt). */
export interface ImagePlan {
  motif: Motif;
  background: Gradient;
  shapes: Shape[];
  caption: string;
}

/** Subject words; the motif whose word comes first in the prompt wins. */
const MOTIF_WORDS: readonly (readonly [Motif, RegExp])[] = [
  ["lighthouse", /\b(lighthouses?|beacon)\b/],
  ["animal", /\b(fox|foxes|cats?|kittens?|dogs?|pupp(y|ies)|wolf|wolves|bears?|deer|horses?|animals?|rabbits?|lions?|tigers?)\b/],
  ["bird", /\b(birds?|eagles?|owls?|parrots?|seagulls?|gulls?|crows?)\b/],
  ["mountain", /\b(mountains?|peaks?|alps|summit|volcano(es)?|hills?)\b/],
  ["city", /\b(city|cities|skyline|town|streets?|buildings?|skyscrapers?|downtown|urban)\b/],
  ["sea", /\b(seas?|ocean|waves?|beach|boats?|ships?|sail(ing|boat)?s?|harbou?r|coast|surf)\b/],
  ["forest", /\b(forests?|trees?|woods?|pines?|jungle)\b/],
  ["sky", /\b(sun|moon|stars?|sky|galaxy|planets?|eclipse)\b/],
  ["car", /\b(cars?|vehicles?|trucks?|bus|taxi|automobiles?)\b/],
  ["flower", /\b(flowers?|roses?|tulips?|garden|bloom|blossoms?|daisy|daisies|sunflowers?)\b/],
  ["face", /\b(faces?|portrait|person|people|man|woman|girl|boy|child|astronaut|selfie|robot)\b/],
];

/** Hue (degrees) named by colour words; the first match wins. */
const HUE_WORDS: readonly (readonly [RegExp, number])[] = [
  [/\b(red|crimson|scarlet|fire|ruby)\b/, 2],
  [/\b(orange|autumn|amber|copper)\b/, 26],
  [/\b(yellow|gold|golden|lemon)\b/, 48],
  [/\b(green|emerald|lime)\b/, 120],
  [/\b(teal|turquoise|cyan|aqua)\b/, 178],
  [/\b(blue|sapphire|navy)\b/, 215],
  [/\b(purple|violet|lavender|amethyst)\b/, 275],
  [/\b(pink|magenta|rose|flamingo)\b/, 325],
];

/** Time-of-day words. */
const DAWN = /\b(dawn|sunrise|morning|daybreak)\b/;
const DUSK = /\b(dusk|sunset|evening|twilight|golden hour)\b/;
const NIGHT = /\b(night|midnight|moon(lit)?|stars?|starry|dark|noir)\b/;
const DAY = /\b(day|noon|sunny|summer|bright|daylight)\b/;
const SNOW = /\b(snow|snowy|winter|ice|icy|frozen|arctic)\b/;
const SAND = /\b(desert|sand|sandy|dunes?)\b/;
const PASTEL = /\b(pastel|soft|dreamy)\b/;

type TimeOfDay = "dawn" | "day" | "dusk" | "night";

/** HSL (h degrees, s and l in 0..1) to RGB 0..255. */
export function hsl(h: number, s: number, l: number): Rgb {
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

/** The colour `t` (0..1) of the way from `a` to `b`. */
function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return [
    Math.round(a[0] + (b[0] - a[0]) * t),
    Math.round(a[1] + (b[1] - a[1]) * t),
    Math.round(a[2] + (b[2] - a[2]) * t),
  ];
}

/** `c` darkened (k < 1) or brightened (k > 1), clamped. */
function shade(c: Rgb, k: number): Rgb {
  return [Math.min(255, Math.round(c[0] * k)), Math.min(255, Math.round(c[1] * k)), Math.min(255, Math.round(c[2] * k))];
}

/** A value in `lo..hi` from one draw of `rng`. */
function between(rng: Rng, lo: number, hi: number): number {
  return lo + (hi - lo) * rng();
}

/** The colours of a scene (abstract compositions): base hue (degrees), saturation and lightness (0..1), accent hue. */
interface Colours {
  hue: number;
  sat: number;
  light: number;
  night: boolean;
  accentHue: number;
}

const WHITE: Rgb = [255, 255, 255];
const DARK: Rgb = [34, 30, 36];

/** Shapes in normalized coordinates, with motif offsets in units of the shorter side. */
class Scene {
  readonly shapes: Shape[] = [];
  /** Normalized length of one unit (the shorter side) along x and y. */
  readonly kx: number;
  readonly ky: number;
  /** Multiplier of ground and motif colours (darker at night). */
  readonly light: number;

  constructor(width: number, height: number, light: number) {
    const unit = Math.min(width, height);
    this.kx = unit / width;
    this.ky = unit / height;
    this.light = light;
  }

  circle(x: number, y: number, r: number, color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "circle", cx: x, cy: y, r, color, alpha });
  }
  ellipse(x: number, y: number, rx: number, ry: number, angle: number, color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "ellipse", cx: x, cy: y, rx, ry, angle, color, alpha });
  }
  rect(x: number, y: number, hw: number, hh: number, angle: number, color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "rect", cx: x, cy: y, hw, hh, angle, color, alpha });
  }
  /** A polygon around (x, y) with vertex offsets `d` (pairs, units of the shorter side). */
  poly(x: number, y: number, d: readonly number[], color: Rgb, alpha = 1): void {
    const pts: number[] = [];
    for (let i = 0; i < d.length; i += 2) pts.push(x + d[i] * this.kx, y + d[i + 1] * this.ky);
    this.shapes.push({ kind: "poly", pts, color, alpha });
  }
  hill(base: number, waves: readonly Wave[], color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "hill", base, waves, color, alpha });
  }
  /** x moved by `d` units. */
  dx(x: number, d: number): number {
    return x + d * this.kx;
  }
  /** y moved by `d` units. */
  dy(y: number, d: number): number {
    return y + d * this.ky;
  }
  /** `c` at the scene's light. */
  lit(c: Rgb): Rgb {
    return shade(c, this.light);
  }
}

/** What the motif painters share. */
interface Ctx {
  s: Scene;
  rng: Rng;
  t: number;
  tod: TimeOfDay;
  /** Hue of a colour word, or null. */
  hue: number | null;
  /** The horizon (normalized y). */
  horizon: number;
  snow: boolean;
  text: string;
}

/** The motif named earliest in `text`, or `abstract`. */
export function motifOf(text: string): Motif {
  let best: Motif = "abstract";
  let at = Number.POSITIVE_INFINITY;
  for (const [motif, re] of MOTIF_WORDS) {
    const m = re.exec(text);
    if (m && m.index < at) {
      at = m.index;
      best = motif;
    }
  }
  return best;
}

/** The deterministic scene plan of `opts` (independent of the output size except for its aspect ratio). */
export function planImage(opts: RenderImageOptions): ImagePlan {
  const text = opts.prompt.normalize("NFC").toLowerCase();
  const index = opts.index ?? 0;
  const t = Number.isFinite(opts.timeSec) ? (opts.timeSec as number) : 0;
  const styleRng = createRng(seedFrom("image-style", text, String(opts.seed ?? "")));
  const rng = createRng(seedFrom("image", text, String(opts.seed ?? ""), String(index)));
  const motif = motifOf(text);
  let hue: number | null = null;
  for (const [re, h] of HUE_WORDS) {
    if (re.test(text)) {
      hue = h;
      break;
    }
  }
  if (motif === "abstract") {
    let base = hue ?? styleRng() * 360;
    base += (rng() - 0.5) * 30;
    const night = NIGHT.test(text);
    const pastel = PASTEL.test(text);
    const sat = pastel ? 0.45 : between(styleRng, 0.55, 0.85);
    const light = night ? 0.22 : pastel ? 0.78 : 0.55;
    const accentHue = base + (styleRng() < 0.5 ? 150 : 200) + (rng() - 0.5) * 30;
    const plan = planAbstract({ hue: base, sat, light, night, accentHue }, rng, t);
    return { ...plan, caption: opts.prompt };
  }
  const tod: TimeOfDay = DAWN.test(text)
    ? "dawn"
    : DUSK.test(text)
      ? "dusk"
      : NIGHT.test(text)
        ? "night"
        : DAY.test(text)
          ? "day"
          : (["day", "day", "dawn", "dusk", "night"] as const)[Math.floor(styleRng() * 5)];
  const scene = new Scene(opts.width, opts.height, tod === "night" ? 0.42 : tod === "day" ? 1 : 0.82);
  const horizon = motif === "face" ? 0.75 : between(rng, 0.58, 0.68);
  const ctx: Ctx = { s: scene, rng, t, tod, hue, horizon, snow: SNOW.test(text), text };
  const background = sky(ctx, motif);
  const seaGround = motif === "lighthouse" || motif === "sea" || MOTIF_WORDS[5][1].test(text);
  if (motif !== "city" && motif !== "face" && (motif === "mountain" || MOTIF_WORDS[3][1].test(text))) mountains(ctx, motif === "mountain");
  if (motif !== "face" && motif !== "city" && !seaGround) hills(ctx);
  if (motif === "city" || MOTIF_WORDS[4][1].test(text)) skyline(ctx, motif === "city");
  if (seaGround && motif !== "face") sea(ctx);
  else if (motif !== "face") ground(ctx, SAND.test(text));
  if (motif !== "forest" && motif !== "face" && MOTIF_WORDS[6][1].test(text)) trees(ctx, false);
  switch (motif) {
    case "lighthouse":
      lighthouse(ctx);
      break;
    case "animal":
      animal(ctx);
      break;
    case "bird":
      birds(ctx, 3);
      break;
    case "sea":
      boat(ctx);
      break;
    case "forest":
      trees(ctx, true);
      break;
    case "sky":
      bigSky(ctx);
      break;
    case "car":
      car(ctx);
      break;
    case "flower":
      flowers(ctx);
      break;
    case "face":
      face(ctx);
      break;
    default:
      break;
  }
  if (motif !== "bird" && motif !== "face" && MOTIF_WORDS[2][1].test(text)) birds(ctx, 2);
  return { motif, background, shapes: scene.shapes, caption: opts.prompt };
}

/** Sky gradient, stars, sun or moon, clouds; returns the background. */
function sky(c: Ctx, motif: Motif): Gradient {
  const { s, rng, t, tod } = c;
  const tint = c.hue !== null && (motif === "mountain" || motif === "sea" || motif === "sky" || motif === "forest") ? c.hue : null;
  let top: Rgb;
  let bottom: Rgb;
  switch (tod) {
    case "dawn":
      top = hsl(225, 0.45, 0.42);
      bottom = hsl(tint ?? 22, 0.85, 0.76);
      break;
    case "dusk":
      top = hsl(262, 0.45, 0.3);
      bottom = hsl(tint ?? 28, 0.9, 0.6);
      break;
    case "night":
      top = hsl(232, 0.6, 0.07);
      bottom = hsl(tint ?? 222, 0.45, 0.24);
      break;
    default:
      top = hsl(tint ?? 208, 0.65, 0.48);
      bottom = hsl(tint === null ? 198 : tint + 10, 0.55, 0.84);
  }
  if (motif === "face") {
    // A studio backdrop rather than a sky.
    const h = c.hue ?? rng() * 360;
    return { c0: hsl(h, 0.35, tod === "night" ? 0.2 : 0.62), c1: hsl(h + 30, 0.3, tod === "night" ? 0.1 : 0.38), angle: Math.PI / 2 };
  }
  if (tod === "night") {
    const stars = 40 + Math.floor(rng() * 40);
    for (let i = 0; i < stars; i++) {
      const x = rng();
      const y = rng() * c.horizon * 0.9;
      const tw = 0.55 + 0.45 * Math.sin(t * (2 + rng() * 3) + i);
      s.circle(x, y, between(rng, 0.0015, 0.004), [255, 252, 235], tw);
    }
  }
  if (motif !== "sky") {
    const night = tod === "night";
    const sunX = between(rng, 0.15, 0.85) + 0.012 * t;
    let sunY = tod === "day" || night ? between(rng, 0.12, 0.3) : c.horizon - between(rng, 0.06, 0.16);
    if (tod === "dawn") sunY -= 0.008 * t;
    if (tod === "dusk") sunY += 0.008 * t;
    const r = between(rng, 0.05, 0.08);
    const col: Rgb = night ? [244, 242, 226] : tod === "day" ? [255, 246, 200] : [255, 214, 140];
    s.circle(sunX, sunY, r * 2.2, col, 0.12);
    s.circle(sunX, sunY, r * 1.4, col, 0.18);
    s.circle(sunX, sunY, r, col, 1);
    if (night) s.circle(s.dx(sunX, r * 0.45), s.dy(sunY, -r * 0.2), r * 0.85, mix(top, bottom, sunY / c.horizon), 1);
  }
  if (tod !== "night") {
    const clouds = 1 + Math.floor(rng() * 3);
    for (let i = 0; i < clouds; i++) {
      const x = ((between(rng, -0.1, 1.1) + 0.015 * t + 1.3) % 1.3) - 0.15;
      const y = between(rng, 0.08, c.horizon * 0.55);
      const k = between(rng, 0.6, 1.2);
      const col: Rgb = tod === "day" ? [250, 250, 252] : mix(bottom, WHITE, 0.55);
      for (let j = 0; j < 4; j++) s.ellipse(s.dx(x, (j - 1.5) * 0.06 * k), s.dy(y, -Math.sin((j / 3) * Math.PI) * 0.03 * k), 0.07 * k, 0.035 * k, 0, col, 0.85);
    }
  }
  return { c0: top, c1: bottom, angle: Math.PI / 2 };
}

/** Two layers of rolling hills behind the ground; they pan with parallax in video. */
function hills(c: Ctx): void {
  const { s, rng, t } = c;
  for (let i = 0; i < 2; i++) {
    const waves: Wave[] = [];
    for (let k = 0; k < 3; k++) {
      waves.push({ amp: between(rng, 0.01, 0.04) / (k + 1), freq: between(rng, 0.6, 2) * (k + 1), phase: rng() + t * 0.01 * (i + 1) });
    }
    const base: Rgb = c.snow ? hsl(210, 0.2, 0.8 - i * 0.08) : hsl(120 + i * 15 + (rng() - 0.5) * 40, 0.35, 0.42 - i * 0.08);
    s.hill(c.horizon - 0.05 + i * 0.03, waves, s.lit(mix(base, hsl(220, 0.3, 0.6), 0.35 - i * 0.15)));
  }
}

/** Triangular peaks with snow caps on the horizon; big ones when the mountain is the subject. */
function mountains(c: Ctx, big: boolean): void {
  const { s, rng, t } = c;
  const n = big ? 3 : 2 + Math.floor(rng() * 2);
  for (let i = 0; i < n; i++) {
    const x = between(rng, 0.1, 0.9) - 0.004 * t;
    const h = big ? between(rng, 0.28, 0.45) : between(rng, 0.15, 0.25);
    const w = h * between(rng, 0.9, 1.4);
    const rock = s.lit(hsl(220 + (rng() - 0.5) * 30, 0.15, 0.38 + i * 0.05));
    const peak = between(rng, -0.2, 0.2) * w;
    s.poly(x, c.horizon + 0.01, [-w, 0, peak, -h, w, 0], rock);
    s.poly(x, c.horizon + 0.01, [peak - w * 0.32, -h * 0.68, peak, -h, peak + w * 0.32, -h * 0.68, peak + w * 0.1, -h * 0.62, peak - w * 0.1, -h * 0.7], s.lit([246, 248, 252]));
  }
}

/** The foreground: snow, sand or grass below the horizon. */
function ground(c: Ctx, sand: boolean): void {
  const { s, rng, t } = c;
  const col: Rgb = c.snow ? [236, 242, 250] : sand ? hsl(40, 0.55, 0.68) : hsl(105 + (rng() - 0.5) * 30, 0.45, 0.38);
  const waves: Wave[] = [{ amp: 0.012, freq: between(rng, 0.5, 1.5), phase: rng() + t * 0.02 }];
  s.hill(c.horizon, waves, s.lit(col));
  s.hill(c.horizon + 0.12, [{ amp: 0.015, freq: between(rng, 0.8, 2), phase: rng() + t * 0.04 }], s.lit(shade(col, 0.9)));
}

/** Sea from the horizon down: rolling wave bands and the sun's reflection. */
function sea(c: Ctx): void {
  const { s, rng, t } = c;
  const water = s.lit(c.tod === "day" ? hsl(205, 0.6, 0.42) : c.tod === "night" ? hsl(225, 0.5, 0.3) : hsl(250, 0.3, 0.42));
  s.hill(c.horizon, [], water);
  for (let i = 0; i < 6; i++) {
    const y = c.horizon + 0.02 + ((1 - c.horizon) * (i + 0.5)) / 6;
    const amp = 0.004 + i * 0.002;
    const col = shade(water, i % 2 === 0 ? 1.18 : 0.9);
    s.hill(y, [{ amp, freq: 3 + i, phase: rng() + t * (0.15 + i * 0.05) }, { amp: amp / 2, freq: 7 + i, phase: rng() - t * 0.2 }], col, 0.7);
  }
  if (c.tod !== "day") {
    for (let i = 0; i < 5; i++) {
      const y = c.horizon + 0.02 + i * 0.035;
      s.ellipse(0.5 + Math.sin(t * 2 + i) * 0.01, y, 0.08 - i * 0.01, 0.004, 0, [255, 226, 170], 0.5);
    }
  }
}

/** A city skyline on the horizon: buildings with windows (lit at night); the subject, or far behind. */
function skyline(c: Ctx, big: boolean): void {
  const { s, rng, t } = c;
  const n = big ? 9 + Math.floor(rng() * 5) : 7;
  const base = c.horizon + (big ? 0.08 : 0.005);
  const hue = c.hue ?? 220 + (rng() - 0.5) * 40;
  const pan = big ? -0.006 * t : 0;
  for (let i = 0; i < n; i++) {
    const x = (i + 0.5) / n + (rng() - 0.5) * 0.04 + pan;
    const hw = (0.5 / n) * between(rng, 0.65, 0.95);
    const h = (big ? between(rng, 0.18, 0.45) : between(rng, 0.05, 0.14)) * (c.horizon / 0.62);
    const wall = s.lit(hsl(hue, c.hue === null ? 0.12 : 0.35, between(rng, 0.28, 0.5)));
    s.rect(x, base - h / 2, hw, h / 2, 0, wall);
    if (!big) continue;
    const cols = 3;
    const rows = Math.min(8, Math.floor(h / 0.05));
    const lit: Rgb = c.tod === "night" || c.tod === "dusk" ? [255, 214, 120] : [190, 215, 240];
    for (let r = 0; r < rows; r++) {
      for (let k = 0; k < cols; k++) {
        const on = rng() < (c.tod === "day" ? 0.9 : 0.6);
        if (!on) continue;
        s.rect(x - hw + ((k + 0.5) * 2 * hw) / cols, base - h + 0.03 + r * 0.05, (hw / cols) * 0.45, 0.012, 0, lit, 0.9);
      }
    }
  }
  if (big) {
    s.rect(0.5, (base + 1) / 2, 0.5, (1 - base) / 2 + 0.01, 0, s.lit([60, 62, 70]));
    for (let i = 0; i < 8; i++) s.rect(((i / 8 + t * 0.05) % 1) + 0.02, (base + 1) / 2, 0.025, 0.004, 0, [230, 220, 160], 0.8);
  }
}

/** A striped lighthouse on rocks, with a turning beam. */
function lighthouse(c: Ctx): void {
  const { s, rng, t } = c;
  const x = between(rng, 0.28, 0.72);
  const baseY = c.horizon + 0.1;
  const h = 0.5;
  const stripe: Rgb = c.hue !== null ? hsl(c.hue, 0.75, 0.48) : [200, 40, 40];
  for (let i = 0; i < 3; i++) s.ellipse(s.dx(x, (i - 1) * 0.09), s.dy(baseY, 0.02), 0.1, 0.045, 0, s.lit(hsl(30, 0.08, 0.28 + i * 0.05)));
  const bw = 0.065;
  const tw = 0.042;
  const bands = 6;
  for (let i = 0; i < bands; i++) {
    const y0 = -(h * i) / bands;
    const y1 = -(h * (i + 1)) / bands;
    const w0 = bw + ((tw - bw) * i) / bands;
    const w1 = bw + ((tw - bw) * (i + 1)) / bands;
    s.poly(x, baseY, [-w0, y0, w0, y0, w1, y1, -w1, y1], s.lit(i % 2 === 0 ? [244, 242, 236] : stripe));
  }
  const top = s.dy(baseY, -h);
  s.rect(x, s.dy(top, -0.006), tw + 0.018, 0.008, 0, s.lit(DARK));
  const lamp = s.dy(top, -0.04);
  s.rect(x, lamp, tw * 0.8, 0.032, 0, [255, 236, 150]);
  s.poly(x, s.dy(lamp, -0.032), [-(tw + 0.01), 0, tw + 0.01, 0, 0, -0.05], s.lit(shade(stripe, 0.7)));
  const beam = between(rng, 0, Math.PI * 2) + t * 1.2;
  const len = 0.9;
  for (const a of [beam, beam + Math.PI]) {
    const dirx = Math.cos(a);
    const diry = Math.sin(a) * 0.25;
    const nx = -diry;
    const ny = dirx;
    const spread = 0.1 * Math.abs(dirx) + 0.02;
    s.poly(x, lamp, [0, 0, dirx * len + nx * spread, diry * len + ny * spread, dirx * len - nx * spread, diry * len - ny * spread], [255, 244, 190], c.tod === "night" ? 0.35 : 0.18);
  }
}

/** A four-legged animal standing on the ground (a fox unless the words say otherwise), its tail swaying. */
function animal(c: Ctx): void {
  const { s, rng, t, text } = c;
  const dir = rng() < 0.5 ? -1 : 1;
  const x = between(rng, 0.3, 0.7) + dir * 0.01 * t;
  const y = c.horizon + between(rng, 0.1, 0.18);
  let fur: Rgb = hsl(22, 0.85, 0.5);
  if (/\b(wolf|wolves)\b/.test(text)) fur = [130, 130, 138];
  else if (/\b(bears?)\b/.test(text)) fur = [98, 66, 44];
  else if (/\b(dogs?|pupp(y|ies)|deer|horses?)\b/.test(text)) fur = [150, 104, 62];
  else if (/\b(cats?|kittens?)\b/.test(text)) fur = [90, 90, 96];
  else if (/\b(lions?|tigers?)\b/.test(text)) fur = hsl(36, 0.75, 0.5);
  if (c.hue !== null) fur = hsl(c.hue, 0.8, 0.48);
  fur = s.lit(fur);
  const dark = s.lit(DARK);
  const light = s.lit([246, 240, 230]);
  const k = 1.15;
  // tail
  const sway = Math.sin(t * 3) * 0.2;
  const tailA = dir * (0.5 + sway);
  s.ellipse(s.dx(x, -dir * 0.2 * k), s.dy(y, -0.06 * k), 0.11 * k, 0.04 * k, tailA, fur);
  s.ellipse(s.dx(x, -dir * 0.29 * k), s.dy(y, -0.06 * k - Math.sin(tailA) * 0.09 * k * dir), 0.035 * k, 0.025 * k, tailA, light);
  // legs
  for (const lx of [-0.1, -0.06, 0.07, 0.11]) {
    const step = Math.sin(t * 6 + lx * 30) * 0.01;
    s.rect(s.dx(x, (lx + step) * k), s.dy(y, 0.04 * k), 0.012 * k, 0.045 * k, 0, dark);
  }
  s.ellipse(x, s.dy(y, -0.02 * k), 0.15 * k, 0.065 * k, 0, fur);
  s.ellipse(s.dx(x, dir * 0.08 * k), s.dy(y, -0.005 * k), 0.05 * k, 0.04 * k, 0, light, 0.9);
  const hx = s.dx(x, dir * 0.15 * k);
  const hy = s.dy(y, -0.1 * k);
  s.poly(hx, hy, [-0.04 * k, -0.02 * k, -0.025 * k, -0.085 * k, 0, -0.03 * k], fur);
  s.poly(hx, hy, [0.04 * k, -0.02 * k, 0.025 * k, -0.085 * k, 0, -0.03 * k], fur);
  s.circle(hx, hy, 0.048 * k, fur);
  s.poly(hx, hy, [0, -0.02 * k, dir * 0.085 * k, 0.015 * k, 0, 0.03 * k], fur);
  s.circle(s.dx(hx, dir * 0.085 * k), s.dy(hy, 0.015 * k), 0.008 * k, dark);
  s.circle(s.dx(hx, dir * 0.02 * k), s.dy(hy, -0.012 * k), 0.008 * k, dark);
}

/** Birds in flight (wings beating), crossing the sky. */
function birds(c: Ctx, n: number): void {
  const { s, rng, t } = c;
  const col = s.lit(c.hue !== null ? hsl(c.hue, 0.7, 0.4) : DARK);
  for (let i = 0; i < n; i++) {
    const k = n === 3 && i === 0 ? 2.2 : between(rng, 0.6, 1.1);
    const x = ((between(rng, 0.1, 0.9) + 0.03 * t * k) % 1.2) - 0.1;
    const y = between(rng, 0.12, c.horizon * 0.6);
    const flap = Math.sin(t * 8 + i) * 0.03 * k;
    s.ellipse(x, y, 0.03 * k, 0.012 * k, 0, col);
    s.poly(x, y, [-0.005 * k, 0, -0.06 * k, -0.02 * k - flap, -0.02 * k, 0.005 * k], col);
    s.poly(x, y, [0.005 * k, 0, 0.06 * k, -0.02 * k - flap, 0.02 * k, 0.005 * k], col);
  }
}

/** A sailing boat on the sea, drifting across. */
function boat(c: Ctx): void {
  const { s, rng, t } = c;
  const x = between(rng, 0.25, 0.75) + 0.02 * t;
  const y = c.horizon + between(rng, 0.1, 0.18) + Math.sin(t * 2) * 0.004;
  const hull: Rgb = s.lit(c.hue !== null ? hsl(c.hue, 0.7, 0.42) : [120, 60, 40]);
  s.poly(x, y, [-0.14, 0, 0.14, 0, 0.1, 0.045, -0.1, 0.045], hull);
  s.rect(x, s.dy(y, -0.13), 0.005, 0.13, 0, s.lit(DARK));
  s.poly(x, y, [0.008, -0.25, 0.008, -0.015, 0.12, -0.015], s.lit([248, 246, 238]));
  s.poly(x, y, [-0.008, -0.2, -0.008, -0.015, -0.09, -0.015], s.lit([236, 232, 224]));
}

/** Pine trees along the ground: many and large when trees are the subject, a few in the distance otherwise. */
function trees(c: Ctx, big: boolean): void {
  const { s, rng, t } = c;
  const n = big ? 6 + Math.floor(rng() * 4) : 3;
  const items: { x: number; y: number; h: number }[] = [];
  for (let i = 0; i < n; i++) {
    items.push({
      x: between(rng, 0.03, 0.97) - (big ? 0.005 * t : 0),
      y: c.horizon + (big ? between(rng, 0.02, 0.25) : 0.01),
      h: big ? between(rng, 0.2, 0.42) : between(rng, 0.08, 0.14),
    });
  }
  items.sort((a, b) => a.y - b.y);
  const green = c.hue !== null ? c.hue : 140;
  for (const it of items) {
    const col = s.lit(hsl(green + (rng() - 0.5) * 20, 0.45, 0.24 + rng() * 0.08));
    s.rect(it.x, s.dy(it.y, -0.03 * it.h), 0.012 * it.h * 3, 0.05 * it.h, 0, s.lit([90, 60, 40]));
    for (let k = 0; k < 3; k++) {
      const base = s.dy(it.y, -(0.05 + k * 0.28) * it.h);
      const w = (0.36 - k * 0.08) * it.h;
      s.poly(it.x, base, [-w, 0, w, 0, Math.sin(t * 1.5 + it.x * 9) * 0.01, -0.45 * it.h], col);
      if (c.snow) s.poly(it.x, base, [-w * 0.3, -0.3 * it.h, w * 0.3, -0.3 * it.h, 0, -0.45 * it.h], [245, 248, 252], 0.9);
    }
  }
}

/** A big sun with turning rays (by day) or a big moon and more stars (at night). */
function bigSky(c: Ctx): void {
  const { s, rng, t } = c;
  const x = between(rng, 0.35, 0.65);
  const y = between(rng, 0.28, 0.38);
  if (c.tod === "night") {
    s.circle(x, y, 0.2, [246, 244, 228], 0.1);
    s.circle(x, y, 0.13, [246, 244, 228]);
    for (let i = 0; i < 5; i++) s.circle(s.dx(x, between(rng, -0.08, 0.08)), s.dy(y, between(rng, -0.08, 0.08)), between(rng, 0.01, 0.025), [214, 212, 200]);
    return;
  }
  const col: Rgb = c.hue !== null ? hsl(c.hue, 0.9, 0.62) : [255, 206, 90];
  const rays = 12;
  for (let i = 0; i < rays; i++) {
    const a = (i / rays) * Math.PI * 2 + t * 0.4;
    s.rect(s.dx(x, Math.cos(a) * 0.21), s.dy(y, Math.sin(a) * 0.21), 0.05, 0.012, a, col, 0.9);
  }
  s.circle(x, y, 0.22, col, 0.15);
  s.circle(x, y, 0.15, col);
}

/** A car on a road, driving across. */
function car(c: Ctx): void {
  const { s, rng, t } = c;
  const roadY = Math.min(0.9, c.horizon + 0.2);
  s.rect(0.5, roadY, 0.6, 0.06, 0, s.lit([70, 72, 78]));
  for (let i = 0; i < 6; i++) s.rect(((i / 6 + t * 0.12) % 1.1) - 0.05, roadY, 0.03, 0.005, 0, [240, 236, 200]);
  const dir = rng() < 0.5 ? -1 : 1;
  const x = ((between(rng, 0.3, 0.7) + dir * 0.05 * t + 1.4) % 1.4) - 0.2;
  const y = s.dy(roadY, -0.02);
  const body: Rgb = s.lit(c.hue !== null ? hsl(c.hue, 0.8, 0.46) : hsl(rng() * 360, 0.7, 0.45));
  s.rect(x, s.dy(y, -0.05), 0.2, 0.045, 0, body);
  s.poly(x, s.dy(y, -0.09), [-0.12, 0.005, -0.07, -0.07, 0.07, -0.07, 0.13, 0.005], body);
  const glass: Rgb = s.lit([170, 205, 230]);
  s.poly(x, s.dy(y, -0.09), [-0.105, -0.002, -0.065, -0.058, -0.005, -0.058, -0.005, -0.002], glass);
  s.poly(x, s.dy(y, -0.09), [0.005, -0.002, 0.005, -0.058, 0.062, -0.058, 0.11, -0.002], glass);
  for (const wx of [-0.12, 0.12]) {
    s.circle(s.dx(x, wx), y, 0.045, s.lit(DARK));
    s.circle(s.dx(x, wx), y, 0.02, s.lit([180, 180, 186]));
  }
  s.circle(s.dx(x, dir * 0.195), s.dy(y, -0.06), 0.012, [255, 240, 180]);
}

/** One to three flowers with petals and leaves, swaying. */
function flowers(c: Ctx): void {
  const { s, rng, t } = c;
  const n = 1 + Math.floor(rng() * 3);
  for (let i = 0; i < n; i++) {
    const x = n === 1 ? between(rng, 0.4, 0.6) : (i + 0.5) / n + (rng() - 0.5) * 0.08;
    const baseY = Math.min(0.98, c.horizon + 0.3);
    const h = between(rng, 0.35, 0.55);
    const sway = Math.sin(t * 1.5 + i) * 0.02;
    const hx = s.dx(x, sway);
    const hy = s.dy(baseY, -h);
    const stem = s.lit(hsl(110, 0.5, 0.32));
    s.poly(x, baseY, [-0.008, 0, 0.008, 0, sway + 0.008, -h, sway - 0.008, -h], stem);
    s.ellipse(s.dx(x, 0.05), s.dy(baseY, -h * 0.35), 0.055, 0.02, -0.5, stem);
    s.ellipse(s.dx(x, -0.05), s.dy(baseY, -h * 0.5), 0.055, 0.02, 0.5, stem);
    const petal: Rgb = s.lit(c.hue !== null ? hsl(c.hue + (rng() - 0.5) * 16, 0.8, 0.6) : hsl([330, 355, 48, 280, 10][Math.floor(rng() * 5)], 0.8, 0.6));
    const petals = 5 + Math.floor(rng() * 4);
    const r = between(rng, 0.07, 0.1) * (n === 1 ? 1.4 : 1);
    for (let k = 0; k < petals; k++) {
      const a = (k / petals) * Math.PI * 2 + t * 0.2;
      s.ellipse(s.dx(hx, Math.cos(a) * r * 0.9), s.dy(hy, Math.sin(a) * r * 0.9), r * 0.75, r * 0.38, a, petal);
    }
    s.circle(hx, hy, r * 0.45, s.lit([250, 200, 60]));
  }
}

/** A head-and-shoulders portrait that blinks. */
function face(c: Ctx): void {
  const { s, rng, t, text } = c;
  const x = between(rng, 0.42, 0.58);
  const y = 0.42;
  const skins: Rgb[] = [
    [241, 205, 180],
    [224, 172, 130],
    [180, 126, 90],
    [120, 80, 56],
  ];
  const robot = /\brobot\b/.test(text);
  const skin: Rgb = s.lit(robot ? [186, 192, 200] : skins[Math.floor(rng() * skins.length)]);
  const hairs: Rgb[] = [
    [40, 30, 24],
    [110, 70, 40],
    [200, 160, 90],
    [150, 60, 30],
  ];
  const hair: Rgb = s.lit(robot ? [120, 126, 136] : hairs[Math.floor(rng() * hairs.length)]);
  const shirt: Rgb = s.lit(c.hue !== null ? hsl(c.hue, 0.7, 0.45) : hsl(rng() * 360, 0.5, 0.45));
  const long = rng() < 0.5;
  s.ellipse(x, s.dy(y, 0.5), 0.36, 0.2, 0, shirt);
  s.rect(x, s.dy(y, 0.22), 0.06, 0.08, 0, shade(skin, 0.92));
  if (long) s.ellipse(x, s.dy(y, 0.1), 0.2, 0.28, 0, hair);
  s.ellipse(x, y, 0.17, 0.22, 0, skin);
  s.ellipse(x, s.dy(y, -0.15), 0.18, 0.1, 0, hair);
  const blink = (t % 3) > 2.85 ? 0.15 : 1;
  for (const ex of [-0.065, 0.065]) {
    s.ellipse(s.dx(x, ex), s.dy(y, -0.02), 0.035, 0.02 * blink, 0, [250, 250, 250]);
    if (blink === 1) s.circle(s.dx(x, ex + Math.sin(t) * 0.008), s.dy(y, -0.02), 0.014, robot ? [40, 160, 240] : [50, 40, 36]);
    s.rect(s.dx(x, ex), s.dy(y, -0.07), 0.04, 0.007, 0, hair);
  }
  s.ellipse(x, s.dy(y, 0.05), 0.018, 0.03, 0, shade(skin, 0.85));
  s.ellipse(x, s.dy(y, 0.12), 0.06, 0.018, 0, robot ? [60, 64, 70] : [180, 70, 70]);
}

/**
 * An abstract composition: a gradient and 5-9 circles, rings, rotated rectangles or bands; in video
 * (`t` seconds) the shapes drift and turn.
 */
function planAbstract({ hue, sat, light, accentHue }: Colours, rng: Rng, t: number): Omit<ImagePlan, "caption"> {
  const shapes: Shape[] = [];
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
    const cx = between(rng, 0.1, 0.9) + 0.03 * Math.sin(t * 0.8 + i);
    const cy = between(rng, 0.1, 0.9) + 0.03 * Math.cos(t * 0.6 + i * 2);
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
        angle: rng() * Math.PI + t * 0.3,
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
  return { motif: "abstract", background, shapes };
}

/** Height (fraction of the image height, 0 = top) of a hill ridge at normalized `x`. */
export function ridgeAt(base: number, waves: readonly Wave[], x: number): number {
  let y = base;
  for (const w of waves) y += w.amp * Math.sin(2 * Math.PI * (w.freq * x + w.phase));
  return y;
}

/** Start/end points (px) of a gradient along `angle` that spans a `w` x `h` image from 0 to 1. */
export function gradientLine(w: number, h: number, angle: number): { x1: number; y1: number; x2: number; y2: number } {
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const half = (Math.abs(w * c) + Math.abs(h * s)) / 2;
  return { x1: w / 2 - c * half, y1: h / 2 - s * half, x2: w / 2 + c * half, y2: h / 2 + s * half };
}
