/**
 * The HTTP base shared by the protocol adapters that send an API key with every call (fal, BFL,
 * ElevenLabs, MiniMax): one keep-alive undici pool per source, a total and a connect timeout per call,
 * whole answers read under a size cap (JSON by {@link KeyedHttp.send}, bytes by
 * {@link KeyedHttp.sendForBytes}), streamed answers with an idle timeout ({@link KeyedHttp.openStream}), the host check that runs before the key is written into a request (D25), and
 * errors without the key. Each protocol's `api.ts` adds what is its own: the auth header, the hosts it
 * names for follow-up calls, the meaning of its error bodies and its error class.
 *
 * ## Where the key goes (D25)
 * The key is written only into a request whose URL passes {@link KeyedHttp.checkUrl}, before anything
 * is sent:
 * - the host (host and port) of the base URL, with the base URL's scheme;
 * - the hosts the protocol names for its own follow-up calls ({@link KeyedHttpConfig.followUpHost}),
 *   over `https:` only;
 * - the configured `trustedHosts` (`http:` or `https:`; `host` matches the default port, `host:port`
 *   that port).
 * A URL with credentials, another scheme, or any other host is refused with a non-retryable error of
 * kind `refused`, and no request is made.
 *
 * ## Failures raised here
 * | failure | kind | `retryable` |
 * |---|---|---|
 * | network error (refused, reset, DNS, TLS) | `network` | true |
 * | timeout (connect or total, per call) | `timeout` | true |
 * | answer over {@link MAX_RESPONSE_BYTES} | `malformed` | true |
 * | URL refused by the host check | `refused` | false |
 * The caller's own abort is not an upstream failure: `signal.reason` is rethrown unchanged. HTTP
 * statuses are the protocol's business: {@link KeyedHttp.send} returns every answer, whatever its
 * status. Every message passes through the key's redaction; no raw undici error is attached as `cause`.
 */
import type { Dispatcher, FormData as UndiciFormData } from "undici";
import { adapterDispatcher, DEFAULT_CONNECT_TIMEOUT_MS, loadUndici } from "./undici.ts";
import { isOwnOrTrustedHost, trustedHostMatcher } from "./hosts.ts";
import { UpstreamError, type VisualJobSourceConfig } from "./types.ts";
import { errorCode, isRecord, parseBaseUrl, readBody, readText, redactSecret } from "./util.ts";
import { noteUpstreamRequest, traceHeaders } from "../observability/tracing.ts";

export { DEFAULT_CONNECT_TIMEOUT_MS } from "./undici.ts";

/** Default total time of one HTTP call, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Largest answer read, in bytes (protocol answers are small JSON documents; media are separate files). */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/** Most characters of an upstream's own error text copied into ours. */
const MAX_ERROR_MESSAGE_CHARS = 300;

/** What went wrong in a {@link KeyedHttpError}. */
export type KeyedErrorKind = "http" | "network" | "timeout" | "malformed" | "refused" | "unsupported" | "handle";

/**
 * An {@link UpstreamError} of a keyed adapter: `kind` says what failed, `status` is the upstream's HTTP
 * status (null when no answer came), `contentRejected` true for a moderation refusal.
 */
export class KeyedHttpError extends UpstreamError {
  readonly kind: KeyedErrorKind;
  readonly status: number | null;

  constructor(
    message: string,
    opts: {
      retryable: boolean;
      kind: KeyedErrorKind;
      status?: number | null;
      contentRejected?: boolean;
      voiceUnavailable?: boolean;
      /** The source says the upstream model or endpoint does not exist (D35); `upstreamModel` names it. */
      modelNotFound?: boolean;
      upstreamModel?: string | null;
    },
  ) {
    super(message, opts.retryable, {
      contentRejected: opts.contentRejected ?? false,
      unsupported: opts.kind === "unsupported",
      voiceUnavailable: opts.voiceUnavailable ?? false,
      modelNotFound: opts.modelNotFound ?? false,
      upstreamModel: opts.upstreamModel ?? null,
    });
    this.name = "KeyedHttpError";
    this.kind = opts.kind;
    this.status = opts.status ?? null;
  }
}

/** The errors the base itself raises (see the failure table). */
export type KeyedBaseErrorKind = "network" | "timeout" | "malformed" | "refused";

/** Makes the protocol's own error class (fal's `FalError`, BFL's `BflError`) for a failure of the base. */
export type KeyedErrorFactory<E extends UpstreamError> = (message: string, opts: { retryable: boolean; kind: KeyedBaseErrorKind }) => E;

/**
 * What one keyed source is configured with: the transport fields of an `UPSTREAMS` entry (D25). Each
 * protocol's factory applies its own default base URL and puts the key into its own header.
 */
export type KeyedSourceOptions = Omit<VisualJobSourceConfig, "models">;

/** How one keyed source is reached: its options with the base URL settled, plus the protocol's parts. */
export interface KeyedHttpConfig<E extends UpstreamError> extends KeyedSourceOptions {
  /** The base URL (the protocol's default already applied). */
  baseUrl: string;
  /** The headers that carry the key (fal `{authorization: "Key <key>"}`, BFL `{"x-key": "<key>"}`). */
  authHeaders: (apiKey: string) => Record<string, string>;
  /** True for a host the protocol names for its own follow-up calls (checked for `https:` URLs only). */
  followUpHost: (url: URL) => boolean;
  /** How those hosts are called in a refusal message, e.g. `a fal queue host`. */
  followUpLabel: string;
  /** The protocol's error class for the failures of the base. */
  error: KeyedErrorFactory<E>;
}

/** One HTTP answer, read whole. `headers` has lower-case names; `json` is undefined when the body is not JSON. */
export interface KeyedAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  json: unknown;
  text: string;
}

/**
 * The body of a request: JSON (`{json}`, sent with `content-type: application/json`), a multipart form
 * (`{form}`, undici writes the boundary), or none (undefined).
 */
export type KeyedBody = { json: unknown } | { form: UndiciFormData } | undefined;

/** A new multipart form for a {@link KeyedBody} (undici's own `FormData`, which its `request` writes). */
export function newKeyedForm(): UndiciFormData {
  return new (loadUndici().FormData)();
}

/** One HTTP answer read whole as bytes (audio). `headers` has lower-case names. */
export interface KeyedBytesAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: Uint8Array;
}

/**
 * An answer whose body is still arriving. Iterate `body` once (each chunk resets the idle timeout; a
 * failure throws the protocol's error), or call `text()` to read it whole (at most 64 KiB: error bodies),
 * or `cancel()` to drop it. Abandoning the iteration (`break`) also closes the connection.
 */
export interface KeyedStreamAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: AsyncIterable<Uint8Array>;
  text(): Promise<string>;
  cancel(): void;
}

/** Options of {@link KeyedHttp.sendForBytes} and {@link KeyedHttp.openStream}. */
export interface KeyedRequestOptions {
  /** The `accept` header (default `application/json`). */
  accept?: string;
  /** Largest body read by {@link KeyedHttp.sendForBytes}, bytes (default {@link MAX_RESPONSE_BYTES}). */
  maxBytes?: number;
}

/** The HTTP methods the protocols use. */
export type KeyedMethod = "GET" | "POST" | "PUT" | "DELETE";

/** The keyed transport to one source. Create once per source (it owns a connection pool); `close()` it. */
export interface KeyedHttp<E extends UpstreamError> {
  readonly name: string;
  /** The parsed base URL. */
  readonly baseUrl: URL;
  /**
   * Parses `raw` and checks that it may receive the key (see the module comment). Throws a
   * non-retryable error of kind `refused` naming `purpose` and the host, never the URL's path or query.
   */
  checkUrl(raw: string, purpose: string): URL;
  /** True when `raw` is on the base URL's host or a trusted host (D25: such output files are downloaded directly). */
  isDirectDownloadHost(raw: string): boolean;
  /**
   * Sends one request with the key to `url` (checked again here) and reads the whole answer, whatever
   * its status. `body` is sent as JSON unless undefined. Throws the protocol's error for network errors,
   * timeouts, oversized answers and a refused URL, or the caller's abort reason.
   */
  send(method: KeyedMethod, url: URL, body: unknown, signal: AbortSignal | undefined): Promise<KeyedAnswer>;
  /**
   * Like {@link send}, with any {@link KeyedBody} and the answer read whole as bytes (audio), at most
   * `opts.maxBytes` (an answer over it: a retryable malformed-answer error). Every status is returned.
   */
  sendForBytes(method: KeyedMethod, url: URL, body: KeyedBody, opts: KeyedRequestOptions, signal: AbortSignal | undefined): Promise<KeyedBytesAnswer>;
  /**
   * Sends one request and resolves once the answer's status and headers arrived (within the timeout);
   * the body then streams with the timeout applied to each wait for the next chunk (an idle timeout),
   * not to the whole answer. Every status is returned; same errors as {@link send}.
   */
  openStream(method: KeyedMethod, url: URL, body: KeyedBody, opts: KeyedRequestOptions, signal: AbortSignal | undefined): Promise<KeyedStreamAnswer>;
  /** A malformed-answer error (retryable: the upstream misbehaved, another source may not). */
  malformed(what: string, detail: string): E;
  /** `text` with the key replaced by `[redacted]`. */
  redact(text: string): string;
  /** Closes the pooled connections (only the source's own `Agent`). */
  close(): Promise<void>;
}

/**
 * Creates the keyed transport of one source.
 * @throws RangeError for a bad base URL, timeout or trusted host, or an empty key.
 */
export function createKeyedHttp<E extends UpstreamError>(config: KeyedHttpConfig<E>): KeyedHttp<E> {
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive number, got ${timeoutMs}`);
  if (typeof config.apiKey !== "string" || config.apiKey.trim() === "") throw new RangeError("apiKey must be a non-empty string");
  const base = parseKeyedBaseUrl(config.baseUrl);
  const isTrusted = trustedHostMatcher(config.trustedHosts);
  const connectTimeout = Math.min(config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, timeoutMs);
  const { dispatcher, ownAgent } = adapterDispatcher(config.dispatcher, connectTimeout);
  const { name, apiKey, error } = config;
  const clean = (text: string): string => redactSecret(text, apiKey);

  const keyAllowed = (url: URL): boolean => {
    if (url.username !== "" || url.password !== "") return false;
    if (url.protocol !== "https:" && url.protocol !== "http:") return false;
    if (url.protocol === base.protocol && url.host === base.host) return true;
    if (url.protocol === "https:" && config.followUpHost(url)) return true;
    return isTrusted(url);
  };

  /** The signals of one request: the caller's, the total (or header) timeout, and the stream's idle timer. */
  interface CallSignals {
    caller: AbortSignal | undefined;
    timeout: AbortSignal;
    idle: IdleTimer | null;
  }
  const failure = (err: unknown, signals: CallSignals, method: string, url: URL): unknown => {
    const callerSignal = signals.caller;
    if (callerSignal?.aborted === true) return callerSignal.reason;
    if (err instanceof UpstreamError) return err;
    if (signals.timeout.aborted || signals.idle?.fired === true) {
      const what = signals.idle?.fired === true ? `no data for ${timeoutMs} ms while streaming` : `no complete answer within ${timeoutMs} ms`;
      return error(`${name}: ${what} (${method} ${url.pathname})`, { retryable: true, kind: "timeout" });
    }
    const code = errorCode(err);
    if (code === "UND_ERR_CONNECT_TIMEOUT") {
      return error(`${name}: connect timed out after ${connectTimeout} ms`, { retryable: true, kind: "timeout" });
    }
    if (err instanceof Error && err.name === "BodyTooLargeError") return http.malformed(`${method} ${url.pathname}`, err.message);
    const message = err instanceof Error ? err.message : String(err);
    return error(clean(`${name}: network error${code === null ? "" : ` (${code})`}: ${message}`), { retryable: true, kind: "network" });
  };
  /**
   * Sends the request and waits for the status and headers. For a stream the total timeout covers only
   * that wait; the idle timer then takes over (armed by the caller).
   */
  const open = async (
    method: KeyedMethod,
    url: URL,
    body: KeyedBody,
    opts: KeyedRequestOptions,
    callerSignal: AbortSignal | undefined,
    streaming: boolean,
  ): Promise<{ res: Dispatcher.ResponseData; signals: CallSignals }> => {
    if (callerSignal?.aborted === true) throw callerSignal.reason;
    // The host check is repeated here so no code path can send the key elsewhere.
    if (!keyAllowed(url)) http.checkUrl(url.href, "request URL");
    const headerTimeout = new AbortController();
    const timer = setTimeout(() => headerTimeout.abort(new Error("timeout")), timeoutMs);
    const idle = streaming ? new IdleTimer(timeoutMs) : null;
    const parts = [headerTimeout.signal, ...(idle === null ? [] : [idle.signal]), ...(callerSignal === undefined ? [] : [callerSignal])];
    const signals: CallSignals = { caller: callerSignal, timeout: headerTimeout.signal, idle };
    // D40: the call carries the current span's `traceparent` (when the work is traced).
    const headers: Record<string, string> = traceHeaders({
      ...config.authHeaders(apiKey),
      accept: opts.accept ?? "application/json",
      "user-agent": "media-gateway",
    });
    let payload: string | UndiciFormData | undefined;
    if (body !== undefined && "json" in body) {
      noteUpstreamRequest(body.json);
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body.json);
    } else if (body !== undefined) {
      payload = body.form;
    }
    try {
      const res = await loadUndici().request(url, { method, dispatcher, signal: AbortSignal.any(parts), headers, body: payload });
      if (streaming) clearTimeout(timer);
      else res.body.once("close", () => clearTimeout(timer));
      return { res, signals };
    } catch (err) {
      clearTimeout(timer);
      throw failure(err, signals, method, url);
    }
  };

  const http: KeyedHttp<E> = {
    name,
    baseUrl: base,
    checkUrl(raw, purpose) {
      let url: URL | null = null;
      try {
        url = typeof raw === "string" ? new URL(raw) : null;
      } catch {
        url = null;
      }
      if (url === null) throw error(`${name}: ${purpose} is not a valid URL`, { retryable: false, kind: "refused" });
      if (!keyAllowed(url)) {
        // Name the host, never the whole URL (a query could carry anything).
        throw error(
          clean(`${name}: refusing to send the key to ${url.protocol}//${url.host} (${purpose}): not the base URL's host, ${config.followUpLabel} or a trusted host`),
          { retryable: false, kind: "refused" },
        );
      }
      return url;
    },
    isDirectDownloadHost: (raw) => isOwnOrTrustedHost(raw, base, isTrusted),
    async send(method, url, body, callerSignal) {
      const answer = await http.sendForBytes(method, url, body === undefined ? undefined : { json: body }, {}, callerSignal);
      const text = Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength).toString("utf8");
      return { status: answer.status, headers: answer.headers, json: parseJson(text), text };
    },
    async sendForBytes(method, url, body, opts, callerSignal) {
      const { res, signals } = await open(method, url, body, opts, callerSignal, false);
      try {
        const bytes = await readBody(res.body, opts.maxBytes ?? MAX_RESPONSE_BYTES);
        return { status: res.statusCode, headers: flatHeaders(res.headers), body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
      } catch (err) {
        throw failure(err, signals, method, url);
      }
    },
    async openStream(method, url, body, opts, callerSignal) {
      const { res, signals } = await open(method, url, body, opts, callerSignal, true);
      const idle = signals.idle!;
      idle.arm();
      let taken = false;
      const chunks = async function* (): AsyncGenerator<Uint8Array> {
        try {
          for await (const chunk of res.body as AsyncIterable<Buffer>) {
            idle.arm();
            yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
          }
        } catch (err) {
          throw failure(err, signals, method, url);
        } finally {
          idle.stop();
          if (!res.body.readableEnded) {
            res.body.on("error", () => {});
            res.body.destroy();
          }
        }
      };
      return {
        status: res.statusCode,
        headers: flatHeaders(res.headers),
        get body() {
          if (taken) throw new Error("KeyedStreamAnswer.body is iterated once");
          taken = true;
          return chunks();
        },
        async text() {
          try {
            return await readText(res.body, 64 * 1024, true);
          } catch (err) {
            throw failure(err, signals, method, url);
          } finally {
            idle.stop();
          }
        },
        cancel() {
          idle.stop();
          res.body.on("error", () => {});
          res.body.destroy();
        },
      };
    },
    malformed(what, detail) {
      return error(clean(`${name}: malformed answer to ${what}: ${detail}`), { retryable: true, kind: "malformed" });
    },
    redact: clean,
    async close() {
      if (ownAgent !== null) await ownAgent.close();
    },
  };
  return http;
}

/**
 * A short, single-line description of an upstream's JSON error body (without the key: callers redact):
 * - `{detail: [{loc, msg, type}]}` (FastAPI validation errors): `prompt: msg (type); ...`, `loc`
 *   without its leading `body`; the echoed `input` is never copied;
 * - `{detail: "text"}`: that text, followed by ` (errorType)` when `errorType` is given;
 * - `{detail: {message}}`, `{message}`, `{error}`: that text; else `errorType` when given;
 * - anything else: the raw text with tags and white space collapsed.
 * At most 300 characters.
 */
export function describeErrorBody(json: unknown, text: string, errorType: string | null = null): string {
  let message: string | null = null;
  if (isRecord(json)) {
    const detail = json.detail;
    if (Array.isArray(detail)) {
      const parts = detail.filter(isRecord).map((item) => {
        const loc = Array.isArray(item.loc) ? item.loc.filter((p) => p !== "body").map(String).join(".") : "";
        const msg = typeof item.msg === "string" ? item.msg : "invalid";
        const type = typeof item.type === "string" ? ` (${item.type})` : "";
        return `${loc === "" ? "" : `${loc}: `}${msg}${type}`;
      });
      message = parts.join("; ");
    } else if (typeof detail === "string") {
      message = errorType === null ? detail : `${detail} (${errorType})`;
    } else if (isRecord(detail) && typeof detail.message === "string") {
      message = detail.message;
    } else if (typeof json.message === "string") {
      message = json.message;
    } else if (typeof json.error === "string") {
      message = json.error;
    } else if (errorType !== null) {
      message = errorType;
    }
  }
  message ??= text.replace(/<[^>]*>/g, " ");
  message = message.replace(/\s+/g, " ").trim();
  return message.length > MAX_ERROR_MESSAGE_CHARS ? `${message.slice(0, MAX_ERROR_MESSAGE_CHARS)}...` : message;
}

/** `value` as a normalized URL when it is an `http:` or `https:` URL (an output an upstream names), else null. */
export function httpUrlOrNull(value: unknown): string | null {
  if (typeof value !== "string") return null;
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/** Parses a JSON text; undefined when it is not JSON. */
function parseJson(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Lower-cased header names, first value of each. */
function flatHeaders(headers: Dispatcher.ResponseData["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[key.toLowerCase()] = Array.isArray(value) ? (value[0] ?? "") : value;
  }
  return out;
}


/** A keyed source's base URL: http(s), and neither credentials (the key has its header) nor a query. */
function parseKeyedBaseUrl(raw: string): URL {
  const url = parseBaseUrl(raw);
  if (url.username !== "" || url.password !== "") throw new RangeError("baseUrl must not contain credentials");
  if (url.search !== "" || url.hash !== "") throw new RangeError("baseUrl must not have a query or fragment");
  return url;
}

/** An abort signal that fires when {@link IdleTimer.arm} was not called again within `ms`. */
class IdleTimer {
  readonly #controller = new AbortController();
  readonly #ms: number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  fired = false;
  constructor(ms: number) {
    this.#ms = ms;
  }
  get signal(): AbortSignal {
    return this.#controller.signal;
  }
  /** (Re)starts the wait for the next chunk. */
  arm(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.fired = true;
      this.#controller.abort(new Error("idle timeout"));
    }, this.#ms);
  }
  /** Stops waiting (the stream ended or was dropped). */
  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}

