/**
 * A loopback fake of OpenAI's audio-to-text endpoints, for contract tests: it answers in the shapes of the
 * `openai` npm package (`resources/audio/transcriptions.ts` `Transcription`; `resources/chat/completions/
 * completions.ts` `ChatCompletion`, `ChatCompletionContentPartInputAudio`), validates the model and the
 * fields as OpenAI does, and misbehaves on request. The official `openai` client accepts it
 * (test/upstreams/openai-audio/official-client.test.ts).
 *
 * Its rules follow the installed `openai` package (7.57.0): the transcription models are `AudioModel` of
 * `node_modules/openai/resources/audio/audio.d.ts` (all served: their announced shutdown is 2027-02-26), the
 * form fields `TranscriptionCreateParamsBase` of `resources/audio/transcriptions.d.ts`; the audio chat
 * models are the audio ones of `ChatModel` (`resources/shared.d.ts`), the body fields
 * `ChatCompletionCreateParamsBase` of `resources/chat/completions/completions.d.ts`. `ChatModel` lists the
 * `gpt-4o-*-audio-preview` models with an announced shutdown of 2026-05-07, but upstreams.md pins
 * `gpt-4o-audio-preview` as the default, so the fake still serves them (a test retires one with `retired`);
 * `gpt-4o-audio-preview-2024-10-01` (shut down 2025-10-10) is retired.
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/audio/transcriptions` (multipart `file`, `model`, optional `response_format`, `prompt`, ...) | 200 `{text, usage?}`: `text` is `Fake transcript of a <size>-byte .<ext> file.`; when the fake can read the duration (WAV, MP3) `usage` is whisper-1's `{type: "duration", seconds}` (whole seconds, rounded up), or for the other models `{type: "tokens", input_tokens, input_token_details, output_tokens, total_tokens}` (illustrative counts); else absent. `response_format: "text"` answers the text alone (`text/plain`) |
 * | `POST /v1/chat/completions` (JSON with an `input_audio` part) | 200 `{id, object: "chat.completion", created, model, choices: [{index: 0, message: {role: "assistant", content, refusal: null, annotations: []}, logprobs: null, finish_reason: "stop"}], usage, service_tier, system_fingerprint}`; `content` is `Fake answer to "<question>" about <n> bytes of <format> audio.` |
 * | anything else | 404 `Invalid URL (<METHOD> <path>)` |
 * Every call needs `Authorization: Bearer <key>` (the configured `apiKey`, or any non-empty key when none is
 * configured); otherwise 401 (`invalid_api_key`, the key masked as OpenAI masks it). Answers come after
 * `latencyMs`. Errors are OpenAI's `{"error": {message, type, param, code}}`.
 *
 * Validation (400 `invalid_request_error`; wording *unverified* unless noted), in this order:
 * - both: a field the SDK does not name is refused: chat with OpenAI's "Unrecognized request argument
 *   supplied: x" (`param` and `code` null; quoted in coroot/coroot#698, davidmigloz/langchain_dart#712),
 *   transcription with "Unknown parameter: 'x'." (`unknown_parameter`; a multipart name counts by its stem:
 *   `include[]` is `include`); then a retired model (the defaults above, or the `retired` option) answers
 *   404 `model_not_found` "The model `x` has been deprecated, learn more here: ..." (quoted in
 *   openai/openai-quickstart-node#127), and any other id the fake does not serve 404 `model_not_found`
 *   "The model `x` does not exist or you do not have access to it." (quoted in jdmnk/codex-imagegen-cli#18);
 * - transcription: `model` missing ("you must provide a model parameter"); `file` missing or empty; a
 *   file name whose extension is not one OpenAI lists (`flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav,
 *   webm`: "Invalid file format. Supported formats: [...]"), or whose bytes are not of the format the
 *   extension names ("Audio file might be corrupted or unsupported", `invalid_value`): OpenAI decodes by
 *   the file name, so a misnamed file fails there too; a `response_format` other than `json` for the
 *   gpt-4o transcribe models ("the only supported format is `json`"), and other than `json` or `text` at
 *   all (a limit of the fake);
 * - understanding: the body is not JSON; `model` or `messages` missing; no `input_audio` part in the
 *   messages; an `input_audio.format` other than `wav` or `mp3` (`invalid_value`); `data` that is not
 *   base64, or whose bytes are not of the declared format.
 * `usage` token counts of the chat answer are illustrative (10 audio tokens per second when the duration
 * is known).
 *
 * ## Misbehaviour markers
 * In the understanding question as `[fake:NAME]` (or the transcription's `prompt` field), or for every
 * request with the `markers` option / {@link OpenAIAudioFake.setMarkers}; unknown names are ignored:
 * | marker | effect |
 * |---|---|
 * | `429` | 429 `rate_limit_exceeded` (`type: "requests"`) with `retry-after: 1` |
 * | `500` | 500 `server_error` ("The server had an error while processing your request...") |
 * | `400` | 400 `invalid_request_error` (`invalid_value`) |
 * | `malformed` | 200 JSON without the expected field (`text`; `choices` empty) |
 * | `hang` | never answered (until `close()`) |
 * | `slow` | answered after `slowMs` instead of `latencyMs` |
 * | `echo-key` | 401 with the caller's whole key echoed in the message (redaction tests) |
 * Markers are applied after authentication (`echo-key` before it) and before validation.
 *
 * `requests` records every request in order: `method`, `path`, `headers` (lower-case; `authorization`
 * keeps only its scheme: `Bearer [redacted]`) and `body`: for a multipart request its fields, with `file`
 * replaced by `{name, size, type}`; for JSON the parsed body with every `input_audio.data` replaced by its
 * length in characters; null when empty, the string `"<unparsable>"` when neither parses.
 */
import { randomUUID } from "node:crypto";
import type http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { audioDurationSec } from "../src/upstreams/audio-convert.ts";
import { isJsonObject as isObject, markersOf, recordAuthorizationScheme, sendJson, startLoopbackServer } from "./loopback.ts";
import { sniffUploadFormat } from "../src/upstreams/openai-compatible/audio.ts";
import type { UploadFormat } from "../src/upstreams/openai-compatible/audio.ts";

/** Options of {@link startOpenAIAudioFake}. */
export interface OpenAIAudioFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty Bearer key. */
  apiKey?: string;
  /** Markers applied to every request, as if each carried them. Default none. */
  markers?: readonly string[];
  /** Time before each answer, ms (default 20). */
  latencyMs?: number;
  /** Time before the answer with `[fake:slow]`, ms (default 10 000). */
  slowMs?: number;
  /** Model ids retired in addition to {@link RETIRED_AUDIO_MODELS}: they answer 404 `model_not_found`. */
  retired?: readonly string[];
}

/** One recorded request (see the module comment). */
export interface OpenAIAudioFakeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A running fake: `url` has no version (a source's `baseUrl` is `${url}/v1`). */
export interface OpenAIAudioFake {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every request received, in order. */
  requests: OpenAIAudioFakeRequest[];
  /** Replaces the markers applied to every request. */
  setMarkers(markers: readonly string[]): void;
  /** Forgets the recorded requests (the array stays the same object) and the markers set by {@link setMarkers}. */
  reset(): void;
  /** Stops listening and drops every connection (requests never answered included). */
  close(): Promise<void>;
}

const TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions";
const CHAT_PATH = "/v1/chat/completions";
/** Largest request read, bytes: OpenAI takes 25 MB files; their base64 in JSON is a third larger. */
const MAX_BODY_BYTES = 40 * 1024 * 1024;
/** The extensions OpenAI's transcription accepts, and the container each one names. */
const EXTENSIONS: Readonly<Record<string, UploadFormat>> = {
  flac: "flac",
  m4a: "m4a",
  mp3: "mp3",
  mp4: "m4a",
  mpeg: "mp3",
  mpga: "mp3",
  oga: "ogg",
  ogg: "ogg",
  wav: "wav",
  webm: "webm",
};
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The transcription models the fake serves: `AudioModel` (`node_modules/openai/resources/audio/audio.d.ts`). */
export const TRANSCRIPTION_MODELS: readonly string[] = [
  "whisper-1",
  "gpt-transcribe",
  "gpt-4o-transcribe",
  "gpt-4o-mini-transcribe",
  "gpt-4o-mini-transcribe-2025-12-15",
  "gpt-4o-transcribe-diarize",
];
/** Transcription models that answer `json` only (`TranscriptionCreateParamsBase.response_format`). */
const JSON_ONLY_MODELS = ["gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-mini-transcribe-2025-12-15"];

/** The chat models with audio input the fake serves: the audio ones of `ChatModel` (`resources/shared.d.ts`). */
export const AUDIO_CHAT_MODELS: readonly string[] = [
  "gpt-audio-mini",
  "gpt-audio-mini-2025-12-15",
  "gpt-4o-audio-preview",
  "gpt-4o-audio-preview-2024-12-17",
  "gpt-4o-audio-preview-2025-06-03",
  "gpt-4o-mini-audio-preview",
  "gpt-4o-mini-audio-preview-2024-12-17",
];

/** Audio models OpenAI shut down (`ChatModel`'s deprecation note: 2025-10-10). */
export const RETIRED_AUDIO_MODELS: readonly string[] = ["gpt-4o-audio-preview-2024-10-01"];

/** The form fields of `TranscriptionCreateParamsBase` (`resources/audio/transcriptions.d.ts`). */
const TRANSCRIPTION_FIELDS = [
  "file",
  "model",
  "chunking_strategy",
  "include",
  "keywords",
  "known_speaker_names",
  "known_speaker_references",
  "language",
  "languages",
  "prompt",
  "response_format",
  "stream",
  "temperature",
  "timestamp_granularities",
];

/** The body fields of `ChatCompletionCreateParamsBase` (`resources/chat/completions/completions.d.ts`). */
const CHAT_FIELDS = [
  "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
  "max_tokens", "metadata", "modalities", "moderation", "n", "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
  "prompt_cache_options", "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier",
  "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity",
  "web_search_options",
];

/** OpenAI's error body. */
function errorBody(message: string, type: string, code: string | null, param: string | null = null): { error: Record<string, unknown> } {
  return { error: { message, type, param, code } };
}

/** Starts the fake on loopback. */
export async function startOpenAIAudioFake(options: OpenAIAudioFakeOptions = {}): Promise<OpenAIAudioFake> {
  const latencyMs = options.latencyMs ?? 20;
  const slowMs = options.slowMs ?? 10_000;
  const retired = new Set([...RETIRED_AUDIO_MODELS, ...(options.retired ?? [])]);
  const requests: OpenAIAudioFakeRequest[] = [];
  let always: readonly string[] = options.markers ?? [];
  const closing = new AbortController();

  const invalid = (res: http.ServerResponse, message: string, param: string | null = null, code: string | null = null): void =>
    sendJson(res, 400, errorBody(message, "invalid_request_error", code, param));

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = (req.method ?? "GET").toUpperCase();
    const contentType = req.headers["content-type"] ?? "";
    const parsed = await parseBody(contentType, raw);
    requests.push({ method, path: url.pathname + url.search, headers: recordHeaders(req.headers), body: parsed.record });

    const route = method === "POST" && url.pathname === TRANSCRIPTIONS_PATH ? "transcribe" : method === "POST" && url.pathname === CHAT_PATH ? "chat" : null;
    if (route === null) return sendJson(res, 404, errorBody(`Invalid URL (${method} ${url.pathname})`, "invalid_request_error", null));

    const auth = req.headers.authorization ?? "";
    const key = /^Bearer\s+(\S.*)$/i.exec(auth)?.[1] ?? "";
    const markerText = route === "chat" ? questionOf(parsed.json) : typeof parsed.form?.get("prompt") === "string" ? String(parsed.form?.get("prompt")) : "";
    const markers = markersOf(markerText, always);
    const wrongKey = (shown: string): void =>
      sendJson(res, 401, errorBody(`Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`, "invalid_request_error", "invalid_api_key"));
    if (markers.has("echo-key")) return wrongKey(key === "" ? auth : key);
    if (key === "") {
      return sendJson(res, 401, errorBody("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", null));
    }
    if (options.apiKey !== undefined && key !== options.apiKey) return wrongKey(masked(key));

    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (markers.has("429")) {
      return sendJson(res, 429, errorBody("Rate limit reached for requests per minute (fake). Limit: 5/1min. Please try again in 1s.", "requests", "rate_limit_exceeded"), { "retry-after": "1" });
    }
    if (markers.has("500")) {
      return sendJson(res, 500, errorBody("The server had an error while processing your request. Sorry about that!", "server_error", null));
    }
    if (markers.has("400")) return invalid(res, "Invalid request: the fake was asked to refuse it.", null, "invalid_value");

    const answer = route === "transcribe" ? await transcription(parsed.form, retired) : completion(parsed.json, retired);
    if ("refuse" in answer) return sendJson(res, answer.status ?? 400, errorBody(answer.refuse.message, "invalid_request_error", answer.refuse.code, answer.refuse.param));

    try {
      await sleep(markers.has("slow") ? slowMs : latencyMs, undefined, { signal: closing.signal });
    } catch {
      return; // the fake is closing
    }
    if (markers.has("malformed")) {
      return sendJson(res, 200, route === "transcribe" ? { task: "transcribe" } : { id: `chatcmpl-${randomUUID()}`, object: "chat.completion", choices: [] });
    }
    if ("text" in answer) {
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      res.end(`${answer.text}\n`);
      return;
    }
    sendJson(res, 200, answer.json);
  };

  const server = await startLoopbackServer(
    {
      port: options.port,
      host: options.host,
      maxBodyBytes: MAX_BODY_BYTES,
      errorBody: (status, message) => errorBody(status === 413 ? "Request entity too large" : message, status === 413 ? "invalid_request_error" : "server_error", null),
    },
    handle,
  );
  return {
    url: server.url,
    requests,
    setMarkers: (markers) => {
      always = [...markers];
    },
    reset: () => {
      requests.length = 0;
      always = options.markers ?? [];
    },
    close: async () => {
      closing.abort();
      await server.close();
    },
  };
}

/** A request body: the multipart form or the JSON value, and what is recorded of it. */
interface ParsedBody {
  form: FormData | null;
  json: unknown;
  record: unknown;
}

async function parseBody(contentType: string, raw: Buffer): Promise<ParsedBody> {
  if (raw.byteLength === 0) return { form: null, json: undefined, record: null };
  if (/^multipart\/form-data/i.test(contentType)) {
    try {
      const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body: raw }).formData();
      const record: Record<string, unknown> = {};
      for (const [name, value] of form.entries()) {
        record[name] = typeof value === "string" ? value : { name: value.name, size: value.size, type: value.type };
      }
      return { form, json: undefined, record };
    } catch {
      return { form: null, json: undefined, record: "<unparsable>" };
    }
  }
  try {
    const json = JSON.parse(raw.toString("utf8")) as unknown;
    return { form: null, json, record: withoutAudioData(json) };
  } catch {
    return { form: null, json: undefined, record: "<unparsable>" };
  }
}

/** A copy of `value` with every `input_audio.data` string replaced by its length. */
function withoutAudioData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutAudioData);
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === "input_audio" && isObject(item)) {
      out[key] = { ...item, data: typeof item.data === "string" ? item.data.length : item.data };
    } else {
      out[key] = withoutAudioData(item);
    }
  }
  return out;
}

function recordHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = recordAuthorizationScheme(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return out;
}

/** An answer, or what OpenAI would refuse (HTTP 400 unless `status` says 404). */
type Outcome =
  | { json: Record<string, unknown> }
  | { text: string }
  | { refuse: { message: string; param: string | null; code: string | null }; status?: 404 };

const refuse = (message: string, param: string | null = null, code: string | null = null): Outcome => ({ refuse: { message, param, code } });

/** OpenAI's 404 for a model it retired or does not serve (see the module comment), or null for a served one. */
function modelNotFound(model: string, served: readonly string[], retired: ReadonlySet<string>): Outcome | null {
  if (retired.has(model)) {
    return { refuse: { message: `The model \`${model}\` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations`, param: null, code: "model_not_found" }, status: 404 };
  }
  if (!served.includes(model)) {
    return { refuse: { message: `The model \`${model}\` does not exist or you do not have access to it.`, param: null, code: "model_not_found" }, status: 404 };
  }
  return null;
}

/** The answer to a transcription form (see the module comment). */
async function transcription(form: FormData | null, retired: ReadonlySet<string>): Promise<Outcome> {
  if (form === null) return refuse("Could not parse multipart form");
  for (const name of new Set(form.keys())) {
    const stem = name.replace(/\[.*$/, "");
    if (!TRANSCRIPTION_FIELDS.includes(stem)) return refuse(`Unknown parameter: '${stem}'.`, stem, "unknown_parameter");
  }
  const model = form.get("model");
  if (typeof model !== "string" || model === "") return refuse("you must provide a model parameter");
  const missing = modelNotFound(model, TRANSCRIPTION_MODELS, retired);
  if (missing !== null) return missing;
  const file = form.get("file");
  if (file === null || typeof file === "string") return refuse("Missing required parameter: 'file'.", "file", "missing_required_parameter");
  if (file.size === 0) return refuse("The audio file is empty.", "file", "invalid_value");
  const ext = /\.([A-Za-z0-9]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? "";
  const named = Object.hasOwn(EXTENSIONS, ext) ? EXTENSIONS[ext] : undefined;
  if (named === undefined) {
    return refuse(`Invalid file format. Supported formats: [${Object.keys(EXTENSIONS).map((e) => `'${e}'`).join(", ")}]`, "file", null);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (sniffUploadFormat(bytes) !== named) return refuse("Audio file might be corrupted or unsupported", "file", "invalid_value");
  const text = `Fake transcript of a ${bytes.byteLength}-byte .${ext} file.`;
  const format = form.get("response_format") ?? "json";
  if (format !== "json" && JSON_ONLY_MODELS.includes(model)) {
    return refuse(`Invalid value: '${String(format)}'. For ${model}, the only supported format is 'json'.`, "response_format", "invalid_value");
  }
  if (format === "text") return { text };
  if (format !== "json") return refuse(`Invalid value: '${String(format)}'. The fake supports 'json' and 'text'.`, "response_format", "invalid_value");
  const seconds = durationOf(bytes, named);
  if (seconds === null) return { json: { text } };
  if (model === "whisper-1") return { json: { text, usage: { type: "duration", seconds: Math.ceil(seconds) } } };
  const audioTokens = Math.ceil(seconds * 10);
  const outputTokens = Math.max(1, Math.ceil(text.length / 4));
  return {
    json: {
      text,
      usage: { type: "tokens", input_tokens: audioTokens, input_token_details: { text_tokens: 0, audio_tokens: audioTokens }, output_tokens: outputTokens, total_tokens: audioTokens + outputTokens },
    },
  };
}

/** The question of a chat body: the text parts of its user messages, joined. */
function questionOf(json: unknown): string {
  if (!isObject(json) || !Array.isArray(json.messages)) return "";
  const texts: string[] = [];
  for (const message of json.messages) {
    if (!isObject(message)) continue;
    if (typeof message.content === "string") texts.push(message.content);
    if (Array.isArray(message.content)) {
      for (const part of message.content) if (isObject(part) && part.type === "text" && typeof part.text === "string") texts.push(part.text);
    }
  }
  return texts.join(" ");
}

/** The answer to a chat body with an `input_audio` part (see the module comment). */
function completion(json: unknown, retired: ReadonlySet<string>): Outcome {
  if (json === undefined || !isObject(json)) {
    return refuse("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)");
  }
  for (const field of Object.keys(json)) {
    if (!CHAT_FIELDS.includes(field)) return refuse(`Unrecognized request argument supplied: ${field}`);
  }
  if (typeof json.model !== "string" || json.model === "") return refuse("you must provide a model parameter");
  const missing = modelNotFound(json.model, AUDIO_CHAT_MODELS, retired);
  if (missing !== null) return missing;
  if (!Array.isArray(json.messages) || json.messages.length === 0) return refuse("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  const found = firstInputAudio(json.messages);
  if (found === null) return refuse("This fake answers questions about audio: the messages have no input_audio part.", "messages", "invalid_value");
  if (found.format !== "wav" && found.format !== "mp3") {
    return refuse(`Invalid value: '${String(found.format)}'. Supported values are: 'wav' and 'mp3'.`, `${found.param}.format`, "invalid_value");
  }
  if (typeof found.data !== "string" || found.data === "" || found.data.length % 4 !== 0 || !BASE64.test(found.data)) {
    return refuse("Invalid 'input_audio.data': expected base64-encoded audio.", `${found.param}.data`, "invalid_value");
  }
  const bytes = Buffer.from(found.data, "base64");
  if (sniffUploadFormat(bytes) !== found.format) {
    return refuse(`The audio data could not be decoded as ${found.format}.`, `${found.param}.data`, "invalid_value");
  }
  const question = questionOf(json);
  const content = `Fake answer to ${JSON.stringify(question)} about ${bytes.byteLength} bytes of ${found.format} audio.`;
  const seconds = durationOf(bytes, found.format);
  const audioTokens = seconds === null ? 0 : Math.ceil(seconds * 10);
  const textTokens = Math.max(1, Math.ceil(question.length / 4));
  const completionTokens = Math.max(1, Math.ceil(content.length / 4));
  return {
    json: {
      id: `chatcmpl-${randomUUID().replaceAll("-", "").slice(0, 24)}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: json.model,
      choices: [{ index: 0, message: { role: "assistant", content, refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
      usage: {
        prompt_tokens: textTokens + audioTokens,
        completion_tokens: completionTokens,
        total_tokens: textTokens + audioTokens + completionTokens,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: audioTokens },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
      service_tier: "default",
      system_fingerprint: "fp_fake",
    },
  };
}

/** The first `input_audio` part of `messages`: its `data`, `format` and where it is (for `param`), or null. */
function firstInputAudio(messages: readonly unknown[]): { data: unknown; format: unknown; param: string } | null {
  for (const [m, message] of messages.entries()) {
    if (!isObject(message) || !Array.isArray(message.content)) continue;
    for (const [p, part] of message.content.entries()) {
      if (isObject(part) && part.type === "input_audio" && isObject(part.input_audio)) {
        return { data: part.input_audio.data, format: part.input_audio.format, param: `messages[${m}].content[${p}].input_audio` };
      }
    }
  }
  return null;
}

/** The duration of WAV or MP3 bytes, seconds, or null when the fake cannot tell. */
function durationOf(bytes: Uint8Array, format: UploadFormat): number | null {
  if (format === "mp3") {
    const sec = audioDurationSec(bytes, "mp3_44100_128");
    return sec > 0 ? sec : null;
  }
  if (format !== "wav") return null;
  // RIFF chunks after the 12-byte header: `fmt ` gives the byte rate, `data` the length.
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let byteRate = 0;
  for (let at = 12; at + 8 <= bytes.byteLength; ) {
    const id = String.fromCharCode(...bytes.subarray(at, at + 4));
    const size = view.getUint32(at + 4, true);
    if (id === "fmt " && at + 16 <= bytes.byteLength) byteRate = view.getUint32(at + 16, true);
    if (id === "data") return byteRate > 0 ? Math.min(size, bytes.byteLength - at - 8) / byteRate : null;
    at += 8 + size + (size % 2);
  }
  return null;
}

/** A key as OpenAI shows it in a 401: its start and its last four characters. */
function masked(key: string): string {
  return key.length <= 8 ? "*".repeat(key.length) : `${key.slice(0, 3)}${"*".repeat(key.length - 7)}${key.slice(-4)}`;
}
