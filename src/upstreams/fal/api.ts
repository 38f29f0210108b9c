/**
 * The HTTP base of the fal queue adapter (docs/architecture.md, "How to add": one folder per upstream, `api.ts` with base URL,
 * headers and the failure mapping; `queue.ts` speaks the queue protocol, `models.ts` maps our models,
 * `source.ts` puts them together). The protocol-independent part (pool, timeouts, host check, reading
 * answers, redaction) is the shared keyed base of `../keyed-http.ts`; this file adds fal's header, hosts
 * and error meaning.
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
 * | HTTP 4xx whose error type is one of fal's infrastructure types ({@link FAL_INFRASTRUCTURE_ERROR_TYPES}) or with `X-Fal-Retryable: true` | true |
 * | other HTTP 4xx (401 bad key, 422 validation, ...) | false |
 * | HTTP 404 on a submit: fal does not serve the endpoint id (D35) | false, `modelNotFound`, `upstreamModel` = the endpoint id |
 * | content policy (`content_policy_violation`), whatever the status | false, `contentRejected` |
 * | malformed answer (not JSON, wrong shape) | true: fal misbehaved, another source may not |
 * | URL refused by the host check | false |
 * The caller's own abort is not an upstream failure: `signal.reason` is rethrown unchanged.
 *
 * Every message put into an error has the key redacted; fal's `input` echo (the flagged
 * value in a content-policy error) is never copied; no raw undici error is attached as `cause`.
 */
import { createKeyedHttp, describeErrorBody, KeyedHttpError } from "../keyed-http.ts";
import type { KeyedAnswer, KeyedErrorKind, KeyedHttp, KeyedSourceOptions } from "../keyed-http.ts";
import { isRecord } from "../util.ts";

export { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, MAX_RESPONSE_BYTES } from "../keyed-http.ts";
export { normalizeHost } from "../hosts.ts";

/** fal's queue, the default base URL. */
export const DEFAULT_FAL_BASE_URL = "https://queue.fal.run";

/**
 * Hosts fal itself names in the follow-up URLs of a submit answer (`status_url`, `response_url`,
 * `cancel_url`; fal-js `queue.ts` builds the same URLs on `queue.fal.run`). The key may go there over
 * `https:` whatever the base URL is. Output files (`*.fal.media`) are public and never get the key.
 */
export const FAL_FOLLOW_UP_HOSTS: readonly string[] = ["queue.fal.run"];

/** fal's error type for a content-moderation refusal (docs.fal.ai/errors; no SDK names it: unverified). */
export const CONTENT_POLICY_ERROR_TYPE = "content_policy_violation";

/**
 * fal's error types that say fal's own infrastructure failed, not the request (D27: another attempt or
 * source may succeed). The request errors of docs.fal.ai "Request Error Types" (`request_timeout`,
 * `startup_timeout`, `runner_*`, `internal_error`; not `client_cancelled`, `client_disconnected`,
 * `bad_request`) and the server-side model errors of docs.fal.ai/errors ("Model Errors":
 * `internal_server_error`, `generation_timeout`, `downstream_service_error`,
 * `downstream_service_unavailable`). Every other type names something wrong with the request itself
 * (the validation types `missing`, `literal_error`, `greater_than`, ..., `image_too_large`,
 * `file_download_error`, `no_media_generated`, `feature_not_supported`, ...): not retryable.
 */
export const FAL_INFRASTRUCTURE_ERROR_TYPES: ReadonlySet<string> = new Set([
  "request_timeout",
  "startup_timeout",
  "runner_scheduling_failure",
  "runner_connection_timeout",
  "runner_disconnected",
  "runner_connection_refused",
  "runner_connection_error",
  "runner_incomplete_response",
  "runner_server_error",
  "internal_error",
  "internal_server_error",
  "generation_timeout",
  "downstream_service_error",
  "downstream_service_unavailable",
]);

/**
 * How one fal source is reached (keyed-http.ts `KeyedSourceOptions`): `baseUrl` defaults to
 * {@link DEFAULT_FAL_BASE_URL}; the key is sent as `Authorization: Key <apiKey>`.
 */
export type FalApiConfig = KeyedSourceOptions;

/** What went wrong in a {@link FalError}. */
export type FalErrorKind = KeyedErrorKind;

/**
 * An {@link UpstreamError} of the fal adapter. `status` is fal's HTTP status (null when no answer
 * came), `errorType` fal's machine-readable type when it gave one (`detail[].type`, `error_type` or the
 * `x-fal-error-type` header), `contentRejected` true for a content-policy refusal, `modelNotFound`
 * true (with `upstreamModel`) when fal does not serve the endpoint id (D35).
 */
export class FalError extends KeyedHttpError {
  readonly errorType: string | null;

  constructor(
    message: string,
    opts: {
      retryable: boolean;
      kind: FalErrorKind;
      status?: number | null;
      errorType?: string | null;
      contentRejected?: boolean;
      /** fal does not serve the endpoint (a 404 on submit, D35); `upstreamModel` is its id. */
      modelNotFound?: boolean;
      upstreamModel?: string | null;
    },
  ) {
    super(message, opts);
    this.name = "FalError";
    this.errorType = opts.errorType ?? null;
  }
}

/** One HTTP answer of fal, read whole. `json` is the parsed body, or undefined when it is not JSON. */
export type FalAnswer = KeyedAnswer;

/** The HTTP methods of the queue protocol. */
export type FalMethod = "GET" | "POST" | "PUT";

/**
 * The transport to one fal source (the keyed base of keyed-http.ts plus fal's submit URL and error
 * mapping). Create once per source (it owns a connection pool); `close()` it.
 */
export interface FalApi extends KeyedHttp<FalError> {
  /** `POST {base}/{endpointId}`: the submit URL of an endpoint (endpoint ids are checked by models.ts). */
  submitUrl(endpointId: string): URL;
  /** The {@link FalError} for a non-2xx answer (see the failure table). `what` names the call. */
  httpError(answer: FalAnswer, what: string): FalError;
  /**
   * The {@link FalError} for a 404 answer to a submit: fal does not serve `endpointId` (D35). Not
   * retryable, `modelNotFound`, `upstreamModel` = `endpointId`; the message names the endpoint.
   */
  endpointNotFound(answer: FalAnswer, endpointId: string): FalError;
}

/**
 * Creates the transport of one fal source.
 * @throws RangeError for a bad base URL, timeout or trusted host, or an empty key.
 */
export function createFalApi(config: FalApiConfig): FalApi {
  const http = createKeyedHttp<FalError>({
    ...config,
    baseUrl: config.baseUrl ?? DEFAULT_FAL_BASE_URL,
    authHeaders: (key) => ({ authorization: `Key ${key}` }),
    followUpHost: (url) => FAL_FOLLOW_UP_HOSTS.includes(url.host),
    followUpLabel: "a fal queue host",
    error: (message, opts) => new FalError(message, opts),
  });
  const { name } = config;
  return {
    ...http,
    submitUrl(endpointId) {
      return new URL(`${http.baseUrl.pathname.replace(/\/+$/, "")}/${endpointId}`, http.baseUrl);
    },
    httpError(answer, what) {
      const { status } = answer;
      const errorType = falErrorType(answer);
      const contentRejected = errorType === CONTENT_POLICY_ERROR_TYPE;
      const retryableHeader = answer.headers["x-fal-retryable"]?.trim().toLowerCase() === "true";
      const infrastructure = errorType !== null && FAL_INFRASTRUCTURE_ERROR_TYPES.has(errorType);
      const retryable = !contentRejected && (status >= 500 || status === 429 || status === 408 || retryableHeader || infrastructure);
      const detail = describeFalError(answer.json, answer.text);
      return new FalError(http.redact(`${name}: ${what}: HTTP ${status}${detail === "" ? "" : `: ${detail}`}`), {
        retryable,
        kind: "http",
        status,
        errorType,
        contentRejected,
      });
    },
    endpointNotFound(answer, endpointId) {
      const detail = describeFalError(answer.json, answer.text);
      const message = `${name}: fal does not serve the endpoint ${endpointId} (submit: HTTP ${answer.status}${detail === "" ? "" : `: ${detail}`})`;
      return new FalError(http.redact(message), {
        retryable: false,
        kind: "http",
        status: answer.status,
        errorType: falErrorType(answer),
        modelNotFound: true,
        upstreamModel: endpointId,
      });
    },
  };
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
 * At most 300 characters (keyed-http.ts `describeErrorBody` with fal's `error_type`).
 */
export function describeFalError(json: unknown, text: string): string {
  const errorType = isRecord(json) && typeof json.error_type === "string" ? json.error_type : null;
  return describeErrorBody(json, text, errorType);
}
