/**
 * Asynchronous media jobs (spec "POST /v1/images/generations", "POST /v1/videos/generations",
 * "GET /v1/jobs/{id}"; D3, D19): 202 with the job object for a new job, 200 for an idempotent replay; and
 * the job API of D30: the list, cancel, the event stream, `Prefer: wait=N` on submit and poll, and
 * `Retry-After` on the poll of a job that has not ended.
 */
import { PassThrough } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { cancelJob } from "../../jobs/cancel.ts";
import { getJob, type JobListQuery, type JobView, listJobs, submitJob } from "../../jobs/jobs.ts";
import { checkReferenceHosts, type JobSpec, validateImageJob, validateVideoJob } from "../../jobs/validate.ts";
import { isTerminal, pollAfterSeconds, waitForJobEnd, watchJob } from "../../jobs/watch.ts";
import type { Services } from "../../services.ts";
import { checkWebhookUrl } from "../../webhooks/urls.ts";
import type { App } from "../app.ts";
import { callOf, guardOf, principalOf } from "../auth.ts";
import {
  cancelJobSchema,
  createGenmediaJobSchema,
  createImageJobSchema,
  createVideoJobSchema,
  getJobSchema,
  jobEventsSchema,
  listJobsSchema,
} from "../schemas/jobs.ts";
import { simulateHeader } from "./speech.ts";

/** The longest `Prefer: wait` honoured, seconds (D30). */
const MAX_WAIT_S = 60;
/** A comment line on an idle event stream this often, ms, so proxies do not drop it. */
const KEEP_ALIVE_MS = 15_000;

/**
 * The seconds of a `Prefer: wait=N` (RFC 7240; several preferences are comma-separated, a value may be
 * quoted), at most {@link MAX_WAIT_S}; null when absent or not a positive whole number (a preference the
 * server cannot honour is ignored, never refused).
 */
export function preferredWaitS(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header.join(",") : header;
  if (!value) return null;
  for (const pref of value.split(",")) {
    const m = /^\s*wait\s*=\s*"?(\d{1,6})"?\s*(;.*)?$/i.exec(pref);
    if (m) {
      const n = Number(m[1]);
      return n >= 1 ? Math.min(n, MAX_WAIT_S) : null;
    }
  }
  return null;
}

/**
 * The per-scope machinery of waits and event streams: `watcher` gives a signal that aborts when the client
 * goes away or the gateway closes; `honourWait` applies `Prefer: wait` (D30) to a job read or submit.
 */
function jobWaits(app: App, services: Services) {
  const deps = { db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl };

  // Waits and event streams end when the gateway closes, so a shutdown never waits for them.
  const open = new Set<AbortController>();
  app.addHook("preClose", async () => {
    for (const c of open) c.abort();
  });
  /** A signal that aborts when the client goes away or the gateway closes; `done()` forgets it. */
  const watcher = (reply: FastifyReply) => {
    const controller = new AbortController();
    open.add(controller);
    const onClose = () => controller.abort();
    reply.raw.once("close", onClose);
    return {
      signal: controller.signal,
      done: () => {
        open.delete(controller);
        reply.raw.off("close", onClose);
      },
    };
  };

  /** Honours `Prefer: wait` (D30): the job once it ended or after the wait; the header says it was applied. */
  const honourWait = async (req: FastifyRequest, reply: FastifyReply, job: JobView): Promise<JobView> => {
    const waitS = preferredWaitS(req.headers.prefer);
    if (waitS === null) return job;
    reply.header("Preference-Applied", `wait=${waitS}`);
    if (isTerminal(job)) return job;
    const w = watcher(reply);
    try {
      return await waitForJobEnd(deps, principalOf(req), job.id, waitS * 1000, w.signal, job);
    } finally {
      w.done();
    }
  };
  return { deps, watcher, honourWait };
}

/**
 * The job submits (images, videos, genmedia): API key only, since a submit spends money under a key's
 * identity (usage records carry the key, D29/D32).
 */
export function jobRoutes(app: App, services: Services): void {
  const { deps, honourWait } = jobWaits(app, services);

  const submit =
    (validate: (body: Record<string, unknown>) => JobSpec) => async (req: FastifyRequest, reply: FastifyReply) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const spec = validate(body);
      await guardOf(services, req).model(spec.model.id);
      await checkReferenceHosts(spec, services.resolveHost);
      if (spec.webhookUrl !== null) await checkWebhookUrl(spec.webhookUrl, services.webhookUrlPolicy, "webhook_url");
      const simulate = simulateHeader(req.headers["x-svc-simulate"]);
      // A job this process's runner can take at once starts in the submit's own transaction; one left
      // pending is claimed by the runner, nudged here.
      const out = await submitJob({ ...deps, starter: services.jobStarter() }, principalOf(req), spec, body, simulate, callOf(req));
      if (!out.replayed && !out.started) services.nudgeRunner();
      const job = await honourWait(req, reply, out.job);
      return reply.code(out.replayed ? 200 : 202).send(job);
    };

  app.post("/v1/images/generations", { schema: createImageJobSchema }, submit(validateImageJob));
  app.post("/v1/videos/generations", { schema: createVideoJobSchema }, submit((b) => validateVideoJob(b, { genmediaOnly: false })));
  app.post("/v1/genmedia/jobs", { schema: createGenmediaJobSchema }, submit((b) => validateVideoJob(b, { genmediaOnly: true })));

}

/**
 * The job reads of D30 (list, get, cancel, event stream): an API key or a session token, so the web
 * console (signed in with a session, D8) can show and cancel the account's jobs.
 */
export function jobReadRoutes(app: App, services: Services): void {
  const { deps, watcher, honourWait } = jobWaits(app, services);

  app.get("/v1/jobs", { schema: listJobsSchema }, async (req) => {
    const q = req.query as { limit?: string; after?: string; status?: JobListQuery["status"]; kind?: JobListQuery["kind"]; model?: string };
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
    const first = await getJob(deps.db, deps.publicBaseUrl, principalOf(req), (req.params as { id: string }).id);
    const job = await honourWait(req, reply, first);
    const retryAfter = pollAfterSeconds(job);
    if (retryAfter !== null) reply.header("Retry-After", String(retryAfter));
    return job;
  });

  app.post("/v1/jobs/:id/cancel", { schema: cancelJobSchema }, async (req) =>
    cancelJob(
      { db: deps.db, publicBaseUrl: deps.publicBaseUrl, sourceNamed: services.jobSourceNamed, log: services.log },
      principalOf(req),
      (req.params as { id: string }).id,
    ),
  );

  app.get("/v1/jobs/:id/events", { schema: jobEventsSchema }, async (req, reply) => {
    const w = watcher(reply);
    const events = watchJob(deps, principalOf(req), (req.params as { id: string }).id, w.signal);
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
