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
  /** pino level. */
  logLevel: string;
  /** Largest request body, bytes (spec: media request body 25 MB). */
  bodyLimitBytes: number;
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
    const timeoutMs = typeof o.timeoutMs === "number" && o.timeoutMs > 0 ? o.timeoutMs : 60_000;
    return { name: o.name, baseUrl: o.baseUrl.replace(/\/+$/, ""), apiKey: o.apiKey, families, timeoutMs };
  });
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
  return {
    port,
    host,
    publicBaseUrl,
    databaseUrl: env.DATABASE_URL || "sqlite:./data/gateway.db",
    databasePoolSize: int(env, "DATABASE_POOL_SIZE", 20, 1, 1000),
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
    sweepSyncHoldsAfterS: int(env, "SWEEP_SYNC_HOLDS_AFTER_S", 900, 1, 86400),
    textUpstreams: parseTextUpstreams(env.TEXT_UPSTREAMS),
    upstreams: { setting: env.UPSTREAMS || null, lookup: (name) => env[name] },
    simLatencyScale: num(env, "SIM_LATENCY_SCALE", 1, 0, 100),
    logLevel: env.LOG_LEVEL || "info",
    bodyLimitBytes: 25 * 1024 * 1024,
  };
}
