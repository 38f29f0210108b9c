/**
 * Benchmark helpers: start the gateway as a child process on its own database, a bare `node:http`
 * server for comparison, and run autocannon against either. Everything listens on loopback only.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { freePort } from "../test/helpers/process.ts";
import pg from "pg";
import { checkInvariants } from "./invariants.ts";

export const PG_ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const ADMIN_TOKEN = "bench-admin-token";

export interface Server {
  url: string;
  /** The gateway process id (gateway processes only), for its resident set size. */
  pid?: number;
  /**
   * Gateway processes only: what bench/probe.ts saw since the last call (event-loop delay, GC pauses,
   * CPU time so far, RSS), then reset.
   */
  probe?: () => Promise<ProbeReport>;
  /** Gateway processes only: its database URL. */
  databaseUrl?: string;
  /** Gateway processes only: another process (`serve` or `worker`) on the same database and blobs. */
  sibling?: (role: "serve" | "worker", env?: Record<string, string>) => Promise<Server>;
  stop(): Promise<void>;
}

/** One reading of bench/probe.ts. Delays and pauses in ms, CPU in ms since the process started, RSS in MB. */
export interface ProbeReport {
  eventLoopDelay: { p50: number; p90: number; p99: number; max: number; mean: number };
  gc: { count: number; totalMs: number; p99: number; max: number; byKind: Record<string, number> };
  cpuUserMs: number;
  cpuSystemMs: number;
  rssMb: number;
  /** process.memoryUsage() in MB (rss, heapTotal, heapUsed, external, arrayBuffers). */
  memoryMb: Record<string, number>;
}

/** Resident set size of process `pid`, in MB (Linux: /proc/<pid>/status, VmRSS). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) / 1024;
}

/** Polls `url` until it answers (the gateway is up) or the child exits. */
async function waitForHttp(child: ChildProcess, url: string): Promise<void> {
  let out = "";
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stdout?.on("data", () => {});
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${out.slice(-2000)}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not start: ${out.slice(-2000)}`);
}

async function waitForPort(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        child.stdout?.off("data", onData);
        child.stdout?.resume();
        resolve(m[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.once("exit", (code) => reject(new Error(`server exited (${code}): ${out.slice(-2000)}`)));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5000).unref();
  });
}

/** Whether PostgreSQL answers at {@link PG_ADMIN_URL}. */
export async function pgReachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * Starts `node src/main.ts serve` on a free port with a fresh database of `backend`. `stop()` stops it,
 * then checks the money invariants on its database (bench/invariants.ts) and throws when one is broken.
 */
export async function startGatewayProcess(
  backend: "sqlite" | "postgres",
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
  /** The checkout whose `src/main.ts` runs (default: this one); a benchmark's baseline of another commit. */
  cwd?: string,
): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "gw-bench-"));
  let databaseUrl = `sqlite:${join(dir, "gateway.db")}`;
  let dropPg: (() => Promise<void>) | null = null;
  if (backend === "postgres") {
    const name = `gwbench_${randomBytes(5).toString("hex")}`;
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    dropPg = async () => {
      const d = new pg.Client({ connectionString: PG_ADMIN_URL });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await d.end();
    };
  }
  const spawned = await spawnOn(databaseUrl, dir, "serve", env, nodeArgs, join(dir, "blobs"), cwd);
  let siblings = 0;
  return {
    ...spawned,
    databaseUrl,
    async sibling(role, extraEnv = {}) {
      return spawnOn(databaseUrl, join(dir, `sibling${siblings++}`), role, { ...env, ...extraEnv }, nodeArgs, join(dir, "blobs"));
    },
    async stop() {
      await spawned.stop();
      try {
        // Every run ends with the money invariants checked on what it left (docs/architecture.md 1, 2 and 9).
        const report = await checkInvariants(databaseUrl);
        if (report.problems.length > 0) throw new Error(`invariants broken on ${backend}:\n${report.problems.slice(0, 20).join("\n")}`);
        console.log(`invariants on ${backend}: hold for ${report.accounts} accounts (balance == ledger sum, no open hold, usage == ledger charges)`);
      } finally {
        if (dropPg) await dropPg();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Spawns `node src/main.ts <role>` on `databaseUrl` with the probe loaded; `serve` is ready when
 * `/healthz` answers, `worker` when it logs that it is ready. `stop()` only stops the process.
 */
async function spawnOn(
  databaseUrl: string,
  dir: string,
  role: "serve" | "worker",
  env: Record<string, string>,
  nodeArgs: string[],
  blobs = join(dir, "blobs"),
  cwd?: string,
): Promise<Server> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const probeFile = join(dir, "probe.jsonl");
  // As `npm start` runs it (package.json): the young generation's size.
  const child = spawn(process.execPath, ["--max-semi-space-size=16", ...nodeArgs, "--import", "./bench/probe.ts", "src/main.ts", role], {
    cwd,
    env: {
      ...process.env,
      BENCH_PROBE_FILE: probeFile,
      // As `npm start` runs it: type-stripped modules come from the compile cache once it is warm.
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? "node_modules/.cache/node-compile-cache",
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? "2",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      STORAGE_URL: `file:${blobs}`,
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      SIM_LATENCY_SCALE: "0",
      LOG_LEVEL: role === "worker" ? "info" : "warn",
      // The bench registers one customer per connection from 127.0.0.1.
      REGISTRATIONS_PER_ADDRESS: "1000000000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (role === "serve") await waitForHttp(child, `http://127.0.0.1:${port}/healthz`);
  else await waitForPort(child, /"msg":"worker (ready)"/);
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async probe() {
      const before = existsSync(probeFile) ? readFileSync(probeFile, "utf8").length : 0;
      child.kill("SIGUSR2");
      for (let i = 0; i < 100; i++) {
        await new Promise((r) => setTimeout(r, 20));
        const text = existsSync(probeFile) ? readFileSync(probeFile, "utf8") : "";
        if (text.length > before && text.endsWith("\n")) return JSON.parse(text.slice(before)) as ProbeReport;
      }
      throw new Error("the gateway's probe did not answer");
    },
    stop: () => stopChild(child),
  };
}

/** Starts a bare `node:http` server (child process) answering every request with `bytes`. */
export async function startBareServer(bytes: Uint8Array, contentType: string): Promise<Server> {
  const code = `
    const http = require("node:http");
    const body = Buffer.from(process.env.BODY_B64, "base64");
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": process.env.CT, "content-length": body.length });
        res.end(body);
      });
    });
    server.keepAliveTimeout = 65000;
    server.listen(0, "127.0.0.1", () => console.log("listening on port " + server.address().port));
  `;
  const child = spawn(process.execPath, ["-e", code], {
    env: { ...process.env, BODY_B64: Buffer.from(bytes).toString("base64"), CT: contentType },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const port = await waitForPort(child, /listening on port (\d+)/);
  return { url: `http://127.0.0.1:${port}`, stop: () => stopChild(child) };
}

/** JSON call helper. */
export async function call(url: string, method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, buf, json: () => JSON.parse(buf.toString()) };
}

/** A registered user with a large balance and (when the gateway has limits) lifted limits (D22). */
export async function benchUser(url: string): Promise<{ userId: string; apiKey: string }> {
  const email = `bench-${randomBytes(4).toString("hex")}@example.com`;
  const reg = await call(url, "POST", "/v1/auth/register", { email, password: "bench password" });
  if (reg.status !== 200) throw new Error(`register: ${reg.status} ${reg.buf}`);
  const { user_id, api_key } = reg.json();
  const dep = await call(
    url,
    "POST",
    `/v1/admin/users/${user_id}/deposits`,
    { amount_usd: 100000 },
    ADMIN_TOKEN,
  );
  if (dep.status !== 200) throw new Error(`deposit: ${dep.status} ${dep.buf}`);
  const lim = await call(
    url,
    "PUT",
    `/v1/admin/users/${user_id}/limits`,
    {
      rpm: 100_000_000,
      per_model_rpm: 100_000_000,
      audio_concurrent_per_provider: { alpha: 10_000, beta: 10_000 },
    },
    ADMIN_TOKEN,
  );
  if (lim.status !== 200) throw new Error(`limits: ${lim.status} ${lim.buf}`);
  return { userId: user_id, apiKey: api_key };
}

/** One autocannon measurement. Latencies in ms. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** Runs autocannon for `durationS` seconds with `connections` connections. */
export async function load(opts: {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationS: number;
  /** One API key per connection (many customers, as in production) instead of one shared key. */
  keys?: string[];
  /** A fixed total rate, requests per second across all connections (autocannon `overallRate`), instead of as fast as possible. */
  rate?: number;
}): Promise<LoadResult> {
  let next = 0;
  const keys = opts.keys;
  const r = await autocannon({
    url: opts.url,
    method: opts.method ?? "GET",
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections,
    duration: opts.durationS,
    ...(opts.rate === undefined ? {} : { overallRate: opts.rate }),
    setupClient: keys
      ? (client) => {
          client.setHeaders({ ...(opts.headers ?? {}), authorization: `Bearer ${keys[next++ % keys.length]}` });
        }
      : undefined,
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

/** Formats a table row. */
export function row(cells: (string | number)[], widths: number[]): string {
  return cells.map((c, i) => String(c).padEnd(widths[i] ?? 12)).join(" ");
}
