/**
 * Scene planning of the simulated images: a prompt (plus a seed and the image's index within the
 * request) becomes a small scene plan: a colour palette steered by colour and mood words ("red",
 * "ocean", "night", "sunset"...) and either a landscape (sky gradient, sun or moon, stars at night,
 * layered hills) or an abstract composition (gradient background with circles, rings, rotated
 * rectangles and bands). Words such as "landscape", "mountain", "abstract", "geometric" pick the style;
 * otherwise the prompt's hash does. Deterministic; no `Math.random`.
 *
 * Coordinates in the plan are normalized (x in 0..1 of the width, y in 0..1 of the height, lengths
 * relative to the shorter side), so a plan looks the same at any size and aspect ratio.
 */
import { createRng, type Rng, seedFrom } from "../rng.ts";

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
export type Rgb = readonly [number, number, number];

/** A shape of the plan (normalized coordinates, see the module comment). `alpha` is 0..1. */
export type Shape =
  | { kind: "circle"; cx: number; cy: number; r: number; color: Rgb; alpha: number }
  | { kind: "ring"; cx: number; cy: number; r: number; w: number; color: Rgb; alpha: number }
  | { kind: "rect"; cx: number; cy: number; hw: number; hh: number; angle: number; color: Rgb; alpha: number }
  | { kind: "band"; offset: number; w: number; angle: number; color: Rgb; alpha: number }
  | { kind: "hill"; base: number; waves: readonly Wave[]; color: Rgb; alpha: number };

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

/** A scene: its style, background gradient and shapes, back to front. */
export interface ImagePlan {
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

/** Words that pick the style and the brightness. */
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

/** The colour `t` (0..1) of the way from `a` to `b`. */
function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return [
    Math.round(a[0] + (b[0] - a[0]) * t),
    Math.round(a[1] + (b[1] - a[1]) * t),
    Math.round(a[2] + (b[2] - a[2]) * t),
  ];
}

/** A value in `lo..hi` from one draw of `rng`. */
function between(rng: Rng, lo: number, hi: number): number {
  return lo + (hi - lo) * rng();
}

/** The colours of a scene: base hue (degrees), saturation and lightness (0..1), night, accent hue. */
interface Colours {
  hue: number;
  sat: number;
  light: number;
  night: boolean;
  accentHue: number;
}

/** The deterministic scene plan of `opts` (independent of the output size). */
export function planImage(opts: RenderImageOptions): ImagePlan {
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
  const colours: Colours = { hue, sat, light, night, accentHue };
  return style === "landscape" ? planLandscape(colours, rng, styleRng) : planAbstract(colours, rng);
}

/** A landscape: sky gradient, stars at night, a sun or moon with a halo, 3-4 layers of hills. */
function planLandscape({ hue, sat, light, night }: Colours, rng: Rng, styleRng: Rng): ImagePlan {
  const shapes: Shape[] = [];
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
  return { style: "landscape", background, shapes };
}

/** An abstract composition: a gradient and 5-9 circles, rings, rotated rectangles or bands. */
function planAbstract({ hue, sat, light, accentHue }: Colours, rng: Rng): ImagePlan {
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
  return { style: "abstract", background, shapes };
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
