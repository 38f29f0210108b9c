/** Mixing and mastering effects (in place on mono `Float32Array`s): reverb, fades, saturation, sample mixing. */
import { clamp } from "./dsp.ts";

/**
 * A small mono reverb (4 damped combs + 2 allpasses, Freeverb-like) applied in place:
 * `x += wet x reverb(highpass(x))`. Delay lengths scale with the sample rate.
 */
export function applyReverb(out: Float32Array, sr: number, wet: number, room: number): void {
  if (wet <= 0) return;
  const k = sr / 44100;
  const combLens = [1116, 1188, 1277, 1356].map((l) => Math.max(8, Math.round(l * k)));
  const apLens = [556, 441].map((l) => Math.max(4, Math.round(l * k)));
  const combs = combLens.map((l) => new Float32Array(l));
  const aps = apLens.map((l) => new Float32Array(l));
  const ci = [0, 0, 0, 0];
  const cs = [0, 0, 0, 0];
  const ai = [0, 0];
  const fb = 0.7 + 0.26 * clamp(room, 0, 1);
  const damp = 0.3;
  const hpK = Math.exp((-2 * Math.PI * 250) / sr);
  let hpX = 0;
  let hpY = 0;
  const [c0, c1, c2, c3] = combs;
  const [a0, a1] = aps;
  for (let n = 0; n < out.length; n++) {
    const x = out[n];
    hpY = hpK * (hpY + x - hpX);
    hpX = x;
    const input = hpY * 0.2;
    let s = 0;
    // Unrolled combs.
    {
      const y = c0[ci[0]];
      cs[0] = y * (1 - damp) + cs[0] * damp;
      c0[ci[0]] = input + cs[0] * fb;
      ci[0] = ci[0] + 1 === c0.length ? 0 : ci[0] + 1;
      s += y;
    }
    {
      const y = c1[ci[1]];
      cs[1] = y * (1 - damp) + cs[1] * damp;
      c1[ci[1]] = input + cs[1] * fb;
      ci[1] = ci[1] + 1 === c1.length ? 0 : ci[1] + 1;
      s += y;
    }
    {
      const y = c2[ci[2]];
      cs[2] = y * (1 - damp) + cs[2] * damp;
      c2[ci[2]] = input + cs[2] * fb;
      ci[2] = ci[2] + 1 === c2.length ? 0 : ci[2] + 1;
      s += y;
    }
    {
      const y = c3[ci[3]];
      cs[3] = y * (1 - damp) + cs[3] * damp;
      c3[ci[3]] = input + cs[3] * fb;
      ci[3] = ci[3] + 1 === c3.length ? 0 : ci[3] + 1;
      s += y;
    }
    {
      const b = a0[ai[0]];
      const o = -s + b;
      a0[ai[0]] = s + b * 0.5;
      ai[0] = ai[0] + 1 === a0.length ? 0 : ai[0] + 1;
      s = o;
    }
    {
      const b = a1[ai[1]];
      const o = -s + b;
      a1[ai[1]] = s + b * 0.5;
      ai[1] = ai[1] + 1 === a1.length ? 0 : ai[1] + 1;
      s = o;
    }
    out[n] = x + wet * s;
  }
}

/** Linear fade-in over `inSec` and fade-out over `outSec` seconds, in place. */
export function applyFades(out: Float32Array, sr: number, inSec: number, outSec: number): void {
  const nIn = Math.min(out.length, Math.round(inSec * sr));
  for (let n = 0; n < nIn; n++) out[n] *= n / nIn;
  const nOut = Math.min(out.length, Math.round(outSec * sr));
  for (let n = 0; n < nOut; n++) out[out.length - 1 - n] *= n / nOut;
}

/** Gentle saturation (rational tanh approximation) in place, then DC removal. */
export function softClipAndDc(out: Float32Array, sr: number, drive: number): void {
  let xPrev = 0;
  let yPrev = 0;
  const rDc = 1 - 2 * Math.PI * (20 / sr);
  for (let n = 0; n < out.length; n++) {
    let x = out[n] * drive;
    if (x > 3) x = 1;
    else if (x < -3) x = -1;
    else x = (x * (27 + x * x)) / (27 + 9 * x * x);
    const y = x - xPrev + rDc * yPrev;
    xPrev = x;
    yPrev = y;
    out[n] = y;
  }
}

/** Adds `sample` x `gain` into `out` starting at `t` seconds (clipped to `out`). */
export function mixSample(out: Float32Array, sample: Float32Array, t: number, sr: number, gain: number): void {
  const s0 = Math.round(t * sr);
  if (s0 < 0 || s0 >= out.length) return;
  const len = Math.min(sample.length, out.length - s0);
  for (let i = 0; i < len; i++) out[s0 + i] += sample[i] * gain;
}
