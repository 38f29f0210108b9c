/**
 * `gateway speak --stream` (standard input through the realtime speech socket, D42) end to end: the CLI
 * runs as a child process against a real gateway on loopback (SQLite and PostgreSQL), lines are piped to
 * it, and what it wrote (an MP3 that decodes, PCM on standard output, the summary on stderr) is checked
 * against the socket's usage record (`GET /v1/requests`) and the balance. Lines are spoken as they arrive:
 * the file holds audio before standard input ends.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { CLI_MAIN, runCli } from "../helpers/cli-run.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { fundedOrg } from "../helpers/realtime.ts";

const LINES = ["The first line is spoken as soon as it arrives.", "", "  A second line, after an empty one.  ", "And the third line ends the text."];

/** Characters billed for `lines`: each non-empty line trimmed, with the one space the CLI adds after it. */
function billed(lines: string[]): number {
  return lines
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .reduce((n, l) => n + Array.from(l).length + 1, 0);
}

/** The summary line of stderr: model, characters, cost, balance. */
function summaryOf(stderr: string): { model: string; characters: number; cost: number; balance: number } {
  const m = /^(\S+), (\d+) characters: cost ([\d.]+) USD, balance ([\d.]+) USD$/m.exec(stderr);
  assert.ok(m, `a summary line on stderr: ${stderr}`);
  return { model: m[1], characters: Number(m[2]), cost: Number(m[3]), balance: Number(m[4]) };
}

/** The CLI as a child process with stdin left open: its stdout as bytes. */
function startCli(args: string[], opts: { url: string; key: string; cwd: string }) {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GATEWAY_") && !k.startsWith("NODE_TEST")) env[k] = v;
  Object.assign(env, { GATEWAY_URL: opts.url, GATEWAY_API_KEY: opts.key });
  const child = spawn(process.execPath, [CLI_MAIN, ...args], { cwd: opts.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  const out: Buffer[] = [];
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => out.push(d));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
  return { child, done };
}

/** Waits until `check` holds (polling every 25 ms), failing after `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

for (const backend of BACKENDS) {
  describe(`gateway speak --stream against a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let dir: string;

    before(async () => {
      gw = await startGateway(backend.name, { REALTIME_HOLD_CHARS: "40" });
      dir = mkdtempSync(join(tmpdir(), "gw-cli-stream-"));
    });
    after(async () => {
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** The newest realtime record of the account, through the API. */
    async function socketRecord(key: string) {
      const page = await gw.request("GET", "/v1/requests?limit=5", { token: key });
      return (page.json.data as { realtime: boolean; kind: string; id: string; model: string; cost_usd: number; units: { characters: number }; close_code: number; status: string }[]).find(
        (r) => r.realtime && r.kind === "speech",
      );
    }

    test("three lines piped: an MP3 that decodes, one realtime record, the printed cost is the record's", async () => {
      const user = await gw.register();
      const run = await runCli(["speak", "--stream", "--voice", DEMO_ALPHA_VOICE_ID, "--model", "alpha-flash-v2-5", "-o", "lines.mp3"], {
        url: gw.url,
        key: user.api_key,
        cwd: dir,
        input: `${LINES.join("\n")}\n`,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, "lines.mp3\n");
      const mp3 = readFileSync(join(dir, "lines.mp3"));
      const meta = await parseBuffer(mp3, { mimeType: "audio/mpeg" });
      assert.equal(meta.format.sampleRate, 44100, "mp3_44100_128 by default");
      assert.ok((meta.format.duration ?? 0) > 4, `three lines of speech (${meta.format.duration} s)`);

      const rec = await socketRecord(user.api_key);
      assert.ok(rec, "the socket's usage record");
      assert.deepEqual([rec.status, rec.model, rec.close_code, rec.units.characters], ["succeeded", "alpha-flash-v2-5", 1000, billed(LINES)]);
      const shown = summaryOf(run.stderr);
      assert.deepEqual([shown.model, shown.characters, shown.cost], [rec.model, rec.units.characters, rec.cost_usd]);
      assert.equal(rec.cost_usd, (billed(LINES) * 200) / 1e6, "0.20 USD per 1000 characters");
      const me = await gw.request("GET", "/v1/auth/me", { token: user.api_key });
      assert.equal(shown.balance, me.json.balance_usd);
      assert.equal(Math.round((0.5 - shown.cost) * 1e6), Math.round(shown.balance * 1e6), "the balance moved by the cost, nothing else");
    });

    test("PCM on standard output (not a terminal), --json needs -o then", async () => {
      const user = await gw.register();
      const { child, done } = startCli(["speak", "--stream", "-v", DEMO_ALPHA_VOICE_ID, "-m", "alpha-flash-v2-5", "-f", "pcm_16000"], { url: gw.url, key: user.api_key, cwd: dir });
      child.stdin.end(`${LINES.join("\n")}\n`);
      const run = await done;
      assert.equal(run.code, 0, run.stderr);
      assert.ok(run.stdout.length % 2 === 0, "whole 16-bit samples");
      const seconds = run.stdout.length / 2 / 16000;
      assert.ok(seconds > 4, `${seconds} s of PCM`);
      const rec = await socketRecord(user.api_key);
      assert.ok(rec);
      const shown = summaryOf(run.stderr);
      assert.deepEqual([shown.characters, shown.cost], [rec.units.characters, rec.cost_usd]);
      assert.ok(!existsSync(join(dir, "speech.pcm")), "no file without -o when stdout is a pipe");

      const json = startCli(["speak", "--stream", "-v", DEMO_ALPHA_VOICE_ID, "--json"], { url: gw.url, key: user.api_key, cwd: dir });
      json.child.stdin.end("Hello.\n");
      const refused = await json.done;
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /--json with speak --stream needs -o FILE/);
    });

    test("each line is spoken when it arrives: audio is in the file before standard input ends; --json", async () => {
      const user = await gw.register();
      const { child, done } = startCli(["speak", "--stream", "-v", DEMO_ALPHA_VOICE_ID, "-m", "alpha-flash-v2-5", "-f", "pcm_16000", "-o", "live.pcm", "--json"], {
        url: gw.url,
        key: user.api_key,
        cwd: dir,
      });
      const file = join(dir, "live.pcm");
      const size = () => (existsSync(file) ? statSync(file).size : 0);
      child.stdin.write("The first line, alone for now.\n");
      await until(() => size() > 0, 15_000, "the first line's audio");
      const afterFirst = size();
      child.stdin.write("A second line, a moment later.\n");
      await until(() => size() > afterFirst, 15_000, "the second line's audio");
      child.stdin.end("The last line.\n");
      const run = await done;
      assert.equal(run.code, 0, run.stderr);
      const out = JSON.parse(run.stdout.toString()) as { files: string[]; characters: number; cost_usd: number; balance_usd: number; close_code: number; request_id: string; bytes: number };
      assert.deepEqual(out.files, ["live.pcm"]);
      assert.equal(out.bytes, size());
      const lines = ["The first line, alone for now.", "A second line, a moment later.", "The last line."];
      assert.deepEqual([out.characters, out.close_code], [billed(lines), 1000]);
      const rec = await gw.request("GET", `/v1/requests/${out.request_id}`, { token: user.api_key });
      assert.equal(rec.json.cost_usd, out.cost_usd);
      assert.equal(rec.json.realtime, true);
    });

    test("refusals: a model without a socket before any file; out of funds mid-text: what was paid is written, then the error and its close code", async () => {
      const user = await gw.register();
      const v3 = await runCli(["speak", "--stream", "-v", DEMO_ALPHA_VOICE_ID, "-m", "alpha-v3", "-o", "v3.mp3"], { url: gw.url, key: user.api_key, cwd: dir, input: "Hello.\n" });
      assert.equal(v3.code, 1);
      assert.match(v3.stderr, /^error: realtime_not_supported: .*\(HTTP 400, request req_\w+\)$/m);
      assert.ok(!existsSync(join(dir, "v3.mp3")));

      // 0.01 USD: 50 characters of flash, fewer than the text.
      const poor = await fundedOrg(gw, 0.01);
      const text = Array.from({ length: 12 }, (_, i) => `Line number ${i + 1} of a long text.`).join("\n");
      const run = await runCli(["speak", "--stream", "-v", DEMO_ALPHA_VOICE_ID, "-m", "alpha-flash-v2-5", "-f", "pcm_16000", "-o", "poor.pcm"], { url: gw.url, key: poor.api_key, cwd: dir, input: `${text}\n` });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^error: insufficient_balance: .* \(socket closed 1008\)$/m);
      const pcm = readFileSync(join(dir, "poor.pcm"));
      assert.ok(pcm.length > 0, "the paid lines were spoken and written");
      const rec = await socketRecord(poor.api_key);
      assert.ok(rec);
      const shown = summaryOf(run.stderr);
      assert.deepEqual([shown.characters, shown.cost, rec.close_code], [rec.units.characters, rec.cost_usd, 1008]);
      assert.ok(rec.cost_usd > 0 && rec.cost_usd <= 0.01);
    });
  });
}
