/**
 * The fal dialect (D38): `POST|GET|PUT /fal/proxy` speaks fal's proxy protocol, so `@fal-ai/client`
 * configured with `credentials: "<gateway key>"` and `proxyUrl: {url: "<gateway>/fal/proxy", when:
 * "always"}` generates through the gateway. Each request carries the fal address it would have called in
 * `x-fal-target-url` (targets.ts); the dialect translates:
 * - submit (`queue.fal.run/<endpoint id>`) and run (`fal.run/<endpoint id>`): the endpoint id and input
 *   become a native image or video job (endpoints.ts, read backwards from the fal adapter's table),
 *   submitted through the native routes' submit sequence (`src/http/job-submit.ts`: validation, the
 *   `Idempotency-Key` header, the key's allow-list, reference hosts, webhook URL, hold, caps, usage
 *   record), so the job shows in `GET /v1/jobs` and the console;
 * - status, result, cancel (`queue.fal.run/<owner>/<alias>/requests/<id>/...`): the job of that id
 *   (D30 reads and cancel), rendered in fal's shapes (answers.ts).
 * No money logic, limits or upstream calls of its own. Registered as its own scope (prefix `/fal`) with
 * its own auth hook (`Authorization: Key <key>` or Bearer), error handler (`{"detail", "error_type"}`,
 * 422 in FastAPI's shape for an input fal would refuse) and not-found handler.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { cancelJob } from "../../../jobs/cancel.ts";
import { getJob, type JobView } from "../../../jobs/jobs.ts";
import { GIVE_UP_MS } from "../../../jobs/sweep.ts";
import { validateImageJob, validateVideoJob } from "../../../jobs/validate.ts";
import { waitForJobEnd } from "../../../jobs/watch.ts";
import { AppError, errors } from "../../../errors.ts";
import type { Services } from "../../../services.ts";
import { MODEL_CALL, principalOf, requireAuth, schemeKeyOf } from "../../auth.ts";
import { OWN_IDEMPOTENCY } from "../../idempotent-calls.ts";
import { submitFromRequest } from "../../job-submit.ts";
import { jobWaits } from "../../job-waits.ts";
import { sendDialectError } from "../errors.ts";
import { boundedJsonParser, type StringBodyParser } from "../../json-body.ts";
import type { App } from "../../types.ts";
import { failureOf, isEnded, outputAnswer, statusAnswer, submitAnswer } from "./answers.ts";
import { appOf, appsOfModel, FalInputError, jobRequestOf } from "./endpoints.ts";
import { falGetSchema, falPostSchema, falPutSchema } from "./schemas.ts";
import { type FalTarget, readTarget } from "./targets.ts";

/** The key of a dialect request: `Authorization: Key <key>` (what `@fal-ai/client` sends), else Bearer / `x-api-key`. */
export const falKeyOf = schemeKeyOf("Key");

/**
 * Error handler of the dialect's scope (D38): an input fal would refuse answers 422 `{"detail": [{loc,
 * msg, type}]}`; every other error the native status and headers (`Retry-After`, ...) with `{"detail":
 * <message>, "error_type": <native error.code>}`.
 */
export function falErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.destroy();
    return;
  }
  if (err instanceof FalInputError) {
    void reply.code(422).header("content-type", "application/json; charset=utf-8").send({ detail: err.items });
    return;
  }
  sendDialectError(err, request, reply, (e) => ({ detail: e.message, error_type: e.code }));
}

/** The longest a run (`fal.run`) waits for its job: past both give-up times the job has ended. */
const RUN_WAIT_MS = { image: 2 * GIVE_UP_MS.image + 60_000, video: 2 * GIVE_UP_MS.video + 60_000 } as const;

/** Longest prompt, code points (as the native body's `prompt`). */
const PROMPT_MAX = 4000;
/** Longest webhook URL (as the native body's `webhook_url`). */
const WEBHOOK_URL_MAX = 2048;

/** 400 `invalid_request` for a refused target: nothing is sent anywhere. */
function refused(reason: string): AppError {
  return errors.invalidRequest(`Refused: ${reason}. The fal proxy serves queue submit, status, result and cancel on https://queue.fal.run and runs on https://fal.run.`, "x-fal-target-url");
}

/** The job of a follow-up call, if it is the caller's and its endpoint's app is the target's; else 404 `job_not_found`. */
async function followedJob(services: Services, request: FastifyRequest, target: Extract<FalTarget, { app: string }>): Promise<JobView> {
  const job = await getJob(services.db.kysely, services.config.publicBaseUrl, principalOf(request), target.requestId);
  if (!appsOfModel(job.model).has(target.app)) throw new AppError(404, "job_not_found", `No request ${target.requestId.slice(0, 80)} of ${target.app}.`, "id");
  return job;
}

/** The routes of the dialect, registered under the prefix `/fal` (see the module comment). */
export async function falRoutes(app: App, services: Services): Promise<void> {
  app.setErrorHandler(falErrorHandler);
  app.addHook("onRequest", requireAuth(services, { allowSession: false, secretOf: falKeyOf }));
  app.setNotFoundHandler((request) => {
    throw errors.notFound(`No route ${request.method} ${request.url.split("?")[0] ?? ""}: the fal proxy is POST, GET and PUT /fal/proxy.`);
  });
  // The client's cancel is a PUT with `Content-Type: application/json` and no body (D38): here an empty
  // JSON body is no body, rather than the app's 400.
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? "error", app.initialConfig.onConstructorPoisoning ?? "error") as StringBodyParser;
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, boundedJsonParser(parseJson, { emptyIsUndefined: true }));

  const { deps, watcher } = jobWaits(app, services);

  /**
   * Submits the job of a submit or run target through the native submit sequence (`job-submit.ts`: the
   * `Idempotency-Key` header, allow-list, reference and webhook checks, hold); the job and its endpoint's app.
   * The length rules the native route schema holds (prompt, webhook URL) are checked here first.
   */
  const submit = async (req: FastifyRequest, target: Extract<FalTarget, { endpointId: string }>) => {
    if (target.webhookUrl !== null && target.webhookUrl.length > WEBHOOK_URL_MAX) {
      throw new AppError(400, "invalid_webhook_url", `fal_webhook must be an https:// URL of at most ${WEBHOOK_URL_MAX} characters.`, "webhook_url");
    }
    const request = jobRequestOf(target.endpointId, req.body, { idempotencyKey: null, webhookUrl: target.webhookUrl });
    if (request === null) throw new AppError(404, "not_found", `Application '${target.endpointId}' not found`);
    const prompt = request.body.prompt;
    if ([...prompt].length > PROMPT_MAX || !/\S/.test(prompt)) throw new AppError(400, "invalid_prompt", `prompt must be text of 1 to ${PROMPT_MAX} characters.`, "prompt");
    const out =
      request.kind === "image"
        ? await submitFromRequest(services, req, request.body, validateImageJob)
        : await submitFromRequest(services, req, request.body, (body) => validateVideoJob(body, { genmediaOnly: false }));
    return { job: out.job, app: appOf(target.endpointId) };
  };

  /** The result answer of an ended job: its output JSON (200, `x-fal-request-id`) or its failure (422). */
  const result = async (reply: FastifyReply, job: JobView) => {
    reply.header("x-fal-request-id", job.id);
    if (job.status === "succeeded") return reply.code(200).send(await outputAnswer(services.blobs, services.config.publicBaseUrl, job));
    return reply.code(422).send(failureOf(job));
  };

  app.post("/proxy", { schema: falPostSchema, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req, reply) => {
    const target = readTarget(req.method, req.headers["x-fal-target-url"]);
    if (typeof target === "string") throw refused(target);
    if (target.call !== "submit" && target.call !== "run") throw refused(`${req.method} is not a ${target.call} call`);
    const { job, app: falApp } = await submit(req, target);
    reply.header("x-fal-request-id", job.id);
    if (target.call === "submit") return reply.code(200).send(submitAnswer(falApp, job));
    const w = watcher(reply);
    try {
      const ended = await waitForJobEnd(deps, principalOf(req), job.id, RUN_WAIT_MS[job.kind === "video" ? "video" : "image"], w.signal, job);
      if (!isEnded(ended)) return reply.code(202).send(submitAnswer(falApp, ended));
      return await result(reply, ended);
    } finally {
      w.done();
    }
  });

  app.get("/proxy", { schema: falGetSchema }, async (req, reply) => {
    const target = readTarget(req.method, req.headers["x-fal-target-url"]);
    if (typeof target === "string") throw refused(target);
    if (target.call !== "status" && target.call !== "result") throw refused(`${req.method} is not a ${target.call} call`);
    const job = await followedJob(services, req, target);
    if (target.call === "status") {
      const { code, body } = statusAnswer(target.app, job);
      return reply.code(code).send(body);
    }
    if (!isEnded(job)) {
      reply.header("x-fal-request-id", job.id);
      throw new AppError(400, "request_in_progress", "Request is still in progress");
    }
    return result(reply, job);
  });

  app.put("/proxy", { schema: falPutSchema }, async (req, reply) => {
    const target = readTarget(req.method, req.headers["x-fal-target-url"]);
    if (typeof target === "string") throw refused(target);
    if (target.call !== "cancel") throw refused(`${req.method} is not a ${target.call} call`);
    const job = await followedJob(services, req, target);
    try {
      await cancelJob(
        { db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl, sourceNamed: services.jobSourceNamed, log: services.log, changes: services.jobChanges },
        principalOf(req),
        job.id,
      );
    } catch (err) {
      if (err instanceof AppError && err.code === "job_not_cancelable") {
        return reply.code(400).send({ status: "ALREADY_COMPLETED", detail: err.message, error_type: err.code });
      }
      throw err;
    }
    return reply.code(202).send({ status: "CANCELLATION_REQUESTED" });
  });
}
