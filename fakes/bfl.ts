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
 * | `poll-500` | every `get_result` of the task answers 500 |
 *
 * `requests` records every request in order: `method`, `path` (with query), `headers` (lower-case;
 * `x-key` replaced by `[redacted]`) and the parsed JSON `body` (or null).
 */
import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isJsonObject as isObject, markersOf, sendJson as json, startLoopbackFake } from "./loopback.ts";
import type { LoopbackFake, LoopbackFakeCall, LoopbackFakeRequest } from "./loopback.ts";
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
}

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
    const seed = createHash("sha256").update(task.id).digest().readUInt32BE(0);
    const sample = `${base}/delivery/${task.id}/sample.png?se=${encodeURIComponent(new Date(now + 600_000).toISOString())}&sp=r&sig=fake`;
    return answer("Ready", { result: { sample, prompt: task.prompt, seed } });
  };

  const submit = (res: ServerResponse, segments: string[], body: Record<string, unknown>, markers: ReadonlySet<string>): void => {
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
    const endpoint = segments.slice(1).join("/");
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
    if (method !== "POST") return json(res, 405, { detail: "Method Not Allowed" });
    if (!isObject(body)) {
      return json(res, 422, { detail: [{ type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object", input: null }] });
    }
    return submit(res, segments, body, markers);
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
