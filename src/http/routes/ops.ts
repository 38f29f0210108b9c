/**
 * Operations endpoints for load balancers and monitoring: `GET /healthz` (liveness: the process answers),
 * `GET /readyz` (readiness: database and blob storage reachable, and Redis when configured with
 * `LIMITS_ON_STORE_ERROR=closed`; 503 otherwise; an unreachable Redis in `open` mode is reported only)
 * and `GET /metrics` (Prometheus text format), which needs `METRICS_TOKEN` on the API port, or is served
 * without a token on its own listener (`METRICS_PORT`, loopback by default: {@link startMetricsListener}).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { openHoldTotals } from "../../billing/stats.ts";
import { jobCountsByStatus } from "../../jobs/stats.ts";
import { holdsOpen, holdsOpenUsd, jobsByStatus, registry } from "../../metrics.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { requireMetricsToken } from "../auth.ts";
import { healthSchema, metricsSchema, readySchema } from "../schemas/ops.ts";

/** Runs `check` with a time limit; resolves to "ok" or the error message. */
async function probe(check: () => Promise<unknown>, timeoutMs = 2000): Promise<string> {
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs).unref()),
    ]);
    return "ok";
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

export function opsRoutes(app: App, services: Services): void {
  app.get("/healthz", { schema: healthSchema }, async () => ({ status: "ok" }));

  app.get("/readyz", { schema: readySchema }, async (_req, reply) => {
    const checks: Record<string, string> = {
      database: await probe(() => services.db.ping()),
      storage: await probe(() => services.blobs.ping()),
    };
    if (services.config.redisUrl) checks.redis = await probe(() => services.limiter.ping());
    // With LIMITS_ON_STORE_ERROR=open the gateway serves without Redis: report it, stay ready.
    const required = Object.entries(checks).filter(([k]) => k !== "redis" || services.config.limitsOnStoreError === "closed");
    const ready = required.every(([, v]) => v === "ok");
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "not_ready", checks });
  });

  // With METRICS_PORT the metrics have their own listener; the API port does not serve them at all.
  if (services.config.metricsPort === null) {
    app.get("/metrics", { schema: metricsSchema, onRequest: requireMetricsToken(services) }, async (_req, reply) => {
      return reply.type(registry.contentType).send(await renderMetrics(services));
    });
  }
}

/**
 * The Prometheus text of this process. Gauges of shared state (open holds, jobs by status) are read from
 * the database at scrape time, so every process reports all of it; a database failure leaves them as
 * they were and is logged.
 */
export async function renderMetrics(services: Services): Promise<string> {
  try {
    const holds = await openHoldTotals(services.db.kysely);
    holdsOpen.set(holds.count);
    holdsOpenUsd.set(holds.micros / 1_000_000);
    const jobs = await jobCountsByStatus(services.db.kysely);
    jobsByStatus.reset();
    for (const j of jobs) jobsByStatus.set({ kind: j.kind, status: j.status }, j.count);
  } catch (err) {
    services.log.warn({ err }, "metrics: database gauges unavailable");
  }
  return registry.metrics();
}

/**
 * The metrics listener (`METRICS_PORT` on `METRICS_HOST`, default loopback): `GET /metrics` without a
 * token, 404 for anything else. Keep it off public networks: it shows deposits, holds and admin traffic.
 * @returns the bound port and `close()`.
 */
export async function startMetricsListener(services: Services, port: number, host: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n");
      return;
    }
    renderMetrics(services).then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => res.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("metrics unavailable\n"),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
