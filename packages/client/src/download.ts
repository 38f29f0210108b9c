/**
 * Saving a succeeded job's outputs to files (Node only: it writes to disk). The output URLs are the
 * gateway's own permanent, public file URLs (`GET /v1/files/{key}`, D3, D8), so no key is sent with them.
 */
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { extname } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { gatewayError, GatewayError } from "./errors.ts";
import type { MediaJob } from "./jobs.ts";

/** Options of {@link downloadOutput}. */
export interface DownloadOptions {
  signal?: AbortSignal;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
}

/**
 * The file names for `count` outputs written to `path`: `path` itself for one output; for several,
 * a 1-based index before the extension (`out.png` -> `out-1.png`, `out-2.png`; `out` -> `out-1`, `out-2`).
 */
export function outputPaths(path: string, count: number): string[] {
  if (count <= 1) return [path];
  const ext = extname(path);
  const stem = ext ? path.slice(0, -ext.length) : path;
  return Array.from({ length: count }, (_, i) => `${stem}-${i + 1}${ext}`);
}

/**
 * Downloads every output of a succeeded `job` (`output.urls`, or `output.url`) to `path` (see
 * {@link outputPaths} for several images) and resolves with the paths written, in output order. Each file
 * is written to `<name>.part` and renamed when complete, so an interrupted download leaves no truncated
 * file under the final name. Throws a {@link GatewayError}: code `no_output` for a job without output
 * (not succeeded), the D1 code of a non-2xx file answer (e.g. 404 `not_found`).
 */
export async function downloadOutput(job: MediaJob, path: string, options: DownloadOptions = {}): Promise<string[]> {
  const output = job.output;
  if (!output) {
    throw new GatewayError({ status: 0, code: "no_output", message: `job ${job.id} has no output (status ${job.status})` });
  }
  const urls = output.urls.length > 0 ? output.urls : [output.url];
  const targets = outputPaths(path, urls.length);
  const doFetch = options.fetch ?? fetch;
  for (const [i, url] of urls.entries()) {
    const res = await doFetch(url, { signal: options.signal });
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => "");
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the text itself goes into the message
      }
      throw gatewayError(res, body);
    }
    const part = `${targets[i]}.part`;
    try {
      await pipeline(Readable.fromWeb(res.body as NodeReadableStream<Uint8Array>), createWriteStream(part), { signal: options.signal });
      await rename(part, targets[i]);
    } catch (err) {
      await rm(part, { force: true });
      throw err;
    }
  }
  return targets;
}
