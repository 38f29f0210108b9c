/**
 * The HTTP base of the fal queue adapter (style.md: one folder per upstream, `api.ts` with base URL,
 * headers and the failure mapping; `queue.ts` speaks the queue protocol, `models.ts` maps our models,
 * `source.ts` puts them together).
 *
 * Facts used here come from fal's own clients: fal-ai/fal-js `libs/client/src/request.ts` (the
 * `Authorization: Key <key>` header, JSON bodies, `Accept: application/json`), `response.ts` (a non-2xx
 * answer with a JSON body is an error, 422 a validation error with `{detail: [{loc, msg, type}]}`),
 * `retry.ts` (429, 502, 503, 504 and transport errors are transient), and fal-ai/fal
 * `projects/fal_client/src/fal_client/client.py` (`detail` + `error_type`, the `x-fal-error-type`
 * header). docs.fal.ai/errors adds the `X-Fal-Retryable` header and the `content_policy_violation` type.
 *
 * ## Where the key goes (D25)
 * The key is written only into the `Authorization` header of a request whose URL passes
 * {@link FalApi.checkUrl}, before anything is sent:
 * - the host (host and port) of the base URL, with the base URL's scheme;
 * - the hosts fal names for its own follow-up calls: {@link FAL_FOLLOW_UP_HOSTS} (`https:` only);
 * - the configured `trustedHosts` (`http:` or `https:`; an operator may run a fal-compatible queue on a
 *   private network).
 * Any other URL (a `status_url` on a foreign host, a tampered stored handle) is refused with a
 * non-retryable {@link FalError} of kind `refused`, and no request is made.
 *
 * ## Failures
 * | failure | `retryable` |
 * |---|---|
 * | network error (refused, reset, DNS, TLS) | true |
 * | timeout (connect or total, per call) | true |
 * | HTTP 5xx, 429, 408 | true |
 * | other HTTP 4xx (401 bad key, 404, 422 validation, ...) unless `X-Fal-Retryable: true` | false |
 * | content policy (`content_policy_violation`), whatever the status | false, `contentRejected` |
 * | malformed answer (not JSON, wrong shape) | true: fal misbehaved, another source may not |
 * | URL refused by the host check | false |
 * The caller's own abort is not an upstream failure: `signal.reason` is rethrown unchanged.
 *
 * Every message put into an error passes through {@link redactSecret}; fal's `input` echo (the flagged
 * value in a content-policy error) is never copied; no raw undici error is attached as `cause`.
 */
import type { Agent, Dispatcher } from "undici";
import { loadUndici } from "../undici.ts";
import { UpstreamError } from "../types.ts";
import { isRecord, readText, redactSecret } from "../openai-compatible/api.ts";
import { isOwnOrTrustedHost, trustedHostMatcher } from "../hosts.ts";

// Kept here for the callers that knew it as fal's: the D25 host rules now live in ../hosts.ts.
export { normalizeHost } from "../hosts.ts";

/** fal's queue, the default base URL. */
export const DEFAULT_FAL_BASE_URL = "https://queue.fal.run";

/**
 * Hosts fal itself names in the follow-up URLs of a submit answer (`status_url`, `response_url`,
 * `cancel_url`; fal-js `queue.ts` builds the same URLs on `queue.fal.run`). The key may go there over
 * `https:` whatever the base URL is. Output files (`*.fal.media`) are public and never get the key.
 */
export const FAL_FOLLOW_UP_HOSTS: readonly string[] = ["queue.fal.run"];

/** Longest connect phase by default, in milliseconds (capped by the total timeout). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** Default total time of one HTTP call (submit, status, result or cancel), in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** How long an idle keep-alive connection is kept, in milliseconds. */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;

/** Largest answer read, in bytes (fal answers are small JSON documents; media are separate files). */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/** Most characters of fal's own error text copied into ours. */
const MAX_ERROR_MESSAGE_CHARS = 300;

/** fal's error type for a content-moderation refusal (docs.fal.ai/errors; no SDK names it: unverified). */
export const CONTENT_POLICY_ERROR_TYPE = "content_policy_violation";

/** How one fal source is reached. */
export interface FalApiConfig {
  /** The source's name (`UPSTREAMS` entry `name`): used in error messages. */
  name: string;
  /** Default {@link DEFAULT_FAL_BASE_URL}. `http:` is accepted (a loopback fake, a private proxy). */
  baseUrl?: string;
  /** Sent as `Authorization: Key <apiKey>`; never logged, never put into an error message. */
  apiKey: string;
  /** Total time of one HTTP call in milliseconds; default {@link DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Further hosts (`host` or `host:port`) that may receive the key (D25 `trusted_hosts`). */
  trustedHosts?: readonly string[];
  /** Longest TCP + TLS connect phase; default min(timeout, 10 000 ms). */
  connectTimeoutMs?: number;
  /** An undici dispatcher to use instead of the adapter's own keep-alive `Agent` (never closed by us). */
  dispatcher?: Dispatcher;
}

/** What went wrong in a {@link FalError}. */
export type FalErrorKind = "http" | "network" | "timeout" | "malformed" | "refused" | "unsupported" | "handle";

/**
 * An {@link UpstreamError} of the fal adapter. `status` is fal's HTTP status (null when no answer
 * came), `errorType` fal's machine-readable type when it gave one (`detail[].type`, `error_type` or the
 * `x-fal-error-type` header); the inherited `contentRejected` is true for a content-policy refusal.
 */
export class FalError extends UpstreamError {
  readonly kind: FalErrorKind;
  readonly status: number | null;
  readonly errorType: string | null;

  constructor(
    message: string,
    opts: { retryable: boolean; kind: FalErrorKind; status?: number | null; errorType?: string | null; contentRejected?: boolean },
  ) {
    super(message, opts.retryable, { contentRejected: opts.contentRejected });
    this.name = "FalError";
    this.kind = opts.kind;
    this.status = opts.status ?? null;
    this.errorType = opts.errorType ?? null;
  }
}

/** One HTTP answer of fal, read whole. `json` is the parsed body, or undefined when it is not JSON. */
export interface FalAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  json: unknown;
  text: string;
}

/** The HTTP methods of the queue protocol. */
export type FalMethod = "GET" | "POST" | "PUT";

/** The transport to one fal source. Create once per source (it owns a connection pool); `close()` it. */
export interface FalApi {
  readonly name: string;
  /** The parsed base URL. */
  readonly baseUrl: URL;
  /** `POST {base}/{endpointId}`: the submit URL of an endpoint (endpoint ids are checked by models.ts). */
  submitUrl(endpointId: string): URL;
  /**
   * Parses `raw` and checks that it may receive the key (see the module comment). Throws a
   * non-retryable {@link FalError} of kind `refused` naming `purpose`, never the URL's query.
   */
  checkUrl(raw: string, purpose: string): URL;
  /** True when `raw` is on the base URL's host or a trusted host (D25: such output files are downloaded directly). */
  isDirectDownloadHost(raw: string): boolean;
  /**
   * Sends one request with the key to `url` (which must have passed {@link FalApi.checkUrl}) and reads
   * the whole answer, whatever its status. Throws {@link FalError} for network errors, timeouts and
   * oversized answers, or the caller's abort reason.
   */
  send(method: FalMethod, url: URL, body: unknown, signal: AbortSignal | undefined): Promise<FalAnswer>;
  /** The {@link FalError} for a non-2xx answer (see the failure table). `what` names the call. */
  httpError(answer: FalAnswer, what: string): FalError;
  /** A malformed-answer error (retryable). */
  malformed(what: string, detail: string): FalError;
  /** `text` with the key replaced by `[redacted]`. */
  redact(text: string): string;
  /** Closes the pooled connections (only the adapter's own `Agent`). */
  close(): Promise<void>;
}

/**
 * Creates the transport of one fal source.
 * @throws RangeError for a bad base URL, timeout or trusted host, or an empty key.
 */
export function createFalApi(config: FalApiConfig): FalApi {
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive number, got ${timeoutMs}`);
  if (typeof config.apiKey !== "string" || config.apiKey.trim() === "") throw new RangeError("apiKey must be a non-empty string");
  const base = parseBaseUrl(config.baseUrl ?? DEFAULT_FAL_BASE_URL);
  const isTrusted = trustedHostMatcher(config.trustedHosts);
  const connectTimeout = Math.min(config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, timeoutMs);
  const ownAgent =
    config.dispatcher === undefined
      ? new (loadUndici().Agent)({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, connectTimeout })
      : null;
  const dispatcher: Dispatcher = config.dispatcher ?? (ownAgent as Agent);
  const { name, apiKey } = config;
  const clean = (text: string): string => redactSecret(text, apiKey);

  const keyAllowed = (url: URL): boolean => {
    if (url.username !== "" || url.password !== "") return false;
    if (url.protocol !== "https:" && url.protocol !== "http:") return false;
    if (url.protocol === base.protocol && url.host === base.host) return true;
    if (url.protocol === "https:" && FAL_FOLLOW_UP_HOSTS.includes(url.host)) return true;
    return isTrusted(url);
  };

  const api: FalApi = {
    name,
    baseUrl: base,
    submitUrl(endpointId) {
      return new URL(`${base.pathname.replace(/\/+$/, "")}/${endpointId}`, base);
    },
    checkUrl(raw, purpose) {
      let url: URL | null = null;
      try {
        url = typeof raw === "string" ? new URL(raw) : null;
      } catch {
        url = null;
      }
      if (url === null) {
        throw new FalError(`${name}: ${purpose} is not a valid URL`, { retryable: false, kind: "refused" });
      }
      if (!keyAllowed(url)) {
        // Name the host, never the whole URL (a query could carry anything).
        throw new FalError(
          clean(`${name}: refusing to send the key to ${url.protocol}//${url.host} (${purpose}): not the base URL's host, a fal queue host or a trusted host`),
          { retryable: false, kind: "refused" },
        );
      }
      return url;
    },
    isDirectDownloadHost(raw) {
      return isOwnOrTrustedHost(raw, base, isTrusted);
    },
    async send(method, url, body, callerSignal) {
      if (callerSignal?.aborted === true) throw callerSignal.reason;
      // The host check is repeated here so no code path can send the key elsewhere.
      if (!keyAllowed(url)) api.checkUrl(url.href, "request URL");
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]);
      const failure = (err: unknown): unknown => {
        if (callerSignal?.aborted === true) return callerSignal.reason;
        if (err instanceof FalError) return err;
        if (timeout.aborted) {
          return new FalError(`${name}: no complete answer within ${timeoutMs} ms (${method} ${url.pathname})`, { retryable: true, kind: "timeout" });
        }
        const code = errorCode(err);
        if (code === "UND_ERR_CONNECT_TIMEOUT") {
          return new FalError(`${name}: connect timed out after ${connectTimeout} ms`, { retryable: true, kind: "timeout" });
        }
        if (err instanceof Error && err.name === "BodyTooLargeError") {
          return api.malformed(`${method} ${url.pathname}`, err.message);
        }
        const message = err instanceof Error ? err.message : String(err);
        return new FalError(clean(`${name}: network error${code === null ? "" : ` (${code})`}: ${message}`), { retryable: true, kind: "network" });
      };
      try {
        const res = await loadUndici().request(url, {
          method,
          dispatcher,
          signal,
          headers: {
            authorization: `Key ${apiKey}`,
            accept: "application/json",
            ...(body === undefined ? {} : { "content-type": "application/json" }),
            "user-agent": "media-gateway",
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await readText(res.body, MAX_RESPONSE_BYTES);
        return { status: res.statusCode, headers: flatHeaders(res.headers), json: parseJson(text), text };
      } catch (err) {
        throw failure(err);
      }
    },
    httpError(answer, what) {
      const { status } = answer;
      const errorType = falErrorType(answer);
      const contentRejected = errorType === CONTENT_POLICY_ERROR_TYPE;
      const retryableHeader = answer.headers["x-fal-retryable"]?.trim().toLowerCase() === "true";
      const retryable = !contentRejected && (status >= 500 || status === 429 || status === 408 || retryableHeader);
      const detail = describeFalError(answer.json, answer.text);
      return new FalError(clean(`${name}: ${what}: HTTP ${status}${detail === "" ? "" : `: ${detail}`}`), {
        retryable,
        kind: "http",
        status,
        errorType,
        contentRejected,
      });
    },
    malformed(what, detail) {
      return new FalError(clean(`${name}: malformed answer to ${what}: ${detail}`), { retryable: true, kind: "malformed" });
    },
    redact: clean,
    async close() {
      if (ownAgent !== null) await ownAgent.close();
    },
  };
  return api;
}

/**
 * fal's machine-readable error type of an answer, or null: the first `detail[].type` that is
 * {@link CONTENT_POLICY_ERROR_TYPE} (a refusal anywhere wins), else `error_type`, else the
 * `x-fal-error-type` header, else the first `detail[].type`.
 */
export function falErrorType(answer: Pick<FalAnswer, "json" | "headers">): string | null {
  const body = answer.json;
  const detailTypes: string[] = [];
  if (isRecord(body) && Array.isArray(body.detail)) {
    for (const item of body.detail) if (isRecord(item) && typeof item.type === "string") detailTypes.push(item.type);
  }
  if (detailTypes.includes(CONTENT_POLICY_ERROR_TYPE)) return CONTENT_POLICY_ERROR_TYPE;
  if (isRecord(body) && typeof body.error_type === "string" && body.error_type !== "") return body.error_type;
  const header = answer.headers["x-fal-error-type"];
  if (typeof header === "string" && header !== "") return header;
  return detailTypes[0] ?? null;
}

/**
 * A short, single-line description of fal's error body (without the key: callers redact):
 * - `{detail: [{loc, msg, type}]}` (FastAPI / fal model errors): `prompt: msg (type); ...`, `loc`
 *   without its leading `body`; the echoed `input` is never copied;
 * - `{detail: "text", error_type}` (fal request errors): `text (error_type)`;
 * - `{detail: {message}}`, `{message}`, `{error}`: that text;
 * - anything else: the raw text with tags and white space collapsed.
 * At most 300 characters.
 */
export function describeFalError(json: unknown, text: string): string {
  let message: string | null = null;
  if (isRecord(json)) {
    const detail = json.detail;
    const errorType = typeof json.error_type === "string" ? json.error_type : null;
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

function errorCode(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return null;
}

function parseBaseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RangeError("baseUrl is not a valid URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new RangeError("baseUrl must be http or https");
  if (url.username !== "" || url.password !== "") throw new RangeError("baseUrl must not contain credentials");
  if (url.search !== "" || url.hash !== "") throw new RangeError("baseUrl must not have a query or fragment");
  return url;
}
