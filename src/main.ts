/**
 * Entry point: `node src/main.ts serve` (the gateway with its job runner), `node src/main.ts worker`
 * (the job runner only) or `node src/main.ts migrate` (apply migrations and exit). Configuration comes from the environment (config.ts, D11).
 */
import { flushCompileCache } from "node:module";
import pino from "pino";
import { type Config, loadConfig } from "./config.ts";
import { buildApp } from "./http/app.ts";
import { readyFacts, readyMessage, readySummary } from "./http/ready.ts";
import { startMetricsListener } from "./http/routes/ops.ts";
import { compactWhenIdle, tuneCollector } from "./memory.ts";
import { createServices, type Services } from "./services.ts";
import { migrate, openDatabase } from "./storage/db.ts";

/**
 * The services of a `serve` or `worker` process over a migrated database: `createServices` (which checks
 * `UPSTREAMS` before opening anything), then the pending migrations, before any request or job is taken.
 * @throws the migration's error, after closing what was opened.
 */
async function startServices(config: Config): Promise<Services> {
  const services = await createServices(config);
  try {
    await migrate(services.db);
  } catch (err) {
    await services.close();
    throw err;
  }
  return services;
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const services = await startServices(config);
  const app = await buildApp(services);
  services.startRunner();
  let metrics: Awaited<ReturnType<typeof startMetricsListener>> | null = null;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "shutting down: draining in-flight requests");
    try {
      await app.close();
      await metrics?.close();
      await services.close();
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  await app.listen({ port: config.port, host: config.host });
  metrics = config.metricsPort === null ? null : await startMetricsListener(services, config.metricsPort, config.metricsHost);
  const facts = readyFacts(
    services,
    metrics
      ? `http://${config.metricsHost}:${metrics.port}/metrics`
      : config.metricsToken
        ? "GET /metrics with METRICS_TOKEN"
        : "off (set METRICS_TOKEN or METRICS_PORT)",
  );
  app.log.info(facts, readyMessage(facts));
  // A person running `npm start` in a terminal gets the same facts as a short block, after the JSON line;
  // a log pipeline (stdout not a terminal) keeps pure JSON lines.
  if (process.stdout.isTTY) writeAfterLog(app.log, `\n${readySummary(facts)}\n`);
  // Give back the heap that start-up grew, and the heap of each busy period once it is over.
  compactWhenIdle(app.server);
  // With NODE_COMPILE_CACHE set (the npm scripts set it), write the cache now rather than at exit, so a
  // process that is killed still leaves the next start a warm cache (no TypeScript stripper loaded).
  flushCompileCache();
}

/**
 * Writes `text` to the destination of `log` (a pino logger) behind the lines it already holds: pino writes
 * asynchronously, so a direct `process.stdout.write` could come out before them. Falls back to stdout
 * for a logger without a pino stream.
 */
function writeAfterLog(log: object, text: string): void {
  const stream = (log as Record<symbol, unknown>)[pino.symbols.streamSym] as { write?: (s: string) => unknown } | undefined;
  if (typeof stream?.write === "function") stream.write(text);
  else process.stdout.write(text);
}

/** `npm run worker`: the job runner and sweep only, no HTTP (docs/architecture.md "job dispatch"). */
async function worker(): Promise<void> {
  const config = loadConfig();
  const services = await startServices(config);
  const runner = services.startRunner();
  services.log.info({ worker: runner.workerId, database: services.db.dialect }, "worker ready");
  flushCompileCache();
  compactWhenIdle(null);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    services.log.info({ signal, in_flight: runner.inFlight }, "worker stopping: handing claimed jobs back");
    try {
      await services.close();
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** `node src/main.ts migrate`: applies the pending migrations and exits. */
async function migrateOnly(): Promise<void> {
  const config = loadConfig();
  const db = openDatabase(config.databaseUrl);
  try {
    await migrate(db);
    console.log(`migrations applied (${db.dialect})`);
  } finally {
    await db.close();
  }
}

// The runtime is Node 24 (the `node` dev dependency, which `npm start` and the other scripts run). The
// `engines` floor of package.json (22.19) is what installing needs; a direct `node src/main.ts` on an
// older Node stops here with a message instead of failing somewhere later.
if (Number(process.versions.node.split(".")[0]) < 24) {
  console.error(`the gateway runs on Node.js 24 (this is ${process.version}): start it with 'npm start' (the project's own Node 24) or run ./node_modules/.bin/node src/main.ts`);
  process.exit(2);
}

const role = process.argv[2] ?? "serve";
const roles: Record<string, () => Promise<void>> = { serve, worker, migrate: migrateOnly };
const run = roles[role];
if (!run) {
  console.error(`unknown role '${role}'; use one of: ${Object.keys(roles).join(", ")}`);
  process.exit(2);
}
// Before any request or job: short-lived objects stay in the young generation (memory.ts).
tuneCollector();
run().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
