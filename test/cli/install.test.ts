/**
 * What `npm ci` leaves (issue 42, points 2 and 7): `node_modules/.bin/gateway` is this project's CLI (the
 * packages/cli workspace's bin), not the benchmark's peer (Portkey's server, which now lives in
 * bench/portkey and is installed there by the benchmark), and every installed package's peer
 * dependencies are satisfied (`npm ls --all` reports no invalid or missing package: OpenTelemetry's API
 * is at a version that the gateway's SDK and the LiveKit agents' SDK both accept).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";

const ROOT = join(import.meta.dirname, "../..");

/** The environment of a child: none of the caller's `GATEWAY_*`, `NODE_TEST*` or `COLUMNS`. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GATEWAY_") && !k.startsWith("NODE_TEST") && k !== "COLUMNS") env[k] = v;
  return env;
}

describe("after npm ci", () => {
  test("node_modules/.bin/gateway is packages/cli/bin/gateway.js, and runs this project's CLI", () => {
    const bin = join(ROOT, "node_modules", ".bin", "gateway");
    assert.equal(realpathSync(bin), realpathSync(join(ROOT, "packages", "cli", "bin", "gateway.js")));
    // Run as a shell runs it: the file itself, through its `#!/usr/bin/env node` line.
    const run = spawnSync(bin, ["--help"], { cwd: ROOT, env: cleanEnv(), encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^gateway: the media gateway from the command line\n\nUsage: gateway <command> \[options\]\n/);
    assert.equal(run.stderr, "");
  });

  test("Portkey's gateway (the benchmark's peer) is not installed in the project, but pinned in bench/portkey", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    assert.ok(!("@portkey-ai/gateway" in { ...pkg.dependencies, ...pkg.devDependencies }));
    assert.ok(!existsSync(join(ROOT, "node_modules", "@portkey-ai", "gateway")), "a stale install: run npm ci");
    const peer = JSON.parse(readFileSync(join(ROOT, "bench", "portkey", "package.json"), "utf8")) as { dependencies: Record<string, string> };
    assert.match(peer.dependencies["@portkey-ai/gateway"], /^\d+\.\d+\.\d+$/, "an exact version");
    const lock = JSON.parse(readFileSync(join(ROOT, "bench", "portkey", "package-lock.json"), "utf8")) as { packages: Record<string, { version?: string }> };
    assert.equal(lock.packages["node_modules/@portkey-ai/gateway"].version, peer.dependencies["@portkey-ai/gateway"]);
  });

  test("every peer dependency is satisfied: npm ls --all finds nothing invalid or missing", () => {
    const run = spawnSync("npm", ["ls", "--all", "--loglevel=error"], { cwd: ROOT, env: cleanEnv(), encoding: "utf8" });
    const problems = run.stdout.split("\n").filter((l) => / invalid[: ]|UNMET DEPENDENCY|missing:/.test(l));
    assert.deepEqual(problems, []);
    assert.equal(run.status, 0, run.stderr);
  });
});
