/**
 * Realtime speech (D42) on ElevenLabs' multi-context text-to-speech WebSocket: a {@link SpeechStream}
 * whose chunks are each one upstream context, so each chunk has an explicit end. Protocol (ElevenLabs'
 * AsyncAPI, elevenlabs/elevenlabs-docs `fern/apis/api/asyncapi.yml`, channel
 * `/v1/text-to-speech/{voice_id}/multi-stream-input`; LiveKit's plugin
 * `@livekit/agents-plugin-elevenlabs` `src/tts.ts` speaks the same):
 *
 * `GET {base}/v1/text-to-speech/{voice_id}/multi-stream-input?model_id=<id>&output_format=<format>
 * &sync_alignment=true&inactivity_timeout=180`, upgraded with `xi-api-key` (socket.ts: the base URL's host
 * only). Per chunk, a fresh `context_id`:
 * | sent | why |
 * |---|---|
 * | `{"text": " ", "voice_settings"?: {...}, "context_id": c}` | opens the context; voice settings belong to a context's first message ("must be provided in the first message and then either be not provided or not change", the 1008 close pipecat-ai/pipecat#4527 fixed) |
 * | `{"text": <chunk>, "context_id": c, "flush": true}` | the whole chunk, generated now (no chunk schedule wait) |
 * | `{"context_id": c, "close_context": true}` | ends the context: after its last audio the server sends `{"isFinal": true, "contextId": c}` |
 * Server: `{"audio": <base64>, "alignment", "normalizedAlignment", "contextId": c}` per piece of audio,
 * yielded as a {@link SpeechPiece}; the chunk ends at `{"isFinal": true, "contextId": c}` (`is_final` is
 * read too). Alignments carry `chars`, `charStartTimesMs`, `charDurationsMs` (the `charsStartTimesMs` /
 * `charsDurationsMs` spellings of the AsyncAPI's examples are read too, as LiveKit's plugin does). Their
 * times are "relative to the returned chunk from the model, and not the full audio response" (AsyncAPI):
 * {@link ALIGNMENT_TIMES_PER_MESSAGE} says they restart at each audio message, so the adapter adds the
 * length of the chunk's earlier audio to make them relative to the chunk's start, as {@link SpeechPiece}
 * wants (*unverified*: one constant to flip if ElevenLabs counts from the context's start instead).
 *
 * ## The socket's life
 * Opened by `openSpeechStream` (connect bounded by the connect timeout; nothing is sent). ElevenLabs closes
 * a socket after `inactivity_timeout` seconds without a message (`input_timeout_exceeded`, 1008; 180 s is
 * the most it takes) and allows 5 unfinished contexts per socket (`max_active_conversations`, 1008;
 * livekit/agents-js#1985, pipecat-ai/pipecat#4041). A chunk abandoned by the caller (`return`) leaves its
 * context closing at the server (its messages are skipped), so before each chunk the adapter opens a new
 * socket when the old one is closed, idle for {@link RECONNECT_IDLE_MS} (so ElevenLabs' inactivity close
 * cannot race the chunk), or has 4 unfinished contexts. A failure drops the socket; the next chunk
 * connects again. `close()` sends `{"close_socket": true}` and closes.
 *
 * ## Failures (socket.ts {@link ElevenLabsSocketError})
 * | failure | `retryable` |
 * |---|---|
 * | connect (refused, reset, DNS, TLS), timeout, upgrade answered 429 / 5xx / 408 / 401 `quota_exceeded` | true |
 * | upgrade answered 401, 403 (e.g. `eleven_v3`, which has no socket), other statuses | false |
 * | server error `{"message", "error", "code"}` with `error` `voice_not_found` / `voice_does_not_exist` | false, `voiceUnavailable` |
 * | ... `model_not_found` | false, `modelNotFound` with `upstreamModel` the id sent (D35) |
 * | ... `invalid_api_key`, `invalid_voice_settings`, `invalid_input_message`, `invalid_request`, `unauthorized`, `payment_required` | false |
 * | ... any other (`input_timeout_exceeded`, `max_active_conversations`, `quota_exceeded`, `something_went_wrong`, ...) | true |
 * | a close without an error message: 1008 whose reason says our message broke the protocol (`voice_settings field ...`, `generation_config field ...`) | false |
 * | any other close while a chunk is pending (1000, 1006 lost, 1008, 1011, ...) | true |
 * | no message of the chunk within the idle timeout | true (`timeout`) |
 * | a model the source does not serve for speech, or one without a socket (`eleven_v3`) | false, `unsupported`, before connecting |
 * The caller's abort is rethrown as it is. No key in any message (redacted, socket.ts).
 */
import { audioDurationSec, audioFormatInfo } from "../audio-convert.ts";
import type { CharAlignment, RealtimeVoiceSettings, SpeechPiece, SpeechStream, SpeechStreamRequest } from "../realtime.ts";
import type { AudioFormat } from "../types.ts";
import { concatBytes, isRecord } from "../util.ts";
import type { ElevenLabsApi } from "./api.ts";
import { ElevenLabsError, VOICE_GONE_STATUSES, MODEL_NOT_FOUND_STATUS } from "./api.ts";
import { NO_SOCKET_MODELS } from "./models.ts";
import { connectSocket, ElevenLabsSocketError, ItemQueue, socketUrl } from "./socket.ts";
import type { SocketChannel, SocketClose } from "./socket.ts";

/** `inactivity_timeout` asked of ElevenLabs, seconds: the most it takes ("can be up to 180 seconds"). */
export const SPEECH_INACTIVITY_TIMEOUT_S = 180;

/** A socket idle this long (ms) is replaced before a chunk, well before ElevenLabs' inactivity close. */
export const RECONNECT_IDLE_MS = (SPEECH_INACTIVITY_TIMEOUT_S - 20) * 1000;

/** ElevenLabs' limit of unfinished contexts per socket (`max_active_conversations`). */
export const MAX_SOCKET_CONTEXTS = 5;

/** Alignment times restart at each audio message (see the module comment; *unverified*). */
export const ALIGNMENT_TIMES_PER_MESSAGE = true;

/** Server `error` codes that refuse the request itself: another attempt at the same source fails alike. */
export const SPEECH_SOCKET_REFUSALS: readonly string[] = [
  "invalid_api_key",
  "invalid_voice_settings",
  "invalid_input_message",
  "invalid_request",
  "unauthorized",
  "payment_required",
];

/** Close reasons (without an error message) that say our own message broke the protocol. */
const PROTOCOL_VIOLATION = /^(voice_settings|generation_config) field /;

/** Most characters of ElevenLabs' own error text copied into ours. */
const MAX_DETAIL_CHARS = 300;

/** How the source's speech sockets are opened (source.ts builds it from the `UPSTREAMS` entry). */
export interface SpeechSocketConfig {
  api: ElevenLabsApi;
  apiKey: string;
  /** Longest connect (TCP, TLS and upgrade), ms. */
  connectTimeoutMs: number;
  /** Longest wait for the next message of a chunk (its first audio included), ms. */
  idleTimeoutMs: number;
  /** ElevenLabs' `model_id` of a catalog speech model. @throws ElevenLabsError `unsupported`. */
  modelOf: (model: string) => string;
}

/**
 * Opens a realtime speech stream for `req` on ElevenLabs (see the module comment), resolved once the
 * socket is upgraded.
 * @throws ElevenLabsError: `unsupported` (a model without a socket) before connecting; the connect's
 *   failures (socket.ts); `signal.reason` when the caller aborts.
 */
export async function openSpeechSocket(cfg: SpeechSocketConfig, req: SpeechStreamRequest, signal?: AbortSignal): Promise<SpeechStream> {
  const modelId = cfg.modelOf(req.model);
  if (NO_SOCKET_MODELS.includes(modelId)) {
    throw new ElevenLabsError(`${cfg.api.name}: ElevenLabs has no text-to-speech socket for ${modelId}`, { retryable: false, kind: "unsupported" });
  }
  const stream = new ElevenLabsSpeechStream(cfg, req, modelId);
  await stream.connect(signal);
  return stream;
}

/** The voice settings of the first message of a context: the fields that are set, or null when none is. */
export function realtimeVoiceSettings(settings: RealtimeVoiceSettings): Record<string, number | boolean> | null {
  const out: Record<string, number | boolean> = {};
  for (const field of ["stability", "similarity_boost", "style", "speed"] as const) {
    const v = settings[field];
    if (typeof v === "number") out[field] = v;
  }
  if (typeof settings.use_speaker_boost === "boolean") out.use_speaker_boost = settings.use_speaker_boost;
  return Object.keys(out).length === 0 ? null : out;
}

/**
 * An alignment of a server message in the interface's shape, its times shifted by `offsetMs`, or null
 * when it is absent or malformed (arrays of different lengths, a non-string char, a non-number time).
 */
export function alignmentOf(value: unknown, offsetMs: number): CharAlignment | null {
  if (!isRecord(value)) return null;
  const chars = value.chars;
  const starts = value.charStartTimesMs ?? value.charsStartTimesMs;
  const durations = value.charDurationsMs ?? value.charsDurationsMs;
  if (!Array.isArray(chars) || !Array.isArray(starts) || !Array.isArray(durations)) return null;
  if (chars.length !== starts.length || chars.length !== durations.length) return null;
  if (!chars.every((c) => typeof c === "string")) return null;
  if (![...starts, ...durations].every((n) => typeof n === "number" && Number.isFinite(n))) return null;
  return {
    chars: chars as string[],
    charStartTimesMs: (starts as number[]).map((t) => t + offsetMs),
    charDurationsMs: [...(durations as number[])],
  };
}

/**
 * The {@link ElevenLabsSocketError} of a server error message `{message, error, code}` (see the module
 * comment's table), redacted.
 */
export function speechSocketError(api: ElevenLabsApi, modelId: string, msg: Record<string, unknown>, closeCode: number | null): ElevenLabsSocketError {
  const code = typeof msg.error === "string" ? msg.error : "error";
  const text = typeof msg.message === "string" ? msg.message.replace(/\s+/g, " ").trim().slice(0, MAX_DETAIL_CHARS) : "";
  const voiceUnavailable = VOICE_GONE_STATUSES.includes(code);
  const modelNotFound = code === MODEL_NOT_FOUND_STATUS;
  const head = modelNotFound ? `ElevenLabs has no model ${JSON.stringify(modelId)}` : "ElevenLabs refused";
  return new ElevenLabsSocketError(api.redact(`${api.name}: text-to-speech socket: ${head}: ${text === "" ? code : `${text} (${code})`}`), {
    retryable: !SPEECH_SOCKET_REFUSALS.includes(code),
    kind: "http",
    status: null,
    errorStatus: code,
    voiceUnavailable,
    modelNotFound,
    upstreamModel: modelNotFound ? modelId : null,
    closeCode,
  });
}

/** The error of a socket closed while a chunk was pending, without an error message before it. */
function closeError(api: ElevenLabsApi, close: SocketClose, malformed: string | null): ElevenLabsSocketError {
  if (malformed !== null) {
    return new ElevenLabsSocketError(`${api.name}: text-to-speech socket: ElevenLabs sent ${malformed}`, { retryable: true, kind: "malformed" });
  }
  if (close.abnormal) {
    const cause = close.transportError === null ? "" : `: ${close.transportError}`;
    return new ElevenLabsSocketError(`${api.name}: text-to-speech socket lost (${close.code})${cause}`, { retryable: true, kind: "network", closeCode: close.code });
  }
  const reason = close.reason.slice(0, MAX_DETAIL_CHARS);
  return new ElevenLabsSocketError(`${api.name}: text-to-speech socket closed by ElevenLabs (${close.code}${reason === "" ? "" : `: ${reason}`})`, {
    retryable: !(close.code === 1008 && PROTOCOL_VIOLATION.test(close.reason)),
    kind: "http",
    status: null,
    closeCode: close.code,
  });
}

/** What a chunk's queue receives from the socket's reader: its messages, an error, or the close. */
type Routed =
  | { kind: "message"; message: Record<string, unknown> }
  | { kind: "error"; message: Record<string, unknown> }
  | { kind: "close"; close: SocketClose; malformed: string | null };

/** One socket of a stream: the channel, the queue of each chunk being read, the contexts not yet final. */
interface Connection {
  ch: SocketChannel;
  queues: Map<string, ItemQueue<Routed>>;
  pending: Set<string>;
  /** The error without a context, or the close, that ended the socket (null while it serves). */
  end: Routed | null;
}

/** The longest wait of the socket's reader, ms (setTimeout's limit; the reader ends with the close). */
const READER_WAIT_MS = 2_147_483_000;

/**
 * One ElevenLabs socket serving a realtime speech stream (see the module comment). A reader per socket
 * routes the server's messages to the queue of their context, so a chunk abandoned while waiting never
 * takes another chunk's messages.
 */
class ElevenLabsSpeechStream implements SpeechStream {
  readonly #cfg: SpeechSocketConfig;
  readonly #req: SpeechStreamRequest;
  readonly #modelId: string;
  readonly #settings: Record<string, number | boolean> | null;
  #conn: Connection | null = null;
  #seq = 0;
  #closed = false;

  constructor(cfg: SpeechSocketConfig, req: SpeechStreamRequest, modelId: string) {
    this.#cfg = cfg;
    this.#req = req;
    this.#modelId = modelId;
    this.#settings = realtimeVoiceSettings(req.voiceSettings);
  }

  /** Opens a socket (replacing the current one). @throws as {@link openSpeechSocket}. */
  async connect(signal?: AbortSignal): Promise<void> {
    const old = this.#conn;
    this.#conn = null;
    if (old !== null) void old.ch.close();
    const { api } = this.#cfg;
    const url = socketUrl(api, `/v1/text-to-speech/${encodeURIComponent(this.#req.voiceId)}/multi-stream-input`, {
      model_id: this.#modelId,
      output_format: this.#req.format,
      sync_alignment: "true",
      inactivity_timeout: String(SPEECH_INACTIVITY_TIMEOUT_S),
    });
    const ch = await connectSocket({
      api,
      url,
      apiKey: this.#cfg.apiKey,
      connectTimeoutMs: this.#cfg.connectTimeoutMs,
      what: "text-to-speech socket",
      context: { speech: true, model: this.#modelId },
      signal,
    });
    const conn: Connection = { ch, queues: new Map(), pending: new Set(), end: null };
    this.#conn = conn;
    void this.#read(conn);
  }

  /** Routes the socket's messages until it closes (see {@link Routed}). */
  async #read(conn: Connection): Promise<void> {
    for (;;) {
      const item = await conn.ch.next(READER_WAIT_MS);
      if (item === null) continue;
      if (item.kind === "close") {
        const end: Routed = { kind: "close", close: item.close, malformed: conn.ch.malformed };
        conn.end ??= end;
        for (const q of conn.queues.values()) q.push(end);
        return;
      }
      const m = item.message;
      const context = typeof m.contextId === "string" ? m.contextId : typeof m.context_id === "string" ? m.context_id : null;
      if (typeof m.error === "string" && m.audio === undefined) {
        const routed: Routed = { kind: "error", message: m };
        if (context === null) {
          // An error without a context ends the socket: every chunk being read fails with it.
          conn.end ??= routed;
          for (const q of conn.queues.values()) q.push(routed);
        } else {
          conn.queues.get(context)?.push(routed);
        }
        continue;
      }
      if (context === null) continue;
      if (m.isFinal === true || m.is_final === true) conn.pending.delete(context);
      conn.queues.get(context)?.push({ kind: "message", message: m });
    }
  }

  /** The socket for the next chunk: the current one, or a new one (see "The socket's life"). */
  async #ready(signal?: AbortSignal): Promise<Connection> {
    const c = this.#conn;
    if (c !== null && c.end === null && c.ch.open && c.ch.idleMs < RECONNECT_IDLE_MS && c.pending.size < MAX_SOCKET_CONTEXTS - 1) return c;
    await this.connect(signal);
    return this.#conn!;
  }

  /** Drops a socket after a failure (the next chunk connects again). */
  #drop(conn: Connection): void {
    if (this.#conn === conn) this.#conn = null;
    void conn.ch.close(1000, 200);
  }

  async *synthesize(text: string, signal?: AbortSignal): AsyncGenerator<SpeechPiece> {
    const { api } = this.#cfg;
    if (this.#closed) throw new ElevenLabsError(`${api.name}: the text-to-speech socket is closed`, { retryable: false, kind: "refused" });
    signal?.throwIfAborted();
    // Nothing to speak: ElevenLabs would answer a context of spaces with no audio.
    if (text.trim() === "") return;
    const conn = await this.#ready(signal);
    const ctx = `ctx-${++this.#seq}`;
    const queue = new ItemQueue<Routed>((r) => r.kind !== "message");
    conn.queues.set(ctx, queue);
    try {
      const first: Record<string, unknown> = { text: " " };
      if (this.#settings !== null) first.voice_settings = this.#settings;
      first.context_id = ctx;
      conn.pending.add(ctx);
      const sent = conn.ch.send(first) && conn.ch.send({ text, context_id: ctx, flush: true }) && conn.ch.send({ context_id: ctx, close_context: true });
      if (!sent) {
        this.#drop(conn);
        throw new ElevenLabsSocketError(`${api.name}: text-to-speech socket closed before the chunk was sent`, { retryable: true, kind: "network" });
      }
      const format: AudioFormat = this.#req.format;
      const raw = audioFormatInfo(format).codec !== "mp3";
      let earlierMs = 0;
      const earlier: Uint8Array[] = [];
      for (;;) {
        const routed = await queue.next(this.#cfg.idleTimeoutMs, signal);
        if (routed === null) {
          this.#drop(conn);
          throw new ElevenLabsSocketError(`${api.name}: text-to-speech socket: no audio for ${this.#cfg.idleTimeoutMs} ms`, { retryable: true, kind: "timeout" });
        }
        if (routed.kind === "close") {
          this.#drop(conn);
          if (this.#closed) throw new ElevenLabsError(`${api.name}: the text-to-speech socket was closed`, { retryable: false, kind: "refused" });
          throw closeError(api, routed.close, routed.malformed);
        }
        const m = routed.message;
        if (routed.kind === "error") {
          this.#drop(conn);
          throw speechSocketError(api, this.#modelId, m, typeof m.code === "number" ? m.code : null);
        }
        if (typeof m.audio === "string" && m.audio !== "") {
          const audio = new Uint8Array(Buffer.from(m.audio, "base64"));
          const offsetMs = ALIGNMENT_TIMES_PER_MESSAGE ? earlierMs : 0;
          yield { audio, alignment: alignmentOf(m.alignment, offsetMs), normalizedAlignment: alignmentOf(m.normalizedAlignment, offsetMs) };
          earlier.push(audio);
          // Raw formats add up exactly; MP3 frames are counted over the whole chunk so far (a frame may span pieces).
          earlierMs = (raw ? earlierMs / 1000 + audioDurationSec(audio, format) : audioDurationSec(concatBytes(earlier), format)) * 1000;
        }
        if (m.isFinal === true || m.is_final === true) return;
      }
    } finally {
      // An abandoned chunk's later messages are dropped by the reader.
      conn.queues.delete(ctx);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const conn = this.#conn;
    this.#conn = null;
    if (conn === null) return;
    conn.ch.send({ close_socket: true });
    await conn.ch.close(1000, 500);
  }
}
