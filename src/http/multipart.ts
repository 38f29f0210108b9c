/**
 * Reading a multipart/form-data request (`@fastify/multipart`, registered by the route's plugin): the
 * one loop shared by voice cloning and transcription/understanding. A body the parser cannot read
 * (truncated, no closing boundary, a boundary that differs from the Content-Type's or none at all,
 * malformed part headers) is the client's fault: 400 `invalid_request` (D1), never a 500. Size and count
 * limits keep their 413 (the error handler translates them).
 */
import type { FastifyRequest } from "fastify";
import { AppError } from "../errors.ts";
import { watchRawBody } from "./body-budget.ts";

/** A read form: the one file part (bytes) if any, and the text fields by name (the last one wins). */
export interface MultipartForm {
  file: Uint8Array | null;
  fields: Record<string, string>;
  /** Names of fields whose value was not text (a part declared as JSON). */
  nonText: Set<string>;
}

/** The parser's own limit errors (413), which keep their status. */
const LIMIT_CODES = new Set(["FST_REQ_FILE_TOO_LARGE", "FST_FILES_LIMIT", "FST_PARTS_LIMIT", "FST_FIELDS_LIMIT"]);

/**
 * Reads every part of a multipart request. At most one file part, named `fileField`: another file part
 * throws `unexpectedFile(fieldname)` after draining it. The body's bytes count in the process's body
 * budget as they arrive and a body that stops arriving is abandoned (body-budget.ts `watchRawBody`): then
 * the read stops and the budget's error is thrown (503 `service_unavailable` or 408, closing the connection).
 * @throws AppError 400 `invalid_request` for a malformed body; the parser's 413 errors as they are;
 *   the AppError of `unexpectedFile`; the body budget's 503 or 408.
 */
export async function readMultipart(
  req: FastifyRequest,
  opts: { fileField: string; unexpectedFile: (fieldname: string) => AppError },
): Promise<MultipartForm> {
  const form: MultipartForm = { file: null, fields: {}, nonText: new Set() };
  await readWatched(req, readParts(req, opts, form));
  return form;
}

/** One file part of a {@link MultipartFiles} form. */
export interface MultipartFile {
  /** The part's form name (`image`, `image[]`, `input_reference`, ...). */
  field: string;
  bytes: Uint8Array;
}

/** A read form with any number of file parts, in the order sent, and the text fields (the last one wins). */
export interface MultipartFiles {
  files: MultipartFile[];
  fields: Record<string, string>;
}

/**
 * Reads every part of a multipart request that may carry several file parts (the OpenAI dialect's image
 * uploads, D37): file parts whose name `isFileField` accepts are kept, at most `maxFiles` of them; another
 * file part, or one more, throws `unexpectedFile(fieldname)` after draining it. Same body budget, limits and
 * malformed-body handling as {@link readMultipart}.
 * @throws as {@link readMultipart}.
 */
export async function readMultipartFiles(
  req: FastifyRequest,
  opts: { isFileField: (fieldname: string) => boolean; maxFiles: number; unexpectedFile: (fieldname: string) => AppError },
): Promise<MultipartFiles> {
  const form: MultipartFiles = { files: [], fields: {} };
  const loop = async () => {
    for await (const part of formParts(req)) {
      if (part.type === "file") {
        if (!opts.isFileField(part.fieldname) || form.files.length >= opts.maxFiles) {
          part.drain();
          throw opts.unexpectedFile(part.fieldname);
        }
        form.files.push({ field: part.fieldname, bytes: await part.bytes() });
      } else if (typeof part.value === "string") {
        form.fields[part.fieldname] = part.value;
      }
    }
  };
  await readWatched(req, loop());
  return form;
}

/**
 * One part of a form as the readers see it, read from the request or from the parts read ahead of the
 * route ({@link readAheadParts}).
 */
type FormPart =
  | { type: "file"; fieldname: string; drain(): void; bytes(): Promise<Uint8Array> }
  | { type: "field"; fieldname: string; value: unknown };

/** A part read ahead of the route, bytes and all. */
export interface ReadAheadPart {
  type: "file" | "field";
  fieldname: string;
  /** The file part's file name (empty for fields). */
  filename: string;
  /** The part's declared media type. */
  mimetype: string;
  /** A file part's bytes (null for fields). */
  bytes: Uint8Array | null;
  /** A field's value (a string, or what a part declared as JSON parsed to). */
  value: unknown;
}

const readAhead = new WeakMap<FastifyRequest, ReadAheadPart[]>();

/**
 * Reads every part of a multipart request before its route does (the idempotent-call gate hashes them,
 * http/idempotent-calls.ts, D37) and keeps them: the route's reader ({@link readMultipart},
 * {@link readMultipartFiles}) then reads these instead of the spent body, with its own rules. The scope's
 * parser limits, the body budget and the malformed-body answer apply as when the route reads.
 * @throws as {@link readMultipart} (the parser's 413 errors, 400 `invalid_request` for a malformed body,
 *   the body budget's 503 or 408).
 */
export async function readAheadParts(req: FastifyRequest): Promise<ReadAheadPart[]> {
  const kept = readAhead.get(req);
  if (kept !== undefined) return kept;
  const parts: ReadAheadPart[] = [];
  const loop = async () => {
    for await (const part of req.parts()) {
      if (part.type === "file") {
        parts.push({ type: "file", fieldname: part.fieldname, filename: part.filename, mimetype: part.mimetype, bytes: new Uint8Array(await part.toBuffer()), value: null });
      } else {
        parts.push({ type: "field", fieldname: part.fieldname, filename: "", mimetype: part.mimetype, bytes: null, value: part.value });
      }
    }
  };
  await readWatched(req, loop());
  readAhead.set(req, parts);
  return parts;
}

/** The parts of `req`: those read ahead of the route when there are, else as they arrive. */
async function* formParts(req: FastifyRequest): AsyncGenerator<FormPart> {
  const ahead = readAhead.get(req);
  if (ahead !== undefined) {
    for (const p of ahead) {
      const bytes = p.bytes ?? new Uint8Array(0);
      yield p.type === "file" ? { type: "file", fieldname: p.fieldname, drain: () => {}, bytes: async () => bytes } : { type: "field", fieldname: p.fieldname, value: p.value };
    }
    return;
  }
  for await (const part of req.parts()) {
    if (part.type === "file") {
      yield { type: "file", fieldname: part.fieldname, drain: () => part.file.resume(), bytes: async () => new Uint8Array(await part.toBuffer()) };
    } else {
      yield { type: "field", fieldname: part.fieldname, value: part.value };
    }
  }
}

/**
 * Runs `reading` (a loop over the request's parts, started in this tick) while the body's bytes count in
 * the process's body budget (body-budget.ts `watchRawBody`); a budget failure stops the read.
 */
async function readWatched(req: FastifyRequest, reading: Promise<void>): Promise<void> {
  // Parts read ahead of the route are in memory: no body left to watch.
  if (readAhead.has(req)) return await reading;
  // Both start in this tick: the parser pipes the request, then the watch observes it flowing.
  const watch = watchRawBody(req);
  try {
    await Promise.race([
      reading,
      watch.failure.then((err) => {
        // Stop feeding the parser; the abandoned read settles when the connection closes.
        req.raw.unpipe();
        reading.catch(() => {});
        throw err;
      }),
    ]);
  } catch (err) {
    throw malformed(err);
  } finally {
    watch.stop();
  }
}

/** The loop of {@link readMultipart}: fills `form` from the parts as they come. */
async function readParts(req: FastifyRequest, opts: { fileField: string; unexpectedFile: (fieldname: string) => AppError }, form: MultipartForm): Promise<void> {
  for await (const part of formParts(req)) {
    if (part.type === "file") {
      if (part.fieldname !== opts.fileField || form.file !== null) {
        part.drain();
        throw opts.unexpectedFile(part.fieldname);
      }
      form.file = await part.bytes();
    } else if (typeof part.value === "string") {
      form.fields[part.fieldname] = part.value;
    } else {
      form.nonText.add(part.fieldname);
    }
  }
}

/**
 * Our own errors and the parser's limits pass through; anything else the parser threw is a bad body.
 * That answer closes the connection: the parser may have stopped reading the body part-way (no boundary
 * at all: it never started), and a kept-alive socket with unread bytes would stall the client's next
 * request on it until the keep-alive timeout.
 */
function malformed(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && LIMIT_CODES.has(code)) return err;
  return new AppError(400, "invalid_request", "The multipart/form-data body could not be read (malformed or truncated).", null, {
    connection: "close",
  });
}
