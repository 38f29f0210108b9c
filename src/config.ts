import { usdToMicros } from "./money.ts";

/**
 * Brute-force limits of the public account routes (issue "Hardening" 5), from the environment:
 * failed logins per email and per client address in a window, registrations per client address.
 */
export interface AuthLimits {
  /** `LOGIN_FAILURES_PER_EMAIL` (default 10) failed logins of one email per window. */
  loginFailuresPerEmail: number;
  /** `LOGIN_FAILURES_PER_ADDRESS` (default 30) failed logins from one client address per window. */
  loginFailuresPerAddress: number;
  /** `LOGIN_WINDOW_S` (default 900): the failed-login window, seconds. */
  loginWindowS: number;
  /** `REGISTRATIONS_PER_ADDRESS` (default 10) registrations from one client address per window. */
  registrationsPerAddress: number;
  /** `REGISTRATION_WINDOW_S` (default 3600): the registration window, seconds. */
  registrationWindowS: number;
}

/**
 * Configuration from the environment (decision D11). This is the only module that reads `process.env`;
 * everything else receives a {@link Config}. Invalid values fail at boot with a message naming the
 * variable.
 */

export interface Config {
  /** TCP port to listen on. */
  port: number;
  /** Interface to bind. */
  host: string;
  /** Base URL used in links the gateway hands out (blob URLs, voice previews). No trailing slash. */
  publicBaseUrl: string;
  /** `postgres://...` or an SQLite path. */
  databaseUrl: string;
  /** Most PostgreSQL connections this process opens. */
  databasePoolSize: number;
  /**
   * `DATABASE_PREPARED_STATEMENTS` (`on`, default, or `off`): on PostgreSQL the hot statements run as
   * named prepared statements, parsed and planned once per connection. `off` for a pooler in transaction
   * mode that cannot keep them (PgBouncer before 1.21, or without `max_prepared_statements`).
   */
  databasePreparedStatements: boolean;
  /**
   * `SQLITE_LEDGER_THREAD` (`on`, default, or `off`): on an SQLite file, the holds, captures and releases
   * of paid calls run on a writer thread of their own (billing/ledger-writer.ts), so the event loop keeps
   * serving requests meanwhile. `off` runs them on the event loop.
   */
  sqliteLedgerThread: boolean;
  /** Redis for shared limits and pools, or null for in-process. */
  redisUrl: string | null;
  /** Prefix of every Redis key (several deployments, or test runs, can share one Redis). */
  redisPrefix: string;
  /** When the limit store (Redis) is unreachable: `open` serves without limits, `closed` answers 503. */
  limitsOnStoreError: "open" | "closed";
  /** `file:<dir>` or `s3://bucket/prefix`. */
  storageUrl: string;
  /**
   * S3 connection for `s3://` storage: `S3_ENDPOINT` (unset: AWS), `AWS_REGION` (us-east-1),
   * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` (unset: the SDK's default
   * credential chain), `S3_FORCE_PATH_STYLE` (true/false; default true with an endpoint).
   */
  s3: {
    endpoint?: string;
    region: string;
    accessKeyId?: string;
    secretAccessKey?: string;
    sessionToken?: string;
    forcePathStyle?: boolean;
  };
  /** Bearer token of the operator API (D9); null turns the operator API off (404). */
  adminToken: string | null;
  /** Seconds after which the sweep refunds a video job whose worker stopped reporting. */
  sweepVideoAfterS: number;
  /** Same for image jobs. */
  sweepImageAfterS: number;
  /**
   * Seconds after which an open hold of a synchronous call (no job) is presumed orphaned by a dead
   * process and released. Longer than any synchronous call can take.
   */
  sweepSyncHoldsAfterS: number;
  /**
   * True when `SWEEP_SYNC_HOLDS_AFTER_S` was set: the services keep it as it is. Otherwise they raise the
   * default to cover the chat fallback chain of every text source, `UPSTREAMS` ones included.
   */
  sweepSyncHoldsAfterSSet: boolean;
  /**
   * Realtime sockets (D42, D43): `REALTIME_HOLD_CHARS` (1000) characters of speech one block of a
   * socket's hold covers; `REALTIME_MAX_SESSION_S` (3600) the longest a socket stays open;
   * `REALTIME_HEARTBEAT_MS` (5000, at most 5000) how often an open socket persists its running count; and
   * `REALTIME_SWEEP_AFTER_S` (30, at least twice the heartbeat) after which the sweep settles the hold of
   * a socket whose heartbeat stopped (its process died).
   */
  realtime: { holdChars: number; maxSessionS: number; heartbeatMs: number; sweepAfterS: number };
  /**
   * `JOB_LEASE_S` (D28): a job on a real source whose runner has not heartbeat it for this long may be
   * taken over by another runner, which resumes it by polling. Default 30, at most half the smaller
   * sweep threshold (the default shrinks with them).
   */
  jobLeaseS: number;
  /**
   * OpenAI-compatible upstreams serving text models (`TEXT_UPSTREAMS`, JSON array of
   * `{name, baseUrl, apiKey, families?, timeoutMs?}`); a family with none is served by the simulator.
   */
  textUpstreams: { name: string; baseUrl: string; apiKey: string; families: string[] | null; timeoutMs: number }[];
  /**
   * `UPSTREAMS` (D25): `setting` is the value as given (an inline JSON array or the path of a JSON file;
   * null when unset) and `lookup` reads the environment variables its `env:VARNAME` keys name. Parsed and
   * validated by upstreams/config.ts when the services start (it checks families against the catalog,
   * which lies above this module); an invalid value stops the start.
   */
  upstreams: { setting: string | null; lookup: (name: string) => string | undefined };
  /** Multiplier of the simulator's typical latencies; 0 answers at once. */
  simLatencyScale: number;
  /**
   * `SIM_IMAGES`: `draw` (default) draws every simulated image from its prompt; `placeholder` answers a
   * flat grey image of the requested size, encoded once per size (benchmarks of the gateway's own work).
   */
  simImages: "draw" | "placeholder";
  /** pino level. */
  logLevel: string;
  /** Largest request body, bytes (spec: media request body 25 MB). */
  bodyLimitBytes: number;
  /**
   * `BODY_BUDGET_MB` (default 64, at least the body limit's 25): bytes of request bodies one process holds
   * at once, counted as they arrive (body-budget.ts).
   */
  bodyBudgetBytes: number;
  /** `BODY_IDLE_TIMEOUT_S` (default 15): a request body that sends nothing for this long is abandoned (408). */
  bodyIdleTimeoutMs: number;
  /**
   * `REQUEST_TIMEOUT_S` (default 300, 0: none): the longest a whole request (head and body) may take to
   * arrive (Fastify's `requestTimeout`, Node's `server.requestTimeout`); then 408 and the connection closed.
   */
  requestTimeoutMs: number;
  /**
   * `METRICS_TOKEN`: with it, `GET /metrics` on the API port needs `Authorization: Bearer <token>`
   * (at least 16 characters). Null: the API port does not serve metrics.
   */
  metricsToken: string | null;
  /**
   * `AUTH_CACHE_MS` (default 2000, 0 disables): how long a resolved API key is reused without a database
   * read; the longest a key deleted or a limit changed by another process keeps its old effect here.
   */
  authCacheMs: number;
  /**
   * `TRUST_PROXY`: the proxies whose `X-Forwarded-For` gives the client address (comma list of
   * addresses, CIDRs or the names `loopback`, `linklocal`, `uniquelocal`); null: the TCP peer is the client.
   */
  trustProxy: string[] | null;
  /** Failed-login and registration limits (issue "Hardening" 5). */
  authLimits: AuthLimits;
  /** `METRICS_PORT`: a separate metrics listener (`GET /metrics`, no token) on `metricsHost`; null: none. */
  metricsPort: number | null;
  /** `METRICS_HOST`: the metrics listener's address (default 127.0.0.1, loopback only). */
  metricsHost: string;
  /**
   * `WEBHOOK_ALLOW_PRIVATE=1` (D31, development and tests): webhook URLs may be `http://` and point at
   * private or loopback addresses. Default false: `https://` and public addresses only.
   */
  webhookAllowPrivate: boolean;
  /**
   * `WEBHOOK_RETRY_SCHEDULE_S` (D31): seconds between a failed webhook attempt and the next, one per retry
   * (a comma list). Default 5, 30, 120, 600, 1800, 3600, 10800, 21600, 43200, 86400.
   */
  webhookRetryScheduleS: number[];
  /** Stripe Checkout top-ups (D33). */
  payments: PaymentsConfig;
  /**
   * `MODEL_SHUTDOWN_DATES` (D35): model id -> shutdown day `YYYY-MM-DD` (UTC), from a comma list of
   * `<model id>=<YYYY-MM-DD>`; empty when unset. From that day the model answers 410 `model_retired`. The
   * ids are checked against the catalog when the services start (catalog/models.ts
   * `configureModelLifecycle`), which lies above this module.
   */
  modelShutdownDates: Readonly<Record<string, string>>;
  /** OpenTelemetry tracing (D40), or null: off (neither OTLP endpoint variable is set). */
  tracing: TracingConfig | null;
  /**
   * `FOCUS_PROVIDER_NAME` (default `media-gateway`): who sells, makes and invoices the calls in the FOCUS
   * export (`GET /v1/usage/export`): its `ProviderName`, `PublisherName` and `InvoiceIssuerName`.
   */
  focusProviderName: string;
}

/**
 * OpenTelemetry tracing (D40) from the standard `OTEL_*` variables. On when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not `true`); spans go out
 * over OTLP/HTTP with JSON bodies.
 */
export interface TracingConfig {
  /**
   * Where spans are posted: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
   * `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended (the OTLP rule for the signal path).
   */
  url: string;
  /**
   * Headers of every export (`OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_TRACES_HEADERS`,
   * `key=value` pairs, comma separated, values URL-decoded). They may hold a collector's token: never log them.
   */
  headers: Record<string, string>;
  /** `OTEL_SERVICE_NAME` (default `media-gateway`): the resource's `service.name`. */
  serviceName: string;
  /** `OTEL_RESOURCE_ATTRIBUTES`: more resource attributes (`key=value` pairs, comma separated). */
  resourceAttributes: Record<string, string>;
  /** `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` / `OTEL_EXPORTER_OTLP_TIMEOUT` (default 10000): one export's limit, ms. */
  timeoutMs: number;
  /**
   * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: the upstream spans carry the call's input
   * (chat messages, the text to speak, a prompt) as `gen_ai.input.messages`. Default false: no user text
   * in any span.
   */
  captureContent: boolean;
}

/**
 * Stripe Checkout top-ups (D33): `STRIPE_SECRET_KEY`, `STRIPE_WEBHOOK_SECRET`, `STRIPE_API_BASE`,
 * `TOPUP_MIN_USD`, `TOPUP_MAX_USD`. Without a secret key both payment routes answer 404; with a key but no
 * webhook secret, the webhook route does.
 */
export interface PaymentsConfig {
  /** `STRIPE_SECRET_KEY` (`sk_live_...`, `sk_test_...` or a restricted `rk_...` key), or null: payments off. */
  stripeSecretKey: string | null;
  /** `STRIPE_WEBHOOK_SECRET` (`whsec_...`, the signing secret of the webhook endpoint), or null. */
  stripeWebhookSecret: string | null;
  /**
   * `STRIPE_API_BASE` (default `https://api.stripe.com`): where the Stripe SDK sends its calls, as
   * protocol, host and port (tests and `npm run fake-stripe` point it at the loopback fake).
   */
  stripeApiBase: { protocol: "http" | "https"; host: string; port: number };
  /** `TOPUP_MIN_USD` (default 5): the smallest top-up, micro-USD (a whole number of cents; allowed itself). */
  topupMinMicros: number;
  /** `TOPUP_MAX_USD` (default 10000): the largest top-up, micro-USD (a whole number of cents; allowed itself). */
  topupMaxMicros: number;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return n;
}

function num(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new Error(`${name} must be a number from ${min} to ${max}, got '${raw}'`);
  }
  return n;
}

/** Total time of one call to a text upstream when its entry names none (`timeoutMs`, `timeout_s`), ms. */
export const DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS = 60_000;

function parseTextUpstreams(raw: string | undefined): Config["textUpstreams"] {
  if (!raw) return [];
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    throw new Error("TEXT_UPSTREAMS must be a JSON array of {name, baseUrl, apiKey, families?, timeoutMs?}");
  }
  if (!Array.isArray(list)) throw new Error("TEXT_UPSTREAMS must be a JSON array");
  return list.map((u: unknown, i: number) => {
    const o = u as Record<string, unknown>;
    if (typeof o?.name !== "string" || typeof o.baseUrl !== "string" || typeof o.apiKey !== "string") {
      throw new Error(`TEXT_UPSTREAMS[${i}] needs string name, baseUrl and apiKey`);
    }
    const families = Array.isArray(o.families) ? o.families.filter((f): f is string => typeof f === "string") : null;
    const timeoutMs = typeof o.timeoutMs === "number" && o.timeoutMs > 0 ? o.timeoutMs : DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS;
    return { name: o.name, baseUrl: o.baseUrl.replace(/\/+$/, ""), apiKey: o.apiKey, families, timeoutMs };
  });
}

/**
 * The longest a synchronous paid call may legitimately keep its hold open, seconds, without configured
 * upstreams: an `audio_url` download (60 s) followed by one upstream call (60 s, the default upstream
 * timeout).
 */
export const BUILT_IN_SYNC_CALL_S = 120;

/** Added to the longest synchronous call before a hold counts as orphaned, seconds. */
export const SYNC_HOLD_MARGIN_S = 60;

/**
 * The longest synchronous call, seconds: the built-in budget, or the text upstreams' timeouts added up
 * (a chat request may fall back through every source in turn), whichever is longer.
 */
export function longestSyncCallS(textUpstreams: readonly { timeoutMs: number }[]): number {
  const fallbackChain = textUpstreams.reduce((sum, u) => sum + u.timeoutMs, 0) / 1000;
  return Math.ceil(Math.max(BUILT_IN_SYNC_CALL_S, fallbackChain));
}

/**
 * `SWEEP_SYNC_HOLDS_AFTER_S` (issue "Hardening" 8): how old an open hold of a synchronous call must be
 * before the sweep releases it as orphaned by a dead process. Default: {@link longestSyncCallS} +
 * {@link SYNC_HOLD_MARGIN_S} (180 s without text upstreams). An operator may set less (tests with fast
 * simulated calls do), at the risk of releasing the hold of a call still running, which then goes
 * uncharged.
 */
function sweepSyncHoldsAfterS(env: Env, textUpstreams: readonly { timeoutMs: number }[]): number {
  return int(env, "SWEEP_SYNC_HOLDS_AFTER_S", longestSyncCallS(textUpstreams) + SYNC_HOLD_MARGIN_S, 1, 86400);
}

/**
 * The realtime socket settings (see {@link Config.realtime}).
 * @throws Error naming the variable when `REALTIME_SWEEP_AFTER_S` is less than twice the heartbeat.
 */
function realtimeSettings(env: Env): Config["realtime"] {
  const heartbeatMs = int(env, "REALTIME_HEARTBEAT_MS", 5000, 100, 5000);
  const sweepAfterS = int(env, "REALTIME_SWEEP_AFTER_S", 30, 1, 86400);
  if (sweepAfterS * 1000 < 2 * heartbeatMs) throw new Error(`REALTIME_SWEEP_AFTER_S must be at least twice REALTIME_HEARTBEAT_MS (${(2 * heartbeatMs) / 1000} s), got ${sweepAfterS}`);
  return {
    holdChars: int(env, "REALTIME_HOLD_CHARS", 1000, 1, 1_000_000),
    maxSessionS: int(env, "REALTIME_MAX_SESSION_S", 3600, 1, 86400),
    heartbeatMs,
    sweepAfterS,
  };
}

/**
 * `JOB_LEASE_S`: default 30 s, or half the smaller of `SWEEP_IMAGE_AFTER_S` and `SWEEP_VIDEO_AFTER_S`
 * when that is less (at least 1 s), so a lapsed lease is taken over well before the sweep refunds the job.
 * @throws Error naming the variable when set above half the smaller sweep threshold.
 */
function jobLeaseS(env: Env): number {
  const half = Math.max(1, Math.floor(Math.min(int(env, "SWEEP_IMAGE_AFTER_S", 420, 1, 86400), int(env, "SWEEP_VIDEO_AFTER_S", 720, 1, 86400)) / 2));
  const value = int(env, "JOB_LEASE_S", Math.min(30, half), 1, 86400);
  if (value > half) throw new Error(`JOB_LEASE_S must be at most half the smaller sweep threshold (${half} s), got ${value}`);
  return value;
}

/** `METRICS_TOKEN`, at least 16 characters when set (a bearer secret guessable by nobody). */
function metricsToken(env: Env): string | null {
  const raw = env.METRICS_TOKEN;
  if (raw === undefined || raw === "") return null;
  if (raw.length < 16) throw new Error("METRICS_TOKEN must be at least 16 characters");
  return raw;
}

/** The retry schedule of D31, seconds. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE_S = [5, 30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200, 86_400];

/** `WEBHOOK_RETRY_SCHEDULE_S`: a comma list of 1 to 50 positive numbers of seconds (fractions allowed, at most a week each). */
function webhookRetrySchedule(env: Env): number[] {
  const raw = env.WEBHOOK_RETRY_SCHEDULE_S;
  if (raw === undefined || raw.trim() === "") return DEFAULT_WEBHOOK_RETRY_SCHEDULE_S;
  const parts = raw.split(",").map((x) => x.trim());
  const values = parts.map(Number);
  if (parts.length > 50 || values.some((v, i) => parts[i] === "" || !Number.isFinite(v) || v <= 0 || v > 604_800)) {
    throw new Error(`WEBHOOK_RETRY_SCHEDULE_S must be a comma list of 1 to 50 positive numbers of seconds (at most 604800 each), got '${raw}'`);
  }
  return values;
}

/** A real calendar day written `YYYY-MM-DD`. */
function isCalendarDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === text;
}

/**
 * `MODEL_SHUTDOWN_DATES` (D35): a comma list of `<model id>=<YYYY-MM-DD>`, each id once; unset or empty: no
 * shutdown dates. Whether each id is a catalog model is checked later, when the services start.
 * @throws Error naming the variable for a malformed entry, an impossible date or a repeated id.
 */
function modelShutdownDates(env: Env): Record<string, string> {
  const raw = env.MODEL_SHUTDOWN_DATES;
  const out: Record<string, string> = {};
  if (raw === undefined || raw.trim() === "") return out;
  for (const part of raw.split(",").map((x) => x.trim())) {
    const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*=\s*(\S+)$/.exec(part);
    if (m === null || !isCalendarDay(m[2])) {
      throw new Error(`MODEL_SHUTDOWN_DATES must be a comma list of <model id>=<YYYY-MM-DD>, got '${part}'`);
    }
    if (Object.hasOwn(out, m[1])) throw new Error(`MODEL_SHUTDOWN_DATES names ${m[1]} twice`);
    out[m[1]] = m[2];
  }
  return out;
}

/** `key=value,key2=value2` (the OTEL list syntax), values URL-decoded; `name` is the variable, for the error. */
function keyValueList(env: Env, name: string): Record<string, string> {
  const raw = env[name];
  const out: Record<string, string> = {};
  if (raw === undefined || raw.trim() === "") return out;
  for (const part of raw.split(",")) {
    const at = part.indexOf("=");
    const key = at < 0 ? "" : part.slice(0, at).trim();
    if (key === "") throw new Error(`${name} must be a comma list of key=value pairs`);
    let value = part.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // Not percent-encoded: taken as written.
    }
    out[key] = value;
  }
  return out;
}

/** An absolute http(s) URL, or an Error naming the variable (never its value: it may hold credentials). */
function httpUrl(raw: string, name: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) throw new Error(`${name} must be an http(s) URL`);
  return url.toString();
}

/**
 * The tracing settings of D40, or null when tracing is off: no OTLP endpoint, or `OTEL_SDK_DISABLED=true`.
 * @throws Error naming the variable for an invalid URL, header list or timeout, or a protocol other than
 *   `http/json` (the exporter this gateway ships speaks OTLP/HTTP with JSON bodies only).
 */
function tracingConfig(env: Env): TracingConfig | null {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if ((traces === undefined || traces === "") && (base === undefined || base === "")) return null;
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return null;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/json";
  if (protocol !== "http/json") {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/json (this gateway exports OTLP over HTTP with JSON bodies), got '${protocol}'`);
  }
  const url =
    traces !== undefined && traces !== ""
      ? httpUrl(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
      : `${httpUrl(base!, "OTEL_EXPORTER_OTLP_ENDPOINT").replace(/\/+$/, "")}/v1/traces`;
  const timeoutName = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT";
  return {
    url,
    headers: { ...keyValueList(env, "OTEL_EXPORTER_OTLP_HEADERS"), ...keyValueList(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS") },
    serviceName: env.OTEL_SERVICE_NAME || "media-gateway",
    resourceAttributes: keyValueList(env, "OTEL_RESOURCE_ATTRIBUTES"),
    timeoutMs: int(env, timeoutName, 10_000, 1, 600_000),
    captureContent: (env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? "").trim().toLowerCase() === "true",
  };
}

/** Micro-USD in a cent. */
const MICROS_PER_CENT = 10_000;
/** Stripe's smallest and largest USD charge (0.50 and 999,999.99 USD), micro-USD. */
const STRIPE_MIN_MICROS = 500_000;
const STRIPE_MAX_MICROS = 999_999_990_000;

/** A top-up bound in USD: a whole number of cents within what Stripe can charge; micro-USD. */
function topupBound(env: Env, name: string, def: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  const micros = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? usdToMicros(raw) : null;
  if (micros === null || micros % MICROS_PER_CENT !== 0 || micros < STRIPE_MIN_MICROS || micros > STRIPE_MAX_MICROS) {
    throw new Error(`${name} must be a USD amount in whole cents from 0.50 to 999999.99, got '${raw}'`);
  }
  return micros;
}

/** `STRIPE_API_BASE`: an `http(s)://host[:port]` URL without a path, split as the Stripe SDK takes it. */
function stripeApiBase(env: Env): PaymentsConfig["stripeApiBase"] {
  const raw = env.STRIPE_API_BASE || "https://api.stripe.com";
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || url.pathname.replace(/\/+$/, "") !== "" || url.search !== "" || url.username !== "" || url.password !== "") {
    throw new Error(`STRIPE_API_BASE must be an http(s)://host[:port] URL without a path, got '${raw}'`);
  }
  const protocol = url.protocol === "http:" ? "http" : "https";
  return { protocol, host: url.hostname, port: url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port) };
}

/** The payment settings (D33); a bound or URL that is invalid, or a minimum above the maximum, stops the start. */
function paymentsConfig(env: Env): PaymentsConfig {
  const topupMinMicros = topupBound(env, "TOPUP_MIN_USD", 5 * 1_000_000);
  const topupMaxMicros = topupBound(env, "TOPUP_MAX_USD", 10_000 * 1_000_000);
  if (topupMinMicros > topupMaxMicros) throw new Error("TOPUP_MIN_USD must not be above TOPUP_MAX_USD");
  return {
    stripeSecretKey: env.STRIPE_SECRET_KEY || null,
    stripeWebhookSecret: env.STRIPE_WEBHOOK_SECRET || null,
    stripeApiBase: stripeApiBase(env),
    topupMinMicros,
    topupMaxMicros,
  };
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(", ")}, got '${raw}'`);
  return raw as T;
}

/**
 * Builds the configuration from `env` (default `process.env`). Throws an Error naming the variable when
 * a value is invalid.
 */
export function loadConfig(env: Env = process.env): Config {
  const port = int(env, "PORT", 8080, 0, 65535);
  const host = env.HOST || "127.0.0.1";
  const defaultBase = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const publicBaseUrl = (env.PUBLIC_BASE_URL || defaultBase).replace(/\/+$/, "");
  try {
    new URL(publicBaseUrl);
  } catch {
    throw new Error(`PUBLIC_BASE_URL must be an absolute URL, got '${publicBaseUrl}'`);
  }
  const textUpstreams = parseTextUpstreams(env.TEXT_UPSTREAMS);
  return {
    port,
    host,
    publicBaseUrl,
    databaseUrl: env.DATABASE_URL || "sqlite:./data/gateway.db",
    databasePoolSize: int(env, "DATABASE_POOL_SIZE", 20, 1, 1000),
    databasePreparedStatements: oneOf(env, "DATABASE_PREPARED_STATEMENTS", ["on", "off"] as const, "on") === "on",
    sqliteLedgerThread: oneOf(env, "SQLITE_LEDGER_THREAD", ["on", "off"] as const, "on") === "on",
    redisUrl: env.REDIS_URL || null,
    redisPrefix: env.REDIS_PREFIX || "gw",
    limitsOnStoreError: oneOf(env, "LIMITS_ON_STORE_ERROR", ["open", "closed"] as const, "open"),
    storageUrl: env.STORAGE_URL || "file:./data/blobs",
    s3: {
      endpoint: env.S3_ENDPOINT || undefined,
      region: env.AWS_REGION || "us-east-1",
      accessKeyId: env.AWS_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY || undefined,
      sessionToken: env.AWS_SESSION_TOKEN || undefined,
      forcePathStyle:
        env.S3_FORCE_PATH_STYLE === undefined || env.S3_FORCE_PATH_STYLE === ""
          ? undefined
          : oneOf(env, "S3_FORCE_PATH_STYLE", ["true", "false"] as const, "true") === "true",
    },
    adminToken: env.GATEWAY_ADMIN_TOKEN || null,
    sweepVideoAfterS: int(env, "SWEEP_VIDEO_AFTER_S", 720, 1, 86400),
    sweepImageAfterS: int(env, "SWEEP_IMAGE_AFTER_S", 420, 1, 86400),
    sweepSyncHoldsAfterS: sweepSyncHoldsAfterS(env, textUpstreams),
    realtime: realtimeSettings(env),
    sweepSyncHoldsAfterSSet: env.SWEEP_SYNC_HOLDS_AFTER_S !== undefined && env.SWEEP_SYNC_HOLDS_AFTER_S !== "",
    jobLeaseS: jobLeaseS(env),
    textUpstreams,
    upstreams: { setting: env.UPSTREAMS || null, lookup: (name) => env[name] },
    simLatencyScale: num(env, "SIM_LATENCY_SCALE", 1, 0, 100),
    simImages: oneOf(env, "SIM_IMAGES", ["draw", "placeholder"] as const, "draw"),
    logLevel: env.LOG_LEVEL || "info",
    bodyLimitBytes: 25 * 1024 * 1024,
    bodyBudgetBytes: int(env, "BODY_BUDGET_MB", 64, 25, 100_000) * 1024 * 1024,
    bodyIdleTimeoutMs: int(env, "BODY_IDLE_TIMEOUT_S", 15, 1, 3600) * 1000,
    requestTimeoutMs: int(env, "REQUEST_TIMEOUT_S", 300, 0, 86_400) * 1000,
    metricsToken: metricsToken(env),
    authCacheMs: int(env, "AUTH_CACHE_MS", 2000, 0, 60_000),
    trustProxy: env.TRUST_PROXY ? env.TRUST_PROXY.split(",").map((x) => x.trim()).filter((x) => x !== "") : null,
    authLimits: {
      loginFailuresPerEmail: int(env, "LOGIN_FAILURES_PER_EMAIL", 10, 1, 1_000_000),
      loginFailuresPerAddress: int(env, "LOGIN_FAILURES_PER_ADDRESS", 30, 1, 1_000_000),
      loginWindowS: int(env, "LOGIN_WINDOW_S", 900, 1, 86_400),
      registrationsPerAddress: int(env, "REGISTRATIONS_PER_ADDRESS", 10, 1, 1_000_000_000),
      registrationWindowS: int(env, "REGISTRATION_WINDOW_S", 3600, 1, 86_400),
    },
    metricsPort: env.METRICS_PORT ? int(env, "METRICS_PORT", 0, 0, 65535) : null,
    metricsHost: env.METRICS_HOST || "127.0.0.1",
    webhookAllowPrivate: oneOf(env, "WEBHOOK_ALLOW_PRIVATE", ["0", "1"] as const, "0") === "1",
    webhookRetryScheduleS: webhookRetrySchedule(env),
    payments: paymentsConfig(env),
    modelShutdownDates: modelShutdownDates(env),
    tracing: tracingConfig(env),
    focusProviderName: (env.FOCUS_PROVIDER_NAME ?? "").trim() || "media-gateway",
  };
}
