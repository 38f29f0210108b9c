/**
 * Small generic helpers shared by the adapter folders (fal/, bfl/, elevenlabs/, minimax/,
 * openai-compatible/), keyed-http.ts and the simulator: JSON shape checks, error codes, base URLs, secret
 * redaction, bounded body reads and byte concatenation. A leaf module: it imports no local module (only
 * undici's types), so any module of upstreams/ can use it without an import cycle or a reach into a
 * sibling protocol's folder.
 */
import type { Dispatcher } from "undici";

/** The body of an undici answer (a readable stream of `Buffer` chunks). */
export type ResponseBody = Dispatcher.ResponseData["body"];

/** A plain object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The first string `code` on `err` or its causes (undici's `UND_ERR_*`, Node's `ECONNREFUSED`), or null. */
export function errorCode(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return null;
}

/**
 * Parses an upstream's base URL.
 * @throws RangeError when it is not a URL or not http(s).
 */
export function parseBaseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RangeError("baseUrl is not a valid URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new RangeError("baseUrl must be http or https");
  return url;
}

/** Replaces every occurrence of `secret` in `text` (a secret shorter than 4 characters is left alone). */
export function redactSecret(text: string, secret: string): string {
  if (secret.length < 4) return text;
  return text.split(secret).join("[redacted]");
}

/**
 * Reads a whole body as UTF-8, at most `maxBytes`. With `truncate`, a longer body is cut off silently
 * (error bodies); otherwise it throws a plain Error (the caller maps it to a malformed answer).
 */
export async function readText(body: ResponseBody, maxBytes: number, truncate = false): Promise<string> {
  return (await readBody(body, maxBytes, truncate)).toString("utf8");
}

/**
 * Reads a whole body as bytes, at most `maxBytes`: with `truncate` a longer body is cut off silently,
 * otherwise a {@link BodyTooLargeError} is thrown; either way the rest is not read (the body destroyed).
 */
export async function readBody(body: ResponseBody, maxBytes: number, truncate = false): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      body.on("error", () => {});
      body.destroy();
      if (!truncate) throw new BodyTooLargeError(maxBytes);
      chunks.push(chunk.subarray(0, chunk.byteLength - (total - maxBytes)));
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * A non-streaming answer was larger than its reader's cap (`MAX_RESPONSE_BYTES` of openai-compatible/api.ts
 * or keyed-http.ts); `name` is `"BodyTooLargeError"`.
 */
export class BodyTooLargeError extends Error {
  constructor(maxBytes: number) {
    super(`answer is larger than ${maxBytes} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** Concatenates byte arrays into one. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
