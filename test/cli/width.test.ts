/**
 * The `gateway` CLI fits the terminal's width (issue 42, point 3): tables drop their less important
 * columns and cut long texts with `…` so that no line is wider than `COLUMNS` (or the terminal), `--wide`
 * shows every column uncut, output into a pipe is never cut, the usage text is wrapped to the width, and
 * the voice library is shown 50 voices at a time. The layout functions are checked on their own, then the
 * CLI runs as a child process against a real gateway on loopback at 80 and at 120 columns.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import stringWidth from "string-width";
import { COMMANDS, VOICES_LIMIT } from "../../packages/cli/src/args.ts";
import { table, wrapHelp } from "../../packages/cli/src/format.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { CLI_MAIN, runCli } from "../helpers/cli-run.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

/** The lines of `text` wider than `width` columns. */
const overWidth = (text: string, width: number) => text.split("\n").filter((l) => stringWidth(l) > width);
/** The column headers of a table's first line. */
const headers = (text: string) => text.split("\n")[0].trim().split(/\s{2,}/);

describe("table layout", () => {
  const cols = ["ID", { header: "NAME", priority: 9, min: 6 }, { header: "KIND", priority: 5 }, { header: "CREATED", priority: 2 }];
  const rows = [
    ["id_0001", "a name that is rather long for its column", "speech", "2026-01-01T00:00:00.000Z"],
    ["id_0002", null, "image", "2026-01-02T00:00:00.000Z"],
  ];

  test("unbounded (a pipe) or --wide: every column, uncut", () => {
    for (const layout of [{ width: null, wide: false }, { width: 30, wide: true }]) {
      const out = table(cols, rows, layout);
      assert.deepEqual(headers(out), ["ID", "NAME", "KIND", "CREATED"]);
      assert.ok(out.includes("a name that is rather long for its column"));
      assert.match(out, /^id_0002\s+-\s+image/m, "an empty cell shows as -");
    }
  });

  test("too wide: the lowest priority column goes first, then a cuttable one is cut with an ellipsis", () => {
    const out = table(cols, rows, { width: 60, wide: false });
    assert.deepEqual(headers(out), ["ID", "NAME", "KIND"]);
    assert.deepEqual(overWidth(out, 60), []);
    const narrow = table(cols, rows, { width: 40, wide: false });
    assert.deepEqual(overWidth(narrow, 40), []);
    // KIND (priority 5) goes before NAME (9) is cut; NAME is then cut to what is left, with an ellipsis.
    assert.deepEqual(headers(narrow), ["ID", "NAME"]);
    assert.match(narrow, /^id_0001 {2}a name that is rather long for…$/m, narrow);
  });

  test("a column is never cut to keep a less important one; the columns always kept are cut last, lines at the width", () => {
    const out = table(cols, rows, { width: 24, wide: false });
    assert.deepEqual(headers(out), ["ID", "NAME"]);
    assert.deepEqual(overWidth(out, 24), []);
    const tiny = table(cols, rows, { width: 5, wide: false });
    assert.deepEqual(overWidth(tiny, 5), []);
    assert.match(tiny, /^id_0…$/m);
  });

  test("display width: wide characters take two columns, combining marks none", () => {
    const out = table(["ID", { header: "NAME", priority: 1, min: 4 }], [["v1", "日本語の声のなまえ"], ["v2", "Zoe\u0301"]], { width: 14, wide: false });
    assert.deepEqual(overWidth(out, 14), []);
    assert.match(out, /^v1 {2}日本語の…$/m);
    assert.match(out, /^v2 {2}Zoe\u0301$/m);
  });

  test("the usage text: paragraphs reflowed, entries keep their column, nothing over the width", () => {
    const text = `Usage: gateway thing [--one] [--two] [--three] [--four] [--five]\n\nA paragraph that was written on two lines of the source, long enough to\nneed wrapping at forty columns.\n  -o, --output FILE    where to write the answer (default: standard output)\n                       when it is not a terminal\n`;
    const out = wrapHelp(text, 50);
    assert.deepEqual(overWidth(out, 50), []);
    assert.match(out, /^A paragraph that was written on two lines of the$/m, out);
    assert.match(out, /^ {2}-o, --output FILE {4}where to write the answer$/m, out);
    assert.match(out, /^ {23}\(default: standard output\)$/m, out);
    // Fewer than 24 columns left for the description: it goes under the left part.
    const narrow = wrapHelp(text, 40);
    assert.deepEqual(overWidth(narrow, 40), []);
    assert.match(narrow, /^Usage: gateway thing \[--one\] \[--two\]\n {11}\[--three\] \[--four\] \[--five\]$/m, narrow);
    assert.match(narrow, /^ {2}-o, --output FILE\n {6}where to write the answer/m, narrow);
    assert.equal(wrapHelp(text, 200), text.replace("to\nneed", "to need").replace(")\n                       when", ") when"));
  });
});

describe("the CLI at 80 and 120 columns against a gateway", () => {
  let gw: TestGateway;
  let dir: string;
  let key: string;
  let session: string;
  const run = (args: string[], env: Record<string, string> = {}, credential = key) => runCli(args, { url: gw.url, key: credential, cwd: dir, env });

  before(async () => {
    gw = await startGateway("sqlite");
    dir = mkdtempSync(join(tmpdir(), "gw-cli-width-"));
    const user = await gw.register();
    key = user.api_key;
    session = user.session_token;
    await gw.deposit(user.user_id, 20);
    // The tests below make a few hundred calls in a minute: past the tier's requests per minute, the SDK
    // would wait for the window (Retry-After) and the test would only be slower.
    const limits = await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000, per_model_rpm: 100_000 } });
    assert.equal(limits.status, 200, JSON.stringify(limits.json));
    // Something in every table: a speech call, an image job, a key with a long name and controls, an invite.
    const speech = await gw.request("POST", "/v1/audio/speech", { token: key, body: { input: "Hello there.", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(speech.status, 200);
    const job = await gw.request("POST", "/v1/images/generations", { token: key, body: { model: "imgA-v4", prompt: "a lighthouse at dawn" } });
    await gw.waitForJob(key, job.json.id as string);
    const created = await gw.request("POST", "/v1/auth/keys", {
      token: key,
      body: { name: "the key of the build server in the basement, rack four", spend_limit_usd: 5, models: ["alpha-*", "imgA-v4", "imgB-2-pro"], rpm: 30, expires_at: "2030-01-01T00:00:00Z" },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const invite = await gw.request("POST", `/v1/orgs/${user.org_id}/invites`, { token: session, body: { email: "a.colleague.with.a.long.address@example.com", role: "viewer" } });
    assert.equal(invite.status, 201, JSON.stringify(invite.json));
  });
  after(async () => {
    await gw?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Every table command, with the columns `--wide` shows. */
  const TABLES: { args: string[]; all: string[]; session?: true }[] = [
    { args: ["requests"], all: ["ID", "KIND", "MODEL", "STATUS", "COST_USD", "LATENCY_MS", "JOB", "CREATED"] },
    { args: ["keys", "list"], all: ["KEY_ID", "NAME", "PREFIX", "MODE", "SPEND", "EXPIRES", "MODELS", "RPM", "LAST_USED"] },
    { args: ["jobs"], all: ["ID", "KIND", "MODEL", "STATUS", "HOLD_USD", "COST_USD", "CREATED"] },
    { args: ["voices", "--provider", "all"], all: ["VOICE_ID", "PROVIDER", "NAME", "ABOUT"] },
    { args: ["usage", "--by", "model"], all: ["MODEL", "REQUESTS", "COST_USD", "CHARACTERS", "IMAGES"] },
    { args: ["usage", "--by", "key"], all: ["KEY", "REQUESTS", "COST_USD", "CHARACTERS", "IMAGES"] },
    { args: ["orgs", "list"], all: ["ORG_ID", "NAME", "ROLE", "BALANCE_USD", "TIER", "CREATED"], session: true },
    { args: ["orgs", "members"], all: ["USER_ID", "EMAIL", "ROLE", "JOINED"], session: true },
    { args: ["orgs", "invites"], all: ["INVITE_ID", "EMAIL", "ROLE", "STATUS", "EXPIRES", "CREATED"], session: true },
  ];

  for (const width of [80, 120]) {
    test(`at ${width} columns no table line is wider than ${width}; the first column (the id) is always there`, async () => {
      for (const t of TABLES) {
        const out = await run(t.args, { COLUMNS: String(width) }, t.session ? session : key);
        assert.equal(out.code, 0, `${t.args.join(" ")}: ${out.stderr}`);
        assert.deepEqual(overWidth(out.stdout, width), [], `${t.args.join(" ")} at ${width}:\n${out.stdout}`);
        assert.equal(headers(out.stdout)[0], t.all[0], t.args.join(" "));
        assert.ok(out.stdout.split("\n").length >= 2, `${t.args.join(" ")}: rows`);
      }
    });

    test(`at ${width} columns --wide shows every column, uncut`, async () => {
      for (const t of TABLES) {
        const out = await run([...t.args, "--wide"], { COLUMNS: String(width) }, t.session ? session : key);
        assert.equal(out.code, 0, `${t.args.join(" ")}: ${out.stderr}`);
        assert.deepEqual(headers(out.stdout).filter((h) => h !== "*"), t.all, t.args.join(" "));
        assert.ok(!out.stdout.includes("…"), `${t.args.join(" ")}: nothing cut`);
      }
      const keys = await run(["keys", "list", "--wide"], { COLUMNS: String(width) });
      assert.ok(keys.stdout.includes("the key of the build server in the basement, rack four"));
    });

    test(`at ${width} columns every usage text fits (and none is wider than 80)`, async () => {
      for (const topic of [null, ...COMMANDS]) {
        const out = await run(topic === null ? ["--help"] : ["help", topic], { COLUMNS: String(width) });
        assert.equal(out.code, 0, out.stderr);
        assert.deepEqual(overWidth(out.stdout, Math.min(width, 80)), [], `help ${topic ?? ""} at ${width}`);
      }
      const mistake = await run(["voices", "--provider", "gamma"], { COLUMNS: String(width) });
      assert.equal(mistake.code, 2);
      assert.deepEqual(overWidth(mistake.stderr, width), []);
    });
  }

  test("at 80 columns the less important columns give way: requests keep the id, model, status and cost", async () => {
    const narrow = await run(["requests"], { COLUMNS: "80" });
    assert.deepEqual(headers(narrow.stdout), ["ID", "MODEL", "STATUS", "COST_USD"]);
    assert.match(narrow.stdout, /^req_\w+\s+imgA-v4\s+succeeded\s+0\.054$/m);
    const wider = await run(["requests"], { COLUMNS: "120" });
    assert.deepEqual(headers(wider.stdout), ["ID", "KIND", "MODEL", "STATUS", "COST_USD", "CREATED"]);
    const keys = await run(["keys", "list"], { COLUMNS: "80" });
    assert.match(keys.stdout, /^key_\w+ {2}the key of the [^\n]*… +live +0 USD of 5 USD per month$/m, "a long key name is cut, the spend stays");
  });

  test("into a pipe (no COLUMNS, not a terminal) nothing is dropped or cut", async () => {
    const out = await run(["requests"]);
    assert.deepEqual(headers(out.stdout), TABLES[0].all);
    const keys = await run(["keys", "list"]);
    assert.deepEqual(headers(keys.stdout), TABLES[1].all);
    assert.ok(keys.stdout.includes("the key of the build server in the basement, rack four"));
  });

  test("voices: 50 by default with a note on stderr, --limit N, --all; --json is the whole answer unless a limit is given", async () => {
    const whole = await run(["voices", "--json"]);
    const total = (JSON.parse(whole.stdout) as { data: unknown[] }).data.length;
    assert.ok(total > VOICES_LIMIT, `${total} voices`);
    const first = await run(["voices"], { COLUMNS: "80" });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout.trimEnd().split("\n").length, 1 + VOICES_LIMIT);
    assert.match(first.stderr, new RegExp(`^${VOICES_LIMIT} of ${total} voices: --limit N shows more, --all every one`, "m"));
    const five = await run(["voices", "-l", "5"]);
    assert.equal(five.stdout.trimEnd().split("\n").length, 6);
    const all = await run(["voices", "--all"]);
    assert.equal(all.stdout.trimEnd().split("\n").length, 1 + total);
    assert.equal(all.stderr, "", "no note when every voice is shown");
    const three = await run(["voices", "--json", "--limit", "3"]);
    assert.equal((JSON.parse(three.stdout) as { data: unknown[] }).data.length, 3);
    const both = await run(["voices", "--all", "--limit", "3"]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /give --limit N or --all, not both/);
  });

  test("a pipe closed early (gateway voices --all | head -1) ends the CLI quietly", async () => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GATEWAY_") && !k.startsWith("NODE_TEST")) env[k] = v;
    const child = spawn(process.execPath, [CLI_MAIN, "voices", "--all"], { cwd: dir, env: { ...env, GATEWAY_URL: gw.url, GATEWAY_API_KEY: key }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.once("close", (c) => resolve(c)));
    assert.equal(stderr, "");
    assert.equal(code, 0);
  });
});
