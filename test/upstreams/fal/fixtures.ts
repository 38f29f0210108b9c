/**
 * fal's answers as its own code and docs show them, each naming where it comes from. The fake
 * (fakes/fal.ts) answers in these shapes; decode.test.ts feeds them to the decoders.
 */

/** fal-ai/fal `projects/fal_client/tests/unit/test_client.py` `test_parse_status` (the status answers it parses). */
export const STATUS_ANSWERS = {
  inQueue: { status: "IN_QUEUE", queue_position: 123 },
  inProgress: { status: "IN_PROGRESS", logs: [{ msg: "foo" }, { msg: "bar" }] },
  completed: { status: "COMPLETED", logs: [{ msg: "foo" }, { msg: "bar" }], metrics: { m1: "v1", m2: "v2" } },
  runnerDisconnected: { status: "COMPLETED", logs: [], metrics: {}, error: "Runner disconnected", error_type: "runner_disconnected" },
  requestTimeout: { status: "COMPLETED", logs: null, metrics: { inference_time: 1.5 }, error: "Request timed out", error_type: "request_timeout" },
  unknown: { status: "FOO" },
} as const;

/** docs.fal.ai/model-endpoints/queue: the submit answer (example request id kept). */
export const SUBMIT_ANSWER = {
  request_id: "80e732af-660e-45cd-bd63-580e4f2a94cc",
  response_url: "https://queue.fal.run/fal-ai/fast-sdxl/requests/80e732af-660e-45cd-bd63-580e4f2a94cc",
  status_url: "https://queue.fal.run/fal-ai/fast-sdxl/requests/80e732af-660e-45cd-bd63-580e4f2a94cc/status",
  cancel_url: "https://queue.fal.run/fal-ai/fast-sdxl/requests/80e732af-660e-45cd-bd63-580e4f2a94cc/cancel",
} as const;

/** fal-js `libs/client/src/types/endpoints.ts` `I2VOutput` / `File` (Kling, Hailuo, Veo 3 outputs). */
export const VIDEO_OUTPUT = {
  video: {
    url: "https://v3.fal.media/files/rabbit/abc123_output.mp4",
    content_type: "video/mp4",
    file_name: "output.mp4",
    file_size: 4_567_890,
  },
} as const;

/** fal-js `types/endpoints.ts` `ModifyOutput` (Seedance 2.0) with a `VideoFile` (which may report `duration`). */
export const VIDEO_OUTPUT_WITH_DURATION = {
  seed: 1234,
  video: { url: "https://v3.fal.media/files/koala/clip.mp4", content_type: "video/mp4", duration: 6.04, fps: 24, width: 1280, height: 720 },
} as const;

/** fal-js `types/endpoints.ts` `FluxProV11Output` (FLUX 1.1 ultra; Kontext's `FluxKontextOutput` is the same shape). */
export const FLUX_OUTPUT = {
  images: [
    { url: "https://v3.fal.media/files/lion/one.png", width: 2752, height: 1536, content_type: "image/png" },
    { url: "https://v3.fal.media/files/lion/two.png", width: 2752, height: 1536, content_type: "image/png" },
  ],
  timings: {},
  seed: 42,
  has_nsfw_concepts: [false, false],
  prompt: "a lighthouse at dusk",
} as const;

/** fal-js `types/endpoints.ts` `V16Output` (Recraft v4 text-to-vector): `images: File[]`, no size. */
export const RECRAFT_VECTOR_OUTPUT = {
  images: [{ url: "https://v3.fal.media/files/tiger/image.svg", content_type: "image/svg+xml", file_name: "image.svg", file_size: 20_480 }],
} as const;

/** docs.fal.ai/errors: a model error (`detail` array with `loc`, `msg`, `type`, `url`, `ctx`). */
export const VALIDATION_ERROR = {
  detail: [
    {
      loc: ["body", "image_url"],
      msg: "Image dimensions are too large. Maximum allowed is 1024x1024.",
      type: "image_too_large",
      url: "https://docs.fal.ai/errors/#image_too_large",
      ctx: { max_height: 1024, max_width: 1024 },
    },
  ],
} as const;

/** docs.fal.ai/errors `content_policy_violation` (422; `input` echoes the flagged value). */
export const CONTENT_POLICY_ERROR = {
  detail: [
    {
      loc: ["body", "prompt"],
      msg: "The content was flagged by a content checker.",
      type: "content_policy_violation",
      url: "https://docs.fal.ai/errors#content_policy_violation",
      input: "the flagged input",
      categories: ["sexual"],
    },
  ],
} as const;

/** fal.ai/docs/documentation/model-apis/request-errors: a request error (flat `detail` + `error_type`). */
export const REQUEST_ERROR = { detail: "Request timed out", error_type: "request_timeout" } as const;
