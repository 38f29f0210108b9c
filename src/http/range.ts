/**
 * Serving blobs over HTTP with byte ranges (RFC 9110 sections 13 and 14): {@link parseRange} reads a
 * `Range` header, {@link sendBlob} answers 200, 206, 304 or 416 from a {@link BlobStore}.
 */
import { Readable } from "node:stream";
import type { FastifyReply } from "fastify";
import { AppError } from "../errors.ts";
import { type BlobStore, type ByteRange, isValidBlobKey } from "../storage/blob-store.ts";

/** `Cache-Control` of a blob: keys are written once, so any copy stays valid. */
export const BLOB_CACHE_CONTROL = "public, max-age=31536000, immutable";

/**
 * Reads a `Range` header against a representation of `size` bytes (RFC 9110 section 14.1.2).
 *
 * Returns the inclusive byte range to send for a single satisfiable range (`bytes=a-b`, `bytes=a-`,
 * `bytes=-n`; an end past the last byte is clamped, a suffix longer than the content means all of it),
 * `"unsatisfiable"` when the one range starts at or past `size` (or is `bytes=-0`), and null when the
 * header should be ignored and the full content sent: no header, another unit, a malformed or invalid
 * range (`bytes=9-3`, garbage), several ranges, or a suffix range on empty content. Units and list
 * elements follow RFC 9110 (unit case-insensitive, empty list elements ignored). Never throws.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | null {
  if (header === undefined) return null;
  const eq = header.indexOf("=");
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== "bytes") return null;
  const specs = header
    .slice(eq + 1)
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (specs.length !== 1) return null;
  const m = /^(\d*)-(\d*)$/.exec(specs[0]);
  if (m === null) return null;
  const [, first, last] = m;
  if (first === "") {
    if (last === "") return null; // "bytes=-"
    const suffix = Number(last);
    if (suffix === 0) return "unsatisfiable";
    if (size === 0) return null;
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== "" && Number(last) < start) return null; // invalid: ignored (RFC 9110 14.2 allows it)
  if (start >= size) return "unsatisfiable";
  return {
    start,
    end: last === "" ? size - 1 : Math.min(Number(last), size - 1),
  };
}

const ENTITY_TAG = /(W\/)?"[^"]*"/g;

/** `If-None-Match` (weak comparison, RFC 9110 13.1.2) against our quoted `etag`. */
function noneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(",") : header;
  if (value.trim() === "*") return true;
  for (const m of value.matchAll(ENTITY_TAG)) {
    if (m[0].replace(/^W\//, "") === etag) return true;
  }
  return false;
}

/**
 * `If-Range` (RFC 9110 13.1.5): true when the Range may be honoured. Only a strong entity tag equal to
 * ours counts; a date never matches because blobs are served without `Last-Modified`.
 */
function ifRangeAllows(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return true;
  const value = (Array.isArray(header) ? header[0] : header).trim();
  return value === etag;
}

/** A body for answers without one; Fastify's HEAD handling then keeps our `Content-Length`. */
function noBody(): Readable {
  return Readable.from([]);
}

/**
 * Answers a request for blob `key` of `store` on `reply` and returns `reply` (already sent).
 *
 * - 200: the whole blob with `Content-Type` (stored), `Content-Length` (bytes), `Accept-Ranges: bytes`,
 *   `Cache-Control` ({@link BLOB_CACHE_CONTROL}), `ETag` (the store's validator, quoted) and
 *   `X-Content-Type-Options: nosniff`.
 * - 206: one range (from `rangeHeader`, GET only, honouring `If-Range`) with `Content-Range:
 *   bytes a-b/size` and the range's `Content-Length`. Several ranges are answered with 200.
 * - 304: `If-None-Match` names the blob's ETag (or `*`); no body.
 * - 416: the unsatisfied-range `Content-Range` (`bytes`, a star, then `/size`) and the error body
 *   `range_not_satisfiable`.
 * - HEAD: the headers of the 200 without opening the blob (Fastify's automatic HEAD route for a GET
 *   route and an explicit HEAD route both work; a Range header is ignored on HEAD).
 *
 * `extraHeaders` (e.g. `Content-Disposition`) are set last, so they may override the defaults. A key that
 * is not a valid blob key or names no blob throws `AppError(404, "not_found")`; store errors propagate.
 */
export async function sendBlob(
  reply: FastifyReply,
  store: BlobStore,
  key: string,
  rangeHeader: string | undefined,
  extraHeaders: Record<string, string> = {},
): Promise<FastifyReply> {
  const notFound = () => new AppError(404, "not_found", "No such file.");
  if (!isValidBlobKey(key)) throw notFound();
  const info = await store.head(key);
  if (info === null) throw notFound();
  const request = reply.request;
  const etag = `"${info.etag}"`;

  reply.header("accept-ranges", "bytes").header("etag", etag);
  if (noneMatchHits(request.headers["if-none-match"], etag)) {
    return reply.code(304).header("cache-control", BLOB_CACHE_CONTROL).headers(extraHeaders).send(noBody());
  }

  const range =
    request.method === "GET" && ifRangeAllows(request.headers["if-range"], etag)
      ? parseRange(rangeHeader, info.size)
      : null;
  if (range === "unsatisfiable") {
    const err = new AppError(
      416,
      "range_not_satisfiable",
      `The requested range is not satisfiable; the file is ${info.size} bytes.`,
    );
    return reply
      .code(416)
      .header("content-range", `bytes */${info.size}`)
      .headers(extraHeaders)
      .header("content-type", "application/json; charset=utf-8")
      .send(err.toBody());
  }

  reply
    .header("content-type", info.contentType)
    .header("cache-control", BLOB_CACHE_CONTROL)
    .header("x-content-type-options", "nosniff");
  if (request.method === "HEAD") {
    return reply.code(200).header("content-length", String(info.size)).headers(extraHeaders).send(noBody());
  }

  const read = await store.get(key, range ?? undefined);
  if (read === null) throw notFound(); // deleted since head()
  const { info: current, body } = read;
  // Whatever happens to the answer (sent, aborted, failed before piping), the file gets closed.
  if (reply.raw.closed) body.destroy();
  else reply.raw.once("close", () => body.destroy());
  if (range === null) {
    reply.code(200).header("content-length", String(current.size));
  } else {
    const end = Math.min(range.end, current.size - 1);
    reply
      .code(206)
      .header("content-range", `bytes ${range.start}-${end}/${current.size}`)
      .header("content-length", String(end - range.start + 1));
  }
  return reply.headers(extraHeaders).send(body);
}
