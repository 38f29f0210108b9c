/**
 * A fal source: {@link VisualJobSource} on fal's queue for the image and video families fal serves
 * (imgA, imgB, vidA, vidB, vidC, vidD; D25). Built by {@link createFalSource} from one `UPSTREAMS`
 * entry of protocol `fal`.
 *
 * ## The handle (D28)
 * `submit*` resolves once fal accepted the job, with everything a runner needs to resume it by polling:
 * `{source, requestId, urls: {status_url, response_url, cancel_url}}`, the URLs exactly as fal returned
 * them (host-checked). A model that makes one image per request (Recraft, `n` > 1) is several fal
 * requests: part `i` >= 1 is stored under `status_url.i`, `response_url.i`, `cancel_url.i`, and
 * `requestId` lists the ids joined by `,`. When a later part's submit fails, the parts already accepted
 * are cancelled (best effort) and the error is thrown: the job is never half-submitted.
 *
 * A submit refused by fal throws api.ts' {@link FalError}; a 404 means fal does not serve the endpoint
 * id (a removed model, D35): not retryable, `modelNotFound`, `upstreamModel` = the endpoint id, so the
 * runner moves on to the family's next source and names the endpoint when none is left.
 *
 * ## poll -> UpstreamJobState
 * One status call per part; when every part is COMPLETED, one result call per part.
 * | fal says | state |
 * |---|---|
 * | `IN_QUEUE` (+`queue_position`) | `queued`, `position` (the largest of the parts) |
 * | `IN_PROGRESS` (or some parts done) | `running`, `progress` null (fal reports none) |
 * | `COMPLETED`, result 2xx with `images` / `video` | `succeeded` with `url` outputs |
 * | `COMPLETED` with `error` and an infrastructure `error_type` (api.ts `FAL_INFRASTRUCTURE_ERROR_TYPES`: `request_timeout`, `startup_timeout`, `runner_*`, `internal_error`, `internal_server_error`, `generation_timeout`, `downstream_service_*`) | `failed`, retryable (fal's infrastructure, D27) |
 * | `COMPLETED` with `error` and any other `error_type` (`client_cancelled`, `bad_request`, the input validation types `missing`, `literal_error`, `image_too_large`, ...) | `failed`, not retryable, no result call (D35: the request's own fault; the next source would refuse it too) |
 * | `COMPLETED` with `error` and no `error_type` | the result decides: non-2xx as below (a 422 is an input error: not retryable); 2xx: `failed`, retryable |
 * | result non-2xx 4xx (422 validation, ...) | `failed`, not retryable (unless fal's body names an infrastructure type) |
 * | result 5xx with fal's error body (`detail`) | `failed`, retryable |
 * | result 408 / 429, or 5xx without fal's body (an ingress page) | throws a retryable {@link FalError}: poll again |
 * | result 2xx of an unknown shape | `failed`, retryable (fal misbehaved) |
 * | status call non-2xx, network error, timeout | throws ({@link FalError}, retryable per api.ts) |
 *
 * ## Content moderation (`contentRejected`) — *unverified*: no SDK shows fal's refusal
 * Recognised: a `detail[]` item or an `error_type` (body, `x-fal-error-type` header or the COMPLETED
 * status) equal to `content_policy_violation` (the type docs.fal.ai/errors documents, with 422), and
 * an output whose `has_nsfw_concepts` (FLUX answers, fal-js `FluxKontextOutput`) contains `true`: fal's
 * checker replaces such images, so the job fails `content_rejected` instead of charging for them.
 * The same content-policy shapes on a submit throw a non-retryable {@link FalError} with
 * `contentRejected` true.
 *
 * ## Delivery facts
 * - `durationSec`: `video.duration` when the endpoint reports it (fal's `VideoFile`), else null: the
 *   runner reads the delivered length from the MP4 itself. The length asked for follows D26
 *   (models.ts `pickDuration`).
 * - `megapixels`: width x height of the first image when fal reports them (FLUX.2 does), else null.
 * - `upstreamCostUsd`: always null. No fal answer carries a price: the queue answers have none, and the
 *   only billing trace in fal's code is the app's `x-fal-billable-units` header (fal-ai/fal
 *   `projects/fal/src/fal/api/api.py`), a unit count that is not USD and is not documented on queue
 *   answers.
 */
import type { ImageRequest, UpstreamHandle, UpstreamJobState, VideoRequest, VisualJobSourceAdapter, VisualJobSourceConfig } from "../types.ts";
import { CONTENT_POLICY_ERROR_TYPE, createFalApi, FAL_INFRASTRUCTURE_ERROR_TYPES, FalError } from "./api.ts";
import type { FalAnswer } from "./api.ts";
import { checkModelOverrides, decodeOutput, FalMappingError, imageCall, videoCall } from "./models.ts";
import type { FalCall } from "./models.ts";
import { cancelRequest, requestResult, requestStatus, submitRequest } from "./queue.ts";
import type { FalRequestRef, FalStatus } from "./queue.ts";
import { isRecord } from "../util.ts";
import { noteUpstreamModel } from "../../observability/tracing.ts";

/**
 * Configuration of one fal source (an `UPSTREAMS` entry of protocol `fal`, D25): the transport fields of
 * keyed-http.ts `KeyedSourceOptions` (`baseUrl` default `https://queue.fal.run`, the key sent as
 * `Authorization: Key <apiKey>`) and `models`, the `{"<model id>": "<endpoint id>", "<model id>/image":
 * "<endpoint id>"}` overrides.
 */
export type FalSourceConfig = VisualJobSourceConfig;

/** A fal source. `close()` releases its connection pool. */
export interface FalSource extends VisualJobSourceAdapter {
  readonly protocol: "fal";
}

/** The `urls` keys of part `i` of a handle. */
function urlKeys(i: number): { status: string; response: string; cancel: string } {
  const suffix = i === 0 ? "" : `.${i}`;
  return { status: `status_url${suffix}`, response: `response_url${suffix}`, cancel: `cancel_url${suffix}` };
}

/**
 * Creates a fal source.
 * @throws RangeError for a bad configuration (base URL, key, timeout, trusted host, `models` entry).
 */
export function createFalSource(config: FalSourceConfig): FalSource {
  if (typeof config.name !== "string" || config.name === "") throw new RangeError("name must be a non-empty string");
  const overrides = checkModelOverrides(config.models);
  const api = createFalApi({
    name: config.name,
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    timeoutMs: config.timeoutMs,
    trustedHosts: config.trustedHosts,
    connectTimeoutMs: config.connectTimeoutMs,
    dispatcher: config.dispatcher,
  });
  const { name } = config;

  const mapped = (build: () => FalCall): FalCall => {
    try {
      return build();
    } catch (err) {
      if (err instanceof FalMappingError) throw new FalError(`${name}: ${err.message}`, { retryable: false, kind: "unsupported" });
      throw err;
    }
  };

  const submitCall = async (call: FalCall, signal: AbortSignal | undefined): Promise<UpstreamHandle> => {
    const refs: FalRequestRef[] = [];
    noteUpstreamModel(call.endpointId);
    try {
      for (let i = 0; i < call.parts; i++) refs.push(await submitRequest(api, call.endpointId, call.input, signal));
    } catch (err) {
      // Never leave a half-submitted job running at fal: withdraw the parts already accepted.
      await Promise.allSettled(refs.map((ref) => cancelRequest(api, ref)));
      throw err;
    }
    const urls: Record<string, string> = {};
    refs.forEach((ref, i) => {
      const keys = urlKeys(i);
      urls[keys.status] = ref.statusUrl;
      urls[keys.response] = ref.responseUrl;
      urls[keys.cancel] = ref.cancelUrl;
    });
    return { source: name, requestId: refs.map((r) => r.requestId).join(","), urls };
  };

  const refsOf = (handle: UpstreamHandle): FalRequestRef[] => {
    if (handle.source !== name) {
      throw new FalError(`${name}: the handle belongs to source ${JSON.stringify(String(handle.source).slice(0, 60))}`, { retryable: false, kind: "handle" });
    }
    const ids = typeof handle.requestId === "string" ? handle.requestId.split(",") : [];
    const urls = isRecord(handle.urls) ? (handle.urls as Record<string, unknown>) : {};
    const refs: FalRequestRef[] = [];
    for (let i = 0; ; i++) {
      const keys = urlKeys(i);
      const statusUrl = urls[keys.status];
      const responseUrl = urls[keys.response];
      const cancelUrl = urls[keys.cancel];
      if (statusUrl === undefined && i > 0) break;
      if (typeof statusUrl !== "string" || typeof responseUrl !== "string" || typeof cancelUrl !== "string") {
        throw new FalError(`${name}: the handle lacks the follow-up URLs of part ${i}`, { retryable: false, kind: "handle" });
      }
      refs.push({ requestId: ids[i] ?? "", statusUrl, responseUrl, cancelUrl });
    }
    return refs;
  };

  /**
   * The failed state of a COMPLETED status that carries an error (see the table): its `error_type`
   * decides; without one, the result of that part does (a 4xx such as 422 is the input's fault).
   */
  const failedFromStatus = async (
    status: Extract<FalStatus, { status: "COMPLETED" }>,
    ref: FalRequestRef,
    signal: AbortSignal | undefined,
  ): Promise<UpstreamJobState> => {
    const contentRejected = status.errorType === CONTENT_POLICY_ERROR_TYPE;
    const text = (status.error ?? "failed").replace(/\s+/g, " ").trim().slice(0, 300);
    const type = status.errorType === null ? "" : ` (${status.errorType})`;
    const message = api.redact(`${name}: the request failed: ${text}${type}`);
    if (status.errorType !== null) {
      const retryable = !contentRejected && FAL_INFRASTRUCTURE_ERROR_TYPES.has(status.errorType);
      return { state: "failed", retryable, contentRejected, message };
    }
    const answer = await requestResult(api, ref, signal);
    if (answer.status < 200 || answer.status > 299) return failedFromResult(answer);
    return { state: "failed", retryable: true, contentRejected: false, message };
  };

  /**
   * The meaning of a non-2xx result answer: a failed job (`failed` state), or a transient failure of
   * the result call itself (thrown, so the runner polls again).
   */
  const failedFromResult = (answer: FalAnswer): UpstreamJobState => {
    const err = api.httpError(answer, "result");
    const falBody = isRecord(answer.json) && answer.json.detail !== undefined;
    const transient = answer.status === 408 || answer.status === 429 || (answer.status >= 500 && !falBody);
    if (transient && !err.contentRejected) throw err;
    return { state: "failed", retryable: err.retryable, contentRejected: err.contentRejected, message: err.message };
  };

  const succeededOrFailed = (answers: FalAnswer[]): UpstreamJobState => {
    const outputs: Extract<UpstreamJobState, { state: "succeeded" }> = {
      state: "succeeded",
      outputs: [],
      durationSec: null,
      megapixels: null,
      upstreamCostUsd: null,
    };
    for (const [i, answer] of answers.entries()) {
      if (answer.status < 200 || answer.status > 299) return failedFromResult(answer);
      const decoded = decodeOutput(answer.json);
      if (typeof decoded === "string") {
        return { state: "failed", retryable: true, contentRejected: false, message: api.malformed("result", decoded).message };
      }
      if (decoded.nsfw) {
        return {
          state: "failed",
          retryable: false,
          contentRejected: true,
          message: `${name}: fal's safety checker flagged the output (has_nsfw_concepts)`,
        };
      }
      outputs.outputs.push(...decoded.outputs);
      if (i === 0) {
        outputs.durationSec = decoded.durationSec;
        outputs.megapixels = decoded.megapixels;
      }
    }
    return outputs;
  };

  return {
    name,
    protocol: "fal",
    isDirectDownloadHost: (url) => api.isDirectDownloadHost(url),

    async submitImage(req: ImageRequest, signal?: AbortSignal) {
      return submitCall(mapped(() => imageCall(req, overrides)), signal);
    },

    async submitVideo(req: VideoRequest, signal?: AbortSignal) {
      return submitCall(mapped(() => videoCall(req, overrides)), signal);
    },

    async poll(handle: UpstreamHandle, signal?: AbortSignal): Promise<UpstreamJobState> {
      const refs = refsOf(handle);
      const statuses = await Promise.all(refs.map((ref) => requestStatus(api, ref, signal)));
      for (const [i, status] of statuses.entries()) {
        if (status.status === "COMPLETED" && status.error !== null) return failedFromStatus(status, refs[i], signal);
      }
      if (statuses.every((s) => s.status === "COMPLETED")) {
        const answers = await Promise.all(refs.map((ref) => requestResult(api, ref, signal)));
        return succeededOrFailed(answers);
      }
      if (statuses.some((s) => s.status !== "IN_QUEUE")) return { state: "running", progress: null };
      let position: number | null = 0;
      for (const s of statuses) {
        if (s.status !== "IN_QUEUE" || s.position === null || position === null) position = null;
        else position = Math.max(position, s.position);
      }
      return { state: "queued", position };
    },

    async cancel(handle: UpstreamHandle, signal?: AbortSignal): Promise<void> {
      const refs = refsOf(handle);
      const results = await Promise.allSettled(refs.map((ref) => cancelRequest(api, ref, signal)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed !== undefined) throw failed.reason;
    },

    close: () => api.close(),
  };
}
