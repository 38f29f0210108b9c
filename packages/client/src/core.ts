/**
 * The base of the SDK: the typed openapi-fetch client over the generated document (`schema.ts`), and
 * the policy every call of the SDK goes through: a per-call `timeout` and `signal`, and retries with
 * exponential backoff and jitter that honour `Retry-After` (in the manner of openai-node).
 *
 * Retried: a lost connection, a timeout, and the answers 408, 429 and 5xx (or any answer that sets
 * `X-Should-Retry: true`), at most `maxRetries` times; never a `POST` or `PATCH` unless the call is
 * idempotent by its body (a job submit with `idempotency_key`, D3): a repeated payment-bearing call
 * could be charged twice. The wait before retry `n` (0-based) is the answer's `Retry-After` (seconds, or
 * `retry-after-ms`) when it gives one of at most 60 s, else `min(0.5 s * 2^n, 8 s)` less up to 25 %
 * jitter; an answer asking for more than 60 s is not retried but returned (thrown as its error, with
 * `retryAfterS`). Browser-safe: no Node modules.
 */
import createFetchClient, { type Client, type ClientOptions as FetchClientOptions } from "openapi-fetch";
import { APIConnectionError, APITimeoutError, gatewayError } from "./errors.ts";
import type { paths } from "./schema.ts";

/** The low-level typed client: `GET`, `POST`, `PUT`, `PATCH`, `DELETE`... keyed by the documented paths; one attempt per call. */
export type GatewayClient = Client<paths>;

/**
 * A low-level typed client for the gateway at `baseUrl` (no trailing slash needed): openapi-fetch over
 * the generated document, one attempt per call, no timeout. With `apiKey` (an API key or, on the
 * account endpoints, a session token) every call sends `Authorization: Bearer <apiKey>`. Calls resolve
 * to `{data, error, response}`: `data` is the parsed 2xx answer, `error` the D1 error body of a 4xx/5xx.
 * `options` are passed to openapi-fetch (for example `fetch`, or `headers` as a plain record). The SDK
 * ({@link APIClient}, `Gateway`) is built on it.
 *
 * ```ts
 * const api = createClient("http://localhost:8080", process.env.API_KEY);
 * const { data, error } = await api.GET("/v1/auth/me");
 * ```
 */
export function createClient(baseUrl: string, apiKey?: string, options: Omit<FetchClientOptions, "baseUrl"> = {}): GatewayClient {
  const own = options.headers as Record<string, string> | undefined;
  const headers = apiKey ? { ...own, authorization: `Bearer ${apiKey}` } : own;
  return createFetchClient<paths>({ ...options, baseUrl: baseUrl.replace(/\/+$/, ""), headers });
}

/** Options of a client ({@link APIClient}, `Gateway`). */
export interface ClientOptions {
  /** The gateway's address, e.g. `http://127.0.0.1:8080` (no trailing slash needed). */
  baseUrl: string;
  /** An API key (`gw_...`) or a session token, sent as `Authorization: Bearer`; none for public routes. */
  apiKey?: string;
  /**
   * The organization every call acts for (D41), sent as `X-Svc-Org: <org_id>`. With a session token it
   * picks one of the user's organizations (default, without it: the personal one); an API key acts for
   * its own organization only, so naming another one answers 404 `org_not_found` (`NotFoundError`).
   * `Gateway.withOrg` gives a client for another organization.
   */
  org?: string | null;
  /** Retries of a retryable failure (see the module's docstring); default 2. */
  maxRetries?: number;
  /** Milliseconds an attempt may wait for the answer's headers (not for the body); default 600 000 (10 min). */
  timeout?: number;
  /** Headers sent with every call. */
  defaultHeaders?: Record<string, string>;
  /** The fetch to use (default the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Options of one call; each overrides the client's. */
export interface RequestOptions {
  /** Milliseconds an attempt may wait for the answer's headers; past it: `APITimeoutError` (after the retries). */
  timeout?: number;
  /** Retries of a retryable failure for this call (0: one attempt). */
  maxRetries?: number;
  /** Aborts the call (and the reading of its body): rejects with the signal's reason, no retry. */
  signal?: AbortSignal;
  /** Extra headers of this call (e.g. `X-Svc-Simulate: fail` for the simulator, D10). */
  headers?: Record<string, string>;
}

/** The answer of an openapi-fetch call. */
export interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The header that names the organization a call acts for (D41). */
export const ORG_HEADER = "x-svc-org";
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_TIMEOUT_MS = 600_000;
/** A `Retry-After` above this is not waited out by the SDK: the error goes to the caller. */
const MAX_RETRY_AFTER_MS = 60_000;
const INITIAL_RETRY_DELAY_MS = 500;
const MAX_RETRY_DELAY_MS = 8_000;
/** Methods that HTTP defines as idempotent: retried whatever their body. */
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/**
 * The client every resource of the SDK calls through: the typed low-level client ({@link raw}) and the
 * retry and timeout policy ({@link requestInit}). `Gateway` extends it with the resource namespaces.
 */
export class APIClient {
  /** The gateway's address, without trailing slash. */
  readonly baseUrl: string;
  /** Default retries of a call. */
  readonly maxRetries: number;
  /** Default timeout of an attempt, milliseconds. */
  readonly timeout: number;
  /** The organization the calls act for (`X-Svc-Org`, D41), or null: the credential's default one. */
  readonly org: string | null;
  /** The typed openapi-fetch client (key, base URL and organization applied); calls through it alone are neither retried nor timed out. */
  readonly raw: GatewayClient;
  /** The options the client was made with (kept to make a client for another organization). */
  protected readonly options: ClientOptions;
  private readonly fetchImpl: (request: Request) => Promise<Response>;

  constructor(options: ClientOptions) {
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.org = options.org ?? null;
    this.fetchImpl = options.fetch ?? ((request) => fetch(request));
    const headers = this.org === null ? options.defaultHeaders : { ...options.defaultHeaders, [ORG_HEADER]: this.org };
    this.raw = createClient(this.baseUrl, options.apiKey, { headers, fetch: this.fetchImpl });
  }

  /**
   * The openapi-fetch options that make one call follow the policy: a `fetch` that times out, aborts and
   * retries, and the call's extra headers. `idempotent` marks a `POST`/`PATCH` whose repetition is safe
   * (a submit with `idempotency_key`); other methods are retried by their HTTP semantics.
   */
  requestInit(options: RequestOptions = {}, idempotent = false): { fetch: (request: Request) => Promise<Response>; headers?: Record<string, string> } {
    const policy: RetryPolicy = {
      maxRetries: options.maxRetries ?? this.maxRetries,
      timeoutMs: options.timeout ?? this.timeout,
      signal: options.signal,
      idempotent,
    };
    return { fetch: retryingFetch(this.fetchImpl, policy), ...(options.headers ? { headers: options.headers } : {}) };
  }
}

/**
 * The parsed 2xx answer of an openapi-fetch call, or throws the {@link APIError} subclass of its status
 * (the D1 error body, status, headers, request id).
 */
export async function unwrap<T>(call: Promise<FetchResult<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw gatewayError(response, error);
  return data as T;
}

interface RetryPolicy {
  maxRetries: number;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  idempotent: boolean;
}

/** A fetch that applies `policy` to one request (see the module's docstring). */
function retryingFetch(base: (request: Request) => Promise<Response>, policy: RetryPolicy): (request: Request) => Promise<Response> {
  return async (request) => {
    const retryable = policy.idempotent || IDEMPOTENT_METHODS.has(request.method.toUpperCase());
    for (let attempt = 0; ; attempt++) {
      policy.signal?.throwIfAborted();
      const last = !retryable || attempt >= policy.maxRetries;
      // The original is kept unread for the next attempt; the last one may consume it.
      const sent = last ? request : request.clone();
      let response: Response;
      try {
        response = await attemptFetch(base, sent, policy.timeoutMs, policy.signal);
      } catch (err) {
        if (last || !(err instanceof APIConnectionError)) throw err;
        await sleep(backoffMs(attempt), policy.signal);
        continue;
      }
      if (last || !shouldRetry(response)) return response;
      const delay = retryAfterMs(response.headers) ?? backoffMs(attempt);
      if (delay > MAX_RETRY_AFTER_MS) return response;
      await response.body?.cancel().catch(() => {});
      await sleep(delay, policy.signal);
    }
  };
}

/**
 * One attempt: the answer once its headers came. Throws the signal's reason when `signal` aborts,
 * {@link APITimeoutError} when `timeoutMs` passes first, {@link APIConnectionError} for a network failure.
 * The timeout stops once the headers came; the signal keeps governing the body.
 */
async function attemptFetch(base: (request: Request) => Promise<Response>, request: Request, timeoutMs: number, signal: AbortSignal | undefined): Promise<Response> {
  const timer = new AbortController();
  // The timeout both aborts the fetch and settles the attempt by itself: a fetch that is slow to notice
  // its aborted signal (seen on a reused keep-alive connection) cannot hold the call past `timeoutMs`, nor
  // past the caller's abort.
  let timeUp!: (reason: unknown) => void;
  const timedOut = new Promise<never>((_resolve, reject) => (timeUp = reject));
  const handle = setTimeout(() => {
    timer.abort();
    timeUp(new Error("timeout"));
  }, timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timer.signal]) : timer.signal;
  const onAbort = () => timeUp(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([base(new Request(request, { signal: combined })), timedOut]);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (timer.signal.aborted) throw new APITimeoutError({ message: `Request timed out after ${timeoutMs} ms.`, cause: err });
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : null;
    const detail = (cause as { code?: string } | null)?.code ?? cause?.message;
    throw new APIConnectionError({ message: detail ? `Connection error: ${detail}` : "Connection error.", cause: err });
  } finally {
    clearTimeout(handle);
    signal?.removeEventListener("abort", onAbort);
  }
}

/** Whether an answer is worth another attempt: `X-Should-Retry` when set, else 408, 429 and 5xx. */
function shouldRetry(response: Response): boolean {
  const hint = response.headers.get("x-should-retry");
  if (hint === "true") return true;
  if (hint === "false") return false;
  return response.status === 408 || response.status === 429 || response.status >= 500;
}

/** The wait an answer asks for, milliseconds: `retry-after-ms`, else `Retry-After` (seconds or an HTTP date); null when neither. */
function retryAfterMs(headers: Headers): number | null {
  const ms = Number(headers.get("retry-after-ms") ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** The backoff before retry `attempt` (0-based), milliseconds: 0.5 s doubling to at most 8 s, less up to 25 % jitter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(INITIAL_RETRY_DELAY_MS * 2 ** attempt, MAX_RETRY_DELAY_MS);
  return base * (1 - Math.random() * 0.25);
}

/** Waits `ms`; rejects with the signal's reason when `signal` aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
