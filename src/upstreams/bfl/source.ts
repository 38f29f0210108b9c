/**
 * A Black Forest Labs source: {@link VisualJobSource} on BFL's own task API for the imgB family (D25).
 * Built by {@link createBflSource} from one `UPSTREAMS` entry of protocol `bfl`. Image jobs only: BFL
 * makes no video, so `submitVideo` refuses (non-retryable, no request).
 *
 * ## The handle (D28)
 * `submitImage` resolves once BFL accepted the job, with everything a runner needs to resume it by
 * polling: `{source, requestId: <task id>, urls: {polling_url}, facts}`, the polling URL exactly as BFL
 * returned it (host-checked; it names the regional cluster that holds the task). A job of `n` images is
 * `n` tasks (every BFL endpoint makes one image): part `i` >= 1 is stored under `polling_url.i`, and
 * `requestId` lists the ids joined by `,`. `facts` carries what BFL reports only at submit, summed over
 * the parts, each key present only when every part reported it:
 * - `upstream_cost_usd`: `cost` (credits) x {@link BFL_CREDIT_USD}, rounded to the micro-dollar;
 * - `megapixels`: `output_mp`, the megapixels BFL charges for (a 0 counts as not reported).
 * When a later part's submit fails, the error is thrown and the job is not submitted; the parts already
 * accepted cannot be withdrawn (BFL has no cancel call): they finish at BFL and are billed there.
 *
 * ## poll -> UpstreamJobState
 * One `GET polling_url` per part (each host-checked before the key is sent).
 * | BFL says (any part) | state |
 * |---|---|
 * | `Request Moderated`, `Content Moderated` | `failed`, `contentRejected`, not retryable (BFL's reasons in the message) |
 * | `Task not found` | `failed`, not retryable: the task expired or never existed; submitting again could charge twice |
 * | `Error` whose code or text says the input was at fault ({@link isInputError}) | `failed`, not retryable (D35: the next source would refuse it too) |
 * | `Error` with `content_policy_violation` | `failed`, `contentRejected`, not retryable |
 * | any other `Error` (`generation_timeout`, `internal_error`, no code) | `failed`, retryable: BFL's infrastructure failed, the next source may serve the job |
 * | every part `Ready` with `result.sample` | `succeeded`, one `url` output per part in order; `megapixels` and `upstreamCostUsd` from the handle's facts |
 * | `Ready` without an http(s) `result.sample` | `failed`, retryable (BFL misbehaved) |
 * | `Pending` with `progress` on every unfinished part (or some parts `Ready`) | `running`, `progress` the mean over parts (Ready counts 1), else null |
 * | `Pending` without `progress` on every part | `queued`, `position` null (BFL reports none) |
 * | HTTP 404 and other 4xx, a refused URL | throws, not retryable |
 * | HTTP 429, 5xx, network error, timeout, an unknown status | throws, retryable: poll again |
 * The signed `result.sample` URL is valid about 10 minutes: the runner downloads it at once, without
 * the key (it is not the base host: the SSRF-safe fetch takes it). `durationSec` is always null.
 *
 * ## How BFL says an input was at fault (decided here, D35)
 * BFL refuses most bad inputs at the submit (FastAPI's 422, or 400): those throw a non-retryable
 * {@link BflError}, and a 404 there (no such model endpoint) is `modelNotFound`. What BFL finds only
 * while running the task (a reference image it cannot fetch or read) ends the task `Error`. Its answer
 * has `error`, a code, and `message` (black-forest-labs/skills `references/error-handling.md`,
 * "Generation failures": `invalid_image` "Input image couldn't be processed" and
 * `content_policy_violation` are not to be retried, `generation_timeout` and `internal_error` are);
 * BFL's SDK (black-forest-labs/blackforest `_jobs.py`) passes `details` through unparsed. So an `Error`
 * is the input's fault when its code is one of {@link INPUT_ERROR_CODES}, or its text names an input
 * problem (`invalid`, `validation`, `unsupported`, `malformed`, the input image or image prompt, or a
 * failure to download, load, decode, fetch, read or open something); every other `Error` is BFL's.
 *
 * ## cancel
 * A documented no-op that makes no request: BFL's API has no cancel call (its SDK, black-forest-labs/
 * blackforest `src/bfl/_client.py` and `_jobs.py`, offers submit, poll and wait only). A task keeps
 * running at BFL; the gateway simply stops polling it.
 */
import type { ImageRequest, UpstreamHandle, UpstreamJobState, VisualJobSourceAdapter, VisualJobSourceConfig } from "../types.ts";
import { isRecord } from "../util.ts";
import { BFL_CREDIT_USD, BflError, createBflApi } from "./api.ts";
import { BflMappingError, checkModelOverrides, imageCall } from "./models.ts";
import type { BflCall } from "./models.ts";
import { getResult, submitTask } from "./tasks.ts";
import type { BflModerationStatus, BflSubmitted, BflTaskStatus } from "./tasks.ts";
import { noteUpstreamModel } from "../../observability/tracing.ts";

type Moderated = Extract<BflTaskStatus, { status: BflModerationStatus }>;

/**
 * Configuration of one BFL source (an `UPSTREAMS` entry of protocol `bfl`, D25): the transport fields of
 * keyed-http.ts `KeyedSourceOptions` (`baseUrl` default `https://api.bfl.ai`, the key sent as
 * `x-key: <apiKey>`) and `models`, the `{"<model id>": "<endpoint>", "<model id>/image": "<endpoint>"}`
 * overrides (models.ts).
 */
export type BflSourceConfig = VisualJobSourceConfig;

/** A BFL source. `close()` releases its connection pool. */
export interface BflSource extends VisualJobSourceAdapter {
  readonly protocol: "bfl";
}

/** BFL error codes of a task `Error` that name an input problem (see the module comment). */
export const INPUT_ERROR_CODES: ReadonlySet<string> = new Set([
  "invalid_image",
  "invalid_input",
  "invalid_request",
  "invalid_parameters",
  "validation_error",
  "bad_request",
  "image_too_large",
  "image_too_small",
  "unsupported_image_format",
  "file_too_large",
]);

/** BFL's code of a content-policy refusal in a task `Error` (black-forest-labs/skills `references/error-handling.md`). */
const CONTENT_POLICY_CODE = "content_policy_violation";

const INPUT_ERROR_TEXT =
  /\b(invalid|validation|unsupported|malformed)\b|\binput[ _]?images?\b|\bimage[ _]prompt\b|\b(could not|couldn't|cannot|failed to|unable to) (load|download|decode|fetch|read|open)\b/i;

/** True when a task `Error` says the input was at fault: its code, else its text (see the module comment). */
export function isInputError(error: { code: string | null; message: string | null }): boolean {
  if (error.code !== null && INPUT_ERROR_CODES.has(error.code.toLowerCase())) return true;
  return error.message !== null && INPUT_ERROR_TEXT.test(error.message);
}

/** Handle fact keys (types.ts `UpstreamHandle.facts`). */
const COST_FACT = "upstream_cost_usd";
const MEGAPIXELS_FACT = "megapixels";

/** The `urls` key of part `i` of a handle. */
function pollingKey(i: number): string {
  return i === 0 ? "polling_url" : `polling_url.${i}`;
}

/**
 * Creates a BFL source.
 * @throws RangeError for a bad configuration (name, base URL, key, timeout, trusted host, `models` entry).
 */
export function createBflSource(config: BflSourceConfig): BflSource {
  if (typeof config.name !== "string" || config.name === "") throw new RangeError("name must be a non-empty string");
  const overrides = checkModelOverrides(config.models);
  const api = createBflApi(config);
  const { name } = config;

  const mapped = (req: ImageRequest): BflCall => {
    try {
      return imageCall(req, overrides);
    } catch (err) {
      if (err instanceof BflMappingError) throw new BflError(`${name}: ${err.message}`, { retryable: false, kind: "unsupported" });
      throw err;
    }
  };

  const handleOf = (parts: BflSubmitted[]): UpstreamHandle => {
    const urls: Record<string, string> = {};
    parts.forEach((part, i) => {
      urls[pollingKey(i)] = part.pollingUrl;
    });
    const facts: Record<string, number> = {};
    const credits = sumOrNull(parts.map((p) => p.costCredits));
    if (credits !== null) facts[COST_FACT] = creditsToUsd(credits);
    const megapixels = sumOrNull(parts.map((p) => (p.outputMp === 0 ? null : p.outputMp)));
    if (megapixels !== null) facts[MEGAPIXELS_FACT] = megapixels;
    const handle: UpstreamHandle = { source: name, requestId: parts.map((p) => p.id).join(","), urls };
    if (Object.keys(facts).length > 0) handle.facts = facts;
    return handle;
  };

  const pollingUrlsOf = (handle: UpstreamHandle): string[] => {
    if (handle.source !== name) {
      throw new BflError(`${name}: the handle belongs to source ${JSON.stringify(String(handle.source).slice(0, 60))}`, { retryable: false, kind: "handle" });
    }
    const urls = isRecord(handle.urls) ? (handle.urls as Record<string, unknown>) : {};
    const out: string[] = [];
    for (let i = 0; ; i++) {
      const url = urls[pollingKey(i)];
      if (url === undefined && i > 0) break;
      if (typeof url !== "string") throw new BflError(`${name}: the handle lacks the polling URL of part ${i}`, { retryable: false, kind: "handle" });
      out.push(url);
    }
    return out;
  };

  const failed = (retryable: boolean, contentRejected: boolean, text: string): UpstreamJobState => ({
    state: "failed",
    retryable,
    contentRejected,
    message: api.redact(`${name}: ${text}`),
  });

  const stateOf = (statuses: BflTaskStatus[], handle: UpstreamHandle): UpstreamJobState => {
    const moderated = statuses.find((s): s is Moderated => s.status === "Request Moderated" || s.status === "Content Moderated");
    if (moderated !== undefined) {
      const reasons = moderated.reasons.length === 0 ? "" : `: ${moderated.reasons.join(", ")}`;
      return failed(false, true, `BFL refused the content (${moderated.status})${reasons}`);
    }
    if (statuses.some((s) => s.status === "Task not found")) return failed(false, false, "BFL does not know the task (Task not found)");
    const error = statuses.find((s): s is Extract<BflTaskStatus, { status: "Error" }> => s.status === "Error");
    if (error !== undefined) {
      const text = `the task failed at BFL (Error)${error.message === null ? "" : `: ${error.message}`}`;
      if (error.code !== null && error.code.toLowerCase() === CONTENT_POLICY_CODE) return failed(false, true, text);
      return failed(!isInputError(error), false, text);
    }
    if (statuses.every((s) => s.status === "Ready")) {
      const samples = statuses.map((s) => (s.status === "Ready" ? s.sample : null));
      if (samples.some((s) => s === null)) return failed(true, false, "malformed answer to get_result: Ready without an http(s) result.sample");
      return {
        state: "succeeded",
        outputs: samples.map((url) => ({ kind: "url", url: url as string })),
        durationSec: null,
        megapixels: fact(handle, MEGAPIXELS_FACT),
        upstreamCostUsd: fact(handle, COST_FACT),
      };
    }
    const progress = statuses.map((s) => (s.status === "Ready" ? 1 : s.status === "Pending" ? s.progress : null));
    if (progress.every((p) => p === null)) return { state: "queued", position: null };
    if (progress.some((p) => p === null)) return { state: "running", progress: null };
    return { state: "running", progress: progress.reduce((a: number, b) => a + (b ?? 0), 0) / progress.length };
  };

  return {
    name,
    protocol: "bfl",
    isDirectDownloadHost: (url) => api.isDirectDownloadHost(url),

    async submitImage(req: ImageRequest, signal?: AbortSignal): Promise<UpstreamHandle> {
      const call = mapped(req);
      noteUpstreamModel(call.endpoint);
      const parts: BflSubmitted[] = [];
      // One task after another: a refusal stops the job before more tasks are paid for.
      for (let i = 0; i < call.parts; i++) parts.push(await submitTask(api, call.endpoint, call.input, signal));
      return handleOf(parts);
    },

    async submitVideo(): Promise<UpstreamHandle> {
      throw new BflError(`${name}: BFL makes images only`, { retryable: false, kind: "unsupported" });
    },

    async poll(handle: UpstreamHandle, signal?: AbortSignal): Promise<UpstreamJobState> {
      const urls = pollingUrlsOf(handle);
      // Check every URL before the first request, so a tampered part sends nothing at all.
      for (const url of urls) api.checkUrl(url, "polling_url");
      const statuses = await Promise.all(urls.map((url) => getResult(api, url, signal)));
      return stateOf(statuses, handle);
    },

    async cancel(): Promise<void> {
      // No cancel call at BFL (see the module comment): nothing to send.
    },

    close: () => api.close(),
  };
}

/** Credits to USD, rounded to the micro-dollar (`4.5` credits -> `0.045`, not `0.045000000000000005`). */
export function creditsToUsd(credits: number): number {
  return Math.round(credits * BFL_CREDIT_USD * 1_000_000) / 1_000_000;
}

/** The sum of `values`, or null when any is null. */
function sumOrNull(values: readonly (number | null)[]): number | null {
  let sum = 0;
  for (const v of values) {
    if (v === null) return null;
    sum += v;
  }
  return sum;
}

/** A numeric fact of a stored handle, or null. */
function fact(handle: UpstreamHandle, key: string): number | null {
  const value = isRecord(handle.facts) ? (handle.facts as Record<string, unknown>)[key] : undefined;
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : null;
}
