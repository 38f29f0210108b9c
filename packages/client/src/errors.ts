/**
 * The errors the SDK throws, one class per kind of failure (in the manner of openai-node), all of them
 * {@link GatewayError}s:
 *
 * - an answer that is not 2xx: {@link APIError}, or its subclass for the status: 400
 *   {@link BadRequestError}, 401 {@link AuthenticationError}, 402 {@link InsufficientBalanceError}, 403
 *   {@link PermissionDeniedError}, 404 {@link NotFoundError}, 409 {@link ConflictError}, 422
 *   {@link UnprocessableEntityError}, 429 {@link RateLimitError}, 5xx {@link InternalServerError};
 * - no answer: {@link APIConnectionError} (status 0; the fetch failure is its `cause`), or
 *   {@link APITimeoutError} when the call's `timeout` passed first;
 * - a realtime socket that ended with an error once open: {@link RealtimeError} (status 0, the socket's
 *   error code, the close code).
 *
 * Each carries the gateway's D1 error body (`{"error": {code, message, type, param}}`) lifted onto the
 * `Error`, the HTTP status, the answer's headers and its request id (`X-Svc-Request-Id`, D29). Nothing
 * secret is in them: the gateway never puts a key in an error (D1), and the SDK never copies request
 * headers into one. Browser-safe (no Node modules): the web console imports this file.
 */

/** The D1 error body, as the gateway sends it with every refused call. */
export interface ErrorBody {
  error: { code: string; message: string; type: string; param: string | null };
}

/** What a {@link GatewayError} is made from. */
export interface GatewayErrorInit {
  /** HTTP status (0 when no answer came). */
  status: number;
  code: string;
  message: string;
  type?: string;
  param?: string | null;
  requestId?: string | null;
  retryAfterS?: number | null;
  headers?: Headers | null;
  /** The D1 body as received, when the answer had one. */
  body?: ErrorBody | null;
  cause?: unknown;
}

/**
 * The base of every error the SDK throws. Its fields are those of the D1 error body, with the HTTP
 * status and request id of the answer that carried it.
 */
export class GatewayError extends Error {
  /** HTTP status of the answer (0 when no answer came: a network failure, a timeout). */
  readonly status: number;
  /** The D1 `error.code`, e.g. `insufficient_balance`, `job_not_found`, `rate_limited`. */
  readonly code: string;
  /** The D1 `error.type` (D16), e.g. `billing_error`; `api_error` when the body was not a D1 error. */
  readonly type: string;
  /** The D1 `error.param`: the request field at fault, or null. */
  readonly param: string | null;
  /** `X-Svc-Request-Id` of the answer, when present (D29). */
  readonly requestId: string | null;
  /** `Retry-After` of the answer in seconds, when present (429 and busy answers, D13). */
  readonly retryAfterS: number | null;
  /** The answer's headers (null when no answer came). */
  readonly headers: Headers | null;
  /** The D1 error body as received (null when the answer had none, e.g. a proxy's HTML page). */
  readonly error: ErrorBody | null;

  constructor(init: GatewayErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "GatewayError";
    this.status = init.status;
    this.code = init.code;
    this.type = init.type ?? "api_error";
    this.param = init.param ?? null;
    this.requestId = init.requestId ?? null;
    this.retryAfterS = init.retryAfterS ?? null;
    this.headers = init.headers ?? null;
    this.error = init.body ?? null;
  }
}

/** A non-2xx answer of the gateway (the base of the per-status classes below). */
export class APIError extends GatewayError {
  constructor(init: GatewayErrorInit) {
    super(init);
    this.name = new.target.name;
  }
}

/** 400: the request is invalid (`invalid_request`, `invalid_model`...; `param` names the field). */
export class BadRequestError extends APIError {}
/** 401: no key, or one the gateway does not accept (`auth_error`). */
export class AuthenticationError extends APIError {}
/** 402: the balance (or a key's spend limit, D34) does not cover the call (`insufficient_balance`, `key_spend_limit`). */
export class InsufficientBalanceError extends APIError {}
/** 403: the key may not do this (`permission_denied`, a model outside the key's list, D34). */
export class PermissionDeniedError extends APIError {}
/** 404: no such resource, or not the caller's (`job_not_found`, `key_not_found`, `not_found`). */
export class NotFoundError extends APIError {}
/** 409: the resource's state forbids it (`job_not_cancelable`, `idempotency_conflict`). */
export class ConflictError extends APIError {}
/** 422: the body is well-formed but cannot be processed. */
export class UnprocessableEntityError extends APIError {}
/** 429: a rate or concurrency limit (`rate_limited`, D13); `retryAfterS` says when to come back. */
export class RateLimitError extends APIError {}
/** 5xx: the gateway or its upstream failed (`provider_error`, `service_unavailable`...). */
export class InternalServerError extends APIError {}

/** No answer came: the gateway could not be reached, or the connection broke (status 0, the fetch error as `cause`). */
export class APIConnectionError extends GatewayError {
  constructor(init: { message?: string; code?: string; cause?: unknown } = {}) {
    super({ status: 0, code: init.code ?? "connection_error", message: init.message ?? "Connection error.", cause: init.cause });
    this.name = new.target.name;
  }
}

/** The call's `timeout` (milliseconds) passed before the answer's headers came (status 0, code `timeout`). */
export class APITimeoutError extends APIConnectionError {
  constructor(init: { message?: string; cause?: unknown } = {}) {
    super({ code: "timeout", message: init.message ?? "Request timed out.", cause: init.cause });
  }
}

/** The D16 `type` of an error code a realtime socket sends (D42, D43), as the HTTP refusal of the same code would have. */
function realtimeErrorType(code: string): string {
  switch (code) {
    case "auth_error":
      return "authentication_error";
    case "insufficient_balance":
    case "quota_exceeded":
    case "key_spend_limit":
    case "billing_error":
      return "billing_error";
    case "rate_limited":
      return "rate_limit_error";
    case "model_not_allowed":
    case "voice_not_owned":
      return "permission_error";
    case "provider_error":
    case "transcriber_error":
      return "provider_error";
    case "internal_error":
    case "error":
    case "connection_closed":
      return "api_error";
    default:
      return "invalid_request_error";
  }
}

/**
 * A realtime socket (D42 speech, D43 transcription) that ended with an error after it opened: the code and
 * text of the socket's error message (speech: `{"error", "message"}`; transcription: `{"message_type",
 * "error"}`), e.g. `insufficient_balance`, `quota_exceeded`, `invalid_request`, `input_error`,
 * `provider_error`, `transcriber_error`, `input_timeout_exceeded`, `session_time_limit_exceeded`, and the
 * WebSocket close code that followed (1008 policy, 1011 upstream, 1000); `requestId` is the socket's (the id
 * of its usage record) when the gateway named it. A socket that closed with
 * neither an error message nor 1000 gives the code `connection_closed` (the close code and reason
 * tell why: 1001 the gateway shut down, 1006 the connection broke). `status` is 0: no HTTP answer
 * carried it (a refusal before the socket opened is an {@link APIError} instead).
 */
export class RealtimeError extends GatewayError {
  /** The WebSocket close code the socket ended with, or null when the error came before the close. */
  closeCode: number | null;

  constructor(init: { code: string; message: string; closeCode?: number | null; requestId?: string | null; cause?: unknown }) {
    super({ status: 0, code: init.code, message: init.message, type: realtimeErrorType(init.code), requestId: init.requestId ?? null, cause: init.cause });
    this.name = "RealtimeError";
    this.closeCode = init.closeCode ?? null;
  }
}

/** The error class of an answer with `status` (not 2xx). */
function classOf(status: number): typeof APIError {
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return AuthenticationError;
    case 402:
      return InsufficientBalanceError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 422:
      return UnprocessableEntityError;
    case 429:
      return RateLimitError;
    default:
      return status >= 500 ? InternalServerError : APIError;
  }
}

/** Whether `body` is a D1 error body. */
function isErrorBody(body: unknown): body is ErrorBody {
  const e = typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined;
  return typeof e === "object" && e !== null && typeof (e as { code?: unknown }).code === "string";
}

/**
 * The {@link APIError} (of the class for its status) for a non-2xx `response` whose body was already
 * read into `body` (parsed JSON or text, as openapi-fetch hands it back). A body that is not a D1 error
 * (a proxy's HTML page, say) becomes code `http_<status>` with the first 200 characters of the text as
 * message.
 */
export function gatewayError(response: Response, body: unknown): APIError {
  const e: Partial<Record<"code" | "message" | "type" | "param", unknown>> = isErrorBody(body) ? body.error : {};
  const text = typeof body === "string" ? body.trim().slice(0, 200) : "";
  const ErrorClass = classOf(response.status);
  return new ErrorClass({
    status: response.status,
    code: typeof e.code === "string" ? e.code : `http_${response.status}`,
    message: typeof e.message === "string" ? e.message : text || `HTTP ${response.status} ${response.statusText}`.trim(),
    type: typeof e.type === "string" ? e.type : undefined,
    param: typeof e.param === "string" ? e.param : null,
    requestId: response.headers.get("x-svc-request-id"),
    retryAfterS: retryAfterSeconds(response.headers),
    headers: response.headers,
    body: isErrorBody(body) ? body : null,
  });
}

/**
 * `Retry-After` in seconds (the gateway sends whole seconds, D13; an HTTP date is also read), or null
 * when absent or unreadable.
 */
export function retryAfterSeconds(headers: Headers): number | null {
  const v = headers.get("retry-after");
  if (v === null || v.trim() === "") return null;
  const n = Number(v);
  if (Number.isFinite(n)) return Math.max(0, n);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}
