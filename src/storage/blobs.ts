/**
 * Opens the blob store `STORAGE_URL` names ({@link openBlobStore}): the factory over the interface
 * (blob-store.ts, with the key rules in its header) and the two stores (disk-blobs.ts, s3-blobs.ts).
 */
import { fileURLToPath } from "node:url";
import type { BlobStore } from "./blob-store.ts";
import { DiskBlobStore } from "./disk-blobs.ts";
import { parseS3Url, S3BlobStore, type S3Options } from "./s3-blobs.ts";


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
