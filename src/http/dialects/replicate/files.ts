/**
 * `POST /replicate/v1/files` (D47): what the `replicate` client's `files.create` sends (its default file
 * handling uploads every `Blob` or `Buffer` of a prediction's input this way, then passes `urls.get`):
 * a multipart form with the file as `content` and a JSON `metadata` part (both file parts). The file is
 * kept as the OpenAI dialect keeps its uploads (openai/uploads.ts: a PNG, JPEG or WebP of at most 10 MB,
 * content-addressed per account, served at `<PUBLIC_BASE_URL>/v1/files/uploads/<hash>.<ext>`), which a
 * prediction's input then names as a file on the gateway's own host. The answer is Replicate's file object.
 */
import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { AppError, errors } from "../../../errors.ts";
import { readMultipartFiles } from "../../multipart.ts";
import { imageKindOf, MAX_IMAGE_UPLOAD_BYTES, storeImageUpload, type UploadDeps } from "../openai/uploads.ts";

/** A stored upload: its URL on the gateway and what Replicate's file object says of it. */
export interface StoredFile {
  url: string;
  contentType: string;
  size: number;
  sha256: string;
  metadata: Record<string, unknown>;
  createdAt: string;
}

/** The metadata part: a JSON object, else an empty one. */
function metadataOf(bytes: Uint8Array | undefined): Record<string, unknown> {
  if (bytes === undefined || bytes.byteLength === 0) return {};
  try {
    const v: unknown = JSON.parse(Buffer.from(bytes).toString("utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    throw errors.invalidRequest("metadata must be a JSON object.", "metadata");
  }
}

/**
 * Reads and stores the file of a `files.create` form for `accountId`.
 * @throws AppError 400 `invalid_request` (no `content` part, another part, a file that is not a PNG, JPEG or
 *   WebP, metadata that is not JSON), 413 (over 10 MB).
 */
export async function storeFile(req: FastifyRequest, deps: UploadDeps, accountId: string): Promise<StoredFile> {
  if (!req.isMultipart()) throw errors.invalidRequest("Send the file as multipart/form-data with the file in the 'content' part.", "content");
  let form;
  try {
    form = await readMultipartFiles(req, {
      isFileField: (name) => name === "content" || name === "metadata",
      maxFiles: 2,
      unexpectedFile: (name) => errors.invalidRequest(`Unexpected file part '${name.slice(0, 60)}': the form takes 'content' and 'metadata'.`, name.slice(0, 60)),
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === "FST_REQ_FILE_TOO_LARGE") {
      throw new AppError(413, "invalid_request", `The file is over ${MAX_IMAGE_UPLOAD_BYTES / (1024 * 1024)} MB.`, "content");
    }
    throw err;
  }
  const content = form.files.find((f) => f.field === "content");
  if (content === undefined) throw errors.invalidRequest("The form has no 'content' file part.", "content");
  const metadata = metadataOf(form.files.find((f) => f.field === "metadata")?.bytes ?? (form.fields.metadata === undefined ? undefined : Buffer.from(form.fields.metadata)));
  const url = await storeImageUpload(deps, accountId, content.bytes, "content");
  return {
    url,
    contentType: imageKindOf(content.bytes)?.contentType ?? "application/octet-stream",
    size: content.bytes.byteLength,
    sha256: createHash("sha256").update(content.bytes).digest("hex"),
    metadata,
    createdAt: new Date().toISOString(),
  };
}

/** Replicate's file object of a stored file; its id is the upload's name on the gateway. */
export function fileAnswer(f: StoredFile): Record<string, unknown> {
  return {
    id: f.url.slice(f.url.lastIndexOf("/") + 1),
    content_type: f.contentType,
    size: f.size,
    checksums: { sha256: f.sha256 },
    metadata: f.metadata,
    created_at: f.createdAt,
    expires_at: null,
    urls: { get: f.url },
  };
}
