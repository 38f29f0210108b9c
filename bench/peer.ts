/**
 * The peer row (issue 33, point 3): chat completions (non-streaming) through a bare OpenAI-compatible
 * upstream, through Portkey's open-source gateway (`@portkey-ai/gateway`, a development dependency, which
 * meters nothing) and through this gateway (which holds, charges and logs every call), all in front of
 * the same upstream, measured in one run per database:
 * - saturated: as many requests as 32 connections carry, requests/s (autocannon);
 * - fixed rate: `BENCH_RATE` (300) requests/s evenly paced over 8 connections (bench/paced.ts), p50 and
 *   p99, and what each gateway adds to the bare upstream's; with this gateway's event-loop delay and GC
 *   pauses during its paced run (bench/probe.ts).
 * The upstream is the loopback fake of fakes/openai-chat.ts, in the benchmark process as in the `chat`
 * row. PostgreSQL runs with its limits in Redis (`BENCH_REDIS_URL`), as a cluster would. Portkey runs as
 * `node build/start-server.js --port=<free port> --headless` with `NODE_ENV=production` (its own log UI
 * off); it reaches the fake through `x-portkey-custom-host` (loopback is among its default trusted hosts).
 * `BENCH_PEER_TRACING=1` adds a row: this gateway with tracing on (D40), exporting to a loopback sink.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { startFakeOpenAI } from "../fakes/openai-chat.ts";
import { freePort } from "../test/helpers/process.ts";
import { ADMIN_TOKEN, benchUser, call, type LoadResult, load, type ProbeReport, type Server, startGatewayProcess } from "./lib.ts";
import { type PacedResult, paced } from "./paced.ts";

const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const rate = Number(process.env.BENCH_RATE ?? 300);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
/** Connections of the paced runs (as the `chat` row). */
const PACED_CONNECTIONS = 8;
const JSON_HEADERS = { "content-type": "application/json" };
const PORTKEY_SERVER = fileURLToPath(new URL("../node_modules/@portkey-ai/gateway/build/start-server.js", import.meta.url));

/** Starts Portkey's gateway on a free loopback port; resolves once `GET /` answers. */
async function startPortkey(): Promise<Server> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [PORTKEY_SERVER, `--port=${port}`, "--headless"], {
    env: { ...process.env, NODE_ENV: "production" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()).length > 10_000 && (out = out.slice(-5000)));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()).length > 10_000 && (out = out.slice(-5000)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`Portkey exited (${child.exitCode}): ${out.slice(-2000)}`);
    if (i > 300) throw new Error(`Portkey did not start: ${out.slice(-2000)}`);
    try {
      if ((await fetch(`${url}/`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** An OTLP/HTTP sink on loopback that answers every export 200 and keeps nothing (the tracing-on row). */
async function startSink(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** One target of the row: how to call it. */
interface Target {
  label: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** API keys rotated per connection (this gateway: one customer each). */
  keys?: string[];
  /** This gateway's process, for its probe. */
  server?: Server;
}

interface Measured {
  target: Target;
  sat: LoadResult;
  fixed: PacedResult;
  probe: ProbeReport | null;
}

const f2 = (n: number) => n.toFixed(2);

/** A gateway process in front of `upstreamBase`, with 32 funded customers without limits; its target. */
async function gatewayTarget(label: string, backend: "sqlite" | "postgres", upstreamBase: string, env: Record<string, string>): Promise<Target> {
  const gw = await startGatewayProcess(backend, {
    TEXT_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstreamBase, apiKey: `k-${randomBytes(4).toString("hex")}` }]),
    ...env,
  });
  const users = await Promise.all(Array.from({ length: connections }, () => benchUser(gw.url)));
  for (const u of users) {
    await call(gw.url, "PUT", `/v1/admin/users/${u.userId}/limits`, { rpm: 100_000_000, per_model_rpm: 100_000_000, tpm: 1_000_000_000_000 }, ADMIN_TOKEN);
  }
  const body = JSON.stringify({ model: "fast", messages: [{ role: "user", content: "Say hi." }], max_tokens: 16 });
  const probe = await call(gw.url, "POST", "/v1/chat/completions", JSON.parse(body), users[0]!.apiKey);
  if (probe.status !== 200) throw new Error(`${label}: chat sample failed: ${probe.status} ${probe.buf}`);
  return { label, url: `${gw.url}/v1/chat/completions`, headers: JSON_HEADERS, body, keys: users.map((u) => u.apiKey), server: gw };
}

/** The peer row on one database (see the module comment). */
export async function benchPeer(backend: "sqlite" | "postgres"): Promise<void> {
  const fake = await startFakeOpenAI();
  const env: Record<string, string> = backend === "postgres" ? { REDIS_URL, REDIS_PREFIX: `bench${randomBytes(4).toString("hex")}` } : {};
  const withTracing = process.env.BENCH_PEER_TRACING === "1";
  const sink = withTracing ? await startSink() : null;
  const portkey = await startPortkey();
  const targets: Target[] = [];
  try {
    const direct = JSON.stringify({ model: "upstream", messages: [{ role: "user", content: "Say hi." }], max_tokens: 16 });
    targets.push({ label: "bare upstream", url: `${fake.baseUrl}/chat/completions`, headers: JSON_HEADERS, body: direct });
    targets.push({
      label: "Portkey 1.15.2",
      url: `${portkey.url}/v1/chat/completions`,
      headers: { ...JSON_HEADERS, "x-portkey-provider": "openai", "x-portkey-custom-host": fake.baseUrl, authorization: "Bearer sk-bench" },
      body: direct,
    });
    targets.push(await gatewayTarget("gateway", backend, fake.baseUrl, env));
    if (sink) targets.push(await gatewayTarget("gateway, tracing on", backend, fake.baseUrl, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }));
    const sample = await fetch(targets[1]!.url, { method: "POST", headers: targets[1]!.headers, body: direct });
    if (sample.status !== 200) throw new Error(`Portkey sample failed: ${sample.status} ${await sample.text()}`);

    const saturate = (t: Target, d: number) => load({ url: t.url, method: "POST", headers: t.headers, body: t.body, connections, durationS: d, keys: t.keys });
    // Warm-up of every target (JIT, connection pools, caches), then each measurement of every target in turn.
    for (const t of targets) await saturate(t, 2);
    const sat = new Map<Target, LoadResult>();
    for (const t of targets) {
      sat.set(t, await saturate(t, durationS));
      fake.requests.length = 0;
    }
    const measured: Measured[] = [];
    for (const t of targets) {
      await t.server?.probe?.();
      const fixed = await paced({
        url: t.url,
        method: "POST",
        headers: t.headers,
        body: t.body,
        rate,
        durationS,
        connections: PACED_CONNECTIONS,
        keys: t.keys?.slice(0, PACED_CONNECTIONS),
      });
      const probe = (await t.server?.probe?.()) ?? null;
      measured.push({ target: t, sat: sat.get(t)!, fixed, probe });
      fake.requests.length = 0;
    }

    const bare = measured[0]!;
    const pk = measured[1]!;
    const gw = measured[2]!;
    const redis = backend === "postgres" ? " with limits in Redis" : "";
    console.log(`\n## peer: chat completions in front of one bare upstream, ${backend}${redis} (${connections} connections saturated, ${rate} req/s paced over ${PACED_CONNECTIONS}; ${durationS} s per run)`);
    console.log("| target | saturated req/s | p50 at rate, ms | p99 at rate, ms | added p50, ms | added p99, ms | non-2xx |");
    console.log("|---|---:|---:|---:|---:|---:|---:|");
    for (const m of measured) {
      const added = m === bare ? ["", ""] : [`+${f2(m.fixed.p50 - bare.fixed.p50)}`, `+${f2(m.fixed.p99 - bare.fixed.p99)}`];
      const errors = m.sat.non2xx + m.sat.errors + m.fixed.non2xx + m.fixed.errors;
      console.log(`| ${m.target.label} | ${m.sat.rps.toFixed(0)} | ${f2(m.fixed.p50)} | ${f2(m.fixed.p99)} | ${added[0]} | ${added[1]} | ${errors} |`);
    }
    console.log(`saturated gateway / Portkey: ${f2(gw.sat.rps / pk.sat.rps)} (issue 33 asks >= 1.30)`);
    const gap = gw.fixed.p99 - bare.fixed.p99 - (pk.fixed.p99 - bare.fixed.p99);
    console.log(`added p99 gateway - Portkey: ${gap >= 0 ? "+" : ""}${f2(gap)} ms (issue 33 asks <= 0)`);
    for (const m of measured) {
      if (!m.probe) continue;
      const d = m.probe.eventLoopDelay;
      console.log(
        `${m.target.label} during its paced run: event-loop delay p50 ${f2(d.p50)} p99 ${f2(d.p99)} max ${f2(d.max)} ms; GC ${m.probe.gc.count} pauses, ${f2(m.probe.gc.totalMs)} ms total, max ${f2(m.probe.gc.max)} ms; generator lag p99 ${f2(m.fixed.sendLagP99)} ms`,
      );
    }
  } finally {
    for (const t of targets) await t.server?.stop();
    await portkey.stop();
    await sink?.close();
    await fake.close();
  }
}
