/**
 * The streaming interfaces between the gateway's realtime sockets (D42, D43) and the sources that serve
 * them: one for speech (text chunks in, audio out) and one for transcription (audio in, transcripts out).
 * Each provider's socket is an adapter in its own folder (elevenlabs/, minimax/), the simulator implements
 * both, and upstreams/realtime-failover.ts walks a family's sources with failover (D27). Like every
 * adapter, these know nothing about money, accounts or the caller's socket: the session (audio/realtime/)
 * decides which text is generated when, and meters it.
 */
import type { AudioFormat, SimulateMode, VoiceSettings } from "./types.ts";

/**
 * Character timings of a piece of audio in ElevenLabs' socket field names (D42): `chars[i]` starts at
 * `charStartTimesMs[i]` and lasts `charDurationsMs[i]`, milliseconds from the start of the piece's chunk.
 * The three arrays have the same length.
 */
export interface CharAlignment {
  chars: string[];
  charStartTimesMs: number[];
  charDurationsMs: number[];
}

/** Voice settings of a realtime speech stream: the HTTP route's (each 0..1) plus ElevenLabs' `speed` (0.7..1.2). */
export interface RealtimeVoiceSettings extends VoiceSettings {
  speed?: number;
}

/** What a realtime speech stream speaks with: fixed for the stream's life. */
export interface SpeechStreamRequest {
  /** The catalog model id (`alpha-flash-v2-5`, `beta-speech-turbo`, ...); the adapter maps it to its own id. */
  model: string;
  /** The voice id as the source knows it (an owned voice's upstream id, else the library id). */
  voiceId: string;
  /** The audio format of every piece (D36 names); the concatenation of all pieces is one stream of it. */
  format: AudioFormat;
  voiceSettings: RealtimeVoiceSettings;
  /** `X-Svc-Simulate` of the upgrade request (D10); only the simulator honours it. */
  simulate: SimulateMode | null;
}

/**
 * One piece of audio of a chunk: bytes in the stream's format, with the alignment of the characters it
 * covers when the source gives one (times relative to the start of the chunk's audio).
 */
export interface SpeechPiece {
  audio: Uint8Array;
  /** Alignment of the text as sent (D42 `alignment`), or null. */
  alignment: CharAlignment | null;
  /** Alignment of the text as the source normalized it (D42 `normalizedAlignment`), or null. */
  normalizedAlignment: CharAlignment | null;
}

/**
 * An open realtime speech stream at one source: one voice, model and format, chunks of text spoken one
 * after the other. Each {@link SpeechStream.synthesize} must be iterated to its end (or abandoned with
 * `return`) before the next one starts.
 */
export interface SpeechStream {
  /**
   * Speaks one chunk of text (NFC, as the caller buffered it: trailing spaces included) and yields its
   * audio as it comes, then ends once the source has sent the chunk's last audio. The concatenation of
   * every piece of every chunk, in order, is one valid stream of the request's format. An empty chunk
   * (nothing but spaces) may yield nothing.
   * @throws UpstreamError when the source fails (before or after some audio of the chunk; the caller knows
   *   which), retryable as for HTTP calls (connection lost, 429, 5xx: true; the input refused: false).
   */
  synthesize(text: string, signal?: AbortSignal): AsyncIterable<SpeechPiece>;
  /** Closes the stream at the source (best effort, never throws); a chunk being spoken ends with an error. */
  close(): Promise<void>;
}

/** A source of realtime speech (ElevenLabs' text-to-speech socket, MiniMax's T2A socket, the simulator). */
export interface SpeechStreamSource {
  /**
   * Opens a stream for `req`, resolved once the source accepted it (connected, and for protocols that
   * confirm it, the task started).
   * @throws UpstreamError: retryable for a connection refused or lost, a timeout, 429 and 5xx; not for a
   *   request the source refuses (unknown model: `modelNotFound`; bad voice settings); `voiceUnavailable`
   *   for a voice the source does not have.
   */
  openSpeechStream(req: SpeechStreamRequest, signal?: AbortSignal): Promise<SpeechStream>;
}

/** Audio formats of the transcription socket (D43): 16-bit little-endian PCM at a rate, or G.711 mu-law at 8 kHz. */
export type RealtimeAudioFormat = "pcm_8000" | "pcm_16000" | "pcm_22050" | "pcm_24000" | "pcm_44100" | "pcm_48000" | "ulaw_8000";

/** Every {@link RealtimeAudioFormat}, the D43 default first. */
export const REALTIME_AUDIO_FORMATS: readonly RealtimeAudioFormat[] = ["pcm_16000", "pcm_8000", "pcm_22050", "pcm_24000", "pcm_44100", "pcm_48000", "ulaw_8000"];

/** Sample rate (Hz) and bytes per sample of a {@link RealtimeAudioFormat}. */
export function realtimeAudioInfo(format: RealtimeAudioFormat): { sampleRate: number; bytesPerSample: 1 | 2; codec: "pcm" | "ulaw" } {
  const [codec, rate] = format.split("_");
  return { sampleRate: Number(rate), bytesPerSample: codec === "ulaw" ? 1 : 2, codec: codec === "ulaw" ? "ulaw" : "pcm" };
}

/** Voice activity detection settings of a `vad` transcription stream (ElevenLabs' query names, D43). */
export interface VadSettings {
  /** Silence that ends a segment, seconds (0.3..3, default 1.5). */
  silenceThresholdSecs: number;
  /** Speech probability threshold (0.1..0.9, default 0.4). */
  threshold: number;
  /** Shortest speech that counts, ms (50..2000, default 100). */
  minSpeechDurationMs: number;
  /** Shortest silence that counts, ms (50..2000, default 100). */
  minSilenceDurationMs: number;
}

/** What a realtime transcription stream listens with: fixed for the stream's life. */
export interface TranscriptionStreamRequest {
  /** The catalog model id (`host1-transcribe-1`); the adapter maps it to its own id. */
  model: string;
  audioFormat: RealtimeAudioFormat;
  commitStrategy: "manual" | "vad";
  vad: VadSettings;
  /** ISO 639-1 or 639-3 code of the audio's language, or null (detect). */
  languageCode: string | null;
  /** Committed transcripts come with word timestamps (`committed_transcript_with_timestamps`). */
  includeTimestamps: boolean;
  /** Committed transcripts come with the detected `language_code` (in the `..._with_timestamps` message). */
  includeLanguageDetection: boolean;
  simulate: SimulateMode | null;
}

/** One word (or the spacing between words) of a committed transcript, seconds from the stream's start (Scribe's shape). */
export interface TranscriptWord {
  text: string;
  start: number;
  end: number;
  type: "word" | "spacing";
  logprob?: number;
}

/**
 * What a transcription stream reports, in the order it happens:
 * - `partial`: the text of the current segment so far (replaces the previous partial);
 * - `committed`: the segment is final (a manual commit, or silence with `vad`); `words` and `languageCode`
 *   when the request asked for them;
 * - `error`: the source refused something and goes on (`kind` is a Scribe error type such as
 *   `input_error`, `chunk_size_exceeded`); the source's own message, never a key;
 * - `closed`: the stream ended at the source; with `error` when it failed (an {@link UpstreamError}).
 */
export type TranscriptionEvent =
  | { type: "partial"; text: string }
  | { type: "committed"; text: string; words: TranscriptWord[] | null; languageCode: string | null }
  | { type: "error"; kind: string; message: string }
  | { type: "closed"; error: Error | null };

/** An open realtime transcription stream at one source. */
export interface TranscriptionStream {
  /**
   * Sends audio (bytes of the request's format; a whole number of samples) to the source; with `commit`
   * the current segment ends after it (manual commits; an empty `audio` with `commit` only commits).
   * Never throws: a failure is reported as a `closed` event with its error.
   */
  send(audio: Uint8Array, commit: boolean): void;
  /** Closes the stream (best effort, never throws); no event follows but `closed`. */
  close(): Promise<void>;
}

/** A source of realtime transcription (ElevenLabs' Scribe realtime socket, the simulator). */
export interface TranscriptionStreamSource {
  /**
   * Opens a stream for `req` whose events go to `onEvent` (never called after `closed`), resolved once
   * the source accepted it (for Scribe: its `session_started`).
   * @throws UpstreamError as {@link SpeechStreamSource.openSpeechStream}.
   */
  openTranscriptionStream(req: TranscriptionStreamRequest, onEvent: (event: TranscriptionEvent) => void, signal?: AbortSignal): Promise<TranscriptionStream>;
}
