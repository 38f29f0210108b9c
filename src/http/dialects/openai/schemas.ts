/**
 * Route schemas of the OpenAI dialect (D37), documented under the tag `openai`: the Videos API
 * (`/v1/videos`, also under `/openai/v1`) and the synchronous images (`/openai/v1/images/*`). Errors are the
 * D1 body, which is OpenAI's own error shape (`{"error": {code, message, type, param}}`), so they are built
 * with `route()`. The create bodies are JSON or multipart: both are read by the route (`formReadByRoute`), so
 * the documented forms validate nothing on their own and the route's reader applies every rule.
 */
import { IMAGE_MODELS, VIDEO_MODELS } from "../../../contracts/jobs.ts";
import { AUTH_ERR, arr, binary, errors, int, json, MODEL_RETIRED, nullable, obj, ok, oneOf, queryInt, route, SIMULATE, str } from "../../schemas/common.ts";
import { IDEMPOTENCY_KEY_HEADER } from "../../schemas/jobs.ts";
import { MAX_IMAGE_UPLOAD_BYTES } from "./uploads.ts";

/** The default video model of `POST /v1/videos` (D37). */
export const DEFAULT_VIDEO_MODEL = "vidD-3-fast";
/** The default image model of `images.generate` (the catalog's GPT image model, `gpt-image-2`). */
export const DEFAULT_IMAGE_MODEL = "imgC-q1";
/** The default image model of `images.edit` (D37). */
export const DEFAULT_EDIT_MODEL = "imgB-edit-pro";

/** Headers of a create: the simulator control (D10) and `Idempotency-Key` (D37). */
const CREATE_HEADERS = obj({ ...SIMULATE.properties, "idempotency-key": IDEMPOTENCY_KEY_HEADER });

const VIDEO_ID = obj({ id: str("The video's id (the gateway's job id).", { maxLength: 64, examples: ["job_4kQ9xv2LmP7sT1wZ"] }) }, ["id"]);
const UPLOAD_LIMIT = `PNG, JPEG or WebP, at most ${MAX_IMAGE_UPLOAD_BYTES / (1024 * 1024)} MB, stored on the gateway and passed to the upstream as a URL on the gateway's host`;

/** OpenAI's Video object over a video job (D37). */
const VIDEO = obj(
  {
    id: str("The job id."),
    object: oneOf(["video"], "Always `video`."),
    model: str("The catalog model id."),
    status: oneOf(["queued", "in_progress", "completed", "failed"], "`pending` is `queued`, `processing` `in_progress`, `succeeded` `completed`; `failed`, `refunded` and `expired` are `failed`."),
    progress: int("Percent done, 0 to 100.", { minimum: 0, maximum: 100 }),
    created_at: int("Unix seconds."),
    completed_at: nullable(int("Unix seconds when the job ended.")),
    expires_at: { type: "null", description: "Always null: outputs do not expire." },
    prompt: nullable(str("The prompt.")),
    seconds: str("The MP4's own length in whole seconds once completed; the seconds asked for before; empty when unknown."),
    size: str("`WxH` of the MP4 itself once completed; the size asked for before (empty when none was given)."),
    remixed_from_video_id: { type: "null", description: "Always null." },
    error: nullable(obj({ code: str("The job's `error.code`."), message: str("What went wrong.") }, ["code", "message"])),
  },
  ["id", "object", "model", "status", "progress", "created_at", "completed_at", "expires_at", "prompt", "seconds", "size", "remixed_from_video_id", "error"],
  { description: "OpenAI's Video object: a video job of the gateway." },
);

const VIDEO_FIELDS = {
  prompt: str("What happens in the video, 1 to 4000 characters.", { minLength: 1, maxLength: 4000 }),
  model: str(`A video model of the catalog (${VIDEO_MODELS.join(", ")}); default \`${DEFAULT_VIDEO_MODEL}\`.`, { default: DEFAULT_VIDEO_MODEL }),
  seconds: str("Duration in whole seconds, 1 to 10 (as a string or a number; the model's rules apply: `vidC-02-*` take 6 or 10). Default: the model's."),
  size: str("`WIDTHxHEIGHT`, mapped to the nearest of 16:9, 9:16, 1:1, 4:3, 3:4, 21:9 (the `aspect_ratio` parameter).", { examples: ["1280x720", "720x1280"] }),
  idempotency_key: str("As the `Idempotency-Key` header; wins over it.", { maxLength: 128 }),
};

/** `POST /v1/videos` (the copy under `/openai/v1` is renamed by the dialect's scope, routes.ts). */
export const createVideoSchema = route({
  operationId: "createVideo",
  summary: "Create a video (OpenAI Videos API)",
  description:
    "`openai.videos.create` of the `openai` SDK. A video job with the holds, charges, limits, webhooks and usage of `POST /v1/videos/generations`: the hold is placed now, the charge made on success. The first frame comes from `input_reference`: an uploaded image (" +
    UPLOAD_LIMIT +
    ") or `input_reference[image_url]` (an https URL of a public host, or a `data:` URL). Send `Idempotency-Key` to retry safely.",
  tags: ["openai"],
  access: "key",
  headers: CREATE_HEADERS,
  body: {
    "multipart/form-data": {
      schema: obj(
        { ...VIDEO_FIELDS, input_reference: binary(`The first frame (${UPLOAD_LIMIT}).`), "input_reference[image_url]": str("Or the first frame's URL (https or a `data:` URL).") },
        ["prompt"],
      ),
    },
    ...json(obj({ ...VIDEO_FIELDS, input_reference: obj({ image_url: str("The first frame's URL (https or a `data:` URL).") }) }, ["prompt"])),
  },
  responses: {
    200: ok("The video (a new job, or the job of a replayed idempotency key).", VIDEO),
    ...errors({
      400: "`invalid_model`, `invalid_prompt`, `invalid_duration`, `image_url_required`, `invalid_image_url`, `invalid_request`",
      ...AUTH_ERR,
      402: "`insufficient_balance`, `key_spend_limit`",
      403: "`model_not_allowed`",
      409: "`idempotency_conflict`",
      410: MODEL_RETIRED,
      413: "`invalid_request` (an image over 10 MB)",
      429: "`rate_limited` (tier 0 has no video; the queue is full)",
    }),
  },
});

export const getVideoSchema = route({
  operationId: "getVideo",
  summary: "Retrieve a video (OpenAI Videos API)",
  tags: ["openai"],
  access: "key",
  params: VIDEO_ID,
  responses: { 200: ok("The video.", VIDEO), ...errors({ ...AUTH_ERR, 404: "`job_not_found` (unknown, another user's, or not a video)" }) },
});

export const listVideosSchema = route({
  operationId: "listVideos",
  summary: "List videos (OpenAI Videos API)",
  tags: ["openai"],
  access: "key",
  query: obj({
    after: str("The id of the last video of the previous page."),
    limit: queryInt("Page size, 1 to 100 (default 20).", "^0*(100|[1-9][0-9]?)$", "limit must be an integer from 1 to 100.", { examples: ["20"] }),
    order: oneOf(["asc", "desc"], "By creation time; default `desc` (newest first).", { default: "desc" }),
  }),
  responses: {
    200: ok(
      "A page of the caller's videos.",
      obj(
        {
          object: oneOf(["list"], "Always `list`."),
          data: arr(VIDEO, "The videos."),
          first_id: nullable(str("The first video's id.")),
          last_id: nullable(str("The last video's id: `after` of the next page.")),
          has_more: { type: "boolean", description: "Whether more videos follow." },
        },
        ["object", "data", "first_id", "last_id", "has_more"],
      ),
    ),
    ...errors({ ...AUTH_ERR }),
  },
});

export const videoContentSchema = route({
  operationId: "getVideoContent",
  summary: "Download a video's MP4 (OpenAI Videos API)",
  tags: ["openai"],
  access: "key",
  params: VIDEO_ID,
  query: obj({ variant: str("`video` (the default) is the only variant.", { default: "video" }) }),
  responses: {
    200: { description: "The MP4.", content: { "video/mp4": { schema: binary("The video.") } } },
    206: { description: "The requested range.", content: { "video/mp4": { schema: binary("Part of the video.") } } },
    ...errors({ 400: "`invalid_request` (a variant other than `video`)", ...AUTH_ERR, 404: "`job_not_found`, `not_found` (the content was deleted)", 409: "`video_not_ready`", 410: "`output_expired` (deleted at the end of the retention window)", 416: "`range_not_satisfiable`" }),
  },
});

export const deleteVideoSchema = route({
  operationId: "deleteVideo",
  summary: "Delete a video (OpenAI Videos API)",
  description: "A video that is still queued or in progress is cancelled (`POST /v1/jobs/{id}/cancel`: its whole hold released); a finished one has its stored MP4 deleted. The job and its billing records stay.",
  tags: ["openai"],
  access: "key",
  params: VIDEO_ID,
  responses: {
    200: ok("Deleted.", obj({ id: str("The video's id."), object: oneOf(["video.deleted"], "Always `video.deleted`."), deleted: { type: "boolean", description: "Always true." } }, ["id", "object", "deleted"])),
    ...errors({ ...AUTH_ERR, 404: "`job_not_found`" }),
  },
});

/** OpenAI's images answer: `{created, data: [{url} | {b64_json}]}`. */
const IMAGES_RESPONSE = obj(
  {
    created: int("Unix seconds."),
    data: arr(obj({ url: str("The image on the gateway (`response_format` `url`)."), b64_json: str("The image, base64 (`response_format` `b64_json`).") }), "One entry per image."),
  },
  ["created", "data"],
);
const IMAGE_ERRORS = errors({
  400: "`invalid_model`, `invalid_prompt`, `image_url_required`, `too_many_references`, `invalid_request`",
  ...AUTH_ERR,
  402: "`insufficient_balance`, `key_spend_limit`",
  403: "`model_not_allowed`",
  409: "`idempotency_conflict`",
  410: MODEL_RETIRED,
  413: "`invalid_request` (an image over 10 MB)",
  502: "the failed job's `error.code` (`provider_error`, `content_rejected`, ...): nothing was charged",
});
const IMAGE_FIELDS = {
  prompt: str("What to draw, 1 to 4000 characters.", { minLength: 1, maxLength: 4000 }),
  n: int("Images, 1 to 4, billed per image.", { minimum: 1, maximum: 4, default: 1 }),
  size: str("`auto`, `WIDTHxHEIGHT` or an aspect such as `16:9` (as `POST /v1/images/generations`)."),
  response_format: oneOf(["url", "b64_json"], "`url` (default): the image on the gateway; `b64_json`: the bytes in the answer.", { default: "url" }),
  idempotency_key: str("As the `Idempotency-Key` header; wins over it.", { maxLength: 128 }),
};

export const openAIImagesSchema = route({
  operationId: "createImage",
  summary: "Generate images, synchronously (OpenAI Images API)",
  description:
    "`openai.images.generate` with `baseURL: <gateway>/openai/v1`. Submits an image job (hold, charge on success, as `POST /v1/images/generations`), waits for it to end (at most the runner's give-up time) and answers in OpenAI's shape. A failed job answers its error with 502 and charges nothing.",
  tags: ["openai"],
  access: "key",
  headers: CREATE_HEADERS,
  body: json(
    obj(
      {
        ...IMAGE_FIELDS,
        model: str(`An image model of the catalog (${IMAGE_MODELS.join(", ")}); \`gpt-image-2\` names \`imgC-q1\`. Default \`${DEFAULT_IMAGE_MODEL}\`.`, { default: DEFAULT_IMAGE_MODEL }),
        quality: str("`low`, `medium`, `high` (`imgC-q1`'s tiers); `standard` is `medium`, `hd` `high`, `auto` the default."),
      },
      ["prompt"],
    ),
  ),
  responses: { 200: ok("The images.", IMAGES_RESPONSE), ...IMAGE_ERRORS },
});

export const openAIImageEditsSchema = route({
  operationId: "editImage",
  summary: "Edit images, synchronously (OpenAI Images API)",
  description: `\`openai.images.edit\`: the uploads (\`image\`, or \`image[]\` up to 10; ${UPLOAD_LIMIT}) are the job's reference images. Otherwise as \`images.generate\`.`,
  tags: ["openai"],
  access: "key",
  headers: CREATE_HEADERS,
  body: {
    "multipart/form-data": {
      schema: obj(
        {
          ...IMAGE_FIELDS,
          image: binary(`The image to edit (${UPLOAD_LIMIT}); \`image[]\` repeated for several (up to 10, \`imgB-2-pro\`).`),
          model: str(`An image model that takes reference images (\`imgB-edit-pro\`, \`imgB-2-pro\`); default \`${DEFAULT_EDIT_MODEL}\`.`, { default: DEFAULT_EDIT_MODEL }),
        },
        ["image", "prompt"],
      ),
    },
  },
  responses: { 200: ok("The images.", IMAGES_RESPONSE), ...IMAGE_ERRORS },
});
