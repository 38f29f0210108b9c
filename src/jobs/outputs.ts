/**
 * Stored outputs of a caller's jobs: the gallery (D8, D19) and the public share page of one job.
 * Only succeeded jobs with a stored output are shown; another account's job is "not found" (invariant 5).
 */
import type { Executor } from "../billing/ledger.ts";
import { microsToUsd } from "../money.ts";
import { AppError, errors } from "../errors.ts";
import type { MediaFacts } from "../upstreams/media-probe.ts";
import { galleryRows, type OutputRow, sharedOutputRow } from "./outputs.repository.ts";
import { outputExpiredAt } from "./retention.repository.ts";

/**
 * What one stored file says of itself (`upstreams/media-probe.ts`, read when it was stored): its type,
 * and where the file says them its pixel size, length (seconds), frames per second and frame count.
 */
export interface StoredMediaFacts {
  content_type: string;
  width?: number;
  height?: number;
  duration_sec?: number;
  fps?: number;
  frames?: number;
}

/**
 * The stored output of a job (`jobs.output_json`): the first file's key and type, every key, and (jobs
 * stored since issue 42) `media`, the facts of each file in the order of `keys`, null for a file whose
 * format the probe does not read.
 */
export interface JobOutput {
  key: string;
  content_type: string;
  keys: string[];
  media?: (StoredMediaFacts | null)[];
}

/** `facts` as stored in `output_json.media` (facts the file does not say are left out), or null. */
export function storedMediaFacts(facts: MediaFacts | null): StoredMediaFacts | null {
  if (facts === null) return null;
  return {
    content_type: facts.contentType,
    ...(facts.width !== null && facts.height !== null ? { width: facts.width, height: facts.height } : {}),
    ...(facts.durationSec !== null ? { duration_sec: facts.durationSec } : {}),
    ...(facts.fps !== null ? { fps: facts.fps } : {}),
    ...(facts.frames !== null ? { frames: facts.frames } : {}),
  };
}

/** A gallery item. Amounts in USD; duration in seconds. */
export interface GalleryItem {
  job_id: string;
  kind: string;
  model: string;
  url: string;
  urls: string[];
  content_type: string;
  duration_sec: number | null;
  cost_usd: number | null;
  created_at: string;
  share_url: string;
  /** `test` when a test-mode key made it (D32): priced, no money moved. */
  mode: "live" | "test";
  /** The prompt (stored speech: its text), or null. */
  prompt: string | null;
}

/**
 * The prompt of a job's stored request (`jobs.request_json`): its `prompt`, else its `text` (speech and
 * sound effects stored with `save_to_blob`), else null (also for unreadable JSON).
 */
export function promptOf(requestJson: string | null | undefined): string | null {
  if (!requestJson) return null;
  try {
    const r = JSON.parse(requestJson) as { prompt?: unknown; text?: unknown };
    if (typeof r.prompt === "string" && r.prompt !== "") return r.prompt;
    if (typeof r.text === "string" && r.text !== "") return r.text;
  } catch {
    // A request that does not parse has no prompt to show.
  }
  return null;
}

/** Public URL of a stored blob. */
export function blobUrl(publicBaseUrl: string, key: string): string {
  return `${publicBaseUrl}/v1/files/${key}`;
}

/** 404 `job_not_found` (D2: never reveal that another account's job exists). */
export const jobNotFound = () => new AppError(404, "job_not_found", "No such job.", "id");

function toItem(publicBaseUrl: string, r: OutputRow): GalleryItem {
  const out = JSON.parse(r.output_json ?? "{}") as JobOutput;
  return {
    job_id: r.id,
    kind: r.kind,
    model: r.model,
    url: blobUrl(publicBaseUrl, out.key),
    urls: (out.keys ?? [out.key]).map((k) => blobUrl(publicBaseUrl, k)),
    content_type: out.content_type,
    duration_sec: r.duration_sec === null ? null : Number(r.duration_sec),
    cost_usd: r.cost_micros === null ? null : microsToUsd(Number(r.cost_micros)),
    created_at: new Date(Number(r.created_at)).toISOString(),
    share_url: `${publicBaseUrl}/share/${r.id}`,
    mode: r.mode === "test" ? "test" : "live",
    prompt: promptOf(r.request_json),
  };
}

/**
 * The caller's stored outputs, newest first: at most `limit` items after the job `after` (a job id from a
 * previous page), and whether more exist.
 */
export async function listGallery(
  db: Executor,
  publicBaseUrl: string,
  accountId: string,
  opts: { limit: number; after: string | null },
): Promise<{ items: GalleryItem[]; hasMore: boolean }> {
  const rows = await galleryRows(db, accountId, opts.limit + 1, opts.after);
  return { items: rows.slice(0, opts.limit).map((r) => toItem(publicBaseUrl, r)), hasMore: rows.length > opts.limit };
}

/**
 * A succeeded job's output for its public share page.
 * @throws AppError 404 `job_not_found`, 410 `output_expired` (its files were deleted for age, D46).
 */
export async function sharedOutput(db: Executor, publicBaseUrl: string, jobId: string): Promise<GalleryItem> {
  const r = await sharedOutputRow(db, jobId);
  if (!r) throw (await outputExpiredAt(db, jobId)) !== null ? errors.outputExpired() : jobNotFound();
  return toItem(publicBaseUrl, r);
}

/**
 * The blob keys of job outputs (jobs/rehost.ts, audio/generate.ts): `images/<job id>-<n>.<ext>`,
 * `videos/<job id>.<ext>`, `audio/<job id>.<ext>`; the job id is the first group.
 */
const OUTPUT_KEY = /^(?:images|videos|audio)\/(job_[A-Za-z0-9]+)(?:-\d+)?\.[A-Za-z0-9]+$/;

/**
 * Whether `key` named a file of a job output that the retention sweep deleted for age (D46): its URL
 * answers 410 `output_expired` rather than 404. One primary-key read; false for any other key.
 */
export async function isExpiredOutputKey(db: Executor, key: string): Promise<boolean> {
  const m = OUTPUT_KEY.exec(key);
  return m !== null && (await outputExpiredAt(db, m[1])) !== null;
}

/** Whether job `jobId`'s output was deleted for age (D46). */
export async function isOutputExpired(db: Executor, jobId: string): Promise<boolean> {
  return (await outputExpiredAt(db, jobId)) !== null;
}
