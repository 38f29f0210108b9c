/**
 * Small DSP and randomness helpers of the music and sound-effect synthesizers: a sine table, MIDI
 * pitches, band-limiting, range checks and hashed values.
 */
import { type Rng, seedFrom } from "../rng.ts";

const TABLE_BITS = 11;
const TABLE_SIZE = 1 << TABLE_BITS;
/** One period of a sine, with a guard sample for interpolation. */
const SINE = new Float32Array(TABLE_SIZE + 1);
for (let i = 0; i <= TABLE_SIZE; i++) SINE[i] = Math.sin((2 * Math.PI * i) / TABLE_SIZE);

/** sin(2 pi phase) for a phase in [0, 1), by table interpolation. */
export function sin01(phase: number): number {
  const p = phase * TABLE_SIZE;
  const i = p | 0;
  const a = SINE[i];
  return a + (SINE[i + 1] - a) * (p - i);
}

/** Frequency in Hz of a MIDI note number (69 = A4 = 440 Hz). */
export function midiHz(m: number): number {
  return 440 * 2 ** ((m - 69) / 12);
}

/** PolyBLEP residual for band-limited saw/square waves (`t` phase in [0,1), `dt` increment). */
export function polyBlep(t: number, dt: number): number {
  if (t < dt) {
    const x = t / dt;
    return x + x - x * x - 1;
  }
  if (t > 1 - dt) {
    const x = (t - 1) / dt;
    return x * x + x + x + 1;
  }
  return 0;
}

/** `v` limited to `lo..hi`. */
export function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** An element of `items` chosen by one draw of `rng`. */
export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length) % items.length];
}

/** Throws a RangeError unless `sr` is a sample rate in 4000..192000 Hz. */
export function checkRate(sr: number): void {
  if (!(sr >= 4000 && sr <= 192000)) throw new RangeError(`unsupported sample rate ${sr}`);
}

/** Throws a RangeError unless `sec` is a length in (0, 600] seconds. */
export function checkDuration(sec: number): void {
  if (!(Number.isFinite(sec) && sec > 0 && sec <= 600)) throw new RangeError(`unsupported duration ${sec}`);
}

/** A value in [0, 1) from the first bytes of a SHA-256 of `parts`. */
export function hashUnit(...parts: string[]): number {
  const b = seedFrom(...parts);
  return (((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0) / 4294967296;
}
