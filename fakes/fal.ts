/**
 * A loopback fake of fal's queue (fal-ai/fal-js `libs/client/src/queue.ts`), for contract tests and the
 * `fake-upstreams` script: it answers in fal's real shapes, serves real media, validates each endpoint's
 * input as fal does, and misbehaves on request. The official `@fal-ai/client` accepts it
 * (test/upstreams/fal/official-client.test.ts).
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /{endpoint_id}` (JSON input) | 200 `{status: "IN_QUEUE", request_id, response_url, status_url, cancel_url, queue_position}`; 404 `{detail}` for an endpoint it does not serve |
 * | `GET /{owner}/{alias}/requests/{id}/status[?logs=1]` | 202 `IN_QUEUE` + `queue_position`, 202 `IN_PROGRESS` + `logs`, 200 `COMPLETED` + `logs`, `metrics` (+ `error`, `error_type` when it failed) |
 * | `GET /{owner}/{alias}/requests/{id}` | 200 the output, header `x-fal-request-id`; 400 while not completed (*unverified*); the failure's status and body when it failed (422 `{detail: [...]}` for an input error) |
 * | `PUT /{owner}/{alias}/requests/{id}/cancel` | 202 `{status: "CANCELLATION_REQUESTED"}`; 400 `{status: "ALREADY_COMPLETED"}` |
 * | `GET /files/{id}/{name}` (no key: fal's media hosts are public) | the PNG, SVG or MP4 bytes |
 * The follow-up URLs drop the endpoint's sub-path (`fal-ai/flux-pro/v1.1-ultra` -> `fal-ai/flux-pro`), as
 * fal's do. Status codes 202/200 of the status call: fal-ai/fal `projects/fal/src/fal/apps.py`.
 *
 * Every call but a file download needs `Authorization: Key <key>` (the configured `apiKey`, or any
 * non-empty key when none is configured); otherwise 401 `{detail}`. A request lives `queueMs` in the
 * queue, then `runMs` in progress (timers, no background work). Outputs: `{images: [{url, width,
 * height, content_type, file_name, file_size}]}` (+ `seed`, `has_nsfw_concepts` for FLUX endpoints)
 * rendered by the simulator (PNG, or SVG for the `text-to-vector` endpoints) at the requested
 * `image_size` / `aspect_ratio`, `num_images` of them; or `{video: {url, content_type, file_name,
 * file_size}}`, an H.264 MP4 of the requested `duration` (`"5"` or `"6s"`), portrait for a `9:16`
 * `aspect_ratio`, with sound when `generate_audio` is true.
 *
 * ## Endpoints and their inputs (the rules this fake follows)
 * Only the endpoints of {@link FAL_FAKE_ENDPOINTS} are served: the default endpoint ids of the gateway's
 * fal table (upstreams.md "Default upstream ids"), both variants. Each input model is that of the
 * endpoint in fal-ai/fal-js `libs/client/src/types/endpoints.ts` (commit 381105e, 2026-08-02, the
 * generated `EndpointTypeMap`; the npm package `@fal-ai/client` 1.10.1 ships an older copy as
 * `src/types/endpoints.d.ts`, which lacks Seedance 2.0 and still lists `fal-ai/veo3`): required fields,
 * field types and every enum. Numeric ranges and string lengths, which those types do not carry, come
 * from fal's OpenAPI schemas as fal-js generated them into `libs/client/src/types/{image,video}/zod.gen.ts`
 * (commit 5324132, 2026-02-03): Kling `prompt` <= 2500 characters and `cfg_scale` 0..1, Veo `prompt`
 * <= 20000, Hailuo-02 `prompt` <= 2000, Recraft v3 `prompt` <= 1000, `image_size` sides <= 14142,
 * `num_images` 1..4, Kontext `guidance_scale` 1..20, `strength` and `image_prompt_strength` 0..1,
 * `RGBColor` channels 0..255. Validation is pydantic's (fakes/input-schema.ts): unknown fields are
 * ignored, so a misspelt field shows as the real one `missing`.
 *
 * An endpoint id not in the table, or one listed in the `retired` option, answers the submit with 404
 * `{detail: "Application '<owner>/<alias>' not found"}`, or `{detail: "Path /<sub-path> not found"}` for
 * a sub-path when other endpoints of that app are served (the status is what fal answers for an id it does not
 * serve; the first wording is *unverified*, the second is the app's own, fal-ai/fal
 * `projects/fal/src/fal/api/api.py`). A real fal may accept an unknown sub-path of a live app into its
 * queue and answer that 404 only at the result; the fake answers every id it does not serve at the
 * submit.
 *
 * ## When an input fails validation
 * fal's queue does not know the app's input model: `queue.fal.run` accepts any JSON object, the runner
 * refuses it, and the request ends `COMPLETED`; the result then answers 422 `{detail: [{loc, msg, type,
 * url, input, ctx}]}` (fal's model-error shape, docs.fal.ai/errors; fal-ai/fal `apps.py`: "A completed
 * request may still have failed, in which case `error` describes it"). Which fields the COMPLETED status
 * carries for such a failure no SDK shows, so the fake offers each variant (option `inputErrors`, or a
 * marker `input-errors-<mode>`, which must come in the `x-fal-fake` header or the `markers` option when
 * the prompt itself is missing):
 * | mode | submit | status | result |
 * |---|---|---|---|
 * | `result` (default) | 200 | `COMPLETED`, no `error` | 422 `{detail}` |
 * | `status` | 200 | `COMPLETED`, `error` (the first `msg`), `error_type` (the first `type`) | 422 `{detail}` |
 * | `status-untyped` | 200 | `COMPLETED`, `error` only | 422 `{detail}` |
 * | `submit` | 422 `{detail}` at once (as fal's synchronous `fal.run` does) | - | - |
 *
 * ## Misbehaviour markers
 * In the prompt as `[fake:NAME]`, in a header `x-fal-fake: NAME[,NAME...]` on the submit, or for every
 * submit with the `markers` option:
 * | marker | effect |
 * |---|---|
 * | `429` | the submit answers 429 `{detail}` |
 * | `429-after-first` | the first submit with this exact prompt is accepted, every later one answers 429 (a fan-out failing half-way) |
 * | `500` | the submit answers 500 `{detail, error_type: "internal_error"}` + `x-fal-error-type` |
 * | `422` | the submit answers 422 `{detail: [{loc, msg, type, url, ctx}]}` (a validation error) |
 * | `input-errors-result`, `-status`, `-status-untyped`, `-submit` | how an input that fails validation is answered (see above) |
 * | `malformed` | the submit answers 200 with an HTML page |
 * | `hang` | the submit is never answered (until `close()`) |
 * | `echo-key` | the submit answers 401 with the caller's key echoed in `detail` (redaction tests) |
 * | `foreign-urls` | the follow-up URLs point at `https://foreign.example` |
 * | `slow` | the request runs `slowMs` instead of `runMs` |
 * | `stuck` | the request stays `IN_PROGRESS` forever |
 * | `moderation` | completes, and the result answers 422 `content_policy_violation` (docs.fal.ai/errors shape) |
 * | `failed-completed` | completes with `error: "Runner disconnected"`, `error_type: "runner_disconnected"`; the result answers 503 |
 * | `failed-untyped` | completes with `error: "Internal Server Error"` and no `error_type`; the result answers 500 `{detail}` |
 * | `nsfw` | an image output with `has_nsfw_concepts: [true, ...]` |
 * | `status-500` | every status call answers 500 `{detail, error_type}` |
 * | `result-502` | the result answers 502 with an ingress HTML page (no fal body) |
 *
 * `requests` records every request in order: `method`, `path` (with query), `headers` (lower-case;
 * `authorization` keeps only its scheme: `Key [redacted]`) and the parsed JSON `body` (or null).
 */
import { randomUUID, createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isJsonObject as isObject, markersOf, recordAuthorizationScheme, sendJson as json, startLoopbackFake } from "./loopback.ts";
import type { LoopbackFake, LoopbackFakeCall, LoopbackFakeRequest } from "./loopback.ts";
import { literalLabel, rule, validateInput } from "./input-schema.ts";
import type { FieldRule, InputSchema, ValidationItem } from "./input-schema.ts";
import { renderPngAsync } from "../src/upstreams/simulator/images/png.ts";
import { renderSvg } from "../src/upstreams/simulator/images/svg.ts";
import { fitRenderSize } from "../src/upstreams/simulator/images/size.ts";
import { renderMp4 } from "../src/upstreams/simulator/video.ts";

/** How an input that fails validation is answered (see the module comment). */
export type FalInputErrorMode = "result" | "status" | "status-untyped" | "submit";

const INPUT_ERROR_MODES: readonly FalInputErrorMode[] = ["result", "status", "status-untyped", "submit"];

/** Options of {@link startFalFake}. */
export interface FalFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty `Key` value. */
  apiKey?: string;
  /** Time in the queue, ms (default 100). */
  queueMs?: number;
  /** Time in progress, ms (default 300). */
  runMs?: number;
  /** Time in progress with `[fake:slow]`, ms (default 10 000). */
  slowMs?: number;
  /**
   * Markers applied to every submit, as if each prompt carried them (`["500"]`: a fal that fails every
   * job; the `fake-upstreams` script reads them from `FAKE_FAL_MARKERS`). Default none.
   */
  markers?: readonly string[];
  /**
   * Endpoint ids answered as fal answers one it does not serve (404 on submit), e.g.
   * `["fal-ai/veo3.1/fast"]`: a model fal removed (the `fake-upstreams` script reads `FAKE_FAL_RETIRED`).
   */
  retired?: readonly string[];
  /** How an input that fails validation is answered (default `result`: accepted, then a 422 result). */
  inputErrors?: FalInputErrorMode;
}

/** One recorded request (see the module comment). */
export type FalFakeRequest = LoopbackFakeRequest;

/**
 * A running fake: `url` (use it as the source's base URL), `requests` (every request, in order),
 * `submits()` (the `POST`s), `reset()` (forgets the requests; the array stays the same object) and
 * `close()` (stops listening and drops every connection, held `hang` requests included).
 */
export type FalFake = LoopbackFake;

/** What an endpoint makes: images (PNG), vector images (SVG) or a video (MP4). */
export type FalFakeOutput = "image" | "vector" | "video";

/** One endpoint the fake serves: its input model and what it makes. */
export interface FalFakeEndpoint {
  input: InputSchema;
  output: FalFakeOutput;
}

// ---- input models (fal-js endpoints.ts and zod.gen.ts, see the module comment) ----------------------

const IMAGE_SIZE_PRESETS = ["square_hd", "square", "portrait_4_3", "portrait_16_9", "landscape_4_3", "landscape_16_9"] as const;

/** fal's `ImageSize` model: `{width?, height?}`, integers up to 14142. */
const IMAGE_SIZE: FieldRule = { kind: "model", label: "ImageSize", fields: { width: rule.int({ le: 14142 }), height: rule.int({ le: 14142 }) } };

/** `image_size: ImageSize | <preset>` (the union of the SDK types), with `auto` where the endpoint has it. */
function imageSizeRule(extra: readonly string[] = []): FieldRule {
  const presets = [...extra, ...IMAGE_SIZE_PRESETS];
  return { kind: "union", members: [{ label: "ImageSize", rule: IMAGE_SIZE }, { label: literalLabel(presets), rule: rule.literal(presets) }] };
}

const RGB_COLOR: FieldRule = {
  kind: "model",
  label: "RGBColor",
  fields: { r: rule.int({ ge: 0, le: 255 }), g: rule.int({ ge: 0, le: 255 }), b: rule.int({ ge: 0, le: 255 }) },
};
const OUTPUT_FORMAT = rule.literal(["jpeg", "png"]);
const SAFETY_1_TO_5 = rule.literal(["1", "2", "3", "4", "5"]);
const SAFETY_1_TO_6 = rule.literal(["1", "2", "3", "4", "5", "6"]);
const FLUX_ASPECTS = ["21:9", "16:9", "4:3", "3:2", "1:1", "2:3", "3:4", "9:16", "9:21"];
const seconds = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

const kling25Text: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string({ maxLength: 2500 }),
    aspect_ratio: rule.literal(["16:9", "9:16", "1:1"]),
    duration: rule.literal(["5", "10"]),
    negative_prompt: rule.string({ maxLength: 2500 }),
    cfg_scale: rule.number({ ge: 0, le: 1 }),
  },
};
const kling25Image: InputSchema = {
  required: ["prompt", "image_url"],
  fields: {
    prompt: rule.string({ maxLength: 2500 }),
    duration: rule.literal(["5", "10"]),
    negative_prompt: rule.string({ maxLength: 2500 }),
    cfg_scale: rule.number({ ge: 0, le: 1 }),
    image_url: rule.string(),
    tail_image_url: rule.string(),
  },
};
/** Kling v3: `prompt` or `multi_prompt`, never both (the types' own words). */
const promptOrMultiPrompt = (input: Readonly<Record<string, unknown>>): string | null =>
  (input.prompt === undefined) === (input.multi_prompt === undefined) ? "Either prompt or multi_prompt must be provided, but not both" : null;
const kling3Common: Record<string, FieldRule> = {
  prompt: rule.string({ maxLength: 2500 }),
  multi_prompt: rule.list({ kind: "model", label: "KlingV3MultiPromptElement", fields: { prompt: rule.string(), duration: rule.literal(seconds(1, 15)) } }),
  cfg_scale: rule.number(),
  duration: rule.literal(seconds(3, 15)),
  generate_audio: rule.bool(),
  negative_prompt: rule.string({ maxLength: 2500 }),
  shot_type: rule.literal(["customize", "intelligent"]),
};
const kling3Text: InputSchema = {
  required: [],
  fields: { ...kling3Common, aspect_ratio: rule.literal(["16:9", "9:16", "1:1"]) },
  checks: [promptOrMultiPrompt],
};
const kling3Image: InputSchema = {
  required: ["start_image_url"],
  fields: { ...kling3Common, start_image_url: rule.string(), end_image_url: rule.string(), elements: rule.list() },
  checks: [promptOrMultiPrompt],
};
function seedance(resolutions: readonly string[], image: boolean): InputSchema {
  const fields: Record<string, FieldRule> = {
    prompt: rule.string(),
    aspect_ratio: rule.literal(["auto", "21:9", "16:9", "4:3", "1:1", "3:4", "9:16"]),
    bitrate_mode: rule.literal(["standard", "high"]),
    duration: rule.literal(["auto", ...seconds(4, 15)]),
    end_user_id: rule.string(),
    generate_audio: rule.bool(),
    resolution: rule.literal(resolutions),
  };
  if (image) Object.assign(fields, { image_url: rule.string(), end_image_url: rule.string() });
  return { required: image ? ["prompt", "image_url"] : ["prompt"], fields };
}
const hailuoStandardText: InputSchema = {
  required: ["prompt"],
  fields: { prompt: rule.string({ minLength: 1, maxLength: 2000 }), duration: rule.literal(["6", "10"]), prompt_optimizer: rule.bool() },
};
const hailuoStandardImage: InputSchema = {
  required: ["prompt", "image_url"],
  fields: {
    prompt: rule.string({ maxLength: 2000 }),
    duration: rule.literal(["6", "10"]),
    prompt_optimizer: rule.bool(),
    resolution: rule.literal(["512P", "768P"]),
    image_url: rule.string(),
    end_image_url: rule.string(),
  },
};
const hailuoProText: InputSchema = { required: ["prompt"], fields: { prompt: rule.string({ minLength: 1, maxLength: 2000 }), prompt_optimizer: rule.bool() } };
const hailuoProImage: InputSchema = {
  required: ["prompt", "image_url"],
  fields: { prompt: rule.string({ maxLength: 2000 }), prompt_optimizer: rule.bool(), image_url: rule.string(), end_image_url: rule.string() },
};
function veo31(image: boolean): InputSchema {
  const fields: Record<string, FieldRule> = {
    prompt: rule.string({ maxLength: 20_000 }),
    duration: rule.literal(["4s", "6s", "8s"]),
    aspect_ratio: rule.literal(image ? ["auto", "16:9", "9:16"] : ["16:9", "9:16"]),
    generate_audio: rule.bool(),
    auto_fix: rule.bool(),
    resolution: rule.literal(["720p", "1080p", "4k"]),
    safety_tolerance: SAFETY_1_TO_6,
    seed: rule.int(),
    negative_prompt: rule.string(),
  };
  if (image) fields.image_url = rule.string();
  return { required: image ? ["prompt", "image_url"] : ["prompt"], fields };
}
const recraftV4: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string(),
    image_size: imageSizeRule(),
    background_color: RGB_COLOR,
    colors: rule.list(RGB_COLOR),
    enable_safety_checker: rule.bool(),
  },
};
const recraftV3Text: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string({ minLength: 1, maxLength: 1000 }),
    image_size: imageSizeRule(),
    colors: rule.list(RGB_COLOR),
    enable_safety_checker: rule.bool(),
    // The style enum has dozens of values; the fake checks its type only.
    style: rule.string(),
    style_id: rule.string(),
  },
};
const recraftV3Image: InputSchema = {
  required: ["prompt", "image_url"],
  fields: {
    prompt: rule.string({ maxLength: 1000 }),
    image_url: rule.string(),
    strength: rule.number({ ge: 0, le: 1 }),
    colors: rule.list(RGB_COLOR),
    negative_prompt: rule.string({ maxLength: 1000 }),
    style: rule.string(),
    style_id: rule.string(),
    sync_mode: rule.bool(),
  },
};
const flux2Pro: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string(),
    image_size: imageSizeRule(),
    output_format: OUTPUT_FORMAT,
    sync_mode: rule.bool(),
    safety_tolerance: SAFETY_1_TO_5,
    enable_safety_checker: rule.bool(),
    seed: rule.int(),
  },
};
const flux2ProEdit: InputSchema = {
  required: ["prompt", "image_urls"],
  fields: { ...flux2Pro.fields, image_size: imageSizeRule(["auto"]), image_urls: rule.list(rule.string()) },
};
const kontextText: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string(),
    num_images: rule.int({ ge: 1, le: 4 }),
    aspect_ratio: rule.literal(FLUX_ASPECTS),
    output_format: OUTPUT_FORMAT,
    sync_mode: rule.bool(),
    safety_tolerance: SAFETY_1_TO_6,
    guidance_scale: rule.number({ ge: 1, le: 20 }),
    seed: rule.int(),
    enhance_prompt: rule.bool(),
  },
};
const kontextImage: InputSchema = { required: ["prompt", "image_url"], fields: { ...kontextText.fields, image_url: rule.string() } };
const ultra: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string(),
    num_images: rule.int({ ge: 1, le: 4 }),
    // `"21:9" | ... | string`: any string passes the type.
    aspect_ratio: rule.string(),
    enhance_prompt: rule.bool(),
    output_format: OUTPUT_FORMAT,
    image_url: rule.string(),
    sync_mode: rule.bool(),
    safety_tolerance: SAFETY_1_TO_6,
    image_prompt_strength: rule.number({ ge: 0, le: 1 }),
    seed: rule.int(),
    enable_safety_checker: rule.bool(),
    raw: rule.bool(),
  },
};

/**
 * Every endpoint the fake serves, by endpoint id: the gateway's default fal table (both variants of
 * each model), with each endpoint's input model. Frozen.
 */
export const FAL_FAKE_ENDPOINTS: Readonly<Record<string, FalFakeEndpoint>> = Object.freeze({
  "fal-ai/kling-video/v2.5-turbo/pro/text-to-video": { input: kling25Text, output: "video" },
  "fal-ai/kling-video/v2.5-turbo/pro/image-to-video": { input: kling25Image, output: "video" },
  "fal-ai/kling-video/v3/pro/text-to-video": { input: kling3Text, output: "video" },
  "fal-ai/kling-video/v3/pro/image-to-video": { input: kling3Image, output: "video" },
  "bytedance/seedance-2.0/text-to-video": { input: seedance(["480p", "720p", "1080p", "4k"], false), output: "video" },
  "bytedance/seedance-2.0/image-to-video": { input: seedance(["480p", "720p", "1080p", "4k"], true), output: "video" },
  "bytedance/seedance-2.0/fast/text-to-video": { input: seedance(["480p", "720p"], false), output: "video" },
  "bytedance/seedance-2.0/fast/image-to-video": { input: seedance(["480p", "720p"], true), output: "video" },
  "fal-ai/minimax/hailuo-02/standard/text-to-video": { input: hailuoStandardText, output: "video" },
  "fal-ai/minimax/hailuo-02/standard/image-to-video": { input: hailuoStandardImage, output: "video" },
  "fal-ai/minimax/hailuo-02/pro/text-to-video": { input: hailuoProText, output: "video" },
  "fal-ai/minimax/hailuo-02/pro/image-to-video": { input: hailuoProImage, output: "video" },
  "fal-ai/veo3.1": { input: veo31(false), output: "video" },
  "fal-ai/veo3.1/image-to-video": { input: veo31(true), output: "video" },
  "fal-ai/veo3.1/fast": { input: veo31(false), output: "video" },
  "fal-ai/veo3.1/fast/image-to-video": { input: veo31(true), output: "video" },
  "fal-ai/recraft/v4/text-to-image": { input: recraftV4, output: "image" },
  "fal-ai/recraft/v4/pro/text-to-image": { input: recraftV4, output: "image" },
  "fal-ai/recraft/v4/text-to-vector": { input: recraftV4, output: "vector" },
  "fal-ai/recraft/v4/pro/text-to-vector": { input: recraftV4, output: "vector" },
  "fal-ai/recraft/v3/text-to-image": { input: recraftV3Text, output: "image" },
  "fal-ai/recraft/v3/image-to-image": { input: recraftV3Image, output: "image" },
  "fal-ai/flux-2-pro": { input: flux2Pro, output: "image" },
  "fal-ai/flux-2-pro/edit": { input: flux2ProEdit, output: "image" },
  "fal-ai/flux-pro/kontext/text-to-image": { input: kontextText, output: "image" },
  "fal-ai/flux-pro/kontext": { input: kontextImage, output: "image" },
  "fal-ai/flux-pro/v1.1-ultra": { input: ultra, output: "image" },
} satisfies Record<string, FalFakeEndpoint>);

/** The 422 body of a failed validation: fal's model-error items (`url` to fal's error page). */
export function falValidationBody(items: readonly ValidationItem[]): { detail: Record<string, unknown>[] } {
  return { detail: items.map((item) => ({ ...item, url: `https://docs.fal.ai/errors#${item.type}` })) };
}

// ---- the server ----------------------------------------------------------------------------------------

interface FakeFile {
  name: string;
  contentType: string;
  render: () => Promise<Uint8Array>;
  bytes: Uint8Array | null;
}

interface FakeJob {
  id: string;
  endpointId: string;
  appId: string;
  output: FalFakeOutput;
  input: Record<string, unknown>;
  /** The validation failures of the input (empty for a valid one) and how they are answered. */
  inputErrors: ValidationItem[];
  inputErrorMode: FalInputErrorMode;
  markers: ReadonlySet<string>;
  createdAt: number;
  queueMs: number;
  runMs: number;
  cancelled: boolean;
  result: Record<string, unknown> | null;
}

/** Starts the fake on loopback. */
export async function startFalFake(options: FalFakeOptions = {}): Promise<FalFake> {
  const queueMs = options.queueMs ?? 100;
  const runMs = options.runMs ?? 300;
  const slowMs = options.slowMs ?? 10_000;
  const retired = new Set(options.retired ?? []);
  const jobs = new Map<string, FakeJob>();
  const files = new Map<string, FakeFile>();
  const promptsSeen = new Set<string>();
  let base = "";

  const phase = (job: FakeJob, now: number): "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED" => {
    if (job.cancelled) return "COMPLETED";
    const t = now - job.createdAt;
    if (t < job.queueMs) return "IN_QUEUE";
    if (t < job.queueMs + job.runMs) return "IN_PROGRESS";
    return "COMPLETED";
  };

  const urlsOf = (job: FakeJob): Record<string, string> => {
    const root = job.markers.has("foreign-urls") ? "https://foreign.example" : base;
    const r = `${root}/${job.appId}/requests/${job.id}`;
    return { request_id: job.id, response_url: r, status_url: `${r}/status`, cancel_url: `${r}/cancel` };
  };

  const statusBody = (job: FakeJob, now: number, logs: boolean): { code: number; body: Record<string, unknown> } => {
    const p = phase(job, now);
    const common = { ...urlsOf(job) };
    if (p === "IN_QUEUE") {
      let position = 0;
      for (const other of jobs.values()) {
        if (other !== job && other.createdAt < job.createdAt && phase(other, now) === "IN_QUEUE") position++;
      }
      return { code: 202, body: { status: "IN_QUEUE", queue_position: position, ...common } };
    }
    const logLines = logs ? [{ message: "fake: generating", level: "INFO", source: "USER", timestamp: new Date(job.createdAt).toISOString() }] : null;
    if (p === "IN_PROGRESS") return { code: 202, body: { status: "IN_PROGRESS", logs: logLines, ...common } };
    const body: Record<string, unknown> = { status: "COMPLETED", logs: logLines, metrics: { inference_time: Math.max(0, Math.min(now - job.createdAt - job.queueMs, job.runMs)) / 1000 }, ...common };
    if (job.cancelled) {
      body.error = "Request was cancelled";
      body.error_type = "client_cancelled";
    } else if (job.inputErrors.length > 0 && job.inputErrorMode !== "result") {
      body.error = job.inputErrors[0].msg;
      if (job.inputErrorMode === "status") body.error_type = job.inputErrors[0].type;
    } else if (job.markers.has("failed-completed")) {
      body.error = "Runner disconnected";
      body.error_type = "runner_disconnected";
    } else if (job.markers.has("failed-untyped")) {
      body.error = "Internal Server Error";
    }
    return { code: 200, body };
  };

  const addFile = (name: string, contentType: string, render: () => Promise<Uint8Array>): string => {
    const id = randomUUID();
    files.set(id, { name, contentType, render, bytes: null });
    return id;
  };

  const fileEntry = async (id: string): Promise<Record<string, unknown>> => {
    const file = files.get(id) as FakeFile;
    file.bytes ??= await file.render();
    return { url: `${base}/files/${id}/${file.name}`, content_type: file.contentType, file_name: file.name, file_size: file.bytes.byteLength };
  };

  const buildOutput = async (job: FakeJob): Promise<Record<string, unknown>> => {
    const { input, endpointId } = job;
    const prompt = typeof input.prompt === "string" ? input.prompt : "";
    if (job.output === "video") {
      const durationSec = videoDuration(input.duration, endpointId);
      const portrait = input.aspect_ratio === "9:16";
      const id = addFile("output.mp4", "video/mp4", async () =>
        (await renderMp4({ prompt, durationSec, orientation: portrait ? "portrait" : "landscape", audio: input.generate_audio === true, seed: endpointId })).body,
      );
      const out: Record<string, unknown> = { video: await fileEntry(id) };
      if (endpointId.startsWith("bytedance/seedance")) out.seed = seedOf(job.id);
      return out;
    }
    // Validated already: an integer 1..4 where the endpoint has the field (pydantic also takes "2").
    const count = input.num_images === undefined ? 1 : Number(input.num_images);
    const { width, height } = imageSize(input);
    const images: Record<string, unknown>[] = [];
    for (let index = 0; index < count; index++) {
      const opts = { prompt, width, height, seed: endpointId, index };
      const id =
        job.output === "vector"
          ? addFile("image.svg", "image/svg+xml", async () => new TextEncoder().encode(renderSvg(opts)))
          : addFile("image.png", "image/png", () => renderPngAsync(opts));
      images.push({ ...(await fileEntry(id)), width, height });
    }
    const out: Record<string, unknown> = { images };
    if (endpointId.includes("flux")) {
      out.seed = seedOf(job.id);
      out.has_nsfw_concepts = images.map(() => job.markers.has("nsfw"));
      out.prompt = prompt;
    }
    return out;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, { url, method, body }: LoopbackFakeCall): Promise<void> => {
    const segments = url.pathname.split("/").filter((s) => s !== "").map(safeDecode);

    if (segments[0] === "files" && method === "GET") {
      const file = files.get(segments[1] ?? "");
      if (file === undefined) return json(res, 404, { detail: "Not Found" });
      file.bytes ??= await file.render();
      res.writeHead(200, { "content-type": file.contentType, "content-length": String(file.bytes.byteLength) });
      res.end(file.bytes);
      return;
    }

    const auth = req.headers.authorization ?? "";
    const key = /^Key\s+(\S.*)$/.exec(auth)?.[1] ?? "";
    const headerMarkers = String(req.headers["x-fal-fake"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
    const prompt = isObject(body) && typeof body.prompt === "string" ? body.prompt : "";
    const markers = markersOf(prompt, options.markers, headerMarkers);
    if (method === "POST" && markers.has("echo-key")) {
      return json(res, 401, { detail: `Invalid key: ${key === "" ? auth : key}` });
    }
    if (key === "") return json(res, 401, { detail: "Authentication is required to access this application." });
    if (options.apiKey !== undefined && key !== options.apiKey) return json(res, 401, { detail: "No user found for Key ID and Secret" });

    const r = segments.indexOf("requests");
    if (r >= 2 && segments.length >= r + 2) {
      const appId = segments.slice(0, r).join("/");
      const job = jobs.get(segments[r + 1]);
      if (job === undefined || job.appId !== appId) return json(res, 404, { detail: "Request not found" });
      const action = segments.slice(r + 2).join("/");
      const now = Date.now();
      if (method === "GET" && action === "status") {
        if (job.markers.has("status-500")) return json(res, 500, { detail: "Internal server error", error_type: "internal_error" }, { "x-fal-error-type": "internal_error" });
        const { code, body: status } = statusBody(job, now, url.searchParams.get("logs") === "1");
        return json(res, code, status);
      }
      if (method === "GET" && action === "") return result(res, job, now);
      if (method === "PUT" && action === "cancel") {
        if (phase(job, now) === "COMPLETED") return json(res, 400, { status: "ALREADY_COMPLETED" });
        job.cancelled = true;
        return json(res, 202, { status: "CANCELLATION_REQUESTED" });
      }
      return json(res, 405, { detail: "Method Not Allowed" });
    }

    if (method !== "POST" || segments.length < 2) return json(res, 404, { detail: "Not Found" });
    const endpointId = segments.join("/");
    const endpoint = Object.hasOwn(FAL_FAKE_ENDPOINTS, endpointId) && !retired.has(endpointId) ? FAL_FAKE_ENDPOINTS[endpointId] : undefined;
    if (endpoint === undefined) return json(res, 404, { detail: notFoundDetail(segments) });
    if (body === undefined || !isObject(body)) {
      return json(res, 422, falValidationBody([{ loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", type: "model_attributes_type", input: body ?? null }]));
    }
    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (markers.has("429")) return json(res, 429, { detail: "Too many requests" });
    if (markers.has("429-after-first")) {
      if (promptsSeen.has(prompt)) return json(res, 429, { detail: "Too many requests" });
      promptsSeen.add(prompt);
    }
    if (markers.has("500")) return json(res, 500, { detail: "Internal server error", error_type: "internal_error" }, { "x-fal-error-type": "internal_error" });
    if (markers.has("422")) {
      return json(res, 422, {
        detail: [
          {
            loc: ["body", "prompt"],
            msg: "String should have at most 2500 characters",
            type: "string_too_long",
            url: "https://docs.fal.ai/errors#string_too_long",
            ctx: { max_length: 2500 },
          },
        ],
      });
    }
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>maintenance</body></html>");
      return;
    }
    const inputErrors = validateInput(endpoint.input, body);
    const inputErrorMode = INPUT_ERROR_MODES.find((m) => markers.has(`input-errors-${m}`)) ?? options.inputErrors ?? "result";
    if (inputErrors.length > 0 && inputErrorMode === "submit") return json(res, 422, falValidationBody(inputErrors));
    const job: FakeJob = {
      id: randomUUID(),
      endpointId,
      appId: appIdOf(segments),
      output: endpoint.output,
      input: body,
      inputErrors,
      inputErrorMode,
      markers,
      createdAt: Date.now(),
      queueMs,
      runMs: markers.has("stuck") ? Number.POSITIVE_INFINITY : markers.has("slow") ? slowMs : runMs,
      cancelled: false,
      result: null,
    };
    jobs.set(job.id, job);
    const { body: status } = statusBody(job, job.createdAt, false);
    return json(res, 200, { ...status, status: "IN_QUEUE", queue_position: status.queue_position ?? 0 });
  };

  const result = async (res: ServerResponse, job: FakeJob, now: number): Promise<void> => {
    if (phase(job, now) !== "COMPLETED") return json(res, 400, { detail: "Request is still in progress" });
    const headers = { "x-fal-request-id": job.id };
    if (job.cancelled) return json(res, 499, { detail: "Request was cancelled", error_type: "client_cancelled" }, headers);
    if (job.inputErrors.length > 0) return json(res, 422, falValidationBody(job.inputErrors), headers);
    if (job.markers.has("failed-completed")) {
      return json(res, 503, { detail: "Runner disconnected", error_type: "runner_disconnected" }, { ...headers, "x-fal-error-type": "runner_disconnected" });
    }
    if (job.markers.has("failed-untyped")) return json(res, 500, { detail: "Internal Server Error" }, headers);
    if (job.markers.has("result-502")) {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>");
      return;
    }
    if (job.markers.has("moderation")) {
      return json(res, 422, {
        detail: [
          {
            loc: ["body", "prompt"],
            msg: "The content was flagged by a content checker.",
            type: "content_policy_violation",
            url: "https://docs.fal.ai/errors#content_policy_violation",
            input: typeof job.input.prompt === "string" ? job.input.prompt : "",
          },
        ],
      }, headers);
    }
    job.result ??= await buildOutput(job);
    return json(res, 200, job.result, headers);
  };

  const fake = await startLoopbackFake({ port: options.port, host: options.host, recordHeader: recordAuthorizationScheme }, handle);
  base = fake.url;
  return fake;
}

/**
 * The `detail` of the 404 for an endpoint the fake does not serve: `Path /<sub-path> not found` when
 * the app serves other endpoints (fal-ai/fal `api.py`'s wording), else `Application '<app>' not found`.
 */
function notFoundDetail(segments: string[]): string {
  const appId = appIdOf(segments);
  const appLives = Object.keys(FAL_FAKE_ENDPOINTS).some((id) => id === appId || id.startsWith(`${appId}/`));
  const subPath = segments.slice(appId.split("/").length).join("/");
  return appLives && subPath !== "" ? `Path /${subPath} not found` : `Application '${appId}' not found`;
}

/** fal's app id of an endpoint: `owner/alias`, or three parts under `workflows/` and `comfy/`. */
function appIdOf(segments: string[]): string {
  const n = segments[0] === "workflows" || segments[0] === "comfy" ? 3 : 2;
  return segments.slice(0, n).join("/");
}

/** The clip length of a (validated) video input: `"5"`, `"6s"`, else the endpoint's default (Veo 8 s, Hailuo 6 s, 5 s). */
function videoDuration(value: unknown, endpointId: string): number {
  const m = typeof value === "string" ? /^(\d{1,2})s?$/.exec(value) : null;
  if (m !== null) return Number(m[1]);
  if (endpointId.includes("veo")) return 8;
  if (endpointId.includes("hailuo")) return 6;
  return 5;
}

/** fal's `image_size` presets (fal's docs list these sizes). */
const PRESETS: Record<string, [number, number]> = {
  square_hd: [1024, 1024],
  square: [512, 512],
  portrait_4_3: [768, 1024],
  portrait_16_9: [576, 1024],
  landscape_4_3: [1024, 768],
  landscape_16_9: [1024, 576],
};

/** The pixel size of an image input: `image_size` (object or preset), else `aspect_ratio`, else 1024x1024. */
function imageSize(input: Record<string, unknown>): { width: number; height: number } {
  const size = input.image_size;
  let w = 1024;
  let h = 1024;
  if (isObject(size)) {
    // Validated already: integers (pydantic also takes "512"), 512 when left out (fal's default).
    w = size.width === undefined ? 512 : Number(size.width);
    h = size.height === undefined ? 512 : Number(size.height);
  } else if (typeof size === "string" && Object.hasOwn(PRESETS, size)) {
    [w, h] = PRESETS[size];
  } else if (typeof input.aspect_ratio === "string") {
    const m = /^(\d+):(\d+)$/.exec(input.aspect_ratio);
    if (m !== null && Number(m[1]) > 0 && Number(m[2]) > 0) {
      const ratio = Number(m[1]) / Number(m[2]);
      w = Math.round(Math.sqrt(1_000_000 * ratio) / 16) * 16;
      h = Math.round(w / ratio / 16) * 16;
    }
  }
  return fitRenderSize(Math.min(Math.max(w, 16), 2048), Math.min(Math.max(h, 16), 2048)) ?? { width: 1024, height: 1024 };
}

function seedOf(id: string): number {
  return createHash("sha256").update(id).digest().readUInt32BE(0);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
