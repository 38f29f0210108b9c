/**
 * The `gateway` CLI under a real pseudo-terminal (issue 28: "the CLI fits the terminal"). `script(1)`
 * (util-linux) gives the CLI a terminal; `stty cols N` inside it sets the width the CLI reads. The CLI
 * follows an image job of a real gateway on loopback whose simulator takes a few seconds and reports
 * progress, so the progress line is redrawn many times. Every redraw must fit in the width (no wrap),
 * and the percentage and the elapsed time must be on the line at 40, 80 and 120 columns.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const MAIN = join(import.meta.dirname, "../../packages/cli/src/main.ts");
const HAS_SCRIPT = spawnSync("script", ["--version"]).status === 0;

/** Quotes `s` for a POSIX shell. */
const sh = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Runs the CLI with `args` under a pseudo-terminal `columns` wide and resolves with everything the
 * terminal received (stdout and stderr together, as a person sees them).
 */
function underTerminal(columns: number, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; screen: string }> {
  const inner = `stty cols ${columns} rows 24 && exec ${[process.execPath, MAIN, ...args].map(sh).join(" ")}`;
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GATEWAY_") && !k.startsWith("NODE_TEST")) childEnv[k] = v;
  return new Promise((resolve, reject) => {
    // Asynchronous: the gateway answering the CLI runs in this process.
    const child = spawn("script", ["-qfec", inner, "/dev/null"], { cwd, env: { ...childEnv, ...env, COLUMNS: "", TERM: "xterm" }, stdio: ["pipe", "pipe", "pipe"] });
    let screen = "";
    child.stdout.on("data", (d: Buffer) => (screen += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (screen += d.toString("utf8")));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, screen }));
  });
}

/**
 * The terminal output as the rows a person would see drawn: each line (`\r\n` from the terminal's
 * newline translation) cut at every carriage return into the texts drawn from the start of the row, with
 * "erase to end of line" removed.
 */
function drawnTexts(screen: string): string[] {
  return screen
    .replaceAll("\r\n", "\n")
    .split("\n")
    .flatMap((line) => line.split("\r"))
    .map((t) => t.replaceAll("\x1b[K", ""))
    .filter((t) => t !== "");
}

describe("gateway image under a pseudo-terminal", { skip: HAS_SCRIPT ? false : "needs script(1) from util-linux" }, () => {
  let gw: TestGateway;
  let dir: string;
  let key: string;
  before(async () => {
    // About 2.5 s per image (8 s typical x 0.3), progress reported every 500 ms.
    gw = await startGateway("sqlite", { SIM_LATENCY_SCALE: "0.3" });
    const user = await gw.register();
    key = user.api_key;
    await gw.deposit(user.user_id, 5);
    dir = mkdtempSync(join(tmpdir(), "gw-cli-tty-"));
  });
  after(async () => {
    await gw?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const columns of [40, 80, 120]) {
    test(`${columns} columns: every redraw of the progress line fits, with the percentage and the time`, async () => {
      const run = await underTerminal(columns, ["image", "a lighthouse at dawn", "--model", "imgA-v4", "-o", `c${columns}.png`], { GATEWAY_URL: gw.url, GATEWAY_API_KEY: key }, dir);
      assert.equal(run.code, 0, run.screen);
      const texts = drawnTexts(run.screen);
      const progress = texts.filter((t) => /job_\S*|\d\d:\d\d$/.test(t) && /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] /.test(t));
      assert.ok(progress.length >= 3, `redraws seen:\n${run.screen}`);
      for (const t of progress) {
        assert.ok([...t].length <= columns - 1, `${[...t].length} characters at ${columns} columns: ${JSON.stringify(t)}`);
        assert.match(t, / \d\d:\d\d$/, `the elapsed time ends the line: ${JSON.stringify(t)}`);
      }
      const withPercent = progress.filter((t) => /processing\s+(\[[█░]+\] +)?\d{1,3}% {2}\d\d:\d\d$/.test(t));
      assert.ok(withPercent.length >= 1, `a line with the percentage:\n${progress.join("\n")}`);
      if (columns >= 80) assert.ok(withPercent.some((t) => /\[[█░]{8,}\]/.test(t)), "a bar at 80 columns and more");
      if (columns === 120) assert.ok(withPercent.some((t) => /\[[█░]{24}\]/.test(t)), "the full bar at 120 columns");
      // The whole job id at 80 columns and more; cut with an ellipsis at 40.
      if (columns >= 80) assert.ok(progress.every((t) => /job_[0-9A-Za-z]{30}/.test(t)), progress.join("\n"));
      else assert.ok(withPercent.every((t) => t.includes("…")), withPercent.join("\n"));
      // The rest of the output (file, cost and balance) is plain lines.
      assert.ok(texts.some((t) => t === `c${columns}.png`), run.screen);
    });
  }
});
