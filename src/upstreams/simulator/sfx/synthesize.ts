/** Sound-effect synthesis: the recipes of the prompt's kinds, layered, saturated and faded. */
import { createRng, seedFrom } from "../rng.ts";
import { normalizePeak } from "../signal.ts";
import { checkDuration, checkRate, clamp } from "../music/dsp.ts";
import { applyFades, softClipAndDc } from "../music/effects.ts";
import { type Words, wordsOf } from "../music/words.ts";
import { ACTIONS_RECIPES } from "./actions.ts";
import { DEVICES_RECIPES } from "./devices.ts";
import { type SfxKind, sfxDurationSec, sfxKindsOf } from "./kinds.ts";
import type { SfxCtx } from "./layers.ts";
import { NATURE_RECIPES } from "./nature.ts";

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

/** The recipe of every kind. */
const RECIPES: Record<SfxKind, (ctx: SfxCtx, w: Words) => void> = {
  ...NATURE_RECIPES,
  ...DEVICES_RECIPES,
  ...ACTIONS_RECIPES,
};

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
    RECIPES[kind](ctx, w);
    normalizePeak(layer, 1);
    const g = kind === "generic" && i > 0 ? 0.15 : i === 0 ? 1 : 0.6;
    for (let n = 0; n < out.length; n++) out[n] += layer[n] * g;
  });
  softClipAndDc(out, sr, 1);
  applyFades(out, sr, 0.005, Math.min(0.05, dur * 0.1));
  return normalizePeak(out, 0.89);
}
