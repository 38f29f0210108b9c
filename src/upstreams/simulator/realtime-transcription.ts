/**
 * The simulator's realtime transcription (D43, D10): audio in, Scribe-shaped transcripts out, and a text
 * that depends on the audio:
 *
 * - speech the simulator made (realtime speech in PCM or mu-law: its chunks carry their text, watermark.ts)
 *   comes back as that text, each word revealed in the partial transcripts once the audio of its last
 *   character arrived (the synthesizer's timeline: 15 characters per second, speech/synthesize.ts);
 * - silence and near-silence (each 20 ms frame below {@link SILENCE_DBFS}) give no words at all;
 * - any other sound gives deterministic pseudo-words, one per 0.4 s of voiced audio (about 2.5 a second),
 *   each chosen by a hash of that audio from the vocabulary of audio-text.ts.
 *
 * Segments: with `commitStrategy: "manual"` a segment ends only at a commit (a commit with nothing heard
 * since the last one commits an empty text: the simulator answers every commit, so a client waiting for
 * its commit's answer never hangs); with `"vad"` it ends once `vad.silenceThresholdSecs` of silence follow
 * speech (speech counts from `minSpeechDurationMs` of voiced frames, gaps shorter than
 * `minSilenceDurationMs` do not interrupt it; `vad.threshold` is not used: the energy detector has no
 * probability). A `vad` segment without a word commits nothing, so silence never commits. A commit sent
 * with `vad` is honoured as well.
 *
 * Deterministic: the events depend on the bytes and the commits only, not on how the bytes are cut into
 * sends (except how often partials are reported: at most one per send, and only when its text changed).
 * Events are delivered in order on the microtask queue, never from inside {@link TranscriptionStream.send}.
 */
import { createHash, type Hash } from "node:crypto";
import {
  realtimeAudioInfo,
  type TranscriptionEvent,
  type TranscriptionStream,
  type TranscriptionStreamRequest,
  type TranscriptionStreamSource,
  type TranscriptWord,
} from "../realtime.ts";
import { UpstreamError } from "../types.ts";
import { SIMULATED_WORDS } from "./audio-text.ts";
import { sleep } from "./delay.ts";
import { ulawToLinear } from "./encode.ts";
import { speechCharStarts } from "./speech/synthesize.ts";
import { WatermarkExtractor, type WatermarkHit } from "./watermark.ts";

/** Simulated delays of realtime transcription in seconds, before multiplication by `latencyScale` (unless stated otherwise). */
export const SIM_REALTIME_TRANSCRIPTION_TIMING = {
  /** Opening a stream (Scribe's `session_started`). */
  openSec: 0.05,
  /** Before a simulated failure of the open. */
  failSec: 0.3,
  /** Extra delay of the open for `slow`/`hang`: `slowMinSec + slowScaledSec x latencyScale` (not scaled: D15). */
  slowMinSec: 1,
  slowScaledSec: 2,
} as const;

/** A 20 ms frame whose RMS is below this level (dB relative to full scale) is silence. */
export const SILENCE_DBFS = -45;
const SILENCE_RMS = 32768 * 10 ** (SILENCE_DBFS / 20);
/** Length of the energy detector's frames, seconds. */
const FRAME_SEC = 0.02;
/** Voiced audio per pseudo-word, seconds (about 2.5 words a second, as audio-text.ts). */
const PSEUDO_WORD_SEC = 0.4;
/** A segment's last pseudo-word needs at least this much voiced audio, seconds. */
const PSEUDO_WORD_MIN_SEC = 0.2;

/** A word on the stream's timeline, samples from its first sample. */
interface Word {
  text: string;
  start: number;
  end: number;
  /** Committed: a following chunk can no longer continue it. */
  committed?: boolean;
}

/** A 20 ms frame waiting to be classified (after the watermark reader has passed it). */
interface Frame {
  start: number;
  samples: Int16Array;
  sumSquares: number;
}

/** The audio a watermark speaks for: the whole chunk that carries it, samples. */
interface Region {
  start: number;
  end: number;
  /** Its text ends inside a word (no whitespace last): the next chunk, if it follows at once, may continue it. */
  openEnd: boolean;
  /** The region's last word (continued by a following chunk), null without one. */
  lastWord: Word | null;
}

/** `sample / rate` in seconds, to the millisecond. */
function seconds(sample: number, rate: number): number {
  return Math.round((sample / rate) * 1000) / 1000;
}

/**
 * One simulated realtime transcription stream (see the module comment and {@link TranscriptionStream}).
 */
export class SimulatedTranscriptionStream implements TranscriptionStream {
  readonly #req: TranscriptionStreamRequest;
  readonly #onEvent: (event: TranscriptionEvent) => void;
  readonly #rate: number;
  readonly #codec: "pcm" | "ulaw";
  readonly #frameLen: number;
  readonly #extractor: WatermarkExtractor;
  /** Events not yet delivered, and whether a delivery is scheduled. */
  #outbox: TranscriptionEvent[] = [];
  #scheduled = false;
  #closed = false;

  /** A PCM sample's low byte waiting for its high byte. */
  #lowByte = -1;
  /** Samples received. */
  #samples = 0;
  /** The frame being filled. */
  #frame: Frame;
  #fill = 0;
  /** Complete frames waiting for the watermark reader's horizon. */
  #pending: Frame[] = [];

  /** Watermarked chunks not yet behind the processed frames, in order. */
  #regions: Region[] = [];
  /** The last region found (a chunk following it at once may continue its last word). */
  #lastRegion: Region | null = null;
  /** Words of watermarked chunks not yet heard to their end, in order. */
  #queued: Word[] = [];
  /** Words of the current segment. */
  #segment: Word[] = [];
  #lastPartial = "";

  /** Pseudo-word being accumulated: hash of its voiced audio, voiced samples, span. */
  #pseudoHash: Hash | null = null;
  #pseudoVoiced = 0;
  #pseudoStart = 0;
  #pseudoEnd = 0;

  /** Voice activity (samples): the current voiced run (short gaps bridged), the current silent run, speech heard. */
  #speechRun = 0;
  #silenceRun = 0;
  #hasSpeech = false;

  /** Use {@link SimulatedRealtimeTranscription.openTranscriptionStream}. */
  constructor(req: TranscriptionStreamRequest, onEvent: (event: TranscriptionEvent) => void) {
    this.#req = req;
    this.#onEvent = onEvent;
    const info = realtimeAudioInfo(req.audioFormat);
    this.#rate = info.sampleRate;
    this.#codec = info.codec;
    this.#frameLen = Math.max(1, Math.round(info.sampleRate * FRAME_SEC));
    this.#extractor = new WatermarkExtractor(info.codec);
    this.#frame = this.#newFrame(0);
  }

  /**
   * Hears `audio` (bytes of the request's format; a 16-bit sample may be split between two sends), then
   * with `commit` ends the segment (see {@link TranscriptionStream.send}). Ignored once closed. Never throws.
   */
  send(audio: Uint8Array, commit: boolean): void {
    if (this.#closed) return;
    try {
      this.#hear(audio);
      this.#classify(this.#extractor.horizon);
      if (commit) {
        // A commit decides now: the frame being filled and frames a watermark might still claim are classified as they are.
        if (this.#fill > 0) {
          this.#pending.push({ ...this.#frame, samples: this.#frame.samples.slice(0, this.#fill) });
          this.#frame = this.#newFrame(this.#samples);
          this.#fill = 0;
        }
        this.#classify(Infinity);
        this.#commit(true);
      } else {
        this.#reportPartial();
      }
    } catch (err) {
      // Nothing above should throw; if it does, the stream ends as a source failure would.
      this.#emit({ type: "closed", error: new UpstreamError(`simulated transcription failed: ${err instanceof Error ? err.message : String(err)}`) });
      this.#closed = true;
    }
  }

  /** Closes the stream: `closed` (error null) follows the events already reported. Never throws. */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#emit({ type: "closed", error: null });
    }
    return Promise.resolve();
  }

  #newFrame(start: number): Frame {
    return { start, samples: new Int16Array(this.#frameLen), sumSquares: 0 };
  }

  /** Decodes `audio` sample by sample into the watermark reader and the frames. */
  #hear(audio: Uint8Array): void {
    if (this.#codec === "ulaw") {
      for (let i = 0; i < audio.length; i++) this.#sample(ulawToLinear(audio[i]), audio[i] & 1);
      return;
    }
    let i = 0;
    if (this.#lowByte >= 0 && audio.length > 0) {
      this.#sample(((audio[0] << 24) >> 16) | this.#lowByte, this.#lowByte & 1);
      this.#lowByte = -1;
      i = 1;
    }
    for (; i + 1 < audio.length; i += 2) this.#sample(((audio[i + 1] << 24) >> 16) | audio[i], audio[i] & 1);
    if (i < audio.length) this.#lowByte = audio[i];
  }

  /** One sample: `value` (signed 16-bit) and its carrier bit. */
  #sample(value: number, bit: number): void {
    const hit = this.#extractor.pushBit(bit);
    const f = this.#frame;
    f.samples[this.#fill++] = value;
    f.sumSquares += value * value;
    this.#samples++;
    if (this.#fill === this.#frameLen) {
      this.#pending.push(f);
      this.#frame = this.#newFrame(this.#samples);
      this.#fill = 0;
    }
    if (hit !== null) this.#found(hit);
  }

  /** A watermarked chunk: its span, and its words on the stream's timeline (the synthesizer's timing at this rate). */
  #found(hit: WatermarkHit): void {
    const starts = speechCharStarts(hit.text, this.#rate);
    const chars = Array.from(hit.text);
    const region: Region = { start: hit.start, end: hit.start + starts[chars.length], openEnd: false, lastWord: null };
    const prev = this.#lastRegion;
    // A chunk cut inside a word ("Hel" then "lo world") continues the previous chunk's last word.
    const last = prev?.lastWord ?? null;
    let carry = prev !== null && prev.openEnd && last !== null && last.committed !== true && prev.end === hit.start && chars.length > 0 && !/\s/u.test(chars[0]) ? last : null;
    let word: Word | null = null;
    for (let i = 0; i < chars.length; i++) {
      if (/\s/u.test(chars[i])) {
        word = null;
        carry = null;
        continue;
      }
      const start = hit.start + starts[i];
      const end = hit.start + starts[i + 1];
      if (carry !== null) {
        carry.text += chars[i];
        carry.end = end;
        word = carry;
        continue;
      }
      if (word === null) {
        word = { text: "", start, end };
        this.#queued.push(word);
      }
      word.text += chars[i];
      word.end = end;
    }
    region.openEnd = chars.length > 0 && !/\s/u.test(chars[chars.length - 1]);
    region.lastWord = word;
    this.#regions.push(region);
    this.#lastRegion = region;
  }

  /** Classifies the complete frames that end at or before `limit` (the watermark reader's horizon, or all). */
  #classify(limit: number): void {
    while (this.#pending.length > 0) {
      const f = this.#pending[0];
      const end = f.start + f.samples.length;
      if (end > limit) break;
      this.#pending.shift();
      this.#frameHeard(f, end);
    }
  }

  /** One classified frame: pseudo-words, revealed watermark words, voice activity. */
  #frameHeard(f: Frame, end: number): void {
    const len = f.samples.length;
    const voiced = Math.sqrt(f.sumSquares / len) >= SILENCE_RMS;
    if (voiced && this.#covered(f.start, end) * 2 <= len) {
      this.#pseudoHash ??= createHash("sha256");
      this.#pseudoHash.update(new Uint8Array(f.samples.buffer, f.samples.byteOffset, f.samples.byteLength));
      if (this.#pseudoVoiced === 0) this.#pseudoStart = f.start;
      this.#pseudoVoiced += len;
      this.#pseudoEnd = end;
      if (this.#pseudoVoiced >= PSEUDO_WORD_SEC * this.#rate) this.#pseudoWord();
    }
    // Watermarked words whose last character has been heard.
    while (this.#queued.length > 0 && this.#queued[0].end <= end) this.#segment.push(this.#queued.shift() as Word);
    if (this.#req.commitStrategy === "vad") this.#detectVoice(voiced, len);
  }

  /** Samples of `[start, end)` inside watermarked chunks; forgets the chunks behind. */
  #covered(start: number, end: number): number {
    while (this.#regions.length > 0 && this.#regions[0].end <= start) this.#regions.shift();
    let n = 0;
    for (const r of this.#regions) {
      if (r.start >= end) break;
      n += Math.max(0, Math.min(end, r.end) - Math.max(start, r.start));
    }
    return n;
  }

  /** Ends the pseudo-word being accumulated: a word of the vocabulary chosen by the hash of its audio. */
  #pseudoWord(): void {
    const h = (this.#pseudoHash as Hash).digest();
    this.#segment.push({ text: SIMULATED_WORDS[h.readUInt32BE(0) % SIMULATED_WORDS.length], start: this.#pseudoStart, end: this.#pseudoEnd });
    this.#pseudoHash = null;
    this.#pseudoVoiced = 0;
  }

  /** Voice activity of one frame for `vad`: commits after enough silence following speech. */
  #detectVoice(voiced: boolean, len: number): void {
    const v = this.#req.vad;
    const minSilence = (v.minSilenceDurationMs / 1000) * this.#rate;
    if (voiced) {
      if (this.#silenceRun >= minSilence) this.#speechRun = 0;
      else this.#speechRun += this.#silenceRun; // a gap too short to count as silence
      this.#speechRun += len;
      this.#silenceRun = 0;
      if (this.#speechRun >= (v.minSpeechDurationMs / 1000) * this.#rate) this.#hasSpeech = true;
      return;
    }
    this.#silenceRun += len;
    if (this.#silenceRun < Math.max(v.silenceThresholdSecs * this.#rate, minSilence)) return;
    if (this.#hasSpeech) this.#commit(false);
    else {
      // Sound too short to be speech, then a segment's worth of silence: forgotten, as the VAD never opened.
      this.#pseudoHash = null;
      this.#pseudoVoiced = 0;
    }
  }

  /** Ends the segment: a `committed` event (for a VAD commit only when a word was heard), then a fresh segment. */
  #commit(manual: boolean): void {
    if (this.#pseudoVoiced >= PSEUDO_WORD_MIN_SEC * this.#rate) this.#pseudoWord();
    this.#pseudoHash = null;
    this.#pseudoVoiced = 0;
    const words = this.#segment.sort((a, b) => a.start - b.start);
    for (const w of words) w.committed = true;
    this.#segment = [];
    this.#lastPartial = "";
    this.#speechRun = 0;
    this.#silenceRun = 0;
    this.#hasSpeech = false;
    if (!manual && words.length === 0) return;
    const req = this.#req;
    const detailed = req.includeTimestamps || req.includeLanguageDetection;
    this.#emit({
      type: "committed",
      text: words.map((w) => w.text).join(" "),
      words: detailed ? this.#scribeWords(words) : null,
      languageCode: req.includeLanguageDetection ? (req.languageCode ?? "en") : null,
    });
  }

  /** Scribe's word items: each word, and a spacing item between two words, seconds from the stream's first sample. */
  #scribeWords(words: readonly Word[]): TranscriptWord[] {
    const out: TranscriptWord[] = [];
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      if (i > 0) {
        const prevEnd = words[i - 1].end;
        out.push({ text: " ", start: seconds(prevEnd, this.#rate), end: seconds(Math.max(prevEnd, w.start), this.#rate), type: "spacing" });
      }
      out.push({ text: w.text, start: seconds(w.start, this.#rate), end: seconds(w.end, this.#rate), type: "word" });
    }
    return out;
  }

  /** Reports the current segment's text when it changed (and is not empty). */
  #reportPartial(): void {
    if (this.#segment.length === 0) return;
    const text = [...this.#segment].sort((a, b) => a.start - b.start).map((w) => w.text).join(" ");
    if (text === this.#lastPartial) return;
    this.#lastPartial = text;
    this.#emit({ type: "partial", text });
  }

  /** Queues `event` for delivery on the microtask queue, in order. */
  #emit(event: TranscriptionEvent): void {
    this.#outbox.push(event);
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      const events = this.#outbox;
      this.#outbox = [];
      for (const e of events) {
        try {
          this.#onEvent(e);
        } catch {
          // The listener's failure is the listener's: the stream goes on.
        }
      }
    });
  }
}

/** Options of {@link SimulatedRealtimeTranscription}. */
export interface SimulatedRealtimeTranscriptionOptions {
  /** Multiplier of every simulated delay (0 = none but `slow`/`hang`); `SIM_LATENCY_SCALE`. */
  latencyScale: number;
}

/** The simulator's source of realtime transcription (D43): what the gateway passes as `transcriptionStream`. */
export class SimulatedRealtimeTranscription implements TranscriptionStreamSource {
  readonly #scale: number;

  constructor(opts: SimulatedRealtimeTranscriptionOptions) {
    this.#scale = Number.isFinite(opts.latencyScale) && opts.latencyScale > 0 ? opts.latencyScale : 0;
  }

  /**
   * Opens a stream for `req` after about 0.05 s x scale (at least 1 s more for `slow`/`hang`); its events
   * go to `onEvent` (see {@link SimulatedTranscriptionStream}). Any model id is accepted.
   * @throws UpstreamError (not retryable) for `simulate: "fail"` (after about 0.3 s x scale); the reason
   *   of `signal` when it aborts.
   */
  async openTranscriptionStream(req: TranscriptionStreamRequest, onEvent: (event: TranscriptionEvent) => void, signal?: AbortSignal): Promise<SimulatedTranscriptionStream> {
    const t = SIM_REALTIME_TRANSCRIPTION_TIMING;
    if (req.simulate === "fail") {
      await sleep(t.failSec * this.#scale * 1000, signal);
      throw new UpstreamError(`simulated upstream failure for model '${req.model}'`, false);
    }
    const slow = req.simulate === "slow" || req.simulate === "hang" ? (t.slowMinSec + t.slowScaledSec * this.#scale) * 1000 : 0;
    await sleep(t.openSec * this.#scale * 1000 + slow, signal);
    return new SimulatedTranscriptionStream(req, onEvent);
  }
}
