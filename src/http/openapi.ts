/**
 * The OpenAPI 3.1 document of the gateway (D23: `GET /openapi.json` is public and lists every path of the
 * spec and D8) and readable reference docs at `GET /docs` (Swagger UI, served from the npm package: no
 * CDN, works offline).
 *
 * The document is generated from the registered routes by @fastify/swagger in dynamic mode, so a route
 * that does not exist is never documented. The route schemas are deliberately loose (bodies are checked
 * by the services so that each rule answers with its own error code), so the documentation of each
 * operation (summary, tags, security, request body, query, responses) comes from {@link OPERATIONS}, keyed
 * by method and route URL, and is applied by the plugin's `transform` option. `transform` rewrites the
 * schema only in the generated document: the schemas Fastify validates and serializes with are never
 * touched, so documenting a route cannot change what it accepts or answers. The operator API is hidden.
 *
 * Must be called before any route is registered: @fastify/swagger collects routes from `onRoute`.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifySchema } from "fastify";
import pkg from "../../package.json" with { type: "json" };
import { DEFAULT_MUSIC_MODEL, DEFAULT_SFX_MODEL, DEFAULT_SPEECH_MODEL, enabledModels } from "../catalog/models.ts";
import { TEXT_ALIASES, TEXT_MODELS } from "../catalog/text-models.ts";
import type { App } from "./app.ts";

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it) written for the document only. */
type Schema = Record<string, unknown>;

/** One documented response: a description, optional headers and the body by media type. */
interface ResponseDoc {
  description: string;
  headers?: Record<string, Schema>;
  content?: Record<string, { schema: Schema }>;
}

/** Who may call an operation; mapped to OpenAPI `security` requirements. */
type Access = "public" | "key" | "keyOrSession" | "keyOrXApiKey";

/** The documentation of one operation (method + route URL). */
interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: [Tag];
  access: Access;
  /** Request body by media type. */
  body?: Record<string, { schema: Schema }>;
  query?: Schema;
  params?: Schema;
  headers?: Schema;
  responses: Record<string, ResponseDoc>;
  /** The path as documented, when the route URL cannot be shown as it is (a wildcard). */
  path?: string;
}

// ------------------------------------------------------------------------------------- schema helpers

const str = (description: string, extra: Schema = {}): Schema => ({ type: "string", description, ...extra });
const int = (description: string, extra: Schema = {}): Schema => ({ type: "integer", description, ...extra });
const num = (description: string, extra: Schema = {}): Schema => ({ type: "number", description, ...extra });
const bool = (description: string, extra: Schema = {}): Schema => ({ type: "boolean", description, ...extra });
const oneOf = (values: readonly string[], description: string, extra: Schema = {}): Schema =>
  str(description, { enum: [...values], ...extra });
const nullable = (s: Schema): Schema => ({ ...s, type: [s.type as string, "null"] });
const arr = (items: Schema, description: string, extra: Schema = {}): Schema => ({ type: "array", description, items, ...extra });
const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...(required.length > 0 ? { required } : {}),
  ...extra,
});
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const usd = (description: string): Schema => num(`${description} (USD, at most 6 decimals).`);
const isoTime = (description: string): Schema => str(description, { format: "date-time" });
const binary = (description: string): Schema => ({ type: "string", format: "binary", contentMediaType: "application/octet-stream", description });

const json = (schema: Schema): Record<string, { schema: Schema }> => ({ "application/json": { schema } });
const ok = (description: string, schema: Schema, headers?: Record<string, Schema>): ResponseDoc => ({
  description,
  ...(headers ? { headers } : {}),
  content: json(schema),
});
const html = (description: string): ResponseDoc => ({ description, content: { "text/html": { schema: { type: "string" } } } });

/** The D1 error response for `status`, listing the `error.code` values the operation answers with. */
function error(status: number, codes: string): ResponseDoc {
  return { description: `${STATUS_TEXT[status] ?? "Error"}: ${codes}.`, content: json(ref("Error")) };
}
const STATUS_TEXT: Record<number, string> = {
  400: "Invalid request",
  401: "Missing or invalid key",
  402: "Balance too low",
  403: "Forbidden",
  404: "Not found",
  409: "Conflict",
  413: "Body too large",
  415: "Unsupported media type",
  416: "Range not satisfiable",
  429: "Rate limited (see `Retry-After`)",
  500: "Internal failure",
  502: "Upstream provider failure",
  503: "Not ready",
};
/** Error responses by status, from a compact table `{status: "code, code"}`. */
function errors(table: Record<number, string>): Record<string, ResponseDoc> {
  return Object.fromEntries(Object.entries(table).map(([status, codes]) => [status, error(Number(status), codes)]));
}
const AUTH_ERR = { 401: "`auth_error`", 429: "`rate_limited`" };

// ---------------------------------------------------------------------------------- model identifiers

const modelsWith = (...caps: string[]) => enabledModels().filter((m) => caps.includes(m.capability)).map((m) => m.id);
const SPEECH_MODELS = modelsWith("speech");
const MUSIC_MODELS = modelsWith("music");
const SFX_MODELS = modelsWith("sfx");
const IMAGE_MODELS = modelsWith("image");
const VIDEO_MODELS = modelsWith("video");
const GENMEDIA_MODELS = VIDEO_MODELS.filter((id) => id.startsWith("vidD-"));
const TEXT_IDS = TEXT_MODELS.filter((m) => m.enabled).map((m) => m.id);
const TEXT_MODEL_DOC = `Text model id (${TEXT_IDS.map((id) => `\`${id}\``).join(", ")}) or alias (${Object.keys(TEXT_ALIASES)
  .map((a) => `\`${a}\``)
  .join(", ")}); the answer names the concrete id.`;

const AUDIO_FORMATS = ["mp3_44100_128", "mp3_44100_192", "mp3_22050_32", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100", "ulaw_8000"];
const JOB_STATUSES = ["pending", "processing", "succeeded", "failed", "refunded", "expired"];

// ------------------------------------------------------------------------------------ shared headers

const H = {
  model: str("Resolved model id."),
  cost: str("Amount charged for this call, USD."),
  balance: str("Balance after the charge, USD."),
  duration: str("Duration used for billing, seconds."),
};
const COST_HEADERS = { "X-Svc-Model": H.model, "X-Svc-Cost-USD": H.cost, "X-Svc-Balance-USD": H.balance };
const FALLBACK_HEADERS = {
  "X-Svc-Fallback": str("`true` when a substitute served the request."),
  "X-Svc-Fallback-Layer": str("1 = same model from another source, 2, 3 = a different model of equivalent quality."),
};
/** `X-Svc-Simulate` (D10): asks the built-in simulator to fail, hang or be slow. */
const SIMULATE = obj({
  "x-svc-simulate": oneOf(
    ["fail", "hang", "slow"],
    "Simulator control (D10), ignored for models served by a real upstream: `fail` makes the upstream fail, `hang` stops a job's worker (the sweep refunds it), `slow` adds latency.",
  ),
});

/** Audio bytes in the requested `response_format` (D20). */
const AUDIO_CONTENT = {
  "audio/mpeg": { schema: binary("MP3 (`mp3_*` formats).") },
  "audio/pcm": { schema: binary("Raw 16-bit little-endian samples (`pcm_*` formats).") },
  "audio/basic": { schema: binary("Raw mu-law bytes (`ulaw_8000`).") },
};

// ------------------------------------------------------------------------------------------ components

/** Shared schemas, referenced from the operations as `#/components/schemas/<name>`. */
const COMPONENTS: Record<string, Schema> = {
  Error: obj(
    {
      error: obj(
        {
          code: str("Stable error code, for example `invalid_request`, `auth_error`, `billing_error`, `rate_limited`, `provider_error`."),
          message: str("Human-readable explanation."),
          type: oneOf(
            ["invalid_request_error", "authentication_error", "permission_error", "billing_error", "rate_limit_error", "provider_error", "api_error"],
            "Error class; follows the HTTP status (D16).",
          ),
          param: nullable(str("The offending request field, or null.")),
        },
        ["code", "message", "type", "param"],
      ),
    },
    ["error"],
    { description: "Every error answer (D1). Unknown routes answer 404 `not_found`, a wrong method 405 `method_not_allowed`." },
  ),
  MediaJob: obj(
    {
      id: str("Job id, `job_<random>`."),
      object: oneOf(["media.job"], "Always `media.job`."),
      kind: oneOf(["image", "video", "audio"], "Job kind."),
      model: str("Model id."),
      status: oneOf(JOB_STATUSES, "`succeeded`, `failed`, `refunded` and `expired` are terminal."),
      hold_usd: usd("Amount held at submit time"),
      cost_usd: nullable(usd("Final charge; null until the job succeeded")),
      created_at: isoTime("Creation time."),
      updated_at: isoTime("Last change."),
      output: nullable(
        obj(
          {
            url: str("Stable URL of the (first) output on this service."),
            content_type: str("MIME type of the output, for example `image/png`, `image/svg+xml`, `video/mp4`."),
            urls: arr(str("Output URL."), "Every output (several images when `n` > 1)."),
          },
          ["url", "content_type", "urls"],
        ),
      ),
      error: nullable(obj({ code: str("Error code."), message: str("Explanation.") }, ["code", "message"])),
      idempotency_key: nullable(str("The idempotency key of the request.")),
    },
    ["id", "object", "kind", "model", "status", "hold_usd", "cost_usd", "created_at", "updated_at", "output", "error", "idempotency_key"],
    { description: "An image or video job (D3)." },
  ),
  AudioGeneration: obj(
    {
      object: oneOf(["audio.generation"], "Always `audio.generation`."),
      job_id: str("Job id; the output appears in the gallery and on its share page."),
      kind: oneOf(["audio"], "Always `audio`."),
      model: str("Resolved model id."),
      url: str("Permanent URL of the stored MP3."),
      duration_sec: num("Clip duration used for billing, seconds."),
      cost_usd: usd("Charged amount"),
      balance_usd: usd("Remaining balance"),
    },
    ["object", "job_id", "kind", "model", "url", "duration_sec", "cost_usd", "balance_usd"],
    { description: "The JSON answer of music and sound effects with `?save_to_blob=1`." },
  ),
  Voice: obj(
    {
      provider: oneOf(["alpha", "beta"], "Provider of the voice."),
      voice_id: str("Opaque voice id."),
      name: str("Human-readable name."),
      category: str("alpha: for example `premade`, `cloned`."),
      labels: obj({}, [], { description: "alpha: filter facets (gender, age, accent, use case).", additionalProperties: { type: "string" } }),
      preview_url: str("alpha: short audio sample."),
      description: {
        description: "alpha: free text; beta: tags such as energy, language, gender.",
        oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }],
      },
    },
    ["provider", "voice_id", "name"],
    { description: "A voice library record.", additionalProperties: true },
  ),
  TierRow: obj(
    {
      tier: int("Tier number, 0 to 4."),
      name: str("Display name, `Tier 0` to `Tier 4`."),
      min_deposit: num("Minimum cumulative deposit, USD."),
      rpm: int("Requests per minute, per user."),
      per_model_rpm: int("Requests per minute for one model."),
      tpm: int("Tokens per minute, per user."),
      max_single_request: int("Most tokens in one request (input plus estimated output)."),
      image_concurrent: int("Concurrent image jobs."),
      image_queue_depth_cap: int("Queued image jobs behind the concurrency gate."),
      video_concurrent: int("Concurrent video jobs (0: video blocked)."),
      video_queue_depth_cap: int("Queued video jobs."),
      audio_concurrent: int("Legacy aggregate: the largest audio sub-pool."),
      audio_concurrent_per_provider: obj(
        { host_1: int("Transcription."), host_2: int("Audio understanding."), alpha: int("alpha-* models."), beta: int("beta-* models."), host_3: int("Voice cloning.") },
        ["host_1", "host_2", "alpha", "beta", "host_3"],
        { description: "Audio concurrency per upstream pool." },
      ),
      combined_media_concurrent: int("Tier 4 only: image and video share this pool."),
      combined_queue_depth_cap: int("Tier 4 only: queue cap of the combined pool."),
    },
    [
      "tier",
      "name",
      "min_deposit",
      "rpm",
      "per_model_rpm",
      "tpm",
      "max_single_request",
      "image_concurrent",
      "image_queue_depth_cap",
      "video_concurrent",
      "video_queue_depth_cap",
      "audio_concurrent",
      "audio_concurrent_per_provider",
    ],
    { description: "One row of the tier matrix." },
  ),
  TextPriceRow: obj(
    {
      id: str("Model id."),
      name: str("Display name."),
      input_per_1m: num("USD per million input tokens."),
      output_per_1m: num("USD per million output tokens."),
      cached_input_per_1m: num("USD per million cached input tokens (10% of input)."),
    },
    ["id", "name", "input_per_1m", "output_per_1m", "cached_input_per_1m"],
  ),
};

// ------------------------------------------------------------------------------------ request bodies

const IDEMPOTENCY = str("Replaying the same key returns the same job without a new charge (200 instead of 202).", { maxLength: 128 });
const PARAMETERS = obj({}, [], { description: "Model-specific pass-through parameters (for example a seed or aspect ratio), forwarded unchanged.", additionalProperties: true });
const HTTPS_URL = (description: string): Schema => str(description, { format: "uri", pattern: "^https://" });

const SPEECH_BODY = obj(
  {
    model: oneOf(SPEECH_MODELS, "Speech model. alpha voices work only with `alpha-*` models; beta voices and your own designed or cloned voices only with `beta-speech-*`.", { default: DEFAULT_SPEECH_MODEL }),
    input: str("Text to speak (alias `text`). At most 5000 characters (Unicode code points after NFC).", { maxLength: 5000 }),
    text: str("Alias of `input`.", { maxLength: 5000 }),
    voice_id: str("Voice id from the voice library, or one of your designed or cloned voices (alias `voice`). Required; there is no default voice."),
    voice: str("Alias of `voice_id`."),
    response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128" }),
    voice_settings: obj(
      {
        stability: num("0 to 1.", { minimum: 0, maximum: 1 }),
        similarity_boost: num("0 to 1.", { minimum: 0, maximum: 1 }),
        style: num("0 to 1.", { minimum: 0, maximum: 1 }),
        use_speaker_boost: bool("Speaker boost."),
      },
      [],
      { description: "Voice tuning." },
    ),
    stream: bool("Deliver the audio progressively (beta speech models only; ignored by others). The answer is still one complete stream.", { default: false }),
  },
  ["input", "voice_id"],
  { description: "`input` (or `text`) and `voice_id` (or `voice`) are required." },
);

const MUSIC_BODY = obj({
  model: oneOf(MUSIC_MODELS, "Music model.", { default: DEFAULT_MUSIC_MODEL }),
  prompt: str("Description of the music; required for `alpha-music` (at most 2000 visible characters), at most 200 for beta models where it drives style and arrangement.", { maxLength: 2000 }),
  lyrics: str("beta models only (at most 600 visible characters): optional tags `[verse]`, `[chorus]`, `[bridge]`, `[Instrumental]`; `[Instrumental]` alone yields a vocal-less track. Ignored by `alpha-music`.", { maxLength: 600 }),
  music_length_ms: int("Requested length (alias `duration_ms`); honoured by `alpha-music`, beta models derive the length from the lyrics.", { minimum: 1000, maximum: 300000, default: 30000 }),
  duration_ms: int("Alias of `music_length_ms`.", { minimum: 1000, maximum: 300000 }),
  response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128" }),
});

const SFX_BODY = obj(
  {
    model: oneOf(SFX_MODELS, "Sound-effect model.", { default: DEFAULT_SFX_MODEL }),
    prompt: str("Description of the sound (alias `text`), at most 500 characters.", { maxLength: 500 }),
    text: str("Alias of `prompt`.", { maxLength: 500 }),
    duration_seconds: num("Length in seconds; the model picks one when omitted.", { minimum: 0.5, maximum: 22 }),
    prompt_influence: num("0 (creative) to 1 (strict).", { minimum: 0, maximum: 1, default: 0.3 }),
    response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128" }),
  },
  ["prompt"],
);

const VOICE_DESIGN_BODY = obj(
  {
    description: str("What the voice sounds like (alias `text`), at most 1000 characters.", { maxLength: 1000 }),
    text: str("Alias of `description`.", { maxLength: 1000 }),
    model: oneOf(["beta-voice-design"], "Design model.", { default: "beta-voice-design" }),
    name: str("Label for the voice, at most 64 characters.", { maxLength: 64 }),
    preview_text: str("Text for an internal preview (audio is not returned), at most 500 characters.", { maxLength: 500 }),
    gender: oneOf(["male", "female"], "Gender of the voice."),
    age_group: oneOf(["child", "young", "middle-aged", "elderly"], "Age group of the voice."),
  },
  ["description"],
);

const VOICE_CLONE_FORM = obj(
  {
    file: { ...binary("Reference recording: MP3, WAV or M4A, at most 10 MB, 10 seconds to 5 minutes."), contentMediaType: "audio/*" },
    name: str("Label for the voice, at most 64 characters.", { maxLength: 64 }),
    model: oneOf(["beta-voice-clone"], "Clone model.", { default: "beta-voice-clone" }),
  },
  ["file"],
);

const IMAGE_BODY = obj(
  {
    model: oneOf(IMAGE_MODELS, "Image model (`imgB-1.1-ultra` and `imgA-v3` are legacy). `imgA-v4-vector*` produce SVG."),
    prompt: str("What to draw, at most 4000 characters.", { maxLength: 4000 }),
    n: int("Number of images, billed per image; `imgB-2-pro` always makes 1.", { minimum: 1, maximum: 4, default: 1 }),
    size: str("`auto`, `WIDTHxHEIGHT` or an aspect such as `16:9`; mapped to 1:1, 16:9, 9:16, 4:3, 3:4 or 21:9. Larger sizes raise the `imgB-2-pro` price.", { examples: ["auto", "1024x1024", "16:9"] }),
    image_url: HTTPS_URL("Source image: required for `imgB-edit-pro`, optional for `imgB-2-pro` (image-to-image), ignored by others."),
    image_urls: arr(HTTPS_URL("Reference image."), "`imgB-2-pro` only: up to 10 references (the first 6 at high fidelity); takes precedence over `image_url`.", { maxItems: 10 }),
    quality: oneOf(["low", "medium", "high"], "Quality tier, for `imgC-q1` (default `medium`); the hold books the tier's price."),
    idempotency_key: IDEMPOTENCY,
    parameters: PARAMETERS,
  },
  ["model", "prompt"],
);

const videoBody = (models: string[]): Schema =>
  obj(
    {
      model: oneOf(models, "Video model."),
      prompt: str("What happens in the video (drives the motion with `image_url`), at most 4000 characters.", { maxLength: 4000 }),
      duration: int("Seconds, each billed at the model's rate. `vidC-02-*` take 6 or 10 (default 6).", { minimum: 1, maximum: 10, default: 5 }),
      image_url: HTTPS_URL("First frame: switches to image-to-video (required for `vidC-02-512p`)."),
      idempotency_key: IDEMPOTENCY,
      parameters: PARAMETERS,
    },
    ["model", "prompt"],
  );

const AUDIO_FILE = (limit: string) => ({ ...binary(`The audio file (${limit}); the duration is read from the audio.`), contentMediaType: "audio/*" });
const TRANSCRIPTION_FORMAT = oneOf(["json", "text", "verbose_json"], "Answer format.", { default: "json" });

const CHAT_MESSAGE = obj(
  {
    role: oneOf(["system", "developer", "user", "assistant", "tool"], "Author of the message."),
    content: {
      description: "Text, or an array of text parts `{type: \"text\", text}`; may be null for an assistant message with tool calls.",
      oneOf: [{ type: "string" }, { type: "array", items: obj({ type: oneOf(["text"], "Part type."), text: str("Text.") }, ["type", "text"]) }, { type: "null" }],
    },
    tool_calls: arr(obj({ id: str("Call id."), type: oneOf(["function"], "Always `function`."), function: obj({ name: str("Function name."), arguments: str("JSON arguments.") }) }), "Assistant tool calls."),
    tool_call_id: str("The call this `tool` message answers (required for role `tool`)."),
  },
  ["role"],
);

const CHAT_BODY = obj(
  {
    model: str(TEXT_MODEL_DOC),
    messages: arr(CHAT_MESSAGE, "The conversation.", { minItems: 1 }),
    max_tokens: int("Output token limit, forwarded unchanged; the service imposes no cap.", { minimum: 1, default: 4096 }),
    max_completion_tokens: int("Alias of `max_tokens`.", { minimum: 1 }),
    temperature: num("Sampling temperature.", { minimum: 0, maximum: 2 }),
    tools: arr(
      obj({ type: oneOf(["function"], "Always `function`."), function: obj({ name: str("Function name."), description: str("What it does."), parameters: obj({}, [], { description: "JSON Schema of the arguments.", additionalProperties: true }) }, ["name"]) }, ["type", "function"]),
      "Functions the model may call.",
    ),
    tool_choice: { description: "`auto`, `none`, `required` or `{type: \"function\", function: {name}}`.", oneOf: [{ type: "string" }, { type: "object" }] },
    stream: bool("Answer as server-sent events (`chat.completion.chunk`, then `data: [DONE]`).", { default: false }),
    stream_options: obj({ include_usage: bool("Send a last chunk with `usage` and `choices: []` before `[DONE]`.") }),
  },
  ["model", "messages"],
);

const CHAT_USAGE = obj({
  prompt_tokens: int("Input tokens, cached ones included."),
  completion_tokens: int("Output tokens."),
  total_tokens: int("Sum of both."),
  prompt_tokens_details: obj({ cached_tokens: int("Input tokens served from the prompt cache (billed at 10%).") }),
});

const CHAT_COMPLETION = obj(
  {
    id: str("Completion id, `chatcmpl-...`."),
    object: oneOf(["chat.completion"], "Always `chat.completion`."),
    created: int("Unix time."),
    model: str("Concrete model id (an alias resolves)."),
    choices: arr(
      obj({
        index: int("Always 0."),
        message: obj({ role: oneOf(["assistant"], "Always `assistant`."), content: nullable(str("Answer text.")), tool_calls: arr(obj({}, [], { additionalProperties: true }), "Tool calls."), refusal: { type: "null" } }),
        logprobs: { type: "null" },
        finish_reason: oneOf(["stop", "length", "tool_calls"], "Why the model stopped."),
      }),
      "One choice.",
    ),
    usage: CHAT_USAGE,
  },
  ["id", "object", "created", "model", "choices", "usage"],
);

const BLOCK = obj({ type: oneOf(["text", "tool_use", "tool_result"], "Block type.") }, ["type"], { additionalProperties: true, description: "A content block: `text` {text}, `tool_use` {id, name, input} (assistant), `tool_result` {tool_use_id, content} (user)." });

const MESSAGES_BODY = obj(
  {
    model: str(TEXT_MODEL_DOC),
    messages: arr(
      obj({ role: oneOf(["user", "assistant"], "Author."), content: { description: "Text or content blocks.", oneOf: [{ type: "string" }, { type: "array", items: BLOCK }] } }, ["role", "content"]),
      "The conversation.",
      { minItems: 1 },
    ),
    system: { description: "System prompt: text or text blocks.", oneOf: [{ type: "string" }, { type: "array", items: BLOCK }] },
    max_tokens: int("Output token limit.", { minimum: 1 }),
    temperature: num("Sampling temperature.", { minimum: 0, maximum: 1 }),
    tools: arr(obj({ name: str("Tool name."), description: str("What it does."), input_schema: obj({}, [], { description: "JSON Schema of the input.", additionalProperties: true }) }, ["name"]), "Tools the model may use."),
    tool_choice: obj({ type: oneOf(["auto", "any", "none", "tool"], "Choice."), name: str("Tool name, with `type: tool`.") }, ["type"]),
    stream: bool("Answer as server-sent events (`message_start`, `content_block_*`, `message_delta`, `message_stop`; each `event:` name equals its `data.type`).", { default: false }),
  },
  ["model", "messages"],
);

const MESSAGE = obj(
  {
    id: str("Message id, `msg_...`."),
    type: oneOf(["message"], "Always `message`."),
    role: oneOf(["assistant"], "Always `assistant`."),
    model: str("Concrete model id (an alias resolves)."),
    content: arr(BLOCK, "`text` and `tool_use` blocks."),
    stop_reason: oneOf(["end_turn", "max_tokens", "tool_use"], "Why the model stopped."),
    stop_sequence: { type: "null" },
    usage: obj({
      input_tokens: int("Input tokens, cached ones excluded."),
      output_tokens: int("Output tokens."),
      cache_read_input_tokens: int("Input tokens served from the prompt cache (billed at 10%)."),
      cache_creation_input_tokens: int("Always 0."),
    }),
  },
  ["id", "type", "role", "model", "content", "stop_reason", "usage"],
);

// ----------------------------------------------------------------------------------------- responses

const LIST = (item: Schema, extra: Record<string, Schema> = {}): Schema =>
  obj({ object: oneOf(["list"], "Always `list`."), data: arr(item, "The items."), ...extra }, ["object", "data", ...Object.keys(extra)]);
const PAGE_QUERY = obj({
  limit: int("Page size.", { minimum: 1, maximum: 100, default: 20 }),
  after: str("Cursor: the `id` (ledger) or `job_id` (gallery) of the last item of the previous page."),
});
const JOB_ANSWERS = {
  200: ok("Replay of an idempotency key: the existing job, no new charge.", ref("MediaJob")),
  202: ok("A new job; poll `GET /v1/jobs/{id}` until its status is terminal.", ref("MediaJob")),
};
const AUDIO_ANSWER = (what: string, extraHeaders: Record<string, Schema> = {}): ResponseDoc => ({
  description: `${what} as audio bytes in \`response_format\`; with \`?save_to_blob=1\` the JSON \`audio.generation\` instead.`,
  headers: { ...COST_HEADERS, ...extraHeaders },
  content: { ...AUDIO_CONTENT, ...json(ref("AudioGeneration")) },
});
const SAVE_TO_BLOB = obj({ save_to_blob: oneOf(["1", "0", "true", "false"], "`1` stores the MP3 and answers the JSON form `audio.generation` (the output appears in the gallery).") });
const KEY_ROW = obj(
  { key_id: str("Key id."), name: nullable(str("Label.")), prefix: str("First 12 characters of the secret."), created_at: isoTime("Creation time."), last_used_at: nullable(isoTime("Last use.")) },
  ["key_id", "name", "prefix", "created_at", "last_used_at"],
);

// ------------------------------------------------------------------------------------------ the table

/**
 * Documentation of every public operation, keyed by `<METHOD> <route URL>` exactly as registered.
 * Routes of the operator API (`/v1/admin/*`) are hidden; a route missing here is documented as the
 * plugin derives it from its schemas.
 */
export const OPERATIONS: Record<string, OperationDoc> = {
  // --- auth
  "POST /v1/auth/register": {
    operationId: "register",
    summary: "Create an account",
    description: "Creates an account with a signup credit of 0.50 USD and returns its first API key and a session token. No key needed.",
    tags: ["auth"],
    access: "public",
    body: json(obj({ email: str("Email address.", { format: "email" }), password: str("At least 8 characters.", { minLength: 8 }) }, ["email", "password"])),
    responses: {
      200: ok("The new account.", obj({ user_id: str("Account id."), api_key: str("API key (secret)."), session_token: str("Session token (secret).") }, ["user_id", "api_key", "session_token"])),
      ...errors({ 400: "`invalid_request` (bad email, password under 8 characters)", 409: "`email_taken`" }),
    },
  },
  "POST /v1/auth/login": {
    operationId: "login",
    summary: "Log in",
    description: "Exchanges email and password for a new session token (usable on the account endpoints).",
    tags: ["auth"],
    access: "public",
    body: json(obj({ email: str("Email address."), password: str("Password.") }, ["email", "password"])),
    responses: {
      200: ok("A new session.", obj({ user_id: str("Account id."), session_token: str("Session token (secret).") }, ["user_id", "session_token"])),
      ...errors({ 400: "`invalid_request`", 401: "`auth_error` (wrong email or password)" }),
    },
  },
  "GET /v1/auth/me": {
    operationId: "getAccount",
    summary: "The caller's account",
    tags: ["auth"],
    access: "keyOrSession",
    responses: {
      200: ok(
        "The account.",
        obj(
          {
            user_id: str("Account id."),
            email: str("Email address."),
            balance_usd: usd("Current balance"),
            tier: int("Current tier, 0 to 4."),
            tier_name: str("Tier display name."),
            total_deposits_usd: usd("Cumulative deposits"),
            created_at: isoTime("Creation time."),
          },
          ["user_id", "email", "balance_usd", "tier", "tier_name", "total_deposits_usd", "created_at"],
        ),
      ),
      ...errors(AUTH_ERR),
    },
  },
  "GET /v1/auth/limits": {
    operationId: "getAccountLimits",
    summary: "The caller's effective limits and current usage",
    description: "The caller's tier row (with any operator overrides applied) plus current usage.",
    tags: ["auth"],
    access: "keyOrSession",
    responses: {
      200: ok(
        "Effective limits and usage.",
        {
          allOf: [
            ref("TierRow"),
            obj({
              object: oneOf(["account.limits"], "Always `account.limits`."),
              usage: obj({
                requests_this_minute: int("Requests in the current window."),
                tokens_this_minute: int("Tokens in the current window."),
                window_resets_in_s: int("Seconds until the window resets."),
                audio_in_use: obj({}, [], { description: "Audio pool slots in use, by pool.", additionalProperties: { type: "integer" } }),
                image_running: int("Image jobs running."),
                image_queued: int("Image jobs queued."),
                video_running: int("Video jobs running."),
                video_queued: int("Video jobs queued."),
              }),
            }),
          ],
        },
      ),
      ...errors(AUTH_ERR),
    },
  },
  "GET /v1/auth/keys": {
    operationId: "listKeys",
    summary: "List API keys",
    description: "The caller's keys (secrets are never shown again). All keys share balance and rate limits.",
    tags: ["auth"],
    access: "keyOrSession",
    responses: { 200: ok("The keys.", LIST(KEY_ROW)), ...errors(AUTH_ERR) },
  },
  "POST /v1/auth/keys": {
    operationId: "createKey",
    summary: "Create an API key",
    tags: ["auth"],
    access: "keyOrSession",
    body: json(obj({ name: str("Optional label.") })),
    responses: {
      201: ok("The new key; the secret `api_key` is shown only here.", obj({ key_id: str("Key id."), name: nullable(str("Label.")), api_key: str("The secret."), created_at: isoTime("Creation time.") }, ["key_id", "name", "api_key", "created_at"])),
      ...errors({ 400: "`invalid_request`", ...AUTH_ERR }),
    },
  },
  "DELETE /v1/auth/keys/:key_id": {
    operationId: "deleteKey",
    summary: "Delete an API key",
    description: "The key answers 401 at once.",
    tags: ["auth"],
    access: "keyOrSession",
    params: obj({ key_id: str("Key id.") }, ["key_id"]),
    responses: {
      200: ok("Deleted.", obj({ key_id: str("Key id."), deleted: bool("Always true.", { enum: [true] }) }, ["key_id", "deleted"])),
      ...errors({ ...AUTH_ERR, 404: "`key_not_found` (not the caller's key)" }),
    },
  },

  // --- billing
  "GET /v1/billing/ledger": {
    operationId: "listLedger",
    summary: "Ledger entries, newest first",
    description: "Every change of the balance. A succeeded job nets `-cost_usd` over its entries; a failed, refunded or expired job nets 0.",
    tags: ["billing"],
    access: "keyOrSession",
    query: PAGE_QUERY,
    responses: {
      200: ok(
        "One page.",
        LIST(
          obj(
            {
              id: str("Entry id (the cursor for `after`)."),
              kind: oneOf(["signup_credit", "deposit", "hold", "hold_release", "charge", "refund", "adjustment"], "Entry kind."),
              amount_usd: usd("Signed amount"),
              balance_usd: usd("Balance right after this entry"),
              job_id: nullable(str("The job the entry belongs to.")),
              created_at: isoTime("Time of the entry."),
            },
            ["id", "kind", "amount_usd", "balance_usd", "job_id", "created_at"],
          ),
          { has_more: bool("More entries follow.") },
        ),
      ),
      ...errors({ 400: "`invalid_request` (limit outside 1-100)", ...AUTH_ERR }),
    },
  },

  // --- catalog (public)
  "GET /v1/pricing": {
    operationId: "getPricing",
    summary: "Pricing catalog",
    description: "Every model's price as charged. Public; `Cache-Control: public, max-age=60`.",
    tags: ["catalog"],
    access: "public",
    responses: {
      200: ok(
        "The catalog.",
        obj(
          {
            object: oneOf(["pricing.catalog"], "Always `pricing.catalog`."),
            text_count: int("Number of text rows."),
            media_count: int("Number of media rows."),
            text: arr(ref("TextPriceRow"), "Token-priced models, sorted by `id`."),
            media: arr(
              obj(
                {
                  id: str("Model id."),
                  name: str("Display name."),
                  modality: oneOf(["image", "video", "audio"], "Modality."),
                  pricing_mode: oneOf(["per-image", "per-second", "per-minute", "per-quality", "per-mp", "per-char", "per-song", "per-call"], "How the model is priced."),
                  usd_per_call: num("Representative cost of one typical call, USD."),
                  detail: obj({}, [], { description: "Shape by `pricing_mode` (for example `provider_cost`, `markup` for per-image).", additionalProperties: true }),
                },
                ["id", "name", "modality", "pricing_mode", "usd_per_call", "detail"],
              ),
              "Image, video and audio models, sorted by `id`.",
            ),
          },
          ["object", "text_count", "media_count", "text", "media"],
        ),
      ),
      ...errors({ 500: "`api_error`" }),
    },
  },
  "GET /v1/limits/tiers": {
    operationId: "getTiers",
    summary: "Rate-limit tier matrix",
    description: "Tiers rise automatically with total deposits. Public; `Cache-Control: public, max-age=300`.",
    tags: ["catalog"],
    access: "public",
    responses: {
      200: ok("Tiers 0 to 4 in order.", obj({ object: oneOf(["tier.matrix"], "Always `tier.matrix`."), tiers: arr(ref("TierRow"), "Five tiers.", { minItems: 5, maxItems: 5 }) }, ["object", "tiers"])),
      ...errors({ 500: "`api_error`" }),
    },
  },
  "GET /v1/credits/pricing": {
    operationId: "getLegacyPricing",
    summary: "Legacy text-only pricing",
    description: "Kept for backward compatibility; `GET /v1/pricing` replaces it. Public.",
    tags: ["catalog"],
    access: "public",
    responses: {
      200: ok("The text rows.", obj({ object: oneOf(["list"], "Always `list`."), data: arr(ref("TextPriceRow"), "Text models."), deprecated: bool("Always true."), replaced_by: str("`/v1/pricing`.") }, ["object", "data"])),
    },
  },

  // --- audio
  "POST /v1/audio/speech": {
    operationId: "createSpeech",
    summary: "Text to speech",
    description:
      "Synchronous. Priced per 1000 input characters by model (see `GET /v1/pricing`). A designed or cloned voice may only be used by its owner.",
    tags: ["audio"],
    access: "key",
    headers: SIMULATE,
    body: json(SPEECH_BODY),
    responses: {
      200: {
        description: "The audio (`Content-Type` matches `response_format`).",
        headers: { ...COST_HEADERS, "X-Svc-Chars-Billed": str("Input characters used for pricing.") },
        content: AUDIO_CONTENT,
      },
      ...errors({
        400: "`not_a_tts_model`, `voice_required`, `input_too_long`, `voice_model_mismatch`, `invalid_request`",
        401: "`auth_error`",
        402: "`billing_error`",
        403: "`voice_not_owned`",
        429: "`rate_limited`",
        502: "`provider_error`",
      }),
    },
  },
  "POST /v1/audio/music": {
    operationId: "createMusic",
    summary: "Generate music",
    description: "Synchronous. `alpha-music` 0.135 USD per second of requested length; `beta-music` 0.045 and `beta-music-pro` 0.21 USD per song.",
    tags: ["audio"],
    access: "key",
    query: SAVE_TO_BLOB,
    headers: SIMULATE,
    body: json(MUSIC_BODY),
    responses: {
      200: AUDIO_ANSWER("The music", { "X-Svc-Duration-Sec": H.duration }),
      ...errors({
        400: "`not_a_music_model`, `prompt_too_long`, `lyrics_too_long`, `invalid_duration`, `invalid_request`",
        401: "`auth_error`",
        402: "`billing_error`",
        429: "`rate_limited`",
        502: "`provider_error`",
      }),
    },
  },
  "POST /v1/audio/sfx": {
    operationId: "createSoundEffect",
    summary: "Generate a sound effect",
    description: "Synchronous. Flat 0.027 USD per generation.",
    tags: ["audio"],
    access: "key",
    query: SAVE_TO_BLOB,
    headers: SIMULATE,
    body: json(SFX_BODY),
    responses: {
      200: AUDIO_ANSWER("The sound effect", { "X-Svc-Duration-Sec": H.duration }),
      ...errors({
        400: "`not_an_sfx_model`, `prompt_too_long`, `invalid_duration`, `invalid_request`",
        401: "`auth_error`",
        402: "`billing_error`",
        429: "`rate_limited`",
        502: "`provider_error`",
      }),
    },
  },
  "POST /v1/audio/transcriptions": {
    operationId: "createTranscription",
    summary: "Speech to text",
    description:
      "The audio as multipart part `file` (up to 25 MB) or as JSON `audio_url` (https, up to 100 MB). Billed per started minute, 1-minute minimum (0.0009 USD per minute).",
    tags: ["audio"],
    access: "key",
    headers: SIMULATE,
    body: {
      "multipart/form-data": {
        schema: obj(
          {
            file: AUDIO_FILE("up to 25 MB"),
            model: str("Transcription model or alias.", { default: "transcribe" }),
            response_format: TRANSCRIPTION_FORMAT,
          },
          ["file"],
        ),
      },
      ...json(
        obj(
          {
            audio_url: HTTPS_URL("Where to download the audio (up to 100 MB; private addresses are refused)."),
            model: str("Transcription model or alias.", { default: "transcribe" }),
            response_format: TRANSCRIPTION_FORMAT,
          },
          ["audio_url"],
        ),
      ),
    },
    responses: {
      200: {
        description: "The transcript: `{text}`; `response_format=text` answers plain text, `verbose_json` adds `duration` and `segments`.",
        headers: { ...COST_HEADERS, "X-Svc-Duration-Sec": H.duration },
        content: { ...json(obj({ text: str("The transcript.") }, ["text"], { additionalProperties: true })), "text/plain": { schema: { type: "string" } } },
      },
      ...errors({
        400: "`invalid_request`, `invalid_model`, `audio_unreadable`, `invalid_audio_url`, `audio_url_unreachable`",
        401: "`auth_error`",
        402: "`billing_error`",
        413: "`invalid_request` (file over 25 MB or download over 100 MB)",
        429: "`rate_limited`",
        502: "`provider_error`",
      }),
    },
  },
  "POST /v1/audio/understand": {
    operationId: "understandAudio",
    summary: "Ask a question about audio",
    description: "Audio scene question answering. Billed per started minute, 1-minute minimum (about 0.0006 USD per minute).",
    tags: ["audio"],
    access: "key",
    headers: SIMULATE,
    body: {
      "multipart/form-data": {
        schema: obj(
          {
            file: AUDIO_FILE("up to 25 MB"),
            prompt: str("The question about the audio."),
            model: str("Audio-understanding model or alias.", { default: "audio-understand" }),
          },
          ["file", "prompt"],
        ),
      },
    },
    responses: {
      200: ok(
        "The answer.",
        obj({ text: str("The answer."), model: str("Resolved model id."), duration_sec: num("Audio duration used for billing, seconds.") }, ["text", "model", "duration_sec"]),
        { ...COST_HEADERS, "X-Svc-Duration-Sec": H.duration },
      ),
      ...errors({
        400: "`invalid_request` (file or prompt missing), `invalid_model`, `audio_unreadable`",
        401: "`auth_error`",
        402: "`billing_error`",
        413: "`invalid_request` (file over 25 MB)",
        429: "`rate_limited`",
        502: "`provider_error`",
      }),
    },
  },

  // --- voices
  "GET /v1/audio/voices": {
    operationId: "listVoices",
    summary: "Voice library",
    description: "System voices of both providers (alpha about 3000, beta about 300), cached 5 minutes per provider. Use a voice's `voice_id` with the speech endpoint.",
    tags: ["voices"],
    access: "key",
    query: obj({ provider: oneOf(["alpha", "beta", "all"], "Which library.", { default: "alpha" }) }),
    responses: {
      200: ok(
        "The voices.",
        obj({ object: oneOf(["list"], "Always `list`."), provider: oneOf(["alpha", "beta", "all"], "The library asked for."), data: arr(ref("Voice"), "Voice records.") }, ["object", "provider", "data"]),
        { "X-Svc-Cache": oneOf(["may-hit", "partial", "miss"], "`may-hit`: served from the cache; `partial`: with `provider=all` one provider answered; `miss`: fetched fresh.") },
      ),
      ...errors({ 400: "`invalid_request` (bad provider)", ...AUTH_ERR, 502: "`provider_error` (catalog unavailable; with `all` only when both fail)" }),
    },
  },
  "GET /v1/audio/voices/alpha/:voice_id/preview.mp3": {
    operationId: "getVoicePreview",
    summary: "Preview of an alpha library voice",
    description: "Public, so that `<audio>` tags can play it. Cached for a day.",
    tags: ["voices"],
    access: "public",
    params: obj({ voice_id: str("An alpha voice id.") }, ["voice_id"]),
    responses: {
      200: { description: "MP3 sample.", content: { "audio/mpeg": { schema: binary("MP3 sample.") } } },
      ...errors({ 404: "`not_found`" }),
    },
  },
  "POST /v1/audio/voice-design": {
    operationId: "designVoice",
    summary: "Design a voice from a description",
    description: "Flat 4.20 USD, charged once; the voice belongs to the caller and works with `beta-speech-*` models.",
    tags: ["voices"],
    access: "key",
    headers: SIMULATE,
    body: json(VOICE_DESIGN_BODY),
    responses: {
      200: ok(
        "The new voice.",
        obj({ voice_id: str("`svc_<random>`."), name: nullable(str("The label, or null.")), model: str("Model id."), cost_usd: usd("Charged amount"), balance_usd: usd("Remaining balance") }, ["voice_id", "name", "model", "cost_usd", "balance_usd"]),
        COST_HEADERS,
      ),
      ...errors({
        400: "`not_a_voice_design_model`, `description_too_long`, `invalid_request`",
        401: "`auth_error`",
        402: "`insufficient_credits` (balance below 4.20 USD)",
        429: "`rate_limited`",
        500: "`ownership_write_failed`",
        502: "`provider_error`",
      }),
    },
  },
  "POST /v1/audio/voice-clone": {
    operationId: "cloneVoice",
    summary: "Clone a voice from a recording",
    description: "multipart/form-data. Flat 2.10 USD, charged once; the voice belongs to the caller and works with `beta-speech-*` models. Out-of-range files are rejected before any charge.",
    tags: ["voices"],
    access: "key",
    headers: SIMULATE,
    body: { "multipart/form-data": { schema: VOICE_CLONE_FORM } },
    responses: {
      200: ok(
        "The new voice.",
        obj({ voice_id: str("`svc_<random>`."), name: nullable(str("The label, or null.")), cost_usd: usd("Charged amount (2.10)"), balance_usd: usd("Remaining balance") }, ["voice_id", "name", "cost_usd", "balance_usd"]),
        COST_HEADERS,
      ),
      ...errors({
        400: "`not_a_voice_clone_model`, `invalid_request` (file missing or form invalid), `reference_too_short`, `reference_too_long`, `audio_unreadable`",
        401: "`auth_error`",
        402: "`insufficient_credits` (balance below 2.10 USD)",
        413: "`invalid_request` (file over 10 MB)",
        415: "`invalid_request` (not MP3, WAV or M4A)",
        429: "`rate_limited`",
        500: "`ownership_write_failed` (no charge; safe to retry)",
        502: "`provider_error`",
      }),
    },
  },

  // --- media jobs
  "POST /v1/images/generations": {
    operationId: "createImageJob",
    summary: "Submit an image job",
    description: "Asynchronous: a hold of the per-image price times `n` is placed at submit; the charge happens only on success. Poll `GET /v1/jobs/{id}` every 1-2 s.",
    tags: ["media jobs"],
    access: "key",
    headers: SIMULATE,
    body: json(IMAGE_BODY),
    responses: {
      ...JOB_ANSWERS,
      ...errors({
        400: "`invalid_model`, `invalid_prompt`, `image_url_required`, `too_many_references`, `invalid_image_url`, `invalid_request`",
        401: "`auth_error`",
        402: "`insufficient_balance`",
        409: "`idempotency_conflict`",
        413: "`invalid_request` (body over 25 MB)",
        429: "`rate_limited`",
        500: "`db_error`, `provider_error` (hold fully refunded)",
      }),
    },
  },
  "POST /v1/videos/generations": {
    operationId: "createVideoJob",
    summary: "Submit a video job",
    description: "Asynchronous: a hold of rate x duration (or the clip price) is placed at submit; the charge happens only on success. Poll `GET /v1/jobs/{id}` every 2-5 s. Tier 0 cannot make videos.",
    tags: ["media jobs"],
    access: "key",
    headers: SIMULATE,
    body: json(videoBody(VIDEO_MODELS)),
    responses: {
      ...JOB_ANSWERS,
      ...errors({
        400: "`invalid_model`, `invalid_prompt`, `invalid_duration`, `image_url_required`, `invalid_image_url`, `invalid_request`",
        401: "`auth_error`",
        402: "`insufficient_balance`",
        409: "`idempotency_conflict`",
        413: "`invalid_request` (body over 25 MB)",
        429: "`rate_limited`",
        500: "`db_error`, `provider_error` (hold fully refunded)",
      }),
    },
  },
  "POST /v1/genmedia/jobs": {
    operationId: "createGenmediaJob",
    summary: "Submit a video job (vidD alias)",
    description: "The same request, billing and answer as `POST /v1/videos/generations`, for `vidD-*` models only.",
    tags: ["media jobs"],
    access: "key",
    headers: SIMULATE,
    body: json(videoBody(GENMEDIA_MODELS)),
    responses: {
      ...JOB_ANSWERS,
      ...errors({
        400: "`invalid_model` (not a vidD model), `invalid_prompt`, `invalid_duration`, `invalid_image_url`, `invalid_request`",
        401: "`auth_error`",
        402: "`insufficient_balance`",
        409: "`idempotency_conflict`",
        413: "`invalid_request` (body over 25 MB)",
        429: "`rate_limited`",
        500: "`db_error`, `provider_error` (hold fully refunded)",
      }),
    },
  },
  "GET /v1/jobs/:id": {
    operationId: "getJob",
    summary: "Poll a job",
    description: "Video usually finishes in 1-3 minutes (runner gives up after 10), images within 30 seconds (gives up after 5).",
    tags: ["media jobs"],
    access: "key",
    params: obj({ id: str("Job id.") }, ["id"]),
    responses: { 200: ok("The job.", ref("MediaJob")), ...errors({ ...AUTH_ERR, 404: "`job_not_found` (unknown or another user's job)" }) },
  },

  // --- outputs
  "GET /v1/gallery": {
    operationId: "listGallery",
    summary: "The caller's stored outputs",
    description: "Stored audio (`save_to_blob`), succeeded images and videos, newest first.",
    tags: ["outputs"],
    access: "keyOrSession",
    query: PAGE_QUERY,
    responses: {
      200: ok(
        "One page.",
        LIST(
          obj(
            {
              job_id: str("Job id."),
              kind: oneOf(["image", "video", "audio"], "Kind."),
              model: str("Model id."),
              url: str("The (first) output."),
              urls: arr(str("URL."), "Every output."),
              content_type: str("MIME type."),
              duration_sec: nullable(num("Duration of audio or video, seconds.")),
              cost_usd: nullable(usd("Charged amount")),
              created_at: isoTime("Creation time."),
              share_url: str("Public share page."),
            },
            ["job_id", "kind", "model", "url", "urls", "content_type", "duration_sec", "cost_usd", "created_at", "share_url"],
          ),
          { has_more: bool("More items follow.") },
        ),
      ),
      ...errors({ 400: "`invalid_request` (limit outside 1-100)", ...AUTH_ERR }),
    },
  },
  "GET /share/:job_id": {
    operationId: "getSharePage",
    summary: "Public share page of one output",
    tags: ["outputs"],
    access: "public",
    params: obj({ job_id: str("Job id of a succeeded job.") }, ["job_id"]),
    responses: { 200: html("An HTML page showing the output."), ...errors({ 404: "`job_not_found`" }) },
  },
  "GET /v1/files/*": {
    operationId: "getFile",
    summary: "A stored output file",
    description: "Public, unguessable permanent URLs of stored outputs (as found in `output.url`). Supports `Range` requests.",
    tags: ["outputs"],
    access: "public",
    path: "/v1/files/{key}",
    params: obj({ key: str("Storage key (may contain `/`).") }, ["key"]),
    headers: obj({ range: str("Optional byte range, for example `bytes=0-1023`.") }),
    responses: {
      200: { description: "The file.", content: { "*/*": { schema: binary("The file.") } } },
      206: { description: "The requested range.", content: { "*/*": { schema: binary("Part of the file.") } } },
      ...errors({ 404: "`not_found`", 416: "`range_not_satisfiable`" }),
    },
  },

  // --- text
  "POST /v1/chat/completions": {
    operationId: "createChatCompletion",
    summary: "Chat (OpenAI chat-completions format)",
    description:
      "Every text model answers here. Priced per token (cached input at 10%; an identical prompt prefix of at least 1024 tokens within 5 minutes is cached). With `stream: true` the answer is `text/event-stream`.",
    tags: ["text"],
    access: "key",
    headers: SIMULATE,
    body: json(CHAT_BODY),
    responses: {
      200: {
        description: "The completion, or server-sent events when `stream` is true.",
        headers: { ...COST_HEADERS, ...FALLBACK_HEADERS },
        content: { ...json(CHAT_COMPLETION), "text/event-stream": { schema: str("`data: {chat.completion.chunk}` lines, then `data: [DONE]`.") } },
      },
      ...errors({ 400: "`invalid_request`, `invalid_model`", 401: "`auth_error`", 402: "`billing_error`", 429: "`rate_limited`", 502: "`provider_error`" }),
    },
  },
  "POST /v1/messages": {
    operationId: "createMessage",
    summary: "Chat (Anthropic messages format)",
    description: "Every text model answers here. The key may be sent as `Authorization: Bearer` or `x-api-key`.",
    tags: ["text"],
    access: "keyOrXApiKey",
    headers: SIMULATE,
    body: json(MESSAGES_BODY),
    responses: {
      200: {
        description: "The message, or server-sent events when `stream` is true.",
        headers: { ...COST_HEADERS, ...FALLBACK_HEADERS },
        content: { ...json(MESSAGE), "text/event-stream": { schema: str("`event: <type>` / `data: {...}` pairs.") } },
      },
      ...errors({ 400: "`invalid_request`, `invalid_model`", 401: "`auth_error`", 402: "`billing_error`", 429: "`rate_limited`", 502: "`provider_error`" }),
    },
  },

  // --- models
  "GET /v1/models": {
    operationId: "listModels",
    summary: "Live model list",
    description: "Enabled models of every modality, sorted by id; disabled models are omitted.",
    tags: ["models"],
    access: "keyOrSession",
    query: obj({ tier: int("Only models usable on this tier.", { minimum: 0, maximum: 4 }), capability: str("Only models with this capability (for example `chat`, `tools`, `speech`, `image`, `video`).") }),
    responses: {
      200: ok(
        "The models.",
        LIST(
          obj(
            {
              id: str("Model id."),
              object: oneOf(["model"], "Always `model`."),
              created: int("Unix time."),
              owned_by: str("Model family."),
              modality: oneOf(["text", "audio", "image", "video"], "Modality."),
              capabilities: arr(str("Capability."), "What the model can do."),
              tier_min: int("Lowest tier that may use it."),
              legacy: bool("Legacy model."),
              aliases: arr(str("Alias."), "Aliases resolving to it."),
            },
            ["id", "object", "owned_by", "capabilities"],
          ),
        ),
      ),
      ...errors({ 400: "`invalid_request` (tier outside 0-4)", ...AUTH_ERR }),
    },
  },
  "GET /v1/models/recommend": {
    operationId: "recommendModel",
    summary: "Recommended model for a kind of agent",
    tags: ["models"],
    access: "keyOrSession",
    query: obj({ agent: oneOf(["coding", "chat", "research", "agent", "cheap"], "Kind of agent.", { default: "chat" }) }),
    responses: {
      200: ok(
        "The recommendation.",
        obj({ object: oneOf(["model.recommendation"], "Always `model.recommendation`."), agent: str("Kind of agent."), model: str("Concrete model id."), alias: str("Alias that follows the recommendation."), reason: str("Why.") }, ["object", "agent", "model", "alias", "reason"]),
      ),
      ...errors({ 400: "`invalid_request` (unknown agent)", ...AUTH_ERR }),
    },
  },
  "GET /v1/capabilities": {
    operationId: "getCapabilities",
    summary: "Gateway capabilities",
    tags: ["models"],
    access: "keyOrSession",
    responses: {
      200: ok(
        "Capabilities, endpoints, aliases, streaming and fallback support.",
        obj(
          {
            object: oneOf(["capabilities"], "Always `capabilities`."),
            capabilities: arr(str("Capability."), "Every capability of the enabled models."),
            endpoints: arr(str("`METHOD /path`."), "Main endpoints."),
            aliases: obj({}, [], { description: "Text alias -> model id.", additionalProperties: { type: "string" } }),
            streaming: obj({}, [], { additionalProperties: true, description: "Streaming support." }),
            fallback: obj({}, [], { additionalProperties: true, description: "Fallback headers and layers." }),
          },
          ["object", "capabilities", "endpoints"],
        ),
      ),
      ...errors(AUTH_ERR),
    },
  },

  // --- operations
  "GET /healthz": {
    operationId: "health",
    summary: "Liveness",
    tags: ["operations"],
    access: "public",
    responses: { 200: ok("The process answers.", obj({ status: oneOf(["ok"], "Always `ok`.") }, ["status"])) },
  },
  "GET /readyz": {
    operationId: "ready",
    summary: "Readiness",
    description: "Database and blob storage reachable (and Redis when required).",
    tags: ["operations"],
    access: "public",
    responses: {
      200: ok("Ready.", obj({ status: oneOf(["ready"], "`ready`."), checks: obj({}, [], { description: "Check -> `ok` or the failure.", additionalProperties: { type: "string" } }) }, ["status", "checks"])),
      503: ok("Not ready.", obj({ status: oneOf(["not_ready"], "`not_ready`."), checks: obj({}, [], { additionalProperties: { type: "string" } }) }, ["status", "checks"])),
    },
  },
  "GET /metrics": {
    operationId: "metrics",
    summary: "Prometheus metrics",
    tags: ["operations"],
    access: "public",
    responses: { 200: { description: "Prometheus text format.", content: { "text/plain": { schema: { type: "string" } } } } },
  },
  "GET /openapi.json": {
    operationId: "openapi",
    summary: "This OpenAPI document",
    description: "Readable reference: `GET /docs`.",
    tags: ["operations"],
    access: "public",
    responses: { 200: ok("OpenAPI 3.1 document.", { type: "object" }) },
  },
};

/** Tags in display order, with their descriptions. */
const TAGS = {
  auth: "Accounts, sessions and API keys.",
  billing: "The balance ledger.",
  catalog: "Public pricing and rate-limit tiers.",
  audio: "Synchronous speech, music, sound effects, transcription and audio understanding.",
  voices: "Voice library, voice design and voice cloning.",
  "media jobs": "Asynchronous image and video generation.",
  outputs: "Stored outputs: gallery, share pages and files.",
  text: "Chat in the OpenAI and Anthropic formats.",
  models: "The live model list.",
  operations: "Health, readiness, metrics and this document.",
} as const;
type Tag = keyof typeof TAGS;

const SECURITY: Record<Access, { [scheme: string]: string[] }[]> = {
  public: [],
  key: [{ apiKey: [] }],
  keyOrSession: [{ apiKey: [] }, { sessionToken: [] }],
  keyOrXApiKey: [{ apiKey: [] }, { xApiKey: [] }],
};

const DESCRIPTION = `A paid gateway in front of generative-media upstreams: speech, music, sound effects, voices, images, video, transcription and chat, metered to the micro-dollar from a prepaid USD balance.

**Authentication.** Send \`Authorization: Bearer <API_KEY>\` (from \`POST /v1/auth/register\` or \`POST /v1/auth/keys\`). \`POST /v1/messages\` also accepts \`x-api-key\`. The account endpoints also accept the session token. A missing or invalid key answers 401 \`auth_error\`.

**Errors.** Every error is JSON \`{"error": {"code", "message", "type", "param"}}\` (the \`Error\` schema); \`error.code\` is stable.

**Rate limits.** Every authenticated answer carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (seconds); every 429 carries \`Retry-After\`. Limits depend on the tier (\`GET /v1/limits/tiers\`).

**Billing.** Synchronous calls are charged when they succeed; their answers carry \`X-Svc-Cost-USD\` and \`X-Svc-Balance-USD\`. Image and video jobs place a hold at submit, charge only on success and release the hold otherwise.`;

/** The documented schema of a route: the route's own schema with the table's documentation laid over it. */
function documented(schema: FastifySchema | undefined, doc: OperationDoc): FastifySchema {
  const own = schema ?? {};
  return {
    ...own,
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: doc.tags,
    security: SECURITY[doc.access],
    body: doc.body ? { content: doc.body } : own.body,
    querystring: doc.query ?? own.querystring,
    params: doc.params ?? own.params,
    headers: doc.headers ?? own.headers,
    response: doc.responses,
  };
}

/**
 * Registers @fastify/swagger (dynamic, OpenAPI 3.1), `GET /openapi.json` and Swagger UI at `GET /docs`,
 * all public. Call it before any route is registered.
 */
export async function registerOpenApi(app: App, opts: { publicBaseUrl: string }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "Media Gateway API", version: pkg.version, description: DESCRIPTION },
      servers: [{ url: opts.publicBaseUrl }],
      tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
      security: SECURITY.key,
      components: {
        securitySchemes: {
          apiKey: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <API_KEY>`." },
          sessionToken: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <SESSION_TOKEN>` (account endpoints only)." },
          xApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The API key in `x-api-key` (`POST /v1/messages`)." },
        },
        schemas: COMPONENTS,
      },
    },
    // Paths are documented as registered, whatever the path of PUBLIC_BASE_URL.
    stripBasePath: false,
    transform: ({ schema, url, route }) => {
      if (url.startsWith("/v1/admin/")) return { schema: { ...schema, hide: true }, url };
      const method = Array.isArray(route.method) ? route.method[0] : route.method;
      const doc = OPERATIONS[`${method} ${url}`];
      if (!doc) return { schema, url };
      return { schema: documented(schema, doc), url: doc.path ?? url };
    },
  });

  let document: string | null = null;
  app.get("/openapi.json", async (_req, reply) => {
    document ??= JSON.stringify(app.swagger());
    return reply
      .type("application/json; charset=utf-8")
      .header("cache-control", "public, max-age=300")
      .header("access-control-allow-origin", "*")
      .send(document);
  });

  // Swagger UI from the package's own files; the policy keeps the page from loading anything external.
  const api = new URL(opts.publicBaseUrl).origin;
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: [
      "default-src 'self'",
      "base-uri 'self'",
      `connect-src 'self' ${api}`,
      "font-src 'self' data:",
      "form-action 'self'",
      "frame-ancestors 'self'",
      "img-src 'self' data:",
      "object-src 'none'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
    ].join("; "),
    theme: { title: "Media Gateway API reference" },
    uiConfig: { deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0, displayRequestDuration: true, tryItOutEnabled: false },
  });
}
