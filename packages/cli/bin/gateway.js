#!/usr/bin/env node
// The `gateway` command of package.json's "bin" (node_modules/.bin/gateway after `npm ci`, through the
// packages/cli workspace). The CLI is TypeScript that Node 24 runs directly (packages/cli/src/main.ts);
// when `gateway` is started by an older Node on the PATH (after `npm link`, say), this file re-runs it
// with the project's own Node 24 (the `node` dev dependency), if installed.
//
// Start time (issue 42): Node's compile cache keeps the compiled (and type-stripped) modules of the CLI in
// node_modules/.cache/node-compile-cache, the folder `npm start` uses, so that a command does not strip
// and compile its TypeScript again at every start. NODE_COMPILE_CACHE, when set, takes precedence, and
// NODE_DISABLE_COMPILE_CACHE=1 turns it off (Node's own variables).
import { spawn } from "node:child_process";
import module from "node:module";
import process from "node:process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const main = join(here, "..", "src", "main.ts");
const cache = process.env.NODE_COMPILE_CACHE || join(root, "node_modules", ".cache", "node-compile-cache");
const major = Number(process.versions.node.split(".")[0]);

if (major >= 24) {
  // A cache that cannot be used (a read-only checkout) is skipped: enableCompileCache reports, never throws.
  module.enableCompileCache?.(cache);
  const { runCli } = await import(main);
  await runCli();
} else {
  const local = join(root, "node_modules", ".bin", process.platform === "win32" ? "node.cmd" : "node");
  if (!existsSync(local)) {
    process.stderr.write(`gateway needs Node.js 24 (this is ${process.version}); run 'npm ci' in the repository or put Node 24 on the PATH.\n`);
    process.exit(2);
  }
  const child = spawn(local, [main, ...process.argv.slice(2)], { stdio: "inherit", env: { ...process.env, NODE_COMPILE_CACHE: cache } });
  // Ctrl-C reaches the child through the terminal's process group; the launcher just waits for it.
  process.on("SIGINT", () => {});
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + 2 : 1)));
}
