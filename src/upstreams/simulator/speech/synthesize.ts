/**
 * The speech synthesizer of the simulator: speech-like audio for any text with a source-filter model
 * (a glottal pulse train through formant resonators, noise for fricatives and stops, pauses at spaces
 * and punctuation). Deterministic: the same options give identical samples.
 */
import type { VoiceSettings } from "../../types.ts";
import { createRng, type Rng, seedFrom } from "../rng.ts";
import { glottalPulse, normalizePeak, Resonator } from "../signal.ts";
import { classify, NEUTRAL, PAUSE, type Phone, WEIGHT } from "./phones.ts";

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

/** Voice timbre derived from the voice id only. */
interface VoiceTimbre {
  f0: number;
  formantScale: number;
  breath: number;
  tilt: number;
}

/** The timbre of `voiceId`: low or high pitch, formant scale, breathiness, spectral tilt. */
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

/** `v` limited to 0..1, or `dflt` when missing or not finite. */
function clamp01(v: number | undefined, dflt: number): number {
  if (v === undefined || !Number.isFinite(v)) return dflt;
  return Math.min(1, Math.max(0, v));
}

/** The phones of a text on the sample timeline and their prosody (one entry per phone). */
interface SpeechPlan {
  phones: Phone[];
  /** Start sample of each phone, plus the total length. */
  starts: Float64Array;
  /** Pitch offset (per word) and loudness multiplier of each phone. */
  accent: Float32Array;
  loud: Float32Array;
  /** First and last phone of the phrase of each phone, and whether that phrase is a question. */
  phraseStart: Int32Array;
  phraseEnd: Int32Array;
  question: Uint8Array;
  /** Width of the intonation (relative pitch). */
  pitchRange: number;
}

/** Start sample of each of `phones` over `total` samples, by weight, plus `total` at the end. */
function phoneStarts(phones: readonly Phone[], total: number): Float64Array {
  let weightSum = 0;
  for (const p of phones) weightSum += WEIGHT[p.kind];
  const starts = new Float64Array(phones.length + 1);
  let acc = 0;
  for (let i = 0; i < phones.length; i++) {
    starts[i] = (acc / weightSum) * total;
    acc += WEIGHT[phones[i].kind];
  }
  starts[phones.length] = total;
  return starts;
}

/**
 * Where each character (Unicode code point) of `text` is spoken in the clip {@link synthesizeSpeech}
 * renders at `sampleRate` Hz: element `i` is the (fractional) sample where code point `i` starts, and the
 * last element is the clip's sample count. Each code point is one phone; the clip's length is fixed by
 * {@link speechDurationSec} (15 code points per second, at least 0.3 s) and shared among the phones by
 * their kind's weight (a vowel lasts longer than a stop, a phrase end longer than a space). For an empty
 * text: `[0, total]` (one pause). The realtime alignments (D42) and the simulator's transcription of its
 * own speech (D43) read this timeline.
 */
export function speechCharStarts(text: string, sampleRate: number): Float64Array {
  const phones = Array.from(text, classify);
  if (phones.length === 0) phones.push(PAUSE);
  return phoneStarts(phones, Math.round(speechDurationSec(text) * sampleRate));
}

/** Phones of `chars` spread over `total` samples by weight, with word accents and phrase boundaries. */
function planSpeech(chars: string[], total: number, rng: Rng, stability: number, style: number): SpeechPlan {
  const phones = chars.map(classify);
  if (phones.length === 0) phones.push(PAUSE);
  const starts = phoneStarts(phones, total);
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
  return { phones, starts, accent, loud, phraseStart, phraseEnd, question, pitchRange };
}

/** Voicing (`tv`) and noise (`tn`) targets of phone `p` at relative position `pos` (0..1) within it. */
function phoneTargets(p: Phone, pos: number): { tv: number; tn: number } {
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
  return { tv, tn };
}

/** What shapes a voice besides the text: timbre and the voice settings (0..1). */
interface VoiceParams {
  timbre: VoiceTimbre;
  stability: number;
  similarity: number;
  boost: boolean;
}

/** Renders `plan` into `out` (`sr` Hz): control-rate targets every ~1 ms, then the source and filters per sample. */
function renderSpeech(out: Float32Array, sr: number, plan: SpeechPlan, voice: VoiceParams, rng: Rng): void {
  const total = out.length;
  const { phones, starts, accent, loud, phraseStart, phraseEnd, question, pitchRange } = plan;
  const { timbre, stability, similarity, boost } = voice;
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
    let { tv, tn } = phoneTargets(p, pos);
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
      const g = glottalPulse(phase);
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
}

/** DC blocker, then 5 ms fades and peak normalization to 0.8, in place; returns `out`. */
function finishSpeech(out: Float32Array, sr: number): Float32Array {
  const total = out.length;
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
  const plan = planSpeech(chars, total, rng, stability, style);
  renderSpeech(out, sr, plan, { timbre, stability, similarity, boost }, rng);
  return finishSpeech(out, sr);
}
