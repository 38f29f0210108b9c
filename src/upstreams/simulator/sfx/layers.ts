/** Building blocks of the sound-effect recipes: event times, noise and tone layers, transients, bells. */
import type { Rng } from "../rng.ts";
import { Resonator } from "../signal.ts";
import { clamp, sin01 } from "../music/dsp.ts";
import { fm } from "../music/instruments.ts";

/** Shared state of the sfx layer renderers. */
export interface SfxCtx {
  out: Float32Array;
  sr: number;
  dur: number;
  /** Parameter randomness (composition). */
  p: Rng;
  /** Noise source. */
  n: Rng;
  /** `base x (1 +- rel x spread)`: variation that narrows as prompt influence grows. */
  vary: (base: number, rel: number) => number;
}

/** Poisson-like event times (seconds) at `rate` per second over `[from, to)`. */
export function events(ctx: SfxCtx, rate: number, from = 0, to = ctx.dur): number[] {
  const ts: number[] = [];
  let t = from;
  for (;;) {
    t += (-Math.log(1 - ctx.p() * 0.999) / rate) * 1;
    if (t >= to) return ts;
    ts.push(t);
  }
}

/** Adds band-passed noise with amplitude `env(t)` (t in seconds), resonator at `freq(t)` Hz. */
export function noiseLayer(
  ctx: SfxCtx,
  gain: number,
  env: (t: number) => number,
  freq: (t: number) => number,
  bw: number,
  from = 0,
  to = ctx.dur,
): void {
  const { out, sr } = ctx;
  const res = new Resonator(sr);
  const s0 = Math.max(0, Math.round(from * sr));
  const s1 = Math.min(out.length, Math.round(to * sr));
  const ctl = 64;
  let prev = 0;
  for (let a = s0; a < s1; a += ctl) {
    const t = a / sr;
    res.set(freq(t), bw);
    const e = env(t) * gain;
    const b = Math.min(s1, a + ctl);
    for (let i = a; i < b; i++) {
      const w = ctx.n() * 2 - 1;
      const hp = w - prev * 0.5;
      prev = w;
      out[i] += res.tick(hp) * e;
    }
  }
}

/** Adds a sine whose frequency `freq(t)` (Hz) and amplitude `env(t)` follow functions of local time. */
export function toneLayer(
  ctx: SfxCtx,
  start: number,
  len: number,
  gain: number,
  freq: (t: number) => number,
  env: (t: number) => number,
  harmonics = 0,
): void {
  const { out, sr } = ctx;
  const s0 = Math.max(0, Math.round(start * sr));
  const n = Math.min(out.length - s0, Math.round(len * sr));
  let ph = 0;
  for (let i = 0; i < n; i++) {
    const t = i / sr;
    const f = Math.min(freq(t), sr * 0.45);
    ph += f / sr;
    ph -= Math.floor(ph);
    let s = sin01(ph);
    if (harmonics > 0) {
      let p3 = ph * 3;
      p3 -= Math.floor(p3);
      s += harmonics * sin01(p3);
    }
    out[s0 + i] += s * env(t) * gain;
  }
}

/** A short decaying noise + thump transient at `t` seconds. */
export function transient(
  ctx: SfxCtx,
  t: number,
  gain: number,
  thumpHz: number,
  noiseHz: number,
  decaySec: number,
): void {
  const { out, sr } = ctx;
  const s0 = Math.round(t * sr);
  const n = Math.min(out.length - s0, Math.round(decaySec * 6 * sr));
  if (n <= 0) return;
  const res = new Resonator(sr);
  res.set(noiseHz, noiseHz * 0.8);
  let ph = 0;
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const tt = i / sr;
    const e = Math.exp(-tt / decaySec);
    ph += (thumpHz * (1 + 1.5 * Math.exp(-tt * 40))) / sr;
    ph -= Math.floor(ph);
    const w = ctx.n() * 2 - 1;
    const hp = w - prev;
    prev = w;
    out[s0 + i] += (sin01(ph) * 0.7 + res.tick(hp) * 1.2) * e * gain;
  }
}

/** FM bell strike at `t`. */
export function bellStrike(ctx: SfxCtx, t: number, f: number, gain: number, decay: number): void {
  const s0 = Math.round(t * ctx.sr);
  if (s0 >= ctx.out.length) return;
  fm(ctx.out, ctx.sr, s0, 6, f, gain, 1.4 + ctx.p() * 2.2, 2.5, 1.5, decay, 0.1);
}

/** Smoothly varying random curve in 0..1 with about `rate` changes per second. */
export function wander(ctx: SfxCtx, rate: number): (t: number) => number {
  const n = Math.max(2, Math.ceil(ctx.dur * rate) + 2);
  const pts = Array.from({ length: n }, () => ctx.p());
  return (t: number) => {
    const x = clamp(t * rate, 0, n - 1.001);
    const i = Math.floor(x);
    const f = x - i;
    const s = f * f * (3 - 2 * f);
    return pts[i] + (pts[i + 1] - pts[i]) * s;
  };
}
