/**
 * Black Forest Labs' answers as its docs, its SDK and clients built on it show them, each naming where
 * it comes from. The fake (fakes/bfl.ts) answers in these shapes; decode.test.ts feeds them
 * to the decoders. Where a value is ours rather than the source's, the comment says so.
 */

/**
 * docs.bfl.ai API reference, "Generate or edit an image with FLUX.2 [pro]": the 200 answer
 * `AsyncResponse` `{id, polling_url, cost, input_mp, output_mp}` (the last three `number | null`). The
 * values are that page's example as docs.yutoai.net's copy of it quotes it (a polling URL on the
 * regional host `api.eu2.bfl.ai`; `output_mp` 0.0 in an example answer).
 */
export const SUBMIT_ANSWER = {
  id: "d5ba37dc-ba09-4658-852e-deea7e176439",
  polling_url: "https://api.eu2.bfl.ai/v1/get_result?id=d5ba37dc-ba09-4658-852e-deea7e176439",
  cost: 3.0,
  input_mp: 0.0,
  output_mp: 0.0,
} as const;

/**
 * doc-en.302.ai, FLUX.2 [klein] 9B page: BFL's answer to a 1024 x 768 request relayed as it is, with a
 * fractional `output_mp` (0.75 = 1024 x 768 / 2^20) and the regional host `api.us3.bfl.ai`.
 */
export const SUBMIT_ANSWER_FRACTIONAL = {
  id: "5015d102-09e0-44e9-8ede-ab8c74b16ed6",
  polling_url: "https://api.us3.bfl.ai/v1/get_result?id=5015d102-09e0-44e9-8ede-ab8c74b16ed6",
  cost: 6.0,
  input_mp: 0.0,
  output_mp: 0.75,
} as const;

/** black-forest-labs/skills `skills/bfl-api/SKILL.md` "Quick Start": an answer with `id` and `polling_url` only. */
export const SUBMIT_ANSWER_MINIMAL = { id: "abc123", polling_url: "https://api.bfl.ai/v1/get_result?id=abc123" } as const;

/**
 * black-forest-labs/blackforest `src/bfl/_client.py` `_build_job_kwargs`: an answer may lack
 * `polling_url`; BFL's SDK then polls `/v1/get_result?id={id}` on the base URL.
 */
export const SUBMIT_ANSWER_NO_POLLING_URL = { id: "abc123" } as const;

/** Result answers of `GET {polling_url}`. */
export const RESULT_ANSWERS = {
  /** black-forest-labs/skills `skills/bfl-api/references/endpoints.md` "Response States". */
  pending: { status: "Pending" },
  /** ComfyUI `comfy_api_nodes/apis/bfl_api.py` `BFLFluxStatusResponse`: `{id, status, result, progress}` (progress 0.0 to 1.0). */
  pendingWithProgress: { id: "d5ba37dc-ba09-4658-852e-deea7e176439", status: "Pending", result: null, progress: 0.42 },
  /**
   * black-forest-labs/skills `references/endpoints.md` "Response States" (`result: {sample, prompt,
   * seed}`); the sample URL is a real signed delivery URL (`delivery-eu1.bfl.ai`, valid 10 minutes) as
   * the example answer of gptproto.apifox.cn's FLUX Kontext page relays it.
   */
  ready: {
    status: "Ready",
    result: {
      sample:
        "https://delivery-eu1.bfl.ai/results/14/7028320d8a6223/0d8a622345454eaeb6f4268ab3197208/sample.png?se=2025-07-08T11%3A15%3A03Z&sp=r&sv=2024-11-04&sr=b&rsct=image/png&sig=KVGUHRkBW2KJ0OxMoBgOHbjTNLE/DDWrdJ27oxG/Cuw%3D",
      prompt: "cat with a red hat",
      seed: 1234567890,
    },
  },
  /** black-forest-labs/skills `references/endpoints.md` "Response States": `{status: "Error", error}`. */
  error: { status: "Error", error: "Error description" },
  /**
   * black-forest-labs/skills `references/error-handling.md` "Generation Failures": `{status: "Error",
   * error: <code>, message}`; `invalid_image` (an input image BFL could not process) and
   * `content_policy_violation` are the failures not to retry, `generation_timeout` and `internal_error`
   * the ones to retry. The message texts are ours.
   */
  errorInput: { status: "Error", error: "invalid_image", message: "Input image could not be processed" },
  errorPolicy: { status: "Error", error: "content_policy_violation", message: "The prompt was refused" },
  errorTimeout: { status: "Error", error: "generation_timeout", message: "Generation took too long" },
  /**
   * BFL's API reference example of `GET /v1/get_result` (its Scalar page, as copied into git.mana.how
   * till/managarten `FluxAPIBFLReadMe.md`): `Task not found` answered with HTTP 200.
   */
  taskNotFound: { id: "…", status: "Task not found", result: {} },
  /**
   * The status names are blackforest `src/bfl/_jobs.py` `_TERMINAL_MODERATED` ("request": the prompt or
   * references were refused; "content": the generated image was); that SDK passes `details` through.
   * The `details` shape `{"Moderation Reasons": [...]}` is the one independent BFL clients parse
   * (*unverified* in BFL's own code).
   */
  requestModerated: { id: "t-1", status: "Request Moderated", result: null, progress: null, details: { "Moderation Reasons": ["Derivative Works Filter"] } },
  contentModerated: { id: "t-2", status: "Content Moderated", result: null, progress: null, details: { "Moderation Reasons": ["Sexual Content"] } },
  /** A status BFL's SDK does not know (blackforest `_jobs.py` refuses to poll on through one). Ours. */
  unknown: { status: "Processing" },
} as const;

/**
 * BFL's OpenAPI answers 422 with FastAPI's `HTTPValidationError` (docs.bfl.ai API reference, "Get
 * Result" page: `'422': Validation Error ... HTTPValidationError`); the items are pydantic v2's, which
 * echo the `input`.
 */
export const VALIDATION_ERROR = {
  detail: [{ type: "missing", loc: ["body", "prompt"], msg: "Field required", input: { width: 1024, height: 1024 } }],
} as const;

/** black-forest-labs/skills `skills/bfl-api/references/rate-limiting.md` "HTTP 429 Response". */
export const RATE_LIMITED = { error: "rate_limit_exceeded", message: "Too many concurrent requests", retry_after: 5 } as const;

/** black-forest-labs/blackforest `tests/test_transport.py` `test_map_auth_error`: 403 `{detail}`. */
export const AUTH_ERROR = { detail: "nope" } as const;
