/** Drums of the music synthesizer: a synthesized kit (sine sweeps and filtered noise) and the grooves. */
import type { Rng } from "../rng.ts";
import { normalizePeak, Resonator } from "../signal.ts";
import { sin01 } from "./dsp.ts";
import type { DrumStyle } from "./instruments.ts";

/** Pre-rendered drum samples at one sample rate. */
export interface DrumKit {
  kick: Float32Array;
  snare: Float32Array;
  hat: Float32Array;
  open: Float32Array;
  crash: Float32Array;
}

/** Renders the kick, snare, hats and crash at `sr` Hz; `tone` (0..1) tunes kick and snare. */
export function makeDrumKit(sr: number, rng: Rng, tone: number): DrumKit {
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

/** Steps (16th notes; 12 per bar in 3/4) of each drum per style. */
export interface Groove {
  kick: number[];
  snare: number[];
  hat: number[];
  open: number[];
}

/** The groove of `style` in a bar of `beatsPerBar` beats (3/4 bars share one simple groove). */
export function grooveOf(style: DrumStyle, beatsPerBar: number): Groove {
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
