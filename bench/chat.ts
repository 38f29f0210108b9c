/**
 * Streaming chat through the gateway against the same fake OpenAI-compatible upstream called directly, in
 * the same run: time to first token and tokens per second. The fake streams 200 one-word chunks, 1 ms
 * apart, with a usage chunk at the end.
 */
import { randomBytes } from "node:crypto";
import { startFakeOpenAI, textStream } from "../fakes/openai-chat.ts";
import { ADMIN_TOKEN, benchUser, call, startGatewayProcess } from "./lib.ts";

const PIECES = 200;
const RUNS = Number(process.env.BENCH_CHAT_RUNS ?? 30);

/** Streams one completion from `url`; returns time to first content (ms) and content chunks per second. */
async function streamOnce(url: string, headers: Record<string, string>, model: string): Promise<{ ttft: number; rate: number }> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "stream please" }], stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok || !res.body) throw new Error(`stream failed: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buf = "";
  let first = 0;
  let pieces = 0;
  for await (const bytes of res.body) {
    buf += decoder.decode(bytes, { stream: true });
    let i = buf.indexOf("\n\n");
    while (i >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      i = buf.indexOf("\n\n");
      const data = frame.replace(/^data: /, "");
      if (data === "[DONE]") continue;
      const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string } }[] };
      if (chunk.choices?.[0]?.delta?.content) {
        if (first === 0) first = performance.now();
        pieces++;
      }
    }
  }
  const end = performance.now();
  return { ttft: first - t0, rate: pieces / ((end - first) / 1000) };
}

function summary(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${s[Math.floor(s.length / 2)].toFixed(1)}, p90 ${s[Math.floor(s.length * 0.9)].toFixed(1)}`;
}

/** Runs the comparison and prints it. */
export async function benchStreamingChat(): Promise<void> {
  const fake = await startFakeOpenAI();
  const words = Array.from({ length: PIECES }, (_, i) => `w${i} `);
  fake.respond = () => ({ kind: "sse", events: textStream(words, { prompt: 20, completion: PIECES }), delayMs: 1 });
  const gw = await startGatewayProcess("sqlite", {
    TEXT_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: fake.baseUrl, apiKey: `k-${randomBytes(4).toString("hex")}` }]),
  });
  try {
    const user = await benchUser(gw.url);
    await call(gw.url, "PUT", `/v1/admin/users/${user.userId}/limits`, { rpm: 1_000_000, per_model_rpm: 1_000_000, tpm: 1_000_000_000 }, ADMIN_TOKEN);
    const direct: { ttft: number; rate: number }[] = [];
    const through: { ttft: number; rate: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      direct.push(await streamOnce(`${fake.baseUrl}/chat/completions`, {}, "upstream"));
      through.push(await streamOnce(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${user.apiKey}` }, "fast"));
    }
    console.log(`\n## streaming chat: ${PIECES} chunks 1 ms apart, ${RUNS} sequential requests each`);
    console.log(`upstream directly: time to first token ms ${summary(direct.map((r) => r.ttft))}; chunks/s ${summary(direct.map((r) => r.rate))}`);
    console.log(`through gateway:   time to first token ms ${summary(through.map((r) => r.ttft))}; chunks/s ${summary(through.map((r) => r.rate))}`);
  } finally {
    await gw.stop();
    await fake.close();
  }
}
