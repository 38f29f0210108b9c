/**
 * Our image and video models on fal: which endpoint serves each (the one table, {@link FAL_MODELS}),
 * how a validated request becomes the endpoint's input, and how fal's output becomes
 * {@link MediaOutput}s.
 *
 * ## Where the ids and fields come from (D35)
 * Endpoint ids are the "Default upstream ids" of upstreams.md. Every id of {@link FAL_MODELS}, and every
 * input field name and enum value the mapping below writes, was checked against the generated
 * `EndpointTypeMap` of fal-ai/fal-js `libs/client/src/types/endpoints.ts` at commit 381105e (2026-08-02),
 * the types fal publishes for each endpoint. The npm package `@fal-ai/client` 1.10.1 (a development
 * dependency: `node_modules/@fal-ai/client/src/types/endpoints.d.ts`) ships an older copy of the same
 * file: it has every id below except Seedance 2.0 (`bytedance/seedance-2.0/...`, added later), and it
 * still lists `fal-ai/veo3`, `fal-ai/veo3/fast` and their image-to-video variants, which fal has since
 * removed (D35: vidD moved to Veo 3.1). Both copies agree on every field and value the mapping sends:
 * - Kling 2.5 turbo pro: `prompt`, `duration` `"5" | "10"`, `image_url` (image-to-video; no
 *   `aspect_ratio` there); Kling v3 pro: `duration` `"3"`..`"15"`, `generate_audio`, `start_image_url`;
 * - Seedance 2.0: `duration` `"auto" | "4"`..`"15"`, `resolution` (`480p`..`4k`; fast: `480p | 720p`),
 *   `generate_audio`, `image_url`;
 * - Hailuo-02 standard: `duration` `"6" | "10"`, `resolution` `"512P" | "768P"` on image-to-video only;
 *   pro: `prompt` and `image_url` only;
 * - Veo 3.1 and 3.1 fast: `duration` `"4s" | "6s" | "8s"`, `resolution` `"720p" | "1080p"` (and `"4k"`
 *   in the newer copy),
 *   `generate_audio`, `aspect_ratio` (`"16:9" | "9:16"`, image-to-video adds `"auto"`), `image_url`;
 * - Recraft v4 and v3: `image_size` (a preset name or `{width, height}`), no `num_images`; v3
 *   image-to-image takes `image_url` and no size;
 * - FLUX.2 pro: `image_size`, `output_format` `"jpeg" | "png"`, no `num_images`; its edit endpoint
 *   `image_urls`; Kontext pro and 1.1 ultra: `aspect_ratio` (all six of ours are in their enums),
 *   `num_images`, `output_format`, Kontext's `image_url`.
 * The loopback fake (fakes/fal.ts) validates every submit against these types.
 *
 * ## Variants (D25)
 * Each model has a text-to-x endpoint and, where fal has one, an image-to-x endpoint, chosen by whether
 * the request carries `imageUrl` / `imageUrls`. A source's `models` map overrides them:
 * `{"<model id>": "<text-to-x endpoint>", "<model id>/image": "<image-to-x endpoint>"}`; an absent key
 * keeps the default. A model without an image variant ignores the image (validation already drops it
 * for such models); a model without a text variant (vidC-02-512p is image-to-video only) refuses a
 * request without an image.
 *
 * ## Pass-through parameters (D3), decided here
 * The fal input is `{...parameters, ...gatewayFields}`:
 * - the gateway's fields always win: the prompt, the image input, the duration, the size (`image_size`
 *   or `aspect_ratio` of images), the number of images, `output_format`, and the fields that decide the
 *   model and its price (`generate_audio`, `resolution`: see each row). A caller cannot buy a 1080p or
 *   a 4-image generation at the price of a 720p or 1-image one;
 * - {@link DROPPED_PARAMETERS} are removed: `sync_mode` would turn the output URLs into data URIs and
 *   keep the request out of fal's history;
 * - a video's `size` (`WxH`, the pixel size the OpenAI dialect's `size` asks for, which the simulator
 *   renders) is removed too: no fal video endpoint has the field, and the resolution of each is the
 *   model's (`resolution` in `fields` where the endpoint has one, as it sets the price); the picture's
 *   shape reaches fal as `aspect_ratio`, which the dialect sets with it;
 * - everything else (a seed, `aspect_ratio` of videos, `negative_prompt`, `cfg_scale`,
 *   `safety_tolerance`, ...) is forwarded unchanged; fal ignores fields an endpoint does not have.
 *
 * ## Durations (D26)
 * A video is asked for the shortest clip the model offers that is at least as long as requested, else
 * the longest it offers ({@link pickDuration}). fal takes durations as strings: `"5"`, Veo `"6s"`.
 * Hailuo-02 1080P (the `pro` endpoints) takes no duration and makes 6 s clips (fal's schema: "10
 * seconds videos are not supported for 1080p").
 *
 * ## Sizes
 * - Recraft (`image_size` presets): 1:1 `square_hd`, 16:9 `landscape_16_9`, 9:16 `portrait_16_9`, 4:3
 *   `landscape_4_3`, 3:4 `portrait_4_3`; 21:9 has no preset and gets the nearest, `landscape_16_9`.
 * - FLUX.2 pro (`image_size: {width, height}`): the requested pixels, each side rounded to a multiple
 *   of 16 (BFL's grid) within 64..2048; the final charge uses the delivered size (D26).
 * - FLUX Kontext and 1.1 ultra (`aspect_ratio`): the request's aspect, all six are in their enums.
 * - Videos take no gateway size: `aspect_ratio` comes from `parameters` when the caller sets one; a
 *   `size` parameter is not sent (see above). What is reported of the delivered file (its size, length
 *   and frame rate) is read from the file itself (media-probe.ts).
 */
import type { AspectRatio, ImageRequest, MediaOutput, VideoRequest } from "../types.ts";
import { isRecord } from "../util.ts";
import { httpUrlOrNull } from "../keyed-http.ts";
import { deepFreeze } from "../../catalog/freeze.ts";

/** A text-to-x and an image-to-x endpoint id; null where fal has none. */
export interface FalEndpoints {
  text: string | null;
  image: string | null;
}

/** How a video model's row maps a request. */
export interface FalVideoModel {
  kind: "video";
  endpoints: FalEndpoints;
  /** The input field of the first frame: `image_url`, or Kling v3's `start_image_url`. */
  imageField: "image_url" | "start_image_url";
  /** Clip lengths the endpoint offers, seconds, ascending. */
  durations: readonly number[];
  /** How the duration is written: `"5"` (`plain`), `"5s"` (`seconds-suffix`, Veo), or not sent (null). */
  durationFormat: "plain" | "seconds-suffix" | null;
  /** Fields the gateway sets on both variants (model- and price-defining). */
  fields: Readonly<Record<string, unknown>>;
  /** Fields the gateway sets on the image-to-video variant only. */
  imageFields?: Readonly<Record<string, unknown>>;
  /**
   * The row fal's endpoint serves when an input omits the fields that tell apart rows sharing that
   * endpoint (fal's own default: Kling v3 `generate_audio` true, Hailuo-02 standard `resolution` 768P).
   * Read only when the table is read backwards (the fal dialect, D38).
   */
  falDefault?: boolean;
}

/** How an image model's row maps a request. */
export interface FalImageModel {
  kind: "image";
  endpoints: FalEndpoints;
  /** `recraft-preset` (`image_size` preset name), `width-height` (`image_size: {width, height}`), `aspect-ratio`. */
  size: "recraft-preset" | "width-height" | "aspect-ratio";
  /**
   * How `n` images are made: `num_images` in one request, `fan-out` (one request per image: the
   * endpoint makes one), or `single` (the model always makes one; `n` is 1).
   */
  count: "num_images" | "fan-out" | "single";
  /** The input field of the reference image(s) on the image variant. */
  imageInput: "image_url" | "image_urls";
  /** Send `output_format: "png"` (FLUX answers JPEG by default; the gateway's image output is PNG). */
  png: boolean;
  /** The image variant takes no size (Recraft v3 image-to-image keeps the input's size). */
  noSizeOnImageVariant?: boolean;
}

export type FalModel = FalVideoModel | FalImageModel;

/** Keys of `parameters` that are never forwarded (see the module comment). */
export const DROPPED_PARAMETERS: readonly string[] = ["sync_mode"];

/** Keys of a video's `parameters` that are never forwarded: the gateway's pixel size (see the module comment). */
export const DROPPED_VIDEO_PARAMETERS: readonly string[] = ["size"];

const kling25: Omit<FalVideoModel, "fields"> = {
  kind: "video",
  endpoints: { text: "fal-ai/kling-video/v2.5-turbo/pro/text-to-video", image: "fal-ai/kling-video/v2.5-turbo/pro/image-to-video" },
  imageField: "image_url",
  durations: [5, 10],
  durationFormat: "plain",
};
const kling3: Omit<FalVideoModel, "fields"> = {
  kind: "video",
  endpoints: { text: "fal-ai/kling-video/v3/pro/text-to-video", image: "fal-ai/kling-video/v3/pro/image-to-video" },
  imageField: "start_image_url",
  durations: range(3, 15),
  durationFormat: "plain",
};
const seedanceDurations = range(4, 15);
const veoDurations = [4, 6, 8];

/**
 * Every model fal serves for the gateway, by model id (families vidA Kling, vidB Seedance, vidC
 * Hailuo-02, vidD Veo 3.1, imgA Recraft, imgB FLUX). Frozen. Each endpoint id and input field checked
 * against fal-js `libs/client/src/types/endpoints.ts` (commit 381105e, 2026-08-02) and `@fal-ai/client`
 * 1.10.1's `src/types/endpoints.d.ts` (see the module comment, D35).
 */
export const FAL_MODELS: Readonly<Record<string, FalModel>> = deepFreeze({
  // vidA: Kling. Spec prices are fal's x 1.35; v3 audio on/off is the price difference.
  "vidA-2.5-pro": { ...kling25, fields: {} },
  "vidA-3-pro": { ...kling3, fields: { generate_audio: false } },
  "vidA-3-pro-audio": { ...kling3, fields: { generate_audio: true }, falDefault: true },
  // vidB: Seedance 2.0, priced with bundled audio at 720p.
  "vidB-2-pro": {
    kind: "video",
    endpoints: { text: "bytedance/seedance-2.0/text-to-video", image: "bytedance/seedance-2.0/image-to-video" },
    imageField: "image_url",
    durations: seedanceDurations,
    durationFormat: "plain",
    fields: { generate_audio: true, resolution: "720p" },
  },
  "vidB-2-fast": {
    kind: "video",
    endpoints: { text: "bytedance/seedance-2.0/fast/text-to-video", image: "bytedance/seedance-2.0/fast/image-to-video" },
    imageField: "image_url",
    durations: seedanceDurations,
    durationFormat: "plain",
    fields: { generate_audio: true, resolution: "720p" },
  },
  // vidC: Hailuo-02. 512P exists only as image-to-video; text-to-video "standard" is 768P (no
  // resolution field); 1080P is the "pro" pair, which takes no duration (6 s).
  "vidC-02-512p": {
    kind: "video",
    endpoints: { text: null, image: "fal-ai/minimax/hailuo-02/standard/image-to-video" },
    imageField: "image_url",
    durations: [6, 10],
    durationFormat: "plain",
    fields: {},
    imageFields: { resolution: "512P" },
  },
  "vidC-02-768p": {
    kind: "video",
    endpoints: { text: "fal-ai/minimax/hailuo-02/standard/text-to-video", image: "fal-ai/minimax/hailuo-02/standard/image-to-video" },
    imageField: "image_url",
    durations: [6, 10],
    durationFormat: "plain",
    fields: {},
    imageFields: { resolution: "768P" },
    falDefault: true,
  },
  "vidC-02-1080p": {
    kind: "video",
    endpoints: { text: "fal-ai/minimax/hailuo-02/pro/text-to-video", image: "fal-ai/minimax/hailuo-02/pro/image-to-video" },
    imageField: "image_url",
    durations: [6],
    durationFormat: null,
    fields: {},
  },
  // vidD: Veo 3.1 (D35: fal removed fal-ai/veo3). Fast is priced at 720p silent, vidD-3 at 1080p with audio.
  "vidD-3-fast": {
    kind: "video",
    endpoints: { text: "fal-ai/veo3.1/fast", image: "fal-ai/veo3.1/fast/image-to-video" },
    imageField: "image_url",
    durations: veoDurations,
    durationFormat: "seconds-suffix",
    fields: { resolution: "720p", generate_audio: false },
  },
  "vidD-3": {
    kind: "video",
    endpoints: { text: "fal-ai/veo3.1", image: "fal-ai/veo3.1/image-to-video" },
    imageField: "image_url",
    durations: veoDurations,
    durationFormat: "seconds-suffix",
    fields: { resolution: "1080p", generate_audio: true },
  },
  // imgA: Recraft. One image per request (no num_images in the schema): n requests.
  "imgA-v4": recraft("fal-ai/recraft/v4/text-to-image"),
  "imgA-v4-pro": recraft("fal-ai/recraft/v4/pro/text-to-image"),
  "imgA-v4-vector": recraft("fal-ai/recraft/v4/text-to-vector"),
  "imgA-v4-vector-pro": recraft("fal-ai/recraft/v4/pro/text-to-vector"),
  "imgA-v3": { ...recraft("fal-ai/recraft/v3/text-to-image", "fal-ai/recraft/v3/image-to-image"), noSizeOnImageVariant: true },
  // imgB: FLUX.
  "imgB-2-pro": {
    kind: "image",
    endpoints: { text: "fal-ai/flux-2-pro", image: "fal-ai/flux-2-pro/edit" },
    size: "width-height",
    count: "single",
    imageInput: "image_urls",
    png: true,
  },
  "imgB-edit-pro": {
    kind: "image",
    endpoints: { text: "fal-ai/flux-pro/kontext/text-to-image", image: "fal-ai/flux-pro/kontext" },
    size: "aspect-ratio",
    count: "num_images",
    imageInput: "image_url",
    png: true,
  },
  "imgB-1.1-ultra": {
    kind: "image",
    endpoints: { text: "fal-ai/flux-pro/v1.1-ultra", image: null },
    size: "aspect-ratio",
    count: "num_images",
    imageInput: "image_url",
    png: true,
  },
} satisfies Record<string, FalModel>);

/** One request to send: the endpoint and its input; `parts` > 1 when a model fans out (one image each). */
export interface FalCall {
  endpointId: string;
  variant: "text" | "image";
  input: Record<string, unknown>;
  /** How many identical requests make the job (Recraft with `n` > 1), at least 1. */
  parts: number;
}

/** The shape of an endpoint id: `owner/alias[/path...]`, plain path segments only. */
const ENDPOINT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*(\/[A-Za-z0-9_.-]+)+$/;

/**
 * Checks a `models` override map (D25): keys are fal model ids of {@link FAL_MODELS}, optionally with
 * `/image`; values endpoint ids. Returns a frozen copy.
 * @throws RangeError naming the bad key.
 */
export function checkModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    const modelId = key.endsWith("/image") ? key.slice(0, -"/image".length) : key;
    if (!Object.hasOwn(FAL_MODELS, modelId)) throw new RangeError(`models: ${JSON.stringify(key)} is not a model fal serves`);
    if (typeof value !== "string" || !ENDPOINT_ID.test(value) || value.split("/").some((s) => s === "." || s === "..")) {
      throw new RangeError(`models: the endpoint id of ${JSON.stringify(key)} must look like "owner/alias/path"`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/** Why a request cannot be mapped: not a fal model, or no endpoint for the variant asked. */
export class FalMappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FalMappingError";
  }
}

/**
 * The endpoint serving `modelId` for a request with or without an image, after `overrides`.
 * @throws FalMappingError when fal does not serve the model or it has no endpoint without an image.
 */
export function resolveEndpoint(
  modelId: string,
  hasImage: boolean,
  overrides: Readonly<Record<string, string>>,
): { endpointId: string; variant: "text" | "image"; model: FalModel } {
  const model = Object.hasOwn(FAL_MODELS, modelId) ? FAL_MODELS[modelId] : undefined;
  if (model === undefined) throw new FalMappingError(`model ${modelId} is not served by fal`);
  if (hasImage) {
    const image = overrides[`${modelId}/image`] ?? model.endpoints.image;
    if (image !== null) return { endpointId: image, variant: "image", model };
  }
  const text = overrides[modelId] ?? model.endpoints.text;
  if (text === null) throw new FalMappingError(`model ${modelId} needs an image on fal (image-to-x only)`);
  return { endpointId: text, variant: "text", model };
}

/**
 * The clip length to ask for (D26): the shortest offered length at least `requested`, else the longest.
 * `offered` must be ascending and non-empty.
 */
export function pickDuration(offered: readonly number[], requested: number): number {
  for (const d of offered) if (d >= requested) return d;
  return offered[offered.length - 1];
}

/** Maps a video request to its fal call. @throws FalMappingError (see {@link resolveEndpoint}). */
export function videoCall(req: VideoRequest, overrides: Readonly<Record<string, string>>): FalCall {
  const { endpointId, variant, model } = resolveEndpoint(req.model, req.imageUrl !== null, overrides);
  if (model.kind !== "video") throw new FalMappingError(`model ${req.model} is not a video model`);
  const fixed: Record<string, unknown> = { prompt: req.prompt };
  if (model.durationFormat !== null) {
    const seconds = pickDuration(model.durations, req.durationSec);
    fixed.duration = model.durationFormat === "seconds-suffix" ? `${seconds}s` : String(seconds);
  }
  Object.assign(fixed, model.fields);
  if (variant === "image" && req.imageUrl !== null) {
    fixed[model.imageField] = req.imageUrl;
    Object.assign(fixed, model.imageFields ?? {});
  }
  const parameters = Object.fromEntries(Object.entries(req.parameters ?? {}).filter(([key]) => !DROPPED_VIDEO_PARAMETERS.includes(key)));
  return { endpointId, variant, input: mergeParameters(parameters, fixed), parts: 1 };
}

/** Maps an image request to its fal call. @throws FalMappingError (see {@link resolveEndpoint}). */
export function imageCall(req: ImageRequest, overrides: Readonly<Record<string, string>>): FalCall {
  const { endpointId, variant, model } = resolveEndpoint(req.model, req.imageUrls.length > 0, overrides);
  if (model.kind !== "image") throw new FalMappingError(`model ${req.model} is not an image model`);
  const n = Math.max(1, Math.floor(req.n));
  const fixed: Record<string, unknown> = { prompt: req.prompt };
  if (!(variant === "image" && model.noSizeOnImageVariant === true)) {
    switch (model.size) {
      case "recraft-preset":
        fixed.image_size = RECRAFT_PRESETS[req.aspect];
        break;
      case "width-height":
        fixed.image_size = { width: onGrid(req.width), height: onGrid(req.height) };
        break;
      case "aspect-ratio":
        fixed.aspect_ratio = req.aspect;
        break;
    }
  }
  if (model.count === "num_images") fixed.num_images = n;
  if (model.png) fixed.output_format = "png";
  if (variant === "image") {
    if (model.imageInput === "image_urls") fixed.image_urls = [...req.imageUrls];
    else fixed.image_url = req.imageUrls[0];
  }
  const parts = model.count === "fan-out" ? n : 1;
  return { endpointId, variant, input: mergeParameters(req.parameters, fixed), parts };
}

/** `image_size` preset of Recraft for each aspect ratio (21:9 has none: the nearest, 16:9). */
export const RECRAFT_PRESETS: Readonly<Record<AspectRatio, string>> = Object.freeze({
  "1:1": "square_hd",
  "16:9": "landscape_16_9",
  "9:16": "portrait_16_9",
  "4:3": "landscape_4_3",
  "3:4": "portrait_4_3",
  "21:9": "landscape_16_9",
});

/** `{...parameters without the dropped keys, ...fixed}`: the gateway's fields win. */
export function mergeParameters(parameters: Readonly<Record<string, unknown>>, fixed: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parameters ?? {})) {
    if (DROPPED_PARAMETERS.includes(key) || value === undefined) continue;
    out[key] = value;
  }
  for (const [key, value] of Object.entries(fixed)) out[key] = value;
  return out;
}

/** What a successful fal output says, decoded. */
export interface DecodedOutput {
  outputs: MediaOutput[];
  /** `video.duration` when fal reports it (some endpoints' `VideoFile`), else null. */
  durationSec: number | null;
  /** width x height / 10^6 of the first image when fal reports both, else null. */
  megapixels: number | null;
  /** fal's safety checker flagged an image (`has_nsfw_concepts` contains true). */
  nsfw: boolean;
}

/**
 * Decodes an output JSON by its shape (a stored handle does not say whether the job is an image or a
 * video): `{video: {url, content_type, file_size, duration?}}` (video endpoints: fal-js types `File`,
 * `VideoFile`) or `{images: [{url, width, height, content_type}], has_nsfw_concepts?}` (image
 * endpoints: `File`, `ImageFile`, `FluxKontextOutput`). Returns a string saying what is wrong when the
 * shape fits neither. Output URLs must be `http:` or `https:` (a `data:` URI would mean `sync_mode`).
 */
export function decodeOutput(body: unknown): DecodedOutput | string {
  if (!isRecord(body)) return "the output is not a JSON object";
  if (body.video !== undefined) {
    const video = body.video;
    if (!isRecord(video)) return "the video is not an object";
    const url = httpUrlOrNull(video.url);
    if (url === null) return "the video has no http(s) url";
    const d = video.duration;
    return {
      outputs: [{ kind: "url", url, contentType: contentTypeOf(video.content_type) ?? "video/mp4" }],
      durationSec: typeof d === "number" && Number.isFinite(d) && d > 0 ? d : null,
      megapixels: null,
      nsfw: false,
    };
  }
  const images = body.images;
  if (!Array.isArray(images) || images.length === 0) return "no video and no images in the output";
  const outputs: MediaOutput[] = [];
  for (const image of images) {
    if (!isRecord(image)) return "an image is not an object";
    const url = httpUrlOrNull(image.url);
    if (url === null) return "an image has no http(s) url";
    const contentType = contentTypeOf(image.content_type);
    outputs.push(contentType === null ? { kind: "url", url } : { kind: "url", url, contentType });
  }
  const first = images[0] as Record<string, unknown>;
  const w = first.width;
  const h = first.height;
  const megapixels = typeof w === "number" && typeof h === "number" && w > 0 && h > 0 ? (w * h) / 1_000_000 : null;
  const flags = body.has_nsfw_concepts;
  const nsfw = Array.isArray(flags) && flags.some((f) => f === true);
  return { outputs, durationSec: null, megapixels, nsfw };
}

function contentTypeOf(value: unknown): string | null {
  return typeof value === "string" && value !== "" && value !== "null" ? value : null;
}

/** A side of FLUX.2's `image_size`: the nearest multiple of 16 within 64..2048. */
function onGrid(side: number): number {
  return Math.min(2048, Math.max(64, Math.round(side / 16) * 16));
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

function recraft(text: string, image: string | null = null): FalImageModel {
  return { kind: "image", endpoints: { text, image }, size: "recraft-preset", count: "fan-out", imageInput: "image_url", png: false };
}
