/**
 * The Replicate dialect (D47): `/replicate/v1` speaks Replicate's HTTP API, so the npm `replicate` client
 * configured with `new Replicate({ auth: "<gateway key>", baseUrl: "<gateway>/replicate/v1" })` runs every
 * catalog model through the gateway: `run`, `predictions.create|get|list|cancel`, `models.get|list`
 * (and versions), `files.create`, `wait` and `validateWebhook`.
 *
 * A prediction is a job (jobs/prediction-view.ts): an image or video model's input becomes a native job request,
 * submitted through the native submit sequence (`src/http/job-submit.ts`: the key's allow-list, reference
 * and webhook checks, hold, caps, usage record); a speech, music or sound-effect model's input runs the
 * native synchronous call (`createSpeech`, `createMusic`, `createSfx`) with its output stored, so the
 * prediction is the stored job, already `succeeded`. No money logic, limits or upstream calls of its own.
 *
 * - `Prefer: wait` (60 s) or `wait=N` (1-60) waits for a job's end; a create whose wait ran out answers its
 *   prediction as `starting` (what the `replicate` client's `run` reads as "poll me"; `processing` would
 *   make it return no output). A read of a running prediction holds up to {@link POLL_HOLD_S} seconds
 *   for its end (`Prefer: wait=N`: N), so the client's polls (every 500 ms) stay within the tier's
 *   requests per minute: on Tier 1, `run` of a video lasting minutes would otherwise end in a 429.
 * - `Cancel-After` (`30s`, `5m`, `1h30m`, `1.5s`, ...): the job's deadline (jobs/cancel.ts): `aborted`
 *   if it has not started by then, else `canceled`; the hold released either way.
 * - `webhook` with `webhook_events_filter` (`start`, `output`, `logs`, `completed`; default `start` and
 *   `completed`): the prediction is POSTed there through the webhook outbox (D31's delivery and retries),
 *   signed as Standard Webhooks with the account's default secret (`GET .../webhooks/default/secret`).
 * - `Idempotency-Key` on a create: the synchronous calls' gate (idempotent-calls.ts) replays the first
 *   answer, so a retried create never makes a second prediction.
 * - Errors: `application/problem+json` `{title, detail, status}` with the native status and the native
 *   error `code`; an input that fails validation 422 with `invalid_fields`.
 */
import multipart from "@fastify/multipart";
import type { FastifyReply, FastifyRequest } from "fastify";
import { createMusic } from "../../../audio/music.ts";
import { createSfx } from "../../../audio/sfx.ts";
import { createSpeech } from "../../../audio/speech.ts";
import type { StoredJobHook } from "../../../audio/generate.ts";
import type { ImageJobRequest, VideoJobRequest } from "../../../contracts/jobs.ts";
import type { MusicRequestBody, SfxRequestBody, SpeechRequestBody } from "../../../contracts/audio.ts";
import { IMAGE_BODY, videoBody, VIDEO_MODELS } from "../../../contracts/jobs.ts";
import { MUSIC_BODY, SFX_BODY, SPEECH_BODY } from "../../../contracts/audio.ts";
import { AppError, errors } from "../../../errors.ts";
import { cancelAtDeadline, cancelJob } from "../../../jobs/cancel.ts";
import { type JobDialectFacts, recordDialectFacts } from "../../../jobs/dialect-facts.ts";
import { getJob, listJobs } from "../../../jobs/jobs.ts";
import { type OwnReferenceUrl, validateImageJob, validateVideoJob } from "../../../jobs/validate.ts";
import { waitForJobEnd } from "../../../jobs/watch.ts";
import type { Services } from "../../../services.ts";
import { defaultSecret } from "../../../webhooks/endpoints.ts";
import { PREDICTION_EVENTS, type PredictionEvent } from "../../../webhooks/events.ts";
import { checkWebhookUrl } from "../../../webhooks/urls.ts";
import { ADMIN_ONLY, MODEL_CALL, principalOf, requireAuth, schemeKeyOf } from "../../auth.ts";
import { callContext, generationDepsOf, speechDepsOf } from "../../call-context.ts";
import { setCostHeaders } from "../../cost-headers.ts";
import { schemaError } from "../../error-handler.ts";
import { submitFromRequest } from "../../job-submit.ts";
import { jobWaits } from "../../job-waits.ts";
import type { Schema } from "../../schemas/common.ts";
import type { App } from "../../types.ts";
import { boundedJsonParser, type StringBodyParser } from "../../json-body.ts";
import { dataUrlBytes, MAX_IMAGE_UPLOAD_BYTES, ownUploadUrl, storeImageUpload } from "../openai/uploads.ts";
import { sendProblem } from "./errors.ts";
import { fileAnswer, storeFile } from "./files.ts";
import { modelAnswer, modelNamed, modelOfRef, nativeBodyOf, type ReplicateModel, ReplicateInputError, replicateModels, versionAnswer } from "./models.ts";
import { isFinal, loadPrediction, type Prediction, type PredictionNames, predictionsOf } from "../../../jobs/prediction-view.ts";
import * as S from "./schemas.ts";

/** The prefix of the dialect (the client's `baseUrl` is `<gateway>/replicate/v1`). */
export const REPLICATE_PREFIX = "/replicate";

/** The longest wait of `Prefer: wait`, seconds (Replicate's). */
const MAX_WAIT_S = 60;

/**
 * How long a read of a running prediction waits for its end, seconds: the `replicate` client polls every
 * 500 ms (`wait`, `run`), 120 requests a minute against a tier's 30 or 60; held 2 s, a poll loop makes at
 * most 24, and an ended prediction is still answered at once.
 */
const POLL_HOLD_S = 2;

/** Predictions per page of `GET /predictions` (Replicate's 100). */
const PAGE_SIZE = 100;

/** Models per page of `GET /models`. */
const MODEL_PAGE_SIZE = 100;

/** The longest `Cancel-After`, seconds (a day: no job runs longer). */
const MAX_CANCEL_AFTER_S = 24 * 3600;

/** Strings of an echoed input longer than this are cut (a prediction keeps its input, not a file's bytes). */
const ECHO_STRING_MAX = 2000;

/** The key of a dialect request: `Authorization: Bearer <key>` (what the client sends) or `Token <key>`. */
export const replicateKeyOf = schemeKeyOf("Token");

/**
 * The seconds of a `Prefer` header's wait (RFC 7240): `wait` alone is {@link MAX_WAIT_S}, `wait=N` is N
 * (1-60, larger values capped); null when there is none or it is not a whole number.
 */
export function replicateWaitS(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header.join(",") : header;
  if (!value) return null;
  for (const pref of value.split(",")) {
    const m = /^\s*wait\s*(?:=\s*"?(\d{1,6})"?)?\s*(;.*)?$/i.exec(pref);
    if (m) return m[1] === undefined ? MAX_WAIT_S : Math.min(Math.max(Number(m[1]), 1), MAX_WAIT_S);
  }
  return null;
}

/**
 * The seconds of a `Cancel-After` header (Go's duration format: `30s`, `5m`, `1h30m`, `1.5s`, `500ms`), or
 * null when absent.
 * @throws AppError 400 `invalid_request` for another shape, a zero, or more than {@link MAX_CANCEL_AFTER_S}.
 */
export function cancelAfterS(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === "") return null;
  const text = value.trim();
  const unitS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  let rest = text;
  while (rest.length > 0) {
    const m = /^(\d{1,9}(?:\.\d{1,6})?)(ms|h|m|s)/.exec(rest);
    if (!m) throw errors.invalidRequest(`Cancel-After must be a duration such as 30s, 5m or 1h30m; got '${text.slice(0, 40)}'.`, "Cancel-After");
    total += Number(m[1]) * unitS[m[2]];
    rest = rest.slice(m[0].length);
  }
  if (!(total > 0) || total > MAX_CANCEL_AFTER_S) {
    throw errors.invalidRequest(`Cancel-After must be more than 0 and at most ${MAX_CANCEL_AFTER_S / 3600} hours.`, "Cancel-After");
  }
  return total;
}

/** The `webhook_events_filter` of a create (default `start` and `completed`). @throws ReplicateInputError. */
function eventsFilter(value: unknown): PredictionEvent[] {
  if (value === undefined || value === null) return ["start", "completed"];
  const valid = (v: unknown): v is PredictionEvent => typeof v === "string" && (PREDICTION_EVENTS as readonly string[]).includes(v);
  if (!Array.isArray(value) || !value.every(valid)) {
    throw new ReplicateInputError([{ field: "webhook_events_filter", message: `webhook_events_filter must be a list of ${PREDICTION_EVENTS.join(", ")}.` }]);
  }
  return [...new Set(value)];
}

/** The input as a prediction echoes it: long strings (data URLs) cut to {@link ECHO_STRING_MAX} characters. */
function echoed(value: unknown): unknown {
  if (typeof value === "string") return value.length > ECHO_STRING_MAX ? `${value.slice(0, ECHO_STRING_MAX)}…` : value;
  if (Array.isArray(value)) return value.slice(0, 50).map(echoed);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).slice(0, 100).map(([k, v]) => [k, echoed(v)]));
  return value;
}

/** The contract schema a model kind's native body is checked with (the native route's). */
function bodySchemaOf(kind: ReplicateModel["kind"]): Schema {
  switch (kind) {
    case "image":
      return IMAGE_BODY;
    case "video":
      return videoBody(VIDEO_MODELS, "'{value}' is not a supported video model.");
    case "speech":
      return SPEECH_BODY;
    case "music":
      return MUSIC_BODY;
    default:
      return SFX_BODY;
  }
}

/**
 * `body` checked against the native route's schema by the app's validator (the MCP server does the same).
 * The gateway's own uploads (`own`) pass as the https URLs they are behind a TLS front, also when the
 * gateway itself is addressed over http (development, tests); the submit does not resolve them.
 * @throws AppError 400 with the field's native code and `param` (answered 422 `invalid_fields`).
 */
function checkedBody(request: FastifyRequest, kind: ReplicateModel["kind"], body: Record<string, unknown>, own: OwnReferenceUrl = () => false): Record<string, unknown> {
  const validate = request.compileValidationSchema(bodySchemaOf(kind) as unknown as Record<string, unknown>, "body");
  const stand = (u: unknown) => (typeof u === "string" && own(u) ? "https://gateway.invalid/upload" : u);
  const checked = { ...body, ...(body.image_url !== undefined ? { image_url: stand(body.image_url) } : {}), ...(Array.isArray(body.image_urls) ? { image_urls: body.image_urls.map(stand) } : {}) };
  if (validate(checked) !== true) {
    const all = validate.errors ?? [];
    const last = all[all.length - 1];
    throw last === undefined ? errors.invalidRequest("Invalid input.") : schemaError(last as Parameters<typeof schemaError>[0]);
  }
  return body;
}

/** The create's body as JSON: an object, else 400. */
function createBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw errors.invalidRequest("The body must be a JSON object: {version | model, input, webhook?, webhook_events_filter?}.");
  return body as Record<string, unknown>;
}

/** Registers the dialect's routes under {@link REPLICATE_PREFIX} (see the module comment). */
export async function replicateRoutes(app: App, services: Services): Promise<void> {
  app.setErrorHandler((err, request, reply) => sendProblem(err, request, reply));
  app.setNotFoundHandler((request) => {
    throw errors.notFound(`No route ${request.method} ${request.url.split("?")[0] ?? ""}: the Replicate dialect serves /replicate/v1 predictions, models, files and webhooks.`);
  });
  app.addHook("onRequest", requireAuth(services, { allowSession: false, secretOf: replicateKeyOf }));
  // The client sends `Content-Type: application/json` on every request, a cancel's empty body included:
  // here an empty JSON body is no body, rather than the app's 400.
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? "error", app.initialConfig.onConstructorPoisoning ?? "error") as StringBodyParser;
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, boundedJsonParser(parseJson, { emptyIsUndefined: true }));
  await app.register(multipart, { throwFileSizeLimit: true, limits: { fileSize: MAX_IMAGE_UPLOAD_BYTES, files: 2, fields: 4, fieldSize: 64 * 1024, parts: 6 } });
  const { deps: waitDeps, watcher } = jobWaits(app, services);
  const base = services.config.publicBaseUrl;
  const upload = { blobs: services.blobs, publicBaseUrl: base };
  const ownUrl = ownUploadUrl(base);
  const cancelDeps = { db: services.db.kysely, publicBaseUrl: base, sourceNamed: services.jobSourceNamed, log: services.log, changes: services.jobChanges };

  /** Data URLs among an image or video input's file fields, stored as uploads on the gateway (their URL replaces them). */
  const storeDataUrls = async (accountId: string, body: Record<string, unknown>): Promise<void> => {
    if (typeof body.image_url === "string") {
      const bytes = dataUrlBytes(body.image_url, "image_url");
      if (bytes !== null) body.image_url = await storeImageUpload(upload, accountId, bytes, "image_url");
    }
    if (Array.isArray(body.image_urls)) {
      body.image_urls = await Promise.all(
        body.image_urls.map(async (u: unknown, i) => {
          const bytes = typeof u === "string" ? dataUrlBytes(u, `image_urls[${i}]`) : null;
          return bytes === null ? u : storeImageUpload(upload, accountId, bytes, `image_urls[${i}]`);
        }),
      );
    }
  };

  /**
   * Creates the prediction of `model` for `raw` (the create's body) and answers it: a job (image, video)
   * waited on per `Prefer`, or a synchronous call whose output is stored.
   */
  const create = async (req: FastifyRequest, reply: FastifyReply, model: ReplicateModel, raw: Record<string, unknown>, version: string | null) => {
    const principal = principalOf(req);
    const events = raw.webhook === undefined || raw.webhook === null ? null : eventsFilter(raw.webhook_events_filter);
    const webhook = events === null ? null : await checkWebhookUrl(raw.webhook, services.webhookUrlPolicy, "webhook");
    const deadlineS = cancelAfterS(req.headers["cancel-after"]);
    const body = nativeBodyOf(model, raw.input ?? {});
    const names: PredictionNames = { model: model.ref, version: version ?? model.versionId, input: {}, output: model.output };
    // The input as the caller sent it (its data URLs cut: a prediction echoes its input, not a file's bytes).
    const f: JobDialectFacts = {
      deadlineAt: deadlineS === null ? null : Date.now() + Math.round(deadlineS * 1000),
      webhookEvents: events,
      dialectJson: JSON.stringify({ ...names, input: echoed(raw.input ?? {}) }),
    };

    if (model.kind === "image" || model.kind === "video") {
      await storeDataUrls(principal.accountId, body);
      if (webhook !== null) body.webhook_url = webhook;
      checkedBody(req, model.kind, body, ownUrl);
      const out =
        model.kind === "image"
          ? await submitFromRequest(services, req, body as unknown as ImageJobRequest, (b) => validateImageJob(b, { ownUrl }), { ownUrl, dialect: f })
          : await submitFromRequest(services, req, body as unknown as VideoJobRequest, (b) => validateVideoJob(b, { genmediaOnly: false, ownUrl }), { ownUrl, dialect: f });
      if (f.deadlineAt !== null && !out.replayed) cancelAtDeadline(cancelDeps, principal.accountId, out.job.id, f.deadlineAt);
      let job = out.job;
      const waitS = replicateWaitS(req.headers.prefer);
      if (waitS !== null) {
        reply.header("Preference-Applied", `wait=${waitS}`);
        const w = watcher(reply);
        try {
          job = await waitForJobEnd(waitDeps, principal, job.id, waitS * 1000, w.signal, job);
        } finally {
          w.done();
        }
      }
      const prediction = await loadPrediction(services.db.kysely, base, principal, job.id);
      // A wait that ran out: `starting`, which the client's `run` polls (see the module comment).
      const answered: Prediction = waitS !== null && !isFinal(prediction.status) ? { ...prediction, status: "starting" } : prediction;
      return reply.code(201).header("content-type", "application/json; charset=utf-8").send(answered);
    }

    // Speech, music, sound effects: the native synchronous call, its output stored as the prediction's job.
    const checked = checkedBody(req, model.kind, body);
    const onStored: StoredJobHook = (trx, jobId, textsKept) =>
      recordDialectFacts(trx, { jobId, accountId: principal.accountId, webhookUrl: webhook, facts: { ...f, deadlineAt: null }, succeeded: true, textsKept });
    const options = { ...callContext(services, req, reply), saveToBlob: true, onStored };
    let jobId: string;
    if (model.kind === "speech") {
      const out = await createSpeech({ ...speechDepsOf(services, req), blobs: services.blobs }, principal.accountId, checked as SpeechRequestBody, options);
      if (out.stored === null) throw errors.storageFailed();
      setCostHeaders(reply, out);
      jobId = out.stored.jobId;
    } else {
      const out =
        model.kind === "music"
          ? await createMusic(generationDepsOf(services, req), principal, checked as MusicRequestBody, options)
          : await createSfx(generationDepsOf(services, req), principal, checked as SfxRequestBody, options);
      if (out.stored === null) throw errors.storageFailed();
      setCostHeaders(reply, out);
      jobId = out.stored.jobId;
    }
    // The prediction's webhook events were written with its job: send them now rather than at the next poll.
    if (webhook !== null) services.nudgeWebhooks();
    const prediction = await loadPrediction(services.db.kysely, base, principal, jobId);
    return reply.code(201).header("content-type", "application/json; charset=utf-8").send(prediction);
  };

  app.post("/v1/predictions", { schema: S.createPredictionSchema, config: MODEL_CALL }, async (req, reply) => {
    const raw = createBody(req.body);
    const ref = typeof raw.version === "string" ? raw.version : typeof raw.model === "string" ? raw.model : null;
    if (ref === null) throw new ReplicateInputError([{ field: "version", message: "version is required: a version id, or owner/name[:version] (gateway/<catalog id>)." }]);
    const found = modelOfRef(ref);
    if (found === undefined) throw new ReplicateInputError([{ field: "version", message: `Invalid version or not permitted: '${ref.slice(0, 120)}'. GET /replicate/v1/models lists the models and their versions.` }]);
    return create(req, reply, found.model, raw, found.version);
  });

  app.post<{ Params: { owner: string; name: string } }>("/v1/models/:owner/:name/predictions", { schema: S.createModelPredictionSchema, config: MODEL_CALL }, async (req, reply) => {
    const model = modelNamed(req.params.owner, req.params.name);
    if (model === undefined) throw modelNotFound(req.params.owner, req.params.name);
    return create(req, reply, model, createBody(req.body), null);
  });

  app.get<{ Params: { id: string } }>("/v1/predictions/:id", { schema: S.getPredictionSchema }, async (req, reply) => {
    const principal = principalOf(req);
    const job = await getJob(services.db.kysely, base, principal, req.params.id);
    if (job.status === "pending" || job.status === "processing") {
      // A running job's read holds until it ends or {@link POLL_HOLD_S} pass (`Prefer: wait=N`: N), so the
      // client's 500 ms poll loop stays within the tier's requests per minute (see the module comment).
      const explicit = replicateWaitS(req.headers.prefer);
      if (explicit !== null) reply.header("Preference-Applied", `wait=${explicit}`);
      const w = watcher(reply);
      try {
        await waitForJobEnd(waitDeps, principal, job.id, (explicit ?? POLL_HOLD_S) * 1000, w.signal, job);
      } finally {
        w.done();
      }
    }
    return loadPrediction(services.db.kysely, base, principal, req.params.id);
  });

  app.get<{ Querystring: { cursor?: string } }>("/v1/predictions", { schema: S.listPredictionsSchema }, async (req) => {
    const principal = principalOf(req);
    const cursor = req.query.cursor ?? null;
    const page = await listJobs(services.db.kysely, base, principal, { limit: PAGE_SIZE, after: cursor, status: null, kind: null, model: null });
    const results = await predictionsOf(services.db.kysely, base, principal.accountId, page.jobs);
    const last = page.jobs[page.jobs.length - 1];
    return {
      previous: null,
      next: page.hasMore && last !== undefined ? `${base}${REPLICATE_PREFIX}/v1/predictions?cursor=${encodeURIComponent(last.id)}` : null,
      results,
    };
  });

  app.post<{ Params: { id: string } }>("/v1/predictions/:id/cancel", { schema: S.cancelPredictionSchema }, async (req) => {
    const principal = principalOf(req);
    try {
      await cancelJob(cancelDeps, principal, req.params.id);
    } catch (err) {
      // Replicate answers a prediction that already ended as it is.
      if (!(err instanceof AppError && err.code === "job_not_cancelable")) throw err;
    }
    return loadPrediction(services.db.kysely, base, principal, req.params.id);
  });

  app.get<{ Querystring: { cursor?: string } }>("/v1/models", { schema: S.listModelsSchema }, async (req) => {
    const all = replicateModels();
    const start = Math.max(0, Number.parseInt(req.query.cursor ?? "0", 10) || 0);
    const page = all.slice(start, start + MODEL_PAGE_SIZE);
    const next = start + MODEL_PAGE_SIZE < all.length ? `${base}${REPLICATE_PREFIX}/v1/models?cursor=${start + MODEL_PAGE_SIZE}` : null;
    return { previous: null, next, results: page.map((m) => modelAnswer(m, base)) };
  });

  app.get<{ Params: { owner: string; name: string } }>("/v1/models/:owner/:name", { schema: S.getModelSchema }, async (req) => {
    const model = modelNamed(req.params.owner, req.params.name);
    if (model === undefined) throw modelNotFound(req.params.owner, req.params.name);
    return modelAnswer(model, base);
  });

  app.get<{ Params: { owner: string; name: string } }>("/v1/models/:owner/:name/versions", { schema: S.listVersionsSchema }, async (req) => {
    const model = modelNamed(req.params.owner, req.params.name);
    if (model === undefined) throw modelNotFound(req.params.owner, req.params.name);
    return { previous: null, next: null, results: [versionAnswer(model)] };
  });

  app.get<{ Params: { owner: string; name: string; id: string } }>("/v1/models/:owner/:name/versions/:id", { schema: S.getVersionSchema }, async (req) => {
    const model = modelNamed(req.params.owner, req.params.name);
    if (model === undefined || model.versionId !== req.params.id) throw new AppError(404, "not_found", "The requested resource could not be found.");
    return versionAnswer(model);
  });

  app.post("/v1/files", { schema: S.createFileSchema }, async (req, reply) => {
    const file = await storeFile(req, upload, principalOf(req).accountId);
    return reply.code(201).send(fileAnswer(file));
  });

  // The account's signing secret: owners and admins only, as natively (`GET /v1/webhooks/secret`, D41).
  app.get("/v1/webhooks/default/secret", { schema: S.webhookSecretSchema, config: ADMIN_ONLY }, async (req) => ({ key: await defaultSecret(services.db.kysely, principalOf(req).accountId) }));

  app.get("/v1/account", { schema: S.accountSchema }, async (req) => {
    const p = principalOf(req);
    return { type: "organization", username: p.accountId, name: p.accountId, github_url: null };
  });
}

/** Replicate's 404 for a model it does not have. */
function modelNotFound(owner: string, name: string): AppError {
  return new AppError(404, "model_not_found", `Model '${`${owner}/${name}`.slice(0, 160)}' not found. GET /replicate/v1/models lists them: every catalog model is gateway/<catalog id>.`);
}

