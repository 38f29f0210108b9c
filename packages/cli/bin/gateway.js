#!/usr/bin/env node
// The `gateway` command of package.json's "bin". The CLI is TypeScript that Node 24 runs directly
// (packages/cli/src/main.ts); when `gateway` is started by an older Node on the PATH (after `npm link`,
// say), this file re-runs it with the project's own Node 24 (the `node` dev dependency), if installed.
import { spawn } from "node:child_process";
import process from "node:process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const main = join(here, "..", "src", "main.ts");
const major = Number(process.versions.node.split(".")[0]);

if (major >= 24) {
  const { runCli } = await import(main);
  await runCli();
} else {
  const local = join(here, "..", "..", "..", "node_modules", ".bin", process.platform === "win32" ? "node.cmd" : "node");
  if (!existsSync(local)) {
    process.stderr.write(`gateway needs Node.js 24 (this is ${process.version}); run 'npm ci' in the repository or put Node 24 on the PATH.\n`);
    process.exit(2);
  }
  const child = spawn(local, [main, ...process.argv.slice(2)], { stdio: "inherit" });
  // Ctrl-C reaches the child through the terminal's process group; the launcher just waits for it.
  process.on("SIGINT", () => {});
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + 2 : 1)));
}
