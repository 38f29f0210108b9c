/**
 * Music and sound-effect rendering jobs (synthesis + encoding), shared by the inline path of
 * `media.ts` and the encode worker.
 */
import type { AudioFormat } from "../types.ts";
import { audioFormatInfo, encodeAudioChunks, mp3FrameSamples } from "./encode.ts";
import { synthesizeMusic } from "./music/synthesize.ts";
import { synthesizeSfx } from "./sfx/synthesize.ts";

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
