/**
 * Downloads from a source's own hosts (D25): output files on the host of a source's `base_url` or on its
 * `trusted_hosts` are fetched as they are, without the private-address rules of safe-fetch.ts (an
 * operator may run an upstream on a private network). Redirects are not followed (a redirect could lead
 * anywhere); the size cap and the time limit still apply.
 */
import { FetchFailedError, FetchTimeoutError, FetchTooLargeError } from "./safe-fetch.ts";

/**
 * GETs `url` (the caller has checked that its host is trusted) and returns its bytes.
 * @throws FetchTooLargeError over `maxBytes`; FetchTimeoutError after `timeoutMs` (ms) in all;
 *   FetchFailedError for a network failure, a redirect or a non-2xx status.
 */
export async function fetchDirect(url: string, opts: { maxBytes: number; timeoutMs: number }): Promise<{ bytes: Uint8Array; contentType: string | null }> {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { redirect: "manual", signal });
  } catch (err) {
    if (signal.aborted) throw new FetchTimeoutError(opts.timeoutMs);
    throw new FetchFailedError("network", err instanceof Error ? err.message : "network error");
  }
  if (res.status < 200 || res.status > 299) {
    await res.body?.cancel();
    throw new FetchFailedError("http_status", `HTTP ${res.status}`, res.status);
  }
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > opts.maxBytes) {
    await res.body?.cancel();
    throw new FetchTooLargeError(opts.maxBytes, declared);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.byteLength;
      if (size > opts.maxBytes) throw new FetchTooLargeError(opts.maxBytes, null);
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof FetchTooLargeError) throw err;
    if (signal.aborted) throw new FetchTimeoutError(opts.timeoutMs);
    throw new FetchFailedError("network", err instanceof Error ? err.message : "network error");
  }
  return { bytes: Buffer.concat(chunks, size), contentType: res.headers.get("content-type") };
}
