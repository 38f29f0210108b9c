/**
 * Operations endpoints for load balancers and monitoring: `GET /healthz` (liveness: the process answers),
 * `GET /readyz` (readiness: database and blob storage reachable, and Redis when configured with
 * `LIMITS_ON_STORE_ERROR=closed`; 503 otherwise; an unreachable Redis in `open` mode is reported only)
 * and `GET /metrics` (Prometheus text format).
 */
import { openHoldTotals } from "../../billing/stats.ts";
import { jobCountsByStatus } from "../../jobs/stats.ts";
import { holdsOpen, holdsOpenUsd, jobsByStatus, registry } from "../../metrics.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";
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

  app.get("/metrics", { schema: metricsSchema }, async (_req, reply) => {
    // Gauges of shared state are read from the database at scrape time (every process sees all of it).
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
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}
