/**
 * `npm run build:console` (and `npm ci`, through the `prepare` script): builds the web console (console/,
 * issue 15) with Vite's `build()` API into `console/dist`, which the gateway serves at `/console/`
 * (src/http/routes/console.ts).
 *
 * Without Vite (an install with `--omit=dev`, as the production image's runtime stage does) it says so and
 * exits 0: such an install must not fail, and the image builds the console in its own stage (deploy/Dockerfile).
 * `--if-stale` builds only when a file under console/src (or the console's config) is newer than the last
 * build, which the browser tests use.
 */
import { existsSync, globSync, statSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const consoleDir = join(root, "console");
const distIndex = join(consoleDir, "dist", "index.html");

/** The newest modification time (ms) of the console's sources and configuration. */
export function newestSourceMs(): number {
  const files = [
    ...globSync("src/**/*", { cwd: consoleDir }),
    "index.html",
    "vite.config.ts",
    "tsconfig.json",
  ].map((f) => join(consoleDir, f));
  // The generated API types are sources of the bundle too.
  files.push(join(root, "packages/client/src/schema.ts"), join(root, "packages/client/src/errors.ts"));
  return Math.max(...files.filter((f) => existsSync(f)).map((f) => statSync(f).mtimeMs));
}

/** True when console/dist is missing or older than a source. */
export function consoleIsStale(): boolean {
  return !existsSync(distIndex) || statSync(distIndex).mtimeMs < newestSourceMs();
}

/** Builds console/dist; resolves once written. Throws what Vite throws (a syntax error, a missing import). */
export async function buildConsole(opts: { quiet?: boolean } = {}): Promise<void> {
  const { build } = await import("vite");
  await build({
    root: consoleDir,
    configFile: join(consoleDir, "vite.config.ts"),
    logLevel: opts.quiet ? "warn" : "info",
  });
}

async function main(): Promise<void> {
  try {
    import.meta.resolve("vite");
  } catch {
    console.log("build-console: Vite is not installed (a production install?): console/dist is not built.");
    return;
  }
  if (process.argv.includes("--if-stale") && !consoleIsStale()) {
    console.log("build-console: console/dist is up to date.");
    return;
  }
  const started = performance.now();
  // Quiet unless asked (`--verbose`): `npm ci` runs this, and a newcomer's first screen is the gateway's.
  await buildConsole({ quiet: !process.argv.includes("--verbose") });
  console.log(`build-console: console/dist built in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
}

if (import.meta.main) await main();
