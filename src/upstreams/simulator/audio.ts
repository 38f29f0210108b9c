/**
 * Pure audio synthesis and encoding for the built-in simulator (decision D10).
 *
 * Everything here is deterministic and free of I/O: the same inputs always give the same samples and
 * the same bytes. Samples are mono `Float32Array`s in -1..1 at a stated sample rate (Hz). The generic
 * helpers ({@link createRng}, {@link seedFrom}, {@link adsr}, {@link resampleLinear}, {@link Resonator})
 * are meant to be reused by the music and sound-effect synthesizers.
 */

import { createHash } from "node:crypto";
import { Mp3Encoder } from "@breezystack/lamejs";
import type { AudioFormat, VoiceSettings } from "../types.ts";

// ---------------------------------------------------------------------------------------------------
// Generic helpers
// ---------------------------------------------------------------------------------------------------

/** A seeded pseudo-random generator: each call returns a float in [0, 1). */
export type Rng = () => number;

/**
 * 16 seed bytes (the first half of a SHA-256) derived from any list of strings. Parts are joined
 * with a separator that cannot appear by accident, so `["ab", "c"]` and `["a", "bc"]` differ.
 */
export function seedFrom(...parts: string[]): Uint8Array {
  const h = createHash("sha256");
  for (const p of parts) h.update(`${p.length}:${p}\u0000`);
  return new Uint8Array(h.digest().buffer, 0, 16);
}

/**
 * A fast deterministic PRNG (sfc32) seeded with at least 16 bytes (for example from {@link seedFrom})
 * or with a string (hashed with {@link seedFrom}). Never uses `Math.random`.
 */
export function createRng(seed: Uint8Array | string): Rng {
  const bytes = typeof seed === "string" ? seedFrom(seed) : seed;
  if (bytes.length < 16) throw new RangeError("createRng needs at least 16 seed bytes");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, 16);
  let a = dv.getUint32(0, true);
  let b = dv.getUint32(4, true);
  let c = dv.getUint32(8, true);
  let d = dv.getUint32(12, true) | 1;
  const next: Rng = () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  // Warm up so that similar seeds diverge.
  for (let i = 0; i < 12; i++) next();
  return next;
}

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

// ---------------------------------------------------------------------------------------------------
// Speech synthesis
// ---------------------------------------------------------------------------------------------------

/** Speaking rate of the simulated voices, in characters (Unicode code points) per second. */
export const SPEECH_CHARS_PER_SEC = 15;
/** Shortest clip produced for any text (even empty), in seconds. */
export const MIN_SPEECH_SEC = 0.3;

/**
 * Duration in seconds of the clip {@link synthesizeSpeech} produces for `text`:
 * `max(0.3, codePoints / 15)`. The sample count is `round(duration x sampleRate)`.
 */
export function speechDurationSec(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return Math.max(MIN_SPEECH_SEC, n / SPEECH_CHARS_PER_SEC);
}

/** Options of {@link synthesizeSpeech}. */
export interface SpeechSynthesisOptions {
  /** Text to speak (any script; Latin letters get the most speech-like treatment). */
  text: string;
  /** Voice identifier; its hash sets pitch, timbre and breathiness. */
  voiceId: string;
  /** Output sample rate in Hz (8000..48000). */
  sampleRate: number;
  /** Voice settings (each 0..1): stability flattens intonation, style exaggerates it. */
  settings?: VoiceSettings;
  /** Extra seed material (for example the model id): changes micro-variation, not the voice. */
  variant?: string;
}

type PhoneKind = "vowel" | "approx" | "nasal" | "vfric" | "fric" | "stop" | "vstop" | "pause" | "stop_phrase";

interface Phone {
  kind: PhoneKind;
  /** Formants F1..F3 in Hz (voiced kinds). */
  f: readonly [number, number, number];
  /** Noise centre frequency and bandwidth in Hz (noisy kinds). */
  nf: number;
  nbw: number;
  /** Relative loudness. */
  amp: number;
}

const VOWELS: Record<string, readonly [number, number, number]> = {
  a: [730, 1090, 2440],
  e: [530, 1840, 2480],
  i: [300, 2250, 3000],
  o: [570, 840, 2410],
  u: [320, 870, 2240],
  y: [350, 1900, 2600],
};
const VOWEL_LIST = Object.values(VOWELS);
const NEUTRAL: readonly [number, number, number] = [500, 1500, 2500];

function phone(kind: PhoneKind, f: readonly [number, number, number], nf: number, nbw: number, amp: number) {
  return { kind, f, nf, nbw, amp } satisfies Phone;
}

const CONSONANTS: Record<string, Phone> = {
  l: phone("approx", [360, 1300, 2700], 0, 0, 0.6),
  r: phone("approx", [420, 1300, 1600], 0, 0, 0.6),
  w: phone("approx", [300, 700, 2200], 0, 0, 0.55),
  j: phone("approx", [280, 2200, 2900], 0, 0, 0.55),
  m: phone("nasal", [250, 1100, 2300], 0, 0, 0.4),
  n: phone("nasal", [250, 1600, 2500], 0, 0, 0.4),
  v: phone("vfric", [300, 1200, 2400], 4000, 3000, 0.45),
  z: phone("vfric", [300, 1600, 2500], 5500, 2000, 0.45),
  s: phone("fric", NEUTRAL, 6000, 2000, 0.5),
  c: phone("fric", NEUTRAL, 5500, 2200, 0.45),
  x: phone("fric", NEUTRAL, 3000, 2500, 0.4),
  f: phone("fric", NEUTRAL, 4500, 4000, 0.25),
  h: phone("fric", NEUTRAL, 1500, 2500, 0.2),
  p: phone("stop", [400, 900, 2300], 1000, 1500, 0.45),
  t: phone("stop", [400, 1700, 2600], 4000, 2500, 0.5),
  k: phone("stop", [400, 1900, 2400], 2000, 1500, 0.5),
  q: phone("stop", [400, 1900, 2400], 2000, 1500, 0.5),
  b: phone("vstop", [300, 900, 2300], 1000, 1500, 0.35),
  d: phone("vstop", [300, 1700, 2600], 3500, 2500, 0.35),
  g: phone("vstop", [300, 1900, 2400], 2000, 1500, 0.35),
};
const CONSONANT_LIST = Object.values(CONSONANTS);
const PAUSE = phone("pause", NEUTRAL, 0, 0, 0);
const PHRASE_END = phone("stop_phrase", NEUTRAL, 0, 0, 0);

/** Relative time weight of each phone kind (total duration is fixed by the text length). */
const WEIGHT: Record<PhoneKind, number> = {
  vowel: 1.25,
  approx: 0.9,
  nasal: 0.9,
  vfric: 0.9,
  fric: 0.95,
  stop: 0.8,
  vstop: 0.8,
  pause: 0.9,
  stop_phrase: 2.2,
};

function classify(ch: string): Phone {
  if (ch === "." || ch === "!" || ch === "?" || ch === "\n" || ch === ";") return PHRASE_END;
  const base = ch.normalize("NFD").charAt(0).toLowerCase();
  const v = VOWELS[base];
  if (v) return phone("vowel", v, 0, 0, 1);
  const c = CONSONANTS[base];
  if (c) return c;
  if (base >= "0" && base <= "9") {
    const d = base.charCodeAt(0) - 48;
    return phone("vowel", VOWEL_LIST[d % VOWEL_LIST.length], 0, 0, 0.9);
  }
  const cp = ch.codePointAt(0) ?? 32;
  // Letters of other scripts: a deterministic mix of vowels and consonants.
  if (/\p{L}/u.test(ch)) {
    if (cp % 7 < 4) return phone("vowel", VOWEL_LIST[cp % VOWEL_LIST.length], 0, 0, 1);
    return CONSONANT_LIST[cp % CONSONANT_LIST.length];
  }
  return PAUSE;
}

/** Voice timbre derived from the voice id only. */
interface VoiceTimbre {
  f0: number;
  formantScale: number;
  breath: number;
  tilt: number;
}

function voiceTimbre(voiceId: string): VoiceTimbre {
  const r = createRng(seedFrom("voice", voiceId));
  const low = r() < 0.5;
  const f0 = low ? 85 + r() * 60 : 160 + r() * 80;
  return {
    f0,
    formantScale: (low ? 0.95 : 1.12) + (r() - 0.5) * 0.1,
    breath: 0.03 + r() * 0.12,
    tilt: 0.2 + r() * 0.5,
  };
}

function clamp01(v: number | undefined, dflt: number): number {
  if (v === undefined || !Number.isFinite(v)) return dflt;
  return Math.min(1, Math.max(0, v));
}

/**
 * Synthesizes speech-like audio for `opts.text` with a source-filter model: a glottal pulse train
 * (pitch from a hash of the voice id, intonation by phrase and word), formant resonators per vowel and
 * consonant class, noise for fricatives and stops, and pauses at spaces and punctuation.
 *
 * Returns mono samples in -1..1 at `opts.sampleRate` Hz; the length is
 * `round(speechDurationSec(text) x sampleRate)`. Deterministic: the same options give identical samples.
 */
export function synthesizeSpeech(opts: SpeechSynthesisOptions): Float32Array {
  const sr = opts.sampleRate;
  if (!(sr >= 4000 && sr <= 192000)) throw new RangeError(`unsupported sample rate ${sr}`);
  const chars = Array.from(opts.text);
  const total = Math.round(speechDurationSec(opts.text) * sr);
  const out = new Float32Array(total);
  const settings = opts.settings ?? {};
  const stability = clamp01(settings.stability, 0.5);
  const similarity = clamp01(settings.similarity_boost, 0.75);
  const style = clamp01(settings.style, 0);
  const boost = settings.use_speaker_boost === true;
  const timbre = voiceTimbre(opts.voiceId);
  const rng = createRng(
    seedFrom(
      "speech",
      opts.text,
      opts.voiceId,
      opts.variant ?? "",
      String(stability),
      String(similarity),
      String(style),
      String(boost),
    ),
  );

  // --- Plan: phones with start/end sample, word accents and phrase boundaries.
  const phones = chars.map(classify);
  if (phones.length === 0) phones.push(PAUSE);
  let weightSum = 0;
  for (const p of phones) weightSum += WEIGHT[p.kind];
  const starts = new Float64Array(phones.length + 1);
  {
    let acc = 0;
    for (let i = 0; i < phones.length; i++) {
      starts[i] = (acc / weightSum) * total;
      acc += WEIGHT[phones[i].kind];
    }
    starts[phones.length] = total;
  }
  const pitchRange = 0.06 + 0.22 * (1 - stability) + 0.2 * style;
  const accent = new Float32Array(phones.length); // pitch multiplier offset per phone (per word)
  const loud = new Float32Array(phones.length); // loudness multiplier per phone
  const phraseStart = new Int32Array(phones.length);
  const phraseEnd = new Int32Array(phones.length);
  const question = new Uint8Array(phones.length);
  {
    let wordAccent = (rng() - 0.5) * pitchRange;
    let wordLoud = 0.8 + rng() * 0.2;
    let ps = 0;
    for (let i = 0; i < phones.length; i++) {
      const k = phones[i].kind;
      if (k === "pause" || k === "stop_phrase") {
        wordAccent = (rng() - 0.5) * pitchRange;
        wordLoud = 0.75 + rng() * (0.25 + 0.3 * style);
      }
      accent[i] = wordAccent;
      loud[i] = wordLoud * (0.9 + rng() * 0.1 * (1 + (1 - stability)));
      if (k === "stop_phrase" || i === phones.length - 1) {
        const q = chars[i] === "?" ? 1 : 0;
        for (let j = ps; j <= i; j++) {
          phraseStart[j] = ps;
          phraseEnd[j] = i;
          question[j] = q;
        }
        ps = i + 1;
      }
    }
  }

  // --- Render.
  const r1 = new Resonator(sr);
  const r2 = new Resonator(sr);
  const r3 = new Resonator(sr);
  const rn = new Resonator(sr);
  const bwScale = 1.6 - 0.8 * similarity; // higher similarity: narrower, clearer formants
  const ctl = Math.max(8, Math.round(sr / 1000)); // control period: about 1 ms
  const ctlSec = ctl / sr;
  const kAmp = 1 - Math.exp(-ctlSec / 0.012);
  const kForm = 1 - Math.exp(-ctlSec / 0.025);
  const kPitch = 1 - Math.exp(-ctlSec / 0.06);
  const fs = timbre.formantScale;
  let f1 = NEUTRAL[0] * fs;
  let f2 = NEUTRAL[1] * fs;
  let f3 = NEUTRAL[2] * fs;
  let voiceAmp = 0;
  let noiseAmp = 0;
  let nf = 3000;
  let nbw = 2000;
  let pitch = timbre.f0;
  let phase = 0;
  let periodF0 = timbre.f0;
  let gPrev = 0;
  let lp = 0; // spectral tilt low-pass state
  const tiltK = boost ? timbre.tilt * 0.6 : timbre.tilt;
  let noiseState = 0;
  let pi = 0;
  const vibRate = 4.5 + rng() * 1.5;
  const vibDepth = 0.004 + 0.01 * (1 - stability);
  for (let n0 = 0; n0 < total; n0 += ctl) {
    // Control-rate targets.
    while (pi < phones.length - 1 && n0 >= starts[pi + 1]) pi++;
    const p = phones[pi];
    const segLen = Math.max(1, starts[pi + 1] - starts[pi]);
    const pos = (n0 - starts[pi]) / segLen; // 0..1 within the phone
    let tv = 0; // voicing target
    let tn = 0; // noise target
    switch (p.kind) {
      case "vowel":
        tv = p.amp;
        break;
      case "approx":
      case "nasal":
        tv = p.amp;
        break;
      case "vfric":
        tv = p.amp * 0.7;
        tn = p.amp * 0.6;
        break;
      case "fric":
        tn = p.amp;
        break;
      case "stop":
        tn = pos > 0.55 && pos < 0.8 ? p.amp * 1.3 : pos >= 0.8 ? p.amp * 0.3 : 0;
        break;
      case "vstop":
        tv = pos < 0.55 ? 0.12 : 0.3;
        tn = pos > 0.55 && pos < 0.75 ? p.amp : 0;
        break;
      default:
        break;
    }
    const l = loud[pi];
    tv *= l;
    tn *= l;
    if (p.kind !== "pause" && p.kind !== "stop_phrase" && p.kind !== "fric" && p.kind !== "stop") {
      f1 += (p.f[0] * fs - f1) * kForm;
      f2 += (p.f[1] * fs - f2) * kForm;
      f3 += (p.f[2] * fs - f3) * kForm;
    }
    voiceAmp += (tv - voiceAmp) * kAmp;
    noiseAmp += (tn - noiseAmp) * (p.kind === "stop" || p.kind === "vstop" ? 0.5 : kAmp);
    if (p.nf > 0) {
      nf = p.nf;
      nbw = p.nbw;
    }
    // Intonation: declination over the phrase, rise at the end of a question, word accents, vibrato.
    const ps = starts[phraseStart[pi]];
    const pe = starts[phraseEnd[pi] + 1];
    const ph = pe > ps ? (n0 - ps) / (pe - ps) : 0;
    let contour = 0.08 - 0.16 * ph;
    if (question[pi] && ph > 0.7) contour += (ph - 0.7) * 1.2;
    const t = n0 / sr;
    const targetPitch =
      timbre.f0 *
      (1 + contour * (0.6 + pitchRange) + accent[pi]) *
      (1 + vibDepth * Math.sin(2 * Math.PI * vibRate * t));
    pitch += (targetPitch - pitch) * kPitch;
    r1.set(f1, 60 * bwScale + f1 * 0.06);
    r2.set(f2, 90 * bwScale + f2 * 0.05);
    r3.set(f3, 150 * bwScale + f3 * 0.04);
    rn.set(nf, nbw);

    const end = Math.min(total, n0 + ctl);
    for (let n = n0; n < end; n++) {
      // Glottal source (Rosenberg pulse); its derivative approximates flow derivative + lip radiation.
      phase += periodF0 / sr;
      if (phase >= 1) {
        phase -= 1;
        periodF0 = pitch * (1 + (rng() - 0.5) * 0.01 * (1.5 - stability)); // jitter
      }
      let g: number;
      if (phase < 0.4) g = 0.5 * (1 - Math.cos((Math.PI * phase) / 0.4));
      else if (phase < 0.6) g = Math.cos((Math.PI * (phase - 0.4)) / 0.4);
      else g = 0;
      const dg = ((g - gPrev) * sr) / (8 * periodF0);
      gPrev = g;
      const white = rng() * 2 - 1;
      let src = dg + timbre.breath * white * (0.3 + g);
      lp += (src - lp) * (1 - tiltK);
      src = lp;
      const voiced = r3.tick(r2.tick(r1.tick(src))) * voiceAmp;
      // Noise branch: high-passed white noise through a wide resonator.
      const hp = white - noiseState;
      noiseState = white;
      const noisy = rn.tick(hp) * noiseAmp * 2.5;
      out[n] = voiced + noisy;
    }
  }

  // DC blocker, then 5 ms fades and peak normalization.
  let xPrev = 0;
  let yPrev = 0;
  const rDc = 1 - 2 * Math.PI * (40 / sr);
  for (let n = 0; n < total; n++) {
    const x = out[n];
    const y = x - xPrev + rDc * yPrev;
    xPrev = x;
    yPrev = y;
    out[n] = y;
  }
  const fade = Math.min(Math.floor(total / 2), Math.round(sr * 0.005));
  for (let n = 0; n < fade; n++) {
    const g = n / fade;
    out[n] *= g;
    out[total - 1 - n] *= g;
  }
  return normalizePeak(out, 0.8);
}

// ---------------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------------

/** Codec, sample rate (Hz) and, for MP3, bit rate (kbit/s) of an {@link AudioFormat}. */
export interface AudioFormatInfo {
  codec: "mp3" | "pcm" | "ulaw";
  sampleRate: number;
  bitrateKbps: number | null;
}

/** Parses a format name such as `mp3_44100_128`, `pcm_24000` or `ulaw_8000`. */
export function audioFormatInfo(format: AudioFormat): AudioFormatInfo {
  const [codec, rate, kbps] = format.split("_");
  if (codec !== "mp3" && codec !== "pcm" && codec !== "ulaw")
    throw new RangeError(`unknown format ${format}`);
  return { codec, sampleRate: Number(rate), bitrateKbps: codec === "mp3" ? Number(kbps) : null };
}

/** Float samples (-1..1, clipped) to signed 16-bit integers. */
export function floatToInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i];
    const c = Math.min(1, Math.max(-1, v));
    out[i] = c < 0 ? Math.round(c * 32768) : Math.round(c * 32767);
  }
  return out;
}

/** Raw 16-bit little-endian bytes of `pcm` (no header). */
function int16ToLeBytes(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length * 2);
  for (let i = 0, j = 0; i < pcm.length; i++, j += 2) {
    const v = pcm[i];
    out[j] = v & 0xff;
    out[j + 1] = (v >> 8) & 0xff;
  }
  return out;
}

/** G.711 mu-law encoding of one signed 16-bit sample. */
export function linearToUlaw(sample: number): number {
  const BIAS = 0x84;
  const CLIP = 32635;
  let s = sample;
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** G.711 mu-law decoding of one byte to a signed 16-bit sample (inverse of {@link linearToUlaw}). */
export function ulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const sign = u & 0x80;
  const exponent = (u >> 4) & 0x07;
  const mantissa = u & 0x0f;
  const s = (((mantissa << 3) + 0x84) << exponent) - 0x84;
  return sign ? -s : s;
}

function int16ToUlaw(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = linearToUlaw(pcm[i]);
  return out;
}

/** Samples per MPEG frame: 1152 for MPEG-1 (32, 44.1, 48 kHz), 576 for MPEG-2/2.5 (lower rates). */
export function mp3FrameSamples(sampleRate: number): number {
  return sampleRate >= 32000 ? 1152 : 576;
}

/** Default chunk size of the chunked encoders: about 0.2 s of audio, a whole number of MP3 frames. */
function defaultChunkSamples(rate: number): number {
  const frame = mp3FrameSamples(rate);
  return Math.max(frame, Math.round((rate * 0.2) / frame) * frame);
}

function asBytes(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/**
 * Streaming MP3 encoder: encodes `samples` (mono, -1..1 at `sampleRate` Hz; resampled linearly to the
 * format's rate) as MP3 with the bit rate of `format`, feeding `chunkSamples` samples (at the format's
 * rate) at a time and yielding each non-empty piece of MP3 frames the encoder produces, then the flush.
 * The concatenation of all yielded pieces is one valid, complete MP3 stream (MPEG-1 Layer III at 44.1
 * kHz, MPEG-2 Layer III at 22.05 kHz), byte-identical to {@link encodeAudio}.
 */
export function* encodeMp3Chunks(
  samples: Float32Array,
  sampleRate: number,
  format: AudioFormat,
  chunkSamples?: number,
): Generator<Uint8Array, void, undefined> {
  const info = audioFormatInfo(format);
  if (info.codec !== "mp3" || info.bitrateKbps === null)
    throw new RangeError(`${format} is not an mp3 format`);
  const pcm = floatToInt16(resampleLinear(samples, sampleRate, info.sampleRate));
  const step = Math.max(1, Math.floor(chunkSamples ?? defaultChunkSamples(info.sampleRate)));
  const enc = new Mp3Encoder(1, info.sampleRate, info.bitrateKbps);
  for (let i = 0; i < pcm.length; i += step) {
    const out = enc.encodeBuffer(pcm.subarray(i, Math.min(pcm.length, i + step)));
    if (out.length > 0) yield asBytes(out);
  }
  const tail = enc.flush();
  if (tail.length > 0) yield asBytes(tail);
}

/**
 * Chunked encoder for every format: MP3 via {@link encodeMp3Chunks}; `pcm_*` and `ulaw_8000` yield
 * consecutive slices of the raw byte stream, each covering `chunkSamples` samples at the format's rate
 * (default about 0.2 s). The concatenation equals {@link encodeAudio}'s result.
 */
export function* encodeAudioChunks(
  samples: Float32Array,
  sampleRate: number,
  format: AudioFormat,
  chunkSamples?: number,
): Generator<Uint8Array, void, undefined> {
  const info = audioFormatInfo(format);
  if (info.codec === "mp3") {
    yield* encodeMp3Chunks(samples, sampleRate, format, chunkSamples);
    return;
  }
  const step = Math.max(1, Math.floor(chunkSamples ?? defaultChunkSamples(info.sampleRate)));
  const pcm = floatToInt16(resampleLinear(samples, sampleRate, info.sampleRate));
  for (let i = 0; i < pcm.length; i += step) {
    const part = pcm.subarray(i, Math.min(pcm.length, i + step));
    yield info.codec === "pcm" ? int16ToLeBytes(part) : int16ToUlaw(part);
  }
}

/** Concatenates byte arrays into one. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/**
 * Encodes mono `samples` (-1..1 at `sampleRate` Hz) in `format`, resampling linearly to the format's
 * rate: MP3 (mono, the format's rate and bit rate), `pcm_<rate>` (raw 16-bit little-endian signed, no
 * header: 2 bytes per sample) or `ulaw_8000` (raw G.711 mu-law, 1 byte per sample at 8 kHz).
 */
export function encodeAudio(samples: Float32Array, sampleRate: number, format: AudioFormat): Uint8Array {
  const info = audioFormatInfo(format);
  if (info.codec !== "mp3") {
    const pcm = floatToInt16(resampleLinear(samples, sampleRate, info.sampleRate));
    return info.codec === "pcm" ? int16ToLeBytes(pcm) : int16ToUlaw(pcm);
  }
  return concatBytes(Array.from(encodeMp3Chunks(samples, sampleRate, format)));
}

// ---------------------------------------------------------------------------------------------------
// Speech rendering (synthesis + encoding), shared by the inline path and the encode worker
// ---------------------------------------------------------------------------------------------------

/** Everything that determines a rendered speech clip; structured-clone safe (sent to the worker). */
export interface SpeechRenderJob {
  text: string;
  voiceId: string;
  /** Extra seed material, e.g. the model id. */
  variant: string;
  settings: VoiceSettings;
  format: AudioFormat;
}

/** Encoder chunk length used by {@link renderSpeechChunks}: about 0.2 s of audio (whole MP3 frames). */
export const RENDER_CHUNK_SEC = 0.2;

/**
 * Synthesizes `job.text` directly at the format's sample rate and returns the clip duration (seconds)
 * and a lazy generator of encoded chunks (about {@link RENDER_CHUNK_SEC} s of audio each) whose
 * concatenation is the complete file in `job.format`.
 */
export function renderSpeechChunks(job: SpeechRenderJob): {
  durationSec: number;
  chunks: Generator<Uint8Array, void, undefined>;
} {
  const rate = audioFormatInfo(job.format).sampleRate;
  const samples = synthesizeSpeech({
    text: job.text,
    voiceId: job.voiceId,
    sampleRate: rate,
    settings: job.settings,
    variant: job.variant,
  });
  return {
    durationSec: samples.length / rate,
    chunks: encodeAudioChunks(samples, rate, job.format, defaultChunkSamples(rate)),
  };
}
