/**
 * Realtime speech on MiniMax's T2A WebSocket (D42): a {@link SpeechStreamSource} for the beta family.
 *
 * ## The protocol (MiniMax's T2A WebSocket reference, platform.minimax.io/docs/api-reference/
 * speech-t2a-websocket, and its AsyncAPI `.../speech/t2a/api/asyncapi.json`)
 * - `GET {base}/ws/v1/t2a_v2` upgraded to a WebSocket (`wss:` for an `https:` base) with `Authorization:
 *   Bearer <key>`; the server's first message is `{"event": "connected_success", "session_id", "trace_id",
 *   "base_resp"}`.
 * - `{"event": "task_start", "model", "voice_setting": {voice_id, speed, vol, pitch}, "audio_setting":
 *   {format, sample_rate, bitrate?, channel}}` -> `{"event": "task_started"}`; only then may
 *   `task_continue` or `task_finish` be sent.
 * - `{"event": "task_continue", "text"}` (at most 10,000 characters) -> one or more `{"event":
 *   "task_continued", "data": {"audio": "<hex>"} | null, "is_final", "extra_info", "base_resp"}`; the
 *   last of a text has `is_final: true`, and its audio (when any) belongs to the text (MiniMax's own example
 *   and LiveKit's plugin, livekit-plugins-minimax `tts.py`, append every message's audio).
 * - `{"event": "task_finish"}`: the server finishes the queued texts, answers `task_finished` and closes.
 * - A failure: `{"event": "task_failed", "base_resp": {"status_code" (non-zero), "status_msg"}}`, after
 *   which the client must close. Every server message carries `base_resp`; LiveKit's plugin treats any
 *   non-zero `status_code` as a failure, and so does this adapter.
 * - No event for 120 s after the last result closes the connection.
 *
 * ## One stream, one connection, one task
 * {@link SpeechStreamSource.openSpeechStream} connects (the connect and the upgrade bounded by
 * `connectTimeoutMs`), waits for `connected_success`, sends `task_start` (the model from models.ts with the
 * entry's `models` overrides; the voice; `speed` from the request, MiniMax's neutral `vol` 1 and `pitch` 0;
 * the `audio_setting` of the gateway format as the HTTP adapter asks it, models.ts `audioPlan`) and
 * resolves at `task_started`. Each {@link SpeechStream.synthesize} sends one `task_continue` and yields the
 * text's audio (socket-audio.ts makes every piece of every text one valid stream of the format) until the
 * message with `is_final: true`; pieces carry no alignment (MiniMax gives none). A text over MiniMax's
 * 10,000 characters (never a chunk of D42's schedule; possible at a `flush` of a long buffer) is sent as
 * several `task_continue`, cut at white space, one after the other's `is_final`. `close()` sends
 * `task_finish` and closes. The gateway's `stability`, `similarity_boost`, `style` and
 * `use_speaker_boost` have no MiniMax counterpart and are ignored, as by the HTTP adapter (speech.ts).
 *
 * Two departures from "one connection", both before any audio of a text so nothing is lost or repeated:
 * a connection MiniMax closed while no text was being spoken (its 120 s inactivity limit is shorter than
 * D42's longest `inactivity_timeout`) is opened again, with the same `task_start`, when the next text
 * comes; and a text whose reading was abandoned (the caller stopped iterating, or it failed) leaves its
 * task in an unknown state, so that connection is dropped and the next text opens a new one.
 *
 * ## Failures (UpstreamError: api.ts `MiniMaxError`, message redacted, never the key)
 * | failure | `retryable` | flags |
 * |---|---|---|
 * | connection refused or lost, the connect or upgrade over `connectTimeoutMs`, no expected message within `timeoutMs` | true | |
 * | HTTP 429, 408, 5xx at the upgrade | true | |
 * | any other HTTP status at the upgrade (401, 403, 404, a redirect: never followed, so the key only goes to the base URL's host) | false | |
 * | `task_failed` or a non-zero `base_resp`: the codes of api.ts (1000-range and 1002/1039 retryable; 1004/2049 auth, 1008 balance, 2013 parameters: not; 1026/1027 `contentRejected`; 2042/20132 `voiceUnavailable`; 2013 naming the model `modelNotFound`) | per code | per code |
 * | `base_resp` 2201 (timeout disconnect) or 2205 (request limit exceeded) of the socket reference | true (*unverified* classification) | |
 * | a message that is not JSON, bad hex, MP3 of another rate, a text that ended without audio | true (malformed) | |
 * The caller's abort is not an upstream failure: `signal.reason` is rethrown unchanged.
 */
import { WebSocket } from "ws";
import type { RawData } from "ws";
import type { IncomingMessage } from "node:http";
import { noteUpstreamRequest, traceHeaders } from "../../observability/tracing.ts";
import type { SpeechPiece, SpeechStream, SpeechStreamRequest, SpeechStreamSource } from "../realtime.ts";
import { isRecord } from "../util.ts";
import type { CallContext, MiniMaxApi } from "./api.ts";
import { baseRespOf, MiniMaxError } from "./api.ts";
import { decodeHex } from "./audio.ts";
import { audioPlan, SPEECH_RATES } from "./models.ts";
import type { AudioPlan } from "./models.ts";
import { MalformedAudioError, textAudio } from "./socket-audio.ts";

/** The path of the T2A WebSocket under the base URL. */
export const T2A_SOCKET_PATH = "/ws/v1/t2a_v2";

/** `base_resp` codes of the socket reference that say "try again" (2201 timeout disconnect, 2205 request limit). */
export const SOCKET_RETRYABLE_CODES: ReadonlySet<number> = new Set([2201, 2205]);

/** Characters of one `task_continue` MiniMax takes (its reference: "Maximum length: 10,000 characters"), kept below. */
export const MAX_TEXT_CHARS = 9_999;
/** Largest message read, bytes (hex doubles the audio; as api.ts's whole answers: 64 MiB). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** How long `close()` waits for MiniMax to finish and close after `task_finish`, ms. */
const CLOSE_WAIT_MS = 1000;
/** Most bytes of a refused upgrade's body read for its message. */
const MAX_REFUSAL_BYTES = 4096;

/** How {@link createMiniMaxSpeechSocket} reaches MiniMax: the source's transport, key and timeouts. */
export interface MiniMaxSpeechSocketConfig {
  /** The entry's `name` (messages). */
  name: string;
  /** The source's HTTP transport: its base URL (the socket's host), redaction and error mapping. */
  api: MiniMaxApi;
  /** The entry's key, sent only in the upgrade request to the base URL's host. */
  apiKey: string;
  /** Longest wait for an expected message (`connected_success`, `task_started`, the next audio of a text), ms. */
  timeoutMs: number;
  /** Longest connect and upgrade, ms. */
  connectTimeoutMs: number;
  /**
   * The upstream id of a catalog speech model (the `models` override, else models.ts's default).
   * @throws MiniMaxError (`unsupported`) for a model this source does not serve.
   */
  upstreamId(model: string): string;
}

/** `{base}/ws/v1/t2a_v2` with the base URL's host: `ws:` for `http:`, `wss:` for `https:`. */
export function socketUrl(base: URL): URL {
  const url = new URL(`${base.pathname.replace(/\/+$/, "")}${T2A_SOCKET_PATH}`, base);
  url.protocol = base.protocol === "https:" ? "wss:" : "ws:";
  url.search = "";
  url.hash = "";
  return url;
}

/** MiniMax's `speed` for the request's (ElevenLabs' 0.7..1.2 fits MiniMax's 0.5..2; 1 is normal in both). */
function speedOf(speed: number | undefined): number {
  if (typeof speed !== "number" || !Number.isFinite(speed)) return 1;
  return Math.min(2, Math.max(0.5, speed));
}

/** The `task_start` message of `req` for the upstream model `upstreamId` (exported for tests). */
export function taskStartMessage(req: SpeechStreamRequest, upstreamId: string, plan: AudioPlan = audioPlan(req.format, SPEECH_RATES)): Record<string, unknown> {
  return {
    event: "task_start",
    model: upstreamId,
    voice_setting: { voice_id: req.voiceId, speed: speedOf(req.voiceSettings.speed), vol: 1, pitch: 0 },
    audio_setting: { ...plan.setting, channel: 1 },
  };
}

/**
 * Creates the realtime speech source of one MiniMax entry (see the module comment). Nothing is connected
 * until a stream is opened.
 */
export function createMiniMaxSpeechSocket(cfg: MiniMaxSpeechSocketConfig): SpeechStreamSource {
  return {
    async openSpeechStream(req: SpeechStreamRequest, signal?: AbortSignal): Promise<SpeechStream> {
      if (signal?.aborted === true) throw signal.reason;
      const upstreamId = cfg.upstreamId(req.model);
      const plan = audioPlan(req.format, SPEECH_RATES);
      const start = taskStartMessage(req, upstreamId, plan);
      noteUpstreamRequest(start);
      const ctx: CallContext = { what: "t2a_v2 socket", speech: true, model: upstreamId };
      const opener = new Opener(cfg, start, ctx);
      const conn = await opener.open(signal);
      return new MiniMaxSpeechStream(cfg, req, plan, ctx, opener, conn);
    },
  };
}

type ServerMessage = Record<string, unknown>;

/** The error of a server message that reports a failure (`task_failed`, a non-zero `base_resp`), else null. */
function failureOf(cfg: MiniMaxSpeechSocketConfig, msg: ServerMessage, ctx: CallContext): MiniMaxError | null {
  const base = baseRespOf(msg);
  if (base !== null && base.code !== 0) {
    const err = cfg.api.baseRespError(base.code, base.message, ctx);
    if (!SOCKET_RETRYABLE_CODES.has(base.code)) return err;
    return new MiniMaxError(err.message, { retryable: true, kind: "http", status: 200, code: base.code });
  }
  if (msg.event === "task_failed") return cfg.api.malformed(ctx.what, "task_failed without a failure code");
  return null;
}

/** Opens connections of one stream: the same `task_start` every time (see the module comment). */
class Opener {
  readonly #cfg: MiniMaxSpeechSocketConfig;
  readonly #start: Record<string, unknown>;
  readonly #ctx: CallContext;

  constructor(cfg: MiniMaxSpeechSocketConfig, start: Record<string, unknown>, ctx: CallContext) {
    this.#cfg = cfg;
    this.#start = start;
    this.#ctx = ctx;
  }

  /** Connects, waits for `connected_success`, starts the task; resolves at `task_started`. */
  async open(signal: AbortSignal | undefined): Promise<T2aConnection> {
    const cfg = this.#cfg;
    const conn = await connect(cfg, this.#ctx, signal);
    try {
      const hello = await conn.next(cfg.timeoutMs, signal, "connected_success");
      const helloFailure = failureOf(cfg, hello, this.#ctx);
      if (helloFailure !== null) throw helloFailure;
      if (hello.event !== "connected_success") throw cfg.api.malformed(this.#ctx.what, `expected connected_success, got ${describeEvent(hello)}`);
      conn.send(this.#start);
      for (;;) {
        const msg = await conn.next(cfg.timeoutMs, signal, "task_started");
        const failure = failureOf(cfg, msg, this.#ctx);
        if (failure !== null) throw failure;
        if (msg.event === "task_started") return conn;
        if (msg.event !== "connected_success") throw cfg.api.malformed(this.#ctx.what, `expected task_started, got ${describeEvent(msg)}`);
      }
    } catch (err) {
      conn.terminate();
      throw err;
    }
  }
}

function describeEvent(msg: ServerMessage): string {
  return typeof msg.event === "string" ? JSON.stringify(msg.event.slice(0, 40)) : "no event";
}

/**
 * Opens the WebSocket (no redirect followed, no compression) and resolves once upgraded. Rejects with a
 * MiniMaxError for a refused upgrade, a network failure or `connectTimeoutMs`; with `signal.reason` on abort.
 */
function connect(cfg: MiniMaxSpeechSocketConfig, ctx: CallContext, signal: AbortSignal | undefined): Promise<T2aConnection> {
  if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
  const url = socketUrl(cfg.api.baseUrl);
  return new Promise<T2aConnection>((resolve, reject) => {
    let settled = false;
    // The key goes only to `url`, whose host is the base URL's: ws follows no redirect (`followRedirects: false`).
    const ws = new WebSocket(url, {
      headers: traceHeaders({ authorization: `Bearer ${cfg.apiKey}`, "user-agent": "media-gateway" }),
      followRedirects: false,
      perMessageDeflate: false,
      maxPayload: MAX_MESSAGE_BYTES,
      handshakeTimeout: cfg.connectTimeoutMs,
    });
    // Errors after the outcome (an abort, a late socket error) must not be unhandled.
    ws.on("error", () => {});
    // Listening from now: MiniMax's first message may come in the same packet as the upgrade's answer.
    const conn = new T2aConnection(cfg, ws, ctx);
    const done = (err: unknown, ok: T2aConnection | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (ok !== null) resolve(ok);
      else {
        ws.removeAllListeners("open");
        if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
        reject(err as Error);
      }
    };
    const onAbort = (): void => done(signal?.reason, null);
    signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(
      () => done(new MiniMaxError(`${cfg.name}: connect timed out after ${cfg.connectTimeoutMs} ms`, { retryable: true, kind: "timeout" }), null),
      cfg.connectTimeoutMs + 50,
    );
    timer.unref();
    ws.once("open", () => done(null, conn));
    ws.once("unexpected-response", (req, res: IncomingMessage) => {
      // readRefusal never throws; the request is dropped once its body was read.
      void readRefusal(res)
        .then((text) => {
          let json: unknown;
          try {
            json = JSON.parse(text) as unknown;
          } catch {
            json = undefined;
          }
          const status = res.statusCode ?? 0;
          const err = status >= 300 && status < 400
            ? new MiniMaxError(cfg.api.redact(`${cfg.name}: ${ctx.what}: the upgrade was redirected (HTTP ${status}); redirects are not followed`), { retryable: false, kind: "http", status })
            : cfg.api.httpError(status, json, text, ctx);
          done(err, null);
        })
        .finally(() => req.destroy());
    });
    ws.once("error", (err: Error) => {
      const timedOut = /handshake has timed out/i.test(err.message);
      const code = (err as { code?: unknown }).code;
      const message = timedOut
        ? `${cfg.name}: connect timed out after ${cfg.connectTimeoutMs} ms`
        : `${cfg.name}: network error${typeof code === "string" ? ` (${code})` : ""}: ${err.message}`;
      done(new MiniMaxError(cfg.api.redact(message), { retryable: true, kind: timedOut ? "timeout" : "network" }), null);
    });
  });
}

/** The body of a refused upgrade, at most {@link MAX_REFUSAL_BYTES} (never throws). */
async function readRefusal(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size >= MAX_REFUSAL_BYTES) break;
    }
  } catch {
    // A body cut short still names what it can.
  }
  return Buffer.concat(chunks).subarray(0, MAX_REFUSAL_BYTES).toString("utf8");
}

/**
 * One open T2A connection as a pull of server messages: messages queue as they arrive; {@link next}
 * returns them in order, then throws the connection's end (lost, closed, malformed) once they are read.
 */
class T2aConnection {
  readonly #cfg: MiniMaxSpeechSocketConfig;
  readonly #ws: WebSocket;
  readonly #ctx: CallContext;
  readonly #queue: ServerMessage[] = [];
  #end: Error | null = null;
  /** A terminal message (`task_failed`, `task_finished`) arrived: no further text can be spoken here. */
  #finished = false;
  #wake: (() => void) | null = null;
  readonly #closed: Promise<void>;

  constructor(cfg: MiniMaxSpeechSocketConfig, ws: WebSocket, ctx: CallContext) {
    this.#cfg = cfg;
    this.#ws = ws;
    this.#ctx = ctx;
    ws.on("message", (data: RawData) => this.#onMessage(data));
    this.#closed = new Promise<void>((resolve) => {
      ws.once("close", (code: number) => {
        this.#fail(new MiniMaxError(`${cfg.name}: ${ctx.what}: the connection closed (code ${code})`, { retryable: true, kind: "network" }));
        resolve();
      });
    });
    ws.on("error", (err: Error) => {
      const code = (err as { code?: unknown }).code;
      this.#fail(new MiniMaxError(cfg.api.redact(`${cfg.name}: ${ctx.what}: network error${typeof code === "string" ? ` (${code})` : ""}: ${err.message}`), { retryable: true, kind: "network" }));
    });
  }

  /** True while the connection can speak another text (open, not failed, not finished by the server). */
  get usable(): boolean {
    return this.#end === null && !this.#finished && this.#ws.readyState === WebSocket.OPEN;
  }

  #onMessage(data: RawData): void {
    const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.from(data).toString("utf8");
    let msg: unknown;
    try {
      msg = JSON.parse(text) as unknown;
    } catch {
      msg = undefined;
    }
    if (!isRecord(msg)) {
      this.#fail(this.#cfg.api.malformed(this.#ctx.what, "a message is not a JSON object"));
      this.#ws.terminate();
      return;
    }
    if (msg.event === "task_failed" || msg.event === "task_finished") this.#finished = true;
    this.#queue.push(msg);
    this.#wake?.();
  }

  #fail(err: Error): void {
    this.#end ??= err;
    this.#wake?.();
  }

  /** Forgets messages that arrived while no text was being spoken. */
  drain(): void {
    this.#queue.length = 0;
  }

  /**
   * The next server message. Waits at most `timeoutMs` (then a retryable timeout, and the connection is
   * dropped); throws the connection's end once every queued message was read; `signal.reason` on abort.
   */
  async next(timeoutMs: number, signal: AbortSignal | undefined, waitingFor: string): Promise<ServerMessage> {
    for (;;) {
      const msg = this.#queue.shift();
      if (msg !== undefined) return msg;
      if (this.#end !== null) throw this.#end;
      if (signal?.aborted === true) throw signal.reason;
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const timedOut = await new Promise<boolean>((resolve) => {
        this.#wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), timeoutMs);
        onAbort = () => resolve(false);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      this.#wake = null;
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
      if (timedOut) {
        const err = new MiniMaxError(`${this.#cfg.name}: ${this.#ctx.what}: no ${waitingFor} within ${timeoutMs} ms`, { retryable: true, kind: "timeout" });
        this.terminate(err);
        throw err;
      }
    }
  }

  /** Sends one client message; a connection that is not open throws its end (retryable). */
  send(msg: Record<string, unknown>): void {
    if (this.#end !== null) throw this.#end;
    if (this.#ws.readyState !== WebSocket.OPEN) throw new MiniMaxError(`${this.#cfg.name}: ${this.#ctx.what}: the connection is not open`, { retryable: true, kind: "network" });
    this.#ws.send(JSON.stringify(msg));
  }

  /** Drops the connection at once; a pending {@link next} throws `err` (default: the connection closed). */
  terminate(err?: Error): void {
    if (err !== undefined) this.#fail(err);
    if (this.#ws.readyState !== WebSocket.CLOSED) this.#ws.terminate();
  }

  /**
   * Ends the task politely: `task_finish` (MiniMax answers `task_finished` and closes), then waits up to
   * `ms` for the close before dropping the connection. Never throws.
   */
  async finish(ms: number): Promise<void> {
    if (this.#ws.readyState === WebSocket.OPEN && this.#end === null && !this.#finished) {
      try {
        this.#ws.send(JSON.stringify({ event: "task_finish" }));
      } catch {
        // Dropped below.
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.#closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
    }
    this.terminate();
  }
}

/** A {@link SpeechStream} on one MiniMax task (see the module comment). */
class MiniMaxSpeechStream implements SpeechStream {
  readonly #cfg: MiniMaxSpeechSocketConfig;
  readonly #req: SpeechStreamRequest;
  readonly #plan: AudioPlan;
  readonly #ctx: CallContext;
  readonly #opener: Opener;
  #conn: T2aConnection;
  #busy = false;
  #closed = false;

  constructor(cfg: MiniMaxSpeechSocketConfig, req: SpeechStreamRequest, plan: AudioPlan, ctx: CallContext, opener: Opener, conn: T2aConnection) {
    this.#cfg = cfg;
    this.#req = req;
    this.#plan = plan;
    this.#ctx = ctx;
    this.#opener = opener;
    this.#conn = conn;
  }

  /**
   * Speaks `text` as one `task_continue` and yields its audio until the message with `is_final: true`
   * (see {@link SpeechStream.synthesize}). A text of nothing but white space yields nothing and is not sent.
   * @throws MiniMaxError as the module comment says; `signal.reason` on abort.
   */
  async *synthesize(text: string, signal?: AbortSignal): AsyncGenerator<SpeechPiece> {
    const cfg = this.#cfg;
    if (this.#closed) throw new MiniMaxError(`${cfg.name}: the speech stream is closed`, { retryable: false, kind: "network" });
    if (this.#busy) throw new Error("a chunk is still being spoken on this stream");
    if (text.trim() === "") return;
    this.#busy = true;
    // True once the text's last message came: the connection is then ready for the next text.
    let complete = false;
    try {
      if (!this.#conn.usable) {
        this.#conn.terminate();
        this.#conn = await this.#opener.open(signal);
        if (this.#closed) throw new MiniMaxError(`${cfg.name}: the speech stream is closed`, { retryable: false, kind: "network" });
      }
      const conn = this.#conn;
      conn.drain();
      for (const part of splitText(text, MAX_TEXT_CHARS)) {
        // The connection is between texts only once a part's last message came.
        complete = false;
        conn.send({ event: "task_continue", text: part });
        const audio = textAudio(this.#req.format, this.#plan);
        let received = 0;
        for (;;) {
          const msg = await conn.next(cfg.timeoutMs, signal, "audio");
          const failure = failureOf(cfg, msg, this.#ctx);
          if (failure !== null) throw failure;
          if (msg.event === "task_finished") throw cfg.api.malformed(this.#ctx.what, "task_finished before the text's last audio");
          if (msg.event !== "task_continued") continue;
          const data = msg.data;
          const hex = isRecord(data) && typeof data.audio === "string" ? data.audio : "";
          if (hex !== "") {
            const raw = decodeHex(cfg.api, hex, this.#ctx.what);
            received += raw.length;
            const out = this.#convert(() => audio.push(raw));
            if (out.length > 0) yield piece(out);
          }
          if (msg.is_final === true) {
            complete = true;
            if (received === 0) throw cfg.api.malformed(this.#ctx.what, "the text ended without audio");
            const tail = audio.end();
            if (tail.length > 0) yield piece(tail);
            break;
          }
        }
      }
    } finally {
      this.#busy = false;
      // An abandoned or failed text leaves the task in an unknown state: the next text opens a new one.
      if (!complete) this.#conn.terminate(this.#closed ? this.#closedError() : undefined);
    }
  }

  #convert(fn: () => Uint8Array): Uint8Array {
    try {
      return fn();
    } catch (err) {
      if (err instanceof MalformedAudioError) throw this.#cfg.api.malformed(this.#ctx.what, err.message);
      throw err;
    }
  }

  #closedError(): MiniMaxError {
    return new MiniMaxError(`${this.#cfg.name}: the speech stream was closed`, { retryable: false, kind: "network" });
  }

  /**
   * Sends `task_finish` and closes (waiting at most 1 s for MiniMax's close); a text being spoken ends
   * with a non-retryable error. Idempotent; never throws.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#busy) {
      this.#conn.terminate(this.#closedError());
      return;
    }
    await this.#conn.finish(CLOSE_WAIT_MS).catch(() => {});
  }
}

/**
 * `text` in parts of at most `max` characters (code points), cut after the last white space of each part
 * when there is one (exported for tests). A text within `max` is one part.
 */
export function splitText(text: string, max: number): string[] {
  const chars = [...text];
  if (chars.length <= max) return [text];
  const parts: string[] = [];
  let at = 0;
  while (chars.length - at > max) {
    let end = at + max;
    for (let i = end - 1; i > at; i--) {
      if (/\s/.test(chars[i]!)) {
        end = i + 1;
        break;
      }
    }
    parts.push(chars.slice(at, end).join(""));
    at = end;
  }
  parts.push(chars.slice(at).join(""));
  return parts.filter((p) => p.trim() !== "");
}

function piece(audio: Uint8Array): SpeechPiece {
  return { audio, alignment: null, normalizedAlignment: null };
}
