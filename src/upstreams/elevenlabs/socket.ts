/**
 * The WebSocket plumbing the ElevenLabs realtime adapters share (D42 speech-socket.ts, D43
 * scribe-socket.ts): the socket URL built from the source's base URL, a connect bounded by a timeout,
 * the upgrade's HTTP refusals mapped as api.ts maps HTTP answers, and a channel that hands the server's
 * JSON messages to the adapter one at a time, with the close that ends them. The client is the `ws`
 * package (a dependency of the gateway).
 *
 * ## Where the key goes (D25)
 * The socket URL is the base URL with its scheme turned into `ws:`/`wss:` and the adapter's path appended
 * (`https://api.elevenlabs.io` -> `wss://api.elevenlabs.io/v1/...`); its `http(s)` twin passes
 * `ElevenLabsApi.checkUrl` (the base URL's host) before the key is written into the upgrade's `xi-api-key`
 * header. Redirects of the upgrade are not followed (`ws`'s default), so a 3xx cannot carry the key
 * elsewhere: it is a failure.
 *
 * ## Failures ({@link ElevenLabsSocketError}, an `ElevenLabsError`)
 * | failure | kind | `retryable` |
 * |---|---|---|
 * | refused, reset, DNS, TLS before the upgrade; the socket lost without a close frame (1006) | `network` | true |
 * | no upgrade within the connect timeout; no message within an adapter's wait | `timeout` | true |
 * | an HTTP answer instead of the upgrade | `http` (its status) | as api.ts: 5xx, 429, 408 and 401 `quota_exceeded` true; other statuses (401, 403, 3xx, ...) false; `voice_not_found` -> `voiceUnavailable`, `model_not_found` -> `modelNotFound` |
 * | an error message of the server, or its close frame (code and reason) | `http` (status null, `errorStatus` the server's error code, `closeCode`) | per adapter (speech-socket.ts, scribe-socket.ts) |
 * | a server message that is not a JSON object | `malformed` | true |
 * The caller's own abort is not an upstream failure: `signal.reason` is rethrown unchanged. Every message
 * passes through the key's redaction.
 */
import { WebSocket } from "ws";
import type { RawData } from "ws";
import type { IncomingMessage } from "node:http";
import type { ElevenLabsApi, HttpErrorContext } from "./api.ts";
import { ElevenLabsError } from "./api.ts";
import { errorCode, isRecord } from "../util.ts";

/** Most bytes of an upgrade refusal's body read (ElevenLabs' error bodies are small JSON documents). */
const MAX_REFUSAL_BODY_BYTES = 64 * 1024;

/** Largest message accepted from the server, bytes: a second of `pcm_44100` audio is 120 KB as base64. */
export const MAX_SERVER_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * A failure of an ElevenLabs socket (see the module comment's table): `closeCode` is the WebSocket close
 * code when the server closed the socket (1008 policy, 1011 server error, 1006 lost), else null.
 */
export class ElevenLabsSocketError extends ElevenLabsError {
  readonly closeCode: number | null;

  constructor(message: string, opts: ConstructorParameters<typeof ElevenLabsError>[1] & { closeCode?: number | null }) {
    super(message, opts);
    this.name = "ElevenLabsSocketError";
    this.closeCode = opts.closeCode ?? null;
  }
}

/**
 * The socket URL of `path` (with `query`) on the source's base URL: `http:` -> `ws:`, `https:` -> `wss:`,
 * the base URL's own path kept as a prefix. The `http(s)` twin is checked first with `api.checkUrl`, so
 * the key only ever goes to the base URL's host.
 * @throws ElevenLabsError (kind `refused`, not retryable) when the host check fails.
 */
export function socketUrl(api: ElevenLabsApi, path: string, query: Readonly<Record<string, string>>): URL {
  const twin = api.checkUrl(api.url(path, query).href, "socket URL");
  const url = new URL(twin.href);
  url.protocol = twin.protocol === "https:" ? "wss:" : "ws:";
  return url;
}

/** A close of the socket as the channel reports it. */
export interface SocketClose {
  code: number;
  reason: string;
  /** True when the socket was lost without a close frame (1006) or failed at the transport. */
  abnormal: boolean;
  /** The transport error that ended it, redacted (null for a close frame). */
  transportError: string | null;
}

/** What {@link SocketChannel.next} returns: the next server message (a JSON object), or the close. */
export type ChannelItem = { kind: "message"; message: Record<string, unknown> } | { kind: "close"; close: SocketClose };

/**
 * A queue of items read by waits with a timeout. Items are taken in order; a `final` item (a close) stays
 * at the head once reached, so every later wait returns it again.
 */
export class ItemQueue<T> {
  readonly #items: T[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #isFinal: (item: T) => boolean;

  constructor(isFinal: (item: T) => boolean = () => false) {
    this.#isFinal = isFinal;
  }

  /** Appends `item` and wakes every waiting {@link next}. */
  push(item: T): void {
    this.#items.push(item);
    for (const wake of [...this.#waiters]) wake();
  }

  /**
   * The next item, waiting at most `timeoutMs` (null: the wait timed out).
   * @throws `signal.reason` when the caller aborts.
   */
  async next(timeoutMs: number, signal?: AbortSignal): Promise<T | null> {
    for (;;) {
      signal?.throwIfAborted();
      if (this.#items.length > 0) {
        const item = this.#items[0]!;
        if (!this.#isFinal(item)) this.#items.shift();
        return item;
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      let wake: (() => void) | undefined;
      let onAbort: (() => void) | undefined;
      const timedOut = await new Promise<boolean>((resolve) => {
        wake = () => resolve(false);
        this.#waiters.add(wake);
        timer = setTimeout(() => resolve(true), timeoutMs);
        onAbort = () => resolve(false);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      clearTimeout(timer);
      this.#waiters.delete(wake!);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
      if (timedOut && this.#items.length === 0) return null;
    }
  }
}

/**
 * An open socket: the server's messages in order through {@link next} (a message that is not a JSON
 * object ends the channel with a retryable `malformed` error), sends that never throw, and a close.
 */
export class SocketChannel {
  readonly #ws: WebSocket;
  readonly #items = new ItemQueue<ChannelItem>((item) => item.kind === "close");
  #closed: SocketClose | null = null;
  #malformed: string | null = null;
  #transportError: string | null = null;
  #lastSentAt = Date.now();
  readonly #redact: (text: string) => string;

  constructor(ws: WebSocket, redact: (text: string) => string) {
    this.#ws = ws;
    this.#redact = redact;
    ws.on("message", (data: RawData, isBinary: boolean) => {
      if (this.#closed !== null) return;
      const text = isBinary ? null : rawText(data);
      let parsed: unknown;
      try {
        parsed = text === null ? undefined : (JSON.parse(text) as unknown);
      } catch {
        parsed = undefined;
      }
      if (!isRecord(parsed)) {
        this.#malformed ??= isBinary ? "a binary message" : `a message that is not a JSON object (${(text ?? "").slice(0, 60)})`;
        ws.terminate();
        return;
      }
      this.#items.push({ kind: "message", message: parsed });
    });
    ws.on("error", (err: Error) => {
      // The close event follows; remember the cause for it.
      this.#transportError ??= redact(`${err.message}${errorCode(err) === null ? "" : ` (${errorCode(err)})`}`);
    });
    ws.on("close", (code: number, reason: Buffer) => {
      if (this.#closed !== null) return;
      this.#closed = { code, reason: redact(reason.toString("utf8")), abnormal: code === 1006 || this.#transportError !== null, transportError: this.#transportError };
      this.#items.push({ kind: "close", close: this.#closed });
    });
  }

  /** True while the socket is open (not closing or closed). */
  get open(): boolean {
    return this.#closed === null && this.#ws.readyState === WebSocket.OPEN;
  }

  /** Milliseconds since the last message was sent (or since the socket opened). */
  get idleMs(): number {
    return Date.now() - this.#lastSentAt;
  }

  /** Why the channel ended on a malformed message, or null. */
  get malformed(): string | null {
    return this.#malformed;
  }

  /** The close, once the socket is closed. */
  get closed(): SocketClose | null {
    return this.#closed;
  }

  /**
   * The next item, waiting at most `timeoutMs` (null: the wait timed out). After the close item, every call
   * returns the close again.
   * @throws `signal.reason` when the caller aborts.
   */
  next(timeoutMs: number, signal?: AbortSignal): Promise<ChannelItem | null> {
    return this.#items.next(timeoutMs, signal);
  }

  /** Sends `message` as JSON; false when the socket is not open (never throws). */
  send(message: Record<string, unknown>): boolean {
    if (!this.open) return false;
    try {
      this.#ws.send(JSON.stringify(message));
      this.#lastSentAt = Date.now();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Closes the socket with `code` (default 1000) and waits at most `graceMs` for the server's close frame,
   * then drops the connection. Never throws.
   */
  async close(code = 1000, graceMs = 1000): Promise<void> {
    if (this.#closed !== null) return;
    const done = new Promise<void>((resolve) => this.#ws.once("close", () => resolve()));
    try {
      this.#ws.close(code);
    } catch {
      this.#ws.terminate();
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    if (this.#closed === null) this.#ws.terminate();
  }

  /** Drops the connection at once (no close handshake). */
  terminate(): void {
    this.#ws.terminate();
  }

  /** The redaction of the source's key. */
  redact(text: string): string {
    return this.#redact(text);
  }
}

/** The text of a `ws` message. */
function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

/** How {@link connectSocket} opens a socket. */
export interface ConnectOptions {
  api: ElevenLabsApi;
  url: URL;
  apiKey: string;
  /** Longest wait for the upgrade, ms. */
  connectTimeoutMs: number;
  /** Names the call in messages (`text-to-speech socket`). */
  what: string;
  /** How an HTTP refusal of the upgrade is read (api.ts `httpError`: voice and model checks). */
  context: HttpErrorContext;
  signal?: AbortSignal;
}

/**
 * Opens a socket to `opts.url` with the key in the `xi-api-key` header, resolved once upgraded.
 * @throws ElevenLabsSocketError (see the module comment) or `signal.reason`.
 */
export async function connectSocket(opts: ConnectOptions): Promise<SocketChannel> {
  const { api, url, signal } = opts;
  signal?.throwIfAborted();
  const redact = (text: string) => api.redact(text);
  const ws = new WebSocket(url, {
    headers: { "xi-api-key": opts.apiKey, "user-agent": "media-gateway" },
    followRedirects: false,
    maxPayload: MAX_SERVER_MESSAGE_BYTES,
    perMessageDeflate: false,
  });
  // The channel is attached at once so no message between the upgrade and the caller's first wait is lost.
  const channel = new SocketChannel(ws, redact);
  return new Promise<SocketChannel>((resolve, reject) => {
    let settled = false;
    const finish = (err: unknown | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      ws.off("open", onOpen);
      ws.off("error", onError);
      ws.off("unexpected-response", onRefusal);
      if (err === null) resolve(channel);
      else {
        ws.terminate();
        reject(err);
      }
    };
    const onOpen = () => finish(null);
    const onError = (err: Error) => {
      const code = errorCode(err);
      finish(
        new ElevenLabsSocketError(redact(`${api.name}: ${opts.what}: network error${code === null ? "" : ` (${code})`}: ${err.message}`), {
          retryable: true,
          kind: "network",
        }),
      );
    };
    const onAbort = () => finish(signal?.reason);
    const onRefusal = (_req: unknown, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size <= MAX_REFUSAL_BODY_BYTES) chunks.push(chunk);
      });
      const done = () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
        const httpErr = api.httpError({ status: res.statusCode ?? 0, headers, body: new Uint8Array(Buffer.concat(chunks)) }, `${opts.what} upgrade`, opts.context);
        finish(
          new ElevenLabsSocketError(httpErr.message, {
            retryable: httpErr.retryable,
            kind: "http",
            status: httpErr.status,
            errorStatus: httpErr.errorStatus,
            voiceUnavailable: httpErr.voiceUnavailable,
            modelNotFound: httpErr.modelNotFound,
            upstreamModel: httpErr.upstreamModel,
          }),
        );
      };
      res.once("end", done);
      res.once("error", done);
      res.once("close", done);
    };
    const timer = setTimeout(
      () =>
        finish(
          new ElevenLabsSocketError(`${api.name}: ${opts.what}: not connected within ${opts.connectTimeoutMs} ms`, { retryable: true, kind: "timeout" }),
        ),
      opts.connectTimeoutMs,
    );
    ws.once("open", onOpen);
    ws.on("error", onError);
    ws.once("unexpected-response", onRefusal);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
