/**
 * Route schemas of image and video jobs (D3) and of the job API (D30: list, cancel, events, `Prefer: wait`,
 * `Retry-After`).
 */
import { GENMEDIA_MODELS, IMAGE_BODY, VIDEO_MODELS, videoBody } from "../../contracts/jobs.ts";
import {
  AUTH_ERR,
  bool,
  errors,
  JOB_STATUSES,
  json,
  LIST,
  MODEL_RETIRED,
  obj,
  ok,
  oneOf,
  PAGE_QUERY,
  ref,
  type ResponseDoc,
  route,
  SIMULATE,
  str,
} from "./common.ts";

/** `Prefer` (RFC 7240) with `wait=N` (D30): answer once the job ended, or after N seconds. */
const PREFER = str(
  "`wait=N` (1-60; more counts as 60): the answer waits up to N seconds for the job to end (`succeeded`, `failed`, `refunded`, `expired`) and then shows it; the status code stays the same. Other preferences are ignored.",
  { examples: ["wait=30"] },
);
/** The answer header that confirms a `Prefer: wait`. */
const PREFERENCE_APPLIED = { "Preference-Applied": str("`wait=N` when a `Prefer: wait=N` was honoured (N as applied, at most 60).", { examples: ["wait=30"] }) };
/**
 * `Idempotency-Key` (D37): the body's `idempotency_key` for clients that can only set a header; the body
 * field wins when both are given. Shared with the OpenAI dialect's creates.
 */
export const IDEMPOTENCY_KEY_HEADER = str(
  "Replaying the same key returns the same job without a new hold or charge, exactly as the body's `idempotency_key` (which wins when both are given). 1 to 128 characters.",
  { minLength: 1, maxLength: 128, examples: ["render-42"], "x-error-message": "The Idempotency-Key header must be a string of 1 to 128 characters." },
);
/** Headers of a job submission: the simulator control, `Prefer` and `Idempotency-Key`. */
const SUBMIT_HEADERS = obj({ ...SIMULATE.properties, prefer: PREFER, "idempotency-key": IDEMPOTENCY_KEY_HEADER });

/** Error answers every job submission shares besides its 400 codes. */
const SUBMIT_ERRORS = {
  401: "`auth_error`",
  402: "`insufficient_balance`, `key_spend_limit` (the key's spend limit)",
  403: "`model_not_allowed` (not in the key's `models`)",
  409: "`idempotency_conflict`",
  410: MODEL_RETIRED,
  413: "`invalid_request` (body over 25 MB)",
  429: "`rate_limited`",
  500: "`db_error`, `provider_error` (hold fully refunded)",
};

const JOB_ANSWERS = {
  200: ok("Replay of an idempotency key: the existing job, no new charge.", ref("MediaJob"), PREFERENCE_APPLIED),
  202: ok("A new job; poll `GET /v1/jobs/{id}` until its status is terminal, follow `GET /v1/jobs/{id}/events`, or send `Prefer: wait=N`.", ref("MediaJob"), PREFERENCE_APPLIED),
};

/** `POST /v1/images/generations`. */
export const createImageJobSchema = route({
  operationId: "createImageJob",
  summary: "Submit an image job",
  description: "Asynchronous: a hold of the per-image price times `n` is placed at submit; the charge happens only on success. Poll `GET /v1/jobs/{id}` every 1-2 s.",
  tags: ["media jobs"],
  access: "key",
  headers: SUBMIT_HEADERS,
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
  description: "Asynchronous: a hold of rate x duration (or the clip price) is placed at submit; the charge happens only on success. Poll `GET /v1/jobs/{id}` every 2-5 s. Tier 0 cannot make live videos (429 `rate_limited` with `x-should-retry: false`: deposits reaching Tier 1 lift it); a test-mode key makes simulated ones there, one at a time.",
  tags: ["media jobs"],
  access: "key",
  headers: SUBMIT_HEADERS,
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
  headers: SUBMIT_HEADERS,
  body: json(videoBody(GENMEDIA_MODELS, "'{value}' is not a supported video model on this endpoint (vidD-* only).")),
  responses: {
    ...JOB_ANSWERS,
    ...errors({
      400: "`invalid_model` (not a vidD model), `invalid_prompt`, `invalid_duration`, `invalid_image_url`, `invalid_webhook_url`, `invalid_request`",
      ...SUBMIT_ERRORS,
    }),
  },
});

const JOB_ID = obj({ id: str("Job id.", { maxLength: 64, examples: ["job_4kQ9xv2LmP7sT1wZ"] }) }, ["id"]);
const NOT_FOUND = { 404: "`job_not_found` (unknown or another user's job)" };

/** `GET /v1/jobs/:id`. */
export const getJobSchema = route({
  operationId: "getJob",
  summary: "Poll a job",
  description:
    "Video usually finishes in 1-3 minutes (runner gives up after 10), images within 30 seconds (gives up after 5). A job that has not ended carries `Retry-After`: the seconds until a sensible next poll. With `Prefer: wait=N` the answer comes once the job ended, or after N seconds.",
  tags: ["media jobs"],
  access: "keyOrSession",
  params: JOB_ID,
  headers: obj({ prefer: PREFER }),
  responses: {
    200: ok("The job.", ref("MediaJob"), {
      "Retry-After": str("Only while the job has not ended: whole seconds until a sensible next poll (1-2 for images, 2-5 for videos).", { examples: ["2"] }),
      ...PREFERENCE_APPLIED,
    }),
    ...errors({ ...AUTH_ERR, ...NOT_FOUND }),
  },
});

/** `GET /v1/jobs`. */
export const listJobsSchema = route({
  operationId: "listJobs",
  summary: "Your jobs, newest first",
  description: "Image, video and stored audio jobs of your account, newest first, with optional filters. Page with `after` (the `id` of the last job of the previous page) while `has_more` is true.",
  tags: ["media jobs"],
  access: "keyOrSession",
  query: obj({
    ...PAGE_QUERY.properties,
    after: str("Cursor: the `id` of the last job of the previous page.", { maxLength: 64, examples: ["job_4kQ9xv2LmP7sT1wZ"] }),
    status: oneOf(JOB_STATUSES, "Only jobs in this status.", { examples: ["processing"], "x-error-message": "status must be one of pending, processing, succeeded, failed, refunded, expired." }),
    kind: oneOf(["image", "video", "audio"], "Only jobs of this kind.", { examples: ["video"], "x-error-message": "kind must be image, video or audio." }),
    model: str("Only jobs of this model id.", { maxLength: 100, examples: ["imgA-v4"] }),
  }),
  responses: {
    200: ok("One page.", { ...LIST(ref("MediaJob"), { has_more: bool("More jobs follow.") }), examples: [{ object: "list", data: [], has_more: false }] }),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, an unknown status or kind)", ...AUTH_ERR }),
  },
});

/** `POST /v1/jobs/:id/cancel`. */
export const cancelJobSchema = route({
  operationId: "cancelJob",
  summary: "Cancel a job",
  description:
    "A `pending` or `processing` job ends `failed` with `error.code` `canceled`; its whole hold is released and nothing is charged. The request is withdrawn at the upstream that accepted it. When the job succeeds at the same moment, exactly one of the two happens: a charge (then this answers 409) or the release.",
  tags: ["media jobs"],
  access: "keyOrSession",
  params: JOB_ID,
  responses: {
    200: ok("The canceled job.", ref("MediaJob")),
    ...errors({ ...AUTH_ERR, ...NOT_FOUND, 409: "`job_not_cancelable` (the job already ended)" }),
  },
});

/** The `text/event-stream` answer of the job's events. */
const EVENT_STREAM: ResponseDoc = {
  description:
    "Server-sent events: each is `event: job` with `data:` the job object (`MediaJob`, JSON); the first comes at once, then one at every change of `status`, `queue_position` or `progress`. The stream ends after the event of a terminal status. Lines starting with `:` keep the connection alive.",
  content: {
    "text/event-stream": {
      schema: str("Server-sent events.", {
        examples: [
          'event: job\ndata: {"id":"job_4kQ9xv2LmP7sT1wZ","object":"media.job","status":"pending","queue_position":1,"progress":null}\n\nevent: job\ndata: {"id":"job_4kQ9xv2LmP7sT1wZ","object":"media.job","status":"succeeded","queue_position":null,"progress":null}\n\n',
        ],
      }),
    },
  },
};

/** `GET /v1/jobs/:id/events`. */
export const jobEventsSchema = route({
  operationId: "getJobEvents",
  summary: "Follow a job (server-sent events)",
  description: "Instead of polling: one `job` event with the job at once and at every change of its status, queue position or progress, until it ends.",
  tags: ["media jobs"],
  access: "keyOrSession",
  params: JOB_ID,
  responses: { 200: EVENT_STREAM, ...errors({ ...AUTH_ERR, ...NOT_FOUND }) },
});
