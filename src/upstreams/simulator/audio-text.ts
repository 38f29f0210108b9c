/**
 * The simulator's transcription and audio understanding (D10): after a latency that grows with the
 * audio's length, a deterministic transcript (or answer) derived from the audio bytes and its duration.
 */
import { createHash } from "node:crypto";
import type { AudioTextAdapter, AudioTextRequest } from "../types.ts";
import { simulateLatency } from "./delay.ts";

/** The simulator's vocabulary for transcripts of audio it did not make (also the realtime transcription's, D43). */
export const SIMULATED_WORDS: readonly string[] = ["the", "gateway", "records", "every", "call", "and", "the", "balance", "follows", "the", "ledger", "while", "voices", "music", "and", "images", "arrive", "on", "time"];

/** About 2.5 spoken words per second of audio. */
function transcriptOf(req: AudioTextRequest): string {
  const h = createHash("sha256").update(req.audio).digest();
  const count = Math.max(3, Math.round(req.durationSec * 2.5));
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(SIMULATED_WORDS[(h[i % h.length] + i) % SIMULATED_WORDS.length]);
  const sentences: string[] = [];
  for (let i = 0; i < words.length; i += 12) {
    const s = words.slice(i, i + 12).join(" ");
    sentences.push(`${s.charAt(0).toUpperCase()}${s.slice(1)}.`);
  }
  return sentences.join(" ");
}

/** Simulated speech-to-text and audio understanding. */
export class SimulatedAudioText implements AudioTextAdapter {
  readonly #latencyScale: number;

  constructor(latencyScale: number) {
    this.#latencyScale = latencyScale;
  }

  async transcribe(req: AudioTextRequest, signal?: AbortSignal): Promise<{ text: string }> {
    await simulateLatency(0.5 + req.durationSec / 30, this.#latencyScale, req.simulate, signal);
    return { text: transcriptOf(req) };
  }

  async understand(req: AudioTextRequest, signal?: AbortSignal): Promise<{ text: string }> {
    await simulateLatency(1 + req.durationSec / 20, this.#latencyScale, req.simulate, signal);
    const heard = transcriptOf(req).split(" ").slice(0, 12).join(" ");
    return {
      text: `The recording lasts ${req.durationSec.toFixed(1)} s and contains speech. Asked "${req.prompt ?? "what is in this audio?"}": it sounds like a single speaker saying "${heard}…".`,
    };
  }
}
