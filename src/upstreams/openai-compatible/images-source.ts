/**
 * An OpenAI images source: {@link VisualJobSource} for family imgC (D25 protocol `openai`), built by
 * {@link createOpenAIImagesSource} from one `UPSTREAMS` entry. OpenAI's image generation is synchronous,
 * so the job is a wrapper (types.ts: "`submit` does the work, `poll` returns the stored result"):
 *
 * - `submitImage` sends the whole generation (images.ts: the request mapping to `gpt-image-2`, the
 *   answer decoding), keeps the decoded images in this process's memory under a fresh request id, and
 *   resolves with the handle `{source, requestId, urls: {}}` (no follow-up URLs exist). Every failure is
 *   thrown (api.ts failure table): a moderation refusal is a non-retryable error with `contentRejected`,
 *   which ends the job `content_rejected` (durable.ts); OpenAI's 400 for the input (an unknown or invalid
 *   parameter) is non-retryable and neither `unsupported` nor `modelNotFound`, so the job ends
 *   `provider_error` on this source and is not moved to the next one (D27, D35); a 404 `model_not_found`
 *   (an upstream id OpenAI retired) is a `modelNotFound` error naming the id (D35).
 * - `poll` returns `succeeded` with the stored images and frees them; `durationSec`, `megapixels` and
 *   `upstreamCostUsd` are null (OpenAI reports no price: gpt-image's `usage` counts tokens; the runner
 *   charges the list price).
 * - `cancel` drops a stored result (OpenAI has no cancel: the generation is already over).
 * - `submitVideo` is refused (imgC only).
 *
 * ## The trade-off of keeping results in memory
 * A result lives only in the process that generated it. If that process stops between the submit and the
 * poll (a crash, a SIGKILL; a lease takeover, D28), the runner that resumes the job finds nothing:
 * `poll` answers `failed`, not retryable, and the job ends `provider_error` with nothing charged, though
 * OpenAI billed us for the images. Writing the images to shared storage at submit would close that gap
 * at the cost of a second copy of every image; the window is short (the runner polls right after it
 * recorded the handle), so this is not done. A graceful shutdown aborts a submit in flight: the job goes
 * back to its queue without a handle and is submitted again later (OpenAI may still bill the aborted
 * generation; the customer pays once).
 * Results are held at most {@link DEFAULT_RESULT_TTL_MS} and {@link MAX_STORED_BYTES} in all (the oldest
 * go first): bounded memory, freed by `poll`, `cancel` and `close`.
 */
import { randomUUID } from "node:crypto";
import { isOwnOrTrustedHost, trustedHostMatcher } from "../hosts.ts";
import { UpstreamError } from "../types.ts";
import type {
  ImageRequest,
  MediaOutput,
  UpstreamHandle,
  UpstreamJobState,
  VideoRequest,
  VisualJobSourceAdapter,
  VisualJobSourceConfig,
} from "../types.ts";
import { createOpenAICompatibleApi } from "./api.ts";
import { checkImageModelOverrides, generateImages, imageGenerationCall, OpenAIImagesMappingError } from "./images.ts";
import type { OpenAIImageCall } from "./images.ts";

/** OpenAI's API, the default base URL. */
export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * Default total time of one generation request, ms: a GPT image model at high quality can take well over a
 * minute for several images.
 */
export const DEFAULT_IMAGES_TIMEOUT_MS = 180_000;

/** How long a generated result waits for its poll by default, ms. */
export const DEFAULT_RESULT_TTL_MS = 15 * 60_000;

/** Most results kept by default (the oldest go first). */
export const DEFAULT_MAX_STORED_RESULTS = 256;

/** Most bytes of images kept in all, whatever the count (the oldest results go first). */
export const MAX_STORED_BYTES = 512 * 1024 * 1024;

/**
 * Configuration of one OpenAI images source (an `UPSTREAMS` entry of protocol `openai`, D25): `baseUrl`
 * default {@link DEFAULT_OPENAI_BASE_URL} (it includes the API version, `.../v1`); the key goes out as
 * `Authorization: Bearer <apiKey>`, to the base URL only (OpenAI names no follow-up URLs); `timeoutMs`
 * bounds one generation request, default {@link DEFAULT_IMAGES_TIMEOUT_MS}; `models` takes
 * `{"imgC-v3": "<a GPT image model id>", "imgC-q1": ...}` (defaults `gpt-image-2`; a `dall-e-*` id is refused)
 * and ignores other keys (images.ts).
 */
export interface OpenAIImagesSourceConfig extends VisualJobSourceConfig {
  /** How long a result waits for its poll, ms (default {@link DEFAULT_RESULT_TTL_MS}). */
  resultTtlMs?: number;
  /** Most results kept (default {@link DEFAULT_MAX_STORED_RESULTS}). */
  maxStoredResults?: number;
}

/** An OpenAI images source. `close()` releases its connection pool and the results it holds. */
export interface OpenAIImagesSource extends VisualJobSourceAdapter {
  readonly protocol: "openai";
}

/**
 * Creates an OpenAI images source (see the module comment).
 * @throws RangeError for a bad configuration (name, key, base URL, timeout, trusted host, `models` value
 *   (including a retired DALL-E id), result limits).
 */
export function createOpenAIImagesSource(config: OpenAIImagesSourceConfig): OpenAIImagesSource {
  const { name } = config;
  if (typeof name !== "string" || name === "") throw new RangeError("name must be a non-empty string");
  if (typeof config.apiKey !== "string" || config.apiKey.trim() === "") throw new RangeError("apiKey must be a non-empty string");
  const ttlMs = positive(config.resultTtlMs ?? DEFAULT_RESULT_TTL_MS, "resultTtlMs");
  const maxResults = positive(config.maxStoredResults ?? DEFAULT_MAX_STORED_RESULTS, "maxStoredResults");
  const overrides = checkImageModelOverrides(config.models);
  const isTrusted = trustedHostMatcher(config.trustedHosts);
  const baseUrl = config.baseUrl ?? DEFAULT_OPENAI_BASE_URL;
  const api = createOpenAICompatibleApi({
    name,
    baseUrl,
    apiKey: config.apiKey,
    timeoutMs: config.timeoutMs ?? DEFAULT_IMAGES_TIMEOUT_MS,
    connectTimeoutMs: config.connectTimeoutMs,
    dispatcher: config.dispatcher,
  });
  const base = new URL(baseUrl);
  const results = new ResultStore(ttlMs, maxResults, MAX_STORED_BYTES);
  let closing: Promise<void> | null = null;

  const requestIdOf = (handle: UpstreamHandle): string => {
    if (handle.source !== name) {
      throw new UpstreamError(`${name}: the handle belongs to source ${JSON.stringify(String(handle.source).slice(0, 60))}`, false);
    }
    if (typeof handle.requestId !== "string" || handle.requestId === "") throw new UpstreamError(`${name}: the handle has no request id`, false);
    return handle.requestId;
  };

  return {
    name,
    protocol: "openai",
    isDirectDownloadHost: (url) => isOwnOrTrustedHost(url, base, isTrusted),

    async submitImage(req: ImageRequest, signal?: AbortSignal): Promise<UpstreamHandle> {
      let call: OpenAIImageCall;
      try {
        call = imageGenerationCall(req, overrides);
      } catch (err) {
        if (err instanceof OpenAIImagesMappingError) throw new UpstreamError(`${name}: ${err.message}`, false, { unsupported: true });
        throw err;
      }
      const outputs = await generateImages(api, call, signal);
      const requestId = randomUUID();
      results.put(requestId, outputs);
      return { source: name, requestId, urls: {} };
    },

    async submitVideo(_req: VideoRequest, signal?: AbortSignal): Promise<UpstreamHandle> {
      signal?.throwIfAborted();
      throw new UpstreamError(`${name}: OpenAI images serves image jobs only (family imgC), not video`, false);
    },

    async poll(handle: UpstreamHandle, signal?: AbortSignal): Promise<UpstreamJobState> {
      signal?.throwIfAborted();
      const requestId = requestIdOf(handle);
      const outputs = results.take(requestId);
      if (outputs === null) {
        return {
          state: "failed",
          retryable: false,
          contentRejected: false,
          message:
            `${name}: the images of request ${JSON.stringify(requestId.slice(0, 80))} are not in this process's memory ` +
            "(the process that generated them stopped, or they expired or were cancelled); OpenAI has nothing to poll",
        };
      }
      return { state: "succeeded", outputs, durationSec: null, megapixels: null, upstreamCostUsd: null };
    },

    async cancel(handle: UpstreamHandle, signal?: AbortSignal): Promise<void> {
      signal?.throwIfAborted();
      results.delete(requestIdOf(handle));
    },

    close(): Promise<void> {
      results.clear();
      // Idempotent: the registry and a test may both close a source.
      closing ??= api.close();
      return closing;
    },
  };
}

/**
 * Generated results waiting for their poll, oldest first (a `Map` keeps insertion order, and every entry
 * has the same time to live, so the oldest is also the first to expire). Expiry is checked on access: no
 * timer keeps the process alive.
 */
class ResultStore {
  readonly #entries = new Map<string, { outputs: MediaOutput[]; bytes: number; expiresAt: number }>();
  readonly #ttlMs: number;
  readonly #maxResults: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(ttlMs: number, maxResults: number, maxBytes: number) {
    this.#ttlMs = ttlMs;
    this.#maxResults = maxResults;
    this.#maxBytes = maxBytes;
  }

  /** Keeps `outputs` under `id`, dropping expired results and, past the limits, the oldest ones. */
  put(id: string, outputs: MediaOutput[]): void {
    const bytes = outputs.reduce((n, o) => n + (o.kind === "bytes" ? o.body.byteLength : o.url.length), 0);
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      const full = this.#entries.size >= this.#maxResults || this.#bytes + bytes > this.#maxBytes;
      if (!full && entry.expiresAt > now) break;
      this.delete(key);
    }
    this.#entries.set(id, { outputs, bytes, expiresAt: now + this.#ttlMs });
    this.#bytes += bytes;
  }

  /** The outputs of `id` (then forgotten), or null when absent or expired. */
  take(id: string): MediaOutput[] | null {
    const entry = this.#entries.get(id);
    if (entry === undefined) return null;
    this.delete(id);
    return entry.expiresAt > Date.now() ? entry.outputs : null;
  }

  delete(id: string): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    this.#entries.delete(id);
    this.#bytes -= entry.bytes;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

function positive(value: number, field: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${field} must be a positive number, got ${value}`);
  return value;
}
