/**
 * What a started gateway says about itself (issue 28): the facts of the "gateway ready" log line (where
 * to point a browser, which database and blob storage it opened, which upstream sources it loaded) as
 * structured fields, a one-line `msg`, and the short block `npm start` prints for a person at a terminal.
 *
 * Never a secret: no database password, no S3 credentials, no upstream key, no URL path or query of an
 * upstream (only its host). Built from the configuration and the upstream registry after the services
 * opened them, so what it names is what the process really uses.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Config } from "../config.ts";
import type { Services } from "../services.ts";
import { UPSTREAM_FAMILIES } from "../upstreams/config.ts";
import { CONSOLE_DIST } from "./routes/console.ts";

/** The database as the ready line names it: the SQLite file, or the PostgreSQL server and database (never the password). */
export type DatabaseFacts =
  | { kind: "sqlite"; file: string }
  | { kind: "postgres"; host: string; database: string; user: string | null };

/** The blob storage as the ready line names it: the local folder, or the S3 bucket (never credentials). */
export type StorageFacts =
  | { kind: "local"; folder: string }
  | { kind: "s3"; bucket: string; prefix: string; endpoint: string | null; region: string };

/** One loaded upstream source (D25): its name, protocol, the families it serves, where it was configured, its host. */
export interface UpstreamFacts {
  name: string;
  protocol: string;
  families: string[];
  from: "UPSTREAMS" | "TEXT_UPSTREAMS";
  host: string;
}

/** The structured fields of the ready line (pino merges them into the JSON line). */
export interface ReadyFacts {
  url: string;
  /** The web console's address (`<base>/console/`); `GET /` redirects there. */
  console: string;
  /** False when `console/dist` is missing: the console URL then answers a page saying how to build it. */
  console_built: boolean;
  /** Swagger UI of the public API (`<base>/docs`). */
  api_docs: string;
  database: DatabaseFacts;
  storage: StorageFacts;
  /** Whether `UPSTREAMS` was set (an unset or empty value loads no source). */
  upstreams_setting: "set" | "unset";
  /** Every loaded source, `UPSTREAMS` entries first, then `TEXT_UPSTREAMS` ones; empty when none. */
  upstreams: UpstreamFacts[];
  /**
   * What the built-in simulator serves: `"every model"` without any source, else the D25 families no
   * source serves (`[]` when every family has a source).
   */
  simulator: "every model" | string[];
  admin_api: boolean;
  payments: string;
  metrics: string;
}

/** Names `databaseUrl` (config.ts) as storage/db.ts opens it: `postgres(ql)://` or an SQLite path (`sqlite:`/`file:` prefixes dropped, resolved against the working directory). */
export function databaseFacts(databaseUrl: string, cwd: string = process.cwd()): DatabaseFacts {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    try {
      const u = new URL(databaseUrl);
      return {
        kind: "postgres",
        host: u.host || u.searchParams.get("host") || "localhost",
        database: decodeURIComponent(u.pathname.replace(/^\//, "")) || "(default)",
        user: u.username ? decodeURIComponent(u.username) : null,
      };
    } catch {
      return { kind: "postgres", host: "(unparsed DATABASE_URL)", database: "(unparsed DATABASE_URL)", user: null };
    }
  }
  return { kind: "sqlite", file: resolve(cwd, databaseUrl.replace(/^(sqlite|file):(\/\/)?/, "")) };
}

/** Names `storageUrl` and the S3 options (config.ts) as storage/blobs.ts opens them; an endpoint is shown as its origin only. */
export function storageFacts(config: Pick<Config, "storageUrl" | "s3">, cwd: string = process.cwd()): StorageFacts {
  const url = config.storageUrl;
  if (url.startsWith("s3://")) {
    const rest = url.slice("s3://".length);
    const slash = rest.indexOf("/");
    let endpoint: string | null = null;
    if (config.s3.endpoint) {
      try {
        endpoint = new URL(config.s3.endpoint).origin;
      } catch {
        endpoint = "(unparsed S3_ENDPOINT)";
      }
    }
    return {
      kind: "s3",
      bucket: slash < 0 ? rest : rest.slice(0, slash),
      prefix: slash < 0 ? "" : rest.slice(slash + 1).replace(/\/+$/, ""),
      endpoint,
      region: config.s3.region,
    };
  }
  const dir = url.startsWith("file://") ? new URL(url).pathname : url.slice("file:".length);
  return { kind: "local", folder: resolve(cwd, dir) };
}

/**
 * The ready line's fields for a gateway listening on `config.publicBaseUrl` over `services`; `metrics`
 * is how the metrics are reached (main.ts knows the listener). `consoleDist` defaults to the bundle's folder.
 */
export function readyFacts(services: Pick<Services, "config" | "upstreams" | "payments">, metrics: string, consoleDist: string = CONSOLE_DIST): ReadyFacts {
  const { config } = services;
  const base = config.publicBaseUrl;
  const upstreams: UpstreamFacts[] = services.upstreams.states.map(({ source }) => ({
    name: source.name,
    protocol: source.protocol,
    families: [...source.families],
    from: source.origin,
    host: hostOf(source.baseUrl),
  }));
  const served = new Set(upstreams.flatMap((u) => u.families));
  return {
    url: base,
    console: `${base}/console/`,
    console_built: existsSync(join(consoleDist, "index.html")),
    api_docs: `${base}/docs`,
    database: databaseFacts(config.databaseUrl),
    storage: storageFacts(config),
    upstreams_setting: config.upstreams.setting === null || config.upstreams.setting.trim() === "" ? "unset" : "set",
    upstreams,
    simulator: upstreams.length === 0 ? "every model" : UPSTREAM_FAMILIES.filter((f) => !served.has(f)),
    admin_api: config.adminToken !== null,
    payments: services.payments === null ? "off" : services.payments.webhookEnabled ? "stripe" : "stripe (webhook off)",
    metrics,
  };
}

/** The database in a few words: `SQLite file /abs/gateway.db` or `PostgreSQL gateway on db:5432`. */
export function describeDatabase(d: DatabaseFacts): string {
  return d.kind === "sqlite" ? `SQLite file ${d.file}` : `PostgreSQL database ${d.database} on ${d.host}${d.user ? ` as ${d.user}` : ""}`;
}

/** The blob storage in a few words: `local folder /abs/blobs` or `S3 bucket media (prefix out/) at http://minio:9000`. */
export function describeStorage(s: StorageFacts): string {
  if (s.kind === "local") return `local folder ${s.folder}`;
  return `S3 bucket ${s.bucket}${s.prefix ? ` (prefix ${s.prefix}/)` : ""}${s.endpoint ? ` at ${s.endpoint}` : ` (AWS, ${s.region})`}`;
}

/**
 * The upstream sources in a few words: `none: every model on the built-in simulator (UPSTREAMS not set)`,
 * or `eleven (elevenlabs: alpha), fal-main (fal: imgA, vidA); simulator: beta, ...`.
 */
export function describeUpstreams(f: Pick<ReadyFacts, "upstreams" | "upstreams_setting" | "simulator">): string {
  if (f.upstreams.length === 0) {
    const why = f.upstreams_setting === "unset" ? "UPSTREAMS not set" : "UPSTREAMS lists no source";
    return `none: every model on the built-in simulator (${why})`;
  }
  const list = f.upstreams.map((u) => `${u.name} (${u.protocol}${u.from === "TEXT_UPSTREAMS" ? ", TEXT_UPSTREAMS" : ""}: ${u.families.join(", ")})`).join(", ");
  const sim = f.simulator === "every model" ? "every model" : f.simulator.length === 0 ? "nothing" : f.simulator.join(", ");
  return `${list}; simulator: ${sim}`;
}

/** The ready line's `msg`: one readable line naming the addresses, database, storage and upstreams. */
export function readyMessage(f: ReadyFacts): string {
  return [
    `gateway ready at ${f.url}`,
    `console ${f.console}${f.console_built ? "" : " (not built: npm run build:console)"}`,
    `API docs ${f.api_docs}`,
    `database ${describeDatabase(f.database)}`,
    `storage ${describeStorage(f.storage)}`,
    `upstreams ${describeUpstreams(f)}`,
  ].join("; ");
}

/**
 * The block printed for a person when the gateway's standard output is a terminal (`npm start` in a
 * shell): one fact per line, the addresses first. Ends with a newline.
 */
export function readySummary(f: ReadyFacts): string {
  const rows: [string, string][] = [
    ["Console", `${f.console}${f.console_built ? "" : "  (not built: run npm run build:console)"}`],
    ["API docs", f.api_docs],
    ["Database", describeDatabase(f.database)],
    ["Storage", describeStorage(f.storage)],
    ["Upstreams", describeUpstreams(f)],
    ["Operator API", f.admin_api ? "on (GATEWAY_ADMIN_TOKEN)" : "off (set GATEWAY_ADMIN_TOKEN)"],
    ["Payments", f.payments],
    ["Metrics", f.metrics],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return [`Gateway ready at ${f.url}`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join("\n") + "\n";
}

/** The host (`name[:port]`) of an upstream base URL, without credentials, path or query. */
function hostOf(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return "(unparsed base_url)";
  }
}
