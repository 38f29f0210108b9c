/**
 * Blob storage for generated outputs (design.md "storage/": blobs on disk by default, S3 at scale).
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
import { createHash, randomUUID } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { access, type FileHandle, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parseS3Url, S3BlobStore, type S3Options } from "./s3-blobs.ts";

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

/** Where generated outputs live. Implementations: {@link DiskBlobStore} and {@link S3BlobStore} (s3-blobs.ts). */
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
  /** Readiness check: resolves when the store can be read and written, throws otherwise. */
  ping(): Promise<void>;
}

/** Longest accepted key, characters. */
export const MAX_KEY_LENGTH = 512;

const KEY_CHARS = /^[A-Za-z0-9._/-]+$/;
const META_SUFFIX = ".meta.json";
const TMP_DIR = ".tmp";
/** Folders a {@link DiskBlobStore} remembers as existing (then it forgets them all and asks again). */
const MAX_KNOWN_FOLDERS = 10_000;

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

function isNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** The sidecar's JSON. */
interface SidecarMeta {
  contentType: string;
  size: number;
  sha256: string;
}

function parseSidecar(text: string): SidecarMeta {
  const v = JSON.parse(text) as Partial<SidecarMeta>;
  if (typeof v.contentType !== "string" || typeof v.size !== "number" || typeof v.sha256 !== "string") {
    throw new Error("Malformed blob sidecar.");
  }
  return { contentType: v.contentType, size: v.size, sha256: v.sha256 };
}

/** Writes `text` to a new file and fsyncs it. */
async function writeSynced(path: string, text: string): Promise<void> {
  const fh = await open(path, "wx");
  try {
    await fh.writeFile(text, "utf8");
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/** How often a read retries when the sidecar and the file disagree (a concurrent overwrite). */
const READ_ATTEMPTS = 3;

/**
 * Blobs as files under a root folder: key `audio/job_abc.mp3` is the file `<root>/audio/job_abc.mp3`.
 *
 * Each blob has a sidecar `<file>.meta.json` holding `{contentType, size, sha256}` (size in bytes, hex
 * SHA-256 of the content, used as the ETag). A write streams into `<root>/.tmp/<uuid>` while hashing,
 * fsyncs, writes the sidecar the same way, then renames the sidecar and then the data file into place,
 * so a visible data file always has its sidecar. Delete removes the data file first, then the sidecar.
 * Folders are created as needed and never removed. Temporary files left by a crash stay in `.tmp` (no
 * key can name them) and may be deleted at any time while no write is running.
 */
export class DiskBlobStore implements BlobStore {
  /** Absolute path of the root folder. */
  readonly root: string;
  /**
   * Folders this store created or found, so that a put does not ask the file system for them again (a
   * `mkdir` is a round trip through the libuv pool, two per put). Folders are never removed by the
   * store; one removed by hand shows as ENOENT, and the put then creates it again.
   */
  readonly #folders = new Set<string>();

  /** `root` is resolved against the current directory; it is created on first write or ping. */
  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Creates `folder` (and its parents) unless this store already knows it exists. */
  async #ensureFolder(folder: string): Promise<void> {
    if (this.#folders.has(folder)) return;
    await mkdir(folder, { recursive: true });
    if (this.#folders.size >= MAX_KNOWN_FOLDERS) this.#folders.clear();
    this.#folders.add(folder);
  }

  /** Runs `step`; when a folder it needs turns out to be gone (ENOENT), forgets, recreates and retries once. */
  async #inFolders<T>(folders: string[], step: () => Promise<T>): Promise<T> {
    for (const f of folders) await this.#ensureFolder(f);
    try {
      return await step();
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code !== "ENOENT") throw err;
      for (const f of folders) {
        this.#folders.delete(f);
        await this.#ensureFolder(f);
      }
      return step();
    }
  }

  /** Absolute path of the data file of a (validated) key. */
  private pathOf(key: string): string {
    assertBlobKey(key);
    const file = join(this.root, ...key.split("/"));
    // Defence in depth: the key rules already keep every path under the root.
    if (!file.startsWith(this.root + sep)) throw new InvalidBlobKeyError(key);
    return file;
  }

  async put(
    key: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    meta: { contentType: string },
  ): Promise<BlobInfo> {
    const file = this.pathOf(key);
    assertContentType(meta.contentType);
    const tmpDir = join(this.root, TMP_DIR);
    const tmpData = join(tmpDir, randomUUID());
    const tmpMeta = `${tmpData}${META_SUFFIX}`;
    try {
      const hash = createHash("sha256");
      let size = 0;
      const fh = await this.#inFolders([tmpDir], () => open(tmpData, "wx"));
      try {
        const write = async (chunk: Uint8Array): Promise<void> => {
          if (!(chunk instanceof Uint8Array)) throw new TypeError("Blob body chunks must be Uint8Array.");
          hash.update(chunk);
          size += chunk.byteLength;
          let off = 0;
          while (off < chunk.byteLength) {
            const { bytesWritten } = await fh.write(chunk, off, chunk.byteLength - off);
            off += bytesWritten;
          }
        };
        if (body instanceof Uint8Array) await write(body);
        else for await (const chunk of body) await write(chunk);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      const sidecar: SidecarMeta = {
        contentType: meta.contentType,
        size,
        sha256: hash.digest("hex"),
      };
      await writeSynced(tmpMeta, JSON.stringify(sidecar));
      await this.#inFolders([dirname(file)], () => rename(tmpMeta, `${file}${META_SUFFIX}`));
      await rename(tmpData, file);
      return {
        key,
        size,
        contentType: sidecar.contentType,
        etag: sidecar.sha256,
      };
    } catch (err) {
      await rm(tmpData, { force: true });
      await rm(tmpMeta, { force: true });
      throw err;
    }
  }

  async head(key: string): Promise<BlobInfo | null> {
    const file = this.pathOf(key);
    for (let attempt = 1; ; attempt++) {
      let size: number;
      try {
        size = (await stat(file)).size;
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
      const meta = await this.readSidecar(file);
      if (meta === null) return null; // deleted meanwhile
      if (meta.size === size) return { key, size, contentType: meta.contentType, etag: meta.sha256 };
      if (attempt >= READ_ATTEMPTS) throw new Error(`Blob '${key}' changed while being read.`);
    }
  }

  async get(key: string, range?: ByteRange): Promise<BlobRead | null> {
    const file = this.pathOf(key);
    if (range !== undefined) {
      const { start, end } = range;
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
        throw new RangeError(`Invalid byte range ${start}-${end}.`);
      }
    }
    for (let attempt = 1; ; attempt++) {
      let fh: FileHandle;
      try {
        fh = await open(file, "r");
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
      let handedOver = false;
      try {
        const size = (await fh.stat()).size;
        const meta = await this.readSidecar(file);
        if (meta === null) return null;
        if (meta.size !== size) {
          if (attempt >= READ_ATTEMPTS) throw new Error(`Blob '${key}' changed while being read.`);
          continue;
        }
        const info: BlobInfo = {
          key,
          size,
          contentType: meta.contentType,
          etag: meta.sha256,
        };
        let start = 0;
        let end = size - 1;
        if (range !== undefined) {
          if (range.start >= size) {
            throw new RangeError(`Byte range start ${range.start} is past the blob's size ${size}.`);
          }
          start = range.start;
          end = Math.min(range.end, size - 1);
        }
        // An empty blob has no byte to start at: answer an empty stream (the file closes below).
        if (size === 0) return { info, body: Readable.from([]) };
        const body = fh.createReadStream({ start, end, autoClose: true });
        handedOver = true;
        return { info, body };
      } finally {
        if (!handedOver) await fh.close();
      }
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    await rm(file, { force: true });
    await rm(`${file}${META_SUFFIX}`, { force: true });
  }

  async ping(): Promise<void> {
    await mkdir(join(this.root, TMP_DIR), { recursive: true });
    await access(this.root, fsConstants.R_OK | fsConstants.W_OK);
    await access(join(this.root, TMP_DIR), fsConstants.R_OK | fsConstants.W_OK);
  }

  /** The sidecar of a data file, or null when it is missing. */
  private async readSidecar(file: string): Promise<SidecarMeta | null> {
    try {
      return parseSidecar(await readFile(`${file}${META_SUFFIX}`, "utf8"));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }
}

/**
 * The store named by `STORAGE_URL` (config.ts `storageUrl`):
 * - `file:<dir>`: a {@link DiskBlobStore}; a relative `<dir>` (`file:./data/blobs`) is resolved against
 *   the current directory; `file:///abs/dir` URLs are accepted too.
 * - `s3://bucket` or `s3://bucket/prefix`: an {@link S3BlobStore} connected with `s3` (endpoint, region,
 *   credentials, path style; see {@link S3Options} for the environment variables config.ts maps to it).
 *   Without `s3`, AWS S3 in `us-east-1` with the SDK's default credential chain.
 *
 * Nothing is touched on disk or contacted here (call `ping()` at boot); `s3` is ignored for `file:`.
 * Throws an Error naming `STORAGE_URL` for any other or empty value or a malformed S3 URL, and an Error
 * for unusable `s3` options (see the {@link S3BlobStore} constructor).
 */
export function openBlobStore(storageUrl: string, s3?: S3Options): BlobStore {
  if (storageUrl.startsWith("file:")) {
    let dir = storageUrl.slice("file:".length);
    if (storageUrl.startsWith("file://")) {
      try {
        dir = fileURLToPath(storageUrl);
      } catch (err) {
        throw new Error(`STORAGE_URL '${storageUrl}' is not a usable file URL: ${(err as Error).message}`);
      }
    }
    if (dir === "") throw new Error("STORAGE_URL 'file:' needs a folder, e.g. 'file:./data/blobs'.");
    return new DiskBlobStore(dir);
  }
  if (storageUrl.startsWith("s3://")) {
    return new S3BlobStore(parseS3Url(storageUrl), s3);
  }
  throw new Error(`STORAGE_URL must be 'file:<dir>' or 's3://bucket/prefix', got '${storageUrl}'.`);
}

export { S3BlobStore, type S3Location, type S3Options } from "./s3-blobs.ts";
