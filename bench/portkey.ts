/**
 * Portkey's open-source gateway, the peer of the `peer` row (bench/peer.ts), lives in its own small
 * package, `bench/portkey/` (a package.json pinning `@portkey-ai/gateway` exactly and its
 * package-lock.json), installed there on first use into `bench/portkey/node_modules` (ignored by git). It
 * is not a dependency of the project: its `gateway` bin would otherwise take `node_modules/.bin/gateway`
 * from this project's CLI (issue 42).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The folder of the peer's package. */
export const PORTKEY_DIR = join(import.meta.dirname, "portkey");

const PACKAGE = "@portkey-ai/gateway";

/** The version bench/portkey/package.json pins (exactly, e.g. `1.15.2`). */
export function portkeyVersion(): string {
  const pkg = JSON.parse(readFileSync(join(PORTKEY_DIR, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  return pkg.dependencies[PACKAGE];
}

/**
 * The path of Portkey's server script (`build/start-server.js`), installing the pinned version first when
 * it is missing or another version is installed: `npm ci --ignore-scripts` in bench/portkey (its lock, no
 * install scripts: the published build runs as it is). Throws when npm fails (no network on a first run).
 */
export function ensurePortkey(): string {
  const version = portkeyVersion();
  const installed = join(PORTKEY_DIR, "node_modules", PACKAGE, "package.json");
  const current = existsSync(installed) ? (JSON.parse(readFileSync(installed, "utf8")) as { version: string }).version : null;
  if (current !== version) {
    console.log(`\n(installing Portkey ${version} for the peer row: npm ci in bench/portkey, once)`);
    execFileSync("npm", ["ci", "--prefix", PORTKEY_DIR, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], { stdio: ["ignore", "inherit", "inherit"] });
  }
  return join(PORTKEY_DIR, "node_modules", PACKAGE, "build", "start-server.js");
}
