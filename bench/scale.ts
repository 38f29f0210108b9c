/**
 * What users feel, per database (issue "Fast on the scale path", point 1), each row against its
 * baseline in the same run:
 * - saturated: one-word speech (`mp3_22050_32`, 32 customers on 32 connections) through the gateway
 *   and from a bare `node:http` server answering the same bytes: requests/s and their ratio;
 * - fixed rate: the same request evenly paced at `BENCH_RATE` (300) requests/s over 8 connections
 *   (bench/paced.ts): the latency the gateway adds at p50 and p99, with the gateway's event-loop delay
 *   and GC pauses during that run (bench/probe.ts);
 * - one hot account: 32 connections sharing one key;
 * - RSS idle (3 s after start, before any request, and 3 s after the first request), peak (sampled every
 *   100 ms under the saturated run) and after the load once the process has been idle long enough for
 *   its idle heap compaction (src/memory.ts, `IDLE_COMPACT_MS` + 1 s);
 * - per request of the saturated run: CPU time of the gateway process, and on PostgreSQL the commits and
 *   statements (`pg_stat_database`, `pg_stat_statements` when loaded) and Redis commands
 *   (`INFO stats`), for docs/capacity.md.
 * PostgreSQL runs with its limits in Redis (`BENCH_REDIS_URL`), as a cluster would.
 * And the scale-out row: two `serve` processes and one `worker` on one PostgreSQL and Redis against one
 * `serve` process, same run.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { Redis } from "ioredis";
import pg from "pg";
import { startFakeOpenAI } from "../fakes/openai-chat.ts";
import { IDLE_COMPACT_MS } from "../src/memory.ts";
import { DEMO_ALPHA_VOICE_ID } from "../src/upstreams/simulator/voices.ts";
import {
  ADMIN_TOKEN,
  benchUser,
  call,
  type LoadResult,
  load,
  rssMb,
  type Server,
  startBareServer,
  startGatewayProcess,
} from "./lib.ts";
import { type PacedResult, paced } from "./paced.ts";

const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const rate = Number(process.env.BENCH_RATE ?? 300);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

export const ONE_WORD = JSON.stringify({
  model: "alpha-flash-v2-5",
  input: "Hello.",
  voice_id: DEMO_ALPHA_VOICE_ID,
  response_format: "mp3_22050_32",
});
const JSON_HEADERS = { "content-type": "application/json" };

/** Database and Redis counters, read before and after a run to get per-request figures. */
interface Counters {
  commits: number;
  statements: number | null;
  redisCommands: number | null;
  /** CPU time (ms) of every `postgres` and every `redis-server` process on this machine so far. */
  postgresCpuMs: number;
  redisCpuMs: number;
}

/** CPU time (user + system, ms) of the processes on this machine whose command name is `name` (Linux /proc). */
export function processCpuMs(name: string): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      if (comm !== name) continue;
      const fields = stat.slice(close + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

async function readCounters(databaseUrl: string | null, redis: Redis | null): Promise<Counters> {
  let commits = 0;
  let statements: number | null = null;
  if (databaseUrl?.startsWith("postgres")) {
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    try {
      const r = await c.query("select xact_commit::bigint as n from pg_stat_database where datname = current_database()");
      commits = Number(r.rows[0].n);
      try {
        await c.query("create extension if not exists pg_stat_statements");
        const s = await c.query(
          "select coalesce(sum(calls), 0)::bigint as n from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())",
        );
        statements = Number(s.rows[0].n);
      } catch {
        statements = null; // pg_stat_statements not loaded (shared_preload_libraries)
      }
    } finally {
      await c.end();
    }
  }
  let redisCommands: number | null = null;
  if (redis) {
    const info = await redis.info("stats");
    redisCommands = Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? Number.NaN);
  }
  return { commits, statements, redisCommands, postgresCpuMs: processCpuMs("postgres"), redisCpuMs: processCpuMs("redis-server") };
}

/**
 * The statements PostgreSQL spent most time on since the last call (`pg_stat_statements`, then reset),
 * as printable lines: calls, mean and total execution time, and the start of the statement text.
 */
async function topStatements(databaseUrl: string, n = 6): Promise<string[]> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query(
      `select calls::bigint as calls, mean_exec_time as mean, total_exec_time as total, regexp_replace(query, '\\s+', ' ', 'g') as q
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
       order by total_exec_time desc limit ${n}`,
    );
    await c.query("select pg_stat_statements_reset()");
    return r.rows.map((row) => `${String(row.calls).padStart(7)} calls, mean ${Number(row.mean).toFixed(3)} ms, total ${Number(row.total).toFixed(0)} ms: ${String(row.q).slice(0, 110)}`);
  } catch {
    return ["(pg_stat_statements is not loaded: shared_preload_libraries)"];
  } finally {
    await c.end();
  }
}

/** Per-request resources of one run. */
interface PerRequest {
  cpuUs: number;
  postgresCpuUs: number | null;
  redisCpuUs: number | null;
  commits: number | null;
  statements: number | null;
  redisCommands: number | null;
}

async function measured<T extends { rps: number }>(
  gw: Server,
  redis: Redis | null,
  run: () => Promise<T>,
): Promise<{ result: T; per: PerRequest }> {
  const p0 = await gw.probe!();
  const c0 = await readCounters(gw.databaseUrl ?? null, redis);
  const t0 = performance.now();
  const result = await run();
  const seconds = (performance.now() - t0) / 1000;
  const p1 = await gw.probe!();
  const c1 = await readCounters(gw.databaseUrl ?? null, redis);
  const requests = result.rps * seconds;
  const isPg = gw.databaseUrl?.startsWith("postgres") ?? false;
  return {
    result,
    per: {
      cpuUs: ((p1.cpuUserMs + p1.cpuSystemMs - p0.cpuUserMs - p0.cpuSystemMs) * 1000) / requests,
      postgresCpuUs: isPg ? ((c1.postgresCpuMs - c0.postgresCpuMs) * 1000) / requests : null,
      redisCpuUs: c1.redisCommands !== null ? ((c1.redisCpuMs - c0.redisCpuMs) * 1000) / requests : null,
      // The counter reads themselves are one commit each; negligible against thousands of requests.
      commits: isPg ? (c1.commits - c0.commits) / requests : null,
      statements: c1.statements !== null && c0.statements !== null ? (c1.statements - c0.statements) / requests : null,
      redisCommands: c1.redisCommands !== null && c0.redisCommands !== null ? (c1.redisCommands - c0.redisCommands) / requests : null,
    },
  };
}

const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);

function perLine(label: string, p: PerRequest): string {
  const parts = [`gateway CPU ${p.cpuUs.toFixed(0)} us`];
  if (p.postgresCpuUs !== null) parts.push(`PostgreSQL CPU ${p.postgresCpuUs.toFixed(0)} us`);
  if (p.redisCpuUs !== null) parts.push(`Redis CPU ${p.redisCpuUs.toFixed(0)} us`);
  if (p.commits !== null) parts.push(`${f2(p.commits)} commits`);
  if (p.statements !== null) parts.push(`${f2(p.statements)} statements`);
  if (p.redisCommands !== null) parts.push(`${f2(p.redisCommands)} Redis commands (script-internal calls included)`);
  return `${label} per request: ${parts.join(", ")}`;
}

function pacedLine(label: string, r: PacedResult): string {
  return `${label.padEnd(30)} ${f1(r.rps).padStart(7)} req/s  p50 ${f2(r.p50)}  p90 ${f2(r.p90)}  p99 ${f2(r.p99)}  max ${f1(r.max)} ms  (non-2xx ${r.non2xx + r.errors}, generator lag p99 ${f2(r.sendLagP99)} ms)`;
}

function loadLine(label: string, r: LoadResult): string {
  return `${label.padEnd(30)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  (non-2xx ${r.non2xx + r.errors})`;
}

/** The rows of point 1 for one database, speech. */
export async function benchUserFelt(backend: "sqlite" | "postgres"): Promise<void> {
  const redis = backend === "postgres" ? new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 }) : null;
  const env: Record<string, string> = backend === "postgres" ? { REDIS_URL, REDIS_PREFIX: `bench${randomBytes(4).toString("hex")}` } : {};
  const gw = await startGatewayProcess(backend, env);
  try {
    if (redis) await redis.connect();
    const pid = gw.pid!;
    await new Promise((r) => setTimeout(r, 3000));
    const idleAtStart = rssMb(pid);
    await call(gw.url, "GET", "/v1/pricing");
    await new Promise((r) => setTimeout(r, 3000));
    const idle = rssMb(pid);
    const users = await Promise.all(Array.from({ length: connections }, () => benchUser(gw.url)));
    const keys = users.map((u) => u.apiKey);
    const sample = await call(gw.url, "POST", "/v1/audio/speech", JSON.parse(ONE_WORD), keys[0]);
    if (sample.status !== 200) throw new Error(`speech sample failed: ${sample.status} ${sample.buf}`);
    const bare = await startBareServer(sample.buf, sample.headers.get("content-type") ?? "audio/mpeg");
    try {
      const url = `${gw.url}/v1/audio/speech`;
      const saturated = (d: number, k: string[]) => load({ url, method: "POST", headers: JSON_HEADERS, body: ONE_WORD, connections, durationS: d, keys: k });
      await saturated(2, keys);
      let peak = rssMb(pid);
      const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 100);
      if (backend === "postgres") await topStatements(gw.databaseUrl!);
      const sat = await measured(gw, redis, () => saturated(durationS, keys)).finally(() => clearInterval(sampler));
      const statements = backend === "postgres" ? await topStatements(gw.databaseUrl!) : [];
      const bareSat = await load({ url: bare.url, method: "POST", headers: JSON_HEADERS, body: ONE_WORD, connections, durationS });

      const pacedKeys = keys.slice(0, 8);
      const pacedGw = (d: number) => paced({ url, method: "POST", headers: JSON_HEADERS, body: ONE_WORD, rate, durationS: d, connections: 8, keys: pacedKeys });
      await pacedGw(2);
      await gw.probe!();
      const fixed = await pacedGw(durationS);
      const fixedProbe = await gw.probe!();
      const fixedBare = await paced({ url: bare.url, method: "POST", headers: JSON_HEADERS, body: ONE_WORD, rate, durationS, connections: 8 });

      const hot = await measured(gw, redis, () => saturated(durationS, [keys[0]]));
      await new Promise((r) => setTimeout(r, IDLE_COMPACT_MS + 1000));
      const idleAfter = rssMb(pid);

      const label = backend === "postgres" ? "PostgreSQL (limits in Redis)" : "SQLite";
      console.log(`\n## what users feel, speech one word (${sample.buf.length}-byte answer), ${label}, ${durationS} s per run`);
      console.log(loadLine("saturated, gateway", sat.result));
      console.log(loadLine("saturated, bare", bareSat));
      console.log(`saturated ratio gateway / bare: ${f2(sat.result.rps / bareSat.rps)}`);
      console.log(pacedLine(`${rate} req/s, gateway`, fixed));
      console.log(pacedLine(`${rate} req/s, bare`, fixedBare));
      console.log(`added at ${rate} req/s: p50 +${f2(fixed.p50 - fixedBare.p50)} ms, p99 +${f2(fixed.p99 - fixedBare.p99)} ms`);
      console.log(
        `gateway during the ${rate} req/s run: event-loop delay p50 ${fixedProbe.eventLoopDelay.p50} / p99 ${fixedProbe.eventLoopDelay.p99} / max ${fixedProbe.eventLoopDelay.max} ms (1 ms resolution); GC ${fixedProbe.gc.count} pauses, ${fixedProbe.gc.totalMs} ms in all, longest ${fixedProbe.gc.max} ms`,
      );
      console.log(loadLine("one hot account, 32 conns", hot.result));
      console.log(
        `RSS idle ${idleAtStart.toFixed(0)} MB at start, ${idle.toFixed(0)} MB after the first request; peak under the saturated run ${peak.toFixed(0)} MB; idle after the load ${idleAfter.toFixed(0)} MB`,
      );
      console.log(perLine("saturated", sat.per));
      console.log(perLine("hot account", hot.per));
      if (statements.length > 0) console.log(`PostgreSQL statements of the saturated run by total time (pg_stat_statements):\n${statements.join("\n")}`);
    } finally {
      await bare.stop();
    }
  } finally {
    await gw.stop();
    redis?.disconnect();
  }
}

/**
 * A chat completion (non-streaming) through the gateway against the fake OpenAI-compatible upstream
 * answering directly, same run: saturated requests/s and latency added at the fixed rate. The fake runs
 * in the benchmark process, beside the load generator.
 */
export async function benchChat(backend: "sqlite" | "postgres"): Promise<void> {
  const fake = await startFakeOpenAI();
  const gw = await startGatewayProcess(backend, {
    TEXT_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: fake.baseUrl, apiKey: `k-${randomBytes(4).toString("hex")}` }]),
  });
  try {
    const users = await Promise.all(Array.from({ length: connections }, () => benchUser(gw.url)));
    for (const u of users) {
      await call(gw.url, "PUT", `/v1/admin/users/${u.userId}/limits`, { rpm: 100_000_000, per_model_rpm: 100_000_000, tpm: 1_000_000_000_000 }, ADMIN_TOKEN);
    }
    const keys = users.map((u) => u.apiKey);
    const body = JSON.stringify({ model: "fast", messages: [{ role: "user", content: "Say hi." }], max_tokens: 16 });
    const direct = JSON.stringify({ model: "upstream", messages: [{ role: "user", content: "Say hi." }], max_tokens: 16 });
    const probe = await call(gw.url, "POST", "/v1/chat/completions", JSON.parse(body), keys[0]);
    if (probe.status !== 200) throw new Error(`chat sample failed: ${probe.status} ${probe.buf}`);
    const gwUrl = `${gw.url}/v1/chat/completions`;
    const upUrl = `${fake.baseUrl}/chat/completions`;
    await load({ url: gwUrl, method: "POST", headers: JSON_HEADERS, body, connections, durationS: 2, keys });
    const sat = await load({ url: gwUrl, method: "POST", headers: JSON_HEADERS, body, connections, durationS, keys });
    const satUp = await load({ url: upUrl, method: "POST", headers: JSON_HEADERS, body: direct, connections, durationS });
    const fixed = await paced({ url: gwUrl, method: "POST", headers: JSON_HEADERS, body, rate, durationS, connections: 8, keys: keys.slice(0, 8) });
    const fixedUp = await paced({ url: upUrl, method: "POST", headers: JSON_HEADERS, body: direct, rate, durationS, connections: 8 });
    console.log(`\n## chat completion (non-streaming, fake upstream in the benchmark process), ${backend}, ${durationS} s per run`);
    console.log(loadLine("saturated, gateway", sat));
    console.log(loadLine("saturated, upstream directly", satUp));
    console.log(`saturated ratio gateway / upstream: ${f2(sat.rps / satUp.rps)}`);
    console.log(pacedLine(`${rate} req/s, gateway`, fixed));
    console.log(pacedLine(`${rate} req/s, upstream directly`, fixedUp));
    console.log(`added at ${rate} req/s: p50 +${f2(fixed.p50 - fixedUp.p50)} ms, p99 +${f2(fixed.p99 - fixedUp.p99)} ms`);
    fake.reset();
  } finally {
    await gw.stop();
    await fake.close();
  }
}

/**
 * Scale-out on PostgreSQL and Redis: one `serve` process against two `serve` processes and one `worker`
 * on the same database, same run; the load is split evenly over the gateways (one load generator per
 * gateway, in this process).
 */
export async function benchScaleOut(): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const prefix = `bench${randomBytes(4).toString("hex")}`;
  const first = await startGatewayProcess("postgres", { REDIS_URL, REDIS_PREFIX: prefix });
  const extra: Server[] = [];
  try {
    const users = await Promise.all(Array.from({ length: connections }, () => benchUser(first.url)));
    const keys = users.map((u) => u.apiKey);
    const run = async (gws: Server[]) => {
      const per = Math.max(1, Math.floor(connections / gws.length));
      const results = await Promise.all(
        gws.map((g, i) =>
          load({ url: `${g.url}/v1/audio/speech`, method: "POST", headers: JSON_HEADERS, body: ONE_WORD, connections: per, durationS, keys: keys.slice(i * per, (i + 1) * per) }),
        ),
      );
      return { rps: results.reduce((a, r) => a + r.rps, 0), p99: Math.max(...results.map((r) => r.p99)), non2xx: results.reduce((a, r) => a + r.non2xx + r.errors, 0) };
    };
    await run([first]);
    const one = await run([first]);
    extra.push(await first.sibling!("serve", { REDIS_URL, REDIS_PREFIX: prefix }));
    extra.push(await first.sibling!("worker", { REDIS_URL, REDIS_PREFIX: prefix }));
    const gateways = [first, extra[0]];
    await run(gateways);
    const two = await run(gateways);
    console.log(`\n## scale-out on PostgreSQL + Redis: speech one word, ${connections} connections split over the gateways, ${durationS} s`);
    console.log(`one serve process:               ${one.rps.toFixed(0)} req/s, worst p99 ${one.p99} ms (non-2xx ${one.non2xx})`);
    console.log(`two serve processes + a worker:  ${two.rps.toFixed(0)} req/s, worst p99 ${two.p99} ms (non-2xx ${two.non2xx})`);
    console.log(`scaling factor: ${f2(two.rps / one.rps)} (the load generator and PostgreSQL share the same 2 cores)`);
  } finally {
    for (const s of extra.reverse()) await s.stop();
    await first.stop();
    redis.disconnect();
  }
}
