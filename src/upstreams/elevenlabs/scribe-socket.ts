/**
 * Realtime transcription (D43) on ElevenLabs' Scribe realtime socket, as a {@link TranscriptionStream}.
 * Protocol: ElevenLabs' AsyncAPI of `GET /v1/speech-to-text/realtime` (the API reference page's
 * "AsyncAPI Specification"), the official client (`@elevenlabs/elevenlabs-js` 2.73.0
 * `dist/wrapper/realtime/scribe.js` builds the URL, `connection.js` the messages) and LiveKit's plugin
 * (`@livekit/agents-plugin-elevenlabs` `src/stt.ts`):
 *
 * `GET {base}/v1/speech-to-text/realtime?model_id=scribe_v2_realtime&audio_format=<pcm_16000|...>
 * &commit_strategy=<manual|vad>&include_timestamps=<bool>&include_language_detection=<bool>
 * [&language_code=<code>][&vad_silence_threshold_secs=&vad_threshold=&min_speech_duration_ms=
 * &min_silence_duration_ms=]` (the VAD settings only with `vad`), upgraded with `xi-api-key` (socket.ts:
 * the base URL's host only). The stream is open once the server's `session_started` arrived.
 *
 * | direction | message | here |
 * |---|---|---|
 * | sent | `{"message_type": "input_audio_chunk", "audio_base_64", "commit", "sample_rate"}` | {@link TranscriptionStream.send}; `sample_rate` is the format's rate |
 * | received | `partial_transcript {text}` | a `partial` event |
 * | received | `committed_transcript {text}` | a `committed` event, unless timestamps or language detection were asked: then the `..._with_timestamps` message that follows it ("Sent after the committed transcript", ElevenLabs' realtime guide) is the segment's one `committed` event (as LiveKit's plugin waits for it) |
 * | received | `committed_transcript_with_timestamps {text, language_code, words}` | that event: `words` (word and spacing items, seconds) when timestamps were asked, `languageCode` when detection was |
 * | received | `{message_type: <error type>, error: <text>}` | an `error` event (`kind` the type, the text redacted); the close that follows ends the stream with an {@link UpstreamError} from it |
 * Should the `..._with_timestamps` message not come, the held text is reported without words when the
 * next transcript message or the close arrives, so a segment is never lost.
 *
 * ## Failures
 * Opening: the connect's failures (socket.ts), an error message or a close before `session_started`
 * (the server opens the socket and then refuses, e.g. `invalid_request` and close 1008 for a bad
 * `model_id`, elevenlabs/ui#82), or no `session_started` within the connect timeout (retryable). Error
 * types (the SDK's `RealtimeEvents`): `invalid_request`, `auth_error`, `unaccepted_terms`, `input_error`,
 * `chunk_size_exceeded` refuse the request (not retryable); the others (`quota_exceeded`, `rate_limited`,
 * `resource_exhausted`, `queue_overflow`, `transcriber_error`, `error`, `session_time_limit_exceeded`,
 * `commit_throttled`, `insufficient_audio_activity`, unknown types) are retryable. Once open nothing throws:
 * a close reports `closed` with null (a normal close 1000 without an error before it, or our own
 * `close()`) or the error.
 */
import { realtimeAudioInfo } from "../realtime.ts";
import type { TranscriptionEvent, TranscriptionStream, TranscriptionStreamRequest, TranscriptWord } from "../realtime.ts";
import { isRecord } from "../util.ts";
import type { ElevenLabsApi } from "./api.ts";
import { SCRIBE_REALTIME_MODEL } from "./models.ts";
import { connectSocket, ElevenLabsSocketError, socketUrl } from "./socket.ts";
import type { SocketChannel, SocketClose } from "./socket.ts";

/** Scribe error types that refuse the request itself (not retryable); every other error type is retryable. */
export const SCRIBE_REFUSALS: readonly string[] = ["invalid_request", "auth_error", "unaccepted_terms", "input_error", "chunk_size_exceeded"];

/** Message types of transcripts and of the session (never errors). */
const TRANSCRIPT_TYPES = new Set([
  "session_started",
  "partial_transcript",
  "final_transcript",
  "final_transcript_with_timestamps",
  "committed_transcript",
  "committed_transcript_with_timestamps",
  "committed_transcript_entities",
  "edited_transcript",
]);

/** Most characters of ElevenLabs' own error text copied into ours. */
const MAX_DETAIL_CHARS = 300;

/** The longest wait of the message pump, ms (setTimeout's limit; the pump ends with the socket's close). */
const PUMP_WAIT_MS = 2_147_483_000;

/** How the source's Scribe sockets are opened (source.ts builds it from the `UPSTREAMS` entry). */
export interface ScribeSocketConfig {
  api: ElevenLabsApi;
  apiKey: string;
  /** Longest wait for the upgrade, then again for `session_started`, ms. */
  connectTimeoutMs: number;
  /** Checks that the catalog model is one ElevenLabs transcribes. @throws ElevenLabsError `unsupported`. */
  checkModel: (model: string) => void;
}

/** The query of the socket URL for `req` (see the module comment). */
export function scribeQuery(req: TranscriptionStreamRequest): Record<string, string> {
  const query: Record<string, string> = {
    model_id: SCRIBE_REALTIME_MODEL,
    audio_format: req.audioFormat,
    commit_strategy: req.commitStrategy,
    include_timestamps: String(req.includeTimestamps),
    include_language_detection: String(req.includeLanguageDetection),
  };
  if (req.languageCode !== null) query.language_code = req.languageCode;
  if (req.commitStrategy === "vad") {
    query.vad_silence_threshold_secs = String(req.vad.silenceThresholdSecs);
    query.vad_threshold = String(req.vad.threshold);
    query.min_speech_duration_ms = String(Math.round(req.vad.minSpeechDurationMs));
    query.min_silence_duration_ms = String(Math.round(req.vad.minSilenceDurationMs));
  }
  return query;
}

/** True for a server message reporting an error (a known error type, or any non-transcript type with an `error` text). */
export function isScribeError(msg: Record<string, unknown>): boolean {
  const type = msg.message_type;
  return typeof type === "string" && !TRANSCRIPT_TYPES.has(type) && (typeof msg.error === "string" || typeof msg.message === "string");
}

/** The error text of a Scribe error message (`error`, or `message` as some clients read it), redacted and cut. */
function errorText(api: ElevenLabsApi, msg: Record<string, unknown>): string {
  const text = typeof msg.error === "string" ? msg.error : typeof msg.message === "string" ? msg.message : "";
  return api.redact(text.replace(/\s+/g, " ").trim()).slice(0, MAX_DETAIL_CHARS);
}

/** The {@link ElevenLabsSocketError} of a Scribe error message (see the module comment). */
export function scribeError(api: ElevenLabsApi, msg: Record<string, unknown>, closeCode: number | null): ElevenLabsSocketError {
  const type = typeof msg.message_type === "string" ? msg.message_type : "error";
  const text = errorText(api, msg);
  return new ElevenLabsSocketError(api.redact(`${api.name}: speech-to-text socket: ${text === "" ? type : `${text} (${type})`}`), {
    retryable: !SCRIBE_REFUSALS.includes(type),
    kind: "http",
    status: null,
    errorStatus: type,
    closeCode,
  });
}

/** The error of a Scribe socket closed without an error message before it. */
function closeError(api: ElevenLabsApi, close: SocketClose, malformed: string | null): ElevenLabsSocketError {
  if (malformed !== null) return new ElevenLabsSocketError(`${api.name}: speech-to-text socket: ElevenLabs sent ${malformed}`, { retryable: true, kind: "malformed" });
  if (close.abnormal) {
    const cause = close.transportError === null ? "" : `: ${close.transportError}`;
    return new ElevenLabsSocketError(`${api.name}: speech-to-text socket lost (${close.code})${cause}`, { retryable: true, kind: "network", closeCode: close.code });
  }
  const reason = close.reason.slice(0, MAX_DETAIL_CHARS);
  return new ElevenLabsSocketError(`${api.name}: speech-to-text socket closed by ElevenLabs (${close.code}${reason === "" ? "" : `: ${reason}`})`, {
    retryable: true,
    kind: "http",
    status: null,
    closeCode: close.code,
  });
}

/** The words of a `committed_transcript_with_timestamps` message (word and spacing items with times; others dropped). */
export function wordsOf(value: unknown): TranscriptWord[] | null {
  if (!Array.isArray(value)) return null;
  const out: TranscriptWord[] = [];
  for (const w of value) {
    if (!isRecord(w) || typeof w.text !== "string" || (w.type !== "word" && w.type !== "spacing")) continue;
    if (typeof w.start !== "number" || typeof w.end !== "number") continue;
    const word: TranscriptWord = { text: w.text, start: w.start, end: w.end, type: w.type };
    if (typeof w.logprob === "number") word.logprob = w.logprob;
    out.push(word);
  }
  return out;
}

/**
 * Opens a Scribe realtime stream for `req` (see the module comment), resolved at `session_started`; its
 * events go to `onEvent` (never after `closed`).
 * @throws ElevenLabsError (`unsupported` for a model ElevenLabs does not transcribe, before connecting), the
 *   connect's and the opening's failures, or `signal.reason`.
 */
export async function openScribeSocket(
  cfg: ScribeSocketConfig,
  req: TranscriptionStreamRequest,
  onEvent: (event: TranscriptionEvent) => void,
  signal?: AbortSignal,
): Promise<TranscriptionStream> {
  cfg.checkModel(req.model);
  const { api } = cfg;
  const url = socketUrl(api, "/v1/speech-to-text/realtime", scribeQuery(req));
  const ch = await connectSocket({ api, url, apiKey: cfg.apiKey, connectTimeoutMs: cfg.connectTimeoutMs, what: "speech-to-text socket", context: {}, signal });
  try {
    for (;;) {
      const item = await ch.next(cfg.connectTimeoutMs, signal);
      if (item === null) {
        throw new ElevenLabsSocketError(`${api.name}: speech-to-text socket: no session_started within ${cfg.connectTimeoutMs} ms`, { retryable: true, kind: "timeout" });
      }
      if (item.kind === "close") throw closeError(api, item.close, ch.malformed);
      const m = item.message;
      if (m.message_type === "session_started") break;
      if (isScribeError(m)) throw scribeError(api, m, null);
    }
  } catch (err) {
    ch.terminate();
    throw err;
  }
  const stream = new ScribeStream(api, ch, req, onEvent);
  void stream.pump();
  return stream;
}

/** An open Scribe socket (see the module comment). */
class ScribeStream implements TranscriptionStream {
  readonly #api: ElevenLabsApi;
  readonly #ch: SocketChannel;
  readonly #sampleRate: number;
  readonly #withTimestamps: boolean;
  readonly #req: TranscriptionStreamRequest;
  readonly #onEvent: (event: TranscriptionEvent) => void;
  /** A committed text waiting for its `..._with_timestamps` message. */
  #held: string | null = null;
  #lastError: Record<string, unknown> | null = null;
  #closing = false;
  #ended = false;

  constructor(api: ElevenLabsApi, ch: SocketChannel, req: TranscriptionStreamRequest, onEvent: (event: TranscriptionEvent) => void) {
    this.#api = api;
    this.#ch = ch;
    this.#req = req;
    this.#sampleRate = realtimeAudioInfo(req.audioFormat).sampleRate;
    this.#withTimestamps = req.includeTimestamps || req.includeLanguageDetection;
    this.#onEvent = onEvent;
  }

  #emit(event: TranscriptionEvent): void {
    if (this.#ended) return;
    if (event.type === "closed") this.#ended = true;
    try {
      this.#onEvent(event);
    } catch {
      // The listener's failure is its own; the stream goes on.
    }
  }

  /** Reports a held committed text without words (its `..._with_timestamps` message did not come). */
  #flushHeld(): void {
    if (this.#held === null) return;
    const text = this.#held;
    this.#held = null;
    this.#emit({ type: "committed", text, words: null, languageCode: null });
  }

  /** Reads the server's messages until the socket closes, turning them into events. */
  async pump(): Promise<void> {
    for (;;) {
      const item = await this.#ch.next(PUMP_WAIT_MS);
      if (item === null) continue;
      if (item.kind === "close") {
        this.#flushHeld();
        this.#emit({ type: "closed", error: this.#closedError(item.close) });
        return;
      }
      this.#dispatch(item.message);
    }
  }

  #closedError(close: SocketClose): Error | null {
    if (this.#closing) return null;
    if (this.#lastError !== null) return scribeError(this.#api, this.#lastError, close.code);
    if (close.code === 1000 && !close.abnormal && this.#ch.malformed === null) return null;
    return closeError(this.#api, close, this.#ch.malformed);
  }

  #dispatch(m: Record<string, unknown>): void {
    const type = m.message_type;
    const text = typeof m.text === "string" ? m.text : "";
    // An error followed by transcripts did not end the session: the close is not its doing.
    if (TRANSCRIPT_TYPES.has(String(type))) this.#lastError = null;
    switch (type) {
      case "partial_transcript":
        this.#flushHeld();
        this.#emit({ type: "partial", text });
        return;
      case "committed_transcript":
        this.#flushHeld();
        if (this.#withTimestamps) this.#held = text;
        else this.#emit({ type: "committed", text, words: null, languageCode: null });
        return;
      case "committed_transcript_with_timestamps": {
        if (!this.#withTimestamps) return;
        this.#held = null;
        const languageCode = this.#req.includeLanguageDetection && typeof m.language_code === "string" ? m.language_code : null;
        this.#emit({ type: "committed", text, words: this.#req.includeTimestamps ? wordsOf(m.words) : null, languageCode });
        return;
      }
      default:
        if (isScribeError(m)) {
          this.#lastError = m;
          this.#emit({ type: "error", kind: typeof type === "string" ? type : "error", message: errorText(this.#api, m) });
        }
    }
  }

  send(audio: Uint8Array, commit: boolean): void {
    if (this.#ended || this.#closing) return;
    this.#ch.send({
      message_type: "input_audio_chunk",
      audio_base_64: Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength).toString("base64"),
      commit,
      sample_rate: this.#sampleRate,
    });
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    await this.#ch.close(1000, 500);
  }
}
