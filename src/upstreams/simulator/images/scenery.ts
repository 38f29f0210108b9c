/**
 * The backdrop of a scene, back to front: the sky (gradient, stars, sun or moon, clouds), distant
 * mountains and rolling hills, a city skyline, then the sea or the ground (snow, sand, grass). The
 * subject (`subjects.ts`) is painted over it.
 */
import { hsl, mix, shade, WHITE } from "./colour.ts";
import { between, type Ctx } from "./scene.ts";
import type { Gradient, Motif, Rgb, Wave } from "./types.ts";

/** Sky gradient, stars, sun or moon, clouds; returns the background. */
export function sky(c: Ctx, motif: Motif): Gradient {
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
export function hills(c: Ctx): void {
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
export function mountains(c: Ctx, big: boolean): void {
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
export function ground(c: Ctx, sand: boolean): void {
  const { s, rng, t } = c;
  const col: Rgb = c.snow ? [236, 242, 250] : sand ? hsl(40, 0.55, 0.68) : hsl(105 + (rng() - 0.5) * 30, 0.45, 0.38);
  const waves: Wave[] = [{ amp: 0.012, freq: between(rng, 0.5, 1.5), phase: rng() + t * 0.02 }];
  s.hill(c.horizon, waves, s.lit(col));
  s.hill(c.horizon + 0.12, [{ amp: 0.015, freq: between(rng, 0.8, 2), phase: rng() + t * 0.04 }], s.lit(shade(col, 0.9)));
}

/** Sea from the horizon down: rolling wave bands and the sun's reflection. */
export function sea(c: Ctx): void {
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
export function skyline(c: Ctx, big: boolean): void {
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
