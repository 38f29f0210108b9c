/**
 * OpenAI's images in their synchronous shape (D37), under `/openai/v1`: `client.images.generate` and
 * `client.images.edit` of the `openai` SDK. Each call submits a native image job (job-submit.ts: the same
 * idempotency, hold, limits and usage record as `POST /v1/images/generations`), waits for it to end and
 * answers `{created, data: [{url} | {b64_json}]}`. A job that failed answers its error with 502 (nothing was
 * charged; the SDK's retry makes a new job unless the call carries an `Idempotency-Key`).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ImageJobRequest } from "../../../contracts/jobs.ts";
import { getModelOf } from "../../../catalog/models.ts";
import { AppError, errors } from "../../../errors.ts";
import type { JobView } from "../../../jobs/jobs.ts";
import { validateImageJob } from "../../../jobs/validate.ts";
import { isTerminal, waitForJobEnd } from "../../../jobs/watch.ts";
import type { Services } from "../../../services.ts";
import { MODEL_CALL, principalOf } from "../../auth.ts";
import { OWN_IDEMPOTENCY } from "../../idempotent-calls.ts";
import { submitFromRequest } from "../../job-submit.ts";
import { jobWaits } from "../../job-waits.ts";
import { formReadByRoute } from "../../schemas/common.ts";
import type { App } from "../../types.ts";
import { type CreateForm, intField, promptField, readCreateForm, stringField } from "./form.ts";
import { catalogImageModel } from "./models.ts";
import { DEFAULT_EDIT_MODEL, DEFAULT_IMAGE_MODEL, openAIImageEditsSchema, openAIImagesSchema } from "./schemas.ts";
import { ownUploadUrl, storeImageUpload } from "./uploads.ts";

/**
 * How long a synchronous image call waits for its job, ms: past the runner's give-up time for images
 * (5 minutes) and the sweep of a dead worker (about 7), so the job has ended by then.
 */
const IMAGE_WAIT_MS = 8 * 60_000;

/** OpenAI's `quality` values as the catalog's tiers (`auto`: the model's default). */
const QUALITY: Readonly<Record<string, "low" | "medium" | "high" | undefined>> = Object.freeze({
  low: "low",
  medium: "medium",
  high: "high",
  standard: "medium",
  hd: "high",
  auto: undefined,
});

/** `response_format`: `url` (default) or `b64_json`. @throws AppError 400 `invalid_request` for another value. */
function responseFormatOf(fields: CreateForm["fields"]): "url" | "b64_json" {
  const v = stringField(fields, "response_format", 40) ?? "url";
  if (v !== "url" && v !== "b64_json") throw errors.invalidRequest("response_format must be 'url' or 'b64_json'.", "response_format");
  return v;
}

/** The native fields both calls share: `prompt`, `n`, `size`, `quality`, `idempotency_key`. */
function commonFields(fields: CreateForm["fields"]) {
  const n = intField(fields, "n");
  const size = stringField(fields, "size", 40);
  const q = stringField(fields, "quality", 40);
  if (q !== undefined && !Object.hasOwn(QUALITY, q)) throw errors.invalidRequest("quality must be 'low', 'medium', 'high', 'standard', 'hd' or 'auto'.", "quality");
  const quality = q === undefined ? undefined : QUALITY[q];
  const key = stringField(fields, "idempotency_key", 128);
  return {
    prompt: promptField(fields),
    ...(n !== undefined ? { n } : {}),
    ...(size !== undefined ? { size } : {}),
    ...(quality !== undefined ? { quality } : {}),
    ...(key !== undefined ? { idempotency_key: key } : {}),
  };
}

/** The image routes (see the module comment), on the `/openai` scope (API key auth hooked by routes.ts). */
export async function openAIImageRoutes(app: App, services: Services): Promise<void> {
  const { watcher } = jobWaits(app, services);
  const own = ownUploadUrl(services.config.publicBaseUrl);
  const deps = { db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl, changes: services.jobChanges };

  /** The stored image `key` as base64, or null when there is none. */
  const readBase64 = async (key: string | null): Promise<string | null> => {
    const read = key === null ? null : await services.blobs.get(key);
    if (read === null) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of read.body) chunks.push(Buffer.from(chunk as Uint8Array));
    return Buffer.concat(chunks).toString("base64");
  };

  /** Submits `body`, waits for its job and answers it in OpenAI's shape. */
  const run = async (req: FastifyRequest, reply: FastifyReply, body: ImageJobRequest, format: "url" | "b64_json") => {
    const out = await submitFromRequest(services, req, body, (b) => validateImageJob(b, { ownUrl: own }), { ownUrl: own });
    const w = watcher(reply);
    let job: JobView;
    try {
      job = await waitForJobEnd(deps, principalOf(req), out.job.id, IMAGE_WAIT_MS, w.signal, out.job);
    } finally {
      w.done();
    }
    if (!isTerminal(job)) {
      // Not reached in practice (the runner gives up first). Not a 5xx: the job is accepted and may still
      // succeed, and a retry without a key would make another (`x-should-retry` stops the SDK's).
      throw new AppError(409, "job_still_running", `The image job ${job.id} has not ended yet: follow it at GET /v1/jobs/${job.id}.`, null, { "x-should-retry": "false" });
    }
    if (job.status !== "succeeded" || job.output === null) {
      const e = job.error ?? { code: "provider_error", message: "The image job did not succeed." };
      throw new AppError(502, e.code, `${e.message} (job ${job.id}; nothing was charged)`);
    }
    const urls = job.output.urls;
    const created = Math.floor(Date.parse(job.created_at) / 1000);
    if (format === "url") return reply.send({ created, data: urls.map((url) => ({ url })) });
    const prefix = `${services.config.publicBaseUrl}/v1/files/`;
    const data: ({ b64_json: string } | { url: string })[] = [];
    for (const url of urls) {
      // The job is charged: an image whose bytes cannot be read back is answered as its URL, never a 5xx.
      const b64 = await readBase64(url.startsWith(prefix) ? url.slice(prefix.length) : null).catch((err: unknown) => {
        req.log.warn({ err, jobId: job.id }, "a generated image could not be read back for b64_json; answered as its URL");
        return null;
      });
      data.push(b64 === null ? { url } : { b64_json: b64 });
    }
    return reply.send({ created, data });
  };

  app.post("/v1/images/generations", { schema: openAIImagesSchema, validatorCompiler: formReadByRoute, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req, reply) => {
    const form = await readCreateForm(req, []);
    const f = form.fields;
    const body: ImageJobRequest = { model: catalogImageModel(stringField(f, "model", 200) ?? DEFAULT_IMAGE_MODEL) as ImageJobRequest["model"], ...commonFields(f) };
    return run(req, reply, body, responseFormatOf(f));
  });

  app.post("/v1/images/edits", { schema: openAIImageEditsSchema, validatorCompiler: formReadByRoute, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req, reply) => {
    const form = await readCreateForm(req, ["image", "image[]"]);
    const f = form.fields;
    const model = catalogImageModel(stringField(f, "model", 200) ?? DEFAULT_EDIT_MODEL);
    const common = commonFields(f);
    const format = responseFormatOf(f);
    if (form.files.length === 0) throw errors.invalidRequest("image is required: upload the image to edit as 'image' (or 'image[]').", "image");
    const record = getModelOf(model, "image");
    if (!record) throw new AppError(400, "invalid_model", `'${model.slice(0, 80)}' is not a supported image model.`, "model");
    if (!record.acceptsImageUrl && !record.acceptsImageUrls) {
      throw new AppError(400, "invalid_model", `${record.id} takes no reference images; edit with imgB-edit-pro or imgB-2-pro.`, "model");
    }
    if (form.files.length > 1 && !record.acceptsImageUrls) {
      throw new AppError(400, "too_many_references", `${record.id} takes one image; imgB-2-pro takes up to 10.`, "image");
    }
    const urls: string[] = [];
    for (const [i, file] of form.files.entries()) {
      urls.push(await storeImageUpload({ blobs: services.blobs, publicBaseUrl: services.config.publicBaseUrl }, principalOf(req).accountId, file.bytes, form.files.length > 1 ? `image[${i}]` : "image"));
    }
    const body: ImageJobRequest = {
      model: record.id as ImageJobRequest["model"],
      ...common,
      ...(record.acceptsImageUrls ? { image_urls: urls } : { image_url: urls[0] }),
    };
    return run(req, reply, body, format);
  });
}
