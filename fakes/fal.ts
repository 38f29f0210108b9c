/**
 * A loopback fake of fal's queue (fal-ai/fal-js `libs/client/src/queue.ts`), for contract tests and the
 * `fake-upstreams` script: it answers in fal's real shapes, serves real media, and misbehaves on request.
 * The official `@fal-ai/client` accepts it (test/upstreams/fal/official-client.test.ts).
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /{endpoint_id}` (JSON input) | 200 `{status: "IN_QUEUE", request_id, response_url, status_url, cancel_url, queue_position}` |
 * | `GET /{owner}/{alias}/requests/{id}/status[?logs=1]` | 202 `IN_QUEUE` + `queue_position`, 202 `IN_PROGRESS` + `logs`, 200 `COMPLETED` + `logs`, `metrics` (+ `error`, `error_type` when it failed) |
 * | `GET /{owner}/{alias}/requests/{id}` | 200 the output, header `x-fal-request-id`; 400 while not completed (*unverified*); the failure's status and body when it failed |
 * | `PUT /{owner}/{alias}/requests/{id}/cancel` | 202 `{status: "CANCELLATION_REQUESTED"}`; 400 `{status: "ALREADY_COMPLETED"}` |
 * | `GET /files/{id}/{name}` (no key: fal's media hosts are public) | the PNG, SVG or MP4 bytes |
 * The follow-up URLs drop the endpoint's sub-path (`fal-ai/flux-pro/v1.1-ultra` -> `fal-ai/flux-pro`), as
 * fal's do. Status codes 202/200 of the status call: fal-ai/fal `projects/fal/src/fal/apps.py`.
 *
 * Every call but a file download needs `Authorization: Key <key>` (the configured `apiKey`, or any
 * non-empty key when none is configured); otherwise 401 `{detail}`. A request lives `queueMs` in the
 * queue, then `runMs` in progress (timers, no background work). Outputs: `{images: [{url, width,
 * height, content_type, file_name, file_size}]}` (+ `seed`, `has_nsfw_concepts` for FLUX endpoints)
 * rendered by the simulator (PNG, or SVG for `*-vector` endpoints) at the requested `image_size` /
 * `aspect_ratio`, `num_images` of them; or `{video: {url, content_type, file_name, file_size}}`, an H.264
 * MP4 of the requested `duration` (`"5"` or `"6s"`), portrait for a `9:16` `aspect_ratio`, with sound when
 * `generate_audio` is true. An endpoint is a video endpoint when its id names video, veo, hailuo or seedance.
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
 * | `malformed` | the submit answers 200 with an HTML page |
 * | `hang` | the submit is never answered (until `close()`) |
 * | `echo-key` | the submit answers 401 with the caller's key echoed in `detail` (redaction tests) |
 * | `foreign-urls` | the follow-up URLs point at `https://foreign.example` |
 * | `slow` | the request runs `slowMs` instead of `runMs` |
 * | `stuck` | the request stays `IN_PROGRESS` forever |
 * | `moderation` | completes, and the result answers 422 `content_policy_violation` (docs.fal.ai/errors shape) |
 * | `failed-completed` | completes with `error: "Runner disconnected"`, `error_type: "runner_disconnected"`; the result answers 503 |
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
import { renderPngAsync } from "../src/upstreams/simulator/images/png.ts";
import { renderSvg } from "../src/upstreams/simulator/images/svg.ts";
import { fitRenderSize } from "../src/upstreams/simulator/images/size.ts";
import { renderMp4 } from "../src/upstreams/simulator/video.ts";

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
}

/** One recorded request (see the module comment). */
export type FalFakeRequest = LoopbackFakeRequest;

/**
 * A running fake: `url` (use it as the source's base URL), `requests` (every request, in order),
 * `submits()` (the `POST`s), `reset()` (forgets the requests; the array stays the same object) and
 * `close()` (stops listening and drops every connection, held `hang` requests included).
 */
export type FalFake = LoopbackFake;

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
  input: Record<string, unknown>;
  markers: ReadonlySet<string>;
  createdAt: number;
  queueMs: number;
  runMs: number;
  cancelled: boolean;
  output: Record<string, unknown> | null;
}

/** Starts the fake on loopback. */
export async function startFalFake(options: FalFakeOptions = {}): Promise<FalFake> {
  const queueMs = options.queueMs ?? 100;
  const runMs = options.runMs ?? 300;
  const slowMs = options.slowMs ?? 10_000;
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
    } else if (job.markers.has("failed-completed")) {
      body.error = "Runner disconnected";
      body.error_type = "runner_disconnected";
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
    if (/video|veo|hailuo|seedance/i.test(endpointId)) {
      const durationSec = videoDuration(input.duration, endpointId);
      const portrait = typeof input.aspect_ratio === "string" && /^9:16$/.test(input.aspect_ratio);
      const id = addFile("output.mp4", "video/mp4", async () =>
        renderMp4({ prompt, durationSec, orientation: portrait ? "portrait" : "landscape", audio: input.generate_audio === true, seed: endpointId }).body,
      );
      const out: Record<string, unknown> = { video: await fileEntry(id) };
      if (/seedance/i.test(endpointId)) out.seed = seedOf(job.id);
      return out;
    }
    const count = clampInt(input.num_images, 1, 4, 1);
    const { width, height } = imageSize(input);
    const vector = /vector/i.test(endpointId);
    const images: Record<string, unknown>[] = [];
    for (let index = 0; index < count; index++) {
      const opts = { prompt, width, height, seed: endpointId, index };
      const id = vector
        ? addFile("image.svg", "image/svg+xml", async () => new TextEncoder().encode(renderSvg(opts)))
        : addFile("image.png", "image/png", () => renderPngAsync(opts));
      images.push({ ...(await fileEntry(id)), width, height });
    }
    const out: Record<string, unknown> = { images };
    if (/flux/i.test(endpointId)) {
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
    if (body === undefined || !isObject(body)) {
      return json(res, 422, { detail: [{ loc: ["body"], msg: "Input should be a valid JSON object", type: "model_attributes_type" }] });
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
    const endpointId = segments.join("/");
    const job: FakeJob = {
      id: randomUUID(),
      endpointId,
      appId: appIdOf(segments),
      input: body,
      markers,
      createdAt: Date.now(),
      queueMs,
      runMs: markers.has("stuck") ? Number.POSITIVE_INFINITY : markers.has("slow") ? slowMs : runMs,
      cancelled: false,
      output: null,
    };
    jobs.set(job.id, job);
    const { body: status } = statusBody(job, job.createdAt, false);
    return json(res, 200, { ...status, status: "IN_QUEUE", queue_position: status.queue_position ?? 0 });
  };

  const result = async (res: ServerResponse, job: FakeJob, now: number): Promise<void> => {
    if (phase(job, now) !== "COMPLETED") return json(res, 400, { detail: "Request is still in progress" });
    const headers = { "x-fal-request-id": job.id };
    if (job.cancelled) return json(res, 499, { detail: "Request was cancelled", error_type: "client_cancelled" }, headers);
    if (job.markers.has("failed-completed")) {
      return json(res, 503, { detail: "Runner disconnected", error_type: "runner_disconnected" }, { ...headers, "x-fal-error-type": "runner_disconnected" });
    }
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
    job.output ??= await buildOutput(job);
    return json(res, 200, job.output, headers);
  };

  const fake = await startLoopbackFake({ port: options.port, host: options.host, recordHeader: recordAuthorizationScheme }, handle);
  base = fake.url;
  return fake;
}

/** fal's app id of an endpoint: `owner/alias`, or three parts under `workflows/` and `comfy/`. */
function appIdOf(segments: string[]): string {
  const n = segments[0] === "workflows" || segments[0] === "comfy" ? 3 : 2;
  return segments.slice(0, n).join("/");
}

/** The clip length of a video input: `"5"`, `"6s"`, else the endpoint's default (Veo 8 s, Hailuo 6 s, 5 s). */
function videoDuration(value: unknown, endpointId: string): number {
  const m = typeof value === "string" ? /^(\d{1,2})s?$/.exec(value.trim()) : null;
  if (m !== null && Number(m[1]) >= 1 && Number(m[1]) <= 60) return Number(m[1]);
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 60) return value;
  if (/veo/i.test(endpointId)) return 8;
  if (/hailuo/i.test(endpointId)) return 6;
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
  if (isObject(size) && typeof size.width === "number" && typeof size.height === "number") {
    w = size.width;
    h = size.height;
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

function clampInt(value: unknown, min: number, max: number, fallback: number): number {
  return typeof value === "number" && Number.isInteger(value) ? Math.min(max, Math.max(min, value)) : fallback;
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
