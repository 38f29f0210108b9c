/** Speech rendering jobs (synthesis + encoding), shared by the inline path of `speech.ts` and the encode worker. */
import type { AudioFormat, VoiceSettings } from "../../types.ts";
import { audioFormatInfo, defaultChunkSamples, encodeAudioChunks } from "../encode.ts";
import { synthesizeSpeech } from "./synthesize.ts";

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
