/**
 * Speech through a real adapter against the same provider fake called directly, in the same run (issue
 * "Real upstreams, part 2"): the fakes of `npm run fake-upstreams` run in their own process, the gateway
 * in another with the `UPSTREAMS` file the script wrote.
 * - alpha (ElevenLabs protocol), one word at `mp3_22050_32`, at 32 connections (saturated) and at one:
 *   requests/s, p50 and p99 of the fake directly and through the gateway, and the latency the gateway adds;
 * - beta (MiniMax protocol) with `stream: true`, sequential requests: time to the first audio byte of the
 *   fake's SSE stream directly and through the gateway (which decodes the hex and streams raw MP3).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchUser, call, type LoadResult, load, row, startGatewayProcess } from "./lib.ts";

const KEY = "bench-fake-key";
const RUNS = Number(process.env.BENCH_STREAM_RUNS ?? 40);

interface FakeSource {
  name: string;
  base_url: string;
}

/** Starts `scripts/fake-upstreams.ts` on free ports; resolves with its UPSTREAMS file and a stop function. */
async function startFakes(): Promise<{ file: string; sources: FakeSource[]; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "gw-bench-fakes-"));
  const file = join(dir, "upstreams.json");
  const ports = ["FAL", "BFL", "OPENAI", "ELEVENLABS", "ELEVENLABS_BACKUP", "MINIMAX", "OPENAI_AUDIO"];
  const child = spawn(process.execPath, ["scripts/fake-upstreams.ts"], {
    env: { ...process.env, FAKE_KEY: KEY, FAKE_UPSTREAMS_FILE: file, ...Object.fromEntries(ports.map((p) => [`FAKE_${p}_PORT`, "0"])) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("npm start")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`fake-upstreams exited ${code}: ${out}`)));
  });
  return {
    file,
    sources: JSON.parse(readFileSync(file, "utf8")) as FakeSource[],
    async stop() {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Time to the first byte of the answer's body (ms) and the whole answer (ms) of one POST. */
async function firstByte(url: string, headers: Record<string, string>, body: unknown): Promise<{ ttfb: number; total: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`stream failed: ${res.status} ${await res.text()}`);
  let ttfb = 0;
  for await (const chunk of res.body) {
    if (ttfb === 0 && chunk.byteLength > 0) ttfb = performance.now() - t0;
  }
  return { ttfb, total: performance.now() - t0 };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? NaN;
}

/** Runs both measurements and prints them. */
export async function benchUpstreamSpeech(opts: { durationS: number; connections: number }): Promise<void> {
  const fakes = await startFakes();
  const base = (name: string) => fakes.sources.find((s) => s.name === name)!.base_url;
  const gw = await startGatewayProcess("sqlite", { UPSTREAMS: fakes.file, FAKE_KEY: KEY });
  try {
    const users = await Promise.all(Array.from({ length: opts.connections }, () => benchUser(gw.url)));
    // An alpha voice of the fake's catalog (the gateway's alpha library is that catalog).
    const voices = await call(gw.url, "GET", "/v1/audio/voices?provider=alpha", undefined, users[0]!.apiKey);
    const alphaVoice = (voices.json() as { data: { voice_id: string }[] }).data[0]!.voice_id;
    const betaVoices = await call(gw.url, "GET", "/v1/audio/voices?provider=beta", undefined, users[0]!.apiKey);
    const betaVoice = (betaVoices.json() as { data: { voice_id: string }[] }).data[0]!.voice_id;

    const direct = {
      url: `${base("elevenlabs-fake")}/v1/text-to-speech/${alphaVoice}?output_format=mp3_22050_32`,
      method: "POST" as const,
      headers: { "content-type": "application/json", "xi-api-key": KEY },
      body: JSON.stringify({ text: "Hello.", model_id: "eleven_flash_v2_5" }),
      connections: opts.connections,
    };
    const through = {
      url: `${gw.url}/v1/audio/speech`,
      method: "POST" as const,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "alpha-flash-v2-5", input: "Hello.", voice_id: alphaVoice, response_format: "mp3_22050_32" }),
      connections: opts.connections,
      keys: users.map((u) => u.apiKey),
    };
    await load({ ...direct, durationS: 2 });
    await load({ ...through, durationS: 2 });
    const results: { label: string; r: LoadResult }[] = [
      { label: "elevenlabs fake directly", r: await load({ ...direct, durationS: opts.durationS }) },
      { label: "through the gateway", r: await load({ ...through, durationS: opts.durationS }) },
      // One connection: the latency each request gets when nothing queues (unsaturated).
      { label: "directly, 1 connection", r: await load({ ...direct, connections: 1, durationS: opts.durationS }) },
      { label: "gateway, 1 connection", r: await load({ ...through, connections: 1, durationS: opts.durationS }) },
    ];
    const widths = [30, 10, 10, 10, 10];
    console.log(`\n## speech on a real adapter: alpha one word (mp3_22050_32) on the elevenlabs fake, SQLite (${opts.connections} connections, ${opts.durationS} s)`);
    console.log(row(["", "req/s", "p50 ms", "p99 ms", "non-2xx"], widths));
    for (const { label, r } of results) console.log(row([label, r.rps.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2), String(r.non2xx + r.errors)], widths));
    const added = (d: LoadResult, g: LoadResult) => `p50 +${(g.p50 - d.p50).toFixed(2)} ms, p99 +${(g.p99 - d.p99).toFixed(2)} ms`;
    // autocannon's percentiles are whole milliseconds; at one connection the mean is 1000 / req/s.
    const mean = (r: LoadResult) => 1000 / r.rps;
    console.log(`added by the gateway: saturated ${added(results[0]!.r, results[1]!.r)}; one connection ${added(results[2]!.r, results[3]!.r)}, mean +${(mean(results[3]!.r) - mean(results[2]!.r)).toFixed(2)} ms`);

    const text = "Streaming speech reaches the caller chunk by chunk, before the clip is complete.";
    const directStream: { ttfb: number; total: number }[] = [];
    const gatewayStream: { ttfb: number; total: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      directStream.push(
        await firstByte(`${base("minimax-fake")}/v1/t2a_v2`, { authorization: `Bearer ${KEY}` }, {
          model: "speech-02-turbo",
          text,
          stream: true,
          stream_options: { exclude_aggregated_audio: true },
          voice_setting: { voice_id: betaVoice, speed: 1, vol: 1, pitch: 0 },
          audio_setting: { format: "mp3", sample_rate: 44100, bitrate: 128000, channel: 1 },
          output_format: "hex",
        }),
      );
      gatewayStream.push(
        await firstByte(`${gw.url}/v1/audio/speech`, { authorization: `Bearer ${users[i % users.length]!.apiKey}` }, {
          model: "beta-speech-turbo",
          input: text,
          voice_id: betaVoice,
          stream: true,
        }),
      );
    }
    const show = (xs: { ttfb: number; total: number }[]) =>
      `first byte p50 ${pct(xs.map((x) => x.ttfb), 0.5).toFixed(1)} / p90 ${pct(xs.map((x) => x.ttfb), 0.9).toFixed(1)} ms; whole answer p50 ${pct(xs.map((x) => x.total), 0.5).toFixed(1)} ms`;
    console.log(`\n## streaming speech on a real adapter: beta-speech-turbo on the minimax fake (first event after 20 ms, then every 10 ms), ${RUNS} sequential requests`);
    console.log(`minimax fake directly (SSE, hex): ${show(directStream)}`);
    console.log(`through the gateway (raw MP3):    ${show(gatewayStream)}`);
  } finally {
    await gw.stop();
    await fakes.stop();
  }
}
