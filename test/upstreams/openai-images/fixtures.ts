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
 * The request body the adapter sends for imgC-v3, `ImageGenerateParams` of the `openai` package
 * (`resources/images.ts`: `model`, `prompt`, `n`, `size`, `quality`, `response_format`); per
 * openai/openai-openapi `openapi.yaml` `CreateImageRequest`, dall-e-3 takes `n: 1` only, sizes
 * `1024x1024`, `1792x1024`, `1024x1792`, qualities `standard` and `hd`, and answers URLs unless asked for
 * `b64_json`.
 */
export const DALL_E_3_REQUEST = {
  model: "dall-e-3",
  prompt: "a lighthouse at dusk",
  n: 1,
  size: "1792x1024",
  quality: "hd",
  response_format: "b64_json",
} as const;

/**
 * The request body for imgC-q1 at the `low` tier, `ImageGenerateParams` (`resources/images.ts`): per
 * `openapi.yaml` `CreateImageRequest`, the gpt-image models take `n` up to 10, sizes `1024x1024`,
 * `1536x1024`, `1024x1536`, qualities `low`, `medium`, `high` and `output_format`, and not
 * `response_format` (see {@link UNKNOWN_PARAMETER_ERROR}).
 */
export const GPT_IMAGE_1_REQUEST = {
  model: "gpt-image-1",
  prompt: "a lighthouse at dusk",
  n: 3,
  size: "1024x1536",
  quality: "low",
  output_format: "png",
} as const;

/** `ImagesResponse` with `Image.b64_json` and `revised_prompt` (`resources/images.ts`), a dall-e-3 answer. */
export const DALL_E_3_B64_ANSWER = {
  created: 1_713_833_628,
  data: [{ b64_json: SMALL_PNG_B64, revised_prompt: "A lighthouse on a rocky shore at dusk, warm light in its lantern room." }],
} as const;

/**
 * `ImagesResponse` with `Image.url` (`resources/images.ts`: "The URL of the generated image when
 * `response_format` is set to `url`"); dall-e-3's URLs are signed Azure blob links (the host and query
 * as they appear in answers pasted into public code, e.g. a logged `ImagesResponse`; the ids here are made up).
 */
export const DALL_E_3_URL_ANSWER = {
  created: 1_713_833_628,
  data: [
    {
      url: "https://oaidalleapiprodscus.blob.core.windows.net/private/org-fake/user-fake/img-fake.png?st=2024-04-23T00%3A53%3A48Z&se=2024-04-23T02%3A53%3A48Z&sp=r&sig=fake",
      revised_prompt: "A lighthouse on a rocky shore at dusk.",
    },
  ],
} as const;

/**
 * A gpt-image answer: `ImagesResponse` with `background`, `output_format`, `quality`, `size` and `usage`
 * (`ImagesResponse.Usage`: `input_tokens`, `input_tokens_details`, `output_tokens`, `total_tokens`), the
 * images in `b64_json` only (`resources/images.ts`: "Returned by default for GPT image models").
 */
export const GPT_IMAGE_1_ANSWER = {
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

/** gpt-image-1 given `response_format`, HTTP 400, as quoted in vercel/ai#6102. */
export const UNKNOWN_PARAMETER_ERROR = {
  error: { message: "Unknown parameter: 'response_format'.", type: "invalid_request_error", param: "response_format", code: "unknown_parameter" },
} as const;

/** dall-e-3 given a size it does not make, HTTP 400, as quoted in redevrx/chat_gpt_sdk#93. */
export const INVALID_SIZE_ERROR = {
  error: { code: "invalid_size", message: "The size is not supported by this model.", param: null, type: "invalid_request_error" },
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
