/**
 * `node bench/large-bodies.ts`: memory under large bodies (issue "Hardening" 7). Starts the gateway
 * (SQLite) as a child process, sends 40 concurrent 25 MB multipart uploads to /v1/audio/transcriptions
 * and 40 concurrent 24 MB JSON bodies to /v1/images/generations, samples the child's RSS every 100 ms,
 * and prints the peak with the answers by status. Target: peak RSS under 512 MB, every request answered.
 */
import { benchUser, rssMb, startGatewayProcess } from "./lib.ts";

const COUNT = Number(process.env.BENCH_BODIES ?? 40);

const gw = await startGatewayProcess("sqlite");
try {
  if (gw.pid === undefined) throw new Error("no gateway pid");
  const pid = gw.pid;
  const { apiKey } = await benchUser(gw.url);
  const idle = rssMb(pid);
  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 100);
  const statuses: Record<string, number> = {};
  const count = (label: string): void => {
    statuses[label] = (statuses[label] ?? 0) + 1;
  };
  const file = new Uint8Array(25 * 1024 * 1024 - 4096).fill(1);
  const json = JSON.stringify({ model: "imgA-v4", prompt: "x", parameters: { blob: "x".repeat(24 * 1024 * 1024) } });
  const calls: Promise<void>[] = [];
  for (let i = 0; i < COUNT; i++) {
    const form = new FormData();
    form.append("model", "transcribe-1");
    form.append("file", new Blob([file]), "a.mp3");
    calls.push(
      fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: form }).then(
        async (r) => {
          count(`multipart ${r.status}`);
          await r.text();
        },
        () => count("multipart connection error"),
      ),
    );
    calls.push(
      fetch(`${gw.url}/v1/images/generations`, { method: "POST", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, body: json }).then(
        async (r) => {
          count(`json ${r.status}`);
          await r.text();
        },
        () => count("json connection error"),
      ),
    );
  }
  await Promise.all(calls);
  clearInterval(sampler);
  console.log(`## large bodies: ${COUNT} x 25 MB multipart + ${COUNT} x 24 MB JSON, at once`);
  console.log(`RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (target < 512 MB: ${peak < 512 ? "meets" : "misses"})`);
  console.log(`answers: ${JSON.stringify(statuses)}`);
} finally {
  await gw.stop();
}
