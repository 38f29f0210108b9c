/**
 * Running the MCP tools (D39): each tool checks its arguments with its input schema (the native route's, by
 * the app's own validator, so a bad field gets the native error code), then calls the same service functions
 * as the native route (`createSpeech`, `createMusic`, `createSfx`, `submitJob`, `getJob`, `cancelJob`, ...)
 * with the same paid-call options (`callContext`: limits, key, test mode, usage record), so a call through
 * MCP is held, charged, refunded, limited, logged and announced to webhooks exactly as the native one.
 *
 * Every result carries `structuredContent` with `cost_usd`, `balance_usd` (after the call) and
 * `request_id` (this HTTP request's id: the usage record of a synchronous call) or `job_id`. A refusal
 * (validation, balance, limits, an upstream failure: anything the native route answers with an error) is
 * a tool result with `isError: true`, the native `error` object and `cost_usd: 0`; it charged nothing.
 */
import type { Readable } from "node:stream";
import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyReply, FastifyRequest } from "fastify";
import { getAccount } from "../../../accounts/accounts.ts";
import type { AudioOutcome } from "../../../audio/generate.ts";
import { createMusic, validateMusic } from "../../../audio/music.ts";
import { createSfx, validateSfx } from "../../../audio/sfx.ts";
import { createSpeech, validateSpeech } from "../../../audio/speech.ts";
import { validateVoiceDesign } from "../../../audio/voice-design.ts";
import { tierRow } from "../../../catalog/tiers.ts";
import { getModel } from "../../../catalog/models.ts";
import { quoteFlat, quoteMusic, quoteSfx, quoteSpeech } from "../../../catalog/quote.ts";
import type { ImageJobRequest, MediaJobRequest, VideoJobRequest } from "../../../contracts/jobs.ts";
import type { MusicRequestBody, SfxRequestBody, SpeechRequestBody } from "../../../contracts/audio.ts";
import type { VoiceDesignRequestBody } from "../../../contracts/voices.ts";
import { AppError, errors } from "../../../errors.ts";
import { cancelJob } from "../../../jobs/cancel.ts";
import { getJob, type JobView } from "../../../jobs/jobs.ts";
import { blobUrl } from "../../../jobs/outputs.ts";
import { type JobSpec, validateImageJob, validateVideoJob } from "../../../jobs/validate.ts";
import { waitForJobEnd } from "../../../jobs/watch.ts";
import { type Micros, microsToUsd } from "../../../money.ts";
import type { Services } from "../../../services.ts";
import { principalOf } from "../../auth.ts";
import { callContext, generationDepsOf, simulateHeader, speechDepsOf } from "../../call-context.ts";
import { roundedSeconds, setCostHeaders } from "../../cost-headers.ts";
import { schemaError, toAppError } from "../../error-handler.ts";
import type { jobWaits } from "../../job-waits.ts";
import { submitFromRequest } from "../../job-submit.ts";
import { allModels } from "../../routes/models.ts";
import type { Schema } from "../../schemas/common.ts";
import { ESTIMATE_ENDPOINTS, type EstimateEndpoint, type ToolName, toolNamed } from "./tools.ts";

/**
 * The longest `generate_image` waits for its job, ms. D39 says up to 60 s; the official SDK clients give
 * up on a request after 60 s by default, so the tool answers a little before that (the job, still
 * running, to follow with `get_job`) rather than race the client's timeout.
 */
export const IMAGE_WAIT_MS = 55_000;

/** What a tool call runs with: the gateway, the HTTP request that carries it (its key, limits and id) and the scope's job waits. */
export interface ToolCallContext {
  services: Services;
  request: FastifyRequest;
  reply: FastifyReply;
  waits: ReturnType<typeof jobWaits>;
  /** A refusal decided before the call (the request's rate limit, D13/D34): the call answers it and runs nothing. */
  refused: AppError | null;
}

/** A tool's validated arguments. */
type Args = Record<string, unknown>;

/** The fields every result's `structuredContent` starts with. */
interface Base {
  request_id: string;
  cost_usd: number;
  balance_usd: number;
  test_mode?: true;
}

/** Raised for a tool name the server does not have: a protocol error (JSON-RPC `-32602`), not a tool result. */
export class UnknownToolError extends Error {}

/**
 * Runs tool `name` with `args` for the request of `ctx`.
 * @throws UnknownToolError for a name that is not a tool; every other failure is a result with `isError`.
 */
export async function callTool(ctx: ToolCallContext, name: string, args: Args | undefined): Promise<CallToolResult> {
  const tool = toolNamed(name);
  if (tool === undefined) throw new UnknownToolError(`Unknown tool '${name}'; tools/list names the tools.`);
  try {
    if (ctx.refused !== null) throw ctx.refused;
    const input = validated(ctx.request, tool.inputSchema, args ?? {});
    return await RUN[tool.name](ctx, input);
  } catch (err) {
    return refusal(ctx, err);
  }
}

/**
 * `args` checked against `schema` by the app's validator (the options and error keywords of the native
 * routes, compiled once per schema).
 * @throws AppError 400 with the field's native code (`schemaError`, as the native route would answer).
 */
function validated(request: FastifyRequest, schema: Schema, args: unknown): Args {
  const validate = request.compileValidationSchema(schema as unknown as Record<string, unknown>, "body");
  if (validate(args) !== true) {
    const all = validate.errors ?? [];
    const last = all[all.length - 1];
    throw last === undefined ? errors.invalidRequest("Invalid arguments.") : schemaError(last as Parameters<typeof schemaError>[0]);
  }
  return args as Args;
}

/** The caller's balance now, micro-USD (the live balance, also for a test-mode key). */
async function balanceOf(ctx: ToolCallContext): Promise<Micros> {
  const account = await getAccount(ctx.services.db.kysely, principalOf(ctx.request).accountId);
  if (!account) throw errors.auth();
  return account.balanceMicros;
}

/** The common fields of a result. */
function base(ctx: ToolCallContext, costMicros: Micros, balanceMicros: Micros): Base {
  return {
    request_id: ctx.request.id,
    cost_usd: microsToUsd(costMicros),
    balance_usd: microsToUsd(balanceMicros),
    ...(principalOf(ctx.request).mode === "test" ? { test_mode: true as const } : {}),
  };
}

/** A successful result: `content` first, then the structured content serialized as text (for clients that read only text). */
function result(structured: Record<string, unknown>, content: ContentBlock[] = []): CallToolResult {
  return { content: [...content, { type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
}

/**
 * The result of a refused or failed call: `isError`, the native error object (`code`, `message`, `type`,
 * `param`), `retry_after_s` for a limit, `cost_usd` 0 (a refusal charges nothing; a failure after the
 * hold released it). Failures that are not the caller's are logged as the native error handler does.
 */
async function refusal(ctx: ToolCallContext, err: unknown): Promise<CallToolResult> {
  const e = toAppError(err);
  if (e.status >= 500) {
    if (err instanceof AppError) ctx.request.log.warn({ status: e.status, code: e.code, tool: true }, e.message);
    else ctx.request.log.error({ err }, "MCP tool call failed");
  }
  const retryAfter = Number(e.headers["Retry-After"] ?? e.headers["retry-after"] ?? NaN);
  let balance: Micros | null = null;
  try {
    balance = await balanceOf(ctx);
  } catch {
    // The balance cannot be read (the database is failing): the refusal goes out without it.
  }
  const structured = {
    ...e.toBody(),
    status: e.status,
    ...(Number.isFinite(retryAfter) ? { retry_after_s: retryAfter } : {}),
    request_id: ctx.request.id,
    cost_usd: 0,
    ...(balance !== null ? { balance_usd: microsToUsd(balance) } : {}),
  };
  return { isError: true, content: [{ type: "text", text: `${e.code}: ${e.message}` }], structuredContent: structured };
}

/** The bytes of a readable stream. */
async function readAll(body: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of body) parts.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  return Buffer.concat(parts);
}

/** The result of a synchronous audio call stored as a job: the audio, a link to the stored file, the money. */
function audioResult(ctx: ToolCallContext, out: { model: string; costMicros: Micros; balanceMicros: Micros; contentType: string; body: Uint8Array; jobId: string; key: string }, extra: Record<string, unknown>): CallToolResult {
  const url = blobUrl(ctx.services.config.publicBaseUrl, out.key);
  const structured = { ...base(ctx, out.costMicros, out.balanceMicros), job_id: out.jobId, model: out.model, url, content_type: out.contentType, ...extra };
  return result(structured, [
    { type: "audio", data: Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength).toString("base64"), mimeType: out.contentType },
    { type: "resource_link", uri: url, name: out.key.split("/").pop() ?? out.key, mimeType: out.contentType, description: "The stored file (public URL)." },
  ]);
}

/** {@link audioResult} of a music or sound-effect outcome (stored: the tools always store). */
function storedAudio(ctx: ToolCallContext, out: AudioOutcome): CallToolResult {
  if (out.stored === null) throw errors.storageFailed();
  setCostHeaders(ctx.reply, out);
  return audioResult(ctx, { ...out, jobId: out.stored.jobId, key: out.stored.key }, { duration_sec: roundedSeconds(out.durationSec) });
}

/**
 * What a job has cost so far, micro-USD as USD: its charge once it succeeded, the hold while it runs,
 * nothing once it ended otherwise (its hold was released).
 */
function jobCostUsd(job: JobView): number {
  if (job.status === "succeeded") return job.cost_usd ?? 0;
  if (job.status === "pending" || job.status === "processing") return job.hold_usd;
  return 0;
}

/** The blob key of a URL of this gateway's stored files, or null. */
function keyOfUrl(publicBaseUrl: string, url: string): string | null {
  const prefix = blobUrl(publicBaseUrl, "");
  return url.startsWith(prefix) ? url.slice(prefix.length) : null;
}

/**
 * The result of a job tool: the job (D3), its `job_id`, status and money, links to its stored outputs and,
 * with `images` and a succeeded image job, the images themselves. With `failIfEnded`, a job that ended
 * without success (`failed`, `refunded`, `expired`: nothing charged) is an `isError` result carrying the
 * job's `error` (a generation that failed, for `generate_image`; reading or canceling a job is not).
 */
async function jobResult(ctx: ToolCallContext, job: JobView, images: boolean, failIfEnded = false): Promise<CallToolResult> {
  const { services } = ctx;
  const balance = await balanceOf(ctx);
  const structured = {
    ...base(ctx, 0, balance),
    cost_usd: jobCostUsd(job),
    ...(job.mode === "test" ? { test_mode: true as const } : {}),
    job_id: job.id,
    status: job.status,
    job,
  };
  const content: ContentBlock[] = [];
  const urls = job.output?.urls ?? [];
  if (images && job.kind === "image" && job.status === "succeeded") {
    for (const url of urls) {
      const key = keyOfUrl(services.config.publicBaseUrl, url);
      const blob = key === null ? null : await services.blobs.get(key);
      if (blob === null) continue;
      const bytes = await readAll(blob.body);
      content.push({ type: "image", data: bytes.toString("base64"), mimeType: blob.info.contentType ?? job.output?.content_type ?? "image/png" });
    }
  }
  for (const url of urls) content.push({ type: "resource_link", uri: url, name: url.split("/").pop() ?? url, mimeType: job.output?.content_type ?? "application/octet-stream", description: "A stored output (public URL)." });
  if (job.status === "pending" || job.status === "processing") {
    content.push({ type: "text", text: `The job ${job.id} is ${job.status}: follow it with get_job.` });
  }
  if (failIfEnded && (job.status === "failed" || job.status === "refunded" || job.status === "expired")) {
    const error = job.error ?? { code: "provider_error", message: `The job ended ${job.status}.` };
    return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}` }, ...content], structuredContent: { ...structured, error } };
  }
  return result(structured, content);
}

/**
 * Submits a media job through the native submit sequence (`src/http/job-submit.ts`): validate, the key's
 * model allow-list, reference and webhook URL checks, then the submit (idempotency, an `Idempotency-Key`
 * header of the MCP request included, queue caps, hold).
 * @throws AppError as the native route answers (400, 402 `insufficient_balance`, 403, 409, 429, ...).
 */
async function submit<B extends MediaJobRequest>(ctx: ToolCallContext, body: B, validate: (body: B) => JobSpec): Promise<JobView> {
  return (await submitFromRequest(ctx.services, ctx.request, body, validate)).job;
}

/** The quote of `body` at `endpoint`, micro-USD, and the model it names; validated as the endpoint validates it. */
function quoteOf(endpoint: EstimateEndpoint, body: Args): { model: string; micros: Micros } {
  switch (endpoint) {
    case "/v1/audio/speech": {
      const v = validateSpeech(body as SpeechRequestBody);
      return { model: v.model.id, micros: quoteSpeech(v.model, v.chars) };
    }
    case "/v1/audio/music": {
      const { model, req } = validateMusic(body as MusicRequestBody, false);
      return { model: model.id, micros: quoteMusic(model, req.lengthMs) };
    }
    case "/v1/audio/sfx": {
      const { model } = validateSfx(body as SfxRequestBody, false);
      return { model: model.id, micros: quoteSfx(model) };
    }
    case "/v1/audio/voice-design": {
      const { model } = validateVoiceDesign(body as VoiceDesignRequestBody);
      const record = getModel(model);
      if (!record) throw errors.invalidRequest(`Unknown model '${model}'.`, "model");
      return { model, micros: quoteFlat(record) };
    }
    case "/v1/images/generations": {
      const spec = validateImageJob(body as ImageJobRequest);
      return { model: spec.model.id, micros: spec.holdMicros };
    }
    case "/v1/videos/generations": {
      const spec = validateVideoJob(body as VideoJobRequest, { genmediaOnly: false });
      return { model: spec.model.id, micros: spec.holdMicros };
    }
    default: {
      const never: never = endpoint;
      throw errors.invalidRequest(`Unknown endpoint '${String(never)}'.`, "endpoint");
    }
  }
}

/** One voice record of the library, as much as the filter reads. */
interface VoiceRow {
  voice_id: string;
  name?: string;
  description?: string | null;
  category?: string;
  labels?: Record<string, string> | null;
}

/** Whether a voice's name, description, category or labels contain `q` (lower case). */
function voiceMatches(v: VoiceRow, q: string): boolean {
  const hay = [v.name, v.description, v.category, ...Object.values(v.labels ?? {})].filter((s): s is string => typeof s === "string");
  return hay.some((s) => s.toLowerCase().includes(q));
}

/** The tools' implementations, by name. */
const RUN: Record<ToolName, (ctx: ToolCallContext, args: Args) => Promise<CallToolResult>> = {
  async list_models(ctx, args) {
    const modality = args.modality as string | undefined;
    const capability = args.capability as string | undefined;
    const models = allModels().filter((m) => (modality === undefined || m.modality === modality) && (capability === undefined || m.capabilities.includes(capability)));
    return result({ ...base(ctx, 0, await balanceOf(ctx)), models });
  },

  async estimate_cost(ctx, args) {
    const endpoint = args.endpoint as EstimateEndpoint;
    const body = validated(ctx.request, ESTIMATE_ENDPOINTS[endpoint] as unknown as Schema, args.body);
    const quote = quoteOf(endpoint, body);
    const balance = await balanceOf(ctx);
    // The quote is what the call would cost: cost_usd here, though nothing is held or charged (D39).
    return result({ ...base(ctx, quote.micros, balance), endpoint, model: quote.model, affordable: principalOf(ctx.request).mode === "test" || balance >= quote.micros });
  },

  async get_balance(ctx) {
    const account = await getAccount(ctx.services.db.kysely, principalOf(ctx.request).accountId);
    if (!account) throw errors.auth();
    return result({ ...base(ctx, 0, account.balanceMicros), tier: account.tier, tier_name: tierRow(account.tier).name, test_mode: principalOf(ctx.request).mode === "test" });
  },

  async list_voices(ctx, args) {
    const provider = (args.provider as "alpha" | "beta" | "all" | undefined) ?? "alpha";
    const limit = (args.limit as number | undefined) ?? 25;
    const q = typeof args.query === "string" ? args.query.trim().toLowerCase() : "";
    const out = await ctx.services.voiceLibrary.list(provider, simulateHeader(ctx.request.headers["x-svc-simulate"]));
    const all = (JSON.parse(out.body.toString("utf8")) as { data: VoiceRow[] }).data;
    const matched = q === "" ? all : all.filter((v) => voiceMatches(v, q));
    return result({ ...base(ctx, 0, await balanceOf(ctx)), provider, total: matched.length, voices: matched.slice(0, limit) });
  },

  async generate_speech(ctx, args) {
    const { services, request, reply } = ctx;
    const deps = { ...speechDepsOf(services, request), blobs: services.blobs };
    const out = await createSpeech(deps, principalOf(request).accountId, args as SpeechRequestBody, { ...callContext(services, request, reply), saveToBlob: true });
    if (out.stored === null || out.audio.kind !== "bytes") throw errors.storageFailed();
    setCostHeaders(ctx.reply, out);
    return audioResult(ctx, { ...out, body: out.audio.body, jobId: out.stored.jobId, key: out.stored.key }, { characters: out.charsBilled });
  },

  async generate_music(ctx, args) {
    const { services, request, reply } = ctx;
    const out = await createMusic(generationDepsOf(services, request), principalOf(request), args as MusicRequestBody, { ...callContext(services, request, reply), saveToBlob: true });
    return storedAudio(ctx, out);
  },

  async generate_sound_effect(ctx, args) {
    const { services, request, reply } = ctx;
    const out = await createSfx(generationDepsOf(services, request), principalOf(request), args as SfxRequestBody, { ...callContext(services, request, reply), saveToBlob: true });
    return storedAudio(ctx, out);
  },

  async generate_image(ctx, args) {
    const first = await submit(ctx, args as ImageJobRequest, validateImageJob);
    const w = ctx.waits.watcher(ctx.reply);
    try {
      const job = await waitForJobEnd(ctx.waits.deps, principalOf(ctx.request), first.id, IMAGE_WAIT_MS, w.signal, first);
      return await jobResult(ctx, job, true, true);
    } finally {
      w.done();
    }
  },

  async submit_video(ctx, args) {
    const job = await submit(ctx, args as VideoJobRequest, (b) => validateVideoJob(b, { genmediaOnly: false }));
    return jobResult(ctx, job, false);
  },

  async get_job(ctx, args) {
    const { deps } = ctx.waits;
    const job = await getJob(deps.db, deps.publicBaseUrl, principalOf(ctx.request), args.job_id as string);
    return jobResult(ctx, job, true);
  },

  async cancel_job(ctx, args) {
    const { services } = ctx;
    const { deps } = ctx.waits;
    const job = await cancelJob(
      { db: deps.db, publicBaseUrl: deps.publicBaseUrl, sourceNamed: services.jobSourceNamed, log: services.log, changes: services.jobChanges },
      principalOf(ctx.request),
      args.job_id as string,
    );
    return jobResult(ctx, job, false);
  },
};
