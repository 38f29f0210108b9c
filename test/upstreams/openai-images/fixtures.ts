/**
 * OpenAI's image-generation requests and answers as its own SDK and public answers show them, each
 * naming where it comes from. The fake (fakes/openai-images.ts) answers in these
 * shapes; decode.test.ts and errors.test.ts replay them to the adapter.
 */
import { renderPng } from "../../../src/upstreams/simulator/images/png.ts";

/** A small real PNG (8x6 px) and its base64, standing in for the megabytes OpenAI sends. */
export const SMALL_PNG = renderPng({ prompt: "fixture", width: 8, height: 6 });
export const SMALL_PNG_B64 = Buffer.from(SMALL_PNG).toString("base64");

/**
 * The request body the adapter sends for imgC-v3 (16:9), `ImageGenerateParams` of the `openai` package
 * (`node_modules/openai/resources/images.d.ts`): `gpt-image-2` (D35), a standard size, `quality: "high"`,
 * `output_format: "png"`, and no `response_format` ("Unsupported for GPT image models, which always return
 * base64-encoded images").
 */
export const IMG_C_V3_REQUEST = {
  model: "gpt-image-2",
  prompt: "a lighthouse at dusk",
  n: 1,
  size: "1536x1024",
  quality: "high",
  output_format: "png",
} as const;

/** The request body for imgC-q1 at the `low` tier with `n: 3`, portrait: the same model and fields, the tier as `quality`. */
export const IMG_C_Q1_REQUEST = {
  model: "gpt-image-2",
  prompt: "a lighthouse at dusk",
  n: 3,
  size: "1024x1536",
  quality: "low",
  output_format: "png",
} as const;

/**
 * A GPT image answer: `ImagesResponse` with `background`, `output_format`, `quality`, `size` and `usage`
 * (`ImagesResponse.Usage`: `input_tokens`, `input_tokens_details`, `output_tokens`, `total_tokens`), the
 * images in `b64_json` only.
 */
export const GPT_IMAGE_ANSWER = {
  created: 1_745_000_000,
  background: "opaque",
  output_format: "png",
  quality: "low",
  size: "1024x1536",
  data: [{ b64_json: SMALL_PNG_B64 }, { b64_json: SMALL_PNG_B64 }, { b64_json: SMALL_PNG_B64 }],
  usage: {
    input_tokens: 12,
    input_tokens_details: { image_tokens: 0, text_tokens: 12 },
    output_tokens: 1224,
    total_tokens: 1236,
  },
} as const;

/**
 * An answer with a `url` image and no `b64_json`: what DALL-E answered by default (a signed Azure blob link,
 * the host and query as in answers pasted into public code; the ids made up). A GPT image model never
 * answers it, so the adapter refuses it as malformed.
 */
export const URL_ANSWER = {
  created: 1_713_833_628,
  data: [
    {
      url: "https://oaidalleapiprodscus.blob.core.windows.net/private/org-fake/user-fake/img-fake.png?st=2024-04-23T00%3A53%3A48Z&se=2024-04-23T02%3A53%3A48Z&sp=r&sig=fake",
      revised_prompt: "A lighthouse on a rocky shore at dusk.",
    },
  ],
} as const;

/** dall-e-3's moderation refusal, HTTP 400, as quoted in songquanpeng/one-api#737 (and tipi-tapi/ai-paint-today-BE#210). */
export const CONTENT_POLICY_ERROR = {
  error: {
    code: "content_policy_violation",
    message: "Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.",
    param: null,
    type: "invalid_request_error",
  },
} as const;

/**
 * A gpt-image moderation refusal, HTTP 400, as quoted in ucx0204/CarrotMangaTranslator#122 (an OpenAI
 * image model through Codex, 2026) and jeffstric/ZJT#480 (gpt-image-2 through a relay); the request id
 * is made up.
 */
export const MODERATION_BLOCKED_ERROR = {
  error: {
    message:
      "Your request was rejected by the safety system. If you believe this is an error, contact us at help.openai.com and include the request ID 00000000-0000-4000-8000-000000000000. safety_violations=[sexual].",
    type: "image_generation_user_error",
    param: null,
    code: "moderation_blocked",
    moderation_details: { moderation_stage: "output", categories: ["sexual"] },
  },
} as const;

/** A GPT image model given `response_format`, HTTP 400, as quoted in vercel/ai#6102. */
export const UNKNOWN_PARAMETER_ERROR = {
  error: { message: "Unknown parameter: 'response_format'.", type: "invalid_request_error", param: "response_format", code: "unknown_parameter" },
} as const;

/**
 * A retired model, HTTP 404: OpenAI's answer for a model it shut down, as quoted in
 * openai/openai-quickstart-node#127 (there for `text-davinci-003`).
 */
export const MODEL_RETIRED_ERROR = {
  error: {
    message: "The model `gpt-image-1` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations",
    type: "invalid_request_error",
    param: null,
    code: "model_not_found",
  },
} as const;

/** An unknown model, HTTP 404, as quoted in jdmnk/codex-imagegen-cli#18. */
export const MODEL_UNKNOWN_ERROR = {
  error: { message: "The model `gpt-image-9` does not exist or you do not have access to it.", type: "invalid_request_error", param: null, code: "model_not_found" },
} as const;

/**
 * A rate limit, HTTP 429 with `retry-after` (upstreams.md "OpenAI images"; the `openai` package's
 * `client.ts` reads `retry-after` and `retry-after-ms` before it retries). Message and type *unverified*.
 */
export const RATE_LIMIT_ERROR = {
  error: { message: "Rate limit reached for images per minute. Please try again in 1s.", type: "requests", param: null, code: "rate_limit_exceeded" },
} as const;

/** OpenAI's generic server error, HTTP 500 (`type: "server_error"`; message as OpenAI words it, *unverified*). */
export const SERVER_ERROR = {
  error: { message: "The server had an error while processing your request. Sorry about that!", type: "server_error", param: null, code: null },
} as const;
