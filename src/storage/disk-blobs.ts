/**
 * The disk blob store: each blob a file under a root folder with a JSON sidecar (`STORAGE_URL=file:<dir>`,
 * the default). The interface and the key rules are blob-store.ts's.
 */
import { createHash, randomUUID } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { access, type FileHandle, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { Readable } from "node:stream";
import {
  assertBlobKey,
  assertContentType,
  type BlobInfo,
  type BlobRead,
  type BlobStore,
  type ByteRange,
  InvalidBlobKeyError,
  META_SUFFIX,
} from "./blob-store.ts";

const TMP_DIR = ".tmp";
/** Files {@link DiskBlobStore.deleteMany} removes at once. */
const DELETE_CONCURRENCY = 16;
/** Folders a {@link DiskBlobStore} remembers as existing (then it forgets them all and asks again). */
const MAX_KNOWN_FOLDERS = 10_000;

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

  /** {@link BlobStore.deleteMany}: every key checked first, then removed a few at a time. */
  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertBlobKey(key);
    const list = [...keys];
    for (let i = 0; i < list.length; i += DELETE_CONCURRENCY) {
      await Promise.all(list.slice(i, i + DELETE_CONCURRENCY).map((k) => this.delete(k)));
    }
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
