/**
 * The melodic, harmonic and bass instruments of the music synthesizer: additive (piano, organ, sub
 * bass), FM (electric piano, bell), Karplus-Strong (pluck, finger bass), subtractive (saw, square,
 * strings, pad, synth bass) and a flute. Each renders one note by adding into a buffer.
 */
import type { Rng } from "../rng.ts";
import { midiHz, polyBlep, sin01 } from "./dsp.ts";

/** Melodic and harmonic instruments of the palette. */
export type MusicInstrument =
  | "piano"
  | "epiano"
  | "pluck"
  | "saw"
  | "square"
  | "strings"
  | "pad"
  | "organ"
  | "bell"
  | "flute";

/** Bass instruments of the palette. */
export type BassInstrument = "sub" | "finger" | "synth";

/** Drum styles: grooves of kick/snare/hats, or no drums. */
export type DrumStyle = "rock" | "four" | "hiphop" | "halftime" | "light" | "none";

/** A note: start `t` and length `d` in seconds, MIDI pitch `m`, velocity `v` in 0..1. */
export interface Note {
  t: number;
  d: number;
  m: number;
  v: number;
}

/** Renders one note of `inst` into `out` (adding), at `gain`. `rng` feeds noise only. */
export function renderNote(
  out: Float32Array,
  sr: number,
  inst: MusicInstrument | BassInstrument,
  note: Note,
  gain: number,
  rng: Rng,
): void {
  const s0 = Math.round(note.t * sr);
  if (s0 >= out.length || note.d <= 0) return;
  const f = midiHz(note.m);
  const amp = gain * note.v;
  switch (inst) {
    case "piano":
      return additive(out, sr, s0, note.d, f, amp, PIANO_PARTIALS, 1.1 + f / 350, 0.003, 0.15, 4);
    case "organ":
      return additive(out, sr, s0, note.d, f, amp * 0.8, ORGAN_PARTIALS, 0, 0.015, 0.08, 30);
    case "flute":
      return flute(out, sr, s0, note.d, f, amp, rng);
    case "sub":
      return additive(out, sr, s0, note.d, f, amp, SUB_PARTIALS, 0.4, 0.008, 0.06, 30);
    case "epiano":
      return fm(out, sr, s0, note.d, f, amp, 1, 1.8, 3, 1.3 + f / 600, 0.2);
    case "bell":
      return fm(out, sr, s0, note.d, f, amp * 0.8, 3.5, 2.5, 2.2, 1.4, 0.6);
    case "pluck":
      return pluck(out, sr, s0, note.d, f, amp, rng, 0.996, 0.5);
    case "finger":
      return pluck(out, sr, s0, note.d, f, amp * 1.3, rng, 0.998, 0.2);
    case "saw":
      return subtractive(out, sr, s0, note.d, f, amp, 2, 0.007, false, 0.01, 0.12, 5, 2.5);
    case "square":
      return subtractive(out, sr, s0, note.d, f, amp * 0.8, 1, 0, true, 0.005, 0.06, 8, 4);
    case "strings":
      return subtractive(out, sr, s0, note.d, f, amp, 3, 0.006, false, 0.25, 0.45, 3, 3);
    case "pad":
      return subtractive(out, sr, s0, note.d, f, amp, 2, 0.009, false, 0.7, 1.2, 2, 2);
    case "synth":
      return subtractive(out, sr, s0, note.d, f, amp * 1.2, 1, 0, false, 0.005, 0.08, 6, 1.2);
  }
}

/** Relative amplitudes of the partials (1, 2, 3, ...) of each additive instrument. */
const PIANO_PARTIALS = [1, 0.55, 0.3, 0.18, 0.1, 0.06];
const ORGAN_PARTIALS = [1, 0.6, 0.35, 0.25, 0, 0.12];
const SUB_PARTIALS = [1, 0.35, 0.12];

/**
 * Additive synthesis: partial h at h x f (skipped above 0.45 x sr) with amplitude `partials[h-1]`,
 * decaying exponentially at `decay x (0.6 + 0.5 h)` per second (0: sustained), linear attack and
 * release (seconds); the sounding length is capped at `maxSec`.
 */
function additive(
  out: Float32Array,
  sr: number,
  s0: number,
  dur: number,
  f: number,
  amp: number,
  partials: readonly number[],
  decay: number,
  attack: number,
  release: number,
  maxSec: number,
): void {
  const len = Math.min(out.length - s0, Math.round(Math.min(dur + release, maxSec) * sr));
  if (len <= 0) return;
  const relStart = Math.round(dur * sr);
  const relLen = Math.max(1, Math.round(release * sr));
  const atk = Math.max(1, Math.round(attack * sr));
  const np = partials.length;
  const inc = new Float64Array(np);
  const ph = new Float64Array(np);
  const g = new Float64Array(np);
  const k = new Float64Array(np);
  let active = 0;
  for (let h = 0; h < np; h++) {
    const fh = f * (h + 1) * (1 + 0.0003 * h * h);
    if (fh >= sr * 0.45 || partials[h] === 0) continue;
    inc[active] = fh / sr;
    g[active] = partials[h];
    k[active] = decay > 0 ? Math.exp(-(decay * (0.6 + 0.5 * (h + 1))) / sr) : 1;
    active++;
  }
  for (let n = 0; n < len; n++) {
    let s = 0;
    for (let h = 0; h < active; h++) {
      s += g[h] * sin01(ph[h]);
      g[h] *= k[h];
      ph[h] += inc[h];
      if (ph[h] >= 1) ph[h] -= 1;
    }
    let e = n < atk ? n / atk : 1;
    if (n >= relStart) e *= Math.max(0, 1 - (n - relStart) / relLen);
    out[s0 + n] += s * e * amp;
  }
}

/** Flute: sine + a little 2nd harmonic, breath noise, delayed vibrato. */
function flute(out: Float32Array, sr: number, s0: number, dur: number, f: number, amp: number, rng: Rng) {
  const release = 0.08;
  const len = Math.min(out.length - s0, Math.round((dur + release) * sr));
  if (len <= 0) return;
  const relStart = Math.round(dur * sr);
  const atk = Math.round(0.05 * sr);
  let ph = 0;
  let ph2 = 0;
  let lp = 0;
  const vibInc = 5.2 / sr;
  let vib = 0;
  for (let n = 0; n < len; n++) {
    const vibDepth = n > 0.2 * sr ? Math.min(1, (n - 0.2 * sr) / (0.3 * sr)) * 0.006 : 0;
    const inc = (f / sr) * (1 + vibDepth * sin01(vib));
    vib += vibInc;
    if (vib >= 1) vib -= 1;
    ph += inc;
    if (ph >= 1) ph -= 1;
    ph2 += inc * 2;
    if (ph2 >= 1) ph2 -= 1;
    lp += (rng() * 2 - 1 - lp) * 0.3;
    let e = n < atk ? n / atk : 1;
    if (n >= relStart) e *= Math.max(0, 1 - (n - relStart) / (release * sr));
    out[s0 + n] += (sin01(ph) + 0.12 * sin01(ph2) + 0.08 * lp) * e * amp;
  }
}

/**
 * Two-operator FM: modulator at `ratio x f` with index `index` decaying at `indexDecay`/s, carrier
 * amplitude decaying at `ampDecay`/s, release in seconds.
 */
export function fm(
  out: Float32Array,
  sr: number,
  s0: number,
  dur: number,
  f: number,
  amp: number,
  ratio: number,
  index: number,
  indexDecay: number,
  ampDecay: number,
  release: number,
): void {
  const len = Math.min(out.length - s0, Math.round(Math.min(dur + release, 5) * sr));
  if (len <= 0) return;
  const relStart = Math.round(dur * sr);
  const relLen = Math.max(1, Math.round(release * sr));
  const atk = Math.max(1, Math.round(0.002 * sr));
  const cInc = f / sr;
  const mInc = (f * ratio) / sr;
  const kI = Math.exp(-indexDecay / sr);
  const kA = Math.exp(-ampDecay / sr);
  let idx = index;
  let a = 1;
  let cp = 0;
  let mp = 0;
  for (let n = 0; n < len; n++) {
    let p = cp + idx * sin01(mp) * 0.15;
    p -= Math.floor(p);
    let e = n < atk ? n / atk : a;
    if (n >= relStart) e *= Math.max(0, 1 - (n - relStart) / relLen);
    out[s0 + n] += sin01(p) * e * amp;
    idx *= kI;
    a *= kA;
    cp += cInc;
    if (cp >= 1) cp -= 1;
    mp += mInc;
    if (mp >= 1) mp -= 1;
  }
}

/** Karplus-Strong plucked string: a noise burst in a delay line of one period with damped averaging. */
function pluck(
  out: Float32Array,
  sr: number,
  s0: number,
  dur: number,
  f: number,
  amp: number,
  rng: Rng,
  feedback: number,
  brightness: number,
): void {
  const release = 0.06;
  const len = Math.min(out.length - s0, Math.round(Math.min(dur + release, 3) * sr));
  if (len <= 0) return;
  const period = Math.max(2, Math.round(sr / f));
  const line = new Float32Array(period);
  let lp = 0;
  for (let i = 0; i < period; i++) {
    lp += (rng() * 2 - 1 - lp) * brightness;
    line[i] = lp;
  }
  // Remove the burst's DC so the string does not thump.
  let mean = 0;
  for (let i = 0; i < period; i++) mean += line[i];
  mean /= period;
  for (let i = 0; i < period; i++) line[i] -= mean;
  const relStart = Math.round(dur * sr);
  const relLen = Math.max(1, Math.round(release * sr));
  let idx = 0;
  const g = amp * 2.2;
  for (let n = 0; n < len; n++) {
    const next = idx + 1 === period ? 0 : idx + 1;
    const y = line[idx];
    line[idx] = (y + line[next]) * 0.5 * feedback;
    idx = next;
    let e = 1;
    if (n >= relStart) e = Math.max(0, 1 - (n - relStart) / relLen);
    out[s0 + n] += y * e * g;
  }
}

/**
 * Subtractive synthesis: `voices` detuned band-limited saws (or one square), a one-pole low-pass whose
 * cutoff starts at `cutStart x f` and settles at `cutEnd x f` (capped at 0.4 x sr), attack/release in
 * seconds.
 */
function subtractive(
  out: Float32Array,
  sr: number,
  s0: number,
  dur: number,
  f: number,
  amp: number,
  voices: number,
  detune: number,
  square: boolean,
  attack: number,
  release: number,
  cutStart: number,
  cutEnd: number,
): void {
  const len = Math.min(out.length - s0, Math.round((dur + release) * sr));
  if (len <= 0) return;
  const relStart = Math.round(dur * sr);
  const relLen = Math.max(1, Math.round(release * sr));
  const atk = Math.max(1, Math.round(attack * sr));
  const incs = new Float64Array(voices);
  const ph = new Float64Array(voices);
  for (let v = 0; v < voices; v++) {
    const det = voices === 1 ? 0 : (v / (voices - 1) - 0.5) * 2 * detune;
    incs[v] = Math.min(0.45, (f * (1 + det)) / sr);
    ph[v] = (v * 0.37) % 1;
  }
  const norm = 1 / voices;
  let lp = 0;
  let lp2 = 0;
  const kEnv = Math.exp(-6 / sr);
  let cut = cutStart;
  for (let n = 0; n < len; n++) {
    let s = 0;
    for (let v = 0; v < voices; v++) {
      const p = ph[v];
      const dt = incs[v];
      let x = 2 * p - 1 - polyBlep(p, dt);
      if (square) {
        let q = p + 0.5;
        if (q >= 1) q -= 1;
        x -= 2 * q - 1 - polyBlep(q, dt);
      }
      s += x;
      ph[v] = p + dt >= 1 ? p + dt - 1 : p + dt;
    }
    s *= norm;
    cut = cutEnd + (cut - cutEnd) * kEnv;
    const fc = Math.min(sr * 0.4, f * cut);
    const a = 1 - Math.exp((-2 * Math.PI * fc) / sr);
    lp += (s - lp) * a;
    lp2 += (lp - lp2) * a;
    let e = n < atk ? n / atk : 1;
    if (n >= relStart) e *= Math.max(0, 1 - (n - relStart) / relLen);
    out[s0 + n] += lp2 * e * amp;
  }
}
