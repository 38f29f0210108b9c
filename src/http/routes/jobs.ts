/**
 * Asynchronous media jobs (spec "POST /v1/images/generations", "POST /v1/videos/generations",
 * "GET /v1/jobs/{id}"; D3, D19): 202 with the job object for a new job, 200 for an idempotent replay.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { getJob, submitJob } from "../../jobs/jobs.ts";
import { checkReferenceHosts, type JobSpec, validateImageJob, validateVideoJob } from "../../jobs/validate.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";
import { callOf, guardOf, principalOf } from "../auth.ts";
import { createGenmediaJobSchema, createImageJobSchema, createVideoJobSchema, getJobSchema } from "../schemas/jobs.ts";
import { simulateHeader } from "./speech.ts";

export function jobRoutes(app: App, services: Services): void {
  const deps = { db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl };

  const submit =
    (validate: (body: Record<string, unknown>) => JobSpec) => async (req: FastifyRequest, reply: FastifyReply) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const spec = validate(body);
      await guardOf(services, req).model(spec.model.id);
      await checkReferenceHosts(spec, services.resolveHost);
      const simulate = simulateHeader(req.headers["x-svc-simulate"]);
      const out = await submitJob(deps, principalOf(req), spec, body, simulate, callOf(req));
      if (!out.replayed) services.nudgeRunner();
      return reply.code(out.replayed ? 200 : 202).send(out.job);
    };

  app.post("/v1/images/generations", { schema: createImageJobSchema }, submit(validateImageJob));
  app.post("/v1/videos/generations", { schema: createVideoJobSchema }, submit((b) => validateVideoJob(b, { genmediaOnly: false })));
  app.post("/v1/genmedia/jobs", { schema: createGenmediaJobSchema }, submit((b) => validateVideoJob(b, { genmediaOnly: true })));
  app.get(
    "/v1/jobs/:id",
    { schema: getJobSchema },
    async (req) => getJob(deps.db, deps.publicBaseUrl, principalOf(req).accountId, (req.params as { id: string }).id),
  );
}
