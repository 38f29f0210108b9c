/**
 * `npm run bench`: the speech endpoint through the gateway (simulator at zero latency) against a bare
 * `node:http` server returning the same bytes, in the same run, on SQLite and on PostgreSQL; the cached
 * voice library; and 2,000 image jobs from submit to `succeeded` with a zero-cost upstream (bench/jobs.ts).
 *
 * Target (issue "Gateway core"): the gateway reaches at least 50% of the bare server's requests/s with
 * p99 under 10 ms at 32 connections. Numbers measured on the development machine go in bench/README.md.
 *
 * Environment: BENCH_DURATION_S (default 10), BENCH_CONNECTIONS (default 32), BENCH_JOBS (default 2000),
 * BENCH_ONLY (comma list of cli, felt, chat, peer, scaleout, voices, speech, upstreams, limits, stream,
 * realtime, jobs; default all), BENCH_RATE (the fixed rate of `felt`, `chat` and `peer`, default 300
 * requests/s). `felt`, `chat` and `scaleout` are the rows of the issue "Fast on the scale path"
 * (bench/scale.ts); `peer` puts Portkey's gateway beside this one in front of the same upstream (issue 33,
 * bench/peer.ts); `cli` times the `gateway` command's start (issue 42, bench/cli-start.ts).
 */
import { DEMO_ALPHA_VOICE_ID } from "../src/upstreams/simulator/voices.ts";
import { benchStreamingChat } from "./chat.ts";
import { benchCliStart } from "./cli-start.ts";
import { benchJobs } from "./jobs.ts";
import { benchPeer } from "./peer.ts";
import { benchRealtime } from "./realtime.ts";
import { benchUpstreamSpeech } from "./upstream-speech.ts";
import { benchChat, benchScaleOut, benchUserFelt } from "./scale.ts";
import {
  benchUser,
  call,
  type LoadResult,
  load,
  pgReachable,
  row,
  startBareServer,
  startGatewayProcess,
} from "./lib.ts";

const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** Two requests: a typical sentence in the default format, and a tiny answer where gateway work dominates. */
const CASES = [
  {
    label: "sentence, mp3_44100_128",
    body: JSON.stringify({ model: "alpha-flash-v2-5", input: "The quick brown fox jumps over the lazy dog.", voice_id: DEMO_ALPHA_VOICE_ID }),
  },
  {
    label: "one word, mp3_22050_32",
    body: JSON.stringify({ model: "alpha-flash-v2-5", input: "Hello.", voice_id: DEMO_ALPHA_VOICE_ID, response_format: "mp3_22050_32" }),
  },
];

const widths = [34, 12, 10, 10, 10];
function print(label: string, r: LoadResult) {
  console.log(
    row([label, r.rps.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2), String(r.non2xx + r.errors)], widths),
  );
}

async function benchSpeech(backend: "sqlite" | "postgres"): Promise<void> {
  const gw = await startGatewayProcess(backend);
  try {
    // One customer per connection: each has its own balance row, as real traffic does.
    const users = await Promise.all(Array.from({ length: connections }, () => benchUser(gw.url)));
    const keys = users.map((u) => u.apiKey);
    const headers = { "content-type": "application/json" };
    for (const c of CASES) {
      const sample = await call(gw.url, "POST", "/v1/audio/speech", JSON.parse(c.body), keys[0]);
      if (sample.status !== 200) throw new Error(`speech sample failed: ${sample.status} ${sample.buf}`);
      const bare = await startBareServer(sample.buf, sample.headers.get("content-type") ?? "audio/mpeg");
      try {
        const gwLoad = (d: number) =>
          load({ url: `${gw.url}/v1/audio/speech`, method: "POST", headers, body: c.body, connections, durationS: d, keys });
        const bareLoad = (d: number) => load({ url: bare.url, method: "POST", body: c.body, connections, durationS: d });
        await gwLoad(2);
        await bareLoad(2);
        const g = await gwLoad(durationS);
        const b = await bareLoad(durationS);
        console.log(`\n## speech on ${backend}: ${c.label} (${sample.buf.length}-byte answer; ${connections} connections, ${durationS} s)`);
        console.log(row(["target", "req/s", "p50 ms", "p99 ms", "non-2xx"], widths));
        print("gateway POST /v1/audio/speech", g);
        print("bare node:http, same bytes", b);
        const ratio = g.rps / b.rps;
        const verdict = ratio >= 0.5 && g.p99 < 10 ? "meets" : "misses";
        console.log(`gateway/bare ${(ratio * 100).toFixed(1)}%, p99 ${g.p99} ms: ${verdict} the target (>= 50%, p99 < 10 ms)`);
      } finally {
        await bare.stop();
      }
    }
  } finally {
    await gw.stop();
  }
}

/** The cached alpha voice list (about 3000 voices): latency from cache must stay under 5 ms. */
async function benchVoices(): Promise<void> {
  const gw = await startGatewayProcess("sqlite");
  try {
    const user = await benchUser(gw.url);
    const headers = { authorization: `Bearer ${user.apiKey}`, "accept-encoding": "gzip" };
    const first = await call(gw.url, "GET", "/v1/audio/voices?provider=alpha", undefined, user.apiKey);
    const cache = first.headers.get("x-svc-cache");
    const gzRes = await fetch(`${gw.url}/v1/audio/voices?provider=alpha`, { headers: { ...headers } });
    const gzBytes = Number(gzRes.headers.get("content-length") ?? 0);
    await gzRes.arrayBuffer();
    // One caller at a time: the time from request to the last byte of the cached list.
    const url = `${gw.url}/v1/audio/voices?provider=alpha`;
    const gz = await load({ url, headers, connections: 1, durationS: 3 });
    const plain = await load({ url, headers: { authorization: headers.authorization }, connections: 1, durationS: 3 });
    const loaded = await load({ url, headers, connections: 8, durationS: 3 });
    console.log(`\n## voice library: GET /v1/audio/voices?provider=alpha from cache (first answer: ${cache})`);
    console.log(`one caller, gzip (${gzBytes} bytes): p50 ${gz.p50} ms, p99 ${gz.p99} ms (target < 5 ms)`);
    console.log(`one caller, identity (${first.buf.length} bytes): p50 ${plain.p50} ms, p99 ${plain.p99} ms`);
    console.log(`8 connections, gzip: ${loaded.rps.toFixed(0)} req/s, p50 ${loaded.p50} ms, p99 ${loaded.p99} ms`);
  } finally {
    await gw.stop();
  }
}

/**
 * The cost of keeping limits in Redis (shared by a cluster) against keeping them in the process: the
 * one-word speech request on SQLite, same run, both backends.
 */
async function benchLimitsBackend(): Promise<void> {
  const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
  const results: { label: string; r: LoadResult }[] = [];
  for (const [label, env] of [
    ["in-process limits", {}],
    ["Redis limits", { REDIS_URL: redisUrl, REDIS_PREFIX: `bench${Date.now()}` }],
  ] as const) {
    const gw = await startGatewayProcess("sqlite", { ...env });
    try {
      const ready = await call(gw.url, "GET", "/readyz");
      if (ready.status !== 200) {
        console.log(`\n## limits backend: ${label} not ready (${ready.buf}); skipped`);
        continue;
      }
      const users = await Promise.all(Array.from({ length: connections }, () => benchUser(gw.url)));
      const keys = users.map((u) => u.apiKey);
      const body = CASES[1].body;
      const run = (d: number) =>
        load({ url: `${gw.url}/v1/audio/speech`, method: "POST", headers: { "content-type": "application/json" }, body, connections, durationS: d, keys });
      await run(2);
      results.push({ label, r: await run(durationS) });
    } finally {
      await gw.stop();
    }
  }
  console.log(`\n## limits backend: speech, one word, SQLite (${connections} connections, ${durationS} s)`);
  console.log(row(["limits", "req/s", "p50 ms", "p99 ms", "non-2xx"], widths));
  for (const { label, r } of results) print(label, r);
  if (results.length === 2) {
    console.log(`Redis costs ${((1 - results[1].r.rps / results[0].r.rps) * 100).toFixed(1)}% of requests/s`);
  }
}



// As on a second `npm start`: one gateway started and stopped first, so every measured process finds the
// compile cache warm (a module changed since the last run would otherwise load Node's TypeScript stripper
// into the first measured process only, about 20 MB of its RSS).
await (await startGatewayProcess("sqlite")).stop();

const only = (process.env.BENCH_ONLY ?? "cli,felt,chat,peer,scaleout,voices,speech,upstreams,limits,stream,realtime,jobs").split(",");
const has = (name: string) => only.includes(name);
const pg = await pgReachable();
if (!pg) console.log("\n## PostgreSQL unreachable: its rows are skipped (set BENCH_DATABASE_URL)");
if (has("cli")) await benchCliStart();
if (has("felt")) {
  await benchUserFelt("sqlite");
  if (pg) await benchUserFelt("postgres");
}
if (has("chat")) {
  await benchChat("sqlite");
  if (pg) await benchChat("postgres");
}
if (has("peer")) {
  await benchPeer("sqlite");
  if (pg) await benchPeer("postgres");
}
if (has("scaleout") && pg) await benchScaleOut();
if (has("voices")) await benchVoices();
if (has("speech")) await benchSpeech("sqlite");
if (has("upstreams")) await benchUpstreamSpeech({ durationS, connections });
if (has("limits")) await benchLimitsBackend();
if (has("stream")) await benchStreamingChat();
if (has("realtime")) await benchRealtime();
if (has("jobs")) await benchJobs("sqlite");
if (pg && has("speech")) await benchSpeech("postgres");
if (pg && has("jobs")) await benchJobs("postgres");
