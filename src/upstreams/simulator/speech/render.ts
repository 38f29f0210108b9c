/** Speech rendering jobs (synthesis + encoding), shared by the inline path of `speech.ts` and the encode worker. */
import type { AudioFormat, VoiceSettings } from "../../types.ts";
import { audioFormatInfo, defaultChunkSamples, encodeAudioChunks, floatToInt16, int16ToLeBytes, int16ToUlaw } from "../encode.ts";
import { embedWatermarkPcm16, embedWatermarkUlaw } from "../watermark.ts";
import { synthesizeSpeech } from "./synthesize.ts";

/** Everything that determines a rendered speech clip; structured-clone safe (sent to the worker). */
export interface SpeechRenderJob {
  text: string;
  voiceId: string;
  /** Extra seed material, e.g. the model id. */
  variant: string;
  settings: VoiceSettings;
  format: AudioFormat;
  /**
   * Carry `text` in the clip's PCM or mu-law samples (watermark.ts; the realtime speech of D42/D43), so
   * the simulated transcription hears it back. Ignored for MP3. Default false (the HTTP speech route).
   */
  watermark?: boolean;
}

/** Encoder chunk length used by {@link renderSpeechChunks}: about 0.2 s of audio (whole MP3 frames). */
export const RENDER_CHUNK_SEC = 0.2;

/**
 * Synthesizes `job.text` directly at the format's sample rate and returns the clip duration (seconds)
 * and a lazy generator of encoded chunks (about {@link RENDER_CHUNK_SEC} s of audio each) whose
 * concatenation is the complete file in `job.format`; with `job.watermark`, PCM and mu-law clips carry
 * the text in their first samples' least significant bits.
 */
export function renderSpeechChunks(job: SpeechRenderJob): {
  durationSec: number;
  chunks: Generator<Uint8Array, void, undefined>;
} {
  const info = audioFormatInfo(job.format);
  const rate = info.sampleRate;
  const samples = synthesizeSpeech({
    text: job.text,
    voiceId: job.voiceId,
    sampleRate: rate,
    settings: job.settings,
    variant: job.variant,
  });
  const step = defaultChunkSamples(rate);
  if (job.watermark === true && info.codec !== "mp3") {
    return { durationSec: samples.length / rate, chunks: watermarkedChunks(samples, info.codec, job.text, step) };
  }
  return {
    durationSec: samples.length / rate,
    chunks: encodeAudioChunks(samples, rate, job.format, step),
  };
}

/**
 * `samples` (at the format's rate) as 16-bit PCM or mu-law carrying `text`, in slices of `step` samples:
 * the bytes {@link encodeAudioChunks} gives but for the least significant bits of the frame's samples.
 */
function* watermarkedChunks(samples: Float32Array, codec: "pcm" | "ulaw", text: string, step: number): Generator<Uint8Array, void, undefined> {
  const pcm = floatToInt16(samples);
  if (codec === "pcm") {
    embedWatermarkPcm16(pcm, text);
    for (let i = 0; i < pcm.length; i += step) yield int16ToLeBytes(pcm.subarray(i, Math.min(pcm.length, i + step)));
    return;
  }
  const ulaw = int16ToUlaw(pcm);
  embedWatermarkUlaw(ulaw, text);
  for (let i = 0; i < ulaw.length; i += step) yield ulaw.slice(i, Math.min(ulaw.length, i + step));
}
