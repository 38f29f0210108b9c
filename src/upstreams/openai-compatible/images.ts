/**
 * Image generation at OpenAI (`POST {baseUrl}/images/generations`): how a validated {@link ImageRequest}
 * of family imgC becomes one OpenAI request, and how OpenAI's answer becomes {@link MediaOutput}s. The job
 * source (images-source.ts) wraps this synchronous call as a job. Request and answer shapes, and every
 * value sent, follow the installed `openai` package (7.57.0), `node_modules/openai/resources/images.d.ts`:
 * `ImageModel`, `ImageGenerateParams` (`n` 1 to 10; `quality` `low`, `medium`, `high` for the GPT image
 * models; the standard sizes `1024x1024`, `1536x1024`, `1024x1536`, which every GPT image model takes;
 * `output_format` `png`; `response_format` "Unsupported for GPT image models, which always return
 * base64-encoded images"), `ImagesResponse`, `Image`. The ids are upstreams.md's "Default upstream ids"
 * (D35).
 *
 * ## Our models ({@link OPENAI_IMAGE_MODELS})
 * | model | upstream id | `quality` | `n` | format fields |
 * |---|---|---|---|---|
 * | `imgC-v3` | `gpt-image-2` | `high` | the request's `n`, in one request | `output_format: "png"`; no `response_format` |
 * | `imgC-q1` | `gpt-image-2` | the request's tier (`low`, `medium`, `high`; default `medium`, D14) | the same | the same |
 * OpenAI shut down `dall-e-3` (2026-05-12) and `gpt-image-1` (2026-10-23), the former upstreams of the two
 * models (`ImageModel`'s "Deprecated values"); `gpt-image-2` serves both (D35). Every GPT image model answers
 * `b64_json`, so the request names no `response_format`.
 *
 * A source's `models` map (D25) replaces the upstream id ({@link checkImageModelOverrides}); the body stays
 * the one above, so the id must name a GPT image model (`gpt-image-2.5-flare`, `gpt-image-1.5`, ...). A
 * `dall-e-*` id is refused when the source is built: DALL-E took another request (one image per call,
 * `standard`/`hd`, `response_format`), and OpenAI retired both DALL-E models, so no source can serve it.
 * An id OpenAI retired later is sent as given and answered `404 model_not_found`, which api.ts maps to a
 * `modelNotFound` error naming the id (D35).
 *
 * ## Sizes ({@link OPENAI_IMAGE_SIZES})
 * The request's aspect ratio picks the nearest of the three standard sizes by ratio:
 * | aspect | size |
 * |---|---|
 * | `1:1` | `1024x1024` |
 * | `16:9`, `4:3`, `21:9` (landscape) | `1536x1024` |
 * | `9:16`, `3:4` (portrait) | `1024x1536` |
 * (4:3 is 1.33: nearer to 1.5 than to 1 on a log scale; 21:9 gets the widest there is.) gpt-image-2 also
 * takes other `WIDTHxHEIGHT` sizes, but OpenAI prices an image by its size and quality, our price is per image
 * (D14), and an override may name a model that takes the standard sizes only. The image delivered has
 * this size, not the request's `width` x `height`.
 *
 * ## Pass-through parameters (D3), decided here
 * The body is `{...parameters without GATEWAY_FIELDS, ...the gateway's fields}`:
 * - {@link GATEWAY_FIELDS} are the gateway's: `model`, `prompt`, `n`, `size`, `quality` (the price tier),
 *   `output_format` (the output is PNG), the fields that would change the answer's shape (`stream`,
 *   `partial_images`) or need another format (`output_compression`), and the fields of the retired DALL-E
 *   models that the GPT image models refuse (`response_format`, `style`), so a request written for the
 *   former upstream still runs. A caller's value for one of them is dropped;
 * - everything else (`background`, `moderation`, `safety_identifier`, `user`, ...) is forwarded unchanged.
 *   OpenAI refuses a field it does not know with a 400 (`unknown_parameter`), which ends the job
 *   `provider_error` without a charge, on this source only (an input error is not moved to the next
 *   source, D35).
 *
 * ## Answers ({@link decodeImagesAnswer})
 * `{created, data: [{b64_json}], background, output_format, quality, size, usage}`: each `b64_json` image
 * becomes a `bytes` output (`image/png`, width and height read from the PNG header). `usage` (token
 * counts, not USD) is not used. An answer with fewer images than asked for, or an image without
 * `b64_json`, is malformed (the hold is for `n` images).
 *
 * ## Failures
 * Those of api.ts (including `modelNotFound` for a 404 `model_not_found`), plus: a moderation refusal
 * (HTTP 4xx with `error.code` in {@link MODERATION_CODES}) is an {@link OpenAICompatibleError} with
 * `contentRejected` (never retryable: the job ends `content_rejected`). Answers up to
 * {@link MAX_IMAGES_RESPONSE_BYTES} are read.
 */
import type { AspectRatio, ImageRequest, MediaOutput } from "../types.ts";
import { pngDimensions } from "../media-probe.ts";
import { ENDPOINTS, errorMessageOf, OpenAICompatibleError, postForJson } from "./api.ts";
import { isRecord } from "../util.ts";
import type { OpenAICompatibleApi } from "./api.ts";

/**
 * Largest answer read, bytes. Four high-quality 1536x1024 PNGs in base64 are some 20 MB; chat's 16 MB cap
 * (api.ts) would refuse them.
 */
export const MAX_IMAGES_RESPONSE_BYTES = 64 * 1024 * 1024;

/**
 * `error.code` values of OpenAI's moderation refusals (HTTP 400): `moderation_blocked` (GPT image models,
 * `type: "image_generation_user_error"`) and `content_policy_violation` (DALL-E's, `type:
 * "invalid_request_error"`; kept so that a refusal carrying it is never retried elsewhere). Seen in
 * answers quoted in public issue threads; no SDK names them.
 */
export const MODERATION_CODES: readonly string[] = ["content_policy_violation", "moderation_blocked"];

/** One of our models at OpenAI. */
export interface OpenAIImageModel {
  /** The default upstream id (`model` of the body). */
  upstreamModel: string;
  /** The `quality` asked: a fixed one, or `"tier"` for the request's quality tier (default `medium`, D14). */
  quality: "high" | "tier";
}

/**
 * Our imgC models (upstreams.md "Default upstream ids", D35), checked against `ImageModel` and
 * `ImageGenerateParams` of `node_modules/openai/resources/images.d.ts` (openai 7.57.0). Frozen.
 */
export const OPENAI_IMAGE_MODELS: Readonly<Record<string, OpenAIImageModel>> = Object.freeze({
  "imgC-v3": Object.freeze({ upstreamModel: "gpt-image-2", quality: "high" }),
  "imgC-q1": Object.freeze({ upstreamModel: "gpt-image-2", quality: "tier" }),
} satisfies Record<string, OpenAIImageModel>);

type Orientation = "square" | "landscape" | "portrait";

/**
 * The `size` asked for, by orientation: the standard sizes of `ImageGenerateParams.size`
 * (`node_modules/openai/resources/images.d.ts`: "The standard sizes `1024x1024`, `1536x1024`, and
 * `1024x1536` are supported by the GPT image models"). Frozen.
 */
export const OPENAI_IMAGE_SIZES: Readonly<Record<Orientation, string>> = Object.freeze({
  square: "1024x1024",
  landscape: "1536x1024",
  portrait: "1024x1536",
});

/** The orientation of each aspect ratio: the OpenAI size nearest to it. */
export const ASPECT_ORIENTATION: Readonly<Record<AspectRatio, Orientation>> = Object.freeze({
  "1:1": "square",
  "16:9": "landscape",
  "4:3": "landscape",
  "21:9": "landscape",
  "9:16": "portrait",
  "3:4": "portrait",
});

/** Body fields the gateway decides or drops: a caller's `parameters` never set them (see the module comment). */
export const GATEWAY_FIELDS: readonly string[] = [
  "model",
  "prompt",
  "n",
  "size",
  "quality",
  "output_format",
  "output_compression",
  "stream",
  "partial_images",
  "response_format",
  "style",
];

/** The OpenAI request that makes one job. */
export interface OpenAIImageCall {
  /** The upstream id sent as `model` (after the source's `models` overrides). */
  upstreamModel: string;
  /** The JSON body. */
  body: Record<string, unknown>;
  /** Images asked for (the body's `n`). */
  n: number;
}

/** Why a request cannot be mapped: not one of {@link OPENAI_IMAGE_MODELS}. */
export class OpenAIImagesMappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OpenAIImagesMappingError";
  }
}

/** The shape of an upstream model id an override may name (`gpt-image-2.5-flare`, `ft:...`). */
const UPSTREAM_MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/**
 * The overrides of a source's `models` map (D25) that concern images: keys of {@link OPENAI_IMAGE_MODELS},
 * values upstream ids. Other keys are ignored (an `openai` entry may also serve transcription,
 * understanding and text, whose models it maps too; imgC models have no `/image` variant). Returns a
 * frozen copy.
 * @throws RangeError when the value of an imgC key is not an upstream model id, or names a DALL-E model
 *   (retired by OpenAI; this adapter sends the GPT image models' request only, see the module comment).
 */
export function checkImageModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    if (!Object.hasOwn(OPENAI_IMAGE_MODELS, key)) continue;
    if (typeof value !== "string" || !UPSTREAM_MODEL_ID.test(value)) {
      throw new RangeError(`models: the upstream id of ${JSON.stringify(key)} must be an OpenAI model id such as "gpt-image-2"`);
    }
    if (/^dall-e/i.test(value)) {
      throw new RangeError(
        `models: ${JSON.stringify(key)} names ${JSON.stringify(value)}, a DALL-E model: OpenAI retired DALL-E 2 and 3 on 2026-05-12, ` +
          'and this source sends GPT image model requests only; name a GPT image model such as "gpt-image-2"',
      );
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/**
 * Maps an image request to its OpenAI request (see the module comment).
 * @throws OpenAIImagesMappingError when `req.model` is not an imgC model.
 */
export function imageGenerationCall(req: ImageRequest, overrides: Readonly<Record<string, string>>): OpenAIImageCall {
  const model = Object.hasOwn(OPENAI_IMAGE_MODELS, req.model) ? OPENAI_IMAGE_MODELS[req.model] : undefined;
  if (model === undefined) throw new OpenAIImagesMappingError(`model ${req.model} is not served by OpenAI images`);
  const upstreamModel = overrides[req.model] ?? model.upstreamModel;
  const n = Number.isInteger(req.n) && req.n > 1 ? req.n : 1;
  const size = OPENAI_IMAGE_SIZES[ASPECT_ORIENTATION[req.aspect] ?? "square"];
  const quality = model.quality === "high" ? "high" : (req.quality ?? "medium");
  const passed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(req.parameters ?? {})) {
    if (!GATEWAY_FIELDS.includes(key) && value !== undefined) passed[key] = value;
  }
  return { upstreamModel, body: { ...passed, model: upstreamModel, prompt: req.prompt, n, size, quality, output_format: "png" }, n };
}

/**
 * Sends the request of `call` and returns its images, in order.
 * @throws {@link OpenAICompatibleError} (api.ts failure table; `contentRejected` for a moderation
 *   refusal; `modelNotFound` for an unknown or retired model; malformed for an answer
 *   {@link decodeImagesAnswer} refuses), or the caller's abort reason.
 */
export async function generateImages(api: OpenAICompatibleApi, call: OpenAIImageCall, signal?: AbortSignal): Promise<MediaOutput[]> {
  const http = api.callSignal(signal);
  let answer: unknown;
  try {
    answer = await postForJson(api, ENDPOINTS.imageGenerations, call.body, http, MAX_IMAGES_RESPONSE_BYTES);
  } catch (err) {
    throw moderationAware(err);
  }
  const decoded = decodeImagesAnswer(answer, call.n);
  if (typeof decoded === "string") throw api.malformed(decoded);
  return decoded;
}

/** `err` itself, or, for a moderation refusal, the same error marked `contentRejected`. */
export function moderationAware(err: unknown): unknown {
  if (!(err instanceof OpenAICompatibleError) || err.kind !== "http" || err.status === null || err.status < 400 || err.status > 499) return err;
  if (err.code === null || !MODERATION_CODES.includes(err.code)) return err;
  return new OpenAICompatibleError(err.message, false, "http", err.status, { code: err.code, type: err.type, contentRejected: true });
}

/**
 * Decodes an images answer (`ImagesResponse`) that should hold `expected` images: each `b64_json` item
 * becomes PNG bytes; a longer list is cut to `expected`. Returns a string saying what is wrong when the
 * answer is not usable (an error object, no `data`, an item without `b64_json` (a GPT image model never
 * answers a `url`), base64 that is not a PNG, fewer images than expected).
 */
export function decodeImagesAnswer(value: unknown, expected: number): MediaOutput[] | string {
  const upstreamError = errorMessageOf(value);
  if (upstreamError !== null) return `error in a 2xx answer: ${upstreamError}`;
  if (!isRecord(value)) return "the answer is not a JSON object";
  const data = value.data;
  if (!Array.isArray(data) || data.length === 0) return "the answer has no data";
  const outputs: MediaOutput[] = [];
  for (const item of data.slice(0, Math.max(1, expected))) {
    if (!isRecord(item)) return "an image is not an object";
    if (typeof item.b64_json !== "string" || item.b64_json === "") return "an image has no b64_json";
    const output = pngFromBase64(item.b64_json);
    if (output === null) return "b64_json is not a base64 PNG image";
    outputs.push(output);
  }
  if (outputs.length < expected) return `the answer has ${outputs.length} images, ${expected} were asked for`;
  return outputs;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A `bytes` output of a base64 PNG, or null when the text is not base64 of a PNG. */
function pngFromBase64(text: string): MediaOutput | null {
  const compact = text.replace(/\s+/g, "");
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) return null;
  const body = Buffer.from(compact, "base64");
  const size = pngDimensions(body);
  if (size === null) return null;
  return { kind: "bytes", contentType: "image/png", body, width: size.width, height: size.height };
}
