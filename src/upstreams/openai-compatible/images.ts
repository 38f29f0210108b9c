/**
 * Image generation at OpenAI (`POST {baseUrl}/images/generations`): how a validated {@link ImageRequest}
 * of family imgC becomes OpenAI requests, and how OpenAI's answers become {@link MediaOutput}s. The job
 * source (images-source.ts) wraps this synchronous call as a job. Request and answer shapes are those of
 * the `openai` npm package, `resources/images.ts` (`ImageGenerateParams`, `ImagesResponse`, `Image`); the
 * per-model rules (dall-e-3's `n`, sizes and qualities; `response_format` for dall-e only, `output_format`
 * for gpt-image only) those of OpenAI's API description, openai/openai-openapi `openapi.yaml`
 * `CreateImageRequest`; the model ids are upstreams.md's "Default upstream ids".
 *
 * ## Our models ({@link OPENAI_IMAGE_MODELS})
 * | model | upstream id | images per request | `quality` | format fields |
 * |---|---|---|---|---|
 * | `imgC-v3` | `dall-e-3` | 1: `n` > 1 is `n` requests in parallel, all-or-nothing | `"hd"` | `response_format: "b64_json"` |
 * | `imgC-q1` | `gpt-image-1` | `n` in one request | the request's tier (`low`, `medium`, `high`; default `medium`, D14) | `output_format: "png"`, no `response_format` (gpt-image models reject it and always answer `b64_json`) |
 * dall-e-3 takes `n: 1` only (`CreateImageRequest.n`: "For `dall-e-3`, only `n=1` is supported").
 * All-or-nothing: when one of the parallel requests fails, the others are aborted and the
 * first failure is thrown, so the job never delivers fewer images than it holds for (OpenAI may still
 * bill the aborted requests it had started: a cost of ours, never the customer's).
 *
 * A source's `models` map (D25) replaces the upstream id ({@link checkImageModelOverrides}), and the id
 * decides the dialect ({@link dialectOf}): a `dall-e-*` id is asked as dall-e-3 is, any other id as the
 * gpt-image models are. So `"imgC-v3": "gpt-image-1.5"` moves the HD model onto a gpt-image model: asked
 * for `quality: "high"` (the HD tier), `n` images in one request.
 *
 * ## Sizes ({@link OPENAI_IMAGE_SIZES})
 * OpenAI offers three sizes per model; the request's aspect ratio picks the nearest by ratio:
 * | aspect | dall-e-3 | gpt-image-1 |
 * |---|---|---|
 * | `1:1` | `1024x1024` | `1024x1024` |
 * | `16:9`, `4:3`, `21:9` (landscape) | `1792x1024` | `1536x1024` |
 * | `9:16`, `3:4` (portrait) | `1024x1792` | `1024x1536` |
 * (4:3 is 1.33: nearer to 1.5 and 1.75 than to 1 on a log scale; 21:9 gets the widest there is.) The image
 * delivered has the model's size, not the request's `width` x `height`; the price is per image (D14).
 *
 * ## Pass-through parameters (D3), decided here
 * The body is `{...parameters without GATEWAY_FIELDS, ...the gateway's fields}`:
 * - {@link GATEWAY_FIELDS} are the gateway's: `model`, `prompt`, `n`, `size`, `quality` (the price tier),
 *   `response_format`, `output_format` (the output is PNG), and the fields that would change the answer's
 *   shape (`stream`, `partial_images`) or need another format (`output_compression`). A caller's value
 *   for one of them is dropped; the gateway sets those the model takes;
 * - everything else (`style` and `user` of dall-e-3; `background`, `moderation`, `safety_identifier` of
 *   gpt-image-1, ...) is forwarded unchanged. OpenAI refuses a field a model does not have with a 400,
 *   which ends the job `provider_error` without a charge.
 *
 * ## Answers ({@link decodeImagesAnswer})
 * `{created, data: [{b64_json | url, revised_prompt?}], usage?}`: a `b64_json` image becomes a `bytes`
 * output (`image/png`, width and height read from the PNG header); a `url` one (dall-e-3 asked for URLs
 * through a proxy that ignores `response_format`) a `url` output the runner downloads. `revised_prompt`
 * and `usage` (gpt-image token counts, not USD) are not used. An answer with fewer images than asked
 * for is malformed (the hold is for `n` images).
 *
 * ## Failures
 * Those of api.ts, plus: a moderation refusal (HTTP 4xx with `error.code` in {@link MODERATION_CODES})
 * is an {@link OpenAICompatibleError} with `contentRejected` (never retryable: the job ends
 * `content_rejected`). Answers up to {@link MAX_IMAGES_RESPONSE_BYTES} are read.
 */
import type { AspectRatio, ImageRequest, MediaOutput } from "../types.ts";
import { pngDimensions } from "../media-probe.ts";
import { ENDPOINTS, errorMessageOf, OpenAICompatibleError, postForJson } from "./api.ts";
import { isRecord } from "../util.ts";
import type { OpenAICompatibleApi } from "./api.ts";

/**
 * Largest answer read, bytes. Four `gpt-image-1` high-quality 1536x1024 PNGs in base64 are some 20 MB;
 * chat's 16 MB cap (api.ts) would refuse them.
 */
export const MAX_IMAGES_RESPONSE_BYTES = 64 * 1024 * 1024;

/**
 * `error.code` values of OpenAI's moderation refusals (HTTP 400): `content_policy_violation` (dall-e-3,
 * `type: "invalid_request_error"`) and `moderation_blocked` (gpt-image models, `type:
 * "image_generation_user_error"`). Seen in answers quoted in public issue threads; no SDK names them.
 */
export const MODERATION_CODES: readonly string[] = ["content_policy_violation", "moderation_blocked"];

/** How a model is asked: dall-e-3 (one image per request, `hd`) or the gpt-image models (tiers, `n` at once). */
export type OpenAIImageDialect = "dall-e" | "gpt-image";

/** One of our models at OpenAI. */
export interface OpenAIImageModel {
  /** The default upstream id (`model` of the body); its dialect follows from it ({@link dialectOf}). */
  upstreamModel: string;
}

/**
 * The dialect an upstream id speaks: `dall-e-*` ids (one image per request, `standard`/`hd`,
 * `response_format`) the dall-e one, every other id (`gpt-image-1`, `gpt-image-1.5`, ...) the gpt-image
 * one.
 */
export function dialectOf(upstreamModel: string): OpenAIImageDialect {
  return upstreamModel.startsWith("dall-e") ? "dall-e" : "gpt-image";
}

/**
 * The `quality` a request is asked at: imgC-v3 is the HD product (dall-e `hd`, gpt-image `high`); imgC-q1
 * is sold by tier (D14): the request's tier (default `medium`) on a gpt-image model, and on a dall-e model
 * `hd` for `high`, `standard` for the others.
 */
function qualityOf(req: ImageRequest, dialect: OpenAIImageDialect): string {
  const tier = req.model === "imgC-v3" ? "high" : (req.quality ?? "medium");
  if (dialect === "gpt-image") return tier;
  return tier === "high" ? "hd" : "standard";
}

/** Our imgC models (upstreams.md "Default upstream ids"). Frozen. */
export const OPENAI_IMAGE_MODELS: Readonly<Record<string, OpenAIImageModel>> = Object.freeze({
  "imgC-v3": Object.freeze({ upstreamModel: "dall-e-3" }),
  "imgC-q1": Object.freeze({ upstreamModel: "gpt-image-1" }),
} satisfies Record<string, OpenAIImageModel>);

/** The `size` each dialect is asked for, by orientation (see the module comment). Frozen. */
export const OPENAI_IMAGE_SIZES: Readonly<Record<OpenAIImageDialect, Readonly<Record<Orientation, string>>>> = Object.freeze({
  "dall-e": Object.freeze({ square: "1024x1024", landscape: "1792x1024", portrait: "1024x1792" }),
  "gpt-image": Object.freeze({ square: "1024x1024", landscape: "1536x1024", portrait: "1024x1536" }),
});

type Orientation = "square" | "landscape" | "portrait";

/** The orientation of each aspect ratio: the OpenAI size nearest to it. */
export const ASPECT_ORIENTATION: Readonly<Record<AspectRatio, Orientation>> = Object.freeze({
  "1:1": "square",
  "16:9": "landscape",
  "4:3": "landscape",
  "21:9": "landscape",
  "9:16": "portrait",
  "3:4": "portrait",
});

/** Body fields the gateway decides: a caller's `parameters` never set them (see the module comment). */
export const GATEWAY_FIELDS: readonly string[] = [
  "model",
  "prompt",
  "n",
  "size",
  "quality",
  "response_format",
  "output_format",
  "output_compression",
  "stream",
  "partial_images",
];

/** The OpenAI requests that make one job. */
export interface OpenAIImageCall {
  /** The upstream id sent as `model` (after the source's `models` overrides). */
  upstreamModel: string;
  /** One JSON body per request, all sent in parallel (dall-e-3 with `n` > 1: `n` bodies). */
  bodies: Record<string, unknown>[];
  /** Images each body asks for (its `n`). */
  imagesPerBody: number;
}

/** Why a request cannot be mapped: not one of {@link OPENAI_IMAGE_MODELS}. */
export class OpenAIImagesMappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OpenAIImagesMappingError";
  }
}

/** The shape of an upstream model id an override may name (`gpt-image-1.5`, `dall-e-3`, `ft:...`). */
const UPSTREAM_MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/**
 * The overrides of a source's `models` map (D25) that concern images: keys of {@link OPENAI_IMAGE_MODELS},
 * values upstream ids. Other keys are ignored (an `openai` entry may also serve transcription,
 * understanding and text, whose models it maps too; imgC models have no `/image` variant). Returns a
 * frozen copy.
 * @throws RangeError when the value of an imgC key is not an upstream model id.
 */
export function checkImageModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    if (!Object.hasOwn(OPENAI_IMAGE_MODELS, key)) continue;
    if (typeof value !== "string" || !UPSTREAM_MODEL_ID.test(value)) {
      throw new RangeError(`models: the upstream id of ${JSON.stringify(key)} must be an OpenAI model id such as "gpt-image-1"`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/**
 * Maps an image request to its OpenAI requests (see the module comment).
 * @throws OpenAIImagesMappingError when `req.model` is not an imgC model.
 */
export function imageGenerationCall(req: ImageRequest, overrides: Readonly<Record<string, string>>): OpenAIImageCall {
  const model = Object.hasOwn(OPENAI_IMAGE_MODELS, req.model) ? OPENAI_IMAGE_MODELS[req.model] : undefined;
  if (model === undefined) throw new OpenAIImagesMappingError(`model ${req.model} is not served by OpenAI images`);
  const upstreamModel = overrides[req.model] ?? model.upstreamModel;
  const dialect = dialectOf(upstreamModel);
  const n = Number.isInteger(req.n) && req.n > 1 ? req.n : 1;
  const size = OPENAI_IMAGE_SIZES[dialect][ASPECT_ORIENTATION[req.aspect] ?? "square"];
  const quality = qualityOf(req, dialect);
  const passed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(req.parameters ?? {})) {
    if (!GATEWAY_FIELDS.includes(key) && value !== undefined) passed[key] = value;
  }
  if (dialect === "dall-e") {
    const body = { ...passed, model: upstreamModel, prompt: req.prompt, n: 1, size, quality, response_format: "b64_json" };
    return { upstreamModel, bodies: Array.from({ length: n }, () => ({ ...body })), imagesPerBody: 1 };
  }
  const body = { ...passed, model: upstreamModel, prompt: req.prompt, n, size, quality, output_format: "png" };
  return { upstreamModel, bodies: [body], imagesPerBody: n };
}

/**
 * Sends every request of `call` in parallel and returns all the images, in order. All-or-nothing: the
 * first failure aborts the other requests and is thrown.
 * @throws {@link OpenAICompatibleError} (api.ts failure table; `contentRejected` for a moderation
 *   refusal; malformed for an answer {@link decodeImagesAnswer} refuses), or the caller's abort reason.
 */
export async function generateImages(api: OpenAICompatibleApi, call: OpenAIImageCall, signal?: AbortSignal): Promise<MediaOutput[]> {
  if (call.bodies.length === 1) return generateOnce(api, call.bodies[0], call.imagesPerBody, signal);
  const siblings = new AbortController();
  const shared = signal === undefined ? siblings.signal : AbortSignal.any([signal, siblings.signal]);
  const parts = await Promise.all(
    call.bodies.map((body) =>
      generateOnce(api, body, call.imagesPerBody, shared).catch((err: unknown) => {
        siblings.abort(new Error("another part of the job failed"));
        throw err;
      }),
    ),
  );
  return parts.flat();
}

/** One `POST /images/generations`: its images, or the mapped failure. */
async function generateOnce(api: OpenAICompatibleApi, body: Record<string, unknown>, expected: number, signal?: AbortSignal): Promise<MediaOutput[]> {
  const call = api.callSignal(signal);
  let answer: unknown;
  try {
    answer = await postForJson(api, ENDPOINTS.imageGenerations, body, call, MAX_IMAGES_RESPONSE_BYTES);
  } catch (err) {
    throw moderationAware(err);
  }
  const decoded = decodeImagesAnswer(answer, expected);
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
 * Decodes an images answer (`ImagesResponse`) that should hold `expected` images: `b64_json` items
 * become PNG bytes, `url` items URLs; a longer list is cut to `expected`. Returns a string saying what is
 * wrong when the answer is not usable (an error object, no `data`, an item with neither field, base64
 * that is not a PNG, fewer images than expected).
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
    if (typeof item.b64_json === "string" && item.b64_json !== "") {
      const output = pngFromBase64(item.b64_json);
      if (output === null) return "b64_json is not a base64 PNG image";
      outputs.push(output);
    } else if (typeof item.url === "string" && isHttpUrl(item.url)) {
      outputs.push({ kind: "url", url: item.url });
    } else {
      return "an image has neither b64_json nor an http(s) url";
    }
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

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}
