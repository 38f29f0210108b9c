/**
 * The realtime speech socket (D42) in front of a loopback fake of ElevenLabs' socket (issue 41): the time to
 * the first audio of a sentence through the gateway against the same sentence sent straight to the fake, with
 * 1, 50 and 200 sockets open at once (each socket speaks its sentences one after the other, all sockets
 * together), and the gateway's resident memory per open socket (sockets per GB).
 *
 * Through the gateway a sentence costs: the message parsed, the chunk cut, its reservation against the
 * socket's hold (an extension past the block: one database transaction), the upstream stream opened on its
 * first chunk (the fake's socket), the audio relayed with its alignment shifted. Straight to the fake: the
 * fake's own work only. The difference is what the gateway adds.
 *
 * Environment: BENCH_REALTIME_SOCKETS (comma list, default 1,50,200), BENCH_REALTIME_SENTENCES (per socket,
 * default 5).
 */
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws";
import { startElevenLabsFake } from "../fakes/elevenlabs.ts";
import { benchUser, row, startGatewayProcess } from "./lib.ts";

/** ElevenLabs' "George": a voice of the fake's account and of the gateway's alpha library. */
const VOICE = "JBFqnCBsd6RMkjVDRZzb";
const KEY = "bench-el-key-9c1d4e7f2a";
const SENTENCE = "The caller's balance is twelve dollars and fifty cents. ";

/** A percentile of sorted values. */
function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The resident set of process `pid`, MB (Linux). */
async function rssMb(pid: number): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** An open socket that times each sentence from its send to its first audio message, ms. */
interface Timed {
  ws: WebSocket;
  /** Sends a sentence and resolves with the time to its first audio, ms, then waits for its last (`flush` ends it). */
  sentence(): Promise<number>;
  close(): void;
}

/** Opens a `stream-input` socket at `url` (gateway or fake) and sends ElevenLabs' first message. */
async function openTimed(url: string, headers: Record<string, string>): Promise<Timed> {
  const ws = new WebSocket(url, { headers });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
    ws.once("unexpected-response", (_q, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  let onAudio: (() => void) | null = null;
  let audioSeen = 0;
  ws.on("message", (data) => {
    const m = JSON.parse(data.toString()) as { audio?: string | null };
    if (typeof m.audio === "string" && m.audio.length > 0) {
      audioSeen++;
      onAudio?.();
    }
  });
  ws.send(JSON.stringify({ text: " " }));
  return {
    ws,
    sentence: () =>
      new Promise<number>((resolve) => {
        const before = audioSeen;
        const t0 = performance.now();
        onAudio = () => {
          if (audioSeen > before) {
            onAudio = null;
            resolve(performance.now() - t0);
          }
        };
        ws.send(JSON.stringify({ text: SENTENCE, flush: true }));
      }),
    close: () => ws.close(),
  };
}

/** Opens `n` sockets with `open` and has each speak `sentences` sentences (0.6 s apart); all first-audio times, ms. */
async function run(n: number, sentences: number, open: () => Promise<Timed>): Promise<{ times: number[]; sockets: Timed[] }> {
  const sockets: Timed[] = [];
  for (let i = 0; i < n; i += 25) sockets.push(...(await Promise.all(Array.from({ length: Math.min(25, n - i) }, open))));
  const times: number[] = [];
  await Promise.all(
    sockets.map(async (s, i) => {
      await sleep((i * 7) % 300);
      for (let k = 0; k < sentences; k++) {
        times.push(await s.sentence());
        await sleep(600);
      }
    }),
  );
  return { times: times.sort((a, b) => a - b), sockets };
}

/** The benchmark (see the module comment), on SQLite. Prints one table. */
export async function benchRealtime(): Promise<void> {
  const counts = (process.env.BENCH_REALTIME_SOCKETS ?? "1,50,200").split(",").map(Number);
  const sentences = Number(process.env.BENCH_REALTIME_SENTENCES ?? 5);
  const fake = await startElevenLabsFake({ apiKey: KEY });
  const upstreams = [{ name: "el-bench", protocol: "elevenlabs", base_url: fake.url, api_key: KEY, families: ["alpha"] }];
  const gw = await startGatewayProcess("sqlite", { UPSTREAMS: JSON.stringify(upstreams), REALTIME_HOLD_CHARS: "200" });
  try {
    const { apiKey } = await benchUser(gw.url);
    const gwUrl = `${gw.url.replace(/^http/, "ws")}/v1/audio/speech/${VOICE}/stream-input?model_id=alpha-flash-v2-5&output_format=pcm_16000`;
    const fakeUrl = `${fake.url.replace(/^http/, "ws")}/v1/text-to-speech/${VOICE}/stream-input?model_id=eleven_flash_v2_5&output_format=pcm_16000`;
    const widths = [10, 16, 16, 16, 16, 14, 14];
    console.log(`\n## realtime speech socket over the ElevenLabs fake: time to first audio of a sentence (${sentences} sentences per socket, pcm_16000)`);
    console.log(row(["sockets", "fake p50 ms", "fake p99 ms", "gateway p50 ms", "gateway p99 ms", "added p50", "added p99"], widths));
    let memory = "";
    for (const n of counts) {
      const direct = await run(n, sentences, () => openTimed(fakeUrl, { "xi-api-key": KEY }));
      for (const s of direct.sockets) s.close();
      const rssBefore = gw.pid ? await rssMb(gw.pid) : NaN;
      const via = await run(n, sentences, () => openTimed(gwUrl, { "xi-api-key": apiKey }));
      const rssOpen = gw.pid ? await rssMb(gw.pid) : NaN;
      for (const s of via.sockets) s.close();
      const f50 = pct(direct.times, 50);
      const f99 = pct(direct.times, 99);
      const g50 = pct(via.times, 50);
      const g99 = pct(via.times, 99);
      console.log(row([String(n), f50.toFixed(2), f99.toFixed(2), g50.toFixed(2), g99.toFixed(2), `+${(g50 - f50).toFixed(2)}`, `+${(g99 - f99).toFixed(2)}`], widths));
      if (n === Math.max(...counts) && Number.isFinite(rssOpen)) {
        const perSocketMb = Math.max(0.001, (rssOpen - rssBefore) / n);
        memory = `gateway RSS ${rssBefore.toFixed(0)} MB before, ${rssOpen.toFixed(0)} MB with ${n} sockets open: ${(perSocketMb * 1024).toFixed(0)} KB per socket, about ${Math.floor(1024 / perSocketMb)} open sockets per GB`;
      }
      await sleep(500);
    }
    if (memory !== "") console.log(memory);
  } finally {
    await gw.stop();
    await fake.close();
  }
}
