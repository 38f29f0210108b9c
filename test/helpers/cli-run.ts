/**
 * Runs the `gateway` CLI as a child process for the CLI tests: `node packages/cli/src/main.ts ...` (or
 * `script`, such as the bin launcher) in `cwd`, with the gateway's URL as `GATEWAY_URL`, `key` as
 * `GATEWAY_API_KEY` (none when null or absent), `env` on top (GATEWAY_ORG...) and none of the caller's own
 * `GATEWAY_*` or `NODE_TEST*` variables; `input` goes to its stdin (else stdin is empty).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";

/** `packages/cli/src/main.ts`, the CLI's entry point. */
export const CLI_MAIN = join(import.meta.dirname, "../../packages/cli/src/main.ts");

/** What a run printed, and its exit status. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  opts: { url: string; key?: string | null; cwd: string; env?: Record<string, string>; input?: string; script?: string },
): Promise<CliRun> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GATEWAY_") && !k.startsWith("NODE_TEST")) env[k] = v;
  env.GATEWAY_URL = opts.url;
  if (opts.key !== undefined && opts.key !== null) env.GATEWAY_API_KEY = opts.key;
  Object.assign(env, opts.env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [opts.script ?? CLI_MAIN, ...args], { cwd: opts.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.end(opts.input ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}
