/** Music rendering: the arrangement of {@link composeMusic} played by the instruments, drums and voice. */
import { createRng, seedFrom } from "../rng.ts";
import { normalizePeak } from "../signal.ts";
import { composeMusic, type MusicSynthesisOptions } from "./arrangement.ts";
import { makeDrumKit } from "./drums.ts";
import { checkRate } from "./dsp.ts";
import { applyFades, applyReverb, mixSample, softClipAndDc } from "./effects.ts";
import { renderNote } from "./instruments.ts";
import { renderVocalLine } from "./vocals.ts";

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
