/**
 * A media job submit from an HTTP request (spec "POST /v1/images/generations", "POST /v1/videos/generations",
 * D3, D31, D37): the one sequence shared by the native submit routes and the OpenAI dialect, so a dialect's
 * job has the same idempotency, model allow-list, reference and webhook checks, hold, caps and runner start
 * as a native one.
 */
import type { FastifyRequest } from "fastify";
import type { MediaJobRequest } from "../contracts/jobs.ts";
import { type JobView, submitJob } from "../jobs/jobs.ts";
import type { JobDialectFacts } from "../jobs/dialect-facts.ts";
import { checkReferenceHosts, type JobSpec, type OwnReferenceUrl } from "../jobs/validate.ts";
import type { Services } from "../services.ts";
import { checkWebhookUrl } from "../webhooks/urls.ts";
import { principalOf } from "./auth.ts";
import { paidCallOf } from "./call-context.ts";
import { withIdempotencyKey } from "./idempotency.ts";

/** What a submit answers: the job, whether it replayed an idempotency key (200) or is new (202), and the validated spec. */
export interface SubmittedJob {
  job: JobView;
  replayed: boolean;
  spec: JobSpec;
}

/**
 * Submits the job of `body` (a native job request, types checked) for the caller of `req`: the request's
 * `Idempotency-Key` header stands in for a missing `idempotency_key` (D37), `validate` reads the body into
 * a job spec, then the key's model allow-list (D34), the reference hosts (fail closed; `ownUrl` names the
 * gateway's own uploads, which are not resolved) and the webhook URL are checked before the submit places
 * the hold (with a dialect's facts, D47, written in its transaction). A job this process's runner can take at once starts in the submit's transaction; one left
 * pending is claimed by the runner, nudged here.
 * @throws AppError as `validate`, the checks and `submitJob` raise them (400, 402, 403, 409, 429).
 */
export async function submitFromRequest<B extends MediaJobRequest>(
  services: Services,
  req: FastifyRequest,
  body: B,
  validate: (body: B) => JobSpec,
  opts: { ownUrl?: OwnReferenceUrl; dialect?: JobDialectFacts } = {},
): Promise<SubmittedJob> {
  const keyed = withIdempotencyKey(body, req);
  const spec = validate(keyed);
  const { simulate, guard, call } = paidCallOf(services, req);
  await guard.model(spec.model.id);
  await checkReferenceHosts(spec, services.resolveHost, opts.ownUrl);
  if (spec.webhookUrl !== null) await checkWebhookUrl(spec.webhookUrl, services.webhookUrlPolicy, "webhook_url");
  const deps = { db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl };
  const retention = { windows: services.config.retention, withheld: services.withheldTexts };
  const out = await submitJob({ ...deps, starter: services.jobStarter(), events: services.paidCalls.events, retention }, principalOf(req), spec, keyed, simulate, call, opts.dialect);
  if (!out.replayed && !out.started) services.nudgeRunner();
  return { job: out.job, replayed: out.replayed, spec };
}
