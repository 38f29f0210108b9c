/**
 * Route schemas of the fal dialect (D38): the three methods of `/fal/proxy`, documented under the tag
 * `fal`. The request is fal's (the endpoint's input JSON, the real fal address in `x-fal-target-url`) and
 * so are the answers and errors (`{"detail", "error_type"}`, 422 `{"detail": [{loc, msg, type}]}`), never
 * the D1 body; the schemas are built here rather than with `route()` of `common.ts`, whose error answers
 * are D1's. The body is not validated by a schema: an input fal would refuse is answered in fal's 422
 * shape by the dialect itself (endpoints.ts).
 */
import { arr, int, nullable, num, obj, oneOf, SECURITY, str, typed } from "../../schemas/common.ts";

/** `Authorization: Key <gateway key>` (what `@fal-ai/client` sends) or `Authorization: Bearer <gateway key>`. */
const DIALECT_SECURITY = [{ falKey: [] }, ...SECURITY.key];

const TARGET_HEADER = obj({
  "x-fal-target-url": str(
    "The fal address the client would have called: `https://queue.fal.run/<endpoint id>` (submit), `https://queue.fal.run/<owner>/<alias>/requests/<id>/status`, `.../requests/<id>` (result), `.../requests/<id>/cancel`, or `https://fal.run/<endpoint id>` (run). Any other address, or none, answers 400 `invalid_request` and nothing is sent anywhere.",
    { examples: ["https://queue.fal.run/fal-ai/flux-2-pro"] },
  ),
  "idempotency-key": str("Optional, on a submit or run: a replay with the same key and input answers the same request instead of a new job.", { maxLength: 128 }),
});

/** `{"detail", "error_type"}`: a refusal, or a failed request's result. */
const ERROR_BODY = obj(
  {
    detail: str("What went wrong."),
    error_type: str("The gateway's error code (`auth_error`, `insufficient_balance`, `invalid_request`, `provider_error`, `canceled`, ...)."),
  },
  ["detail"],
  { description: "An error in fal's shape." },
);

/** FastAPI's 422 body, as fal answers an input its endpoint refuses. */
const VALIDATION_BODY = obj(
  {
    detail: arr(
      obj(
        {
          loc: arr(typed({ type: ["string", "integer"] }), "`body`, then the field."),
          msg: str("What is wrong."),
          type: str("The kind of failure (`missing`, `literal_error`, `string_type`, ...)."),
        },
        ["loc", "msg", "type"],
      ),
      "The failures.",
    ),
  },
  ["detail"],
  { description: "An input the endpoint refuses (fal's validation shape)." },
);

const answer = (description: string, schema: object) => ({ description, content: { "application/json": { schema } } });
const errorAnswer = (description: string) => answer(description, ERROR_BODY);

const URLS = {
  request_id: str("The request id: the gateway's job id (`GET /v1/jobs/{id}` shows the same job)."),
  response_url: str("fal's result URL of the request (the client sends it through the proxy)."),
  status_url: str("fal's status URL of the request."),
  cancel_url: str("fal's cancel URL of the request."),
};

const QUEUED = obj({ status: oneOf(["IN_QUEUE"], "Waiting to start."), ...URLS, queue_position: int("Requests of the caller's pool that start before this one (0: next).") }, [
  "status",
  "request_id",
  "queue_position",
]);
const RUNNING = obj(
  {
    status: oneOf(["IN_PROGRESS"], "Running."),
    ...URLS,
    logs: arr(obj({}), "Always empty."),
    progress: nullable(num("Fraction done, 0..1, when the upstream says (the gateway's addition).")),
  },
  ["status", "request_id", "logs"],
);
const COMPLETED = obj(
  {
    status: oneOf(["COMPLETED"], "Ended: succeeded, or failed with `error` and `error_type`."),
    ...URLS,
    logs: arr(obj({}), "Always empty."),
    metrics: obj({}),
    error: str("A failed request: the job's error message."),
    error_type: str("A failed request: the job's `error.code` (`provider_error`, `canceled`, `expired`, ...)."),
  },
  ["status", "request_id", "logs"],
);

const FILE = obj(
  {
    url: str("The gateway's rehosted file (`/v1/files/...`)."),
    content_type: str("Its media type, read from the file."),
    width: int("Pixels, read from the file (absent when the file does not say them)."),
    height: int("Pixels, read from the file (absent when the file does not say them)."),
    file_size: int("Bytes (videos)."),
    fps: num("Frames per second of a video, read from the file."),
    duration: num("Length of a video in seconds, read from the file."),
  },
  ["url", "content_type"],
);
const OUTPUT = typed({
  description: "The endpoint's output JSON with the gateway's URLs: `{images: [...]}` for an image endpoint, `{video: {...}}` for a video endpoint.",
  anyOf: [obj({ images: arr(FILE, "The images."), prompt: str("The prompt.") }, ["images"]), obj({ video: FILE }, ["video"])],
});

/** Error answers every proxy call may give. */
const COMMON_ERRORS = {
  400: errorAnswer("`invalid_request`: a refused or missing `x-fal-target-url` (nothing was sent anywhere), a bad idempotency key; the native 400s of a submit (`invalid_prompt`, `invalid_duration`, `invalid_image_url`, ...)."),
  401: errorAnswer("`auth_error`: missing, unknown or expired key."),
  404: errorAnswer("An unknown endpoint id (`Application '<id>' not found`), or `job_not_found` for an unknown request id."),
  413: errorAnswer("`invalid_request`: body over the limit."),
  429: errorAnswer("`rate_limited` (see `Retry-After`)."),
  500: errorAnswer("`api_error`: an internal failure; nothing charged."),
  503: errorAnswer("`limits_unavailable`, `service_unavailable`."),
};

/** `POST /fal/proxy`: submit (`queue.fal.run`) or run (`fal.run`). */
export const falPostSchema = {
  operationId: "falProxyPost",
  summary: "fal proxy: submit a request to the queue, or run an endpoint",
  description:
    "With `x-fal-target-url: https://queue.fal.run/<endpoint id>` the endpoint's input becomes an image or video job (the same holds, charges, limits and webhooks as `POST /v1/images/generations` and `POST /v1/videos/generations`), answered in fal's queue shape with the job id as `request_id`. With `https://fal.run/<endpoint id>` the job is submitted and awaited, and the answer is the endpoint's output JSON. Endpoint ids name catalog models through the fal column of the default id table (both text-to-x and image-to-x variants; for example `fal-ai/flux-2-pro` is `imgB-2-pro`, `fal-ai/veo3.1/fast` is `vidD-3-fast`). A `?fal_webhook=` on the target becomes the job's `webhook_url`: the job's terminal event is POSTed there.",
  tags: ["fal"],
  security: DIALECT_SECURITY,
  headers: TARGET_HEADER,
  body: { description: "The endpoint's fal input (`prompt`, `image_url`, `duration`, `aspect_ratio`, `image_size`, `num_images`, ...).", examples: [{ prompt: "a lighthouse at dusk", image_size: "landscape_16_9" }] },
  response: {
    200: answer("A submit: `IN_QUEUE` with the request id and fal's follow-up URLs. A run: the endpoint's output JSON.", typed({ anyOf: [QUEUED, OUTPUT] })),
    202: answer("A run whose job had not ended after the wait: as a submit's answer (poll the queue).", QUEUED),
    ...COMMON_ERRORS,
    402: errorAnswer("`insufficient_balance`, `key_spend_limit`: nothing charged."),
    403: errorAnswer("`model_not_allowed` (the key's allow-list)."),
    409: errorAnswer("`idempotency_conflict`: the idempotency key was used with another input."),
    410: errorAnswer("`model_retired`."),
    422: {
      description: "An input the endpoint refuses (fal's validation shape); or, for a run, `{detail, error_type}` of the job that failed (nothing charged).",
      content: { "application/json": { schema: typed({ anyOf: [VALIDATION_BODY, ERROR_BODY] }) } },
    },
  },
};

/** `GET /fal/proxy`: status or result. */
export const falGetSchema = {
  operationId: "falProxyGet",
  summary: "fal proxy: a request's status or result",
  description:
    "`.../requests/<id>/status`: `IN_QUEUE` (202, `queue_position`), `IN_PROGRESS` (202) or `COMPLETED` (200; a failed job carries `error` and `error_type`). `.../requests/<id>`: the endpoint's output JSON with the gateway's rehosted URLs and the `x-fal-request-id` header; a failed job answers 422 `{detail, error_type}`; a job still running 400. Requests are found by id; the target's `<owner>/<alias>` must be that of the job's endpoint.",
  tags: ["fal"],
  security: DIALECT_SECURITY,
  headers: TARGET_HEADER,
  response: {
    200: answer("`COMPLETED` status, or the result's output JSON.", typed({ anyOf: [COMPLETED, OUTPUT] })),
    202: answer("`IN_QUEUE` or `IN_PROGRESS` status.", typed({ anyOf: [QUEUED, RUNNING] })),
    ...COMMON_ERRORS,
    422: errorAnswer("The result of a failed job: its message and `error.code` (`provider_error`, `canceled`, `expired`, ...)."),
  },
};

/** `PUT /fal/proxy`: cancel. */
export const falPutSchema = {
  operationId: "falProxyPut",
  summary: "fal proxy: cancel a request",
  description:
    "`.../requests/<id>/cancel`: the job is cancelled as `POST /v1/jobs/{id}/cancel` does (it ends `failed` with `canceled`, the whole hold released, the upstream request withdrawn) and the answer is 202 `{status: \"CANCELLATION_REQUESTED\"}`; a job that already ended answers 400 `{status: \"ALREADY_COMPLETED\"}`. The client's empty JSON body is accepted.",
  tags: ["fal"],
  security: DIALECT_SECURITY,
  headers: TARGET_HEADER,
  response: {
    202: answer("Cancelled.", obj({ status: oneOf(["CANCELLATION_REQUESTED"], "fal's word for it.") }, ["status"])),
    ...COMMON_ERRORS,
    400: answer(
      "`ALREADY_COMPLETED` (the job had ended; `error_type` `job_not_cancelable`), or a refused target (`invalid_request`).",
      obj({ status: oneOf(["ALREADY_COMPLETED"], "The job had ended."), detail: str("What went wrong."), error_type: str("The gateway's error code.") }, ["detail"]),
    ),
  },
};
