/**
 * A MiniMax source of vidC jobs (Hailuo-02 on MiniMax's own API, D25): {@link VisualJobSourceAdapter}
 * built by {@link createMiniMaxVideoSource} from an `UPSTREAMS` entry of protocol `minimax` that lists
 * `vidC`. Video only: `submitImage` refuses (`unsupported`, no request).
 *
 * ## Models and lengths (D26)
 * `vidC-02-512p`, `-768p`, `-1080p` -> `MiniMax-Hailuo-02` (overridable by `models`) with `resolution`
 * `512P`, `768P`, `1080P`. 512P is image-to-video only: a request without a first frame is
 * `unsupported` (the family's next source may serve it). Lengths: 6 and 10 s (1080P: 6 s); the
 * shortest at least as long as requested is asked, else the longest (7 -> 10, 12 -> 10).
 *
 * ## The handle (D28)
 * `{source: <name>, requestId: <task_id>, urls: {}}`: MiniMax follows a task by id on the base host.
 *
 * ## poll -> UpstreamJobState
 * | MiniMax says | state |
 * |---|---|
 * | `Preparing`, `Queueing` | `queued`, `position` null (MiniMax reports none) |
 * | `Processing` | `running`, `progress` null |
 * | `Success` + `file_id` | `GET /v1/files/retrieve` -> `succeeded`, one `url` output (`video/mp4`) at `download_url` |
 * | `Fail` (or a content code) | `failed`: `contentRejected` for content, not retryable for parameters, else retryable |
 * | HTTP 429/5xx, retryable codes, network, timeout, unknown status | throws, retryable: poll again |
 * | other HTTP 4xx, auth codes | throws, not retryable |
 * `durationSec` is null (the runner reads the MP4), `megapixels` and `upstreamCostUsd` null (no such
 * facts in MiniMax's answers). The download URL is on MiniMax's CDN, not the base host: the runner
 * fetches it without the key through the SSRF-safe fetch (`isDirectDownloadHost` is false for it).
 *
 * ## cancel
 * A no-op that sends nothing: MiniMax's video API has no cancel call (neither MiniMax-MCP nor the CLI
 * has one). The task finishes at MiniMax; the gateway stops polling it.
 *
 * ## Timeouts
 * `timeoutMs` when given, else 60 s per call (every call here is a short JSON exchange).
 */
import type { ImageRequest, UpstreamHandle, UpstreamJobState, UpstreamSourceConfig, VideoRequest, VisualJobSourceAdapter } from "../types.ts";
import { createMiniMaxApi, MiniMaxError } from "./api.ts";
import { checkModelOverrides, HAILUO_02, pickDuration, VIDEO_MODELS } from "./models.ts";
import { queryVideoTask, retrieveFileUrl, submitVideoTask } from "./video.ts";
import type { VideoSubmitBody } from "./video.ts";

/** Default total time of one video call, ms. */
export const DEFAULT_VIDEO_TIMEOUT_MS = 60_000;

/**
 * Creates the vidC job source of a `minimax` entry. `cfg.baseUrl` defaults to `https://api.minimax.io`;
 * the key goes as `Authorization: Bearer <apiKey>` to the base host and `trustedHosts` only (D25).
 * @throws RangeError for a bad configuration (name, base URL, key, timeout, trusted host, `models` entry).
 */
export function createMiniMaxVideoSource(cfg: UpstreamSourceConfig): VisualJobSourceAdapter {
  if (typeof cfg.name !== "string" || cfg.name === "") throw new RangeError("name must be a non-empty string");
  const overrides = checkModelOverrides(cfg.models);
  const { name } = cfg;
  const api = createMiniMaxApi({
    name,
    baseUrl: cfg.baseUrl,
    apiKey: cfg.apiKey,
    timeoutMs: cfg.timeoutMs ?? DEFAULT_VIDEO_TIMEOUT_MS,
    trustedHosts: cfg.trustedHosts,
    connectTimeoutMs: cfg.connectTimeoutMs,
    dispatcher: cfg.dispatcher,
  });
  const unsupported = (text: string): MiniMaxError => new MiniMaxError(`${name}: ${text}`, { retryable: false, kind: "unsupported" });

  /** The submit body of `req` (D26 length, resolution, first frame). */
  const bodyOf = (req: VideoRequest): VideoSubmitBody => {
    const model = Object.hasOwn(VIDEO_MODELS, req.model) ? VIDEO_MODELS[req.model] : undefined;
    if (model === undefined) throw unsupported(`model ${JSON.stringify(req.model.slice(0, 60))} is not served by MiniMax`);
    if (model.imageOnly && req.imageUrl === null) throw unsupported(`${req.model} (${model.resolution}) is image-to-video only at MiniMax`);
    const body: VideoSubmitBody = {
      model: overrides[req.model] ?? HAILUO_02,
      prompt: req.prompt,
      duration: pickDuration(model.durations, req.durationSec),
      resolution: model.resolution,
    };
    if (req.imageUrl !== null) body.first_frame_image = req.imageUrl;
    return body;
  };

  const taskIdOf = (handle: UpstreamHandle): string => {
    if (handle.source !== name) {
      throw new MiniMaxError(`${name}: the handle belongs to source ${JSON.stringify(String(handle.source).slice(0, 60))}`, { retryable: false, kind: "handle" });
    }
    if (typeof handle.requestId !== "string" || !/^[A-Za-z0-9_-]{1,128}$/.test(handle.requestId)) {
      throw new MiniMaxError(`${name}: the handle has no valid task id`, { retryable: false, kind: "handle" });
    }
    return handle.requestId;
  };

  return {
    name,
    isDirectDownloadHost: (url) => api.isDirectDownloadHost(url),

    async submitImage(_req: ImageRequest): Promise<UpstreamHandle> {
      throw unsupported("MiniMax's video source makes no images");
    },

    async submitVideo(req: VideoRequest, signal?: AbortSignal): Promise<UpstreamHandle> {
      const taskId = await submitVideoTask(api, bodyOf(req), signal);
      return { source: name, requestId: taskId, urls: {} };
    },

    async poll(handle: UpstreamHandle, signal?: AbortSignal): Promise<UpstreamJobState> {
      const status = await queryVideoTask(api, taskIdOf(handle), signal);
      switch (status.status) {
        case "queued":
          return { state: "queued", position: null };
        case "running":
          return { state: "running", progress: null };
        case "failed":
          return { state: "failed", retryable: status.retryable, contentRejected: status.contentRejected, message: api.redact(`${name}: ${status.message}`) };
        case "success": {
          const url = await retrieveFileUrl(api, status.fileId, signal);
          return {
            state: "succeeded",
            outputs: [{ kind: "url", url, contentType: "video/mp4" }],
            durationSec: null,
            megapixels: null,
            upstreamCostUsd: null,
          };
        }
      }
    },

    async cancel(): Promise<void> {
      // No cancel call at MiniMax (see the module comment): nothing to send.
    },

    close: () => api.close(),
  };
}
