/**
 * Route schemas of image and video jobs (D3).
 */
import { arr, AUTH_ERR, coded, errors, HTTPS_URL, IDEMPOTENCY, int, json, modelsWith, obj, ok, oneOf, PARAMETERS, ref, route, type Schema, SIMULATE, str } from "./common.ts";

const IMAGE_MODELS = modelsWith("image");
const VIDEO_MODELS = modelsWith("video");
const GENMEDIA_MODELS = VIDEO_MODELS.filter((id) => id.startsWith("vidD-"));

/** A media prompt: required, not blank, at most 4000 characters (code points), else `invalid_prompt`. */
const PROMPT = (description: string): Schema =>
  coded(str(description, { minLength: 1, maxLength: 4000, pattern: "\\S", examples: ["a lighthouse at dusk, oil painting"] }), "invalid_prompt", "prompt must be text of 1 to 4000 characters.");
/** A reference image URL (`invalid_image_url`). */
const IMAGE_URL = (description: string): Schema => coded(HTTPS_URL(description), "invalid_image_url", "{param} must be an https:// URL.");
const IDEMPOTENCY_KEY = { ...IDEMPOTENCY, minLength: 1, "x-error-message": "idempotency_key must be a string of 1 to 128 characters." };
const PARAMETERS_OBJECT = { ...PARAMETERS, "x-error-message": "parameters must be an object." };
/** Where this job's webhook events also go (D31), signed with the account's default secret. */
const WEBHOOK_URL = coded(
  str("Also POST this job's terminal event here (D31), signed with the account's default secret (`GET /v1/webhooks/secret`). `https://` on a public address.", {
    maxLength: 2048,
    examples: ["https://example.com/hooks/jobs"],
  }),
  "invalid_webhook_url",
  "webhook_url must be an https:// URL.",
);

const IMAGE_BODY = obj(
  {
    model: coded(
      oneOf(IMAGE_MODELS, "Image model (`imgB-1.1-ultra` and `imgA-v3` are legacy). `imgA-v4-vector*` produce SVG.", { examples: ["imgA-v4"] }),
      "invalid_model",
      "'{value}' is not a supported image model.",
    ),
    prompt: PROMPT("What to draw, at most 4000 characters."),
    n: int("Number of images, billed per image; `imgB-2-pro` always makes 1.", { minimum: 1, maximum: 4, default: 1, "x-error-message": "n must be an integer from 1 to 4." }),
    size: str("`auto`, `WIDTHxHEIGHT` or an aspect such as `16:9`; mapped to 1:1, 16:9, 9:16, 4:3, 3:4 or 21:9. Larger sizes raise the `imgB-2-pro` price.", { examples: ["auto", "1024x1024", "16:9"] }),
    image_url: IMAGE_URL("Source image: required for `imgB-edit-pro`, optional for `imgB-2-pro` (image-to-image), ignored by others."),
    image_urls: coded(
      arr(IMAGE_URL("Reference image."), "`imgB-2-pro` only: up to 10 references (the first 6 at high fidelity); takes precedence over `image_url`.", { maxItems: 10 }),
      "too_many_references",
      "image_urls must be an array of at most 10 URLs.",
    ),
    quality: oneOf(["low", "medium", "high"], "Quality tier, for `imgC-q1` (default `medium`); the hold books the tier's price.", { "x-error-message": "quality must be 'low', 'medium' or 'high'." }),
    idempotency_key: IDEMPOTENCY_KEY,
    parameters: PARAMETERS_OBJECT,
    webhook_url: WEBHOOK_URL,
  },
  ["model", "prompt"],
);

const videoBody = (models: string[], modelMessage: string): Schema =>
  obj(
    {
      model: coded(oneOf(models, "Video model.", { examples: [models[0]] }), "invalid_model", modelMessage),
      prompt: PROMPT("What happens in the video (drives the motion with `image_url`), at most 4000 characters."),
      duration: coded(
        int("Seconds, each billed at the model's rate. `vidC-02-*` take 6 or 10 (default 6).", { minimum: 1, maximum: 10, default: 5 }),
        "invalid_duration",
        "duration must be a whole number of seconds from 1 to 10.",
      ),
      image_url: IMAGE_URL("First frame: switches to image-to-video (required for `vidC-02-512p`)."),
      idempotency_key: IDEMPOTENCY_KEY,
      parameters: PARAMETERS_OBJECT,
      webhook_url: WEBHOOK_URL,
    },
    ["model", "prompt"],
  );

/** Error answers every job submission shares besides its 400 codes. */
const SUBMIT_ERRORS = {
  401: "`auth_error`",
  402: "`insufficient_balance`",
  409: "`idempotency_conflict`",
  413: "`invalid_request` (body over 25 MB)",
  429: "`rate_limited`",
  500: "`db_error`, `provider_error` (hold fully refunded)",
};

const JOB_ANSWERS = {
  200: ok("Replay of an idempotency key: the existing job, no new charge.", ref("MediaJob")),
  202: ok("A new job; poll `GET /v1/jobs/{id}` until its status is terminal.", ref("MediaJob")),
};

/** `POST /v1/images/generations`. */
export const createImageJobSchema = route({
  operationId: "createImageJob",
  summary: "Submit an image job",
  description: "Asynchronous: a hold of the per-image price times `n` is placed at submit; the charge happens only on success. Poll `GET /v1/jobs/{id}` every 1-2 s.",
  tags: ["media jobs"],
  access: "key",
  headers: SIMULATE,
  body: json(IMAGE_BODY),
  responses: {
    ...JOB_ANSWERS,
    ...errors({
      400: "`invalid_model`, `invalid_prompt`, `image_url_required`, `too_many_references`, `invalid_image_url`, `invalid_webhook_url`, `invalid_request`",
      ...SUBMIT_ERRORS,
    }),
  },
});

/** `POST /v1/videos/generations`. */
export const createVideoJobSchema = route({
  operationId: "createVideoJob",
  summary: "Submit a video job",
  description: "Asynchronous: a hold of rate x duration (or the clip price) is placed at submit; the charge happens only on success. Poll `GET /v1/jobs/{id}` every 2-5 s. Tier 0 cannot make videos.",
  tags: ["media jobs"],
  access: "key",
  headers: SIMULATE,
  body: json(videoBody(VIDEO_MODELS, "'{value}' is not a supported video model.")),
  responses: {
    ...JOB_ANSWERS,
    ...errors({
      400: "`invalid_model`, `invalid_prompt`, `invalid_duration`, `image_url_required`, `invalid_image_url`, `invalid_webhook_url`, `invalid_request`",
      ...SUBMIT_ERRORS,
    }),
  },
});

/** `POST /v1/genmedia/jobs`. */
export const createGenmediaJobSchema = route({
  operationId: "createGenmediaJob",
  summary: "Submit a video job (vidD alias)",
  description: "The same request, billing and answer as `POST /v1/videos/generations`, for `vidD-*` models only.",
  tags: ["media jobs"],
  access: "key",
  headers: SIMULATE,
  body: json(videoBody(GENMEDIA_MODELS, "'{value}' is not a supported video model on this endpoint (vidD-* only).")),
  responses: {
    ...JOB_ANSWERS,
    ...errors({
      400: "`invalid_model` (not a vidD model), `invalid_prompt`, `invalid_duration`, `invalid_image_url`, `invalid_webhook_url`, `invalid_request`",
      ...SUBMIT_ERRORS,
    }),
  },
});

/** `GET /v1/jobs/:id`. */
export const getJobSchema = route({
  operationId: "getJob",
  summary: "Poll a job",
  description: "Video usually finishes in 1-3 minutes (runner gives up after 10), images within 30 seconds (gives up after 5).",
  tags: ["media jobs"],
  access: "key",
  params: obj({ id: str("Job id.", { maxLength: 64 }) }, ["id"]),
  responses: { 200: ok("The job.", ref("MediaJob")), ...errors({ ...AUTH_ERR, 404: "`job_not_found` (unknown or another user's job)" }) },
});
