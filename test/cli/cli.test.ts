/**
 * The `gateway` CLI end to end: each test runs `node packages/cli/src/main.ts ...` as a child process
 * against a real gateway on loopback (SQLite and PostgreSQL), with `GATEWAY_URL` and `GATEWAY_API_KEY`
 * in its environment, and checks what it wrote (files that decode, stdout, stderr, the exit status)
 * against what the gateway itself says (account balance, jobs).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { mp3Frames } from "../helpers/audio-fixtures.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { runCli } from "../helpers/cli-run.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { freePort } from "../helpers/process.ts";

const BIN = join(import.meta.dirname, "../../packages/cli/bin/gateway.js");


const cli = runCli;

/** The MPEG audio header fields of the first frame of `bytes` (after an ID3v2 tag, if any). */
function firstFrameHeader(bytes: Uint8Array): { version: number; layer: number; kbps: number; sampleRate: number; offset: number } {
  let p = 0;
  if (bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33) {
    p = 10 + ((bytes[6] << 21) | (bytes[7] << 14) | (bytes[8] << 7) | bytes[9]);
  }
  assert.equal(bytes[p], 0xff, "frame sync");
  assert.equal(bytes[p + 1] & 0xe0, 0xe0, "frame sync");
  const versionBits = (bytes[p + 1] >> 3) & 3;
  const layerBits = (bytes[p + 1] >> 1) & 3;
  const v1Layer3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
  return {
    version: versionBits === 3 ? 1 : versionBits === 2 ? 2 : 2.5,
    layer: 4 - layerBits,
    kbps: versionBits === 3 && layerBits === 1 ? v1Layer3[bytes[p + 2] >> 4] : -1,
    sampleRate: [44100, 48000, 32000][(bytes[p + 2] >> 2) & 3] / (versionBits === 3 ? 1 : versionBits === 2 ? 2 : 4),
    offset: p,
  };
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

for (const backend of BACKENDS) {
  describe(`gateway CLI against a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let dir: string;
    const balanceOf = async (key: string): Promise<number> => (await gw.request("GET", "/v1/auth/me", { token: key })).json.balance_usd as number;

    before(async () => {
      gw = await startGateway(backend.name);
      dir = mkdtempSync(join(tmpdir(), "gw-cli-"));
    });
    after(async () => {
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("speak writes an MP3 whose frames decode, then prints the file, the cost and the balance", async () => {
      const user = await gw.register();
      const text = "Hello from the CLI."; // 19 characters at 0.405 USD per 1000: 0.007695
      const run = await cli(["speak", text, "--voice", DEMO_ALPHA_VOICE_ID, "-o", "hi.mp3"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      const bytes = new Uint8Array(readFileSync(join(dir, "hi.mp3")));
      const header = firstFrameHeader(bytes);
      assert.deepEqual([header.version, header.layer, header.kbps, header.sampleRate], [1, 3, 128, 44100], "mp3_44100_128: MPEG-1 Layer III, 128 kbps, 44.1 kHz");
      const frames = mp3Frames(bytes.subarray(header.offset));
      assert.ok(frames.length > 10, `${frames.length} frames`);
      const meta = await parseBuffer(bytes, { mimeType: "audio/mpeg" });
      assert.equal(meta.format.sampleRate, 44100);
      assert.ok((meta.format.duration ?? 0) > 0.2, `decoded duration ${meta.format.duration}`);

      const balance = await balanceOf(user.api_key);
      assert.equal(balance, 0.492305);
      const lines = run.stdout.trim().split("\n");
      assert.equal(lines[0], "hi.mp3");
      assert.match(lines[1], /alpha-multilingual-v2, 19 characters: cost 0\.007695 USD, balance 0\.492305 USD/);
    });

    test("speak --format pcm_16000 writes raw samples; --json reports the headers' amounts", async () => {
      const user = await gw.register();
      const run = await cli(["speak", "Hi there.", "--voice", DEMO_BETA_VOICE_ID, "-m", "beta-speech-turbo", "-f", "pcm_16000", "--json"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      const out = JSON.parse(run.stdout) as { files: string[]; content_type: string; cost_usd: number; balance_usd: number; model: string };
      assert.deepEqual(out.files, ["speech.pcm"]);
      assert.equal(out.content_type, "audio/pcm");
      assert.equal(out.model, "beta-speech-turbo");
      const pcm = readFileSync(join(dir, "speech.pcm"));
      assert.ok(pcm.length > 0 && pcm.length % 2 === 0, "16-bit samples");
      assert.equal(out.balance_usd, await balanceOf(user.api_key));
      assert.equal(Math.round((0.5 - out.cost_usd) * 1e6), Math.round(out.balance_usd * 1e6));
    });

    test("image -n 2 writes two PNGs (out-1.png, out-2.png), shows progress lines and prints cost and balance", async () => {
      const user = await gw.register();
      const run = await cli(["image", "a lighthouse at dawn", "--model", "imgA-v4", "-n", "2", "-o", "out.png"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      for (const name of ["out-1.png", "out-2.png"]) {
        const png = readFileSync(join(dir, name));
        assert.deepEqual([...png.subarray(0, 8)], PNG_SIGNATURE, name);
        assert.equal(png.subarray(12, 16).toString("latin1"), "IHDR", name);
        assert.ok(png.readUInt32BE(16) > 0 && png.readUInt32BE(20) > 0, `${name} has a width and a height`);
      }
      assert.ok(!existsSync(join(dir, "out.png")), "several outputs are numbered, the bare name is not written");
      assert.ok(!readdirSync(dir).some((f) => f.endsWith(".part")), "no partial file left");
      const lines = run.stdout.trim().split("\n");
      assert.deepEqual(lines.slice(0, 2), ["out-1.png", "out-2.png"]);
      const jobId = /(job_\w+)/.exec(lines[2])?.[1] ?? "";
      const job = (await gw.request("GET", `/v1/jobs/${jobId}`, { token: user.api_key })).json;
      assert.equal(job.status, "succeeded");
      assert.equal(job.cost_usd, 0.108);
      assert.match(lines[2], /imgA-v4, job_\w+: cost 0\.108 USD, balance 0\.392 USD/);
      assert.equal(await balanceOf(user.api_key), 0.392);

      // stderr is not a terminal here: plain progress lines, one per change, ending with the terminal status.
      const progress = run.stderr.trim().split("\n");
      assert.ok(progress.every((l) => l.startsWith(`${jobId}: `)), run.stderr);
      assert.match(progress[progress.length - 1], new RegExp(`^${jobId}: succeeded \\(\\d\\d:\\d\\d\\)$`));
      assert.ok(!run.stderr.includes("\r") && !run.stderr.includes("\x1b["), "no terminal control characters off a terminal");
    });

    test("a failed image job exits 1 with its error code, writes no file and charges nothing", async () => {
      const user = await gw.register();
      const run = await cli(["image", "a fox", "--model", "imgA-v4", "-o", "failed.png", "--simulate", "fail"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^error: provider_error: /m);
      assert.match(run.stderr, /failed: its hold of 0\.054 USD was released, nothing charged/);
      assert.equal(run.stdout, "");
      assert.ok(!existsSync(join(dir, "failed.png")));
      assert.equal(await balanceOf(user.api_key), 0.5);
    });

    test("video: refused on tier 0 with rate_limited; after a deposit it writes an MP4", async () => {
      const user = await gw.register();
      const refused = await cli(["video", "waves at night", "--model", "vidA-2.5-pro", "--duration", "1", "-o", "clip.mp4"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^error: rate_limited: .*\(HTTP 429/m);
      assert.ok(!existsSync(join(dir, "clip.mp4")));

      await gw.deposit(user.user_id, 10);
      const run = await cli(["video", "waves at night", "--model", "vidA-2.5-pro", "--duration", "1", "-o", "clip.mp4"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      const mp4 = readFileSync(join(dir, "clip.mp4"));
      assert.equal(mp4.subarray(4, 8).toString("latin1"), "ftyp", "an ISO BMFF file");
      assert.match(run.stdout, /^clip\.mp4\nvidA-2\.5-pro, job_\w+: cost 0\.0945 USD, balance 10\.4055 USD\n$/);
      assert.equal(await balanceOf(user.api_key), 10.4055);
    });

    test("keys create prints the secret once; list shows only its prefix; delete makes it answer auth_error", async () => {
      const user = await gw.register();
      const created = await cli(["keys", "create", "--name", "laptop"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(created.code, 0, created.stderr);
      const secret = /^api_key\s+(gw_\S+)$/m.exec(created.stdout)?.[1] ?? "";
      const keyId = /^key_id\s+(key_\S+)$/m.exec(created.stdout)?.[1] ?? "";
      assert.ok(secret && keyId, created.stdout);
      assert.equal(created.stdout.split(secret).length - 1, 1, "the secret appears exactly once");
      assert.ok(!created.stderr.includes(secret));
      assert.match(created.stderr, /shown only this once/);

      const listed = await cli(["keys", "list"], { url: gw.url, key: secret, cwd: dir });
      assert.equal(listed.code, 0, listed.stderr);
      assert.ok(!listed.stdout.includes(secret), "list never shows a secret");
      const row = listed.stdout.split("\n").find((l) => l.startsWith(keyId)) ?? "";
      assert.match(row, /laptop/);
      assert.ok(row.includes(secret.slice(0, 12)), "the 12-character prefix");

      const usable = await cli(["balance", "--json"], { url: gw.url, key: secret, cwd: dir });
      assert.equal(usable.code, 0, usable.stderr);
      assert.equal((JSON.parse(usable.stdout) as { user_id: string }).user_id, user.user_id);

      const deleted = await cli(["keys", "delete", keyId], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.equal(deleted.stdout, `deleted ${keyId}\n`);
      const refused = await cli(["balance"], { url: gw.url, key: secret, cwd: dir });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^error: auth_error: .*\(HTTP 401/m);
      assert.ok(!refused.stderr.includes(secret) && !refused.stdout.includes(secret), "the key is not printed");
      const again = await cli(["keys", "delete", keyId], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^error: key_not_found: /m);
    });

    test("keys create --mode test never hands out a live key: a test key where the gateway has them (D32), else an error and no new key", async () => {
      const user = await gw.register();
      const opts = { url: gw.url, key: user.api_key, cwd: dir };
      const doc = (await gw.request("GET", "/openapi.json")).json as {
        paths: Record<string, { post?: { requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> } } }>;
      };
      const hasTestMode = doc.paths["/v1/auth/keys"].post?.requestBody?.content["application/json"].schema.properties?.mode !== undefined;
      const run = await cli(["keys", "create", "--name", "sandbox", "--mode", "test"], opts);
      const listed = (await gw.request("GET", "/v1/auth/keys", { token: user.api_key })).json.data as { name: string | null; mode?: string }[];
      if (hasTestMode) {
        assert.equal(run.code, 0, run.stderr);
        assert.match(run.stdout, /^api_key\s+gw_test_\S+$/m);
        assert.equal(listed.find((k) => k.name === "sandbox")?.mode, "test");
      } else {
        assert.equal(run.code, 1);
        assert.match(run.stderr, /^error: test_mode_unsupported: .* was deleted$/m);
        assert.equal(run.stdout, "", "no secret printed");
        assert.deepEqual(listed.map((k) => k.name), ["default"], "the live key made instead was deleted");
      }
    });

    test("keys create and update set the controls (D34); list shows what each key spent; alert sets the low-balance alert", async () => {
      const user = await gw.register();
      const opts = { url: gw.url, key: user.api_key, cwd: dir };
      const created = await cli(["keys", "create", "--name", "capped", "--spend-limit", "2.50", "--period", "week", "--models", "alpha-*,imgA-v4", "--rpm", "20", "--expires", "2099-01-01T00:00:00Z"], opts);
      assert.equal(created.code, 0, created.stderr);
      const keyId = /^key_id\s+(key_\S+)$/m.exec(created.stdout)?.[1] ?? "";
      assert.match(created.stdout, /^spend\s+0 USD of 2\.5 USD per week$/m);
      assert.match(created.stdout, /^models\s+alpha-\*,imgA-v4$/m);
      assert.match(created.stdout, /^rpm\s+20$/m);
      assert.match(created.stdout, /^expires_at\s+2099-01-01T00:00:00\.000Z$/m);
      const updated = await cli(["keys", "update", keyId, "--spend-limit", "none", "--models", "all", "--rpm", "none", "--expires", "never"], opts);
      assert.equal(updated.code, 0, updated.stderr);
      assert.match(updated.stdout, /^spend\s+0 USD this week$/m);
      assert.match(updated.stdout, /^models\s+all$/m);
      assert.match(updated.stdout, /^expires_at\s+never$/m);
      const listed = await cli(["keys", "list"], opts);
      assert.match(listed.stdout.split("\n").find((l) => l.startsWith(keyId)) ?? "", /capped .*0 USD this week .*never .*all/);
      const bad = await cli(["keys", "update", keyId, "--expires", "2001-01-01"], opts);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /^error: invalid_request: expires_at must be in the future/m);

      const off = await cli(["alert"], opts);
      assert.match(off.stdout, /^low_balance\s+off$/m);
      const set = await cli(["alert", "--set", "0.25"], opts);
      assert.equal(set.code, 0, set.stderr);
      assert.match(set.stdout, /^low_balance\s+0\.25 USD$/m);
      assert.match(set.stdout, /^armed\s+yes$/m);
      assert.match((await cli(["alert", "--off"], opts)).stdout, /^low_balance\s+off$/m);
    });

    test("balance, voices and job print what the gateway answers", async () => {
      const user = await gw.register();
      const balance = await cli(["balance"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(balance.code, 0, balance.stderr);
      assert.match(balance.stdout, /^balance\s+0\.5 USD$/m);
      assert.match(balance.stdout, /^tier\s+0 \(/m);
      assert.ok(balance.stdout.includes(user.email));

      const voices = await cli(["voices", "--provider", "beta"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(voices.code, 0, voices.stderr);
      assert.match(voices.stdout, /^VOICE_ID\s+PROVIDER\s+NAME\s+ABOUT$/m);
      assert.match(voices.stdout, new RegExp(`^${DEMO_BETA_VOICE_ID}\\s+beta\\s+`, "m"));

      const submitted = await gw.request("POST", "/v1/images/generations", { token: user.api_key, body: { model: "imgA-v4", prompt: "a red kite" } });
      const done = await gw.waitForJob(user.api_key, submitted.json.id as string);
      const job = await cli(["job", submitted.json.id as string], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(job.code, 0, job.stderr);
      assert.match(job.stdout, /^status\s+succeeded$/m);
      assert.match(job.stdout, /^cost\s+0\.054 USD$/m);
      assert.ok(job.stdout.includes(done.json.output.url as string), "the output URL");
      const asJson = await cli(["job", submitted.json.id as string, "--json"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.deepEqual(JSON.parse(asJson.stdout), done.json);
    });

    test("errors: the D1 code and message, exit 1; usage mistakes and a missing key exit 2; the key is never printed", async () => {
      const user = await gw.register();
      const opts = { url: gw.url, key: user.api_key, cwd: dir };
      const badModel = await cli(["image", "a fox", "--model", "imgZ-9"], opts);
      assert.equal(badModel.code, 1);
      assert.match(badModel.stderr, /^error: invalid_model: 'imgZ-9' is not a supported image model\. \(HTTP 400/m);

      const unknownJob = await cli(["job", "job_doesnotexist"], opts);
      assert.equal(unknownJob.code, 1);
      assert.match(unknownJob.stderr, /^error: job_not_found: /m);

      const noVoice = await cli(["speak", "hello"], opts);
      assert.equal(noVoice.code, 2);
      assert.match(noVoice.stderr, /^error: 'speak' needs --voice$/m);

      const unknownCommand = await cli(["paint"], opts);
      assert.equal(unknownCommand.code, 2);
      assert.match(unknownCommand.stderr, /unknown command 'paint'/);

      const noKey = await cli(["balance"], { url: gw.url, cwd: dir });
      assert.equal(noKey.code, 2);
      assert.match(noKey.stderr, /GATEWAY_API_KEY is not set/);

      // A port nothing listens on (freePort closes the listener it found).
      const closed = `http://127.0.0.1:${await freePort()}`;
      const unreachable = await cli(["balance"], { url: closed, key: user.api_key, cwd: dir });
      assert.equal(unreachable.code, 1);
      assert.equal(unreachable.stderr, `error: unreachable: cannot reach the gateway at ${closed} (ECONNREFUSED)\n`);

      for (const run of [badModel, unknownJob, noVoice, unknownCommand, unreachable]) {
        assert.ok(!run.stdout.includes(user.api_key) && !run.stderr.includes(user.api_key));
      }
      const help = await cli(["--help"], { url: gw.url, cwd: dir });
      assert.equal(help.code, 0);
      assert.match(help.stdout, /^Usage: gateway <command>/m);
    });

    test("the package.json bin (packages/cli/bin/gateway.js) runs the same CLI", async () => {
      const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "../../package.json"), "utf8")) as { bin: Record<string, string> };
      assert.equal(join(import.meta.dirname, "../..", pkg.bin.gateway), BIN);
      const user = await gw.register();
      const run = await cli(["balance", "--json"], { url: gw.url, key: user.api_key, cwd: dir, script: BIN });
      assert.equal(run.code, 0, run.stderr);
      assert.equal((JSON.parse(run.stdout) as { balance_usd: number }).balance_usd, 0.5);
      const refused = await cli(["job", "job_nope"], { url: gw.url, key: user.api_key, cwd: dir, script: BIN });
      assert.equal(refused.code, 1, "the launcher passes the exit status on");
    });

    test("jobs lists the caller's jobs newest first, as a table and as JSON", async () => {
      const user = await gw.register();
      const ids: string[] = [];
      for (const prompt of ["one", "two"]) {
        const r = await gw.request("POST", "/v1/images/generations", { token: user.api_key, body: { model: "imgA-v4", prompt } });
        ids.push(r.json.id as string);
        await gw.waitForJob(user.api_key, r.json.id as string);
      }
      const run = await cli(["jobs", "--limit", "5", "--json"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual((JSON.parse(run.stdout) as { data: { id: string }[] }).data.map((j) => j.id), [ids[1], ids[0]]);
      const tableRun = await cli(["jobs", "--status", "succeeded"], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(tableRun.code, 0, tableRun.stderr);
      assert.match(tableRun.stdout, /^ID\s+KIND\s+MODEL\s+STATUS/);
      assert.match(tableRun.stdout, new RegExp(`^${ids[0]}\\s+image\\s+imgA-v4\\s+succeeded`, "m"));
    });

    test("cancel ends a pending or running job and releases its hold; a finished job is job_not_cancelable", async () => {
      const user = await gw.register();
      // `hang`: the simulated worker stops reporting, so the job stays unfinished until canceled.
      const r = await gw.request("POST", "/v1/images/generations", { token: user.api_key, body: { model: "imgA-v4", prompt: "slow" }, headers: { "x-svc-simulate": "hang" } });
      const id = r.json.id as string;
      const run = await cli(["cancel", id], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, `canceled ${id}: hold of 0.054 USD released, nothing charged\n`);
      assert.equal(await balanceOf(user.api_key), 0.5);
      const again = await cli(["cancel", id], { url: gw.url, key: user.api_key, cwd: dir });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^error: job_not_cancelable: /m);
    });

    test("usage sums spend per model and member (table, JSON and CSV) and exports FOCUS; requests lists the usage log", async () => {
      const user = await gw.register();
      const opts = { url: gw.url, key: user.api_key, cwd: dir };
      assert.equal((await cli(["speak", "Hello.", "--voice", DEMO_ALPHA_VOICE_ID, "-o", "u.mp3"], opts)).code, 0);
      const summary = await cli(["usage", "--by", "model", "--json"], opts);
      assert.equal(summary.code, 0, summary.stderr);
      const parsed = JSON.parse(summary.stdout) as { group_by: string; data: { group: string; requests: number; cost_usd: number }[] };
      assert.equal(parsed.group_by, "model");
      assert.deepEqual(
        parsed.data.map((g) => [g.group, g.requests, g.cost_usd]),
        [["alpha-multilingual-v2", 1, 0.00243]],
      );
      const tableRun = await cli(["usage", "--by", "model"], opts);
      assert.match(tableRun.stdout, /^MODEL\s+REQUESTS\s+COST_USD/);
      assert.match(tableRun.stdout, /^alpha-multilingual-v2\s+1\s+0\.00243/m);
      const csv = await cli(["usage", "--by", "model", "--csv"], opts);
      assert.equal(csv.code, 0, csv.stderr);
      assert.match(csv.stdout, /^group,requests,cost_usd/);
      const byMember = await cli(["usage", "--by", "member", "--json"], opts);
      assert.deepEqual((JSON.parse(byMember.stdout) as { data: { group: string }[] }).data.map((g) => g.group), [user.user_id]);
      const focus = await cli(["usage", "--focus"], opts);
      assert.equal(focus.code, 0, focus.stderr);
      const [header, row, ...rest] = focus.stdout.split("\r\n");
      assert.match(header, /^BilledCost,BillingAccountId,/);
      assert.match(row, /^0\.00243,org_/);
      assert.deepEqual(rest, [""], "one row, the CSV's line ends");
      const log = await cli(["requests", "--limit", "5", "--json"], opts);
      assert.equal(log.code, 0, log.stderr);
      const records = (JSON.parse(log.stdout) as { data: { model: string; kind: string; cost_usd: number }[] }).data;
      assert.deepEqual(records.map((r) => [r.model, r.kind, r.cost_usd]), [["alpha-multilingual-v2", "speech", 0.00243]]);
    });
  });
}
