/**
 * Our imgB models on Black Forest Labs' own API: which BFL endpoint serves each (the one table,
 * {@link BFL_MODELS}) and how a validated {@link ImageRequest} becomes the endpoint's JSON input.
 *
 * Endpoint names are the "Default upstream ids" of upstreams.md; the input fields are those of BFL's API
 * reference (docs.bfl.ai "Generate or edit an image with FLUX.2 [pro]", "Edit or create an image with
 * Flux Kontext Pro", "Generate an image with FLUX 1.1 [pro] with ultra mode") and of BFL's SDK
 * black-forest-labs/blackforest (`src/bfl/_catalog.py` reference-image limits, `src/bfl/_models.py`
 * FLUX.2 fields, `src/bfl/types/inputs/flux_kontext_pro.py`, `flux_ultra.py`).
 *
 * Checked for D35 against those pages and black-forest-labs/skills `skills/bfl-api/references/endpoints.md`
 * (2026-02-03): all three ids are served (`POST /v1/flux-2-pro`, `/v1/flux-kontext-pro`, BFL now calls
 * Kontext "legacy" but serves it, `/v1/flux-pro-1.1-ultra`), and every field written below exists with
 * the values sent: FLUX.2 `width`/`height` (integers >= 64, multiples of 16, at most 4 MP together: the
 * 64..2048 grid below keeps to that), `input_image` .. `input_image_8`; Kontext and Ultra `aspect_ratio`
 * (`W:H` between 21:9 and 9:21: all six of ours), Kontext `input_image` .. `_4`; `output_format`
 * `"jpeg" | "png"` everywhere. The loopback fake (fakes/bfl.ts) validates every submit against them.
 *
 * ## Inputs
 * | model | endpoint | size | reference images |
 * |---|---|---|---|
 * | imgB-2-pro | `flux-2-pro` | `width`, `height`: the requested pixels, each side the nearest multiple of 16 within 64..2048 | `input_image`, `input_image_2` .. `input_image_8` (at most 8) |
 * | imgB-edit-pro | `flux-kontext-pro` | `aspect_ratio` (the request's; all six lie in BFL's 21:9..9:21) | `input_image` (the request's `image_url`) |
 * | imgB-1.1-ultra | `flux-pro-1.1-ultra` | `aspect_ratio` | none (BFL's `image_prompt` takes base64 only) |
 * Every input has `prompt` and `output_format: "png"` (BFL answers JPEG by default; the gateway's image
 * output is PNG). Reference images are sent as the https URLs the request carries: BFL fetches them
 * itself ("Both URL and base64 work", black-forest-labs/skills `skills/bfl-api/SKILL.md`; blackforest
 * `src/bfl/_images.py` passes an `http(s)` URL through unchanged).
 *
 * ## How many requests make a job
 * Every BFL endpoint makes one image per task (no `num_images` in any of the three schemas), so a job
 * with `n` images is `n` identical tasks ({@link BflCall.parts}); imgB-2-pro is a single-image model.
 *
 * ## Pass-through parameters (D3), decided here
 * The input is `{...parameters, ...gatewayFields}`, as fal/models.ts does it:
 * - the gateway's fields win: `prompt`, the size (`width`/`height` or `aspect_ratio`), `output_format`
 *   and the reference images;
 * - {@link OWNED_PARAMETERS} are removed from `parameters` even where the gateway sets none of them:
 *   every `input_image*` slot and `image_prompt` (references go through the gateway's URL checks and
 *   BFL charges for input megapixels), `width`/`height`/`aspect_ratio` (the size the price was held
 *   for), and `webhook_url`/`webhook_secret` (BFL would call that URL and answer without a polling URL);
 * - everything else (`seed`, `safety_tolerance`, `prompt_upsampling`, `raw`, ...) is forwarded unchanged.
 *
 * ## Overrides (D25)
 * A source's `models` map may replace an endpoint: `{"<model id>": "<endpoint>"}` for requests without
 * reference images and `{"<model id>/image": "<endpoint>"}` for requests with them (BFL serves both
 * from one endpoint, so the image key defaults to the plain key, then to the table).
 */
import type { ImageRequest } from "../types.ts";

/** How one of our models maps to a BFL endpoint. */
export interface BflImageModel {
  /** The BFL endpoint: `POST /v1/{endpoint}`. */
  endpoint: string;
  /** `width-height` (FLUX.2: pixel sizes on a 16 px grid) or `aspect-ratio` (Kontext, Ultra). */
  size: "width-height" | "aspect-ratio";
  /** How many reference images the endpoint takes in `input_image`, `input_image_2`, ...; 0 for none. */
  maxReferences: number;
}

/** Every model BFL serves for the gateway (family imgB), by model id. Frozen. */
export const BFL_MODELS: Readonly<Record<string, Readonly<BflImageModel>>> = Object.freeze({
  "imgB-2-pro": Object.freeze({ endpoint: "flux-2-pro", size: "width-height", maxReferences: 8 }),
  // Kontext takes up to 4 references (`input_image_2..4` are "experimental multiref"); the catalog
  // gives imgB-edit-pro one `image_url`.
  "imgB-edit-pro": Object.freeze({ endpoint: "flux-kontext-pro", size: "aspect-ratio", maxReferences: 4 }),
  "imgB-1.1-ultra": Object.freeze({ endpoint: "flux-pro-1.1-ultra", size: "aspect-ratio", maxReferences: 0 }),
} satisfies Record<string, BflImageModel>);

/** Keys of `parameters` never forwarded (see the module comment). */
export const OWNED_PARAMETERS: readonly string[] = Object.freeze([
  "prompt",
  "width",
  "height",
  "aspect_ratio",
  "output_format",
  "input_image",
  ...Array.from({ length: 7 }, (_, i) => `input_image_${i + 2}`),
  "image_prompt",
  "webhook_url",
  "webhook_secret",
]);

/** One job as BFL tasks: the endpoint, its input, and how many identical tasks make the job (at least 1). */
export interface BflCall {
  endpoint: string;
  input: Record<string, unknown>;
  parts: number;
}

/** Why a request cannot be mapped: not a model BFL serves, or more reference images than the endpoint takes. */
export class BflMappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BflMappingError";
  }
}

/** An endpoint name: path segments of letters, digits, `.`, `_`, `-` (e.g. `flux-2-pro`, `flux-tools/erase-v1`). */
const ENDPOINT = /^[A-Za-z0-9][A-Za-z0-9_.-]*(\/[A-Za-z0-9][A-Za-z0-9_.-]*)*$/;

/**
 * Checks a `models` override map (D25): keys are model ids of {@link BFL_MODELS}, optionally with
 * `/image`; values BFL endpoint names. Returns a frozen copy.
 * @throws RangeError naming the bad key.
 */
export function checkModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    const modelId = key.endsWith("/image") ? key.slice(0, -"/image".length) : key;
    if (!Object.hasOwn(BFL_MODELS, modelId)) throw new RangeError(`models: ${JSON.stringify(key)} is not a model BFL serves`);
    if (typeof value !== "string" || !ENDPOINT.test(value) || value.split("/").some((s) => s === "." || s === "..")) {
      throw new RangeError(`models: the endpoint of ${JSON.stringify(key)} must look like "flux-2-pro"`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/**
 * Maps an image request to its BFL call (see the module comment).
 * @throws BflMappingError when BFL does not serve the model or the request has more reference images
 *   than the endpoint takes.
 */
export function imageCall(req: ImageRequest, overrides: Readonly<Record<string, string>>): BflCall {
  const model = Object.hasOwn(BFL_MODELS, req.model) ? BFL_MODELS[req.model] : undefined;
  if (model === undefined) throw new BflMappingError(`model ${req.model} is not served by BFL`);
  const references = model.maxReferences === 0 ? [] : req.imageUrls;
  if (references.length > model.maxReferences) {
    throw new BflMappingError(`${model.endpoint} takes at most ${model.maxReferences} reference images, the request has ${references.length}`);
  }
  const plain = overrides[req.model] ?? model.endpoint;
  const endpoint = references.length > 0 ? (overrides[`${req.model}/image`] ?? plain) : plain;
  const fixed: Record<string, unknown> = { prompt: req.prompt };
  if (model.size === "width-height") {
    fixed.width = onGrid(req.width);
    fixed.height = onGrid(req.height);
  } else {
    fixed.aspect_ratio = req.aspect;
  }
  fixed.output_format = "png";
  references.forEach((url, i) => {
    fixed[i === 0 ? "input_image" : `input_image_${i + 1}`] = url;
  });
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(req.parameters ?? {})) {
    if (!OWNED_PARAMETERS.includes(key) && value !== undefined) input[key] = value;
  }
  Object.assign(input, fixed);
  return { endpoint, input, parts: Math.max(1, Math.floor(req.n)) };
}

/** A side of FLUX.2's `width`/`height`: the nearest multiple of 16 within 64..2048 (at most 4 MP). */
function onGrid(side: number): number {
  return Math.min(2048, Math.max(64, Math.round(side / 16) * 16));
}
