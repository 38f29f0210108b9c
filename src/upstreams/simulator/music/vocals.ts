/** The singing voice of the music synthesizer: a formant-synthesized line following lyric syllables. */
import type { Rng } from "../rng.ts";
import { glottalPulse, normalizePeak, Resonator } from "../signal.ts";
import type { SungNote } from "./score.ts";
import { clamp, midiHz } from "./dsp.ts";

/** Formant frequencies (F1, F2, F3 in Hz) of the sung vowels. */
const SUNG_VOWELS: Record<string, readonly [number, number, number]> = {
  a: [750, 1150, 2500],
  e: [520, 1750, 2500],
  i: [330, 2100, 2900],
  o: [560, 850, 2450],
  u: [360, 850, 2300],
  y: [350, 1950, 2650],
};

/** How a syllable onset sounds: silent, fricative noise, a stop burst or a sonorant. */
type OnsetKind = "none" | "fric" | "stop" | "son";

/** The kind and noise centre frequency (Hz) of a syllable onset, from its first consonant. */
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
export function renderVocalLine(
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
      const g = glottalPulse(phase);
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
