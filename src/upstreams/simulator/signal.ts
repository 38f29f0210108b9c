/**
 * Generic signal helpers of the simulator's synthesizers (speech, music, sound effects): envelopes,
 * a two-pole resonator, linear resampling and peak normalization. Samples are mono `Float32Array`s.
 */

/**
 * Attack/decay/sustain/release gain at time `t` (seconds) of a note lasting `length` seconds.
 * `a`, `d`, `r` are durations in seconds, `s` the sustain level 0..1. Returns a gain in 0..1; 0 outside
 * `[0, length]`. The release starts at `length - r`.
 */
export function adsr(t: number, length: number, a: number, d: number, s: number, r: number): number {
  if (t < 0 || t > length) return 0;
  let g: number;
  if (t < a) g = t / a;
  else if (t < a + d) g = 1 - ((1 - s) * (t - a)) / d;
  else g = s;
  const relStart = length - r;
  if (r > 0 && t > relStart) g *= Math.max(0, (length - t) / r);
  return g;
}

/**
 * A two-pole resonator (Klatt style) with unity gain at 0 Hz. Set its centre frequency and bandwidth
 * (both Hz) with {@link Resonator.set}, then feed one sample at a time with {@link Resonator.tick}.
 * Frequencies at or above 0.48 x the sample rate are clamped.
 */
export class Resonator {
  private readonly sampleRate: number;
  private a = 1;
  private b = 0;
  private c = 0;
  private y1 = 0;
  private y2 = 0;

  /** `sampleRate` in Hz. */
  constructor(sampleRate: number) {
    this.sampleRate = sampleRate;
  }

  /** Sets the centre frequency `freq` and the bandwidth `bw` (Hz). */
  set(freq: number, bw: number): void {
    const f = Math.min(freq, this.sampleRate * 0.48);
    const t = 1 / this.sampleRate;
    this.c = -Math.exp(-2 * Math.PI * bw * t);
    this.b = 2 * Math.exp(-Math.PI * bw * t) * Math.cos(2 * Math.PI * f * t);
    this.a = 1 - this.b - this.c;
  }

  /** Filters one sample. */
  tick(x: number): number {
    const y = this.a * x + this.b * this.y1 + this.c * this.y2;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

/**
 * Linear-interpolation resampling of mono samples from `fromRate` to `toRate` (Hz). Returns the input
 * itself when the rates are equal. Output length is `round(input.length x toRate / fromRate)`.
 */
export function resampleLinear(input: Float32Array, fromRate: number, toRate: number): Float32Array {
  if (fromRate === toRate) return input;
  const outLen = Math.round((input.length * toRate) / fromRate);
  const out = new Float32Array(outLen);
  const step = fromRate / toRate;
  const last = input.length - 1;
  for (let i = 0; i < outLen; i++) {
    const pos = i * step;
    const i0 = Math.floor(pos);
    if (i0 >= last) {
      out[i] = last >= 0 ? input[last] : 0;
    } else {
      const frac = pos - i0;
      out[i] = input[i0] + (input[i0 + 1] - input[i0]) * frac;
    }
  }
  return out;
}

/** Scales `samples` in place so that the absolute peak is `peak` (0..1); silence is left alone. */
export function normalizePeak(samples: Float32Array, peak: number): Float32Array {
  let max = 0;
  for (let i = 0; i < samples.length; i++) {
    const v = Math.abs(samples[i]);
    if (v > max) max = v;
  }
  if (max > 1e-9) {
    const g = peak / max;
    for (let i = 0; i < samples.length; i++) samples[i] *= g;
  }
  return samples;
}

/**
 * The glottal flow of a voice over one period (Rosenberg pulse): `phase` in [0, 1) gives 0..1, rising
 * over the first 40 %, falling over the next 20 %, closed for the rest. Shared by speech and singing.
 */
export function glottalPulse(phase: number): number {
  if (phase < 0.4) return 0.5 * (1 - Math.cos((Math.PI * phase) / 0.4));
  if (phase < 0.6) return Math.cos((Math.PI * (phase - 0.4)) / 0.4);
  return 0;
}
