/**
 * Reading the OpenAI dialect's create requests (D37): the `openai` SDK sends `videos.create` and
 * `images.edit` as multipart (text fields, nested objects as `name[key]`, arrays as `name[]`, files as file
 * parts) and `images.generate` as JSON; `POST /v1/videos` takes JSON too. Both become one {@link CreateForm},
 * and the field readers here apply the rules the native JSON schemas apply to the native bodies (prompt,
 * integers), with the native error codes.
 */
import type { FastifyRequest } from "fastify";
import { AppError, errors } from "../../../errors.ts";
import { type MultipartFile, type MultipartFiles, readMultipartFiles } from "../../multipart.ts";
import { requireServedModel } from "./models.ts";
import { MAX_IMAGE_UPLOAD_BYTES } from "./uploads.ts";

/** A create request's fields (JSON values, or the strings of a form) and its uploaded files. */
export interface CreateForm {
  fields: Record<string, unknown>;
  files: MultipartFile[];
}

/** Most files one create takes (`image[]` of `images.edit`: 10, the native `image_urls` limit). */
export const MAX_FILES = 10;

/**
 * The fields and files of a create: a multipart form (files accepted only under `fileFields`), or a JSON
 * object (no files).
 * @throws AppError 400 `invalid_request` (a file part under another name, more than {@link MAX_FILES}, a
 *   malformed form, a JSON body that is not an object), 404 `model_not_found` (a form's `model` the dialect
 *   does not serve, D48), 413 `invalid_request` (a file over 10 MB).
 */
export async function readCreateForm(req: FastifyRequest, fileFields: readonly string[]): Promise<CreateForm> {
  if (!req.isMultipart()) {
    const body = req.body;
    if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) throw errors.invalidRequest("The body must be a JSON object or a multipart form.");
    return { fields: { ...(body as Record<string, unknown>) }, files: [] };
  }
  let form: MultipartFiles;
  try {
    form = await readMultipartFiles(req, {
      isFileField: (name) => fileFields.includes(name),
      maxFiles: MAX_FILES,
      unexpectedFile: (name) =>
        errors.invalidRequest(fileFields.includes(name) ? `At most ${MAX_FILES} files.` : `Unexpected file part '${name.slice(0, 60)}': send files as ${fileFields.map((f) => `'${f}'`).join(" or ")}.`, name.slice(0, 60)),
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === "FST_REQ_FILE_TOO_LARGE") {
      throw new AppError(413, "invalid_request", `An uploaded image is over ${MAX_IMAGE_UPLOAD_BYTES / (1024 * 1024)} MB.`, fileFields[0] ?? null);
    }
    throw err;
  }
  // A JSON body's `model` is checked before the route (models.ts `guardModels`); a form's here, before any
  // upload is stored.
  requireServedModel(form.fields.model);
  return { fields: form.fields, files: form.files };
}

/**
 * The prompt (required, 1 to 4000 characters, not blank: as the native schemas, `invalid_prompt`).
 * @throws AppError 400 `invalid_prompt`.
 */
export function promptField(fields: Record<string, unknown>): string {
  const p = fields.prompt;
  if (typeof p !== "string" || !/\S/.test(p) || [...p].length > 4000) throw new AppError(400, "invalid_prompt", "prompt must be text of 1 to 4000 characters.", "prompt");
  return p;
}

/** An optional string field (a form's text, or a JSON string), or undefined. @throws AppError 400 `invalid_request` for another type. */
export function stringField(fields: Record<string, unknown>, name: string, maxLength = 4000): string | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || v.length > maxLength) throw errors.invalidRequest(`${name} must be a string of at most ${maxLength} characters.`, name);
  return v;
}

/**
 * An optional whole number given as a number or a string of digits (forms send text), or undefined.
 * @throws AppError 400 `code` (default `invalid_request`) for anything else.
 */
export function intField(fields: Record<string, unknown>, name: string, code = "invalid_request"): number | undefined {
  const v = fields[name];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "number" && Number.isInteger(v)) return v;
  if (typeof v === "string" && /^\s*\d{1,6}\s*$/.test(v)) return Number(v);
  throw new AppError(400, code, `${name} must be a whole number.`, name);
}
