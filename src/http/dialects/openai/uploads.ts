/**
 * Reference images uploaded through the OpenAI dialect (D37: `input_reference` of `POST /v1/videos`, `image`
 * of `POST /openai/v1/images/edits`): checked, stored in the gateway's blob store and handed to the job as
 * a URL on the gateway's own host (`<PUBLIC_BASE_URL>/v1/files/uploads/<hash>.<ext>`), which the upstream
 * downloads. Nothing an upload contains reaches another host: the bytes stay on the gateway, and only a
 * PNG, JPEG or WebP of at most {@link MAX_IMAGE_UPLOAD_BYTES} (its type read from its first bytes, never
 * from the client's Content-Type or file name) is stored.
 *
 * Keys are content-addressed per account (SHA-256 of the account id and the bytes): the same upload of the
 * same account always gets the same URL, so a create retried with its `Idempotency-Key` hashes the same
 * request and replays its job (D2 `idempotency_conflict` compares request hashes), and the URL cannot be
 * guessed by anyone who does not hold the image and the account id.
 */
import { createHash } from "node:crypto";
import { AppError, errors } from "../../../errors.ts";
import { blobUrl } from "../../../jobs/outputs.ts";
import type { OwnReferenceUrl } from "../../../jobs/validate.ts";
import type { BlobStore } from "../../../storage/blob-store.ts";
import { mediaTypeOf } from "../../../upstreams/media-probe.ts";

/** Largest reference image accepted, bytes (10 MB, D37). */
export const MAX_IMAGE_UPLOAD_BYTES = 10 * 1024 * 1024;

/** The blob key prefix of uploads. */
const UPLOAD_PREFIX = "uploads/";

/** An image type the dialect takes, by its leading bytes. */
interface ImageKind {
  contentType: "image/png" | "image/jpeg" | "image/webp";
  ext: "png" | "jpg" | "webp";
}

/** PNG, JPEG and WebP: the types the dialect takes, with the extension each is stored under. */
const KINDS: Readonly<Record<string, ImageKind>> = Object.freeze({
  "image/png": { contentType: "image/png", ext: "png" },
  "image/jpeg": { contentType: "image/jpeg", ext: "jpg" },
  "image/webp": { contentType: "image/webp", ext: "webp" },
});

/** The image type of `bytes` by its magic bytes (media-probe.ts), or null when it is none of PNG, JPEG, WebP. */
export function imageKindOf(bytes: Uint8Array): ImageKind | null {
  const type = mediaTypeOf(bytes);
  return type !== null && Object.hasOwn(KINDS, type) ? KINDS[type] : null;
}

/**
 * Checks an uploaded reference image.
 * @throws AppError 413 `invalid_request` over {@link MAX_IMAGE_UPLOAD_BYTES}; 400 `invalid_request` when it
 *   is empty or not a PNG, JPEG or WebP (`param` names the form field).
 */
export function checkImageUpload(bytes: Uint8Array, param: string): ImageKind {
  if (bytes.byteLength > MAX_IMAGE_UPLOAD_BYTES) {
    throw new AppError(413, "invalid_request", `${param}: the image is ${bytes.byteLength} bytes; at most ${MAX_IMAGE_UPLOAD_BYTES} (10 MB) are accepted.`, param);
  }
  const kind = imageKindOf(bytes);
  if (bytes.byteLength === 0 || kind === null) throw errors.invalidRequest(`${param} must be a PNG, JPEG or WebP image.`, param);
  return kind;
}

/**
 * The bytes of a `data:` URL (`data:image/png;base64,...`; D37 `input_reference[image_url]` may be one), or
 * null when `value` is not a data URL. Only base64 data URLs are read.
 * @throws AppError 400 `invalid_request` for a data URL that is not base64 or decodes to nothing.
 */
export function dataUrlBytes(value: string, param: string): Uint8Array | null {
  if (!/^data:/i.test(value)) return null;
  const m = /^data:[^,;]*(?:;[^,;]+)*;base64,([A-Za-z0-9+/=\s]*)$/i.exec(value);
  const bytes = m ? Buffer.from(m[1], "base64") : null;
  if (bytes === null || bytes.byteLength === 0) throw errors.invalidRequest(`${param}: a data URL must be base64 image data (data:image/png;base64,...).`, param);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** What storing an upload needs: the blob store and the gateway's public address. */
export interface UploadDeps {
  blobs: BlobStore;
  publicBaseUrl: string;
}

/**
 * Checks and stores one reference image of `accountId` and returns its URL on the gateway's own host.
 * Storing the same bytes again for the same account writes nothing new (the key is their hash).
 * @throws AppError as {@link checkImageUpload}.
 */
export async function storeImageUpload(deps: UploadDeps, accountId: string, bytes: Uint8Array, param: string): Promise<string> {
  const kind = checkImageUpload(bytes, param);
  const hash = createHash("sha256").update(accountId).update("\0").update(bytes).digest("hex");
  const key = `${UPLOAD_PREFIX}${hash}.${kind.ext}`;
  if ((await deps.blobs.head(key)) === null) await deps.blobs.put(key, bytes, { contentType: kind.contentType });
  return blobUrl(deps.publicBaseUrl, key);
}

/** The predicate naming the URLs of stored uploads on this gateway (validate.ts {@link OwnReferenceUrl}). */
export function ownUploadUrl(publicBaseUrl: string): OwnReferenceUrl {
  const prefix = blobUrl(publicBaseUrl, UPLOAD_PREFIX);
  return (url) => url.startsWith(prefix) && /^[0-9a-f]{64}\.(png|jpg|webp)$/.test(url.slice(prefix.length));
}
