/**
 * Rehosting a job's outputs (docs/architecture.md "Asynchronous jobs"; D25): every output the adapter returned,
 * bytes or an upstream URL, is stored in the gateway's blob store, so a job's `output.url` never points at
 * the upstream. URLs on a source's own hosts are fetched directly; any other URL through the SSRF-safe
 * fetch (safe-fetch in production).
 */
import type { BlobStore } from "../storage/blob-store.ts";
import { fetchDirect } from "../upstreams/direct-fetch.ts";
import { type MediaFacts, probeMedia } from "../upstreams/media-probe.ts";
import type { MediaOutput } from "../upstreams/types.ts";
import type { SourceSlot } from "./durable.ts";

/** Downloads an upstream output URL with a size cap and timeout (safe-fetch in production). */
export type OutputFetcher = (url: string, opts: { maxBytes: number; timeoutMs: number }) => Promise<{ bytes: Uint8Array; contentType: string | null }>;

/** Largest output downloads, bytes. */
const MAX_OUTPUT_BYTES = { image: 50 * 1024 * 1024, video: 500 * 1024 * 1024 } as const;
const DOWNLOAD_TIMEOUT_MS = 120_000;

/** What rehosting needs: the blob store, the safe fetch, and the source that served the job (its hosts). */
export interface RehostDeps {
  blobs: BlobStore;
  fetchOutput: OutputFetcher;
  /** The configured source named `name` (D25), whose `downloadsDirectly` says which URLs it serves itself. */
  sourceNamed?: (name: string) => SourceSlot | undefined;
}

/**
 * The stored outputs: their blob keys, the first one's content type, and what each file says of itself
 * ({@link probeMedia}: its type, pixel size, length, frame rate), in the order of `keys` (null where the
 * format is not one the probe reads).
 */
export interface Rehosted {
  ok: true;
  keys: string[];
  contentType: string;
  facts: (MediaFacts | null)[];
}

/** Why rehosting failed: the download (`download`) or the blob store (`store`), with the error's text. */
export interface RehostFailure {
  ok: false;
  stage: "download" | "store";
  message: string;
}

function extensionOf(contentType: string): string {
  if (contentType.includes("svg")) return "svg";
  if (contentType.includes("png")) return "png";
  if (contentType.includes("jpeg")) return "jpg";
  if (contentType.includes("webp")) return "webp";
  if (contentType.includes("mp4")) return "mp4";
  if (contentType.includes("webm")) return "webm";
  return "bin";
}

/**
 * Stores `outputs` of job `jobId` in blob storage (`images/<job>-<i>.<ext>`, `videos/<job>.<ext>`),
 * downloading URL outputs (at most 50 MB an image, 500 MB a video, 120 s each). Each file is stored
 * with the content type its bytes show ({@link probeMedia}), whatever the source said; a format the probe
 * does not know keeps the source's type. `source` names the source that served the job, or null (the
 * simulator). On a failure the blobs stored so far are deleted.
 */
export async function rehostOutputs(
  deps: RehostDeps,
  jobId: string,
  kind: "image" | "video",
  outputs: MediaOutput[],
  source: string | null,
): Promise<Rehosted | RehostFailure> {
  const keys: string[] = [];
  let contentType = "application/octet-stream";
  const facts: (MediaFacts | null)[] = [];
  let stage: "download" | "store" = "download";
  try {
    for (const [i, out] of outputs.entries()) {
      let bytes: Uint8Array;
      let type: string;
      if (out.kind === "bytes") {
        bytes = out.body;
        type = out.contentType;
      } else {
        // A source's own hosts are fetched directly (D25); any other URL through the SSRF-safe fetch.
        const slot = source ? deps.sourceNamed?.(source) : undefined;
        const fetcher: OutputFetcher = slot?.downloadsDirectly?.(out.url) ? fetchDirect : deps.fetchOutput;
        const got = await fetcher(out.url, { maxBytes: MAX_OUTPUT_BYTES[kind], timeoutMs: DOWNLOAD_TIMEOUT_MS });
        bytes = got.bytes;
        type = out.contentType ?? got.contentType ?? "application/octet-stream";
      }
      // The file's own type wins over what the source said (issue 42: media describe themselves truthfully).
      const probed = probeMedia(bytes);
      if (probed !== null) type = probed.contentType;
      // One folder per kind (as audio): a folder per job cost an inode and a `mkdir` per job.
      const key = kind === "video" ? `videos/${jobId}.${extensionOf(type)}` : `images/${jobId}-${i}.${extensionOf(type)}`;
      stage = "store";
      await deps.blobs.put(key, bytes, { contentType: type });
      stage = "download";
      keys.push(key);
      facts.push(probed);
      if (i === 0) contentType = type;
    }
  } catch (err) {
    await deleteBlobs(deps.blobs, keys);
    return { ok: false, stage, message: err instanceof Error ? err.message : "error" };
  }
  return { ok: true, keys, contentType, facts };
}

/** Deletes the blobs `keys`, ignoring failures (outputs of a job that will not keep them). */
export async function deleteBlobs(blobs: BlobStore, keys: string[]): Promise<void> {
  for (const k of keys) await blobs.delete(k).catch(() => {});
}
