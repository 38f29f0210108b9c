/**
 * The error the client helpers throw for an answer that is not 2xx: the gateway's D1 error body
 * (`{"error": {code, message, type, param}}`) lifted onto an `Error`, with the HTTP status and the
 * request id (`X-Svc-Request-Id`, D29) when the answer carried one. Nothing secret is in it: the
 * gateway never puts a key in an error (D1), and the helpers never copy request headers into one.
 */
export class GatewayError extends Error {
  /** HTTP status of the answer (0 when no answer came: a network failure). */
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

  constructor(init: { status: number; code: string; message: string; type?: string; param?: string | null; requestId?: string | null; retryAfterS?: number | null }) {
    super(init.message);
    this.name = "GatewayError";
    this.status = init.status;
    this.code = init.code;
    this.type = init.type ?? "api_error";
    this.param = init.param ?? null;
    this.requestId = init.requestId ?? null;
    this.retryAfterS = init.retryAfterS ?? null;
  }
}

/** The D1 error body, as far as the helpers read it. */
interface ErrorBody {
  error?: { code?: unknown; message?: unknown; type?: unknown; param?: unknown };
}

/**
 * A {@link GatewayError} for a non-2xx `response` whose body was already read into `body` (parsed JSON
 * or text, as openapi-fetch hands it back). A body that is not a D1 error (a proxy's HTML page, say)
 * becomes code `http_<status>` with the first 200 characters of the text as message.
 */
export function gatewayError(response: Response, body: unknown): GatewayError {
  const e = (typeof body === "object" && body !== null ? (body as ErrorBody).error : undefined) ?? {};
  const text = typeof body === "string" ? body.trim().slice(0, 200) : "";
  return new GatewayError({
    status: response.status,
    code: typeof e.code === "string" ? e.code : `http_${response.status}`,
    message: typeof e.message === "string" ? e.message : text || `HTTP ${response.status} ${response.statusText}`.trim(),
    type: typeof e.type === "string" ? e.type : undefined,
    param: typeof e.param === "string" ? e.param : null,
    requestId: response.headers.get("x-svc-request-id"),
    retryAfterS: retryAfterSeconds(response.headers),
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
