/**
 * The realtime sockets (D42, D43) in the SDK: `client.realtime.speech(...)` opens the text-to-speech socket
 * (`/v1/audio/speech/{voice_id}/stream-input` or `multi-stream-input`, ElevenLabs' protocol): text in as
 * it is written, audio out as it is made, with its alignment; `client.realtime.transcription(...)` opens
 * the Scribe realtime socket (`/v1/audio/transcriptions/realtime`): audio in, partial and committed
 * transcripts out. docs/realtime-speech.md and docs/realtime-transcription.md describe the protocols,
 * the money (one hold per socket, one usage record) and the limits.
 *
 * ```ts
 * const speech = await client.realtime.speech({ voiceId: "JBFqnCBsd6RMkjVDRZzb", modelId: "alpha-flash-v2-5", outputFormat: "pcm_16000" });
 * speech.send("Hello from a socket. ", { flush: true });
 * speech.end();
 * for await (const ev of speech) if (ev.type === "audio") play(ev.audio);   // throws RealtimeError if it ended with an error
 *
 * const stt = await client.realtime.transcription({ audioFormat: "pcm_16000", commitStrategy: "vad" });
 * stt.on("committed_transcript", (t) => console.log(t.text));
 * stt.sendAudio(pcmBytes);
 * ```
 *
 * Runs in Node and in browsers. In Node the sockets are `ws` WebSockets (imported when the first socket
 * opens), which send the key as `Authorization: Bearer` and the client's headers (`X-Svc-Org`, ...), and a
 * refusal before the socket opens throws the {@link APIError} of its status, as an HTTP call would
 * (`InsufficientBalanceError`, `RateLimitError`, ...). In a browser the global `WebSocket` is used: it cannot
 * send headers, so the key goes in the query (`authorization=Bearer <key>`), and a refused socket is only
 * seen as a failed connection ({@link APIConnectionError}). Once open, a socket that ends with an error
 * message rejects its iteration with a {@link RealtimeError} (code, message, close code).
 */
import type NodeWebSocket from "ws";
import { APIConnectionError, gatewayError, RealtimeError } from "./errors.ts";
import type { Query } from "./types.ts";

/**
 * A WebSocket class the sockets may be opened with (option `WebSocket`): the browsers' global one, Node's
 * global one, or the `ws` package's class. `ws`'s class is recognised and used with headers (the key as
 * `Authorization`); any other is used as a browser's, the key in the query.
 */
export type WebSocketConstructor = new (url: string) => unknown;

/** Options of opening one socket. */
export interface RealtimeOptions {
  /** Extra headers of the upgrade request (Node only: a browser cannot set them), e.g. `X-Svc-Simulate: fail` for the simulator (D10). */
  headers?: Record<string, string>;
  /** Aborts the opening (rejects with the signal's reason); once open, aborting closes the socket (1000). */
  signal?: AbortSignal;
  /** The WebSocket class to use (see {@link WebSocketConstructor}); default `ws` in Node, the global `WebSocket` elsewhere. */
  WebSocket?: WebSocketConstructor;
}

/** The query of the text-to-speech socket, as the document types it. */
type SpeechQuery = Query<"speechSocketStreamInput">;
/** The query of the transcription socket, as the document types it. */
type TranscriptionQuery = Query<"transcriptionSocket">;

/** An audio format of the speech socket (`output_format`). */
export type SpeechSocketFormat = NonNullable<SpeechQuery["output_format"]>;
/** An audio format of the transcription socket (`audio_format`): 16-bit little-endian PCM at a rate, or 8 kHz mu-law. */
export type TranscriptionSocketFormat = NonNullable<TranscriptionQuery["audio_format"]>;

/** Voice settings of a speech context (ElevenLabs' ranges: 0..1, `speed` 0.7..1.2). */
export interface RealtimeVoiceSettings {
  stability?: number;
  similarity_boost?: number;
  style?: number;
  use_speaker_boost?: boolean;
  speed?: number;
}

/** What {@link Realtime.speech} opens. */
export interface SpeechSocketParams {
  /** The voice (`GET /v1/audio/voices`; an alpha voice with alpha models, a beta or own voice with beta ones). */
  voiceId: string;
  /** A speech model with realtime support (`GET /v1/models` shows `realtime`), or an ElevenLabs id; default the default speech model. */
  modelId?: string;
  /** The format of every audio chunk; default `mp3_44100_128`. */
  outputFormat?: SpeechSocketFormat;
  /** `multi-stream-input`: up to 5 contexts side by side (`contextId` on each call); default `stream-input`, one. */
  multi?: boolean;
  /** Seconds without a message before the gateway closes the socket (1 to 180, default 20); {@link SpeechSocket.keepAlive} resets it. */
  inactivityTimeout?: number;
  /** Generate at sentence ends instead of the chunk schedule. */
  autoMode?: boolean;
  /** `sync_alignment` (alignment is sent with every audio message whenever the source has it). */
  syncAlignment?: boolean;
  /** Voice settings, sent with each context's first message. */
  voiceSettings?: RealtimeVoiceSettings;
  /** `generation_config.chunk_length_schedule` (characters, each 50 to 500), sent with each context's first message. */
  chunkLengthSchedule?: number[];
}

/** Which characters an audio message speaks and when, ms from the context's first audio (ElevenLabs' alignment). */
export interface SpeechAlignment {
  chars: string[];
  charStartTimesMs: number[];
  charDurationsMs: number[];
}

/** An event of a speech socket: audio (with its alignment), or the end of a context's audio. */
export type SpeechEvent =
  | {
      type: "audio";
      /** The audio bytes of this message, in the socket's `outputFormat`. */
      audio: Uint8Array;
      /** The characters this audio speaks (null when the message has none). */
      alignment: SpeechAlignment | null;
      /** The same, for the normalized text. */
      normalizedAlignment: SpeechAlignment | null;
      /** The context (`multi`), else null. */
      contextId: string | null;
    }
  | {
      /** A context's audio is complete (`isFinal`); on `stream-input`, the socket's. */
      type: "final";
      contextId: string | null;
    };

/** What {@link Realtime.transcription} opens. */
export interface TranscriptionSocketParams {
  /** A transcription model, the alias `transcribe`, or `scribe_v2_realtime` (the default). */
  modelId?: string;
  /** The format of the audio sent; default `pcm_16000`. */
  audioFormat?: TranscriptionSocketFormat;
  /** Who ends a segment: the client (`commit`, the default `manual`) or the gateway after silence (`vad`). */
  commitStrategy?: "manual" | "vad";
  /** ISO 639-1 or 639-3 code of the audio's language. */
  languageCode?: string;
  /** Committed transcripts also come with word timestamps (`committed_transcript_with_timestamps`). */
  includeTimestamps?: boolean;
  /** Committed transcripts also come with the detected language. */
  includeLanguageDetection?: boolean;
  /** `vad`: silence that ends a segment, seconds (0.3 to 3, default 1.5). */
  vadSilenceThresholdSecs?: number;
  /** `vad`: voice activity threshold (0.1 to 0.9, default 0.4). */
  vadThreshold?: number;
  /** `vad`: shortest speech that counts, ms (50 to 2000). */
  minSpeechDurationMs?: number;
  /** `vad`: shortest silence that counts, ms (50 to 2000). */
  minSilenceDurationMs?: number;
  /** Seconds without a message before the gateway closes the socket (1 to 180, default 20). */
  inactivityTimeout?: number;
}

/** A word (or the spacing between words) of a committed transcript with timestamps, seconds from the socket's first audio. */
export interface TranscriptWord {
  text: string;
  start: number;
  end: number;
  type: "word" | "spacing";
  logprob?: number;
}

/** An event of a transcription socket. */
export type TranscriptionEvent =
  | {
      /** The text of the current segment so far (replaces the previous partial). */
      type: "partial_transcript";
      text: string;
    }
  | {
      /** A segment is final (a commit, or silence with `vad`). */
      type: "committed_transcript";
      text: string;
    }
  | {
      /** The same segment with its words' timestamps and language (when asked for). */
      type: "committed_transcript_with_timestamps";
      text: string;
      languageCode: string | null;
      words: TranscriptWord[];
    };

/** How a socket ended: the close code and reason, and the error that ended it (null for a normal end). */
export interface RealtimeClose {
  code: number;
  reason: string;
  error: RealtimeError | null;
}

/** The connection under a socket, whichever WebSocket class carries it. */
interface Transport {
  send(text: string): void;
  close(code: number, reason: string): void;
  /** The `X-Svc-Request-Id` of the `101` answer (Node: `ws` reads it; a browser cannot), else null. */
  requestId: string | null;
}

/** What a transport reports once open. */
interface TransportEvents {
  message(text: string): void;
  close(code: number, reason: string): void;
}

/** The part of a browser-style WebSocket the SDK uses. */
interface BrowserSocket {
  binaryType: string;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** Whether `ctor` is the `ws` package's class (an EventEmitter: it takes headers). */
function isNodeWs(ctor: WebSocketConstructor): ctor is WebSocketConstructor & typeof NodeWebSocket {
  const proto = (ctor as { prototype?: { on?: unknown; terminate?: unknown } }).prototype;
  return typeof proto?.on === "function" && typeof proto.terminate === "function";
}

/** Whether this runs in Node (or a runtime that says it is Node-compatible). */
function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === "string";
}

/** The message of a failed connection, with the system code when there is one. */
function connectionError(err: unknown): APIConnectionError {
  const code = (err as { code?: string } | null)?.code ?? (err instanceof Error ? err.message : undefined);
  return new APIConnectionError({ message: code ? `Connection error: ${code}` : "Connection error.", cause: err });
}

/**
 * Opens `url` with `ws`'s class and `headers`; resolves once open. A refusal before the upgrade rejects
 * with the {@link APIError} of its status and body; a failed connection with {@link APIConnectionError}.
 */
function nodeTransport(WS: typeof NodeWebSocket, url: string, headers: Record<string, string>, events: TransportEvents, signal: AbortSignal | undefined): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const ws = new WS(url, { headers });
    let opened = false;
    const onAbort = () => {
      ws.terminate();
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    let requestId: string | null = null;
    ws.once("upgrade", (res) => {
      const id = res.headers["x-svc-request-id"];
      if (typeof id === "string") requestId = id;
    });
    ws.once("open", () => {
      opened = true;
      signal?.removeEventListener("abort", onAbort);
      resolve({ send: (text) => ws.send(text), close: (code, reason) => ws.close(code, reason), requestId });
    });
    ws.once("unexpected-response", (req, res) => {
      const parts: Uint8Array[] = [];
      res.on("data", (d: Uint8Array) => parts.push(d));
      res.once("end", () => {
        signal?.removeEventListener("abort", onAbort);
        const text = Buffer.concat(parts).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the text is the message
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
        const status = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode <= 599 ? res.statusCode : 502;
        reject(gatewayError(new Response(null, { status, statusText: res.statusMessage ?? "", headers: h }), body));
        req.destroy();
      });
    });
    ws.on("error", (err) => {
      if (opened) return;
      signal?.removeEventListener("abort", onAbort);
      reject(connectionError((err as { cause?: unknown }).cause ?? err));
    });
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      events.message(Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.from(data as ArrayBuffer).toString("utf8"));
    });
    ws.on("close", (code, reason) => {
      if (opened) events.close(code, reason.toString("utf8"));
    });
  });
}

/**
 * Opens `url` with a browser-style WebSocket class; resolves once open. A browser reports a refused
 * upgrade as a failed connection without its status: {@link APIConnectionError}.
 */
function browserTransport(Ctor: WebSocketConstructor, url: string, events: TransportEvents, signal: AbortSignal | undefined): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const ws = new Ctor(url) as BrowserSocket;
    ws.binaryType = "arraybuffer";
    let opened = false;
    const refused = () =>
      new APIConnectionError({
        message:
          "The socket could not be opened: the gateway refused it (a browser is not told why: the key, a query value, the model or voice, the balance or a limit) or could not be reached. The same URL with fetch() shows the refusal.",
      });
    const onAbort = () => {
      ws.close(1000, "aborted");
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.onopen = () => {
      opened = true;
      signal?.removeEventListener("abort", onAbort);
      resolve({ send: (text) => ws.send(text), close: (code, reason) => ws.close(code, reason), requestId: null });
    };
    ws.onerror = () => {
      if (!opened) reject(refused());
    };
    ws.onclose = (ev) => {
      if (opened) events.close(ev.code, ev.reason);
      else reject(refused());
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") events.message(ev.data);
    };
  });
}

/** Decodes base64 into bytes (Node's Buffer when present, else `atob`). */
function fromBase64(b64: string): Uint8Array {
  if (typeof Buffer !== "undefined") {
    const b = Buffer.from(b64, "base64");
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Encodes bytes as base64 (Node's Buffer when present, else `btoa`). */
function toBase64(bytes: Uint8Array): string {
  if (typeof Buffer !== "undefined") return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** `ws://` or `wss://` for an `http://` or `https://` base URL. */
function socketBase(baseUrl: string): string {
  return baseUrl.replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s}://`);
}

/** A query string of the defined entries of `q` (`?` included), or "" when none. */
function queryString(q: Record<string, string | number | boolean | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s === "" ? "" : `?${s}`;
}

/** What the {@link Realtime} namespace needs of its client: where, with which key and headers. */
export interface RealtimeConnection {
  baseUrl: string;
  apiKey: string | undefined;
  /** Headers of every upgrade (the client's default headers, `X-Svc-Org`); Node only. */
  headers: Record<string, string>;
}

/** Listeners of a socket, by event name. */
type ListenerMap = Map<string, Set<(arg: never) => void>>;

/**
 * What both sockets share: the connection, events delivered to listeners ({@link on}) or queued for
 * iteration (`for await`), the error that ended the socket, and how it closed ({@link closed}).
 */
abstract class RealtimeSocket<E extends { type: string }> implements AsyncIterable<E> {
  /** Resolves once the socket closed, with its close code, reason and the error that ended it (never rejects). */
  readonly closed: Promise<RealtimeClose>;
  #resolveClosed!: (c: RealtimeClose) => void;
  #transport: Transport | null = null;
  readonly #queue: E[] = [];
  readonly #waiters: (() => void)[] = [];
  readonly #listeners: ListenerMap = new Map();
  /** The error message received last, when nothing came after it: the one a close that follows reports. */
  #lastError: { code: string; message: string } | null = null;
  #end: RealtimeClose | null = null;
  /**
   * The socket's request id: the id of its one usage record (`GET /v1/requests/{id}`), from the `101`
   * answer's `X-Svc-Request-Id` (Node) or the socket's messages (speech: `request_id` of its final and
   * error messages; transcription: `session_started`'s `session_id`); null until known.
   */
  requestId: string | null = null;

  constructor() {
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  /** Whether the socket is closed. */
  get isClosed(): boolean {
    return this.#end !== null;
  }

  /** The transport's events, bound to this socket. */
  protected get transportEvents(): TransportEvents {
    return { message: (text) => this.#message(text), close: (code, reason) => this.#closed(code, reason) };
  }

  /** Starts using `t` (once open); `signal`, when it aborts later, closes the socket. */
  protected attach(t: Transport, signal: AbortSignal | undefined): void {
    this.#transport = t;
    this.requestId ??= t.requestId;
    if (signal !== undefined) {
      const onAbort = () => this.close(1000, "aborted");
      signal.addEventListener("abort", onAbort, { once: true });
      void this.closed.then(() => signal.removeEventListener("abort", onAbort));
    }
  }

  /** Sends one JSON message (nothing once closed: the close and its error say why). */
  protected sendJson(message: Record<string, unknown>): void {
    if (this.#transport === null || this.#end !== null) return;
    this.#transport.send(JSON.stringify(message));
  }

  /** A message of the socket: an event, an error, or nothing this SDK knows (ignored). */
  protected abstract parse(message: Record<string, unknown>): { event: E } | { error: { code: string; message: string } } | null;

  #message(text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) return;
    const parsed = this.parse(value as Record<string, unknown>);
    if (parsed === null) return;
    if ("error" in parsed) {
      this.#lastError = parsed.error;
      this.#emit("error", new RealtimeError({ ...parsed.error, requestId: this.requestId }));
      return;
    }
    this.#lastError = null;
    const listeners = this.#listeners.get(parsed.event.type);
    if (listeners !== undefined && listeners.size > 0) {
      for (const l of [...listeners]) (l as (ev: E) => void)(parsed.event);
      return;
    }
    this.#queue.push(parsed.event);
    this.#wake();
  }

  #closed(code: number, reason: string): void {
    if (this.#end !== null) return;
    const last = this.#lastError;
    const error =
      last !== null
        ? new RealtimeError({ ...last, closeCode: code, requestId: this.requestId })
        : code === 1000
          ? null
          : new RealtimeError({ code: "connection_closed", message: reason || `The socket closed with code ${code}.`, closeCode: code, requestId: this.requestId });
    this.#end = { code, reason, error };
    this.#emit("close", this.#end);
    this.#resolveClosed(this.#end);
    this.#wake();
  }

  #emit(name: string, arg: unknown): void {
    for (const l of [...(this.#listeners.get(name) ?? [])]) (l as (a: unknown) => void)(arg);
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /**
   * Calls `listener` with every event of `type` (which then no longer goes to the iteration), every error
   * message (`"error"`: a {@link RealtimeError} with `closeCode` null; most end the socket) or the close
   * (`"close"`). Returns the function that removes the listener.
   */
  on<T extends E["type"]>(type: T, listener: (event: Extract<E, { type: T }>) => void): () => void;
  on(type: "error", listener: (error: RealtimeError) => void): () => void;
  on(type: "close", listener: (close: RealtimeClose) => void): () => void;
  on(type: string, listener: (arg: never) => void): () => void {
    const set = this.#listeners.get(type) ?? new Set();
    this.#listeners.set(type, set);
    set.add(listener);
    return () => void set.delete(listener);
  }

  /**
   * The events in order, the ones received before the loop started included (those of a type with a
   * listener excepted). Ends when the socket closes normally; throws the {@link RealtimeError} that ended
   * it otherwise, after the events received before it.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<E, void, undefined> {
    for (;;) {
      const ev = this.#queue.shift();
      if (ev !== undefined) {
        yield ev;
        continue;
      }
      if (this.#end !== null) {
        if (this.#end.error !== null) throw this.#end.error;
        return;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Closes the socket now (default 1000). What the gateway already reserved is still generated and charged (D42, D43). */
  close(code = 1000, reason = ""): void {
    if (this.#end === null) this.#transport?.close(code, reason);
  }
}

/** `{ chars, charStartTimesMs, charDurationsMs }` when `x` is one, else null. */
function alignmentOf(x: unknown): SpeechAlignment | null {
  if (typeof x !== "object" || x === null) return null;
  const a = x as Record<string, unknown>;
  if (!Array.isArray(a.chars) || !Array.isArray(a.charStartTimesMs) || !Array.isArray(a.charDurationsMs)) return null;
  return { chars: a.chars as string[], charStartTimesMs: a.charStartTimesMs as number[], charDurationsMs: a.charDurationsMs as number[] };
}

/**
 * An open text-to-speech socket (D42). Send text with {@link send} as it is written (a context's first
 * message, with the voice settings and chunk schedule, is sent for you), {@link flush} to have what is
 * buffered spoken now, {@link end} when the text is complete; read the audio by iterating (`for await`)
 * or with `on("audio", ...)`. The socket closes (1000) once everything was spoken.
 */
export class SpeechSocket extends RealtimeSocket<SpeechEvent> {
  /** `multi-stream-input` (contexts) rather than `stream-input`. */
  readonly multi: boolean;
  /** The `output_format` of the audio. */
  readonly outputFormat: SpeechSocketFormat;
  readonly #first: Record<string, unknown>;
  /** Contexts opened and not closed (`null`: the default one). */
  readonly #contexts = new Set<string | null>();
  #ended = false;

  /** Use {@link Realtime.speech}. */
  constructor(params: SpeechSocketParams) {
    super();
    this.multi = params.multi === true;
    this.outputFormat = params.outputFormat ?? "mp3_44100_128";
    this.#first = {
      ...(params.voiceSettings ? { voice_settings: params.voiceSettings } : {}),
      ...(params.chunkLengthSchedule ? { generation_config: { chunk_length_schedule: params.chunkLengthSchedule } } : {}),
    };
  }

  /** @internal Opens the connection and the first context (`stream-input`). */
  async open(connect: (events: TransportEvents) => Promise<Transport>, signal: AbortSignal | undefined): Promise<void> {
    this.attach(await connect(this.transportEvents), signal);
    if (!this.multi) this.#open(null);
  }

  protected parse(m: Record<string, unknown>): { event: SpeechEvent } | { error: { code: string; message: string } } | null {
    const contextId = typeof m.contextId === "string" ? m.contextId : typeof m.context_id === "string" ? m.context_id : null;
    if (typeof m.request_id === "string") this.requestId ??= m.request_id;
    if (typeof m.error === "string") return { error: { code: m.error, message: typeof m.message === "string" ? m.message : m.error } };
    if (typeof m.audio === "string" && m.audio.length > 0) {
      return { event: { type: "audio", audio: fromBase64(m.audio), alignment: alignmentOf(m.alignment), normalizedAlignment: alignmentOf(m.normalizedAlignment), contextId } };
    }
    if (m.isFinal === true || m.is_final === true) return { event: { type: "final", contextId } };
    return null;
  }

  /** A context's first message (`{"text": " "}` with the settings), once. */
  #open(contextId: string | null): void {
    if (this.#contexts.has(contextId)) return;
    this.#contexts.add(contextId);
    this.sendJson({ text: " ", ...this.#first, ...this.#ctx(contextId) });
  }

  /** `{context_id}` on `multi-stream-input` for a named context. */
  #ctx(contextId: string | null): Record<string, string> {
    return this.multi && contextId !== null ? { context_id: contextId } : {};
  }

  /** The context of a call, checked against the socket's flavour. */
  #contextOf(contextId: string | undefined): string | null {
    if (contextId !== undefined && !this.multi) throw new TypeError("contextId needs a multi-stream-input socket (multi: true).");
    return contextId ?? null;
  }

  /**
   * Sends `text` (words as they are written, each with its trailing space; a line; a sentence). The gateway
   * buffers it and speaks it in chunks (the chunk schedule, or at sentence ends with `autoMode`); `flush`
   * speaks everything buffered now, `tryTriggerGeneration` when 50 characters or more wait. `contextId`
   * (multi) names the context, opened by its first text. Nothing is sent after {@link end} or the close.
   */
  send(text: string, opts: { flush?: boolean; tryTriggerGeneration?: boolean; contextId?: string } = {}): void {
    const ctx = this.#contextOf(opts.contextId);
    if (this.#ended) return;
    this.#open(ctx);
    if (text.length === 0) {
      if (opts.flush === true) this.flush(opts.contextId);
      return;
    }
    this.sendJson({ text, ...(opts.flush === true ? { flush: true } : {}), ...(opts.tryTriggerGeneration === true ? { try_trigger_generation: true } : {}), ...this.#ctx(ctx) });
  }

  /** Speaks what the context has buffered now (the end of a line, of a turn). */
  flush(contextId?: string): void {
    const ctx = this.#contextOf(contextId);
    if (this.#ended || !this.#contexts.has(ctx)) return;
    // On stream-input `{"text": ""}` would end the input: a space (dropped, as a chunk never starts with one) carries the flush.
    this.sendJson(this.multi ? { text: "", flush: true, ...this.#ctx(ctx) } : { text: " ", flush: true });
  }

  /**
   * Resets the inactivity timer without speaking: a space, dropped by the gateway as a chunk never starts
   * with one (send it between flushed texts, not in the middle of a word).
   */
  keepAlive(contextId?: string): void {
    const ctx = this.#contextOf(contextId);
    if (this.#ended) return;
    if (this.multi && this.#contexts.has(ctx)) this.sendJson({ text: "", ...this.#ctx(ctx) });
    else {
      this.#open(ctx);
      this.sendJson({ text: " ", ...this.#ctx(ctx) });
    }
  }

  /**
   * `multi`: closes a context. What it had due is spoken, what was buffered without a flush is dropped (as
   * ElevenLabs does), then its `final` event; the id is not reused.
   */
  closeContext(contextId: string): void {
    if (!this.multi) throw new TypeError("closeContext needs a multi-stream-input socket (multi: true).");
    if (this.#ended || !this.#contexts.has(contextId)) return;
    this.#contexts.delete(contextId);
    this.sendJson({ context_id: contextId, close_context: true });
  }

  /**
   * The text is complete: everything buffered is spoken (on `multi`, every open context is flushed, then
   * `close_socket`), each context gets its `final` event and the gateway closes the socket (1000).
   */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.multi) {
      this.sendJson({ text: "" });
      return;
    }
    for (const ctx of this.#contexts) this.sendJson({ text: "", flush: true, ...this.#ctx(ctx) });
    this.sendJson({ close_socket: true });
  }
}

/**
 * An open transcription socket (D43), once the gateway said `session_started`. Send audio with
 * {@link sendAudio} in the socket's `audioFormat` (odd bytes of 16-bit PCM wait for the next call, so any
 * slicing works), {@link commit} to end a segment (`manual`), and read the transcripts by iterating or with
 * `on("committed_transcript", ...)`. {@link close} ends the socket (1000).
 */
export class TranscriptionSocket extends RealtimeSocket<TranscriptionEvent> {
  /** The `audio_format` of the audio sent. */
  readonly audioFormat: TranscriptionSocketFormat;
  /** Samples per second of the format. */
  readonly sampleRate: number;
  /** Bytes per sample of the format (2 for PCM, 1 for mu-law). */
  readonly bytesPerSample: number;
  /** The session's id (`session_started`): the id of the socket's usage record (`GET /v1/requests/{id}`). */
  sessionId = "";
  /** The configuration `session_started` echoed. */
  config: Record<string, unknown> = {};
  #started: (() => void) | null = null;
  /** A byte of a sample cut by the caller's slicing, sent with the next audio. */
  #carry: Uint8Array | null = null;

  /** Use {@link Realtime.transcription}. */
  constructor(audioFormat: TranscriptionSocketFormat) {
    super();
    this.audioFormat = audioFormat;
    const [codec, rate] = audioFormat.split("_");
    this.sampleRate = Number(rate);
    this.bytesPerSample = codec === "ulaw" ? 1 : 2;
  }

  /** @internal Opens the connection and waits for `session_started`. @throws RealtimeError when the session ends before. */
  async open(connect: (events: TransportEvents) => Promise<Transport>, signal: AbortSignal | undefined): Promise<void> {
    const started = new Promise<void>((resolve) => (this.#started = resolve));
    this.attach(await connect(this.transportEvents), signal);
    const end = await Promise.race([started.then(() => null), this.closed]);
    if (end !== null) throw end.error ?? new RealtimeError({ code: "connection_closed", message: "The socket closed before the session started.", closeCode: end.code });
  }

  protected parse(m: Record<string, unknown>): { event: TranscriptionEvent } | { error: { code: string; message: string } } | null {
    const type = m.message_type;
    if (typeof type !== "string") return null;
    const text = typeof m.text === "string" ? m.text : "";
    switch (type) {
      case "session_started":
        this.sessionId = typeof m.session_id === "string" ? m.session_id : "";
        if (this.sessionId !== "") this.requestId ??= this.sessionId;
        this.config = typeof m.config === "object" && m.config !== null ? (m.config as Record<string, unknown>) : {};
        this.#started?.();
        return null;
      case "partial_transcript":
      case "committed_transcript":
        return { event: { type, text } };
      case "committed_transcript_with_timestamps":
        return { event: { type, text, languageCode: typeof m.language_code === "string" ? m.language_code : null, words: Array.isArray(m.words) ? (m.words as TranscriptWord[]) : [] } };
      default:
        // Scribe's errors: `{"message_type": "<error type>", "error": "<text>"}`.
        if (typeof m.error === "string") return { error: { code: type, message: m.error } };
        return null;
    }
  }

  /**
   * Sends audio in the socket's format (raw bytes: 16-bit little-endian PCM, or mu-law); `commit` ends the
   * segment after it (`manual`). Each started second of audio received is charged (D43).
   */
  sendAudio(audio: Uint8Array | ArrayBuffer | ArrayBufferView, opts: { commit?: boolean; previousText?: string } = {}): void {
    let bytes = audio instanceof Uint8Array ? audio : ArrayBuffer.isView(audio) ? new Uint8Array(audio.buffer, audio.byteOffset, audio.byteLength) : new Uint8Array(audio);
    if (this.#carry !== null) {
      const joined = new Uint8Array(this.#carry.length + bytes.length);
      joined.set(this.#carry);
      joined.set(bytes, this.#carry.length);
      bytes = joined;
      this.#carry = null;
    }
    const rest = bytes.length % this.bytesPerSample;
    if (rest > 0) {
      this.#carry = bytes.slice(bytes.length - rest);
      bytes = bytes.subarray(0, bytes.length - rest);
    }
    if (bytes.length === 0 && opts.commit !== true) return;
    this.sendJson({
      message_type: "input_audio_chunk",
      audio_base_64: toBase64(bytes),
      commit: opts.commit === true,
      sample_rate: this.sampleRate,
      ...(opts.previousText !== undefined ? { previous_text: opts.previousText } : {}),
    });
  }

  /** Ends the current segment (`manual`): its `committed_transcript` follows. */
  commit(): void {
    this.sendAudio(new Uint8Array(0), { commit: true });
  }
}

/**
 * `client.realtime`: the realtime sockets (D42, D43). Each call opens one socket, billed as one call with
 * one usage record (`realtime: true`); a refusal before it opens throws as an HTTP call would.
 */
export class Realtime {
  readonly #conn: RealtimeConnection;

  constructor(conn: RealtimeConnection) {
    this.#conn = conn;
  }

  /** The connect function of a socket at `pathAndQuery`: `ws` with headers in Node, else the key in the query. */
  async #connector(pathAndQuery: string, options: RealtimeOptions): Promise<(events: TransportEvents) => Promise<Transport>> {
    const base = socketBase(this.#conn.baseUrl);
    const key = this.#conn.apiKey;
    let Ctor = options.WebSocket;
    if (Ctor === undefined) {
      if (inNode()) Ctor = (await import("ws")).default;
      else {
        const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
        if (global === undefined) throw new APIConnectionError({ message: "No WebSocket class: pass one as the option WebSocket." });
        Ctor = global;
      }
    }
    const C = Ctor;
    if (isNodeWs(C)) {
      const headers = { ...this.#conn.headers, ...options.headers, ...(key ? { authorization: `Bearer ${key}` } : {}) };
      return (events) => nodeTransport(C, base + pathAndQuery, headers, events, options.signal);
    }
    const sep = pathAndQuery.includes("?") ? "&" : "?";
    const url = key ? `${base}${pathAndQuery}${sep}authorization=${encodeURIComponent(`Bearer ${key}`)}` : base + pathAndQuery;
    return (events) => browserTransport(C, url, events, options.signal);
  }

  /**
   * Opens a text-to-speech socket (D42) for `params.voiceId`; resolves once open (with `stream-input`,
   * its context started). Throws before it opens: `BadRequestError` (`not_a_tts_model`,
   * `realtime_not_supported`, `voice_model_mismatch`, a query value), `AuthenticationError`,
   * `InsufficientBalanceError` (`billing_error`: below one character's price; `key_spend_limit`),
   * `PermissionDeniedError`, `RateLimitError` (the requests per minute, the tier's audio pool: one slot
   * for the socket's life) in Node; `APIConnectionError` in a browser or without a connection.
   */
  async speech(params: SpeechSocketParams, options: RealtimeOptions = {}): Promise<SpeechSocket> {
    const q: SpeechQuery = {};
    if (params.modelId !== undefined) q.model_id = params.modelId;
    if (params.outputFormat !== undefined) q.output_format = params.outputFormat;
    if (params.inactivityTimeout !== undefined) q.inactivity_timeout = String(params.inactivityTimeout);
    if (params.autoMode !== undefined) q.auto_mode = params.autoMode ? "true" : "false";
    if (params.syncAlignment !== undefined) q.sync_alignment = params.syncAlignment ? "true" : "false";
    const path = `/v1/audio/speech/${encodeURIComponent(params.voiceId)}/${params.multi === true ? "multi-stream-input" : "stream-input"}${queryString(q)}`;
    const socket = new SpeechSocket(params);
    await socket.open(await this.#connector(path, options), options.signal);
    return socket;
  }

  /**
   * Opens a transcription socket (D43); resolves once the gateway said `session_started` (its upstream
   * stream open). Throws as {@link speech} does before it opens (`BadRequestError` for `invalid_model` or a
   * query value), and {@link RealtimeError} when the session could not start (`transcriber_error`,
   * `rate_limited`).
   */
  async transcription(params: TranscriptionSocketParams = {}, options: RealtimeOptions = {}): Promise<TranscriptionSocket> {
    const bool = (b: boolean | undefined) => (b === undefined ? undefined : b ? "true" : "false");
    const q: Record<keyof TranscriptionQuery & string, string | number | undefined> = {
      authorization: undefined,
      model_id: params.modelId,
      audio_format: params.audioFormat,
      commit_strategy: params.commitStrategy,
      language_code: params.languageCode,
      include_timestamps: bool(params.includeTimestamps),
      include_language_detection: bool(params.includeLanguageDetection),
      vad_silence_threshold_secs: params.vadSilenceThresholdSecs,
      vad_threshold: params.vadThreshold,
      min_speech_duration_ms: params.minSpeechDurationMs,
      min_silence_duration_ms: params.minSilenceDurationMs,
      inactivity_timeout: params.inactivityTimeout,
    };
    const path = `/v1/audio/transcriptions/realtime${queryString(q)}`;
    const socket = new TranscriptionSocket(params.audioFormat ?? "pcm_16000");
    await socket.open(await this.#connector(path, options), options.signal);
    return socket;
  }
}
