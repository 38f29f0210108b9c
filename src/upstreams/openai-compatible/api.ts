/**
 * The shared base of every OpenAI-compatible upstream (docs/architecture.md, "How to add": one folder per upstream, `api.ts` with
 * base URL, headers and endpoints; one file per capability). A concrete provider that speaks the OpenAI
 * wire format is just an {@link OpenAICompatibleConfig} (its base URL and key); capabilities such as
 * `chat.ts` build on {@link OpenAICompatibleApi}.
 *
 * What lives here: the endpoint paths, the request headers, one keep-alive undici `Agent` per upstream,
 * the timeout rules, and the mapping of every failure to {@link UpstreamError}:
 *
 * | failure | `retryable` |
 * |---|---|
 * | network error (refused, reset, DNS, TLS) | true |
 * | timeout (connect or total) | true |
 * | HTTP 5xx | true |
 * | HTTP 429 | true |
 * | HTTP 404 with `error.code` `model_not_found`, or a 404 whose message names the model sent | false, `modelNotFound` and `upstreamModel` (D35) |
 * | other HTTP 4xx (400 bad request, 401 bad key, 404 of another kind, ...) | false |
 * | (a capability may mark an HTTP 4xx `contentRejected` by its `code`: images.ts does for moderation refusals) | false |
 * | malformed answer (invalid JSON, wrong shape, error object in a 200) | true: the upstream misbehaved, another source may not |
 *
 * A model-not-found error (the upstream retired or never had the model: OpenAI answers `404 {"error": {"message":
 * "The model `gpt-image-1` has been deprecated, ...", "type": "invalid_request_error", "param": null, "code":
 * "model_not_found"}}`) says so in its message and names the upstream id it sent; the failover tries the
 * family's next source (D35).
 *
 * The caller's own abort is not an upstream failure: it rethrows `signal.reason` unchanged (an
 * `AbortError` DOMException unless the caller chose another reason), so fallback logic stops there.
 *
 * The API key is only ever written into the `Authorization` header. Every message this module puts into
 * an error passes through {@link redactSecret}, so an upstream that echoes the key back (some do, in
 * "invalid key" messages) cannot leak it into logs; no raw undici error is attached as `cause`.
 */
import type { Dispatcher, FormData as UndiciFormData } from "undici";
import { adapterDispatcher, DEFAULT_CONNECT_TIMEOUT_MS, loadUndici } from "../undici.ts";
import { noteUpstreamRequest, traceHeaders } from "../../observability/tracing.ts";
import { UpstreamError } from "../types.ts";
import { BodyTooLargeError, errorCode, isRecord, parseBaseUrl, readText, redactSecret } from "../util.ts";

/** Endpoint paths relative to the base URL (which ends with the version, for example `.../v1`). */
export const ENDPOINTS = {
  chatCompletions: "/chat/completions",
  imageGenerations: "/images/generations",
  audioTranscriptions: "/audio/transcriptions",
} as const;

export { DEFAULT_CONNECT_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } from "../undici.ts";

/** Largest non-streaming answer read, in bytes; a larger one is a malformed answer. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** Most bytes of an error answer read to build the error message. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** Most characters of an upstream's own error message copied into ours. */
const MAX_ERROR_MESSAGE_CHARS = 300;

/** How one OpenAI-compatible upstream is reached. */
export interface OpenAICompatibleConfig {
  /** Base URL including the API version, without a trailing slash needed: `https://api.example.com/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never logged, never put into an error message. */
  apiKey: string;
  /**
   * Total time allowed for one call, in milliseconds: connecting, waiting for the answer and reading all
   * of it (for a stream: until the last chunk). Exceeding it throws a retryable {@link UpstreamError}.
   */
  timeoutMs: number;
  /** The source's name (for example `groq`): used in error messages and as the fallback `source`. */
  name: string;
  /** Longest TCP + TLS connect phase, in milliseconds; default min(`timeoutMs`, 10 000). */
  connectTimeoutMs?: number;
  /**
   * An undici dispatcher to send through instead of the adapter's own keep-alive `Agent` (tests,
   * a shared pool). The adapter never closes a dispatcher it was given.
   */
  dispatcher?: Dispatcher;
}

/** The machine-readable parts of an OpenAI error body (`{"error": {message, type, param, code}}`). */
export interface UpstreamErrorFields {
  /** `error.code` (`invalid_api_key`, `rate_limit_exceeded`, `content_policy_violation`, ...), or null. */
  code?: string | null;
  /** `error.type` (`invalid_request_error`, `server_error`, ...), or null. */
  type?: string | null;
  /** A moderation refusal (never retryable; the job ends `content_rejected`). */
  contentRejected?: boolean;
  /** The upstream said the model does not exist (never retryable on this source; D35). */
  modelNotFound?: boolean;
  /** With `modelNotFound`: the upstream id that was sent as `model`. */
  upstreamModel?: string | null;
}

/**
 * An {@link UpstreamError} of an OpenAI-compatible upstream, with the details a caller may log or map:
 * `status` is the upstream's HTTP status (null when no answer came), `kind` what went wrong, `code` and
 * `type` the upstream's `error.code` and `error.type` when its error body had them (else null).
 */
export class OpenAICompatibleError extends UpstreamError {
  readonly status: number | null;
  readonly kind: "http" | "network" | "timeout" | "malformed";
  readonly code: string | null;
  readonly type: string | null;

  constructor(
    message: string,
    retryable: boolean,
    kind: OpenAICompatibleError["kind"],
    status: number | null = null,
    fields: UpstreamErrorFields = {},
  ) {
    super(message, retryable, { contentRejected: fields.contentRejected, modelNotFound: fields.modelNotFound, upstreamModel: fields.upstreamModel });
    this.name = "OpenAICompatibleError";
    this.kind = kind;
    this.status = status;
    this.code = fields.code ?? null;
    this.type = fields.type ?? null;
  }
}

/** An answer whose status was 2xx; `body` must be consumed or dropped by the caller. */
export type OkResponse = Dispatcher.ResponseData;

/**
 * The transport to one OpenAI-compatible upstream. `post` sends JSON and returns a 2xx answer or throws;
 * {@link OpenAICompatibleApi.failure} turns anything caught while reading that answer into the same
 * errors. Create it once per upstream (it owns a keep-alive connection pool) and `close()` it on shutdown.
 */
export interface OpenAICompatibleApi {
  readonly name: string;
  /**
   * POSTs `body` as JSON to `path` (one of {@link ENDPOINTS}). `signal` is the combined signal from
   * {@link OpenAICompatibleApi.callSignal}. Resolves with a 2xx answer; throws {@link OpenAICompatibleError}
   * for HTTP errors, network errors and timeouts, or the caller's abort reason.
   */
  post(path: string, body: unknown, call: CallSignal): Promise<OkResponse>;
  /**
   * Like {@link OpenAICompatibleApi.post}, with a multipart form (undici's own `FormData`, see
   * {@link newForm}; undici writes the boundary into `content-type`) instead of JSON: the upload
   * endpoints (`/audio/transcriptions`). Same answers and errors.
   */
  postForm(path: string, form: UndiciFormData, call: CallSignal): Promise<OkResponse>;
  /** A signal that fires on the caller's abort or after `timeoutMs`, to be passed to `post`. */
  callSignal(callerSignal: AbortSignal | undefined): CallSignal;
  /**
   * Maps an error caught during a call (including while reading the body) to what the caller should see:
   * the caller's abort reason, a timeout, a network error; our own errors pass through.
   */
  failure(err: unknown, call: CallSignal): unknown;
  /** A malformed-answer error (retryable), with the secret redacted from `detail`. */
  malformed(detail: string): OpenAICompatibleError;
  /** Closes the pooled connections (only the adapter's own `Agent`). */
  close(): Promise<void>;
}

/** The signals of one call: `signal` combines the caller's with the total timeout. */
export interface CallSignal {
  signal: AbortSignal;
  caller: AbortSignal | undefined;
  timeout: AbortSignal;
}

/**
 * Creates the transport for one OpenAI-compatible upstream.
 *
 * @throws RangeError when `timeoutMs` is not positive or `baseUrl` is not an http(s) URL.
 */
export function createOpenAICompatibleApi(config: OpenAICompatibleConfig): OpenAICompatibleApi {
  if (!Number.isFinite(config.timeoutMs) || config.timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number, got ${config.timeoutMs}`);
  }
  const base = parseBaseUrl(config.baseUrl);
  const connectTimeout = Math.min(config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, config.timeoutMs);
  const { dispatcher, ownAgent } = adapterDispatcher(config.dispatcher, connectTimeout);
  const { name, apiKey } = config;
  const clean = (text: string): string => redactSecret(text, apiKey);

  const timeoutError = (): OpenAICompatibleError =>
    new OpenAICompatibleError(`${name}: no complete answer within ${config.timeoutMs} ms`, true, "timeout");

  const failure = (err: unknown, call: CallSignal): unknown => {
    if (call.caller?.aborted === true) return call.caller.reason;
    if (err instanceof OpenAICompatibleError) return err;
    if (call.timeout.aborted) return timeoutError();
    const code = errorCode(err);
    if (code === "UND_ERR_CONNECT_TIMEOUT") {
      return new OpenAICompatibleError(`${name}: connect timed out after ${connectTimeout} ms`, true, "timeout");
    }
    const message = err instanceof Error ? err.message : String(err);
    return new OpenAICompatibleError(
      clean(`${name}: network error${code === null ? "" : ` (${code})`}: ${message}`),
      true,
      "network",
    );
  };

  return {
    name,
    callSignal(caller) {
      const timeout = AbortSignal.timeout(config.timeoutMs);
      const signal = caller === undefined ? timeout : AbortSignal.any([caller, timeout]);
      return { signal, caller, timeout };
    },
    post(path, body, call) {
      return send(path, JSON.stringify(body), call, isRecord(body) && typeof body.model === "string" ? body.model : null);
    },
    postForm(path, form, call) {
      const model = form.get("model");
      return send(path, form, call, typeof model === "string" ? model : null);
    },
    failure,
    malformed(detail) {
      return new OpenAICompatibleError(clean(`${name}: malformed answer: ${detail}`), true, "malformed");
    },
    async close() {
      if (ownAgent !== null) await ownAgent.close();
    },
  };

  /** POSTs a JSON text or a multipart form (see `post` and `postForm`); `model` is the body's `model`, if any. */
  async function send(path: string, payload: string | UndiciFormData, call: CallSignal, model: string | null): Promise<OkResponse> {
    if (call.caller?.aborted === true) throw call.caller.reason;
    let res: OkResponse;
    // D40: the call carries the current span's `traceparent` (when the work is traced).
    const headers: Record<string, string> = traceHeaders({
      authorization: `Bearer ${apiKey}`,
      accept: "application/json, text/event-stream",
      "user-agent": "media-gateway",
    });
    if (model !== null) noteUpstreamRequest({ model });
    // A form's content-type (with its boundary) is written by undici.
    if (typeof payload === "string") headers["content-type"] = "application/json";
    try {
      res = await loadUndici().request(new URL(base.pathname.replace(/\/+$/, "") + path, base), {
        method: "POST",
        dispatcher,
        signal: call.signal,
        headers,
        body: payload,
      });
    } catch (err) {
      throw failure(err, call);
    }
    if (res.statusCode >= 200 && res.statusCode <= 299) return res;
    let detail: UpstreamErrorDetail = { message: "", code: null, type: null };
    try {
      detail = upstreamErrorDetail(await readText(res.body, MAX_ERROR_BODY_BYTES, true));
    } catch (err) {
      const mapped = failure(err, call);
      // The caller's abort or our timeout while reading the error body still wins.
      if (!(mapped instanceof OpenAICompatibleError && mapped.kind === "network")) throw mapped;
    }
    const status = res.statusCode;
    const retryable = status >= 500 || status === 429;
    const said = `HTTP ${status}${detail.message === "" ? "" : `: ${detail.message}`}`;
    const fields = { code: detail.code === null ? null : clean(detail.code), type: detail.type === null ? null : clean(detail.type) };
    if (isModelNotFound(status, detail, model)) {
      const upstreamModel = model === null ? null : clean(model);
      const named = upstreamModel === null ? "the upstream model" : `the upstream model ${JSON.stringify(upstreamModel)}`;
      throw new OpenAICompatibleError(clean(`${name}: ${named} does not exist at this source (${said})`), false, "http", status, {
        ...fields,
        modelNotFound: true,
        upstreamModel,
      });
    }
    throw new OpenAICompatibleError(clean(`${name}: ${said}`), retryable, "http", status, fields);
  }
}

/**
 * Whether an error answer says the model does not exist (D35): HTTP 404 with `error.code`
 * `model_not_found` (OpenAI's answer for an unknown or retired model), or a 404 whose message names the
 * model that was sent as a whole word (OpenAI-compatible servers that answer without a code; a short id
 * such as `v1` inside `/v1/chat/completions` does not count).
 */
function isModelNotFound(status: number, detail: UpstreamErrorDetail, model: string | null): boolean {
  if (status !== 404) return false;
  if (detail.code === "model_not_found") return true;
  if (model === null || model === "") return false;
  const escaped = model.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  // Not part of a longer id on either side; a full stop may end the sentence (`gpt-image-2.` but not `gpt-image-2.5`).
  return new RegExp(`(^|[^A-Za-z0-9._:/-])${escaped}($|[^A-Za-z0-9._:/-]|\\.(?![A-Za-z0-9]))`).test(detail.message);
}

/** A new multipart form for {@link OpenAICompatibleApi.postForm} (undici's own `FormData`, which its `request` writes). */
export function newForm(): UndiciFormData {
  return new (loadUndici().FormData)();
}

/**
 * POSTs `body` to `path` through `api` and reads the whole 2xx answer as JSON, at most `maxBytes`
 * (default {@link MAX_RESPONSE_BYTES}; a capability with larger answers, such as images.ts, passes its own
 * cap). Returns the parsed value, unchecked.
 * @throws what {@link OpenAICompatibleApi.post} throws; while reading, the mapped failure (the caller's
 *   abort reason, a timeout, a network error); a malformed-answer error when the answer is larger than
 *   `maxBytes` or not JSON.
 */
export async function postForJson(
  api: OpenAICompatibleApi,
  path: string,
  body: unknown,
  call: CallSignal,
  maxBytes: number = MAX_RESPONSE_BYTES,
): Promise<unknown> {
  return readJson(api, await api.post(path, body, call), call, maxBytes);
}

/**
 * Reads a whole 2xx answer of `api` (from `post` or `postForm`) as JSON, at most `maxBytes`. Returns the
 * parsed value, unchecked.
 * @throws the mapped failure while reading (the caller's abort reason, a timeout, a network error); a
 *   malformed-answer error when the answer is larger than `maxBytes` or not JSON.
 */
export async function readJson(api: OpenAICompatibleApi, res: OkResponse, call: CallSignal, maxBytes: number = MAX_RESPONSE_BYTES): Promise<unknown> {
  let text: string;
  try {
    text = await readText(res.body, maxBytes);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw api.malformed(err.message);
    throw api.failure(err, call);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw api.malformed("the body is not JSON");
  }
}

/** What an error body says: the message (shortened, one line) and OpenAI's `code` and `type`. */
interface UpstreamErrorDetail {
  message: string;
  code: string | null;
  type: string | null;
}

/**
 * The upstream's own message from an OpenAI-style error body (`{"error": {"message", "type", "code"}}`),
 * shortened, with `code` and `type` when they are strings (at most 100 characters each).
 */
function upstreamErrorDetail(text: string): UpstreamErrorDetail {
  let message = text;
  let code: string | null = null;
  let type: string | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    const found = errorMessageOf(parsed);
    if (found !== null) message = found;
    if (isRecord(parsed) && isRecord(parsed.error)) {
      const { error } = parsed;
      if (typeof error.code === "string" && error.code !== "") code = error.code.slice(0, 100);
      if (typeof error.type === "string" && error.type !== "") type = error.type.slice(0, 100);
    }
  } catch {
    // Not JSON: use the text itself.
  }
  message = message.replace(/\s+/g, " ").trim();
  message = message.length > MAX_ERROR_MESSAGE_CHARS ? `${message.slice(0, MAX_ERROR_MESSAGE_CHARS)}...` : message;
  return { message, code, type };
}

/**
 * The message of an OpenAI-style error object (`{"error": {"message": "..."}}` or `{"error": "..."}`),
 * or null when `value` carries no error.
 */
export function errorMessageOf(value: unknown): string | null {
  if (!isRecord(value) || !("error" in value) || value.error === undefined || value.error === null) return null;
  const error = value.error;
  if (typeof error === "string") return error;
  if (isRecord(error) && typeof error.message === "string") return error.message;
  return JSON.stringify(error);
}

