/**
 * The peer row (issue 33, point 3): chat completions (non-streaming) through a bare OpenAI-compatible
 * upstream, through Portkey's open-source gateway (`@portkey-ai/gateway`, installed on first use in
 * bench/portkey by bench/portkey.ts, not a dependency of the project; it meters nothing) and through this gateway (which holds, charges and logs every call), all in front of
 * the same upstream, measured in one run per database:
 * - saturated: as many requests as 32 connections carry, requests/s (autocannon);
 * - fixed rate: `BENCH_RATE` (300) requests/s evenly paced over 8 connections (bench/paced.ts), p50 and
 *   p99, and what each gateway adds to the bare upstream's; with this gateway's event-loop delay and GC
 *   pauses during the paced slices (bench/probe.ts).
 * Each measurement is cut into `BENCH_PEER_SLICES` (5) slices, the targets taking turns slice by slice:
 * on a shared machine whose speed drifts, every target meets the same drift.
 * The upstream is the loopback fake of fakes/openai-chat.ts, in the benchmark process as in the `chat`
 * row. PostgreSQL runs with its limits in Redis (`BENCH_REDIS_URL`), as a cluster would. Portkey runs as
 * `node build/start-server.js --port=<free port> --headless` with `NODE_ENV=production` (its own log UI
 * off); it reaches the fake through `x-portkey-custom-host` (loopback is among its default trusted hosts).
 * `BENCH_PEER_TRACING=1` adds a row: this gateway with tracing on (D40), exporting to a loopback sink.
 * `BENCH_PEER_BASELINE=<checkout>` adds a row: the gateway of another checkout (a `git worktree` of an
 * earlier commit, its node_modules in place), taking turns with the others: before and after in one run.
 * `BENCH_PEER_TAIL=1` adds where the time of the slowest requests goes ({@link tailBreakdown}).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-chat.ts";
import { type ReceivedSpan, startOtlpReceiver } from "../test/helpers/otlp-receiver.ts";
import { freePort } from "../test/helpers/process.ts";
import { ensurePortkey, portkeyVersion } from "./portkey.ts";
import { ADMIN_TOKEN, benchUser, call, type LoadResult, load, type ProbeReport, type Server, startGatewayProcess } from "./lib.ts";
import { mergePaced, type PacedResult, paced, quantile } from "./paced.ts";

const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const rate = Number(process.env.BENCH_RATE ?? 300);
/**
 * Each measured run is cut into this many slices, the targets taking turns slice by slice, so that a
 * machine whose speed drifts during the run (a shared virtual machine) slows every target alike.
 */
const slices = Math.max(1, Number(process.env.BENCH_PEER_SLICES ?? 5));
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
/** Connections of the paced runs (as the `chat` row). */
const PACED_CONNECTIONS = 8;
const JSON_HEADERS = { "content-type": "application/json" };

/** Starts Portkey's gateway (installed on first use, bench/portkey.ts) on a free loopback port; resolves once `GET /` answers. */
async function startPortkey(): Promise<Server> {
  const server = ensurePortkey();
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [server, `--port=${port}`, "--headless"], {
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

/** `<short commit>` of the checkout at `dir` (its `git rev-parse`), or the folder's name. */
function baselineLabel(dir: string): string {
  try {
    return execFileSync("git", ["-C", dir, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return dir;
  }
}

/** A gateway process in front of `upstreamBase`, with 32 funded customers without limits; its target. */
async function gatewayTarget(
  label: string,
  backend: "sqlite" | "postgres",
  upstreamBase: string,
  env: Record<string, string>,
  cwd?: string,
): Promise<Target> {
  const gw = await startGatewayProcess(
    backend,
    { TEXT_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstreamBase, apiKey: `k-${randomBytes(4).toString("hex")}` }]), ...env },
    [],
    cwd,
  );
  const users = await Promise.all(Array.from({ length: connections }, () => benchUser(gw.url)));
  for (const u of users) {
    await call(gw.url, "PUT", `/v1/admin/users/${u.userId}/limits`, { rpm: 100_000_000, per_model_rpm: 100_000_000, tpm: 1_000_000_000_000 }, ADMIN_TOKEN);
  }
  const body = JSON.stringify({ model: "fast", messages: [{ role: "user", content: "Say hi." }], max_tokens: 16 });
  const probe = await call(gw.url, "POST", "/v1/chat/completions", JSON.parse(body), users[0]!.apiKey);
  if (probe.status !== 200) throw new Error(`${label}: chat sample failed: ${probe.status} ${probe.buf}`);
  return { label, url: `${gw.url}/v1/chat/completions`, headers: JSON_HEADERS, body, keys: users.map((u) => u.apiKey), server: gw };
}

/** The segments a traced request's time is cut into by its spans (see {@link tailBreakdown}), in order. */
const SEGMENTS = [
  ["to server", "from the due time to the SERVER span's start: the generator's lag, the socket, a busy event loop"],
  ["before hold", "the request read, parsed and authenticated, the rate and token limits, the tokens counted"],
  ["hold", "billing.hold"],
  ["hold to upstream", "from the hold to the upstream attempt"],
  ["upstream", "the CLIENT span of the attempt (the bare upstream's share)"],
  ["upstream to capture", "from the answer to the capture"],
  ["capture", "billing.capture"],
  ["after capture", "the answer written, to the SERVER span's end"],
  ["to client", "from the SERVER span's end to the last byte read by the generator"],
] as const;

/**
 * Where the tail goes (`BENCH_PEER_TAIL=1`): a gateway with tracing on (D40), exporting to a loopback OTLP
 * receiver that keeps every span, takes the paced run with a `traceparent` per request; each request's
 * latency is cut at its spans' edges into {@link SEGMENTS}, and the mean of each segment is printed for
 * all requests, for the slowest 1 % and for the slowest 0.1 %. Tracing costs some of its own time, so this
 * run says where the time goes, not what the untraced gateway's p99 is.
 */
export async function tailBreakdown(backend: "sqlite" | "postgres", fake: FakeOpenAI, env: Record<string, string>): Promise<void> {
  const receiver = await startOtlpReceiver();
  let target: Target | null = null;
  try {
    target = await gatewayTarget("gateway, traced", backend, fake.baseUrl, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    const run = (d: number) =>
      paced({ url: target!.url, method: "POST", headers: target!.headers, body: target!.body, rate, durationS: d, connections: PACED_CONNECTIONS, keys: target!.keys?.slice(0, PACED_CONNECTIONS), traceparents: true });
    await run(2);
    await target.server?.probe?.();
    receiver.spans.length = 0;
    const fixed = await run(durationS);
    const probe = (await target.server?.probe?.()) ?? null;
    // The exporter sends every second: wait until the spans stop arriving.
    for (let last = -1; last !== receiver.spans.length; ) {
      last = receiver.spans.length;
      await new Promise((r) => setTimeout(r, 1500));
    }
    const byTrace = new Map<string, ReceivedSpan[]>();
    for (const span of receiver.spans) {
      const list = byTrace.get(span.traceId);
      if (list) list.push(span);
      else byTrace.set(span.traceId, [span]);
    }
    const cut: { latency: number; parts: number[] }[] = [];
    for (const r of fixed.requests ?? []) {
      const spans = byTrace.get(r.traceparent.split("-")[1]!) ?? [];
      const server = spans.find((x) => x.kind === "server");
      const hold = spans.find((x) => x.name === "billing.hold");
      const upstream = spans.find((x) => x.kind === "client");
      const capture = spans.find((x) => x.name === "billing.capture");
      if (!server || !hold || !upstream || !capture) continue;
      const end = r.dueEpochMs + r.latencyMs;
      const edges = [r.dueEpochMs, server.startMs, hold.startMs, hold.endMs, upstream.startMs, upstream.endMs, capture.startMs, capture.endMs, server.endMs, end];
      cut.push({ latency: r.latencyMs, parts: SEGMENTS.map((_, i) => edges[i + 1]! - edges[i]!) });
    }
    const requests = fixed.requests?.length ?? 0;
    console.log(`\n### where the time goes: ${backend}, traced, ${rate} req/s paced; ${cut.length} of ${requests} requests joined to their spans`);
    console.log(`p50 ${f2(fixed.p50)} p99 ${f2(fixed.p99)} max ${f2(fixed.max)} ms (tracing on)`);
    cut.sort((a, b) => a.latency - b.latency);
    const groups: [string, typeof cut][] = [
      ["all", cut],
      ["slowest 1 %", cut.slice(Math.floor(cut.length * 0.99))],
      ["slowest 0.1 %", cut.slice(Math.floor(cut.length * 0.999))],
    ];
    console.log(`| segment (mean ms) | ${groups.map(([g, list]) => `${g} (${list.length})`).join(" | ")} | what it is |`);
    console.log(`|---|${groups.map(() => "---:").join("|")}|---|`);
    const mean = (list: typeof cut, f: (c: (typeof cut)[number]) => number) => (list.length ? list.reduce((a, c) => a + f(c), 0) / list.length : Number.NaN);
    console.log(`| latency | ${groups.map(([, list]) => f2(mean(list, (c) => c.latency))).join(" | ")} | due time to last byte |`);
    SEGMENTS.forEach(([name, what], i) => console.log(`| ${name} | ${groups.map(([, list]) => f2(mean(list, (c) => c.parts[i]!))).join(" | ")} | ${what} |`));
    const p99 = quantile(Float64Array.from(cut.map((c) => c.latency)), 0.99);
    if (probe) {
      const d = probe.eventLoopDelay;
      console.log(
        `during it: event-loop delay p99 ${f2(d.p99)} max ${f2(d.max)} ms; GC ${probe.gc.count} pauses, ${f2(probe.gc.totalMs)} ms, max ${f2(probe.gc.max)} ms; joined p99 ${f2(p99)} ms`,
      );
    }
  } finally {
    await target?.server?.stop();
    await receiver.close();
  }
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
      label: `Portkey ${portkeyVersion()}`,
      url: `${portkey.url}/v1/chat/completions`,
      headers: { ...JSON_HEADERS, "x-portkey-provider": "openai", "x-portkey-custom-host": fake.baseUrl, authorization: "Bearer sk-bench" },
      body: direct,
    });
    targets.push(await gatewayTarget("gateway", backend, fake.baseUrl, env));
    if (sink) targets.push(await gatewayTarget("gateway, tracing on", backend, fake.baseUrl, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }));
    const baseline = process.env.BENCH_PEER_BASELINE;
    if (baseline) targets.push(await gatewayTarget(`gateway at ${baselineLabel(baseline)}`, backend, fake.baseUrl, env, baseline));
    const sample = await fetch(targets[1]!.url, { method: "POST", headers: targets[1]!.headers, body: direct });
    if (sample.status !== 200) throw new Error(`Portkey sample failed: ${sample.status} ${await sample.text()}`);

    const saturate = (t: Target, d: number) => load({ url: t.url, method: "POST", headers: t.headers, body: t.body, connections, durationS: d, keys: t.keys });
    const pace = (t: Target, d: number) =>
      paced({ url: t.url, method: "POST", headers: t.headers, body: t.body, rate, durationS: d, connections: PACED_CONNECTIONS, keys: t.keys?.slice(0, PACED_CONNECTIONS) });
    // Warm-up of every target (JIT, connection pools, caches), then each measurement cut into slices, the
    // targets taking turns slice by slice.
    for (const t of targets) await saturate(t, 2);
    const slice = durationS / slices;
    const satRuns = new Map<Target, LoadResult[]>(targets.map((t) => [t, []]));
    for (let i = 0; i < slices; i++) {
      for (const t of targets) {
        satRuns.get(t)!.push(await saturate(t, slice));
        fake.requests.length = 0;
      }
    }
    const fixedRuns = new Map<Target, PacedResult[]>(targets.map((t) => [t, []]));
    for (const t of targets) await t.server?.probe?.();
    for (let i = 0; i < slices; i++) {
      for (const t of targets) {
        fixedRuns.get(t)!.push(await pace(t, slice));
        fake.requests.length = 0;
      }
    }
    const measured: Measured[] = [];
    for (const t of targets) {
      const runs = satRuns.get(t)!;
      const sat: LoadResult = {
        rps: runs.reduce((a, r) => a + r.rps, 0) / runs.length,
        p50: Number.NaN,
        p99: Number.NaN,
        non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
        errors: runs.reduce((a, r) => a + r.errors, 0),
      };
      measured.push({ target: t, sat, fixed: mergePaced(fixedRuns.get(t)!), probe: (await t.server?.probe?.()) ?? null });
    }

    const bare = measured[0]!;
    const pk = measured[1]!;
    const gw = measured[2]!;
    const redis = backend === "postgres" ? " with limits in Redis" : "";
    console.log(
      `\n## peer: chat completions in front of one bare upstream, ${backend}${redis} (${connections} connections saturated, ${rate} req/s paced over ${PACED_CONNECTIONS}; ${durationS} s per target, in ${slices} slices taking turns)`,
    );
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
        `${m.target.label} during the paced slices (its own and the others'): event-loop delay p50 ${f2(d.p50)} p99 ${f2(d.p99)} max ${f2(d.max)} ms; GC ${m.probe.gc.count} pauses, ${f2(m.probe.gc.totalMs)} ms total, max ${f2(m.probe.gc.max)} ms; generator lag p99 ${f2(m.fixed.sendLagP99)} ms`,
      );
    }
    if (process.env.BENCH_PEER_TAIL === "1") {
      for (const t of targets) await t.server?.stop();
      targets.length = 0;
      await tailBreakdown(backend, fake, env);
    }
  } finally {
    for (const t of targets) await t.server?.stop();
    await portkey.stop();
    await sink?.close();
    await fake.close();
  }
}
