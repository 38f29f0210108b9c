/**
 * The `cli` row (issue 42, point 2): how long the `gateway` command takes from its start to its exit, as
 * a user runs it: `node_modules/.bin/gateway` started by the machine's own `node` (often Node 20: the
 * launcher re-runs the CLI with the project's Node 24), and by Node 24 directly; `--help` (no network)
 * and commands that call a gateway on loopback (`keys list`, `requests`, and `voices`, which receives the
 * whole library of 3,000 voices and shows 50). Each command runs `BENCH_CLI_RUNS` (10) times after one
 * warm-up run (Node's compile cache warm, as from the second start on); one more row runs `--help` with
 * an empty compile cache (the first start after an install or a change). CPU time is the children's
 * user + system time (Linux `/proc/self/stat`, 10 ms ticks; the launcher's Node 24 child included), per
 * run. `npx gateway --help` is measured for comparison: npm's own start comes first.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { quantile } from "./paced.ts";
import { benchUser, row, startGatewayProcess } from "./lib.ts";

const ROOT = join(import.meta.dirname, "..");
const BIN = join(ROOT, "node_modules", ".bin", "gateway");
const runs = Math.max(1, Number(process.env.BENCH_CLI_RUNS ?? 10));

/** The children's CPU time so far (user + system), ms: fields 16 and 17 of /proc/self/stat, in clock ticks (100 per second). */
function childrenCpuMs(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After the command name: field 3 is index 0, so cutime (16) and cstime (17) are 13 and 14.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/**
 * The first `node` on the PATH outside any node_modules/.bin (what a shell runs for `#!/usr/bin/env
 * node` outside npm's scripts), with its version; null when there is none.
 */
function systemNode(): { path: string; version: string } | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "" || dir.includes("node_modules")) continue;
    const path = join(dir, "node");
    try {
      accessSync(path, constants.X_OK);
    } catch {
      continue;
    }
    const version = spawnSync(path, ["--version"], { encoding: "utf8" }).stdout.trim();
    return { path, version };
  }
  return null;
}

interface Timing {
  mean: number;
  p50: number;
  max: number;
  cpu: number;
}

/** Runs `argv` `n` times (after `warmup` unmeasured runs) and times each run from spawn to exit. */
function time(argv: string[], env: Record<string, string>, n: number, warmup = 1): Timing {
  const once = () => {
    const r = spawnSync(argv[0], argv.slice(1), { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`${argv.join(" ")} exited ${r.status}: ${String(r.stderr).slice(0, 500)}`);
  };
  for (let i = 0; i < warmup; i++) once();
  const ms: number[] = [];
  const cpu0 = childrenCpuMs();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    once();
    ms.push(performance.now() - t0);
  }
  const cpu = (childrenCpuMs() - cpu0) / n;
  ms.sort((a, b) => a - b);
  return { mean: ms.reduce((a, b) => a + b, 0) / n, p50: quantile(ms, 0.5), max: ms[ms.length - 1], cpu };
}

/** The `cli` row: prints the start time of the CLI's commands (see the module's comment). */
export async function benchCliStart(): Promise<void> {
  const gw = await startGatewayProcess("sqlite");
  try {
    const user = await benchUser(gw.url);
    // As a user's shell runs it: PATH without the node_modules/.bin that `npm run` puts first.
    const path = (process.env.PATH ?? "").split(delimiter).filter((d) => !d.includes("node_modules")).join(delimiter);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("npm_") && !k.startsWith("GATEWAY_") && k !== "NODE_COMPILE_CACHE") env[k] = v;
    Object.assign(env, { PATH: path, GATEWAY_URL: gw.url, GATEWAY_API_KEY: user.apiKey });
    const system = systemNode();
    const launchers: { label: string; argv: string[] }[] = [];
    if (system !== null && Number(system.version.slice(1).split(".")[0]) < 24) launchers.push({ label: `${system.version} -> 24`, argv: [system.path, BIN] });
    launchers.push({ label: process.version, argv: [process.execPath, BIN] });
    const widths = [30, 18, 9, 9, 9, 9];
    console.log(`\n## CLI start: from spawn to exit, ${runs} runs each after one warm-up (compile cache warm); gateway on loopback`);
    console.log(row(["command", "node", "mean ms", "p50 ms", "max ms", "CPU ms"], widths));
    let slowest = 0;
    for (const args of [["--help"], ["keys", "list"], ["requests"], ["voices"]]) {
      for (const l of launchers) {
        const t = time([...l.argv, ...args], env, runs);
        slowest = Math.max(slowest, t.mean);
        console.log(row([`gateway ${args.join(" ")}`, l.label, t.mean.toFixed(0), t.p50.toFixed(0), t.max.toFixed(0), t.cpu.toFixed(0)], widths));
      }
    }
    // The first start after an install or a change: nothing in the compile cache.
    const cold: number[] = [];
    let coldCpu = 0;
    for (let i = 0; i < Math.min(runs, 5); i++) {
      const cache = mkdtempSync(join(tmpdir(), "gw-cli-cache-"));
      try {
        const t = time([process.execPath, BIN, "--help"], { ...env, NODE_COMPILE_CACHE: cache }, 1, 0);
        cold.push(t.mean);
        coldCpu += t.cpu;
      } finally {
        rmSync(cache, { recursive: true, force: true });
      }
    }
    console.log(row(["gateway --help, cache empty", process.version, (cold.reduce((a, b) => a + b, 0) / cold.length).toFixed(0), "", Math.max(...cold).toFixed(0), (coldCpu / cold.length).toFixed(0)], widths));
    const npx = spawnSync("npx", ["--version"], { env, encoding: "utf8" });
    if (npx.status === 0) {
      const t = time(["npx", "gateway", "--help"], env, Math.min(runs, 5));
      console.log(row(["npx gateway --help", `npm ${npx.stdout.trim()}`, t.mean.toFixed(0), t.p50.toFixed(0), t.max.toFixed(0), t.cpu.toFixed(0)], widths));
    }
    console.log(`slowest command (mean, cache warm): ${slowest.toFixed(0)} ms (issue 42 asks well under 1 s)`);
  } finally {
    await gw.stop();
  }
}
