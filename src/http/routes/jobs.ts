/**
 * Asynchronous media jobs (spec "POST /v1/images/generations", "POST /v1/videos/generations",
 * "GET /v1/jobs/{id}"; D3, D19): 202 with the job object for a new job, 200 for an idempotent replay; and
 * the job API of D30: the list, cancel, the event stream, `Prefer: wait=N` on submit and poll, and
 * `Retry-After` on the poll of a job that has not ended.
 */
import { PassThrough } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { MediaJobRequest } from "../../contracts/jobs.ts";
import { cancelJob } from "../../jobs/cancel.ts";
import { getJob, type JobView, listJobs } from "../../jobs/jobs.ts";
import { type JobSpec, validateImageJob, validateVideoJob } from "../../jobs/validate.ts";
import { pollAfterSeconds, watchJob } from "../../jobs/watch.ts";
import type { Services } from "../../services.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { OWN_IDEMPOTENCY } from "../idempotent-calls.ts";
import { submitFromRequest } from "../job-submit.ts";
import { jobWaits } from "../job-waits.ts";
import {
  cancelJobSchema,
  createGenmediaJobSchema,
  createImageJobSchema,
  createVideoJobSchema,
  getJobSchema,
  jobEventsSchema,
  listJobsSchema,
} from "../schemas/jobs.ts";
import type { App } from "../types.ts";

/** A comment line on an idle event stream this often, ms, so proxies do not drop it. */
const KEEP_ALIVE_MS = 15_000;

/**
 * The job submits (images, videos, genmedia): API key only, since a submit spends money under a key's
 * identity (usage records carry the key, D29/D32). The `Idempotency-Key` header stands in for a missing
 * `idempotency_key` (D37, job-submit.ts).
 */
export function jobRoutes(app: App, services: Services): void {
  const { honourWait } = jobWaits(app, services);

  /** Submits the job of `body` (the request's validated body) as `validate` reads it; `Prefer: wait` honoured. */
  const submit = async <B extends MediaJobRequest>(req: FastifyRequest, reply: FastifyReply, body: B, validate: (body: B) => JobSpec) => {
    const out = await submitFromRequest(services, req, body, validate);
    const job = await honourWait(req, reply, out.job);
    return reply.code(out.replayed ? 200 : 202).send(job);
  };

  app.post("/v1/images/generations", { schema: createImageJobSchema, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req, reply) => submit(req, reply, req.body, validateImageJob));
  app.post("/v1/videos/generations", { schema: createVideoJobSchema, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req, reply) =>
    submit(req, reply, req.body, (b) => validateVideoJob(b, { genmediaOnly: false })),
  );
  app.post("/v1/genmedia/jobs", { schema: createGenmediaJobSchema, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req, reply) =>
    submit(req, reply, req.body, (b) => validateVideoJob(b, { genmediaOnly: true })),
  );
}

/**
 * The job reads of D30 (list, get, cancel, event stream): an API key or a session token, so the web
 * console (signed in with a session, D8) can show and cancel the account's jobs.
 */
export function jobReadRoutes(app: App, services: Services): void {
  const { deps, watcher, honourWait } = jobWaits(app, services);

  app.get("/v1/jobs", { schema: listJobsSchema }, async (req) => {
    const q = req.query;
    const page = await listJobs(deps.db, deps.publicBaseUrl, principalOf(req), {
      limit: q.limit === undefined ? 20 : Number(q.limit),
      after: q.after ?? null,
      status: q.status ?? null,
      kind: q.kind ?? null,
      model: q.model ?? null,
    });
    return { object: "list", data: page.jobs, has_more: page.hasMore };
  });

  app.get("/v1/jobs/:id", { schema: getJobSchema }, async (req, reply) => {
    const first = await getJob(deps.db, deps.publicBaseUrl, principalOf(req), req.params.id);
    const job = await honourWait(req, reply, first);
    const retryAfter = pollAfterSeconds(job);
    if (retryAfter !== null) reply.header("Retry-After", String(retryAfter));
    return job;
  });

  app.post("/v1/jobs/:id/cancel", { schema: cancelJobSchema }, async (req) =>
    cancelJob(
      { db: deps.db, publicBaseUrl: deps.publicBaseUrl, sourceNamed: services.jobSourceNamed, log: services.log, changes: services.jobChanges },
      principalOf(req),
      req.params.id,
    ),
  );

  app.get("/v1/jobs/:id/events", { schema: jobEventsSchema }, async (req, reply) => {
    const w = watcher(reply);
    const events = watchJob(deps, principalOf(req), req.params.id, w.signal);
    let first: IteratorResult<JobView>;
    try {
      // Read before answering: an unknown job is a 404 in the D1 body, not an empty stream.
      first = await events.next();
    } catch (err) {
      w.done();
      throw err;
    }
    const stream = new PassThrough();
    const send = (job: JobView) => stream.write(`event: job\ndata: ${JSON.stringify(job)}\n\n`);
    if (!first.done) send(first.value);
    const keepAlive = setInterval(() => stream.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
    void (async () => {
      try {
        if (!first.done) for await (const job of events) send(job);
      } catch (err) {
        // The stream ends without a terminal event; the client reconnects or polls.
        req.log.warn({ err }, "job event stream failed");
      } finally {
        clearInterval(keepAlive);
        w.done();
        stream.end();
      }
    })();
    return reply
      .header("Cache-Control", "no-cache")
      .header("X-Accel-Buffering", "no")
      .type("text/event-stream; charset=utf-8")
      .send(stream);
  });
}
