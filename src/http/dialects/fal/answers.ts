/**
 * The gateway's job (D3) in fal's queue shapes (D38; fal-ai/fal-js `libs/client/src/types/common.ts`
 * `QueueStatus`, the endpoints' output types in `types/endpoints.ts`): the request id is the job id, the
 * follow-up URLs are fal's own (`https://queue.fal.run/<owner>/<alias>/requests/<id>/...`, which the
 * client keeps sending through the proxy), and the outputs are the gateway's rehosted files.
 *
 * | job status | fal status |
 * |---|---|
 * | `pending` | `IN_QUEUE`, `queue_position` = the job's D30 place - 1 (fal counts from 0) |
 * | `processing` | `IN_PROGRESS`, `logs: []`, and `progress` (0..1 or null; the gateway's addition) |
 * | `succeeded` | `COMPLETED`, `logs: []`, `metrics: {}` |
 * | `failed`, `refunded`, `expired` | `COMPLETED` with `error` (the job's message) and `error_type` (its `error.code`), as fal reports a failed request |
 */
import type { JobView } from "../../../jobs/jobs.ts";
import { probeMedia } from "../../../upstreams/media-probe.ts";
import type { BlobStore } from "../../../storage/blob-store.ts";
import { FAL_QUEUE_HOST } from "./targets.ts";

/** fal's follow-up URLs of request `requestId` of app `app` (`<owner>/<alias>`). */
export function followUpUrls(app: string, requestId: string) {
  const base = `https://${FAL_QUEUE_HOST}/${app}/requests/${encodeURIComponent(requestId)}`;
  return { response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
}

/** fal's 0-based queue position of a pending job (0 when the job has started or its place is unknown). */
function queuePosition(job: JobView): number {
  return job.queue_position === null ? 0 : Math.max(0, job.queue_position - 1);
}

/** The answer to a submit: `IN_QUEUE` with the request id (the job id) and fal's follow-up URLs. */
export function submitAnswer(app: string, job: JobView) {
  return { status: "IN_QUEUE" as const, request_id: job.id, ...followUpUrls(app, job.id), queue_position: queuePosition(job) };
}

/** Whether a job has ended (fal: `COMPLETED`). */
export function isEnded(job: JobView): boolean {
  return job.status !== "pending" && job.status !== "processing";
}

/** The status answer of a job and its HTTP status (fal: 202 while queued or running, 200 once completed). */
export function statusAnswer(app: string, job: JobView): { code: 200 | 202; body: Record<string, unknown> } {
  const ids = { request_id: job.id, ...followUpUrls(app, job.id) };
  if (job.status === "pending") return { code: 202, body: { status: "IN_QUEUE", ...ids, queue_position: queuePosition(job) } };
  if (job.status === "processing") return { code: 202, body: { status: "IN_PROGRESS", ...ids, logs: [], progress: job.progress } };
  const failure = job.status === "succeeded" ? {} : { error: failureOf(job).detail, error_type: failureOf(job).error_type };
  return { code: 200, body: { status: "COMPLETED", ...ids, logs: [], metrics: {}, ...failure } };
}

/** A failed job's error as fal reports one: `{detail, error_type}` (D38: answered 422 by the result). */
export function failureOf(job: JobView): { detail: string; error_type: string } {
  const code = job.error?.code ?? job.status;
  return { detail: job.error?.message ?? `The job ended ${job.status}.`, error_type: code };
}

/** The blob key of one of the gateway's file URLs (`<publicBaseUrl>/v1/files/<key>`), or null. */
function keyOf(publicBaseUrl: string, url: string): string | null {
  const prefix = `${publicBaseUrl}/v1/files/`;
  return url.startsWith(prefix) ? url.slice(prefix.length) : null;
}

/**
 * Bytes read from the start of an image to find its size: a PNG's IHDR ends at byte 24, a JPEG's frame
 * header follows its metadata segments (EXIF, ICC profile), which are seldom longer.
 */
const HEADER_BYTES = 64 * 1024;

/**
 * The type and pixel size a stored image says of itself, from its first bytes; null for a format whose
 * size it does not say (an SVG without one) or a missing blob.
 */
async function storedImageFacts(blobs: BlobStore, key: string | null): Promise<{ width: number; height: number; content_type: string } | null> {
  if (key === null) return null;
  const read = await blobs.get(key, { start: 0, end: HEADER_BYTES - 1 }).catch(() => null);
  if (read === null) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of read.body) chunks.push(Buffer.from(chunk as Uint8Array));
  const facts = probeMedia(new Uint8Array(Buffer.concat(chunks)));
  return facts !== null && facts.width !== null && facts.height !== null ? { width: facts.width, height: facts.height, content_type: facts.contentType } : null;
}

/**
 * A succeeded job's output in fal's output JSON, URLs on the gateway, every fact read from the files
 * themselves: `{images: [{url, width, height, content_type}]}` (each image's own size and type; no
 * width and height when the file does not say them, as fal's `File` has none) or `{video: {url,
 * content_type, file_size, width, height, fps, duration}}` (fal's `VideoFile`; a fact the MP4 does not
 * say is left out).
 */
export async function outputAnswer(blobs: BlobStore, publicBaseUrl: string, job: JobView): Promise<Record<string, unknown>> {
  const output = job.output;
  if (output === null) return {};
  if (job.kind === "video") {
    const key = keyOf(publicBaseUrl, output.url);
    const info = key === null ? null : await blobs.head(key).catch(() => null);
    return {
      video: {
        url: output.url,
        content_type: output.content_type,
        ...(info ? { file_size: info.size } : {}),
        ...(output.width !== undefined && output.height !== undefined ? { width: output.width, height: output.height } : {}),
        ...(output.fps !== undefined ? { fps: output.fps } : {}),
        ...(output.duration_sec !== undefined ? { duration: output.duration_sec } : {}),
      },
    };
  }
  const images = await Promise.all(
    output.urls.map(async (url) => {
      const facts = await storedImageFacts(blobs, keyOf(publicBaseUrl, url));
      return { url, ...(facts ?? { content_type: output.content_type }) };
    }),
  );
  return { images, prompt: job.prompt ?? "" };
}
