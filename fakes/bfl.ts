/**
 * A loopback fake of Black Forest Labs' task API, for contract tests and the `fake-upstreams` script: it
 * answers in BFL's real shapes (test/upstreams/bfl/fixtures.ts names the source of each), serves real
 * PNGs, and misbehaves on request.
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/{endpoint}` (JSON input, `x-key`) | 200 `{id, polling_url, cost, input_mp, output_mp}`; `polling_url` is `{fake}/v1/get_result?id={id}`, the form of BFL's regional polling URLs |
 * | `GET /v1/get_result?id=` (`x-key`) | 200 `{id, status, result, progress, details}`: `Pending` (progress null for the first third of the wait, then 0..1), then `Ready` with `result: {sample, prompt, seed}`; an unknown id answers `Task not found` |
 * | `GET /delivery/{id}/sample.png?...` (no key: a signed delivery URL) | the PNG |
 * A task is `Pending` for `pendingMs`, then `Ready` (timers, no background work). The image is rendered by
 * the simulator at `width` x `height` (FLUX.2 endpoints, default 1024 x 1024) or at about 1 MP (Kontext)
 * or 4 MP (Ultra) for `aspect_ratio` (default 1:1, Ultra 16:9), scaled down to 2048 px at most.
 * `output_mp` is that size in units of 2^20 pixels, rounded to 0.01 (BFL reports 0.75 for 1024 x 768);
 * `cost` in credits: FLUX.2 [pro]'s price list (3 for the first MP, 1.5 per further MP), Kontext 4, Ultra
 * 6, anything else 3 (black-forest-labs/skills `skills/bfl-api/SKILL.md`). `input_mp` is 0: the fake
 * never fetches reference images.
 *
 * Every call but a delivery needs `x-key` (the configured `apiKey`, or any non-empty key when none is
 * configured): none answers 403 `{detail: "Not authenticated"}` (FastAPI's API-key header), a wrong one
 * 401 `{detail}`.
 *
 * ## Model endpoints and their inputs (the rules this fake follows)
 * Only BFL's documented model endpoints are served ({@link BFL_FAKE_ENDPOINTS}); any other `POST
 * /v1/{path}`, or one listed in the `retired` option, answers FastAPI's 404 `{detail: "Not Found"}`, as
 * BFL's API (a FastAPI app) answers a path it has no route for (black-forest-labs/skills
 * `skills/bfl-api/references/error-handling.md`: "404 Not Found: Invalid endpoint"). Each submit is
 * validated as BFL's FastAPI models do (pydantic v2, fakes/input-schema.ts) and refused synchronously with
 * 422 `{detail: [{type, loc, msg, input, ctx}]}`; unknown fields are ignored. The models, from docs.bfl.ai
 * "API reference" (the request bodies of "Generate or edit an image with FLUX.2 [pro]", "Edit or create an
 * image with Flux Kontext Pro", "Generate an image with FLUX 1.1 [pro] with ultra mode"):
 * - FLUX.2 (`flux-2-pro`, `-max`, `-flex`, `-klein-4b`, `-klein-9b`): `prompt` (string, required),
 *   `input_image`, `input_image_2` .. `_8` (string | null), `seed` (integer | null), `width`, `height`
 *   (integer | null, >= 64; multiples of 16 and at most 4 MP together, black-forest-labs/skills
 *   `references/endpoints.md` "Resolution Constraints": a 4 MP total is 4 x 2^20 pixels, BFL's megapixel
 *   being 2^20 as its `output_mp` shows), `safety_tolerance` (integer 0..5), `output_format` (`jpeg` |
 *   `png` | null), `webhook_url` (1..2083 characters | null), `webhook_secret`; flex adds `steps`
 *   (1..50) and `guidance` (1.5..10) (skills `endpoints.md` "FLUX.2 [flex] Specific");
 * - Kontext (`flux-kontext-pro`, `flux-kontext-max`): `prompt` (required), `input_image` .. `_4`, `seed`,
 *   `aspect_ratio` (string | null, `W:H` between 21:9 and 9:21), `output_format`, `prompt_upsampling`,
 *   `safety_tolerance` (0..6), the webhook fields;
 * - Ultra (`flux-pro-1.1-ultra`): `prompt` (string | null), `prompt_upsampling`, `seed`, `aspect_ratio`
 *   (string, `W:H` between 21:9 and 9:21), `safety_tolerance` (0..6), `output_format`, `raw`,
 *   `image_prompt` (string | null), `image_prompt_strength` (0..1), the webhook fields; a prompt or an
 *   image prompt is required (black-forest-labs/blackforest `types/inputs/flux_ultra.py`).
 * A task that fails while running ends `Error` with BFL's `{error: <code>, message}` (skills
 * `references/error-handling.md` "Generation Failures"): `[fake:error]` is an infrastructure failure,
 * `[fake:error-input]` an input one (`invalid_image`).
 *
 * ## Misbehaviour markers
 * In the prompt as `[fake:NAME]`, or for every submit with the `markers` option. Unknown names are
 * ignored (other fakes have other markers).
 * | marker | effect |
 * |---|---|
 * | `429` | the submit answers 429 `{error: "rate_limit_exceeded", message, retry_after}` + `Retry-After` |
 * | `429-after-first` | the first submit with this exact prompt is accepted, every later one answers 429 (a fan-out failing half-way) |
 * | `500` | the submit answers 500 `{detail: "Internal Server Error"}` |
 * | `402` | the submit answers 402 `{detail: "Insufficient credits"}` (the status is BFL's SDK's; the wording is *unverified*) |
 * | `422` | the submit answers 422 `{detail: [{type, loc, msg, input, ctx}]}` (FastAPI validation) |
 * | `malformed` | the submit answers 200 with an HTML page |
 * | `hang` | the submit is never answered (until `close()`) |
 * | `echo-key` | the submit answers 401 with the caller's key echoed in `detail` (redaction tests) |
 * | `foreign-polling` | `polling_url` points at `https://foreign.example` |
 * | `slow` | the task stays `Pending` for `slowMs` instead of `pendingMs` |
 * | `stuck` | the task stays `Pending` forever |
 * | `moderation` | the task ends `Content Moderated` with `details: {"Moderation Reasons": [...]}` (*unverified* shape, see fixtures.ts) |
 * | `request-moderated` | the submit is accepted; the task is `Request Moderated` at once (the input was refused) |
 * | `error` | the task ends `Error` with an `error` text (the skills repository's `references/endpoints.md` shape) |
 * | `error-input` | the task ends `Error` with `error: "invalid_image"` and a `message` (an input BFL could not use, found while running) |
 * | `poll-500` | every `get_result` of the task answers 500 |
 *
 * `requests` records every request in order: `method`, `path` (with query), `headers` (lower-case;
 * `x-key` replaced by `[redacted]`) and the parsed JSON `body` (or null).
 */
import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isJsonObject as isObject, markersOf, sendJson as json, startLoopbackFake } from "./loopback.ts";
import type { LoopbackFake, LoopbackFakeCall, LoopbackFakeRequest } from "./loopback.ts";
import { rule, validateInput } from "./input-schema.ts";
import type { FieldRule, InputSchema } from "./input-schema.ts";
import { renderPngAsync } from "../src/upstreams/simulator/images/png.ts";
import { fitRenderSize } from "../src/upstreams/simulator/images/size.ts";

/** Options of {@link startBflFake}. */
export interface BflFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty `x-key`. */
  apiKey?: string;
  /** How long a task stays `Pending`, ms (default 300). */
  pendingMs?: number;
  /** How long a `[fake:slow]` task stays `Pending`, ms (default 10 000). */
  slowMs?: number;
  /** Markers applied to every submit, as if each prompt carried them (`["500"]`: a BFL that fails every job). */
  markers?: readonly string[];
  /**
   * Model endpoints answered as BFL answers one it has no route for (404), e.g. `["flux-pro-1.1-ultra"]`:
   * a model BFL removed (the `fake-upstreams` script reads `FAKE_BFL_RETIRED`).
   */
  retired?: readonly string[];
}

// ---- input models (docs.bfl.ai API reference, see the module comment) ---------------------------------

/** BFL's megapixel: 2^20 pixels (its `output_mp` is 0.75 for 1024 x 768). */
const MEGAPIXEL = 2 ** 20;

const nullableString = rule.string({ nullable: true });
const WEBHOOK_FIELDS: Record<string, FieldRule> = { webhook_url: rule.string({ minLength: 1, maxLength: 2083, nullable: true }), webhook_secret: nullableString };
const OUTPUT_FORMAT = rule.literal(["jpeg", "png"], { nullable: true });
const references = (count: number): Record<string, FieldRule> =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [i === 0 ? "input_image" : `input_image_${i + 1}`, nullableString]));

/** FLUX.2: both sides, when given, at most 4 MP together. */
const flux2Area = (input: Readonly<Record<string, unknown>>): string | null => {
  const w = input.width;
  const h = input.height;
  if (w === undefined || w === null || h === undefined || h === null) return null;
  return Number(w) * Number(h) > 4 * MEGAPIXEL ? `width x height must be at most 4 megapixels (${4 * MEGAPIXEL} pixels)` : null;
};

/** Kontext and Ultra: `aspect_ratio`, when given, is `W:H` between 21:9 and 9:21. */
const aspectBetween = (input: Readonly<Record<string, unknown>>): string | null => {
  const value = input.aspect_ratio;
  if (value === undefined || value === null) return null;
  const m = /^(\d+):(\d+)$/.exec(String(value));
  if (m === null || Number(m[1]) === 0 || Number(m[2]) === 0) return "Aspect ratio must be in the format of 'width:height'";
  const ratio = Number(m[1]) / Number(m[2]);
  return ratio > 21 / 9 + 1e-9 || ratio < 9 / 21 - 1e-9 ? `Aspect ratio ${String(value)} must be between 21:9 and 9:21` : null;
};

const flux2: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string(),
    ...references(8),
    seed: rule.int({ nullable: true }),
    width: rule.int({ ge: 64, multipleOf: 16, nullable: true }),
    height: rule.int({ ge: 64, multipleOf: 16, nullable: true }),
    safety_tolerance: rule.int({ ge: 0, le: 5 }),
    output_format: OUTPUT_FORMAT,
    ...WEBHOOK_FIELDS,
  },
  checks: [flux2Area],
};
const flux2Flex: InputSchema = {
  ...flux2,
  fields: { ...flux2.fields, prompt_upsampling: rule.bool({ nullable: true }), steps: rule.int({ ge: 1, le: 50 }), guidance: rule.number({ ge: 1.5, le: 10 }) },
};
const kontext: InputSchema = {
  required: ["prompt"],
  fields: {
    prompt: rule.string(),
    ...references(4),
    seed: rule.int({ nullable: true }),
    aspect_ratio: nullableString,
    output_format: OUTPUT_FORMAT,
    prompt_upsampling: rule.bool(),
    safety_tolerance: rule.int({ ge: 0, le: 6 }),
    ...WEBHOOK_FIELDS,
  },
  checks: [aspectBetween],
};
const ultra: InputSchema = {
  required: [],
  fields: {
    prompt: nullableString,
    prompt_upsampling: rule.bool(),
    seed: rule.int({ nullable: true }),
    aspect_ratio: rule.string(),
    safety_tolerance: rule.int({ ge: 0, le: 6 }),
    output_format: OUTPUT_FORMAT,
    raw: rule.bool(),
    image_prompt: nullableString,
    image_prompt_strength: rule.number({ ge: 0, le: 1 }),
    ...WEBHOOK_FIELDS,
  },
  checks: [
    aspectBetween,
    (input) => ((typeof input.prompt === "string" && input.prompt !== "") || (typeof input.image_prompt === "string" && input.image_prompt !== "") ? null : "Either prompt or image_prompt must be provided"),
  ],
};

/** The model endpoints the fake serves (`POST /v1/{endpoint}`), with their input models. Frozen. */
export const BFL_FAKE_ENDPOINTS: Readonly<Record<string, InputSchema>> = Object.freeze({
  "flux-2-pro": flux2,
  "flux-2-max": flux2,
  "flux-2-flex": flux2Flex,
  "flux-2-klein-4b": flux2,
  "flux-2-klein-9b": flux2,
  "flux-kontext-pro": kontext,
  "flux-kontext-max": kontext,
  "flux-pro-1.1-ultra": ultra,
});

/** One recorded request (see the module comment). */
export type BflFakeRequest = LoopbackFakeRequest;

/**
 * A running fake: `url` (use it as the source's base URL), `requests` (every request, in order),
 * `submits()` (the `POST`s), `reset()` (forgets the requests; the array stays the same object) and
 * `close()` (stops listening and drops every connection, held `hang` requests included).
 */
export type BflFake = LoopbackFake;

interface FakeTask {
  id: string;
  endpoint: string;
  prompt: string;
  width: number;
  height: number;
  markers: ReadonlySet<string>;
  createdAt: number;
  pendingMs: number;
  png: Promise<Uint8Array> | null;
}

/** Starts the fake on loopback. */
export async function startBflFake(options: BflFakeOptions = {}): Promise<BflFake> {
  const pendingMs = options.pendingMs ?? 300;
  const slowMs = options.slowMs ?? 10_000;
  const retired = new Set(options.retired ?? []);
  const tasks = new Map<string, FakeTask>();
  const promptsSeen = new Set<string>();
  let base = "";

  const resultBody = (task: FakeTask | undefined, id: string, now: number): Record<string, unknown> => {
    const answer = (status: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      id,
      status,
      result: null,
      progress: null,
      details: null,
      ...extra,
    });
    if (task === undefined) return answer("Task not found");
    if (task.markers.has("request-moderated")) {
      return answer("Request Moderated", { details: { "Moderation Reasons": ["Derivative Works Filter"] } });
    }
    const t = now - task.createdAt;
    if (t < task.pendingMs) {
      // BFL reports no progress while a task waits for a worker: the first third stays null.
      const progress = t < task.pendingMs / 3 || !Number.isFinite(task.pendingMs) ? null : Math.min(0.99, Math.round((t / task.pendingMs) * 100) / 100);
      return answer("Pending", { progress });
    }
    if (task.markers.has("moderation")) return answer("Content Moderated", { details: { "Moderation Reasons": ["Sexual Content"] } });
    if (task.markers.has("error")) return answer("Error", { error: "Generation failed: worker lost" });
    if (task.markers.has("error-input")) return answer("Error", { error: "invalid_image", message: "Input image could not be processed" });
    const seed = createHash("sha256").update(task.id).digest().readUInt32BE(0);
    const sample = `${base}/delivery/${task.id}/sample.png?se=${encodeURIComponent(new Date(now + 600_000).toISOString())}&sp=r&sig=fake`;
    return answer("Ready", { result: { sample, prompt: task.prompt, seed } });
  };

  const submit = (res: ServerResponse, endpoint: string, body: Record<string, unknown>, markers: ReadonlySet<string>): void => {
    const prompt = typeof body.prompt === "string" ? body.prompt : "";
    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (markers.has("429")) return tooMany(res);
    if (markers.has("429-after-first")) {
      if (promptsSeen.has(prompt)) return tooMany(res);
      promptsSeen.add(prompt);
    }
    if (markers.has("500")) return json(res, 500, { detail: "Internal Server Error" });
    if (markers.has("402")) return json(res, 402, { detail: "Insufficient credits" });
    if (markers.has("422")) {
      return json(res, 422, {
        detail: [{ type: "greater_than_equal", loc: ["body", "width"], msg: "Input should be greater than or equal to 64", input: 32, ctx: { ge: 64 } }],
      });
    }
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>maintenance</body></html>");
      return;
    }
    const errors = validateInput(BFL_FAKE_ENDPOINTS[endpoint], body);
    if (errors.length > 0) return json(res, 422, { detail: errors });
    const { width, height } = outputSize(endpoint, body);
    const task: FakeTask = {
      id: randomUUID(),
      endpoint,
      prompt,
      width,
      height,
      markers,
      createdAt: Date.now(),
      pendingMs: markers.has("stuck") ? Number.POSITIVE_INFINITY : markers.has("slow") ? slowMs : pendingMs,
      png: null,
    };
    tasks.set(task.id, task);
    const outputMp = Math.round(((width * height) / 2 ** 20) * 100) / 100;
    const root = markers.has("foreign-polling") ? "https://foreign.example" : base;
    json(res, 200, {
      id: task.id,
      polling_url: `${root}/v1/get_result?id=${task.id}`,
      cost: costOf(endpoint, outputMp),
      input_mp: 0,
      output_mp: outputMp,
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, { url, method, body }: LoopbackFakeCall): Promise<void> => {
    const segments = url.pathname.split("/").filter((s) => s !== "");

    if (segments[0] === "delivery" && method === "GET") {
      const task = tasks.get(segments[1] ?? "");
      if (task === undefined) return json(res, 404, { detail: "Not Found" });
      task.png ??= renderPngAsync({ prompt: task.prompt, width: task.width, height: task.height, seed: task.endpoint, index: 0 });
      const bytes = await task.png;
      res.writeHead(200, { "content-type": "image/png", "content-length": String(bytes.byteLength) });
      res.end(bytes);
      return;
    }

    const key = String(req.headers["x-key"] ?? "");
    const prompt = isObject(body) && typeof body.prompt === "string" ? body.prompt : "";
    const markers = markersOf(prompt, options.markers);
    if (method === "POST" && markers.has("echo-key")) return json(res, 401, { detail: `Invalid API key: ${key}` });
    if (key === "") return json(res, 403, { detail: "Not authenticated" });
    if (options.apiKey !== undefined && key !== options.apiKey) return json(res, 401, { detail: "Invalid API key" });

    if (segments[0] !== "v1" || segments.length < 2) return json(res, 404, { detail: "Not Found" });
    if (segments[1] === "get_result") {
      if (method !== "GET") return json(res, 405, { detail: "Method Not Allowed" });
      const id = url.searchParams.get("id");
      if (id === null) return json(res, 422, { detail: [{ type: "missing", loc: ["query", "id"], msg: "Field required", input: null }] });
      const task = tasks.get(id);
      if (task?.markers.has("poll-500") === true) return json(res, 500, { detail: "Internal Server Error" });
      return json(res, 200, resultBody(task, id, Date.now()));
    }
    const endpoint = segments.slice(1).join("/");
    if (!Object.hasOwn(BFL_FAKE_ENDPOINTS, endpoint) || retired.has(endpoint)) return json(res, 404, { detail: "Not Found" });
    if (method !== "POST") return json(res, 405, { detail: "Method Not Allowed" });
    if (!isObject(body)) {
      return json(res, 422, { detail: [{ type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", input: body ?? null }] });
    }
    return submit(res, endpoint, body, markers);
  };

  const fake = await startLoopbackFake({ port: options.port, host: options.host, recordHeader: (name, value) => (name === "x-key" ? "[redacted]" : value) }, handle);
  base = fake.url;
  return fake;
}

/** 429 as black-forest-labs/skills `skills/bfl-api/references/rate-limiting.md` shows it. */
function tooMany(res: ServerResponse): void {
  json(res, 429, { error: "rate_limit_exceeded", message: "Too many concurrent requests", retry_after: 5 }, { "retry-after": "5" });
}

/** The price of a task in credits (see the module comment). */
function costOf(endpoint: string, outputMp: number): number {
  if (endpoint.startsWith("flux-2-")) return Math.round((3 + 1.5 * Math.max(0, outputMp - 1)) * 100) / 100;
  if (endpoint.startsWith("flux-kontext")) return 4;
  if (endpoint.startsWith("flux-pro-1.1-ultra")) return 6;
  return 3;
}

/** The pixel size a task renders at (see the module comment). */
function outputSize(endpoint: string, input: Record<string, unknown>): { width: number; height: number } {
  let w = 1024;
  let h = 1024;
  if (typeof input.width === "number" && typeof input.height === "number" && input.width > 0 && input.height > 0) {
    w = input.width;
    h = input.height;
  } else {
    const ultra = endpoint.includes("ultra");
    const m = /^(\d+):(\d+)$/.exec(typeof input.aspect_ratio === "string" ? input.aspect_ratio : ultra ? "16:9" : "1:1");
    const ratio = m !== null && Number(m[1]) > 0 && Number(m[2]) > 0 ? Number(m[1]) / Number(m[2]) : 1;
    const pixels = ultra ? 4_000_000 : 1_000_000;
    w = Math.round(Math.sqrt(pixels * ratio) / 16) * 16;
    h = Math.round(w / ratio / 16) * 16;
  }
  return fitRenderSize(Math.min(Math.max(w, 16), 4096), Math.min(Math.max(h, 16), 4096)) ?? { width: 1024, height: 1024 };
}
