/**
 * The subjects of a scene, painted over its backdrop (`scenery.ts`): a lighthouse, an animal, birds, a
 * boat, trees, a big sun or moon, a car, flowers, a portrait. Birds and trees also appear as scenery
 * when the prompt names them beside another subject. Each moves with the frame's time (video).
 */
import { DARK, hsl, shade } from "./colour.ts";
import { between, type Ctx } from "./scene.ts";
import type { Rgb } from "./types.ts";

/** A striped lighthouse on rocks, with a turning beam. */
export function lighthouse(c: Ctx): void {
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
export function animal(c: Ctx): void {
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
export function birds(c: Ctx, n: number): void {
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
export function boat(c: Ctx): void {
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
export function trees(c: Ctx, big: boolean): void {
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
export function bigSky(c: Ctx): void {
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
export function car(c: Ctx): void {
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
export function flowers(c: Ctx): void {
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
export function face(c: Ctx): void {
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
