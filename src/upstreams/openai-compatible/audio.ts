/**
 * Transcription and audio understanding at an OpenAI-compatible upstream (D25 protocol `openai`, families
 * `transcribe` and `understand`), as an {@link AudioTextAdapter} built by {@link createOpenAIAudioSource}
 * from one `UPSTREAMS` entry. Request and answer shapes are those of the `openai` npm package:
 * `resources/audio/transcriptions.ts` (`TranscriptionCreateParams`, `Transcription`) and
 * `resources/chat/completions/completions.ts` (`ChatCompletionContentPartInputAudio`, `ChatCompletion`).
 *
 * ## Transcription (`transcribe`)
 * `POST {baseUrl}/audio/transcriptions`, multipart: `file` (the audio, named `audio.<ext>`), `model` (the
 * upstream id), `response_format: "json"`; the answer `{text, usage?}` gives `{text}` (an empty text is a
 * valid transcript of silence). OpenAI picks its decoder by the file name's extension ("The request must
 * include enough format metadata for the file to be identified. We recommend an extension-bearing
 * filename"), and the gateway's upload has no trustworthy name, so the extension comes from the bytes
 * ({@link sniffUploadFormat}):
 * | first bytes | format | file name | content type |
 * |---|---|---|---|
 * | `RIFF` .... `WAVE` | WAV | `audio.wav` | `audio/wav` |
 * | `ID3`, or an MPEG audio frame sync (layer I-III) | MP3 | `audio.mp3` | `audio/mpeg` |
 * | .... `ftyp` | MP4 audio | `audio.m4a` | `audio/mp4` |
 * | `OggS` | Ogg | `audio.ogg` | `audio/ogg` |
 * | `fLaC` | FLAC | `audio.flac` | `audio/flac` |
 * | `1A 45 DF A3` (EBML) | WebM | `audio.webm` | `audio/webm` |
 * Audio in none of these formats, or larger than {@link MAX_TRANSCRIPTION_UPLOAD_BYTES} (the gateway takes
 * 100 MB by URL), is refused before anything is sent: an `unsupported` {@link UpstreamError} (OpenAI would
 * answer 400 "Invalid file format" or 413; the gateway answers 502 and charges nothing).
 *
 * ## Audio understanding (`understand`)
 * `POST {baseUrl}/chat/completions` `{model, modalities: ["text"], messages: [{role: "user", content:
 * [{type: "text", text: <question>}, {type: "input_audio", input_audio: {data: <base64>, format}}]}]}`;
 * the question is `req.prompt`, or {@link DEFAULT_UNDERSTAND_PROMPT} when it is null or blank. The answer's
 * `choices[0].message.content` (a string, or an array of `{type: "text", text}` parts, joined) is the
 * text. `input_audio.format` takes only `"wav"` and `"mp3"` (`InputAudio.format`: "Currently supports
 * "wav" and "mp3""), so audio sniffed as anything else (M4A, Ogg, FLAC, WebM, unknown) is refused before
 * anything is sent with an `unsupported` {@link UpstreamError}: the gateway answers 502 `provider_error`
 * and charges nothing (a later source of the family may take it; converting M4A to WAV locally is not
 * done).
 *
 * ## Models (D25 `models`)
 * Keys are the gateway's model ids (the request's `model`), values the upstream ids:
 * {@link OPENAI_AUDIO_MODELS} `host1-transcribe-1` -> `gpt-4o-mini-transcribe`, `host2-audio-understand-1` ->
 * `gpt-4o-audio-preview` (upstreams.md; checked against the installed `openai` package 7.57.0:
 * `AudioModel` in `node_modules/openai/resources/audio/audio.d.ts`, whose deprecation note gives the
 * transcription models a shutdown date of 2027-02-26, and `ChatModel` in
 * `node_modules/openai/resources/shared.d.ts`). `gpt-4o-mini-transcribe` takes `response_format` `json`
 * only, which is what is sent. Note: that `ChatModel` lists `gpt-4o-audio-preview` with an announced
 * shutdown date of 2026-05-07; upstreams.md pins it all the same. If OpenAI answers 404 `model_not_found`
 * for it, the call fails over (D35) and the operator names a successor in `models` (e.g. `gpt-audio-mini`,
 * announced shutdown 2027-01-20). A request for a gateway model the table lacks is sent with the capability's
 * default id. Other keys of the map (the same `openai` entry may serve images and text) are ignored.
 *
 * ## Failures
 * Those of api.ts, all `OpenAICompatibleError`: 429, 5xx, network errors and timeouts retryable;
 * 400/401/403/404 (any other 4xx) not, and a 404 `model_not_found` is a `modelNotFound` error naming the
 * upstream id (D35); a 200 that is not JSON, carries an `error` object, or lacks `text`
 * (transcription) or a textual `choices[0].message.content` (understanding) is a retryable malformed
 * answer. The key goes only into the `Authorization` header of requests to the base URL's host (D25):
 * both endpoints are paths under the base URL and OpenAI names no follow-up URLs, and each call checks the
 * URL's host against the base URL's (and `trustedHosts`) before anything is sent. Every message is
 * redacted of the key.
 */
import { isOwnOrTrustedHost, trustedHostMatcher } from "../hosts.ts";
import { UpstreamError } from "../types.ts";
import type { AudioTextAdapter, AudioTextRequest, NamedSource, UpstreamSourceConfig } from "../types.ts";
import { createOpenAICompatibleApi, ENDPOINTS, errorMessageOf, newForm, postForJson, readJson } from "./api.ts";
import type { OpenAICompatibleApi } from "./api.ts";
import { isRecord, parseBaseUrl } from "../util.ts";

/** OpenAI's API, the default base URL (it includes the version). */
export const DEFAULT_OPENAI_AUDIO_BASE_URL = "https://api.openai.com/v1";

/** Default total time of one call, ms: a long recording takes a while to upload and to transcribe. */
export const DEFAULT_AUDIO_TIMEOUT_MS = 120_000;

/** Largest file OpenAI transcribes, bytes ("File uploads are currently limited to 25 MB"). */
export const MAX_TRANSCRIPTION_UPLOAD_BYTES = 25 * 1024 * 1024;

/** The question asked when an understanding request has none. */
export const DEFAULT_UNDERSTAND_PROMPT = "Describe this audio.";

/** The upstream id used for a transcription whose gateway model is not in {@link OPENAI_AUDIO_MODELS}. */
export const DEFAULT_TRANSCRIPTION_UPSTREAM = "gpt-4o-mini-transcribe";

/** The upstream id used for an understanding whose gateway model is not in {@link OPENAI_AUDIO_MODELS}. */
export const DEFAULT_UNDERSTANDING_UPSTREAM = "gpt-4o-audio-preview";

/** Our audio-to-text models and their default upstream ids (upstreams.md "Default upstream ids"). Frozen. */
export const OPENAI_AUDIO_MODELS: Readonly<Record<string, string>> = Object.freeze({
  "host1-transcribe-1": DEFAULT_TRANSCRIPTION_UPSTREAM,
  "host2-audio-understand-1": DEFAULT_UNDERSTANDING_UPSTREAM,
});

/** An audio container the upload sniffer recognizes. */
export type UploadFormat = "wav" | "mp3" | "m4a" | "ogg" | "flac" | "webm";

/** The content type sent with each {@link UploadFormat}. Frozen. */
export const UPLOAD_CONTENT_TYPES: Readonly<Record<UploadFormat, string>> = Object.freeze({
  wav: "audio/wav",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  ogg: "audio/ogg",
  flac: "audio/flac",
  webm: "audio/webm",
});

/**
 * An OpenAI-compatible audio source: transcription and audio understanding, its `UPSTREAMS` name, and
 * `close()` for its connection pool.
 */
export interface OpenAIAudioSource extends NamedSource, AudioTextAdapter {}

/** The shape of an upstream model id an override may name (`whisper-1`, `gpt-4o-transcribe`, `ft:...`). */
const UPSTREAM_MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$/;

/**
 * The overrides of a `models` map that concern audio: keys of {@link OPENAI_AUDIO_MODELS}, values upstream
 * ids; other keys are ignored. Returns a frozen copy.
 * @throws RangeError when the value of an audio key is not an upstream model id.
 */
export function checkAudioModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    if (!Object.hasOwn(OPENAI_AUDIO_MODELS, key)) continue;
    if (typeof value !== "string" || !UPSTREAM_MODEL_ID.test(value)) {
      throw new RangeError(`models: the upstream id of ${JSON.stringify(key)} must be an OpenAI model id such as "whisper-1"`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/**
 * The container of an audio file, read from its first bytes (see the module comment), or null when it is
 * none of {@link UploadFormat}.
 */
export function sniffUploadFormat(bytes: Uint8Array): UploadFormat | null {
  if (bytes.length < 4) return null;
  const ascii = (at: number, length: number): string => String.fromCharCode(...bytes.subarray(at, at + length));
  if (ascii(0, 4) === "RIFF" && ascii(8, 4) === "WAVE") return "wav";
  if (ascii(0, 3) === "ID3") return "mp3";
  if (ascii(4, 4) === "ftyp") return "m4a";
  if (ascii(0, 4) === "OggS") return "ogg";
  if (ascii(0, 4) === "fLaC") return "flac";
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return "webm";
  // MPEG audio frame: 11 sync bits, a version other than "reserved" (01), a layer other than "reserved"
  // (00, which is also how AAC's ADTS header, FFF1/FFF9, looks: OpenAI would not read that as MP3).
  if (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0 && (bytes[1] & 0x18) !== 0x08 && (bytes[1] & 0x06) !== 0) return "mp3";
  return null;
}

/**
 * Creates the OpenAI audio source of one `UPSTREAMS` entry (D25): `cfg.baseUrl` (default
 * {@link DEFAULT_OPENAI_AUDIO_BASE_URL}, including `/v1`), `cfg.apiKey` sent as `Authorization: Bearer`,
 * `cfg.timeoutMs` per call (default {@link DEFAULT_AUDIO_TIMEOUT_MS}), `cfg.models` (see
 * {@link checkAudioModelOverrides}), `cfg.trustedHosts`, `cfg.connectTimeoutMs`, `cfg.dispatcher`.
 * `transcribe` and `understand` throw `OpenAICompatibleError` (api.ts) (api.ts failure table, malformed
 * answers), an `unsupported` {@link UpstreamError} for audio they cannot send, or the caller's abort reason.
 * @throws RangeError for a bad configuration (name, key, base URL with credentials, a query or another
 *   scheme, timeout, trusted host, `models` value).
 */
export function createOpenAIAudioSource(cfg: UpstreamSourceConfig): OpenAIAudioSource {
  const { name } = cfg;
  if (typeof name !== "string" || name === "") throw new RangeError("name must be a non-empty string");
  if (typeof cfg.apiKey !== "string" || cfg.apiKey.trim() === "") throw new RangeError("apiKey must be a non-empty string");
  const baseUrl = cfg.baseUrl ?? DEFAULT_OPENAI_AUDIO_BASE_URL;
  const base = parseBaseUrl(baseUrl);
  // The key travels in its header only; a base URL must not smuggle other credentials or parameters.
  if (base.username !== "" || base.password !== "") throw new RangeError("baseUrl must not contain credentials");
  if (base.search !== "" || base.hash !== "") throw new RangeError("baseUrl must not have a query or fragment");
  const overrides = checkAudioModelOverrides(cfg.models);
  const isTrusted = trustedHostMatcher(cfg.trustedHosts);
  const api = createOpenAICompatibleApi({
    name,
    baseUrl,
    apiKey: cfg.apiKey,
    timeoutMs: cfg.timeoutMs ?? DEFAULT_AUDIO_TIMEOUT_MS,
    connectTimeoutMs: cfg.connectTimeoutMs,
    dispatcher: cfg.dispatcher,
  });
  // D25: checked before each call, though every endpoint is a path under the base URL, so that a later
  // change (a follow-up URL, a redirect) cannot send the key elsewhere unnoticed.
  const checkKeyHost = (path: string): void => {
    const url = new URL(base.pathname.replace(/\/+$/, "") + path, base);
    if (!(url.protocol === base.protocol && isOwnOrTrustedHost(url.href, base, isTrusted))) {
      throw new UpstreamError(`${name}: refusing to send the key to ${url.protocol}//${url.host}: not the base URL's host or a trusted host`, false);
    }
  };
  let closing: Promise<void> | null = null;
  return {
    name,
    transcribe(req, signal) {
      checkKeyHost(ENDPOINTS.audioTranscriptions);
      return transcribe(api, req, upstreamModelOf(req.model, overrides, DEFAULT_TRANSCRIPTION_UPSTREAM), signal);
    },
    understand(req, signal) {
      checkKeyHost(ENDPOINTS.chatCompletions);
      return understand(api, req, upstreamModelOf(req.model, overrides, DEFAULT_UNDERSTANDING_UPSTREAM), signal);
    },
    close() {
      // Idempotent: the registry and a test may both close a source.
      closing ??= api.close();
      return closing;
    },
  };
}

/** The upstream id of a gateway model: the override, else the table's default, else `fallback`. */
function upstreamModelOf(model: string, overrides: Readonly<Record<string, string>>, fallback: string): string {
  if (Object.hasOwn(overrides, model)) return overrides[model];
  if (Object.hasOwn(OPENAI_AUDIO_MODELS, model)) return OPENAI_AUDIO_MODELS[model];
  return fallback;
}

/** One `POST /audio/transcriptions` (see the module comment). */
async function transcribe(api: OpenAICompatibleApi, req: AudioTextRequest, upstreamModel: string, signal?: AbortSignal): Promise<{ text: string }> {
  signal?.throwIfAborted();
  const format = sniffUploadFormat(req.audio);
  if (format === null) {
    throw new UpstreamError(`${api.name}: the audio is not WAV, MP3, M4A, Ogg, FLAC or WebM; OpenAI transcription would refuse it`, false, {
      unsupported: true,
    });
  }
  if (req.audio.byteLength > MAX_TRANSCRIPTION_UPLOAD_BYTES) {
    throw new UpstreamError(`${api.name}: the audio is ${req.audio.byteLength} bytes; OpenAI transcribes files of at most 25 MB`, false, { unsupported: true });
  }
  const form = newForm();
  form.append("file", new Blob([req.audio], { type: UPLOAD_CONTENT_TYPES[format] }), `audio.${format}`);
  form.append("model", upstreamModel);
  form.append("response_format", "json");
  const call = api.callSignal(signal);
  const res = await api.postForm(ENDPOINTS.audioTranscriptions, form, call);
  const answer = decodeTranscription(await readJson(api, res, call));
  if (typeof answer !== "string") throw api.malformed(answer.problem);
  return { text: answer };
}

/** One `POST /chat/completions` with the audio as an `input_audio` part (see the module comment). */
async function understand(api: OpenAICompatibleApi, req: AudioTextRequest, upstreamModel: string, signal?: AbortSignal): Promise<{ text: string }> {
  signal?.throwIfAborted();
  const body = understandingBody(req, upstreamModel, api.name);
  const call = api.callSignal(signal);
  const answer = decodeUnderstanding(await postForJson(api, ENDPOINTS.chatCompletions, body, call));
  if (typeof answer !== "string") throw api.malformed(answer.problem);
  return { text: answer };
}

/**
 * The chat-completions body of an understanding request (see the module comment).
 * @throws an `unsupported` {@link UpstreamError} (never retryable) when the audio is neither WAV nor MP3.
 */
export function understandingBody(req: AudioTextRequest, upstreamModel: string, sourceName: string): Record<string, unknown> {
  const format = sniffUploadFormat(req.audio);
  if (format !== "wav" && format !== "mp3") {
    throw new UpstreamError(
      `${sourceName}: audio understanding takes WAV or MP3 audio only (input_audio formats), this is ${format === null ? "an unknown format" : format.toUpperCase()}`,
      false,
      { unsupported: true },
    );
  }
  const question = req.prompt === null || req.prompt.trim() === "" ? DEFAULT_UNDERSTAND_PROMPT : req.prompt;
  return {
    model: upstreamModel,
    modalities: ["text"],
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: question },
          { type: "input_audio", input_audio: { data: Buffer.from(req.audio.buffer, req.audio.byteOffset, req.audio.byteLength).toString("base64"), format } },
        ],
      },
    ],
  };
}

/** What is wrong with an answer that cannot be used. */
export interface AnswerProblem {
  problem: string;
}

/** The `text` of a transcription answer (`Transcription`), or what is wrong with it. */
export function decodeTranscription(value: unknown): string | AnswerProblem {
  const upstreamError = errorMessageOf(value);
  if (upstreamError !== null) return { problem: `error in a 2xx answer: ${upstreamError}` };
  if (!isRecord(value)) return { problem: "the answer is not a JSON object" };
  if (typeof value.text !== "string") return { problem: "the answer has no text" };
  return value.text;
}

/**
 * The text of a chat completion (`choices[0].message.content`: a string, or text parts joined), or what is
 * wrong with it. A refusal (`content` null, `refusal` set) is reported as such.
 */
export function decodeUnderstanding(value: unknown): string | AnswerProblem {
  const upstreamError = errorMessageOf(value);
  if (upstreamError !== null) return { problem: `error in a 2xx answer: ${upstreamError}` };
  if (!isRecord(value) || !Array.isArray(value.choices) || value.choices.length === 0) return { problem: "no choices" };
  const choice: unknown = value.choices[0];
  const message = isRecord(choice) ? choice.message : undefined;
  if (!isRecord(message)) return { problem: "the first choice has no message" };
  const { content } = message;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    const texts = content.filter((part) => isRecord(part) && part.type === "text" && typeof part.text === "string").map((part) => (part as { text: string }).text);
    if (texts.length > 0) return texts.join("");
  }
  if (typeof message.refusal === "string" && message.refusal !== "") return { problem: `the model refused: ${message.refusal.slice(0, 200)}` };
  return { problem: "the message has no text content" };
}
