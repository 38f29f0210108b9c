/**
 * OpenAI's Videos API over the gateway's video jobs (D37): `POST /v1/videos`, `GET /v1/videos`,
 * `GET /v1/videos/{id}`, `GET /v1/videos/{id}/content`, `DELETE /v1/videos/{id}`, as the `openai` SDK's
 * `client.videos.*` call them. A create is the native `POST /v1/videos/generations` (job-submit.ts: the same
 * idempotency, hold, limits, queue, webhooks and usage record) with OpenAI's fields translated; the answers
 * render the D3 job as OpenAI's Video object. Registered at `/v1` and again under `/openai/v1` (routes.ts).
 */
import type { FastifyRequest } from "fastify";
import type { VideoJobRequest } from "../../../contracts/jobs.ts";
import { AppError, errors } from "../../../errors.ts";
import { cancelJob } from "../../../jobs/cancel.ts";
import { deleteJobOutput } from "../../../jobs/delete-output.ts";
import { getJobWithRequest, type JobView, listJobs, TERMINAL_STATUSES } from "../../../jobs/jobs.ts";
import { isOutputExpired } from "../../../jobs/outputs.ts";
import { isVideoRequest, type JobRequest, jobRequestOf } from "../../../jobs/request.ts";
import { parseSize, validateVideoJob } from "../../../jobs/validate.ts";
import type { Services } from "../../../services.ts";
import { MODEL_CALL, principalOf } from "../../auth.ts";
import { OWN_IDEMPOTENCY } from "../../idempotent-calls.ts";
import { submitFromRequest } from "../../job-submit.ts";
import { sendBlob } from "../../range.ts";
import { formReadByRoute } from "../../schemas/common.ts";
import type { App } from "../../types.ts";
import { intField, promptField, readCreateForm, stringField } from "./form.ts";
import { createVideoSchema, DEFAULT_VIDEO_MODEL, deleteVideoSchema, getVideoSchema, listVideosSchema, videoContentSchema } from "./schemas.ts";
import { dataUrlBytes, ownUploadUrl, storeImageUpload } from "./uploads.ts";

/**
 * A `WxH` size a create may ask for, as `WxH`, or null for anything else (an aspect ratio, `auto`, sides
 * outside 64..2048: sizes `parseSize` does not read as pixels).
 */
function pixelSize(size: string): string | null {
  const m = /^\s*(\d{1,5})\s*[xX×*]\s*(\d{1,5})\s*$/.exec(size);
  if (!m) return null;
  const parsed = parseSize(size);
  return parsed.width === Number(m[1]) && parsed.height === Number(m[2]) ? `${parsed.width}x${parsed.height}` : null;
}

/** Seconds as the Video object writes them: a decimal string, to the millisecond (`"5"`, `"6.042"`). */
function secondsText(sec: number): string {
  return String(Math.round(sec * 1000) / 1000);
}

/** OpenAI's video status of a D3 status (D37). */
function videoStatus(status: JobView["status"]): "queued" | "in_progress" | "completed" | "failed" {
  switch (status) {
    case "pending":
      return "queued";
    case "processing":
      return "in_progress";
    case "succeeded":
      return "completed";
    case "failed":
    case "refunded":
    case "expired":
      return "failed";
  }
}

const unixSeconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);

/**
 * OpenAI's Video object of a video job and its stored request (D37). A completed video describes its
 * file: `size` (`WxH`) and `seconds` are what the MP4 says of itself (the job's `output`), an empty string
 * where it says nothing (never the request's); before that they are what was asked: the requested
 * seconds, and the `size` of the create (empty when none was given).
 */
export function videoObject(job: JobView, request: JobRequest | null) {
  const status = videoStatus(job.status);
  const video = request !== null && isVideoRequest(request) ? request : null;
  let size: string;
  let seconds: string;
  if (job.status === "succeeded") {
    const out = job.output;
    size = out?.width !== undefined && out.height !== undefined ? `${out.width}x${out.height}` : "";
    seconds = out?.duration_sec !== undefined ? secondsText(out.duration_sec) : "";
  } else {
    const asked = video?.parameters?.size;
    size = typeof asked === "string" ? (pixelSize(asked) ?? "") : "";
    seconds = video !== null && typeof video.durationSec === "number" ? String(video.durationSec) : "";
  }
  return {
    id: job.id,
    object: "video" as const,
    model: job.model,
    status,
    progress: status === "completed" ? 100 : status === "in_progress" ? Math.min(99, Math.max(0, Math.round((job.progress ?? 0) * 100))) : 0,
    created_at: unixSeconds(job.created_at),
    completed_at: TERMINAL_STATUSES.has(job.status) ? unixSeconds(job.updated_at) : null,
    expires_at: null,
    prompt: job.prompt,
    seconds,
    size,
    remixed_from_video_id: null,
    error: job.error,
  };
}

/** The caller's video job `id` with its request. @throws AppError 404 `job_not_found` (also for a job that is not a video). */
async function videoJob(services: Services, req: FastifyRequest, id: string) {
  const out = await getJobWithRequest(services.db.kysely, services.config.publicBaseUrl, principalOf(req), id);
  if (out.job.kind !== "video") throw new AppError(404, "job_not_found", "No such video.", "id");
  return out;
}

/**
 * The native video request of an OpenAI create (D37): `model` (default {@link DEFAULT_VIDEO_MODEL}),
 * `prompt`, `seconds` as `duration`, `size` as the `aspect_ratio` parameter (its nearest of the six) and,
 * when it is a `WxH` pixel size, also as the `size` parameter (`1280x720`: the simulator renders it, up
 * to the model's largest; a real source makes the model's own resolution at that aspect ratio),
 * `input_reference` as `image_url` (an upload or a `data:` URL stored on the gateway; an https URL as it
 * is).
 * @throws AppError 400 for a bad field (the native codes), 413 for an upload over 10 MB.
 */
async function nativeVideoBody(services: Services, req: FastifyRequest): Promise<VideoJobRequest> {
  const form = await readCreateForm(req, ["input_reference"]);
  const f = form.fields;
  const prompt = promptField(f);
  const model = stringField(f, "model", 200) ?? DEFAULT_VIDEO_MODEL;
  const duration = intField(f, "seconds", "invalid_duration");
  const size = stringField(f, "size", 40);
  const store = (bytes: Uint8Array, param: string) =>
    storeImageUpload({ blobs: services.blobs, publicBaseUrl: services.config.publicBaseUrl }, principalOf(req).accountId, bytes, param);

  let imageUrl: string | undefined;
  const reference = f.input_reference;
  const nested = typeof reference === "object" && reference !== null ? (reference as Record<string, unknown>) : {};
  const urlField = f["input_reference[image_url]"] ?? nested.image_url;
  if (f["input_reference[file_id]"] !== undefined || nested.file_id !== undefined) {
    throw errors.invalidRequest("input_reference.file_id is not supported: upload the image as input_reference, or give input_reference[image_url].", "input_reference");
  }
  if (form.files.length > 1) throw errors.invalidRequest("One input_reference image at most.", "input_reference");
  if (form.files.length === 1) {
    imageUrl = await store(form.files[0].bytes, "input_reference");
  } else if (urlField !== undefined) {
    if (typeof urlField !== "string" || urlField.length > 20_000_000) throw new AppError(400, "invalid_image_url", "input_reference[image_url] must be a URL.", "input_reference");
    const bytes = dataUrlBytes(urlField, "input_reference");
    imageUrl = bytes === null ? urlField : await store(bytes, "input_reference");
  } else if (reference !== undefined && typeof reference !== "object") {
    throw errors.invalidRequest("input_reference must be an image file or {image_url}.", "input_reference");
  }
  const key = stringField(f, "idempotency_key", 128);
  return {
    model: model as VideoJobRequest["model"],
    prompt,
    ...(duration !== undefined ? { duration } : {}),
    ...(imageUrl !== undefined ? { image_url: imageUrl } : {}),
    ...(size !== undefined ? { parameters: videoSizeParameters(size) } : {}),
    ...(key !== undefined ? { idempotency_key: key } : {}),
  };
}

/** The pass-through parameters of a create's `size`: its aspect ratio and, for a `WxH` size, the size itself. */
function videoSizeParameters(size: string): Record<string, string> {
  const pixels = pixelSize(size);
  return { aspect_ratio: parseSize(size).aspect, ...(pixels !== null ? { size: pixels } : {}) };
}

/** The Videos API routes (see the module comment), on `app` (API key auth already hooked by routes.ts). */
export async function openAIVideoRoutes(app: App, services: Services): Promise<void> {
  const own = ownUploadUrl(services.config.publicBaseUrl);

  app.post("/v1/videos", { schema: createVideoSchema, validatorCompiler: formReadByRoute, config: { ...MODEL_CALL, ...OWN_IDEMPOTENCY } }, async (req) => {
    const body = await nativeVideoBody(services, req);
    const out = await submitFromRequest(services, req, body, (b) => validateVideoJob(b, { genmediaOnly: false, ownUrl: own }), { ownUrl: own });
    // The job is accepted: rendered from what the submit knows, with no read that could fail after the hold.
    return videoObject(out.job, jobRequestOf(out.spec, null));
  });

  app.get("/v1/videos", { schema: listVideosSchema }, async (req) => {
    const q = req.query;
    const page = await listJobs(services.db.kysely, services.config.publicBaseUrl, principalOf(req), {
      limit: q.limit === undefined ? 20 : Number(q.limit),
      after: q.after ?? null,
      status: null,
      kind: "video",
      model: null,
      order: q.order === "asc" ? "asc" : "desc",
    });
    const data = page.jobs.map((job, i) => videoObject(job, page.requests[i] ?? null));
    return { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore };
  });

  app.get("/v1/videos/:id", { schema: getVideoSchema }, async (req) => {
    const { job, request } = await videoJob(services, req, req.params.id);
    return videoObject(job, request);
  });

  app.get("/v1/videos/:id/content", { schema: videoContentSchema }, async (req, reply) => {
    const variant = req.query.variant ?? "video";
    if (variant !== "video") throw errors.invalidRequest(`variant '${variant.slice(0, 40)}' is not available: only 'video'.`, "variant");
    const { job } = await videoJob(services, req, req.params.id);
    if (job.status !== "succeeded") throw new AppError(409, "video_not_ready", `The video is ${videoStatus(job.status)}: its content exists once it is completed.`, "id");
    if (job.output === null) throw (await isOutputExpired(services.db.kysely, job.id)) ? errors.outputExpired() : errors.notFound("The video's content was deleted.");
    const prefix = `${services.config.publicBaseUrl}/v1/files/`;
    const key = job.output.url.startsWith(prefix) ? job.output.url.slice(prefix.length) : "";
    const range = typeof req.headers.range === "string" ? req.headers.range : undefined;
    return sendBlob(reply, services.blobs, key, range);
  });

  app.delete("/v1/videos/:id", { schema: deleteVideoSchema }, async (req) => {
    const owner = principalOf(req);
    const { job } = await videoJob(services, req, req.params.id);
    let ended = TERMINAL_STATUSES.has(job.status);
    if (!ended) {
      try {
        await cancelJob({ db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl, sourceNamed: services.jobSourceNamed, log: services.log, changes: services.jobChanges }, owner, job.id);
      } catch (err) {
        // It ended while we looked: delete its output instead.
        if (!(err instanceof AppError && err.code === "job_not_cancelable")) throw err;
        ended = true;
      }
    }
    if (ended) await deleteJobOutput({ db: services.db.kysely, blobs: services.blobs, log: services.log }, owner.accountId, job.id);
    return { id: job.id, object: "video.deleted", deleted: true };
  });
}

