/**
 * Blob storage for generated outputs (docs/architecture.md "storage/": blobs on disk by default, S3 at scale): the
 * {@link BlobStore} interface, its types and the key rules every store checks. The stores are
 * disk-blobs.ts and s3-blobs.ts; blobs.ts opens the one `STORAGE_URL` names. This module imports no
 * other local module.
 *
 * A blob is an immutable byte string under a key such as `audio/job_abc.mp3`, with a content type and a
 * content hash. Keys are meant to be written once: outputs are served with
 * `Cache-Control: immutable`, so replacing a key's bytes would leave stale copies in caches. `put` on an
 * existing key does replace it (a retried rehost writes the same bytes again).
 *
 * Keys: 1 to {@link MAX_KEY_LENGTH} characters of `[A-Za-z0-9._/-]`, `/`-separated segments that are
 * non-empty and do not start with `.` (so no `.`, `..` or hidden names), and not ending in `.meta.json`
 * (reserved for the disk store's sidecars). See {@link isValidBlobKey}.
 */
import type { Readable } from "node:stream";

/** What a store knows about a blob. */
export interface BlobInfo {
  /** The blob's key, as given to `put`. */
  key: string;
  /** Length of the content, bytes. */
  size: number;
  /** Media type given to `put`, e.g. `audio/mpeg`. */
  contentType: string;
  /**
   * Opaque validator that changes whenever the bytes change, without quotes (the HTTP layer quotes it
   * for `ETag`). The disk store uses the lowercase hex SHA-256 of the content.
   */
  etag: string;
}

/** An inclusive byte range: `start` and `end` are 0-based offsets, `0 <= start <= end`. */
export interface ByteRange {
  start: number;
  end: number;
}

/** A blob opened for reading. The caller must consume or `destroy()` `body`, which holds an open file. */
export interface BlobRead {
  info: BlobInfo;
  /** The requested bytes (the whole blob, or the range clamped to the blob's end). */
  body: Readable;
}

/** Where generated outputs live. Implementations: `DiskBlobStore` (disk-blobs.ts) and `S3BlobStore` (s3-blobs.ts). */
export interface BlobStore {
  /**
   * Stores `body` under `key` atomically: until the promise resolves, readers see the previous blob or
   * none, never a partial one. Returns the stored blob's info. Throws {@link InvalidBlobKeyError} for a
   * bad key, TypeError for a bad content type or a chunk that is not a Uint8Array, and rethrows an error
   * of the body iterable (nothing is stored then) or of the file system.
   */
  put(
    key: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    meta: { contentType: string },
  ): Promise<BlobInfo>;
  /** The blob's info, or null when there is none. Throws {@link InvalidBlobKeyError} for a bad key. */
  head(key: string): Promise<BlobInfo | null>;
  /**
   * Opens the blob for reading, or null when there is none. `range` (inclusive offsets) selects part of
   * it; an `end` past the blob's last byte is clamped. Throws {@link InvalidBlobKeyError} for a bad key
   * and RangeError when `range` is malformed or `start` is at or past the blob's size.
   */
  get(key: string, range?: ByteRange): Promise<BlobRead | null>;
  /** Removes the blob; a missing blob is not an error. Throws {@link InvalidBlobKeyError} for a bad key. */
  delete(key: string): Promise<void>;
  /**
   * Removes every blob of `keys` (the retention sweep's pages, D46): missing blobs are not an error. Resolves
   * once all are gone; throws {@link InvalidBlobKeyError} for a bad key (nothing removed) or the store's
   * error when any could not be removed (some may be gone: calling again with the same keys is safe).
   */
  deleteMany(keys: readonly string[]): Promise<void>;
  /** Readiness check: resolves when the store can be read and written, throws otherwise. */
  ping(): Promise<void>;
}

/** Longest accepted key, characters. */
export const MAX_KEY_LENGTH = 512;

const KEY_CHARS = /^[A-Za-z0-9._/-]+$/;
/** The ending of the disk store's sidecar files, which no key may have. */
export const META_SUFFIX = ".meta.json";

/** A key that breaks the rules of this module's header. */
export class InvalidBlobKeyError extends Error {
  constructor(key: string) {
    super(`Invalid blob key '${key.length > 80 ? `${key.slice(0, 80)}...` : key}'.`);
    this.name = "InvalidBlobKeyError";
  }
}

/** True when `key` is a valid blob key (rules in this module's header). Never throws. */
export function isValidBlobKey(key: string): boolean {
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_KEY_LENGTH) return false;
  if (!KEY_CHARS.test(key) || key.endsWith(META_SUFFIX)) return false;
  for (const segment of key.split("/")) {
    if (segment === "" || segment.startsWith(".")) return false;
  }
  return true;
}

/** Throws {@link InvalidBlobKeyError} unless `key` is valid. */
export function assertBlobKey(key: string): void {
  if (!isValidBlobKey(key)) throw new InvalidBlobKeyError(key);
}

/**
 * Throws TypeError unless `contentType` can be stored and served: visible ASCII and spaces, not starting
 * with a space, containing a `/` (e.g. `audio/mpeg`).
 */
export function assertContentType(contentType: string): void {
  // Visible ASCII and spaces only: it becomes a response header.
  if (
    typeof contentType !== "string" ||
    !/^[\x21-\x7e][\x20-\x7e]*$/.test(contentType) ||
    !contentType.includes("/")
  ) {
    throw new TypeError(`Invalid content type '${String(contentType)}'.`);
  }
}
