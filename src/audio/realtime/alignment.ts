/**
 * Timing of a realtime speech context's audio (D42): how long a piece of audio lasts, and the alignment
 * estimated for a source that gives none (MiniMax), so every audio message carries one.
 */
import type { AudioFormat } from "../../upstreams/types.ts";
import { audioDurationSec } from "../../upstreams/audio-convert.ts";
import type { CharAlignment } from "../../upstreams/realtime.ts";

/** Characters per second of the estimate used for sources that give no alignment (about human speech). */
const ESTIMATED_CHARS_PER_SEC = 15;

/** Milliseconds of `bytes` bytes of `format`: exact for PCM and mu-law, by the bit rate for (CBR) MP3. */
export function audioMs(bytes: number, format: AudioFormat): number {
  if (format.startsWith("mp3_")) {
    const kbps = Number(format.split("_")[2]);
    return (bytes * 8) / kbps;
  }
  return audioDurationSec(new Uint8Array(bytes), format) * 1000;
}

/**
 * An alignment for a source that gives none (MiniMax): the chunk's characters at
 * {@link ESTIMATED_CHARS_PER_SEC}, each given to the piece of audio during which it starts; the characters
 * left when the chunk's audio ended come with {@link AlignmentEstimate.rest}.
 */
export class AlignmentEstimate {
  readonly #chars: string[];
  readonly #format: AudioFormat;
  #next = 0;
  #atMs = 0;

  constructor(chunk: string, format: AudioFormat) {
    this.#chars = Array.from(chunk);
    this.#format = format;
  }

  /** The characters starting during `audio` (the next piece), times from the chunk's start. */
  next(audio: Uint8Array): CharAlignment {
    const endMs = this.#atMs + audioMs(audio.length, this.#format);
    const per = 1000 / ESTIMATED_CHARS_PER_SEC;
    const out: CharAlignment = { chars: [], charStartTimesMs: [], charDurationsMs: [] };
    while (this.#next < this.#chars.length && this.#next * per < endMs) {
      out.chars.push(this.#chars[this.#next]);
      out.charStartTimesMs.push(Math.round(this.#next * per));
      out.charDurationsMs.push(Math.round(per));
      this.#next++;
    }
    this.#atMs = endMs;
    return out;
  }

  /** The characters no piece covered (the audio was shorter than the estimate), at its end; null when none. */
  rest(): CharAlignment | null {
    if (this.#next === 0 || this.#next >= this.#chars.length) return null;
    const out: CharAlignment = { chars: this.#chars.slice(this.#next), charStartTimesMs: [], charDurationsMs: [] };
    for (let i = this.#next; i < this.#chars.length; i++) {
      out.charStartTimesMs.push(Math.round(this.#atMs));
      out.charDurationsMs.push(0);
    }
    this.#next = this.#chars.length;
    return out;
  }
}
