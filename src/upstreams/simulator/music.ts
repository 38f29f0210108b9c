/**
 * Music and sound-effect synthesis for the built-in simulator (decision D10): real, valid and
 * deterministic media.
 *
 * - {@link synthesizeMusic}: a small arranger + synthesizer. The prompt (hashed, and steered by words
 *   such as "piano", "drums", "ambient", "rock", "sad", "fast", "120 bpm", "in A minor") sets the
 *   tempo, key, mode and instrument palette; the song has a chord progression, a bass line, a melody,
 *   drums (kick/snare/hats made from sine sweeps and noise), sections (intro, verse, chorus, bridge,
 *   outro) and fades. Lyrics (beta models) add a sung, formant-synthesized vocal line following the
 *   syllables of each lyric line; `[Instrumental]` alone means no vocal line at all.
 * - {@link musicDurationFromLyrics}: the length a beta model picks for its lyrics.
 * - {@link synthesizeSfx}: sound effects whose character follows the prompt's keywords (rain, wind,
 *   water, fire, explosion, thunder, impacts, footsteps, clicks, beeps, alarms, sirens, lasers,
 *   whooshes, birds, engines, bells, applause, glass; otherwise a generic texture).
 * - {@link renderMediaChunks}: synthesis + encoding of a {@link MediaRenderJob}, shared by the inline
 *   path and the encode worker.
 *
 * Everything is pure and deterministic: composition decisions come from a PRNG seeded with a SHA-256
 * of the inputs, never from `Math.random`, and do not depend on the sample rate. Samples are mono
 * `Float32Array`s in -1..1.
 */

import type { AudioFormat } from "../types.ts";
import {
  audioFormatInfo,
  createRng,
  encodeAudioChunks,
  mp3FrameSamples,
  normalizePeak,
  type Rng,
  Resonator,
  seedFrom,
} from "./audio.ts";

// ---------------------------------------------------------------------------------------------------
// Small DSP helpers
// ---------------------------------------------------------------------------------------------------

const TABLE_BITS = 11;
const TABLE_SIZE = 1 << TABLE_BITS;
/** One period of a sine, with a guard sample for interpolation. */
const SINE = new Float32Array(TABLE_SIZE + 1);
for (let i = 0; i <= TABLE_SIZE; i++) SINE[i] = Math.sin((2 * Math.PI * i) / TABLE_SIZE);

/** sin(2 pi phase) for a phase in [0, 1), by table interpolation. */
function sin01(phase: number): number {
  const p = phase * TABLE_SIZE;
  const i = p | 0;
  const a = SINE[i];
  return a + (SINE[i + 1] - a) * (p - i);
}

/** Frequency in Hz of a MIDI note number (69 = A4 = 440 Hz). */
function midiHz(m: number): number {
  return 440 * 2 ** ((m - 69) / 12);
}

/** PolyBLEP residual for band-limited saw/square waves (`t` phase in [0,1), `dt` increment). */
function polyBlep(t: number, dt: number): number {
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

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length) % items.length];
}

function checkRate(sr: number): void {
  if (!(sr >= 4000 && sr <= 192000)) throw new RangeError(`unsupported sample rate ${sr}`);
}

function checkDuration(sec: number): void {
  if (!(Number.isFinite(sec) && sec > 0 && sec <= 600)) throw new RangeError(`unsupported duration ${sec}`);
}

/** Lower-cased, accent-stripped words of a prompt plus the normalized text (for phrase matches). */
interface Words {
  set: Set<string>;
  text: string;
}

function wordsOf(prompt: string): Words {
  const text = prompt
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9#/]+/g, " ")
    .trim();
  return { set: new Set(text.split(" ").filter((w) => w.length > 0)), text: ` ${text} ` };
}

/** True when any entry is present: single words by exact match, entries with spaces as phrases. */
function hasAny(w: Words, list: readonly string[]): boolean {
  for (const e of list) {
    if (e.includes(" ") ? w.text.includes(` ${e} `) : w.set.has(e)) return true;
  }
  return false;
}

/** A value in [0, 1) from the first bytes of a SHA-256 of `parts`. */
function hashUnit(...parts: string[]): number {
  const b = seedFrom(...parts);
  return (((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0) / 4294967296;
}

/**
 * A small mono reverb (4 damped combs + 2 allpasses, Freeverb-like) applied in place:
 * `x += wet x reverb(highpass(x))`. Delay lengths scale with the sample rate.
 */
function applyReverb(out: Float32Array, sr: number, wet: number, room: number): void {
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
function applyFades(out: Float32Array, sr: number, inSec: number, outSec: number): void {
  const nIn = Math.min(out.length, Math.round(inSec * sr));
  for (let n = 0; n < nIn; n++) out[n] *= n / nIn;
  const nOut = Math.min(out.length, Math.round(outSec * sr));
  for (let n = 0; n < nOut; n++) out[out.length - 1 - n] *= n / nOut;
}

/** Gentle saturation (rational tanh approximation) in place, then DC removal. */
function softClipAndDc(out: Float32Array, sr: number, drive: number): void {
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

// ---------------------------------------------------------------------------------------------------
// Instruments
// ---------------------------------------------------------------------------------------------------

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
interface Note {
  t: number;
  d: number;
  m: number;
  v: number;
}

/** Renders one note of `inst` into `out` (adding), at `gain`. `rng` feeds noise only. */
function renderNote(
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
function fm(
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

// ---------------------------------------------------------------------------------------------------
// Drums
// ---------------------------------------------------------------------------------------------------

/** Pre-rendered drum samples at one sample rate. */
interface DrumKit {
  kick: Float32Array;
  snare: Float32Array;
  hat: Float32Array;
  open: Float32Array;
  crash: Float32Array;
}

function makeDrumKit(sr: number, rng: Rng, tone: number): DrumKit {
  const kick = new Float32Array(Math.round(0.45 * sr));
  {
    let ph = 0;
    const f0 = 120 + 60 * tone;
    for (let n = 0; n < kick.length; n++) {
      const t = n / sr;
      const freq = 45 + f0 * Math.exp(-t * 28);
      ph += freq / sr;
      ph -= Math.floor(ph);
      const click = t < 0.004 ? (rng() * 2 - 1) * (1 - t / 0.004) * 0.4 : 0;
      kick[n] = (sin01(ph) * Math.exp(-t * 7.5) + click) * 0.95;
    }
  }
  const snare = new Float32Array(Math.round(0.28 * sr));
  {
    const body = new Resonator(sr);
    body.set(1800 + 800 * tone, 2500);
    let ph = 0;
    let prev = 0;
    for (let n = 0; n < snare.length; n++) {
      const t = n / sr;
      const w = rng() * 2 - 1;
      const hp = w - prev;
      prev = w;
      ph += (185 + 40 * Math.exp(-t * 30)) / sr;
      ph -= Math.floor(ph);
      const noise = body.tick(hp) * 1.6 * Math.exp(-t * 16);
      const tonePart = sin01(ph) * 0.55 * Math.exp(-t * 22);
      snare[n] = noise + tonePart;
    }
  }
  const hatOf = (len: number, decay: number): Float32Array => {
    const h = new Float32Array(Math.round(len * sr));
    const res = new Resonator(sr);
    res.set(Math.min(sr * 0.45, 9000), 5000);
    let prev = 0;
    let prev2 = 0;
    for (let n = 0; n < h.length; n++) {
      const t = n / sr;
      const w = rng() * 2 - 1;
      const hp = w - 2 * prev + prev2; // 2nd-order difference: strong high-pass
      prev2 = prev;
      prev = w;
      h[n] = (res.tick(hp) * 0.8 + hp * 0.15) * Math.exp(-t * decay);
    }
    return h;
  };
  const hat = hatOf(0.08, 55);
  const open = hatOf(0.35, 11);
  const crash = hatOf(1.6, 2.6);
  for (const s of [snare, hat, open, crash]) normalizePeak(s, 0.9);
  return { kick, snare, hat, open, crash };
}

function mixSample(out: Float32Array, sample: Float32Array, t: number, sr: number, gain: number): void {
  const s0 = Math.round(t * sr);
  if (s0 < 0 || s0 >= out.length) return;
  const len = Math.min(sample.length, out.length - s0);
  for (let i = 0; i < len; i++) out[s0 + i] += sample[i] * gain;
}

/** Steps (16th notes; 12 per bar in 3/4) of each drum per style. */
interface Groove {
  kick: number[];
  snare: number[];
  hat: number[];
  open: number[];
}

function grooveOf(style: DrumStyle, beatsPerBar: number): Groove {
  if (beatsPerBar === 3) {
    if (style === "none") return { kick: [], snare: [], hat: [], open: [] };
    return { kick: [0], snare: [4, 8], hat: [0, 2, 4, 6, 8, 10], open: [] };
  }
  switch (style) {
    case "rock":
      return { kick: [0, 8, 10], snare: [4, 12], hat: [0, 2, 4, 6, 8, 10, 12, 14], open: [] };
    case "four":
      return { kick: [0, 4, 8, 12], snare: [4, 12], hat: [1, 3, 5, 7, 9, 11, 13, 15], open: [2, 6, 10, 14] };
    case "hiphop":
      return { kick: [0, 7, 10], snare: [4, 12], hat: [0, 2, 4, 6, 8, 10, 12, 14], open: [] };
    case "halftime":
      return {
        kick: [0, 11],
        snare: [8],
        hat: [0, 1, 2, 4, 6, 8, 10, 12, 13, 14],
        open: [],
      };
    case "light":
      return { kick: [0, 10], snare: [8], hat: [0, 4, 8, 12], open: [] };
    case "none":
      return { kick: [], snare: [], hat: [], open: [] };
  }
}

// ---------------------------------------------------------------------------------------------------
// Lyrics
// ---------------------------------------------------------------------------------------------------

/** Song section kinds; `break` is an instrumental break (an `[Instrumental]` tag among lyrics). */
export type SectionKind = "intro" | "verse" | "chorus" | "bridge" | "break" | "outro";

/** A sung syllable as parsed from lyrics: its onset consonants and its vowel letters. */
interface Syllable {
  onset: string;
  vowel: string;
}

type LyricItem =
  | { kind: "line"; section: SectionKind; syllables: Syllable[] }
  | { kind: "tag"; section: SectionKind };

const LATIN_VOWELS = "aeiouy";

/** Splits a lyric line into sung syllables (vowel groups with their onsets; other scripts per letter). */
function syllablesOf(line: string): Syllable[] {
  const out: Syllable[] = [];
  const plain = line.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  for (const word of plain.split(/[^\p{L}\p{N}']+/u)) {
    if (word.length === 0) continue;
    if (/^[a-z']+$/.test(word)) {
      const groups = word.match(/[^aeiouy]*[aeiouy]+/g);
      if (!groups) {
        out.push({ onset: word.replace(/'/g, ""), vowel: "u" });
        continue;
      }
      for (const g of groups) {
        const m = /^([^aeiouy]*)([aeiouy]+)$/.exec(g);
        out.push({ onset: (m?.[1] ?? "").replace(/'/g, ""), vowel: m?.[2] ?? "a" });
      }
    } else if (/^\d+$/.test(word)) {
      for (const d of word) out.push({ onset: "", vowel: LATIN_VOWELS[Number(d) % 5] });
    } else {
      // Other scripts: one syllable per letter, with a vowel chosen from the code point.
      for (const ch of word) {
        const cp = ch.codePointAt(0) ?? 0;
        out.push({ onset: cp % 3 === 0 ? "" : "nmklsth"[cp % 7], vowel: LATIN_VOWELS[cp % 5] });
      }
    }
  }
  return out;
}

function sectionOfTag(tag: string): SectionKind {
  const t = tag.toLowerCase();
  if (/chorus|hook|refrain/.test(t)) return "chorus";
  if (/bridge/.test(t)) return "bridge";
  if (/intro/.test(t)) return "intro";
  if (/outro|ending|end/.test(t)) return "outro";
  if (/instrumental|solo|break|interlude/.test(t)) return "break";
  return "verse";
}

/** True when `lyrics` is exactly `[Instrumental]`, ignoring case and whitespace. */
export function isInstrumentalOnly(lyrics: string | null): boolean {
  return lyrics !== null && lyrics.replace(/\s+/g, "").toLowerCase() === "[instrumental]";
}

function parseLyrics(lyrics: string | null): LyricItem[] {
  if (lyrics === null || isInstrumentalOnly(lyrics)) return [];
  const items: LyricItem[] = [];
  let section: SectionKind = "verse";
  for (const raw of lyrics.split(/\r?\n/)) {
    let line = raw.trim();
    for (;;) {
      const m = /^\[([^\]]*)\]\s*/.exec(line);
      if (!m) break;
      section = sectionOfTag(m[1]);
      items.push({ kind: "tag", section });
      line = line.slice(m[0].length);
    }
    if (line.length === 0) continue;
    const syllables = syllablesOf(line);
    if (syllables.length > 0) items.push({ kind: "line", section, syllables });
  }
  return items.some((i) => i.kind === "line") ? items : [];
}

/**
 * True when {@link synthesizeMusic} renders a vocal line for `lyrics`: lyrics are present, are not
 * `[Instrumental]` alone (ignoring case and whitespace) and contain at least one singable syllable.
 */
export function musicHasVocals(lyrics: string | null): boolean {
  return parseLyrics(lyrics).length > 0;
}

/** Intro and outro lengths (seconds) of the nominal lyric timeline. */
const LYRIC_INTRO_SEC = 6;
const LYRIC_OUTRO_SEC = 6;
/** Extra seconds a section tag adds (an instrumental bar or more between sections). */
const TAG_SEC: Record<SectionKind, number> = {
  intro: 4,
  verse: 1,
  chorus: 2,
  bridge: 3,
  break: 6,
  outro: 4,
};

/** Seconds a lyric line of `syllables` syllables takes at `tempoFactor` (2.5..3.5 s). */
function lyricLineSec(syllables: number, tempoFactor: number): number {
  return clamp((1.5 + 0.2 * syllables) * tempoFactor, 2.5, 3.5);
}

/** A lyric item placed on the nominal timeline (seconds). */
interface TimedItem {
  item: LyricItem;
  start: number;
  end: number;
}

/** The nominal lyric timeline: intro, each item's span, outro; `total` in seconds. */
function lyricTimeline(items: LyricItem[], bpm: number): { timed: TimedItem[]; total: number } {
  const tempoFactor = clamp(Math.sqrt(110 / bpm), 0.85, 1.2);
  let t = LYRIC_INTRO_SEC;
  const timed: TimedItem[] = [];
  for (const item of items) {
    const d = item.kind === "line" ? lyricLineSec(item.syllables.length, tempoFactor) : TAG_SEC[item.section];
    timed.push({ item, start: t, end: t + d });
    t += d;
  }
  return { timed, total: t + LYRIC_OUTRO_SEC };
}

/** Length in seconds a beta model picks from the prompt alone: 30..90 s (whole seconds). */
function promptLengthSec(prompt: string): number {
  const w = wordsOf(prompt);
  const u = hashUnit("music-length", prompt);
  if (hasAny(w, ["short", "jingle", "sting", "loop", "brief"])) return Math.round(30 + 15 * u);
  if (hasAny(w, ["long", "epic", "extended", "journey", "symphony"])) return Math.round(70 + 20 * u);
  return Math.round(30 + 60 * u);
}

/** Shortest and longest song a beta model produces, in seconds. */
export const MUSIC_LYRICS_MIN_SEC = 10;
export const MUSIC_LYRICS_MAX_SEC = 300;

/**
 * Length in seconds that a beta music model picks (spec "POST /v1/audio/music": the model derives the
 * length from the lyrics). With lyrics: a 6 s intro and a 6 s outro, 2.5..3.5 s per lyric line (more
 * syllables and slower prompts give longer lines) and 1..6 s per section tag (`[verse]` 1, `[chorus]`
 * 2, `[bridge]` 3, `[Instrumental]` among lyrics 6), clamped to 10..300 and rounded to 0.1 s. Without
 * singable lyrics (null, empty, tags only or `[Instrumental]` alone): 30..90 s derived from the
 * prompt's hash (about 30..45 s for "short", 70..90 s for "long"/"epic"). Deterministic.
 */
export function musicDurationFromLyrics(lyrics: string | null, prompt: string): number {
  const items = parseLyrics(lyrics);
  if (items.length === 0) return promptLengthSec(prompt);
  const bpm = tempoOf(wordsOf(prompt), createRng(seedFrom("music-tempo", prompt)));
  const { total } = lyricTimeline(items, bpm);
  return clamp(Math.round(total * 10) / 10, MUSIC_LYRICS_MIN_SEC, MUSIC_LYRICS_MAX_SEC);
}

// ---------------------------------------------------------------------------------------------------
// Music plan
// ---------------------------------------------------------------------------------------------------

/** Options of {@link synthesizeMusic} and {@link planMusic}. */
export interface MusicSynthesisOptions {
  /** Description of the music; drives tempo, key, mode, palette, drums (may be empty). */
  prompt: string;
  /** Lyrics (beta models) or null; `[Instrumental]` alone means no vocal line. */
  lyrics: string | null;
  /** Length of the clip in seconds (0 < d <= 600); the sample count is `round(d x sampleRate)`. */
  durationSec: number;
  /** Output sample rate in Hz (4000..192000). */
  sampleRate: number;
  /** Extra seed material, e.g. the model id: changes the arrangement, not the palette's steering. */
  seed?: string;
}

/** A section of the song: kind and time span in seconds. */
export interface MusicSection {
  kind: SectionKind;
  startSec: number;
  endSec: number;
}

/**
 * The arrangement {@link synthesizeMusic} renders; independent of the sample rate. `tonic` is a pitch
 * class (0 = C), `progression` the scale-degree roots (0-based) of the verse chords, one per bar.
 */
export interface MusicPlan {
  bpm: number;
  beatsPerBar: 3 | 4;
  tonic: number;
  mode: "major" | "minor";
  /** Human-readable key, e.g. "A minor". */
  key: string;
  lead: MusicInstrument;
  harmony: MusicInstrument;
  bass: BassInstrument;
  drums: DrumStyle;
  progression: number[];
  sections: MusicSection[];
  /** Whether a vocal line following the lyrics is rendered. */
  vocals: boolean;
  /** Number of lyric syllables sung (0 without vocals). */
  sungSyllables: number;
  /** Reverb send 0..1. */
  reverb: number;
}

const NOTE_NAMES = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"];
const MAJOR = [0, 2, 4, 5, 7, 9, 11];
const MINOR = [0, 2, 3, 5, 7, 8, 10];
const MAJOR_PROGS = [
  [0, 4, 5, 3],
  [0, 5, 3, 4],
  [0, 3, 4, 3],
  [5, 3, 0, 4],
  [0, 2, 3, 4],
  [0, 3, 5, 4],
];
const MINOR_PROGS = [
  [0, 5, 2, 6],
  [0, 3, 4, 0],
  [0, 6, 5, 6],
  [0, 3, 5, 4],
  [0, 5, 3, 4],
  [0, 2, 6, 3],
];
const MAJOR_BRIDGES = [
  [3, 4, 5, 5],
  [5, 3, 4, 4],
  [3, 0, 4, 4],
];
const MINOR_BRIDGES = [
  [5, 6, 3, 4],
  [3, 5, 6, 6],
  [5, 3, 6, 4],
];

const FAST = ["fast", "upbeat", "energetic", "driving", "intense", "frantic", "hyper", "racing", "uptempo"];
const SLOW = [
  "slow",
  "calm",
  "relaxing",
  "relaxed",
  "peaceful",
  "gentle",
  "ballad",
  "sleep",
  "meditation",
  "lullaby",
];
const DANCE = ["house", "techno", "edm", "dance", "disco", "trance", "club", "electro"];
const FILMIC = ["cinematic", "orchestral", "classical", "epic", "film", "soundtrack"];

function tempoOf(w: Words, rng: Rng): number {
  const m = /(\d{2,3})\s*bpm/.exec(w.text);
  if (m) return clamp(Number(m[1]), 50, 200);
  const r = rng();
  let bpm: number;
  if (hasAny(w, ["drum and bass", "dnb", "jungle", "drumnbass"])) bpm = 165 + 10 * r;
  else if (hasAny(w, DANCE)) bpm = 118 + 14 * r;
  else if (hasAny(w, ["punk", "metal", "thrash"])) bpm = 140 + 40 * r;
  else if (hasAny(w, ["rock", "grunge", "indie"])) bpm = 105 + 40 * r;
  else if (hasAny(w, ["hip hop", "hiphop", "rap", "boom bap", "trap"])) bpm = 80 + 15 * r;
  else if (hasAny(w, ["lofi", "lo fi", "chillhop", "jazzhop"])) bpm = 70 + 18 * r;
  else if (hasAny(w, ["ambient", "drone", "space", "atmospheric"])) bpm = 60 + 20 * r;
  else if (hasAny(w, ["reggae", "dub"])) bpm = 70 + 15 * r;
  else if (hasAny(w, ["jazz", "swing", "bebop"])) bpm = 100 + 50 * r;
  else if (hasAny(w, ["waltz"])) bpm = 90 + 60 * r;
  else if (hasAny(w, FILMIC)) bpm = 70 + 40 * r;
  else if (hasAny(w, ["pop", "funk", "country", "folk"])) bpm = 95 + 30 * r;
  else bpm = 82 + 48 * r;
  if (hasAny(w, FAST)) bpm *= 1.22;
  if (hasAny(w, SLOW)) bpm *= 0.78;
  return Math.round(clamp(bpm, 55, 190));
}

/**
 * The arrangement of a song for `opts` (see {@link MusicPlan}); deterministic and independent of
 * `opts.sampleRate`. Exposed so that callers and tests can inspect what {@link synthesizeMusic} renders.
 */
export function planMusic(opts: Omit<MusicSynthesisOptions, "sampleRate">): MusicPlan {
  return composeMusic(opts).plan;
}

/** A sung syllable on the timeline: start/length in seconds, MIDI pitch, vowel and onset. */
interface SungNote extends Note {
  syl: Syllable;
}

interface Score {
  plan: MusicPlan;
  layers: { inst: MusicInstrument | BassInstrument; gain: number; notes: Note[] }[];
  drums: { kind: keyof DrumKit; t: number; v: number }[];
  vocalLines: SungNote[][];
  drumTone: number;
  voiceLow: boolean;
}

function composeMusic(opts: Omit<MusicSynthesisOptions, "sampleRate">): Score {
  checkDuration(opts.durationSec);
  const w = wordsOf(opts.prompt);
  const D = opts.durationSec;
  const tempoRng = createRng(seedFrom("music-tempo", opts.prompt));
  const rng = createRng(seedFrom("music-plan", opts.seed ?? "", opts.prompt));
  const bpm = tempoOf(w, tempoRng);
  const beatsPerBar: 3 | 4 = hasAny(w, ["waltz", "3/4"]) ? 3 : 4;
  const beat = 60 / bpm;
  const bar = beat * beatsPerBar;

  // --- Key and mode.
  let mode: "major" | "minor";
  let tonic = Math.floor(rng() * 12);
  const minorWords = ["sad", "dark", "melancholy", "melancholic", "minor", "somber", "sombre", "moody"];
  const minorWords2 = ["gloomy", "tragic", "eerie", "haunting", "tense", "mysterious", "sorrowful", "lonely"];
  const majorWords = ["happy", "bright", "cheerful", "major", "uplifting", "joyful", "sunny", "fun"];
  const majorWords2 = ["playful", "hopeful", "summer", "triumphant", "festive"];
  if (hasAny(w, minorWords) || hasAny(w, minorWords2) || hasAny(w, ["horror"])) mode = "minor";
  else if (hasAny(w, majorWords) || hasAny(w, majorWords2)) mode = "major";
  else mode = rng() < 0.5 ? "major" : "minor";
  const keyMatch =
    /\skey(?: of)?\s+([a-g])(#|sharp|b|flat)?(?:\s*(major|minor|maj|min))?\s/.exec(w.text) ??
    /\s([a-g])(#|sharp|b|flat)?\s*(major|minor|maj|min)\s/.exec(w.text) ??
    /\sin\s+([b-g])(#|sharp|b|flat)?()\s/.exec(w.text);
  if (keyMatch) {
    tonic = NOTE_NAMES.indexOf(keyMatch[1].toUpperCase());
    if (keyMatch[2] === "#" || keyMatch[2] === "sharp") tonic = (tonic + 1) % 12;
    if (keyMatch[2] === "b" || keyMatch[2] === "flat") tonic = (tonic + 11) % 12;
    if (keyMatch[3]) mode = keyMatch[3].startsWith("maj") ? "major" : "minor";
  }
  const scale = mode === "major" ? MAJOR : MINOR;

  // --- Palette.
  const electronic = hasAny(w, ["synth", "electronic", "synthwave", "80s"]) || hasAny(w, DANCE);
  const ambient = hasAny(w, ["ambient", "drone", "dreamy", "space", "atmospheric", "ethereal", "meditation"]);
  const orchestralWords = ["strings", "violin", "cello", "orchestral", "orchestra", "cinematic", "epic"];
  const orchestral = hasAny(w, orchestralWords);
  let lead: MusicInstrument;
  let harmony: MusicInstrument;
  if (hasAny(w, ["piano", "keys"])) lead = "piano";
  else if (hasAny(w, ["rhodes", "electric piano", "lofi", "lo fi", "jazz", "soul", "rnb"])) lead = "epiano";
  else if (hasAny(w, ["guitar", "acoustic", "folk", "country", "bossa", "ukulele"])) lead = "pluck";
  else if (hasAny(w, ["chiptune", "8bit", "8 bit", "retro", "arcade", "videogame", "video game"])) {
    lead = "square";
  }
  else if (electronic) lead = "saw";
  else if (orchestral || hasAny(w, ["classical", "film", "soundtrack"])) lead = "strings";
  else if (hasAny(w, ["flute", "whistle", "woodwind", "pan"])) lead = "flute";
  else if (hasAny(w, ["bell", "bells", "chime", "chimes", "music box", "glockenspiel", "celesta", "lullaby"]))
    lead = "bell";
  else if (hasAny(w, ["organ", "church", "gospel", "hymn"])) lead = "organ";
  else if (ambient) lead = pick(rng, ["bell", "flute", "pad"] as const);
  else lead = pick(rng, ["piano", "pluck", "saw", "epiano", "flute", "bell", "strings"] as const);
  if (ambient) harmony = "pad";
  else if (orchestral) harmony = "strings";
  else if (lead === "piano" || lead === "epiano" || lead === "organ" || lead === "pluck") harmony = lead;
  else if (lead === "square") harmony = "square";
  else if (lead === "saw") harmony = "pad";
  else harmony = pick(rng, ["piano", "pad", "strings", "pluck"] as const);
  if (hasAny(w, ["rock", "punk", "metal", "grunge"]) && lead !== "piano") harmony = "saw";

  let drums: DrumStyle;
  const noDrums =
    hasAny(w, ["no drums", "without drums", "drumless", "no percussion", "solo", "a cappella"]) ||
    (ambient && !hasAny(w, ["drums", "beat", "drum"])) ||
    hasAny(w, ["classical", "lullaby", "sleep"]);
  if (noDrums) drums = "none";
  else if (hasAny(w, DANCE)) drums = "four";
  else if (hasAny(w, ["trap", "dubstep", "halftime", "half time"])) drums = "halftime";
  else if (hasAny(w, ["hip hop", "hiphop", "rap", "boom bap", "lofi", "lo fi", "chillhop", "jazzhop"]))
    drums = "hiphop";
  else if (hasAny(w, ["rock", "punk", "metal", "grunge", "indie", "pop", "funk", "drums", "drum", "beat"]))
    drums = "rock";
  else if (hasAny(w, ["folk", "acoustic", "jazz", "bossa", "reggae", "country", "calm", "chill", "ballad"]))
    drums = "light";
  else if (orchestral || hasAny(w, ["piano solo", "peaceful", "gentle"])) {
    drums = rng() < 0.6 ? "none" : "light";
  }
  else drums = pick(rng, ["rock", "light", "hiphop", "four", "rock"] as const);

  let bass: BassInstrument;
  if (electronic || drums === "four" || drums === "halftime") bass = "synth";
  else if (hasAny(w, ["rock", "funk", "jazz", "pop", "indie", "folk", "country", "reggae", "punk", "metal"]))
    bass = "finger";
  else if (ambient || orchestral || drums === "none") bass = "sub";
  else bass = pick(rng, ["sub", "finger", "synth"] as const);

  const reverb = ambient
    ? 0.55
    : orchestral || hasAny(w, ["cathedral", "church", "hall", "reverb", "dreamy"])
      ? 0.4
      : hasAny(w, ["lofi", "lo fi", "rock", "punk", "dry"])
        ? 0.12
        : 0.22;
  const swingWords = ["jazz", "lofi", "lo fi", "swing", "shuffle", "blues", "hiphop", "hip hop", "jazzhop"];
  const swing = hasAny(w, swingWords) ? 0.16 : 0;

  const progs = mode === "major" ? MAJOR_PROGS : MINOR_PROGS;
  const verseProg = pick(rng, progs);
  let chorusProg = pick(rng, progs);
  if (chorusProg === verseProg) chorusProg = progs[(progs.indexOf(verseProg) + 1) % progs.length];
  const bridgeProg = pick(rng, mode === "major" ? MAJOR_BRIDGES : MINOR_BRIDGES);
  const barsPerChord = bpm >= 150 && drums !== "halftime" ? 2 : 1;

  // --- Structure: a section per bar.
  const nBars = Math.max(1, Math.ceil(D / bar) + 1);
  const barSection: SectionKind[] = new Array(nBars);
  const items = parseLyrics(opts.lyrics);
  const vocals = items.length > 0;
  const vocalLines: SungNote[][] = [];
  let timedScaled: TimedItem[] = [];
  if (vocals) {
    const { timed, total } = lyricTimeline(items, bpm);
    const k = D / total;
    timedScaled = timed.map((ti) => ({ item: ti.item, start: ti.start * k, end: ti.end * k }));
    for (let b = 0; b < nBars; b++) {
      const mid = (b + 0.5) * bar;
      let kind: SectionKind = mid < (timedScaled[0]?.start ?? 0) ? "intro" : "outro";
      for (const ti of timedScaled) {
        if (mid >= ti.start && mid < ti.end) {
          kind = ti.item.section === "intro" || ti.item.section === "outro" ? "verse" : ti.item.section;
          break;
        }
      }
      barSection[b] = kind;
    }
  } else {
    const songBars = Math.max(1, Math.ceil(D / bar));
    const edge = songBars >= 24 ? 4 : songBars >= 8 ? 2 : 0;
    const blockLen = songBars - 2 * edge >= 16 ? 8 : 4;
    const order: SectionKind[] = ["verse", "chorus", "verse", "chorus", "bridge", "chorus"];
    for (let b = 0; b < nBars; b++) {
      if (songBars < 4) barSection[b] = "chorus";
      else if (b < edge) barSection[b] = "intro";
      else if (b >= songBars - edge) barSection[b] = "outro";
      else {
        const blk = Math.floor((b - edge) / blockLen);
        barSection[b] = blk < order.length ? order[blk] : blk % 2 === 0 ? "verse" : "chorus";
      }
    }
  }
  const sections: MusicSection[] = [];
  for (let b = 0; b < nBars; b++) {
    const start = b * bar;
    if (start >= D) break;
    const last = sections[sections.length - 1];
    if (last && last.kind === barSection[b]) last.endSec = Math.min(D, start + bar);
    else sections.push({ kind: barSection[b], startSec: start, endSec: Math.min(D, start + bar) });
  }

  // --- Harmony: the chord (root scale degree) of each bar.
  const barChord = new Int32Array(nBars);
  {
    let idxInSection = 0;
    for (let b = 0; b < nBars; b++) {
      if (b > 0 && barSection[b] !== barSection[b - 1]) idxInSection = 0;
      const s = barSection[b];
      const prog = s === "chorus" ? chorusProg : s === "bridge" || s === "break" ? bridgeProg : verseProg;
      barChord[b] = prog[Math.floor(idxInSection / barsPerChord) % prog.length];
      idxInSection++;
    }
    // End on the tonic.
    const lastBar = Math.min(nBars - 1, Math.max(0, Math.floor((D - 0.01) / bar)));
    for (let b = lastBar; b < nBars; b++) barChord[b] = 0;
  }
  /** MIDI pitch of the tonic nearest to `center` (within -6..+5 semitones). */
  const tonicNear = (center: number): number => center + ((((tonic - center) % 12) + 18) % 12) - 6;
  /** MIDI pitch of scale degree `deg` (0 = tonic, may be negative or above 6) above `tonicMidi`. */
  const degMidi = (deg: number, tonicMidi: number): number => {
    const o = Math.floor(deg / 7);
    return tonicMidi + scale[((deg % 7) + 7) % 7] + 12 * o;
  };
  const chordTones = (root: number): number[] => [root, root + 2, root + 4];
  const snapToChord = (deg: number, root: number): number => {
    let best = deg;
    let bestD = 99;
    for (const ct of chordTones(root)) {
      for (let o = -2; o <= 2; o++) {
        const c = ct + 7 * o;
        const d = Math.abs(c - deg);
        if (d < bestD) {
          bestD = d;
          best = c;
        }
      }
    }
    return best;
  };
  const swingT = (beatPos: number): number => {
    const frac = beatPos - Math.floor(beatPos);
    return Math.abs(frac - 0.5) < 1e-6 ? beatPos + swing : beatPos;
  };
  const energy: Record<SectionKind, number> = {
    intro: 0.55,
    verse: 0.8,
    chorus: 1,
    bridge: 0.75,
    break: 0.85,
    outro: 0.65,
  };
  const human = (): number => (rng() - 0.5) * 0.01;

  // --- Chords.
  const harmonyNotes: Note[] = [];
  const harmonyStyle: "sustain" | "comp" | "arp" | "stabs" =
    harmony === "pluck"
      ? "arp"
      : harmony === "piano" || harmony === "epiano"
        ? bpm > 125
          ? "sustain"
          : "comp"
        : (harmony === "saw" || harmony === "square") && drums === "four"
          ? "stabs"
          : "sustain";
  const chordBase = tonicNear(60);
  for (let b = 0; b < nBars; b++) {
    const t0 = b * bar;
    const root = barChord[b];
    const s = barSection[b];
    const e = energy[s];
    const tones = chordTones(root).map((d) => degMidi(d, chordBase));
    const voiced = tones.map((m) => (m < 53 ? m + 12 : m > 67 ? m - 12 : m)).sort((a, b2) => a - b2);
    if (s === "chorus") voiced.push(voiced[0] + 12);
    const v = 0.55 * e;
    if (harmonyStyle === "sustain") {
      if (b > 0 && barChord[b - 1] === root && barSection[b - 1] === s) {
        // Tie over: extend the previous bar's notes.
        for (let i = harmonyNotes.length - voiced.length; i < harmonyNotes.length; i++) {
          harmonyNotes[i].d += bar;
        }
        continue;
      }
      for (const m of voiced) harmonyNotes.push({ t: t0 + human(), d: bar * 0.98, m, v });
    } else if (harmonyStyle === "comp") {
      const hits = beatsPerBar === 3 ? [0, 1, 2] : bpm < 80 ? [0, 2] : [0, 1.5, 2.5];
      hits.forEach((h, i) => {
        const len = (i + 1 < hits.length ? hits[i + 1] : beatsPerBar) - h;
        for (const m of voiced) {
          harmonyNotes.push({ t: t0 + swingT(h) * beat + human(), d: len * beat * 0.95, m, v });
        }
      });
    } else if (harmonyStyle === "arp") {
      const seq = [...voiced, voiced[1] + 12, voiced[2]];
      for (let i = 0; i < beatsPerBar * 2; i++) {
        const m = seq[i % seq.length];
        const t = t0 + swingT(i * 0.5) * beat + human();
        harmonyNotes.push({ t, d: beat, m, v: v * (i % 2 === 0 ? 1 : 0.8) });
      }
    } else {
      for (let i = 0; i < beatsPerBar; i++) {
        for (const m of voiced) harmonyNotes.push({ t: t0 + (i + 0.5) * beat, d: beat * 0.3, m, v });
      }
    }
  }

  // --- Bass.
  const bassNotes: Note[] = [];
  const bassBase = tonicNear(38);
  for (let b = 0; b < nBars; b++) {
    const s = barSection[b];
    if (s === "intro" && b + 1 < nBars && barSection[b + 1] === "intro") continue;
    const t0 = b * bar;
    const root = barChord[b];
    let rm = degMidi(root, bassBase);
    if (rm > bassBase + 6) rm -= 12;
    const fifth = rm + 7;
    const v = 0.8 * energy[s];
    const add = (beatPos: number, lenBeats: number, m: number, vel = v) =>
      bassNotes.push({ t: t0 + swingT(beatPos) * beat + human(), d: lenBeats * beat * 0.92, m, v: vel });
    if (s === "intro" || drums === "none" || beatsPerBar === 3) {
      add(0, beatsPerBar * 0.75, rm);
      if (beatsPerBar === 4 && drums !== "none") add(3, 1, fifth, v * 0.8);
      continue;
    }
    switch (drums) {
      case "rock":
        for (let i = 0; i < 8; i++) add(i * 0.5, 0.45, i === 7 ? fifth : rm, v * (i % 2 === 0 ? 1 : 0.8));
        break;
      case "four":
        for (let i = 0; i < 4; i++) add(i + 0.5, 0.45, i === 3 ? rm + 12 : rm);
        break;
      case "hiphop":
        add(0, 1.5, rm);
        add(1.75, 0.25, rm, v * 0.7);
        add(2.5, 1, fifth, v * 0.85);
        break;
      case "halftime":
        add(0, 2.5, rm);
        add(2.75, 1, rm);
        break;
      default:
        add(0, 2, rm);
        add(2, 2, fifth, v * 0.85);
    }
  }

  // --- Lead melody (a 2-bar motif per section kind, snapped to the chords).
  const leadNotes: Note[] = [];
  const leadBase = tonicNear(67) + (lead === "bell" ? 12 : 0);
  const motifs = new Map<SectionKind, { beat: number; len: number; deg: number }[]>();
  const makeMotif = (kind: SectionKind): { beat: number; len: number; deg: number }[] => {
    const out: { beat: number; len: number; deg: number }[] = [];
    const total = beatsPerBar * 2;
    const lens = kind === "chorus" ? [0.5, 1, 1, 1.5, 2] : [0.5, 0.5, 1, 1, 1.5, 2];
    let pos = 0;
    let deg = kind === "chorus" ? 4 : kind === "bridge" ? 3 : 2;
    while (pos < total - 0.01) {
      let len = pick(rng, lens);
      if (pos + len > total) len = total - pos;
      if (rng() < 0.15 && pos > 0) {
        pos += len;
        continue;
      }
      deg += pick(rng, [-2, -1, -1, 0, 1, 1, 2, 3]);
      deg = clamp(deg, kind === "chorus" ? 2 : 0, kind === "chorus" ? 11 : 9);
      out.push({ beat: pos, len, deg });
      pos += len;
    }
    return out;
  };
  const leadOn = (s: SectionKind): boolean =>
    vocals ? s === "intro" || s === "break" || s === "outro" : s !== "intro" || nBars < 8;
  let idxInSection = 0;
  for (let b = 0; b < nBars; b++) {
    const s = barSection[b];
    idxInSection = b > 0 && barSection[b - 1] === s ? idxInSection + 1 : 0;
    if (!leadOn(s)) continue;
    const key = s === "outro" || s === "intro" ? "verse" : s === "break" ? "chorus" : s;
    let motif = motifs.get(key);
    if (!motif) {
      motif = makeMotif(key);
      motifs.set(key, motif);
    }
    const half = idxInSection % 2;
    const variant = Math.floor(idxInSection / 2) % 2 === 1;
    const root = barChord[b];
    for (let i = 0; i < motif.length; i++) {
      const mn = motif[i];
      if (Math.floor(mn.beat / beatsPerBar) !== half) continue;
      const inBar = mn.beat - half * beatsPerBar;
      const strong = inBar % 1 === 0 && inBar % 2 === 0;
      let deg = strong ? snapToChord(mn.deg, root) : mn.deg;
      if (variant && i === motif.length - 1) deg = snapToChord(deg - 1, root);
      const v = (s === "chorus" ? 0.9 : 0.75) * (vocals ? 0.6 : 1);
      const t = b * bar + swingT(inBar) * beat + human();
      leadNotes.push({ t, d: mn.len * beat * 0.9, m: degMidi(deg, leadBase), v });
    }
  }

  // --- Drums.
  const drumHits: Score["drums"] = [];
  if (drums !== "none") {
    const g = grooveOf(drums, beatsPerBar);
    const steps = beatsPerBar * 4;
    const step = beat / 4;
    for (let b = 0; b < nBars; b++) {
      const s = barSection[b];
      const t0 = b * bar;
      const e = energy[s];
      const sectionStart = b === 0 || barSection[b - 1] !== s;
      const sectionEnd = b + 1 < nBars && barSection[b + 1] !== s;
      if (s === "intro") {
        // Hats only, joined by the kick in the last intro bar.
        for (const st of g.hat) drumHits.push({ kind: "hat", t: t0 + st * step, v: 0.35 });
        if (sectionEnd) for (const st of g.kick) drumHits.push({ kind: "kick", t: t0 + st * step, v: 0.7 });
        continue;
      }
      if (sectionStart && (s === "chorus" || s === "break")) drumHits.push({ kind: "crash", t: t0, v: 0.6 });
      const sparse = s === "bridge";
      for (const st of g.kick) {
        if (sparse && st !== 0) continue;
        drumHits.push({ kind: "kick", t: t0 + st * step + human() * 0.3, v: 0.95 * e });
      }
      for (const st of g.snare) {
        if (sectionEnd && st >= steps - 4) continue;
        drumHits.push({ kind: "snare", t: t0 + st * step + human() * 0.5, v: 0.75 * e });
      }
      if (!sparse) {
        for (const st of g.hat) {
          const sw = st % 4 === 2 ? swing * beat : 0;
          const t = t0 + st * step + sw + human() * 0.5;
          drumHits.push({ kind: "hat", t, v: (st % 4 === 0 ? 0.5 : 0.35) * e });
        }
        for (const st of g.open) drumHits.push({ kind: "open", t: t0 + st * step, v: 0.3 * e });
      }
      if (sectionEnd) {
        // A short snare fill over the last beat.
        for (let i = 0; i < 4; i++) {
          drumHits.push({ kind: "snare", t: t0 + (steps - 4 + i) * step, v: (0.4 + 0.12 * i) * e });
        }
      }
    }
  }

  // --- Vocals: each lyric line's syllables on a beat grid inside the line's span, following the chords.
  let sung = 0;
  const voiceLow = hasAny(w, ["male", "man", "baritone", "bass", "deep"])
    ? true
    : hasAny(w, ["female", "woman", "girl", "soprano", "alto"])
      ? false
      : rng() < 0.5;
  if (vocals) {
    const vocalBase = tonicNear(voiceLow ? 50 : 60);
    let deg = 2;
    for (const ti of timedScaled) {
      if (ti.item.kind !== "line") continue;
      const syls = ti.item.syllables;
      const chorus = ti.item.section === "chorus";
      const startBeat = Math.ceil(ti.start / beat - 0.25);
      const endBeat = Math.max(startBeat + 1, Math.floor(ti.end / beat));
      const span = endBeat - startBeat;
      const n = syls.length;
      let unit = 0;
      for (const u of [2, 1.5, 1, 0.75, 0.5, 0.25]) {
        if ((n + 1) * u <= span * 0.9) {
          unit = u;
          break;
        }
      }
      if (unit === 0) unit = (span * 0.9) / (n + 1);
      const line: SungNote[] = [];
      deg = chorus ? 4 + Math.floor(rng() * 3) : 1 + Math.floor(rng() * 3);
      for (let i = 0; i < n; i++) {
        const tBeat = startBeat + i * unit;
        const t = tBeat * beat;
        const lenBeats = i === n - 1 ? unit * 2 : unit;
        const bb = clamp(Math.floor(t / bar), 0, nBars - 1);
        const root = barChord[bb];
        deg += pick(rng, chorus ? [-2, -1, 0, 1, 1, 2, 3] : [-2, -1, -1, 0, 0, 1, 1, 2]);
        deg = clamp(deg, chorus ? 2 : -1, chorus ? 10 : 7);
        const strong = Math.abs(tBeat - Math.round(tBeat)) < 1e-6;
        if (strong || i === n - 1) deg = snapToChord(deg, root);
        line.push({ t, d: lenBeats * beat * 0.88, m: degMidi(deg, vocalBase), v: 1, syl: syls[i] });
      }
      sung += n;
      vocalLines.push(line);
    }
  }

  const drumTone = rng();
  const leadGain: Record<MusicInstrument, number> = {
    piano: 0.32,
    epiano: 0.3,
    pluck: 0.3,
    saw: 0.22,
    square: 0.16,
    strings: 0.26,
    pad: 0.22,
    organ: 0.2,
    bell: 0.22,
    flute: 0.28,
  };
  const layers: Score["layers"] = [
    { inst: harmony, gain: leadGain[harmony] * 0.55, notes: harmonyNotes },
    { inst: bass, gain: bass === "sub" ? 0.5 : 0.42, notes: bassNotes },
    { inst: lead, gain: leadGain[lead], notes: leadNotes },
  ];
  const plan: MusicPlan = {
    bpm,
    beatsPerBar,
    tonic,
    mode,
    key: `${NOTE_NAMES[tonic]} ${mode}`,
    lead,
    harmony,
    bass,
    drums,
    progression: verseProg.slice(),
    sections,
    vocals,
    sungSyllables: sung,
    reverb,
  };
  return { plan, layers, drums: drumHits, vocalLines, drumTone, voiceLow };
}

// ---------------------------------------------------------------------------------------------------
// Singing voice
// ---------------------------------------------------------------------------------------------------

const SUNG_VOWELS: Record<string, readonly [number, number, number]> = {
  a: [750, 1150, 2500],
  e: [520, 1750, 2500],
  i: [330, 2100, 2900],
  o: [560, 850, 2450],
  u: [360, 850, 2300],
  y: [350, 1950, 2650],
};

type OnsetKind = "none" | "fric" | "stop" | "son";

function onsetKind(onset: string): { kind: OnsetKind; nf: number } {
  if (onset.length === 0) return { kind: "none", nf: 0 };
  const c = onset[0];
  if ("sczx".includes(c)) return { kind: "fric", nf: 6000 };
  if ("fvh".includes(c)) return { kind: "fric", nf: c === "h" ? 1800 : 4000 };
  if ("ptkbdgqj".includes(c)) return { kind: "stop", nf: c === "p" || c === "b" ? 1200 : 3500 };
  return { kind: "son", nf: 0 };
}

/**
 * Renders one sung line (a glottal pulse train through three formant resonators, with consonant
 * onsets as noise) into a temporary buffer, normalizes it and adds it to `out` at `gain`.
 */
function renderVocalLine(
  out: Float32Array,
  sr: number,
  line: SungNote[],
  low: boolean,
  gain: number,
  rng: Rng,
): void {
  if (line.length === 0) return;
  const last = line[line.length - 1];
  const s0 = Math.max(0, Math.round((line[0].t - 0.03) * sr));
  const s1 = Math.min(out.length, Math.round((last.t + last.d + 0.25) * sr));
  if (s1 <= s0) return;
  const buf = new Float32Array(s1 - s0);
  const r1 = new Resonator(sr);
  const r2 = new Resonator(sr);
  const r3 = new Resonator(sr);
  const rn = new Resonator(sr);
  const fs = low ? 0.95 : 1.1;
  const ctl = Math.max(8, Math.round(sr / 1000));
  const ctlSec = ctl / sr;
  const kAmp = 1 - Math.exp(-ctlSec / 0.015);
  const kForm = 1 - Math.exp(-ctlSec / 0.03);
  const kPitch = 1 - Math.exp(-ctlSec / 0.03);
  const onsets = line.map((n) => onsetKind(n.syl.onset));
  let pitch = midiHz(line[0].m);
  let f1 = 500 * fs;
  let f2 = 1500 * fs;
  let f3 = 2500 * fs;
  let voiceAmp = 0;
  let noiseAmp = 0;
  let nf = 5000;
  let phase = 0;
  let gPrev = 0;
  let lp = 0;
  let noisePrev = 0;
  let k = 0;
  const breath = 0.06;
  const tilt = 0.35;
  for (let n0 = 0; n0 < buf.length; n0 += ctl) {
    const t = (s0 + n0) / sr;
    while (k < line.length - 1 && t >= line[k + 1].t - 0.01) k++;
    const note = line[k];
    const local = t - note.t;
    const on = onsets[k];
    let tv = 0;
    let tn = 0;
    let vowel = SUNG_VOWELS[note.syl.vowel[0]] ?? SUNG_VOWELS.a;
    if (local >= -0.01 && local < note.d) {
      const onsetLen = on.kind === "none" ? 0 : Math.min(0.07, note.d * 0.3);
      if (local < onsetLen) {
        if (on.kind === "fric") tn = 0.5;
        else if (on.kind === "stop") tn = local > onsetLen * 0.6 ? 0.7 : 0;
        else if (on.kind === "son") {
          tv = 0.45;
          vowel = [280, 1200, 2400];
        }
      } else {
        tv = 1 - 0.15 * Math.min(1, (local - onsetLen) / 1.5);
      }
    }
    voiceAmp += (tv - voiceAmp) * kAmp;
    noiseAmp += (tn - noiseAmp) * (on.kind === "stop" ? 0.5 : kAmp);
    if (on.nf > 0) nf = on.nf;
    f1 += (vowel[0] * fs - f1) * kForm;
    f2 += (vowel[1] * fs - f2) * kForm;
    f3 += (vowel[2] * fs - f3) * kForm;
    const vibDepth = 0.012 * clamp((local - 0.18) / 0.25, 0, 1);
    const target = midiHz(note.m) * (1 + vibDepth * Math.sin(2 * Math.PI * 5.5 * t));
    pitch += (target - pitch) * kPitch;
    r1.set(f1, 70 + f1 * 0.05);
    r2.set(f2, 90 + f2 * 0.04);
    r3.set(f3, 140 + f3 * 0.03);
    rn.set(nf, 2500);
    const end = Math.min(buf.length, n0 + ctl);
    for (let n = n0; n < end; n++) {
      phase += pitch / sr;
      if (phase >= 1) phase -= 1;
      let g: number;
      if (phase < 0.4) g = 0.5 * (1 - Math.cos((Math.PI * phase) / 0.4));
      else if (phase < 0.6) g = Math.cos((Math.PI * (phase - 0.4)) / 0.4);
      else g = 0;
      const dg = ((g - gPrev) * sr) / (8 * pitch);
      gPrev = g;
      const white = rng() * 2 - 1;
      let src = dg + breath * white * (0.3 + g);
      lp += (src - lp) * (1 - tilt);
      src = lp;
      const voiced = r3.tick(r2.tick(r1.tick(src))) * voiceAmp;
      const hp = white - noisePrev;
      noisePrev = white;
      buf[n] = voiced + rn.tick(hp) * noiseAmp * 2;
    }
  }
  normalizePeak(buf, 1);
  for (let i = 0; i < buf.length; i++) out[s0 + i] += buf[i] * gain;
}

// ---------------------------------------------------------------------------------------------------
// Music rendering
// ---------------------------------------------------------------------------------------------------

/**
 * Synthesizes a song for `opts` (see {@link planMusic} for the arrangement): chords, bass, melody,
 * drums, a sung vocal line when {@link musicHasVocals}(lyrics), light reverb, a fade-in of up to 1.5 s
 * and a fade-out of up to 4 s. Returns mono samples in -1..1 (peak 0.89) at `opts.sampleRate` Hz,
 * exactly `round(durationSec x sampleRate)` long. Deterministic: identical options give identical
 * samples. Cost: about 5..10 ms per second of audio at 44.1 kHz.
 */
export function synthesizeMusic(opts: MusicSynthesisOptions): Float32Array {
  const sr = opts.sampleRate;
  checkRate(sr);
  const score = composeMusic(opts);
  const D = opts.durationSec;
  const out = new Float32Array(Math.max(1, Math.round(D * sr)));
  // Lyrics without a vocal line (e.g. "[Instrumental]") must not change a single sample.
  const sungLyrics = score.plan.vocals ? (opts.lyrics ?? "") : "";
  const noise = createRng(seedFrom("music-noise", opts.seed ?? "", opts.prompt, sungLyrics));
  for (const layer of score.layers) {
    for (const note of layer.notes) renderNote(out, sr, layer.inst, note, layer.gain, noise);
  }
  if (score.drums.length > 0) {
    const kit = makeDrumKit(sr, noise, score.drumTone);
    const drumGain = { kick: 0.6, snare: 0.38, hat: 0.16, open: 0.13, crash: 0.16 };
    for (const h of score.drums) mixSample(out, kit[h.kind], h.t, sr, h.v * drumGain[h.kind]);
  }
  for (const line of score.vocalLines) renderVocalLine(out, sr, line, score.voiceLow, 0.42, noise);
  applyReverb(out, sr, score.plan.reverb, score.plan.reverb > 0.3 ? 0.9 : 0.6);
  normalizePeak(out, 0.95);
  softClipAndDc(out, sr, 1.15);
  applyFades(out, sr, Math.min(1.5, D * 0.1), Math.min(4, D * 0.2));
  return normalizePeak(out, 0.89);
}

// ---------------------------------------------------------------------------------------------------
// Sound effects
// ---------------------------------------------------------------------------------------------------

/** Character families of {@link synthesizeSfx}, chosen from prompt keywords. */
export type SfxKind =
  | "rain"
  | "wind"
  | "water"
  | "fire"
  | "explosion"
  | "thunder"
  | "impact"
  | "footsteps"
  | "click"
  | "beep"
  | "alarm"
  | "siren"
  | "laser"
  | "whoosh"
  | "bird"
  | "engine"
  | "bell"
  | "applause"
  | "glass"
  | "generic";

/**
 * Keywords of each kind, in priority order: word prefixes, or (ending in `=`) whole words that may
 * take a plural `s`.
 */
const SFX_KEYWORDS: readonly (readonly [SfxKind, readonly string[]])[] = [
  ["explosion", ["explo", "boom", "blast=", "bomb", "detonat", "grenade", "kaboom"]],
  ["thunder", ["thunder", "storm", "lightning", "rumbl"]],
  ["rain", ["rain", "drizzl", "downpour", "shower=", "droplet", "drip"]],
  ["wind", ["wind=", "windy=", "breez", "gust", "howl", "blizzard", "air="]],
  ["water", ["water", "river", "stream", "ocean", "wave=", "sea=", "splash", "bubbl", "brook", "surf"]],
  ["fire", ["fire=", "crackl", "campfire", "flame", "burn", "fireplace"]],
  ["glass", ["glass", "shatter", "break=", "breaking=", "smash", "window"]],
  ["footsteps", ["footstep", "step=", "walk", "running=", "run=", "stomp", "march"]],
  ["impact", ["impact", "hit=", "punch", "slam", "door", "knock", "thud", "crash", "kick=", "drop="]],
  ["siren", ["siren", "police", "ambulance", "firetruck"]],
  ["alarm", ["alarm", "alert", "warning", "buzzer"]],
  ["click", ["click", "tick", "clock", "typing", "keyboard", "tap=", "switch", "button"]],
  ["beep", ["beep", "bleep", "notification", "ping=", "blip", "robot", "computer", "phone", "ring="]],
  ["laser", ["laser", "zap", "blaster", "scifi=", "sci=", "phaser", "shoot", "pew=", "ray="]],
  ["whoosh", ["whoosh", "swoosh", "swish", "swoop", "woosh", "transition", "fly=", "passing=", "swing="]],
  ["bird", ["bird", "chirp", "tweet", "sparrow", "forest", "songbird"]],
  ["engine", ["engine", "motor", "car=", "truck", "hum=", "drone", "machine", "vehicle", "generator"]],
  ["bell", ["bell", "chime", "ding=", "gong", "church", "doorbell"]],
  ["applause", ["applause", "clap", "crowd", "cheer", "audience"]],
];

function matchesStem(word: string, stem: string): boolean {
  if (!stem.endsWith("=")) return word.startsWith(stem);
  const exact = stem.slice(0, -1);
  return word === exact || word === `${exact}s`;
}

/** The kinds (at most 3, in order of priority) matching the prompt's words; `generic` when none do. */
export function sfxKindsOf(prompt: string): SfxKind[] {
  const words = [...wordsOf(prompt).set];
  const kinds: SfxKind[] = [];
  for (const [kind, stems] of SFX_KEYWORDS) {
    if (words.some((w) => stems.some((s) => matchesStem(w, s)))) kinds.push(kind);
    if (kinds.length === 3) break;
  }
  return kinds.length > 0 ? kinds : ["generic"];
}

/** Shortest and longest sound effect, in seconds (spec `duration_seconds`). */
export const SFX_MIN_SEC = 0.5;
export const SFX_MAX_SEC = 22;

/**
 * The duration in seconds of a sound effect: `durationSec` when given, otherwise what the model picks:
 * 2..6 s (0.1 s steps) from a hash of the prompt.
 */
export function sfxDurationSec(prompt: string, durationSec: number | null): number {
  if (durationSec !== null) return durationSec;
  return Math.round((2 + 4 * hashUnit("sfx-length", prompt)) * 10) / 10;
}

/** Options of {@link synthesizeSfx}. */
export interface SfxSynthesisOptions {
  /** Description of the sound; keywords pick its character ({@link sfxKindsOf}). */
  prompt: string;
  /** Length in seconds, or null to let the model pick ({@link sfxDurationSec}). */
  durationSec: number | null;
  /** 0 (creative: wider random variation plus an extra texture layer) to 1 (strict). */
  promptInfluence: number;
  /** Output sample rate in Hz (4000..192000). */
  sampleRate: number;
  /** Extra seed material, e.g. the model id. */
  seed?: string;
}

/** Shared state of the sfx layer renderers. */
interface SfxCtx {
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
function events(ctx: SfxCtx, rate: number, from = 0, to = ctx.dur): number[] {
  const ts: number[] = [];
  let t = from;
  for (;;) {
    t += (-Math.log(1 - ctx.p() * 0.999) / rate) * 1;
    if (t >= to) return ts;
    ts.push(t);
  }
}

/** Adds band-passed noise with amplitude `env(t)` (t in seconds), resonator at `freq(t)` Hz. */
function noiseLayer(
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
function toneLayer(
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
function transient(
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
function bellStrike(ctx: SfxCtx, t: number, f: number, gain: number, decay: number): void {
  const s0 = Math.round(t * ctx.sr);
  if (s0 >= ctx.out.length) return;
  fm(ctx.out, ctx.sr, s0, 6, f, gain, 1.4 + ctx.p() * 2.2, 2.5, 1.5, decay, 0.1);
}

/** Smoothly varying random curve in 0..1 with about `rate` changes per second. */
function wander(ctx: SfxCtx, rate: number): (t: number) => number {
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

function renderSfxKind(kind: SfxKind, ctx: SfxCtx, w: Words): void {
  const { dur, p, vary } = ctx;
  switch (kind) {
    case "rain": {
      const heavy = hasAny(w, ["heavy", "downpour", "storm", "pouring"]);
      const sw = wander(ctx, 0.5);
      noiseLayer(ctx, heavy ? 0.5 : 0.3, (t) => 0.8 + 0.2 * sw(t), () => vary(3500, 0.3), 5000);
      noiseLayer(ctx, 0.25, () => 1, () => vary(700, 0.3), 900);
      for (const t of events(ctx, vary(heavy ? 70 : 30, 0.4))) {
        const f = vary(3000, 0.5);
        toneLayer(ctx, t, 0.02, 0.15 * p(), (tt) => f * (1 + tt * 20), (tt) => Math.exp(-tt / 0.004));
      }
      return;
    }
    case "wind": {
      const gust = wander(ctx, vary(0.6, 0.5));
      const pitch = wander(ctx, 0.3);
      const base = vary(hasAny(w, ["howl", "howling", "strong"]) ? 600 : 350, 0.3);
      noiseLayer(ctx, 1, (t) => 0.2 + 0.8 * gust(t), (t) => base * (0.6 + 1.6 * pitch(t) * gust(t)), 180);
      noiseLayer(ctx, 0.15, (t) => 0.3 + 0.7 * gust(t), () => 1200, 2500);
      return;
    }
    case "water": {
      const waves = hasAny(w, ["ocean", "wave", "waves", "sea", "surf", "beach"]);
      const period = vary(7, 0.3);
      const env = waves
        ? (t: number) => 0.25 + 0.75 * Math.sin(Math.PI * ((t / period) % 1)) ** 3
        : () => 0.8;
      noiseLayer(ctx, 0.5, env, () => vary(waves ? 900 : 1800, 0.3), waves ? 2500 : 3000);
      noiseLayer(ctx, 0.3, env, () => 300, 600);
      if (!waves || hasAny(w, ["splash", "bubble", "bubbling", "stream", "brook"])) {
        for (const t of events(ctx, vary(18, 0.5))) {
          const f = vary(500, 0.6);
          toneLayer(ctx, t, 0.04, 0.12, (tt) => f * (1 + tt * 30), (tt) => Math.sin(Math.PI * (tt / 0.04)));
        }
      }
      return;
    }
    case "fire": {
      noiseLayer(ctx, 0.35, () => 1, () => 250, 400);
      const burst = wander(ctx, 1.5);
      for (const t of events(ctx, vary(25, 0.5))) {
        if (p() > 0.3 + 0.7 * burst(t)) continue;
        transient(ctx, t, 0.25 * p() + 0.05, 0, vary(3000, 0.5), 0.002 + 0.004 * p());
      }
      return;
    }
    case "explosion": {
      const decay = clamp(dur * 0.35, 0.2, 3);
      noiseLayer(
        ctx,
        1.2,
        (t) => (t < 0.01 ? t / 0.01 : Math.exp(-(t - 0.01) / decay)),
        (t) => 120 + 2500 * Math.exp(-t * 6),
        900,
      );
      const thump = (t: number) => 30 + 70 * Math.exp(-t * 5);
      toneLayer(ctx, 0, Math.min(dur, 2.5), 0.9, thump, (t) => Math.exp(-t / (decay * 0.6)));
      for (const t of events(ctx, 12, 0.2, Math.min(dur, 0.2 + decay * 2))) {
        transient(ctx, t, 0.12 * Math.exp(-t / decay), 0, vary(2500, 0.5), 0.003);
      }
      return;
    }
    case "thunder": {
      transient(ctx, vary(0.05, 0.5), 0.7, 0, 3000, 0.05);
      const rumble = wander(ctx, 2.5);
      const decay = clamp(dur * 0.45, 0.3, 6);
      const f = vary(110, 0.3);
      noiseLayer(ctx, 1.3, (t) => Math.exp(-t / decay) * (0.35 + 0.65 * rumble(t)), () => f, 150);
      noiseLayer(ctx, 0.3, (t) => Math.exp(-t / (decay * 0.5)), () => 600, 800);
      return;
    }
    case "impact": {
      const knock = hasAny(w, ["knock", "knocking"]);
      const gap = knock ? vary(0.22, 0.2) : vary(dur > 3 ? 1.6 : dur, 0.3);
      const count = knock ? 3 * Math.max(1, Math.floor(dur / 2)) : Math.max(1, Math.floor(dur / gap));
      for (let i = 0; i < count; i++) {
        const t = knock ? 0.02 + (i % 3) * gap + Math.floor(i / 3) * 2 : 0.02 + i * gap;
        if (t >= dur) break;
        const thumpHz = vary(knock ? 180 : 70, 0.3);
        transient(ctx, t, vary(0.9, 0.2), thumpHz, vary(knock ? 900 : 500, 0.3), vary(0.05, 0.4));
      }
      return;
    }
    case "footsteps": {
      const running = hasAny(w, ["run", "running", "jog", "jogging", "sprint"]);
      const gravel = hasAny(w, ["gravel", "snow", "leaves", "grass", "dirt"]);
      const step = vary(running ? 0.32 : 0.55, 0.1);
      for (let t = 0.05, i = 0; t < dur - 0.05; t += step * (0.95 + 0.1 * p()), i++) {
        const g = (i % 2 === 0 ? 0.9 : 0.75) * vary(1, 0.1);
        transient(ctx, t, g * 0.7, vary(90, 0.2), vary(gravel ? 2500 : 800, 0.3), 0.025);
        if (gravel) {
          noiseLayer(ctx, 0.3 * g, (tt) => Math.exp(-(tt - t) / 0.06), () => 3500, 3000, t, t + 0.25);
        }
      }
      return;
    }
    case "click": {
      const clock = hasAny(w, ["clock", "ticking", "tock"]);
      const typing = hasAny(w, ["typing", "keyboard", "keys"]);
      if (clock) {
        for (let t = 0.05, i = 0; t < dur; t += 0.5, i++) {
          transient(ctx, t, 0.6, 0, i % 2 === 0 ? 3200 : 2400, 0.004);
        }
      } else if (typing) {
        for (const t of events(ctx, vary(9, 0.3), 0.02)) {
          transient(ctx, t, vary(0.5, 0.4), 0, vary(2200, 0.3), 0.006);
        }
      } else {
        const gap = vary(dur < 1.5 ? dur / 2 : 0.45, 0.3);
        for (let t = 0.02; t < dur; t += gap) transient(ctx, t, 0.7, 0, vary(4000, 0.3), 0.003);
      }
      return;
    }
    case "beep": {
      const f = vary(hasAny(w, ["low"]) ? 440 : 1000, 0.4);
      const on = vary(0.15, 0.3);
      const gap = vary(0.45, 0.4);
      for (let t = 0.02, i = 0; t < dur - 0.05; t += on + gap, i++) {
        const fi = hasAny(w, ["robot", "computer"]) ? f * (1 + 0.5 * Math.floor(p() * 4)) : f;
        toneLayer(ctx, t, on, 0.5, () => fi, (tt) => Math.min(1, tt / 0.005, (on - tt) / 0.01), 0.2);
      }
      return;
    }
    case "alarm": {
      const f1 = vary(880, 0.2);
      const f2 = f1 * vary(1.26, 0.1);
      const rate = vary(4, 0.3);
      toneLayer(
        ctx,
        0,
        dur,
        0.45,
        (t) => (Math.floor(t * rate) % 2 === 0 ? f1 : f2),
        () => 1,
        0.3,
      );
      return;
    }
    case "siren": {
      const lo = vary(650, 0.2);
      const hi = lo * vary(2, 0.2);
      const rate = vary(hasAny(w, ["police", "yelp"]) ? 1.2 : 0.3, 0.3);
      const sweep = (t: number) => lo + (hi - lo) * (0.5 - 0.5 * Math.cos(2 * Math.PI * rate * t));
      toneLayer(ctx, 0, dur, 0.5, sweep, () => 1, 0.25);
      return;
    }
    case "laser": {
      const shot = vary(0.25, 0.3);
      const gap = vary(0.5, 0.4);
      const f0 = vary(3500, 0.3);
      for (let t = 0.01; t < dur - 0.05; t += shot + gap) {
        toneLayer(
          ctx,
          t,
          shot,
          0.45,
          (tt) => 150 + f0 * Math.exp(-tt * (12 / shot)),
          (tt) => Math.exp(-tt / (shot * 0.5)),
          0.4,
        );
      }
      return;
    }
    case "whoosh": {
      const len = Math.min(dur, vary(1, 0.4));
      const gap = vary(1.2, 0.3);
      for (let t0 = 0; t0 < dur - 0.1; t0 += len + gap) {
        const l = Math.min(len, dur - t0);
        noiseLayer(
          ctx,
          1,
          (t) => Math.sin(Math.PI * clamp((t - t0) / l, 0, 1)) ** 2,
          (t) => 300 + 2500 * Math.sin(Math.PI * clamp((t - t0) / l, 0, 1)),
          600,
          t0,
          t0 + l,
        );
        if (len + gap > dur) break;
      }
      return;
    }
    case "bird": {
      for (const t of events(ctx, vary(2.5, 0.4), 0.05)) {
        const n = 1 + Math.floor(p() * 5);
        const f = vary(3200, 0.3);
        const cl = vary(0.07, 0.3);
        for (let i = 0; i < n; i++) {
          toneLayer(
            ctx,
            t + i * cl * 1.3,
            cl,
            0.3,
            (tt) => f * (1 + 0.5 * (tt / cl)) + 300 * Math.sin(2 * Math.PI * 60 * tt),
            (tt) => Math.sin(Math.PI * (tt / cl)),
          );
        }
      }
      return;
    }
    case "engine": {
      const f0 = vary(hasAny(w, ["hum", "fan", "generator"]) ? 60 : 45, 0.3);
      const rev = wander(ctx, 0.4);
      const { out, sr } = ctx;
      let ph = 0;
      let lpS = 0;
      for (let i = 0; i < out.length; i++) {
        const t = i / sr;
        const f = f0 * (0.85 + 0.4 * rev(t)) * (1 + 0.02 * Math.sin(2 * Math.PI * 7 * t));
        ph += f / sr;
        ph -= Math.floor(ph);
        const saw = 2 * ph - 1 - polyBlep(ph, f / sr);
        lpS += (saw - lpS) * 0.05;
        out[i] += lpS * 0.6;
      }
      noiseLayer(ctx, 0.2, () => 1, (t) => 400 + 300 * rev(t), 500);
      return;
    }
    case "bell": {
      const gong = hasAny(w, ["gong"]);
      const f = vary(gong ? 110 : hasAny(w, ["church"]) ? 330 : 880, 0.3);
      const gap = vary(gong ? dur : 1.2, 0.3);
      for (let t = 0.01; t < dur - 0.05; t += gap) bellStrike(ctx, t, f, 0.6, gong ? 0.4 : 1.2);
      return;
    }
    case "applause": {
      const crowd = wander(ctx, 0.8);
      const rate = vary(hasAny(w, ["crowd", "audience", "cheer"]) ? 60 : 30, 0.3);
      for (const t of events(ctx, rate)) {
        transient(ctx, t, 0.25 * (0.5 + 0.5 * crowd(t)), 0, vary(1500, 0.4), 0.008);
      }
      if (hasAny(w, ["cheer", "cheering", "crowd"])) {
        noiseLayer(ctx, 0.3, (t) => 0.5 + 0.5 * crowd(t), () => 700, 900);
      }
      return;
    }
    case "glass": {
      noiseLayer(ctx, 1, (t) => Math.exp(-t / 0.12), () => 5000, 5000, 0, Math.min(dur, 1));
      for (const t of events(ctx, 25, 0, Math.min(dur, 1.5))) {
        bellStrike(ctx, t, vary(3500, 0.4), 0.15 * Math.exp(-t / 0.6), 9);
      }
      return;
    }
    case "generic": {
      const mv = wander(ctx, vary(1, 0.5));
      const fall = Math.max(0.3, dur * 0.5);
      const env = (t: number) => Math.min(1, t / 0.05) * (0.4 + 0.6 * Math.exp(-t / fall));
      noiseLayer(ctx, 0.6, env, (t) => vary(600, 0.5) * (0.5 + 1.5 * mv(t)), 400);
      for (const t of events(ctx, vary(3, 0.5))) {
        const f = vary(700, 0.7);
        const glide = (tt: number) => f * (1 + 0.3 * tt);
        toneLayer(ctx, t, 0.12, 0.2 * env(t), glide, (tt) => Math.sin(Math.PI * (tt / 0.12)));
      }
      return;
    }
  }
}

/**
 * Synthesizes a sound effect for `opts`: up to three layers chosen by {@link sfxKindsOf} (the first the
 * loudest), plus a faint generic texture when `promptInfluence < 0.35`, 5 ms fades and a peak of 0.89.
 * Returns mono samples in -1..1 at `opts.sampleRate` Hz, `round(sfxDurationSec(prompt, durationSec) x
 * sampleRate)` long. Deterministic per (prompt, durationSec, promptInfluence, seed, sampleRate).
 */
export function synthesizeSfx(opts: SfxSynthesisOptions): Float32Array {
  const sr = opts.sampleRate;
  checkRate(sr);
  const dur = sfxDurationSec(opts.prompt, opts.durationSec);
  checkDuration(dur);
  const influence = clamp(Number.isFinite(opts.promptInfluence) ? opts.promptInfluence : 0.3, 0, 1);
  const out = new Float32Array(Math.max(1, Math.round(dur * sr)));
  const w = wordsOf(opts.prompt);
  const kinds = sfxKindsOf(opts.prompt);
  if (influence < 0.35 && kinds[0] !== "generic") kinds.push("generic");
  const layer = new Float32Array(out.length);
  const spread = 0.15 + 0.85 * (1 - influence);
  kinds.forEach((kind, i) => {
    const seed = seedFrom("sfx", opts.seed ?? "", opts.prompt, String(dur), String(influence), kind);
    const p = createRng(seed);
    const ctx: SfxCtx = {
      out: layer,
      sr,
      dur,
      p,
      n: createRng(seedFrom("sfx-noise", opts.seed ?? "", opts.prompt, String(dur), kind)),
      vary: (base, rel) => base * (1 + (p() * 2 - 1) * rel * spread),
    };
    layer.fill(0);
    renderSfxKind(kind, ctx, w);
    normalizePeak(layer, 1);
    const g = kind === "generic" && i > 0 ? 0.15 : i === 0 ? 1 : 0.6;
    for (let n = 0; n < out.length; n++) out[n] += layer[n] * g;
  });
  softClipAndDc(out, sr, 1);
  applyFades(out, sr, 0.005, Math.min(0.05, dur * 0.1));
  return normalizePeak(out, 0.89);
}

// ---------------------------------------------------------------------------------------------------
// Rendering jobs (synthesis + encoding), shared by the inline path and the encode worker
// ---------------------------------------------------------------------------------------------------

/**
 * Everything that determines a rendered music or sound-effect clip; structured-clone safe (sent to
 * the encode worker). `durationSec` is the resolved length in seconds; `model` is seed material.
 */
export type MediaRenderJob =
  | {
      kind: "music";
      model: string;
      prompt: string;
      lyrics: string | null;
      durationSec: number;
      format: AudioFormat;
    }
  | {
      kind: "sfx";
      model: string;
      prompt: string;
      durationSec: number;
      promptInfluence: number;
      format: AudioFormat;
    };

/** Encoder chunk length of {@link renderMediaChunks}: about 1 s of audio (whole MP3 frames). */
export const MEDIA_CHUNK_SEC = 1;

/**
 * Synthesizes `job` directly at the format's sample rate and returns the nominal duration
 * (`job.durationSec`, seconds) and a lazy generator of encoded chunks (about {@link MEDIA_CHUNK_SEC} s
 * of audio each) whose concatenation is the complete file in `job.format`.
 */
export function renderMediaChunks(job: MediaRenderJob): {
  durationSec: number;
  chunks: Generator<Uint8Array, void, undefined>;
} {
  const rate = audioFormatInfo(job.format).sampleRate;
  const samples =
    job.kind === "music"
      ? synthesizeMusic({
          prompt: job.prompt,
          lyrics: job.lyrics,
          durationSec: job.durationSec,
          sampleRate: rate,
          seed: job.model,
        })
      : synthesizeSfx({
          prompt: job.prompt,
          durationSec: job.durationSec,
          promptInfluence: job.promptInfluence,
          sampleRate: rate,
          seed: job.model,
        });
  const frame = mp3FrameSamples(rate);
  const chunk = Math.max(frame, Math.round((rate * MEDIA_CHUNK_SEC) / frame) * frame);
  return { durationSec: job.durationSec, chunks: encodeAudioChunks(samples, rate, job.format, chunk) };
}
