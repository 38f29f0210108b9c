/**
 * Validation and quoting of image and video job requests, read from the catalog (spec "POST
 * /v1/images/generations", "POST /v1/videos/generations"; D2, D14, D19, D24). Produces the normalized
 * request the runner hands to the adapter, and the hold in micro-USD.
 */
import type { ImageJobRequest, MediaJobRequest, VideoJobRequest } from "../contracts/jobs.ts";
import type { Micros } from "../money.ts";
import { getModelOf } from "../catalog/models.ts";
import { jobPrice } from "../catalog/job-price.ts";
import type { ImageQuality } from "../catalog/quote.ts";
import type { ImageModel, VideoModel } from "../catalog/types.ts";
import { AppError, errors } from "../errors.ts";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { classifyAddress, validateUrlSyntax } from "../upstreams/safe-fetch.ts";
import type { AspectRatio } from "../upstreams/types.ts";

const bad = (code: string, message: string, param: string) => new AppError(400, code, message, param);

/** Longest idempotency key (spec Limits; enforced by the route schema). */
export const IDEMPOTENCY_KEY_MAX = 128;

/** Standard output size of each aspect ratio, about one megapixel (D19). */
export const ASPECT_SIZES: Record<AspectRatio, [number, number]> = {
  "1:1": [1024, 1024],
  "16:9": [1344, 768],
  "9:16": [768, 1344],
  "4:3": [1152, 896],
  "3:4": [896, 1152],
  "21:9": [1536, 640],
};
const ASPECTS = Object.keys(ASPECT_SIZES) as AspectRatio[];

/** The aspect ratio (of the six) nearest to `w / h`. */
export function nearestAspect(w: number, h: number): AspectRatio {
  const r = Math.log(w / h);
  let best: AspectRatio = "1:1";
  let bestD = Number.POSITIVE_INFINITY;
  for (const a of ASPECTS) {
    const [aw, ah] = ASPECT_SIZES[a];
    const d = Math.abs(Math.log(aw / ah) - r);
    if (d < bestD) {
      best = a;
      bestD = d;
    }
  }
  return best;
}

/**
 * Maps `size` to an aspect ratio and pixel size: `auto`/absent -> 1:1 at 1024x1024; `WIDTHxHEIGHT`
 * (each 64..2048) -> that size and its nearest aspect; an aspect string of the six -> its standard
 * size; anything else -> the model default (spec: unrecognized values use the model default).
 */
export function parseSize(size: unknown): { aspect: AspectRatio; width: number; height: number } {
  const fallback = { aspect: "1:1" as AspectRatio, width: 1024, height: 1024 };
  if (typeof size !== "string") return fallback;
  const s = size.trim().toLowerCase();
  const wh = /^(\d{1,5})\s*[x×*]\s*(\d{1,5})$/.exec(s);
  if (wh) {
    const w = Number(wh[1]);
    const h = Number(wh[2]);
    if (w >= 64 && w <= 2048 && h >= 64 && h <= 2048) return { aspect: nearestAspect(w, h), width: w, height: h };
    return fallback;
  }
  if ((ASPECTS as string[]).includes(s)) {
    const [width, height] = ASPECT_SIZES[s as AspectRatio];
    return { aspect: s as AspectRatio, width, height };
  }
  return fallback;
}

// The route schemas (src/http/schemas/jobs.ts) check the shapes: prompt (1 to 4000 characters, not
// blank: `invalid_prompt`), `n` and `duration` ranges, `quality`, `idempotency_key` (1 to 128),
// `parameters` (an object), URL syntax and the model lists. What needs the model stays here.

/**
 * A predicate naming the reference URLs the gateway itself serves (the OpenAI dialect's uploads, D37): they
 * are accepted as they are (the gateway checked their bytes when they were uploaded) and their host is not
 * resolved. Only a dialect that stored the upload passes one; native requests have none.
 */
export type OwnReferenceUrl = (url: string) => boolean;

function checkImageUrl(v: unknown, param: string, own?: OwnReferenceUrl): string {
  if (typeof v === "string" && own?.(v) === true) return v;
  if (typeof v === "string" && validateUrlSyntax(v, {}) === null) {
    // An https URL refused for its host is an address rule, not a syntax error: say which.
    const literal = ipLiteralOf(v);
    if (literal !== null) throw bad("invalid_image_url", `${param} points at a non-public address (${literal}).`, param);
  }
  if (typeof v !== "string" || validateUrlSyntax(v, {}) === null) {
    throw bad("invalid_image_url", `${param} must be an https:// URL.`, param);
  }
  return v;
}

/** The IP address of an https URL whose host is an IP literal (in WHATWG-normalized form), else null. */
function ipLiteralOf(v: string): string | null {
  try {
    const u = new URL(v);
    if (u.protocol !== "https:") return null;
    const host = u.hostname.replace(/^\[|\]$/g, "");
    return isIP(host) === 0 ? null : host;
  } catch {
    return null;
  }
}

/** A validated image job. Amounts in micro-USD. */
export interface ImageJobSpec {
  kind: "image";
  model: ImageModel;
  prompt: string;
  n: number;
  aspect: AspectRatio;
  width: number;
  height: number;
  quality: ImageQuality | null;
  imageUrls: string[];
  parameters: Record<string, unknown>;
  idempotencyKey: string | null;
  /** The quote the submit holds: `jobPrice` of the catalog (catalog/job-price.ts), which settlement uses too. */
  holdMicros: Micros;
  /** Where the job's webhook events also go (D31), or null; checked by `checkWebhookUrl` before submit. */
  webhookUrl: string | null;
}

/** A validated video job. Amounts in micro-USD. */
export interface VideoJobSpec {
  kind: "video";
  model: VideoModel;
  prompt: string;
  durationSec: number;
  imageUrl: string | null;
  parameters: Record<string, unknown>;
  idempotencyKey: string | null;
  /** See {@link ImageJobSpec.holdMicros}. */
  holdMicros: Micros;
  /** See {@link ImageJobSpec.webhookUrl}. */
  webhookUrl: string | null;
}

export type JobSpec = ImageJobSpec | VideoJobSpec;

/**
 * Validates an image request body.
 * @throws AppError 400 `invalid_model`, `invalid_prompt`, `image_url_required`, `too_many_references`,
 *   `invalid_image_url`, `invalid_request` (n, quality, parameters, idempotency key).
 */
export function validateImageJob(body: ImageJobRequest, opts: { ownUrl?: OwnReferenceUrl } = {}): ImageJobSpec {
  const own = opts.ownUrl;
  const modelId = body.model;
  if (typeof modelId !== "string" || modelId === "") throw bad("invalid_model", "model is required.", "model");
  const model = getModelOf(modelId, "image");
  if (!model) throw bad("invalid_model", `'${modelId}' is not a supported image model.`, "model");
  const prompt = body.prompt.normalize("NFC");

  let n = 1;
  if (body.n !== undefined && body.n !== null) {
    if (typeof body.n !== "number" || !Number.isInteger(body.n) || body.n < 1 || body.n > model.maxN) {
      throw errors.invalidRequest(`n must be an integer from 1 to ${model.maxN}.`, "n");
    }
    n = body.n;
  }
  if (model.singleImage) n = 1;

  const { aspect, width, height } = parseSize(body.size);

  let quality = (body.quality ?? null) as ImageQuality | null;
  if (model.pricing.mode === "per-quality") quality ??= model.pricing.defaultQuality;
  else quality = null;

  let imageUrls: string[] = [];
  if (Array.isArray(body.image_urls)) {
    if (body.image_urls.length > model.maxImageUrls) {
      throw bad("too_many_references", `image_urls has ${body.image_urls.length} entries; the maximum is ${model.maxImageUrls}.`, "image_urls");
    }
    imageUrls = body.image_urls.map((u, i) => checkImageUrl(u, `image_urls[${i}]`, own));
  }
  if (imageUrls.length === 0 && body.image_url !== undefined && body.image_url !== null) {
    imageUrls = [checkImageUrl(body.image_url, "image_url", own)];
  } else if (body.image_url !== undefined && body.image_url !== null) {
    checkImageUrl(body.image_url, "image_url", own);
  }
  if (model.imageRequired && imageUrls.length === 0) {
    throw bad("image_url_required", `${model.id} needs image_url or image_urls.`, "image_url");
  }
  if (!model.acceptsImageUrls) imageUrls = imageUrls.slice(0, 1);
  if (!model.acceptsImageUrl && !model.acceptsImageUrls) imageUrls = [];

  const idempotencyKey = (body.idempotency_key ?? null) as string | null;
  const parameters = (body.parameters ?? {}) as Record<string, unknown>;
  const holdMicros = jobPrice({ kind: "image", model, order: { n, quality, width, height } });
  return { kind: "image", model, prompt, n, aspect, width, height, quality, imageUrls, parameters, idempotencyKey, holdMicros, webhookUrl: webhookUrlOf(body) };
}

/**
 * Validates a video request body. `genmediaOnly`: the `POST /v1/genmedia/jobs` alias accepts only
 * `vidD-*` models (D19).
 * @throws AppError 400 `invalid_model`, `invalid_prompt`, `invalid_duration`, `image_url_required`,
 *   `invalid_image_url`, `invalid_request`.
 */
export function validateVideoJob(body: VideoJobRequest, opts: { genmediaOnly: boolean; ownUrl?: OwnReferenceUrl }): VideoJobSpec {
  const modelId = body.model;
  if (typeof modelId !== "string" || modelId === "") throw bad("invalid_model", "model is required.", "model");
  const model = getModelOf(modelId, "video");
  if (!model || (opts.genmediaOnly && !model.genmediaAlias)) {
    throw bad("invalid_model", `'${modelId}' is not a supported video model${opts.genmediaOnly ? " on this endpoint (vidD-* only)" : ""}.`, "model");
  }
  const prompt = body.prompt.normalize("NFC");
  let durationSec = model.defaultDurationSec;
  if (body.duration !== undefined && body.duration !== null) {
    const d = body.duration;
    const allowed = model.allowedDurations;
    const ok =
      typeof d === "number" &&
      Number.isInteger(d) &&
      d >= 1 &&
      d <= 10 &&
      (allowed === null ? d >= model.minDurationSec && d <= model.maxDurationSec : allowed.includes(d));
    if (!ok) {
      const rule = allowed === null ? `a whole number of seconds from 1 to 10` : `${allowed.join(" or ")} seconds`;
      throw bad("invalid_duration", `duration for ${model.id} must be ${rule}.`, "duration");
    }
    durationSec = d as number;
  }
  const imageUrl = body.image_url === undefined || body.image_url === null ? null : checkImageUrl(body.image_url, "image_url", opts.ownUrl);
  if (model.imageRequired && imageUrl === null) {
    throw bad("image_url_required", `${model.id} is image-to-video only: image_url is required.`, "image_url");
  }
  const idempotencyKey = (body.idempotency_key ?? null) as string | null;
  const parameters = (body.parameters ?? {}) as Record<string, unknown>;
  return { kind: "video", model, prompt, durationSec, imageUrl, parameters, idempotencyKey, holdMicros: jobPrice({ kind: "video", model, order: { durationSec } }), webhookUrl: webhookUrlOf(body) };
}

/**
 * The body's `webhook_url` (D31), or null when absent. Its address rule needs DNS and the configuration:
 * `checkWebhookUrl` (webhooks/urls.ts) applies it before the job is submitted.
 * @throws AppError 400 `invalid_webhook_url` when it is present but not a string.
 */
function webhookUrlOf(body: MediaJobRequest): string | null {
  const v = body.webhook_url;
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw bad("invalid_webhook_url", "webhook_url must be an https:// URL.", "webhook_url");
  return v;
}

/** How long a submit waits for a reference URL's host to resolve, ms. */
const RESOLVE_TIMEOUT_MS = 2000;

/** Resolves a host name to its addresses (`dns.lookup` with `all: true` in production). */
export type HostResolver = (host: string) => Promise<string[]>;

/** The system resolver (the one the later download uses too). */
export const systemResolver: HostResolver = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

/**
 * Checks every reference URL of `spec` before the job exists (issue "Hardening" 3: fail closed). Each
 * host must resolve, within {@link RESOLVE_TIMEOUT_MS}, to public unicast addresses only; a host that
 * does not resolve, resolves to nothing, or to any private, loopback, link-local or other non-public
 * address is refused. (The download re-checks every address it connects to, so a name that changes to
 * an internal address later is refused then too: safe-fetch.ts.)
 * URLs `own` names (the gateway's own uploads, D37) are not resolved.
 * @throws AppError 400 `invalid_image_url` with `param` `image_url` or `image_urls[i]`.
 */
export async function checkReferenceHosts(spec: JobSpec, resolve: HostResolver = systemResolver, own?: OwnReferenceUrl): Promise<void> {
  const urls = spec.kind === "image" ? spec.imageUrls : spec.imageUrl === null ? [] : [spec.imageUrl];
  await Promise.all(
    urls.map(async (u, i) => {
      if (own?.(u) === true) return;
      const param = spec.kind === "image" && urls.length > 1 ? `image_urls[${i}]` : "image_url";
      // `localhost.` is `localhost`: a trailing dot names the same host.
      const host = new URL(u).hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
      let addresses: string[];
      try {
        addresses = await Promise.race([
          resolve(host),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), RESOLVE_TIMEOUT_MS).unref()),
        ]);
      } catch {
        throw bad("invalid_image_url", `${param}: the host ${host.slice(0, 100)} could not be resolved.`, param);
      }
      if (addresses.length === 0) throw bad("invalid_image_url", `${param}: the host ${host.slice(0, 100)} has no address.`, param);
      const refused = addresses.find((a) => classifyAddress(a) !== "unicast");
      if (refused) throw bad("invalid_image_url", `${param} points at a non-public address (${refused}).`, param);
    }),
  );
}
