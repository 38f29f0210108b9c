/**
 * `npm run bench`: the speech endpoint through the gateway (simulator at zero latency) against a bare
 * `node:http` server returning the same bytes, in the same run, on SQLite and on PostgreSQL.
 *
 * Target (issue "Gateway core"): the gateway reaches at least 50% of the bare server's requests/s with
 * p99 under 10 ms at 32 connections. Numbers measured on the development machine go in bench/README.md.
 *
 * Environment: BENCH_DURATION_S (default 10), BENCH_CONNECTIONS (default 32).
 */
import { DEMO_ALPHA_VOICE_ID } from "../src/upstreams/simulator/voices.ts";
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
    // Sequential requests, one at a time: the latency a single caller sees from the cache.
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      const r = await fetch(`${gw.url}/v1/audio/voices?provider=alpha`, { headers });
      const list = (await r.json()) as { data: unknown[] };
      if (list.data.length !== 3000) throw new Error("unexpected voice list");
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2);
    const loaded = await load({ url: `${gw.url}/v1/audio/voices?provider=alpha`, headers, connections: 8, durationS: Math.min(durationS, 5) });
    console.log(`\n## voice library: GET /v1/audio/voices?provider=alpha (${first.buf.length} bytes; first answer ${cache})`);
    console.log(`one caller, 200 sequential requests from cache (gzip, decoded and parsed by the client): p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms (target < 5 ms)`);
    console.log(`8 connections (gzip): ${loaded.rps.toFixed(0)} req/s, p50 ${loaded.p50} ms, p99 ${loaded.p99} ms`);
  } finally {
    await gw.stop();
  }
}

await benchVoices();
await benchSpeech("sqlite");
if (await pgReachable()) await benchSpeech("postgres");
else console.log("\n## PostgreSQL unreachable: skipped (set BENCH_DATABASE_URL)");
