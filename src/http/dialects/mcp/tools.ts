/**
 * The tools of the MCP server (D39): their names, the descriptions an agent acts on (what a call costs, read
 * from the catalog, and how long it takes) and their input schemas, taken from the native route schemas
 * (`src/http/schemas/*.ts`, built on the request contracts of `src/contracts/`): one source of truth for
 * validation, the OpenAPI document and the tools. Nothing here runs a tool (`calls.ts` does).
 */
import { enabledModels } from "../../../catalog/models.ts";
import { quoteImage } from "../../../catalog/quote.ts";
import { TIERS } from "../../../catalog/tiers.ts";
import type { ModelRecord } from "../../../catalog/types.ts";
import { formatUsd } from "../../../money.ts";
import { AUDIO_FORMATS } from "../../../upstreams/types.ts";
import { createMusicSchema, createSoundEffectSchema, createSpeechSchema } from "../../schemas/audio.ts";
import { int, obj, oneOf, type Schema, str } from "../../schemas/common.ts";
import { createImageJobSchema, createVideoJobSchema, getJobSchema } from "../../schemas/jobs.ts";
import { listModelsSchema } from "../../schemas/models.ts";
import { designVoiceSchema, listVoicesSchema } from "../../schemas/voices.ts";

/** The names of the tools (D39). */
export const TOOL_NAMES = [
  "list_models",
  "estimate_cost",
  "get_balance",
  "list_voices",
  "generate_speech",
  "generate_music",
  "generate_sound_effect",
  "generate_image",
  "submit_video",
  "get_job",
  "cancel_job",
] as const;
/** A tool's name. */
export type ToolName = (typeof TOOL_NAMES)[number];

/** One tool as `tools/list` publishes it. `validate` is the schema its arguments are checked with (the published one). */
export interface ToolDef {
  name: ToolName;
  title: string;
  description: string;
  /** JSON Schema of the arguments (`type: "object"`), as validated. */
  inputSchema: Schema;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

/** The JSON body schema of a route schema (its `application/json` body). */
function bodyOf(routeSchema: unknown): Record<string, unknown> {
  const body = (routeSchema as { body?: unknown }).body;
  if (body === null || typeof body !== "object") throw new Error("mcp tools: route schema without a JSON body");
  return body as Record<string, unknown>;
}

/** A property schema of an object schema (a route's body, query string or path parameters). */
function propertyOf(schema: unknown, name: string): Schema {
  const props = (schema as { properties?: Record<string, Schema> }).properties;
  const p = props?.[name];
  if (p === undefined) throw new Error(`mcp tools: no property ${name}`);
  return p;
}

/**
 * `schema` without the properties `drop` (aliases and transport switches that mean nothing to a tool:
 * `text` for `input`, `stream`, ...), every other keyword kept. The result validates a subset of what the
 * native route accepts, with the same error codes.
 */
function without(schema: Record<string, unknown>, drop: readonly string[], extra: Record<string, unknown> = {}): Schema {
  const props = schema.properties as Record<string, unknown>;
  const kept = Object.fromEntries(Object.entries(props).filter(([k]) => !drop.includes(k)));
  const required = Array.isArray(schema.required) ? (schema.required as string[]).filter((k) => !drop.includes(k)) : undefined;
  return { ...schema, properties: kept, ...(required && required.length > 0 ? { required } : {}), ...extra } as unknown as Schema;
}

/** The MP3 formats of `AUDIO_FORMATS`: the audio tools answer and store MP3 (a stored output is one). */
const MP3_FORMATS = AUDIO_FORMATS.filter((f) => f.startsWith("mp3_"));

/**
 * An audio route's body as a tool takes it: without `drop`, and `response_format` narrowed to the MP3
 * formats (the native route serves any format, but keeps only MP3 when it stores, as these tools do).
 */
function audioTool(schema: Record<string, unknown>, drop: readonly string[]): Schema {
  const props = schema.properties as Record<string, Record<string, unknown>>;
  const format = {
    ...props.response_format,
    enum: MP3_FORMATS,
    description: "MP3 format of the answer and of the stored file.",
    "x-error-message": `response_format must be one of ${MP3_FORMATS.join(", ")}.`,
  };
  return without({ ...schema, properties: { ...props, response_format: format } }, drop);
}

/** A model's price as an agent reads it, from its catalog record ("0.405 USD per 1000 characters"). */
export function priceOf(m: ModelRecord): string {
  const p = m.pricing;
  switch (p.mode) {
    case "per-char":
      return `${formatUsd(p.microsPerKchar)} USD per 1000 characters`;
    case "per-second":
      return `${formatUsd(p.microsPerSecond)} USD per second`;
    case "per-minute":
      return `${formatUsd(p.microsPerMinute)} USD per started minute`;
    case "per-song":
      return `${formatUsd(p.microsPerSong)} USD per song`;
    case "per-call":
      return `${formatUsd(p.microsPerCall)} USD per call`;
    case "per-image":
    case "per-mp":
      if (m.capability !== "image") return "see GET /v1/pricing";
      return `${formatUsd(quoteImage(m, { n: 1, width: 1024, height: 1024 }))} USD per image${p.mode === "per-mp" ? " at 1 megapixel (more for larger sizes)" : ""}`;
    case "per-quality":
      return `${formatUsd(p.tiers.low)} / ${formatUsd(p.tiers.medium)} / ${formatUsd(p.tiers.high)} USD per image (quality low / medium / high)`;
    default: {
      const never: never = p;
      return String(never);
    }
  }
}

/** `id (price)` for every enabled model of `capability`, joined: the price list of a tool's description. */
export function priceList(capability: ModelRecord["capability"]): string {
  return enabledModels()
    .filter((m) => m.capability === capability)
    .map((m) => `${m.id} ${priceOf(m)}`)
    .join("; ");
}

/** The native endpoints `estimate_cost` quotes, each with the route schema its `body` is checked against. */
export const ESTIMATE_ENDPOINTS = {
  "/v1/audio/speech": bodyOf(createSpeechSchema),
  "/v1/audio/music": bodyOf(createMusicSchema),
  "/v1/audio/sfx": bodyOf(createSoundEffectSchema),
  "/v1/audio/voice-design": bodyOf(designVoiceSchema),
  "/v1/images/generations": bodyOf(createImageJobSchema),
  "/v1/videos/generations": bodyOf(createVideoJobSchema),
} as const;
/** A path `estimate_cost` quotes. */
export type EstimateEndpoint = keyof typeof ESTIMATE_ENDPOINTS;

/** Which accounts make videos, from the tier matrix: "Tier 0 accounts cannot make live videos (deposits of 10 USD reach Tier 1); ..." (D48). */
function videoTierNote(): string {
  const first = TIERS.findIndex((t) => t.videoConcurrent > 0);
  if (first <= 0) return "";
  const t = TIERS[first];
  return `${TIERS.slice(0, first).map((x) => x.name).join(", ")} accounts cannot make live videos (deposits of ${formatUsd(t.minDepositMicros)} USD in all reach ${t.name}); a test-mode key makes simulated ones there, one at a time.`;
}

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const PAID = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };

const JOB_ID = (what: string): Schema => obj({ job_id: { ...propertyOf((getJobSchema as { params?: unknown }).params, "id"), description: what } as Schema }, ["job_id"]) as Schema;

/**
 * Where a voice agent goes instead of `generate_speech` (D42, D43): the realtime sockets, which MCP cannot
 * carry (their audio streams both ways). Paths only: the tools do not know the gateway's address (llms.txt
 * gives the full URLs).
 */
const REALTIME_SPEECH_NOTE =
  "For a voice agent or text that arrives over time, do not call this tool per sentence: open the realtime speech WebSocket, GET /v1/audio/speech/{voice_id}/stream-input on the gateway's address with ws:// or wss:// (ElevenLabs' text-to-speech socket protocol, the same key as Authorization: Bearer; models with realtime: true in list_models), which speaks text as it is sent and is billed per character in one usage record; live audio is transcribed by /v1/audio/transcriptions/realtime (per second of audio). GET /llms.txt describes both.";

/** Every field of the answers, as the descriptions state them once. */
const ANSWER = "The result's structuredContent carries cost_usd, balance_usd (after the call) and request_id";

/** The tools of D39, in the order `tools/list` gives them. */
export const TOOLS: readonly ToolDef[] = [
  {
    name: "list_models",
    title: "List models",
    description: `The gateway's enabled models (text, audio, image, video) with their capabilities, minimum tier and lifecycle (deprecated, shutdown_date), as GET /v1/models lists them; speech models also say whether the realtime speech socket serves them (realtime: true). Free and instant. ${ANSWER}; the models are in structuredContent.models.`,
    inputSchema: obj({
      modality: oneOf(["text", "audio", "image", "video"], "Only models of this modality."),
      capability: propertyOf((listModelsSchema as { querystring?: unknown }).querystring, "capability"),
    }),
    annotations: READ,
  },
  {
    name: "estimate_cost",
    title: "Estimate the cost of a call",
    description: `The price of a call before making it: give the native endpoint's path and the request body you would send; answers its quote as cost_usd (what the call would hold and, for synchronous calls, charge), validating the body as the endpoint does. Nothing is held or charged; free and instant. Endpoints: ${Object.keys(ESTIMATE_ENDPOINTS).join(", ")}.`,
    inputSchema: obj(
      {
        endpoint: oneOf(Object.keys(ESTIMATE_ENDPOINTS), "The native endpoint's path (generate_speech is /v1/audio/speech, generate_image /v1/images/generations, submit_video /v1/videos/generations, ...).", {
          examples: ["/v1/audio/speech"],
        }),
        body: obj({}, [], { description: "The request body, as the endpoint (or the matching tool) takes it.", additionalProperties: true, examples: [{ input: "Hello there.", voice_id: "<voice id>" }] }),
      },
      ["endpoint", "body"],
    ),
    annotations: READ,
  },
  {
    name: "get_balance",
    title: "Get the balance",
    description: `The account's balance in USD, its tier and whether this key is a test-mode key (test keys are priced but move no money). Free and instant. ${ANSWER}.`,
    inputSchema: obj({}),
    annotations: READ,
  },
  {
    name: "list_voices",
    title: "List voices",
    description: `Voices for generate_speech: alpha voices work with alpha-* speech models, beta voices (and your own designed or cloned voices) with beta-speech-*. Free; a second or less. The alpha library holds thousands of voices: narrow it with query and limit. ${ANSWER}; the voices are in structuredContent.voices, with total the number that matched.`,
    inputSchema: obj({
      provider: propertyOf((listVoicesSchema as { querystring?: unknown }).querystring, "provider"),
      query: str("Only voices whose name, description, category or labels contain this text (case-insensitive).", { maxLength: 200 }),
      limit: int("At most this many voices, 1 to 200 (default 25).", { minimum: 1, maximum: 200, default: 25 }),
    }),
    annotations: READ,
  },
  {
    name: "generate_speech",
    title: "Generate speech",
    description: `Text to speech with a voice from list_voices (voice_id and input are required). Prices: ${priceList("speech")}; the characters of input are counted after NFC. Takes one to a few seconds. Answers the audio (MP3, base64) and the stored file's URL. ${ANSWER} and job_id (the stored output); a refusal is an error result with the gateway's code and costs nothing. ${REALTIME_SPEECH_NOTE}`,
    inputSchema: audioTool(bodyOf(createSpeechSchema), ["text", "voice", "stream"]),
    annotations: PAID,
  },
  {
    name: "generate_music",
    title: "Generate music",
    description: `Music from a prompt (beta models also take lyrics). Prices: ${priceList("music")}. Takes about 10 to 60 seconds. Answers the audio (MP3, base64) and the stored file's URL. ${ANSWER} and job_id (the stored output); a refusal costs nothing.`,
    inputSchema: audioTool(bodyOf(createMusicSchema), ["duration_ms"]),
    annotations: PAID,
  },
  {
    name: "generate_sound_effect",
    title: "Generate a sound effect",
    description: `A sound effect from a description (prompt is required). Price: ${priceList("sfx")}, whatever the duration. Takes a few seconds. Answers the audio (MP3, base64) and the stored file's URL. ${ANSWER} and job_id (the stored output); a refusal costs nothing.`,
    inputSchema: audioTool(bodyOf(createSoundEffectSchema), ["text"]),
    annotations: PAID,
  },
  {
    name: "generate_image",
    title: "Generate an image",
    description: `Submits an image job and waits up to 55 seconds for it: answers the images (base64) and their stored URLs, or, if the job is still running, the job to follow with get_job. Prices: ${priceList("image")}. Usually takes 5 to 30 seconds. The price is held at submit and charged only on success (a failed job is refunded). ${ANSWER.replace("request_id", "job_id")}; a refusal costs nothing.`,
    inputSchema: bodyOf(createImageJobSchema) as Schema,
    annotations: PAID,
  },
  {
    name: "submit_video",
    title: "Submit a video job",
    description: `Submits a video job and answers at once with its job_id; follow it with get_job (every 10 to 30 seconds) until its status is succeeded (output.url is the MP4), failed or refunded; cancel_job gives the whole hold back while it has not ended. Prices: ${priceList("video")}, each model with its own durations. Takes one to several minutes. ${videoTierNote()} The price is held at submit and charged only on success. ${ANSWER.replace("request_id", "job_id")}.`,
    inputSchema: bodyOf(createVideoJobSchema) as Schema,
    annotations: PAID,
  },
  {
    name: "get_job",
    title: "Get a job",
    description: `An image or video job (or a stored audio output) by its job_id: status (pending, processing, succeeded, failed, refunded, expired), progress, output URLs and error; a succeeded image job answers its images too. Free and instant. ${ANSWER.replace("request_id", "job_id")} (cost_usd: the charge once succeeded, the amount held while running, 0 once it failed).`,
    inputSchema: JOB_ID("The job's id (`job_...`), from generate_image or submit_video."),
    annotations: READ,
  },
  {
    name: "cancel_job",
    title: "Cancel a job",
    description: `Cancels a pending or processing job: it ends failed with error.code canceled and its whole hold is given back. A job that already ended cannot be canceled (job_not_cancelable). Free. ${ANSWER.replace("request_id", "job_id")}.`,
    inputSchema: JOB_ID("The job's id (`job_...`)."),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  },
];

/** A tool by name, or undefined. */
export function toolNamed(name: string): ToolDef | undefined {
  return TOOLS.find((t) => t.name === name);
}

/**
 * `schema` as `tools/list` publishes it: plain JSON (TypeBox's symbols dropped) without the gateway's own
 * error annotations (`x-error-code`, `x-error-message`), which mean nothing to a client.
 */
export function publishedSchema(schema: Schema): { type: "object"; [k: string]: unknown } {
  return JSON.parse(JSON.stringify(schema, (key: string, value: unknown) => (key.startsWith("x-error-") ? undefined : value))) as { type: "object" };
}
