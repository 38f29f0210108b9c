/**
 * The realtime half of the ElevenLabs fake (fakes/elevenlabs.ts serves it on the same loopback server):
 * WebSocket upgrades of the text-to-speech sockets (`/v1/text-to-speech/{voice_id}/stream-input` and
 * `/multi-stream-input`, D42) and of Scribe realtime (`/v1/speech-to-text/realtime`, D43), and the batch
 * `POST /v1/speech-to-text`. Strict: what ElevenLabs refuses, the fake refuses, in ElevenLabs' shapes and
 * close codes as far as they are known. LiveKit's ElevenLabs plugin and the SDK's `ScribeRealtime` accept
 * it (test/upstreams/elevenlabs/realtime-official-clients.test.ts).
 *
 * ## Sources of the facts (*unverified* marks a guess, built so it changes in one place)
 * - [AsyncAPI]: ElevenLabs' AsyncAPI, elevenlabs/elevenlabs-docs `fern/apis/api/asyncapi.yml` (2025-08):
 *   both text-to-speech channels, their query (`model_id`, `output_format` enum, `inactivity_timeout`
 *   "can be up to 180 seconds" default 20, `sync_alignment`, `auto_mode`, `apply_text_normalization`,
 *   `seed`, `enable_logging`, `enable_ssml_parsing`, `authorization`), messages (`{"text": " "}` first,
 *   the key as `xi_api_key`/`xi-api-key`/`authorization` in the first message, `flush`,
 *   `try_trigger_generation`, `{"text": ""}` to end, `context_id`, `close_context`, `close_socket`,
 *   keep-alive `{"text": "", "context_id"}`), `chunk_length_schedule` default [120, 160, 250, 290], "each
 *   item should be in the range 50-500"; alignment times "relative to the returned chunk".
 * - [Scribe API]: the API reference of `GET /v1/speech-to-text/realtime` (its AsyncAPI and the realtime
 *   guide: query, `session_started` config, formats, error types, "an error message will be returned
 *   before the WebSocket connection is closed", commit every 90 s by default), and the SDK
 *   `@elevenlabs/elevenlabs-js` 2.73.0 `dist/wrapper/realtime/{scribe,connection}.js` (VAD ranges
 *   0.3-3.0 s, 0.1-0.9, 50-2000 ms; message types).
 * - [#426] elevenlabs/elevenlabs-docs#426: inactivity closes 1008 "Have not received a new text input
 *   within the timeout of 20 seconds. Streaming input terminated. Please make sure to either feed the
 *   input in the timely manner, or to send the end of input text (empty string "") when done." (the
 *   logged close reason is cut after 120 characters, as the fake cuts every close reason: *unverified*
 *   beyond that one case; RFC 6455 allows 123 bytes); [#218] livekit/agents#218 quotes the JSON before
 *   it: `{"message", "error": "input_timeout_exceeded", "code": 1008}`.
 * - [#167] elevenlabs/elevenlabs-python#167: `{"message": "Could not parse input message, make sure it is a
 *   json and follows the schema outlined in protocol.", "error": "invalid_input_message", "code": 1008}`.
 * - [#1985] livekit/agents-js#1985 and [#4041] pipecat-ai/pipecat#4041: more than 5 contexts ->
 *   `{"message": "Maximum simultaneous contexts per WebSocket connection exceeded (5). Please close an
 *   existing context before opening a new one.", "error": "max_active_conversations", "code": 1008}`, close 1008.
 * - [#4527] pipecat-ai/pipecat#4527 (and #4541, #4556): close 1008 "voice_settings field must be provided in
 *   the first message and then either be not provided or not change." when a context's later message
 *   changes them (the close only: no JSON was quoted).
 * - [#1426] pipecat-ai/pipecat#1426: an internal failure closes 1008 "We are sorry, something went wrong.
 *   You are not charged for this request." (its JSON `error` code `something_went_wrong` is the HTTP
 *   `detail.status` of the same text, elevenlabs-python#351: *unverified* on the socket).
 * - [#3235] livekit/agents#3235, LiveKit community thread 1007: `eleven_v3` -> HTTP 403 at the upgrade
 *   (no socket for v3). Other refusals before the upgrade (a bad header key, a bad query value, an unknown
 *   path) are answered 403 with an empty body too: *unverified*, inferred from the same 403 (Starlette's
 *   answer to a socket closed before it is accepted).
 * - [#82] elevenlabs/ui#82: a bad Scribe `model_id` opens the socket, then `{"message_type":
 *   "invalid_request", "error": "The model_id 'x' is invalid. Supported models: 'scribe_v2_realtime',
 *   'scribe_v2_realtime_turbo', 'scribe_v2_realtime_lite'."}` and close 1008 "invalid_request".
 * - [#378] elevenlabs/packages#378: a commit with too little audio -> `{"message_type": "commit_throttled",
 *   "error": "Commit request ignored: only 0.01s of uncommitted audio. You need at least 0.3s of
 *   uncommitted audio before committing."}`, the socket stays open.
 * - [skills] elevenlabs/skills `speech-to-text/references/realtime-events.md`: `committed_transcript_with_timestamps`
 *   is "sent after `committed_transcript`"; words `{text, start, end, type: word|spacing}`.
 *
 * ## Text-to-speech sockets
 * Before the upgrade (refused with HTTP 403 and an empty body, *unverified* but for `eleven_v3`): a
 * header `xi-api-key` or query `authorization` that is not the key, `output_format` outside the socket
 * enum [AsyncAPI] (default `mp3_44100_128`), `inactivity_timeout` not an integer 1..180 (the minimum is
 * *unverified*), a non-boolean `sync_alignment` / `auto_mode` / `enable_logging` / `enable_ssml_parsing`,
 * `apply_text_normalization` outside auto|on|off, `seed` outside 0..4294967295, `model_id` `eleven_v3`
 * [#3235]. A-law and Opus formats are valid but the fake does not render them: HTTP 400
 * `fake_unsupported_format` (the fake's limit).
 * After the upgrade every refusal is `{"message", "error", "code": 1008}` then close 1008 with the message
 * as reason (the shape of [#218], [#1985]; the codes below other than those sources are *unverified*):
 * | refused | `error` |
 * |---|---|
 * | a message that is not a JSON object, or breaks the schema (types; a first message whose `text` is not `" "`; a message without `text` or control field) | `invalid_input_message` [#167] |
 * | no accepted key in the header, query or first message | `invalid_api_key` |
 * | `model_id` not in `FAKE_TTS_MODELS` or retired (checked at the first message) | `model_not_found` (HTTP's text) |
 * | a voice of neither catalog (at the first message), or the `voice_gone` marker | `voice_not_found` (HTTP's text) |
 * | `voice_settings` out of range (HTTP's ranges) | `invalid_voice_settings` (HTTP's text) |
 * | `chunk_length_schedule` not a list of numbers 50..500 | `invalid_input_message` |
 * | a 6th unfinished context (multi) | `max_active_conversations` [#1985] |
 * | no message for `inactivity_timeout` seconds | `input_timeout_exceeded` [#218, #426] |
 * A context's later message with other `voice_settings` or `generation_config` closes 1008 with [#4527]'s
 * reason, without JSON. Generation: text is buffered per context and generated when the buffer reaches the
 * next `chunk_length_schedule` length, at `flush`, at `try_trigger_generation` with 50 characters or more
 * (*unverified* threshold), on every message with `auto_mode=true`, at the end `{"text": ""}`
 * (stream-input) and at `close_socket` (multi: every context flushed, then `isFinal` for each, then close
 * 1000). `close_context` drops unflushed text ("no further audio will be generated", [AsyncAPI]), then
 * sends `{"isFinal": true, "contextId"}` after the context's pending audio; the context counts against the
 * 5 until then. A context's first message `{"text": " "}` opens it without buffering the space.
 * Audio: a sine tone (the HTTP fake's pitch for the voice), 0.06 s per character of the generated text, in
 * the socket's `output_format` (MP3, PCM or mu-law), sent in pieces of about 0.2 s: `{"audio": <base64>,
 * "isFinal": false, "normalizedAlignment", "alignment"}` (stream-input) or `{"audio", "normalizedAlignment",
 * "alignment", "contextId"}` (multi); each character lasts 60 ms and belongs to the piece its start falls
 * in, its times relative to that piece's start [AsyncAPI] (`normalizedAlignment` equals `alignment`: the
 * fake does not normalize). Alignment is sent whatever `sync_alignment` says (*unverified*). Ends:
 * `{"isFinal": true}` (stream-input, then close 1000) / `{"isFinal": true, "contextId"}` (multi).
 *
 * ## Scribe realtime
 * Auth: header `xi-api-key`, or query `token` equal to the key (the fake issues no single-use tokens). A
 * missing or wrong key opens the socket, then `{"message_type": "auth_error", "error": "Invalid API key"}`
 * and close 1008 "auth_error" (*unverified*; the SDK also handles a 403 at the handshake). Query [Scribe
 * API]: `model_id` required, one of `FAKE_SCRIBE_REALTIME_MODELS` [#82]; `audio_format` pcm_8000..pcm_48000,
 * ulaw_8000 (default pcm_16000); `commit_strategy` manual|vad; `vad_silence_threshold_secs` 0.3..3,
 * `vad_threshold` 0.1..0.9, `min_speech_duration_ms` and `min_silence_duration_ms` integers 50..2000;
 * booleans `include_timestamps`, `include_language_detection`, `enable_logging`; `language_code` 2 or 3
 * letters. A bad value: `invalid_request` and close 1008 "invalid_request" [#82] (texts other than the
 * model's *unverified*). Then `session_started {session_id, config}`.
 * Client messages: `input_audio_chunk` with `audio_base_64` (base64, possibly empty: a keep-alive),
 * `commit` (boolean), `sample_rate` (the format's rate). Refused without closing (*unverified*):
 * `input_error` for another message type, bad base64, a sample rate other than the format's, an odd number
 * of PCM bytes; `chunk_size_exceeded` for a chunk of more than {@link FAKE_SCRIBE_MAX_CHUNK_SECONDS} s
 * (*unverified* limit; ElevenLabs advises 0.1-1 s chunks); `commit_throttled` [#378] for a commit with less
 * than 0.3 s uncommitted. The "transcriber" hears sound: 10 ms frames louder than 2 % of full scale are
 * speech; each stretch of speech (50 ms or longer) is one word per 0.4 s, words from a fixed list in order;
 * silence gives no words. `partial_transcript` after a chunk whose segment text changed; at a commit
 * (manual, VAD after `vad_silence_threshold_secs` of silence following speech of at least
 * `min_speech_duration_ms`, or 90 s of uncommitted audio) `committed_transcript {text}`, then, with
 * `include_timestamps` or `include_language_detection`, `committed_transcript_with_timestamps {text,
 * language_code, words}` [skills] (`words` null without `include_timestamps`: *unverified*), times in
 * seconds from the session's start.
 *
 * ## Batch speech to text
 * `POST /v1/speech-to-text`, multipart (elevenlabs-js `BodySpeechToTextV1SpeechToTextPost`): `model_id`
 * required (FastAPI 422 `missing` otherwise), one of `FAKE_STT_MODELS` (else 400 `model_not_found`,
 * *unverified*); exactly one of `file` and `cloud_storage_url`/`source_url` (else 400
 * `invalid_parameters`, *unverified*); `file_format` other|pcm_s16le_16. Audio: WAV (16-bit PCM) and raw
 * `pcm_s16le_16` are heard as Scribe realtime hears them; MP3 (by its frames) and any other file are heard
 * as speech throughout (the fake decodes no compressed audio; other files count 1 s); under 100 ms: 400
 * `audio_too_short` (*unverified*). Answer `{language_code: "eng", language_probability, text, words:
 * [{text, start, end, type, logprob}], transcription_id}`.
 *
 * ## Markers
 * TTS sockets: `[fake:NAME]` in a text message, or for every socket with the fake's `markers`/`setMarkers`:
 * | marker | effect |
 * |---|---|
 * | `429` | the upgrade answered 429 `{detail: {status: "system_busy", ...}}` (every upgrade: `setMarkers`) |
 * | `500` | the upgrade answered 500 `Internal Server Error` |
 * | `hang` | the upgrade never answered |
 * | `ws-fail` | before any audio of the generation: `something_went_wrong` and close 1008 [#1426] |
 * | `ws-fail-after-audio` | after the generation's first audio piece: the same |
 * | `ws-drop` | before any audio: the connection dropped without a close frame (1006) |
 * | `ws-1011` | before any audio: close 1011 "Internal server error", no JSON |
 * | `ws-hang` | the generation never sends anything (the socket stays open) |
 * | `echo-key` | `invalid_api_key` whose message echoes the caller's key (redaction tests) |
 * | `voice_gone`, `quota` | at the first message: `voice_not_found` / `quota_exceeded` (with `setMarkers`) |
 * Scribe (with `setMarkers`; audio cannot carry text): `429`, `500`, `hang` at the upgrade as above;
 * `stt-rate-limited` (`rate_limited` and close 1008 instead of `session_started`), `stt-quota`
 * (`quota_exceeded` and close 1008 at the first audio), `stt-transcriber-error` (`transcriber_error` and
 * close 1011 at the first audio), `stt-drop` (the connection dropped at the first audio).
 *
 * ## Records
 * Every upgrade is also recorded in the fake's `requests` (`GET`, the path with `authorization`/`token`
 * cut out, the headers without the key). `sockets` records each socket: its kind and path, `sent` (the
 * client's messages, parsed, with any key cut out), `received` (the server's messages, audio replaced by
 * `audioBytes`), and how it closed.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { WebSocketServer } from "ws";
import type { RawData, WebSocket } from "ws";
import { audioDurationSec, audioFormatInfo } from "../src/upstreams/audio-convert.ts";
import { encodeAudioChunks, ulawToLinear } from "../src/upstreams/simulator/encode.ts";
import type { AudioFormat } from "../src/upstreams/types.ts";
import { isJsonObject as isObject, markersOf, sendJson as json } from "./loopback.ts";
import type { LoopbackFakeRequest } from "./loopback.ts";

/** What the HTTP fake lends its realtime half (its catalog, models, markers and tone). */
export interface RealtimeFakeDeps {
  /** The only key accepted; undefined: any non-empty key. */
  apiKey: string | undefined;
  isVoice(voiceId: string): boolean;
  /** Text-to-speech model ids served (the HTTP fake's `FAKE_TTS_MODELS`). */
  ttsModels: readonly string[];
  isRetired(modelId: string): boolean;
  /** Markers applied to everything (`markers` option, `setMarkers`). */
  markers(): readonly string[];
  /** `voice_settings` ranges (the HTTP fake's). */
  voiceRanges: Readonly<Record<string, readonly [number, number]>>;
  latencyMs: number;
  sleep(ms: number): Promise<void>;
  /** Appends to the fake's `requests`. */
  record(request: LoopbackFakeRequest): void;
  /** Mono samples (-1..1) of the fake's tone: `seconds` at `rate` Hz, pitch from `seed`. */
  toneSamples(seconds: number, rate: number, seed: string): Float32Array;
}

/** One socket the fake served (see the module comment, "Records"). */
export interface ElevenLabsFakeSocket {
  kind: "stream-input" | "multi-stream-input" | "speech-to-text";
  path: string;
  headers: Record<string, string>;
  sent: unknown[];
  received: unknown[];
  /** The close code and reason, once closed (1006 for a dropped connection). */
  closeCode: number | null;
  closeReason: string | null;
  /** Who closed: the fake (`server`) or the client. */
  closedBy: "server" | "client" | null;
}

/** The realtime half, as the HTTP fake drives it. */
export interface RealtimeFake {
  onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
  /** `POST /v1/speech-to-text`: answers, and returns the body to record (the form's fields, the file's size). */
  speechToText(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<unknown>;
  sockets: ElevenLabsFakeSocket[];
  /** Drops every socket (open, held or closing): before the server closes. */
  closeAll(): void;
}

/** Seconds of audio per character of generated text (the HTTP fake's rate). */
export const FAKE_SECONDS_PER_CHAR = 0.06;
/** `output_format` values of the text-to-speech sockets: [AsyncAPI] `TextToSpeechOutputFormatEnum`. */
export const FAKE_TTS_SOCKET_FORMATS: readonly string[] = [
  "mp3_22050_32", "mp3_44100_32", "mp3_44100_64", "mp3_44100_96", "mp3_44100_128", "mp3_44100_192",
  "pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100", "ulaw_8000",
  "alaw_8000", "opus_48000_32", "opus_48000_64", "opus_48000_96", "opus_48000_128", "opus_48000_192",
];
/** ElevenLabs' limit of unfinished contexts per multi-stream socket [#1985]. */
export const FAKE_MAX_CONTEXTS = 5;
/** Longest close reason the fake sends, characters [#426] (*unverified* beyond that case). */
export const FAKE_CLOSE_REASON_CHARS = 120;
/** Scribe realtime model ids [#82]. */
export const FAKE_SCRIBE_REALTIME_MODELS: readonly string[] = ["scribe_v2_realtime", "scribe_v2_realtime_turbo", "scribe_v2_realtime_lite"];
/** Scribe realtime audio formats [Scribe API]. */
export const FAKE_SCRIBE_FORMATS: readonly string[] = ["pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100", "pcm_48000", "ulaw_8000"];
/** Largest Scribe audio chunk, seconds (*unverified*). */
export const FAKE_SCRIBE_MAX_CHUNK_SECONDS = 10;
/** Batch speech-to-text model ids (the SDK's `scribe_v1`, `scribe_v2`). */
export const FAKE_STT_MODELS: readonly string[] = ["scribe_v1", "scribe_v2"];
/** The words the fake transcriber hears, in order. */
export const FAKE_TRANSCRIPT_WORDS: readonly string[] = ["hello", "world", "this", "is", "the", "fake", "scribe", "speaking", "one", "two", "three", "four"];

const INVALID_INPUT = "Could not parse input message, make sure it is a json and follows the schema outlined in protocol.";
const SOMETHING_WRONG = "We are sorry, something went wrong. You are not charged for this request.";
const VOICE_SETTINGS_CHANGED = "voice_settings field must be provided in the first message and then either be not provided or not change.";
const GENERATION_CONFIG_CHANGED = "generation_config field must be provided in the first message and then either be not provided or not change.";
const MAX_CONTEXTS_TEXT = `Maximum simultaneous contexts per WebSocket connection exceeded (${FAKE_MAX_CONTEXTS}). Please close an existing context before opening a new one.`;
const DEFAULT_SCHEDULE = [120, 160, 250, 290];
/** `try_trigger_generation` generates with at least this many characters buffered (*unverified*). */
const TRIGGER_MIN_CHARS = 50;
const TEXT_MARKER = /\[fake:([a-z0-9_-]+)\]/g;
const BOOL_WORDS = ["true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"];
/** Query and message fields that carry a key (cut out of the records). */
const SECRET_FIELDS = ["authorization", "token", "xi_api_key", "xi-api-key"];

/** `text` cut to the fake's longest close reason. */
function closeReason(text: string): string {
  let out = text.length > FAKE_CLOSE_REASON_CHARS ? text.slice(0, FAKE_CLOSE_REASON_CHARS) : text;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1);
  return out;
}

/** A copy of `value` with every key field cut out (records never hold a key). */
function redactKeys(value: unknown): unknown {
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_FIELDS.includes(k) ? "[redacted]" : v;
  return out;
}

/** The path with its query, key parameters cut out. */
function redactedPath(url: URL): string {
  const copy = new URL(url.href);
  for (const name of SECRET_FIELDS) if (copy.searchParams.has(name)) copy.searchParams.set(name, "[redacted]");
  return copy.pathname + copy.search;
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

/** A key given as `Bearer <key>` or as it is. */
function bareKey(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const m = /^Bearer\s+(\S+)$/i.exec(value.trim());
  return m === null ? value.trim() : m[1]!;
}

/** An HTTP answer written on an upgrade's socket, then the socket ended. */
function refuseUpgrade(socket: Socket, status: number, body: string, contentType = "application/json"): void {
  const head = [
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "Error"}`,
    ...(body === "" ? [] : [`content-type: ${contentType}`]),
    `content-length: ${Buffer.byteLength(body)}`,
    "connection: close",
    "",
    "",
  ].join("\r\n");
  socket.end(head + body);
}

/** Starts the realtime half (see the module comment). */
export function createRealtimeFake(deps: RealtimeFakeDeps): RealtimeFake {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const sockets: ElevenLabsFakeSocket[] = [];
  /** The sockets of every upgrade not yet closed (held, refused, or upgraded). */
  const held = new Set<Socket>();
  const live = new Set<WebSocket>();
  const keyOk = (key: string | null): key is string => key !== null && key !== "" && (deps.apiKey === undefined || key === deps.apiKey);

  const onUpgrade = (req: IncomingMessage, socket: Socket, head: Buffer): void => {
    socket.on("error", () => {});
    // Every upgrade's socket is the fake's to drop at close (an answered refusal may stay half-open).
    held.add(socket);
    socket.once("close", () => held.delete(socket));
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = name === "xi-api-key" ? "[redacted]" : Array.isArray(value) ? value.join(", ") : value;
    }
    deps.record({ method: "GET", path: redactedPath(url), headers, body: null });
    const always = new Set(deps.markers());
    if (always.has("hang")) return; // never answered: dropped at close
    if (always.has("500")) return refuseUpgrade(socket, 500, "Internal Server Error", "text/plain; charset=utf-8");
    if (always.has("429")) {
      return refuseUpgrade(
        socket,
        429,
        JSON.stringify({ detail: { status: "system_busy", message: "We are sorry, the system is experiencing heavy traffic, please try again. Higher subscriptions have higher priority." } }),
      );
    }
    const segments = url.pathname.split("/").filter((s) => s !== "").map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
    const headerKey = typeof req.headers["xi-api-key"] === "string" ? req.headers["xi-api-key"] : null;
    const accept = (kind: ElevenLabsFakeSocket["kind"], start: (ws: WebSocket, record: ElevenLabsFakeSocket) => void) => {
      wss.handleUpgrade(req, socket, head, (ws) => {
        const record: ElevenLabsFakeSocket = { kind, path: redactedPath(url), headers, sent: [], received: [], closeCode: null, closeReason: null, closedBy: null };
        sockets.push(record);
        live.add(ws);
        ws.on("close", () => live.delete(ws));
        start(ws, record);
      });
    };

    if (segments.length === 4 && segments[0] === "v1" && segments[1] === "text-to-speech" && (segments[3] === "stream-input" || segments[3] === "multi-stream-input")) {
      const q = url.searchParams;
      const queryKey = q.has("authorization") ? bareKey(q.get("authorization")) : null;
      if ((headerKey !== null && !keyOk(headerKey)) || (q.has("authorization") && !keyOk(queryKey))) return refuseUpgrade(socket, 403, "");
      const format = q.get("output_format") ?? "mp3_44100_128";
      const modelId = q.get("model_id") ?? "eleven_multilingual_v2";
      const inactivity = q.get("inactivity_timeout") ?? "20";
      const inactivityS = /^\d{1,3}$/.test(inactivity) ? Number(inactivity) : NaN;
      const boolsOk = ["sync_alignment", "auto_mode", "enable_logging", "enable_ssml_parsing"].every((n) => !q.has(n) || BOOL_WORDS.includes(q.get(n)!.toLowerCase()));
      const seed = q.get("seed");
      const seedOk = seed === null || (/^\d{1,10}$/.test(seed) && Number(seed) <= 4_294_967_295);
      const normOk = !q.has("apply_text_normalization") || ["auto", "on", "off"].includes(q.get("apply_text_normalization")!);
      if (!FAKE_TTS_SOCKET_FORMATS.includes(format) || !(inactivityS >= 1 && inactivityS <= 180) || !boolsOk || !seedOk || !normOk || modelId === "eleven_v3") {
        return refuseUpgrade(socket, 403, "");
      }
      if (!/^(mp3|pcm|ulaw)_/.test(format)) {
        return refuseUpgrade(socket, 400, JSON.stringify({ detail: { status: "fake_unsupported_format", message: `The fake renders MP3, PCM and mu-law only, not ${format}.` } }));
      }
      const multi = segments[3] === "multi-stream-input";
      const authedKey = headerKey ?? queryKey;
      const autoMode = ["true", "1", "yes", "on", "t", "y"].includes((q.get("auto_mode") ?? "false").toLowerCase());
      return accept(multi ? "multi-stream-input" : "stream-input", (ws, record) => {
        new TtsSession(ws, record, deps, { multi, voiceId: segments[2]!, modelId, format: format as AudioFormat, inactivityS, autoMode, key: authedKey, keyOk });
      });
    }
    if (segments.length === 3 && segments[0] === "v1" && segments[1] === "speech-to-text" && segments[2] === "realtime") {
      const token = url.searchParams.get("token");
      const key = headerKey ?? token;
      return accept("speech-to-text", (ws, record) => {
        new ScribeSession(ws, record, deps, url.searchParams, keyOk(key));
      });
    }
    return refuseUpgrade(socket, 403, "");
  };

  return {
    onUpgrade,
    speechToText: (req, res, raw) => batchSpeechToText(req, res, raw),
    sockets,
    closeAll() {
      for (const ws of live) ws.terminate();
      live.clear();
      for (const socket of held) socket.destroy();
      held.clear();
    },
  };
}

/** One context of a text-to-speech socket (stream-input has one, unnamed). */
interface TtsContext {
  id: string | null;
  buffer: string;
  scheduleAt: number;
  schedule: number[];
  /** The context's first `voice_settings` / `generation_config`, as JSON (null: not given). */
  voiceSettings: string | null;
  generationConfig: string | null;
  closing: boolean;
}

/** Settings of a {@link TtsSession}. */
interface TtsOptions {
  multi: boolean;
  voiceId: string;
  modelId: string;
  format: AudioFormat;
  inactivityS: number;
  autoMode: boolean;
  /** The key accepted at the upgrade, or null (then the first message must carry it). */
  key: string | null;
  keyOk: (key: string | null) => key is string;
}

/** One text-to-speech socket (see the module comment). */
class TtsSession {
  readonly #ws: WebSocket;
  readonly #rec: ElevenLabsFakeSocket;
  readonly #deps: RealtimeFakeDeps;
  readonly #o: TtsOptions;
  #key: string | null;
  #started = false;
  #done = false;
  #ending = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #chain: Promise<void> = Promise.resolve();
  #single: TtsContext | null = null;
  readonly #contexts = new Map<string, TtsContext>();
  #endedResolve: () => void = () => {};
  readonly #ended = new Promise<void>((resolve) => (this.#endedResolve = resolve));

  constructor(ws: WebSocket, rec: ElevenLabsFakeSocket, deps: RealtimeFakeDeps, o: TtsOptions) {
    this.#ws = ws;
    this.#rec = rec;
    this.#deps = deps;
    this.#o = o;
    this.#key = o.key;
    ws.on("message", (data: RawData) => this.#onMessage(data));
    ws.on("close", (code: number, reason: Buffer) => {
      if (!this.#done) {
        this.#rec.closeCode = code;
        this.#rec.closeReason = reason.toString("utf8");
        this.#rec.closedBy = "client";
      }
      this.#finish();
    });
    ws.on("error", () => {});
    this.#arm();
  }

  #finish(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    this.#endedResolve();
  }

  #arm(): void {
    clearTimeout(this.#timer);
    const s = this.#o.inactivityS;
    this.#timer = setTimeout(
      () =>
        this.#fatal(
          "input_timeout_exceeded",
          `Have not received a new text input within the timeout of ${s} seconds. Streaming input terminated. Please make sure to either feed the input in the timely manner, or to send the end of input text (empty string "") when done.`,
        ),
      s * 1000,
    );
  }

  #send(message: Record<string, unknown>): void {
    if (this.#done) return;
    let recorded: Record<string, unknown> = message;
    if (typeof message.audio === "string") {
      const { audio, ...rest } = message;
      recorded = { ...rest, audioBytes: Buffer.from(audio as string, "base64").byteLength };
    }
    this.#rec.received.push(recorded);
    this.#ws.send(JSON.stringify(message));
  }

  #close(code: number, reason: string): void {
    if (this.#done) return;
    this.#rec.closeCode = code;
    this.#rec.closeReason = closeReason(reason);
    this.#rec.closedBy = "server";
    this.#finish();
    this.#ws.close(code, closeReason(reason));
  }

  /** An error message, then close 1008 with its text (see the module comment). */
  #fatal(error: string, message: string): void {
    this.#send({ message, error, code: 1008 });
    this.#close(1008, message);
  }

  #onMessage(data: RawData): void {
    if (this.#done || this.#ending) return;
    this.#arm();
    const text = rawText(data);
    let msg: unknown;
    try {
      msg = JSON.parse(text) as unknown;
    } catch {
      msg = undefined;
    }
    this.#rec.sent.push(msg === undefined ? { raw: text.slice(0, 200) } : redactKeys(msg));
    if (!isObject(msg)) return this.#fatal("invalid_input_message", INVALID_INPUT);
    if (!this.#started && !this.#first(msg)) return;
    if (this.#o.multi) this.#multi(msg);
    else this.#stream(msg);
  }

  /** The socket's first message: `{"text": " "}`, the key when the upgrade had none, the model and voice. */
  #first(msg: Record<string, unknown>): boolean {
    if (msg.text !== " ") {
      this.#fatal("invalid_input_message", INVALID_INPUT);
      return false;
    }
    if (this.#key === null) {
      const key = bareKey(msg.xi_api_key ?? msg["xi-api-key"] ?? msg.authorization);
      if (!this.#o.keyOk(key)) {
        this.#fatal("invalid_api_key", "Invalid API key");
        return false;
      }
      this.#key = key;
    }
    const always = new Set(this.#deps.markers());
    const { modelId, voiceId } = this.#o;
    if (!this.#deps.ttsModels.includes(modelId) || this.#deps.isRetired(modelId)) {
      this.#fatal("model_not_found", `A model with model ID ${modelId} does not exist or is not available to you.`);
      return false;
    }
    if (!this.#deps.isVoice(voiceId) || always.has("voice_gone")) {
      this.#fatal("voice_not_found", `A voice with the voice_id ${voiceId} was not found.`);
      return false;
    }
    if (always.has("quota")) {
      this.#fatal("quota_exceeded", "This request exceeds your quota of 10000. You have 0 credits remaining, while 1 credits are required for this request.");
      return false;
    }
    this.#started = true;
    return true;
  }

  /**
   * The settings of a context's first message, checked: `{voiceSettings, generationConfig, schedule}`, or
   * null after refusing (the socket is then closed).
   */
  #settingsOf(msg: Record<string, unknown>): { voiceSettings: string | null; generationConfig: string | null; schedule: number[] } | null {
    const vs = msg.voice_settings;
    if (vs !== undefined && vs !== null) {
      if (!isObject(vs)) return this.#fatal("invalid_input_message", INVALID_INPUT), null;
      for (const [field, [min, max]] of Object.entries(this.#deps.voiceRanges)) {
        const v = vs[field];
        if (v === undefined || v === null) continue;
        if (typeof v !== "number" || !Number.isFinite(v)) return this.#fatal("invalid_input_message", INVALID_INPUT), null;
        if (v < min || v > max) {
          this.#fatal(
            "invalid_voice_settings",
            `Invalid setting for ${field} received, expected to be greater or equal to ${min.toFixed(1)} and less or equal to ${max.toFixed(1)}, received ${v.toFixed(1)}.`,
          );
          return null;
        }
      }
      if (vs.use_speaker_boost !== undefined && vs.use_speaker_boost !== null && typeof vs.use_speaker_boost !== "boolean") {
        return this.#fatal("invalid_input_message", INVALID_INPUT), null;
      }
    }
    let schedule = DEFAULT_SCHEDULE;
    const gc = msg.generation_config;
    if (gc !== undefined && gc !== null) {
      if (!isObject(gc)) return this.#fatal("invalid_input_message", INVALID_INPUT), null;
      const cls = gc.chunk_length_schedule;
      if (cls !== undefined && cls !== null) {
        if (!Array.isArray(cls) || cls.length === 0 || !cls.every((n) => typeof n === "number" && n >= 50 && n <= 500)) {
          this.#fatal("invalid_input_message", "Invalid generation_config: every chunk_length_schedule item must be a number between 50 and 500.");
          return null;
        }
        schedule = cls as number[];
      }
    }
    return { voiceSettings: vs === undefined || vs === null ? null : JSON.stringify(vs), generationConfig: gc === undefined || gc === null ? null : JSON.stringify(gc), schedule };
  }

  /** A later message of `ctx`: its settings absent or unchanged [#4527]; false after closing. */
  #unchanged(ctx: TtsContext, msg: Record<string, unknown>): boolean {
    const vs = msg.voice_settings;
    if (vs !== undefined && vs !== null && JSON.stringify(vs) !== ctx.voiceSettings) {
      this.#close(1008, VOICE_SETTINGS_CHANGED);
      return false;
    }
    const gc = msg.generation_config;
    if (gc !== undefined && gc !== null && JSON.stringify(gc) !== ctx.generationConfig) {
      this.#close(1008, GENERATION_CONFIG_CHANGED);
      return false;
    }
    return true;
  }

  #newContext(id: string | null, msg: Record<string, unknown>): TtsContext | null {
    const settings = this.#settingsOf(msg);
    if (settings === null) return null;
    return { id, buffer: "", scheduleAt: 0, schedule: settings.schedule, voiceSettings: settings.voiceSettings, generationConfig: settings.generationConfig, closing: false };
  }

  /** Appends `text` to `ctx` and queues the generations it triggers. */
  #take(ctx: TtsContext, text: string, flush: boolean, trigger: boolean): void {
    ctx.buffer += text;
    const size = [...ctx.buffer].length;
    const due = ctx.schedule[Math.min(ctx.scheduleAt, ctx.schedule.length - 1)]!;
    if (flush || this.#o.autoMode || (trigger && size >= TRIGGER_MIN_CHARS) || size >= due) {
      if (!flush && !this.#o.autoMode && size >= due) ctx.scheduleAt++;
      this.#generateBuffer(ctx);
    }
  }

  #generateBuffer(ctx: TtsContext): void {
    const text = ctx.buffer;
    ctx.buffer = "";
    if (text.trim() === "") return;
    this.#queue(() => this.#generate(ctx, text));
  }

  #queue(step: () => Promise<void> | void): void {
    this.#chain = this.#chain.then(step).catch(() => this.#close(1011, "Internal server error"));
  }

  /** stream-input: one context; `{"text": ""}` ends the socket. */
  #stream(msg: Record<string, unknown>): void {
    const first = this.#single === null;
    if (first) {
      this.#single = this.#newContext(null, msg);
      if (this.#single === null) return;
    } else if (!this.#unchanged(this.#single!, msg)) return;
    const ctx = this.#single!;
    if (typeof msg.text !== "string") return this.#fatal("invalid_input_message", INVALID_INPUT);
    if (first) return; // the opening " " is not spoken
    if (msg.text === "") {
      this.#ending = true;
      this.#generateBuffer(ctx);
      this.#queue(() => {
        this.#send({ isFinal: true });
        this.#close(1000, "");
      });
      return;
    }
    this.#take(ctx, msg.text, msg.flush === true, msg.try_trigger_generation === true);
  }

  /** multi-stream-input: contexts by `context_id`. */
  #multi(msg: Record<string, unknown>): void {
    if (msg.close_socket === true) {
      this.#ending = true;
      for (const ctx of this.#contexts.values()) if (!ctx.closing) this.#generateBuffer(ctx);
      this.#queue(() => {
        for (const ctx of this.#contexts.values()) this.#send({ isFinal: true, contextId: ctx.id });
        this.#contexts.clear();
        this.#close(1000, "");
      });
      return;
    }
    const rawId = msg.context_id ?? msg.contextId;
    if (rawId !== undefined && rawId !== null && typeof rawId !== "string") return this.#fatal("invalid_input_message", INVALID_INPUT);
    const id = typeof rawId === "string" ? rawId : "";
    let ctx = this.#contexts.get(id);
    const opening = ctx === undefined;
    if (ctx === undefined) {
      if (msg.close_context === true) return; // nothing to close
      if (this.#contexts.size >= FAKE_MAX_CONTEXTS) return this.#fatal("max_active_conversations", MAX_CONTEXTS_TEXT);
      const created = this.#newContext(id, msg);
      if (created === null) return;
      ctx = created;
      this.#contexts.set(id, ctx);
    } else {
      if (ctx.closing) return;
      if (!this.#unchanged(ctx, msg)) return;
    }
    const context = ctx;
    if (msg.close_context === true) {
      context.closing = true;
      context.buffer = "";
      this.#queue(() => {
        this.#send({ isFinal: true, contextId: context.id });
        this.#contexts.delete(id);
      });
      return;
    }
    const text = msg.text;
    if (text !== undefined && text !== null && typeof text !== "string") return this.#fatal("invalid_input_message", INVALID_INPUT);
    if ((text === undefined || text === null) && msg.flush !== true) return this.#fatal("invalid_input_message", INVALID_INPUT);
    const t = typeof text === "string" ? text : "";
    if (opening && t === " ") return; // the opening " " is not spoken
    if (t === "" && msg.flush !== true) return; // keep-alive
    this.#take(context, t, msg.flush === true, msg.try_trigger_generation === true);
  }

  /** Speaks `text` of `ctx` in pieces (see the module comment), honouring the markers. */
  async #generate(ctx: TtsContext, text: string): Promise<void> {
    if (this.#done) return;
    const markers = markersOf("", this.#deps.markers(), Array.from(text.matchAll(TEXT_MARKER), (m) => m[1]!));
    if (this.#deps.latencyMs > 0) await this.#deps.sleep(this.#deps.latencyMs);
    if (this.#done) return;
    if (markers.has("ws-hang")) return this.#ended;
    if (markers.has("ws-drop")) {
      this.#rec.closeCode = 1006;
      this.#rec.closedBy = "server";
      this.#finish();
      this.#ws.terminate();
      return;
    }
    if (markers.has("ws-1011")) return this.#close(1011, "Internal server error");
    if (markers.has("ws-fail")) return this.#fatal("something_went_wrong", SOMETHING_WRONG);
    if (markers.has("echo-key")) return this.#fatal("invalid_api_key", `Invalid API key: ${this.#key ?? ""}`);
    const pieces = renderSpeech(text, this.#o.format, this.#deps.toneSamples, this.#o.voiceId);
    for (let i = 0; i < pieces.length; i++) {
      if (this.#done) return;
      const p = pieces[i]!;
      const message: Record<string, unknown> = { audio: Buffer.from(p.audio).toString("base64") };
      if (!this.#o.multi) message.isFinal = false;
      message.normalizedAlignment = p.alignment;
      message.alignment = p.alignment;
      if (this.#o.multi) message.contextId = ctx.id;
      this.#send(message);
      if (i === 0 && markers.has("ws-fail-after-audio")) return this.#fatal("something_went_wrong", SOMETHING_WRONG);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

/** One piece of generated audio with the alignment of the characters starting in it (ms from its start). */
interface SpeechPieceOut {
  audio: Uint8Array;
  alignment: { chars: string[]; charStartTimesMs: number[]; charDurationsMs: number[] };
}

/** The fake's speech of `text` in `format`: a tone of 0.06 s per character, in pieces of about 0.2 s. */
export function renderSpeech(text: string, format: AudioFormat, toneSamples: RealtimeFakeDeps["toneSamples"], voiceId: string): SpeechPieceOut[] {
  const chars = [...text];
  const rate = audioFormatInfo(format).sampleRate;
  const seconds = chars.length * FAKE_SECONDS_PER_CHAR;
  const audios = Array.from(encodeAudioChunks(toneSamples(seconds, rate, voiceId), rate, format));
  const pieces: SpeechPieceOut[] = [];
  let startMs = 0;
  let c = 0;
  for (let i = 0; i < audios.length; i++) {
    const audio = audios[i]!;
    const endMs = startMs + audioDurationSec(audio, format) * 1000;
    const alignment: SpeechPieceOut["alignment"] = { chars: [], charStartTimesMs: [], charDurationsMs: [] };
    const last = i === audios.length - 1;
    while (c < chars.length && (last || c * FAKE_SECONDS_PER_CHAR * 1000 < endMs)) {
      alignment.chars.push(chars[c]!);
      alignment.charStartTimesMs.push(Math.max(0, Math.round(c * FAKE_SECONDS_PER_CHAR * 1000 - startMs)));
      alignment.charDurationsMs.push(Math.round(FAKE_SECONDS_PER_CHAR * 1000));
      c++;
    }
    pieces.push({ audio, alignment });
    startMs = endMs;
  }
  return pieces;
}

// ------------------------------------------------------------------------------------------ Scribe

/** One word (or spacing) the fake transcriber heard, seconds from the stream's start. */
interface HeardWord {
  text: string;
  start: number;
  end: number;
  type: "word" | "spacing";
}

/** A stretch of speech: sample indexes `[start, end)`; `end` null while it goes on. */
interface SpeechRegion {
  start: number;
  end: number | null;
}

/** Frames louder than this fraction of full scale are speech. */
const SPEECH_RMS = 0.02;
/** Seconds of speech per heard word. */
const SECONDS_PER_WORD = 0.4;
/** Shortest stretch of speech that is heard, seconds. */
const MIN_REGION_SECONDS = 0.05;

/**
 * The fake transcriber (see the module comment): fed 16-bit samples in order, it keeps the stretches of
 * speech of the current segment and turns them into words.
 */
class Transcriber {
  readonly rate: number;
  readonly #frame: number;
  #pos = 0;
  #pending: number[] = [];
  #regions: SpeechRegion[] = [];
  #segmentStart = 0;
  #silence = 0;
  #wordsBefore = 0;

  constructor(rate: number) {
    this.rate = rate;
    this.#frame = Math.max(1, Math.round(rate / 100));
  }

  /** Feeds samples; `onFrame` runs after each 10 ms frame (VAD decisions). */
  push(samples: Int16Array, onFrame?: () => void): void {
    for (const s of samples) {
      this.#pending.push(s);
      if (this.#pending.length < this.#frame) continue;
      let sum = 0;
      for (const v of this.#pending) sum += v * v;
      const rms = Math.sqrt(sum / this.#pending.length) / 32768;
      const start = this.#pos;
      this.#pos += this.#pending.length;
      this.#pending = [];
      const open = this.#regions.at(-1);
      if (rms > SPEECH_RMS) {
        if (open === undefined || open.end !== null) this.#regions.push({ start, end: null });
        this.#silence = 0;
      } else {
        if (open !== undefined && open.end === null) open.end = start;
        this.#silence += this.#frame;
      }
      onFrame?.();
    }
  }

  /** Seconds of audio since the segment started. */
  get uncommittedSec(): number {
    return (this.#pos + this.#pending.length - this.#segmentStart) / this.rate;
  }

  /** Seconds of silence since the last speech (0 while speaking). */
  get silenceSec(): number {
    return this.#silence / this.rate;
  }

  /** Seconds of the segment's speech. */
  get speechSec(): number {
    let n = 0;
    for (const r of this.#regions) n += (r.end ?? this.#pos) - r.start;
    return n / this.rate;
  }

  /** The segment's words so far, with spacing between them. */
  words(): HeardWord[] {
    const out: HeardWord[] = [];
    let index = this.#wordsBefore;
    for (const r of this.#regions) {
      const start = r.start / this.rate;
      const end = (r.end ?? this.#pos) / this.rate;
      if (end - start < MIN_REGION_SECONDS) continue;
      const n = Math.max(1, Math.round((end - start) / SECONDS_PER_WORD));
      const slot = (end - start) / n;
      for (let k = 0; k < n; k++) {
        const ws = start + k * slot;
        const last = out.at(-1);
        if (last !== undefined) out.push({ text: " ", start: round3(last.end), end: round3(ws), type: "spacing" });
        out.push({ text: FAKE_TRANSCRIPT_WORDS[index++ % FAKE_TRANSCRIPT_WORDS.length]!, start: round3(ws), end: round3(ws + slot * 0.8), type: "word" });
      }
    }
    return out;
  }

  /** Ends the segment: returns its words and starts the next one. */
  commit(): HeardWord[] {
    const words = this.words();
    this.#wordsBefore += words.filter((w) => w.type === "word").length;
    const open = this.#regions.at(-1);
    this.#regions = open !== undefined && open.end === null ? [{ start: this.#pos, end: null }] : [];
    this.#segmentStart = this.#pos + this.#pending.length;
    return words;
  }
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** The text of heard words. */
function textOf(words: readonly HeardWord[]): string {
  return words.map((w) => w.text).join("");
}

/** 16-bit samples of raw audio in a Scribe format (`pcm_*` little-endian, or `ulaw_8000`). */
function samplesOf(bytes: Buffer, ulaw: boolean): Int16Array {
  if (ulaw) {
    const out = new Int16Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) out[i] = ulawToLinear(bytes[i]!);
    return out;
  }
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(i * 2);
  return out;
}

/** Validated Scribe query settings. */
interface ScribeSettings {
  modelId: string;
  format: string;
  rate: number;
  ulaw: boolean;
  commitStrategy: "manual" | "vad";
  vadSilenceSecs: number;
  vadThreshold: number;
  minSpeechMs: number;
  minSilenceMs: number;
  languageCode: string | null;
  includeTimestamps: boolean;
  includeLanguageDetection: boolean;
  enableLogging: boolean;
}

/** The Scribe query checked [Scribe API], or the `invalid_request` text. */
function scribeSettings(q: URLSearchParams): ScribeSettings | string {
  const modelId = q.get("model_id");
  if (modelId === null || modelId === "") return "model_id is required.";
  if (!FAKE_SCRIBE_REALTIME_MODELS.includes(modelId)) {
    return `The model_id '${modelId}' is invalid. Supported models: ${FAKE_SCRIBE_REALTIME_MODELS.map((m) => `'${m}'`).join(", ")}.`;
  }
  const format = q.get("audio_format") ?? "pcm_16000";
  if (!FAKE_SCRIBE_FORMATS.includes(format)) return `The audio_format '${format}' is invalid. Supported formats: ${FAKE_SCRIBE_FORMATS.map((f) => `'${f}'`).join(", ")}.`;
  const strategy = q.get("commit_strategy") ?? "manual";
  if (strategy !== "manual" && strategy !== "vad") return `The commit_strategy '${strategy}' is invalid. Supported strategies: 'manual', 'vad'.`;
  const num = (name: string, fallback: number, min: number, max: number, integer: boolean): number | string => {
    const raw = q.get(name);
    if (raw === null) return fallback;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) return `${name} must be ${integer ? "an integer" : "a number"} between ${min} and ${max}.`;
    return n;
  };
  const bool = (name: string): boolean | string => {
    const raw = q.get(name);
    if (raw === null) return false;
    if (!BOOL_WORDS.includes(raw.toLowerCase())) return `${name} must be a boolean.`;
    return ["true", "1", "yes", "on", "t", "y"].includes(raw.toLowerCase());
  };
  const vadSilenceSecs = num("vad_silence_threshold_secs", 1.5, 0.3, 3, false);
  const vadThreshold = num("vad_threshold", 0.4, 0.1, 0.9, false);
  const minSpeechMs = num("min_speech_duration_ms", 100, 50, 2000, true);
  const minSilenceMs = num("min_silence_duration_ms", 100, 50, 2000, true);
  const includeTimestamps = bool("include_timestamps");
  const includeLanguageDetection = bool("include_language_detection");
  const enableLogging = q.has("enable_logging") ? bool("enable_logging") : true;
  for (const v of [vadSilenceSecs, vadThreshold, minSpeechMs, minSilenceMs, includeTimestamps, includeLanguageDetection, enableLogging]) if (typeof v === "string") return v;
  const languageCode = q.get("language_code");
  if (languageCode !== null && !/^[a-z]{2,3}$/.test(languageCode)) return `The language_code '${languageCode}' is invalid.`;
  return {
    modelId,
    format,
    rate: Number(format.split("_")[1]),
    ulaw: format === "ulaw_8000",
    commitStrategy: strategy,
    vadSilenceSecs: vadSilenceSecs as number,
    vadThreshold: vadThreshold as number,
    minSpeechMs: minSpeechMs as number,
    minSilenceMs: minSilenceMs as number,
    languageCode,
    includeTimestamps: includeTimestamps as boolean,
    includeLanguageDetection: includeLanguageDetection as boolean,
    enableLogging: enableLogging as boolean,
  };
}

/** Uncommitted audio below this many seconds is not committed [#378]. */
const MIN_COMMIT_SECONDS = 0.3;
/** Uncommitted audio is committed at this many seconds [Scribe API]. */
const AUTO_COMMIT_SECONDS = 90;

/** One Scribe realtime socket (see the module comment). */
class ScribeSession {
  readonly #ws: WebSocket;
  readonly #rec: ElevenLabsFakeSocket;
  readonly #deps: RealtimeFakeDeps;
  #s: ScribeSettings | null = null;
  #t: Transcriber | null = null;
  #done = false;
  #heardAudio = false;
  #lastPartial = "";

  constructor(ws: WebSocket, rec: ElevenLabsFakeSocket, deps: RealtimeFakeDeps, query: URLSearchParams, authed: boolean) {
    this.#ws = ws;
    this.#rec = rec;
    this.#deps = deps;
    ws.on("error", () => {});
    ws.on("close", (code: number, reason: Buffer) => {
      if (!this.#done) {
        this.#rec.closeCode = code;
        this.#rec.closeReason = reason.toString("utf8");
        this.#rec.closedBy = "client";
      }
      this.#done = true;
    });
    ws.on("message", (data: RawData) => this.#onMessage(data));
    if (!authed) {
      this.#fatal("auth_error", "Invalid API key", 1008);
      return;
    }
    const settings = scribeSettings(query);
    if (typeof settings === "string") {
      this.#fatal("invalid_request", settings, 1008);
      return;
    }
    if (new Set(deps.markers()).has("stt-rate-limited")) {
      this.#fatal("rate_limited", "Rate limit exceeded. Please slow down your requests.", 1008);
      return;
    }
    this.#s = settings;
    this.#t = new Transcriber(settings.rate);
    this.#send({
      message_type: "session_started",
      session_id: randomBytes(16).toString("hex"),
      config: {
        sample_rate: settings.rate,
        audio_format: settings.format,
        language_code: settings.languageCode,
        commit_strategy: settings.commitStrategy,
        vad_silence_threshold_secs: settings.vadSilenceSecs,
        vad_threshold: settings.vadThreshold,
        min_speech_duration_ms: settings.minSpeechMs,
        min_silence_duration_ms: settings.minSilenceMs,
        model_id: settings.modelId,
        enable_logging: settings.enableLogging,
        include_timestamps: settings.includeTimestamps,
        include_language_detection: settings.includeLanguageDetection,
      },
    });
  }

  #send(message: Record<string, unknown>): void {
    if (this.#done) return;
    this.#rec.received.push(message);
    this.#ws.send(JSON.stringify(message));
  }

  /** An error message (the session goes on). */
  #error(type: string, error: string): void {
    this.#send({ message_type: type, error });
  }

  /** An error message, then close `code` with the type as reason [#82]. */
  #fatal(type: string, error: string, code: number): void {
    this.#error(type, error);
    if (this.#done) return;
    this.#done = true;
    this.#rec.closeCode = code;
    this.#rec.closeReason = type;
    this.#rec.closedBy = "server";
    this.#ws.close(code, type);
  }

  #onMessage(data: RawData): void {
    if (this.#done || this.#s === null || this.#t === null) return;
    const s = this.#s;
    const t = this.#t;
    const text = rawText(data);
    let msg: unknown;
    try {
      msg = JSON.parse(text) as unknown;
    } catch {
      msg = undefined;
    }
    this.#rec.sent.push(msg === undefined ? { raw: text.slice(0, 200) } : redactKeys(msg));
    if (!isObject(msg) || msg.message_type !== "input_audio_chunk") return this.#error("input_error", "Invalid message: expected a JSON object with message_type 'input_audio_chunk'.");
    const b64 = msg.audio_base_64;
    if (typeof b64 !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return this.#error("input_error", "Invalid audio_base_64: expected base64-encoded audio.");
    if (msg.commit !== undefined && typeof msg.commit !== "boolean") return this.#error("input_error", "Invalid commit: expected a boolean.");
    if (msg.sample_rate !== undefined && msg.sample_rate !== s.rate) return this.#error("input_error", `Invalid sample_rate: ${String(msg.sample_rate)} does not match the audio_format ${s.format} (${s.rate} Hz).`);
    const bytes = Buffer.from(b64, "base64");
    if (!s.ulaw && bytes.length % 2 !== 0) return this.#error("input_error", "Invalid audio: 16-bit PCM chunks must hold a whole number of samples.");
    const seconds = bytes.length / (s.ulaw ? s.rate : s.rate * 2);
    if (seconds > FAKE_SCRIBE_MAX_CHUNK_SECONDS) return this.#error("chunk_size_exceeded", `Audio chunk of ${seconds.toFixed(2)}s exceeds the maximum of ${FAKE_SCRIBE_MAX_CHUNK_SECONDS}s.`);
    if (bytes.length > 0 && !this.#heardAudio) {
      this.#heardAudio = true;
      const markers = new Set(this.#deps.markers());
      if (markers.has("stt-drop")) {
        this.#done = true;
        this.#rec.closeCode = 1006;
        this.#rec.closedBy = "server";
        this.#ws.terminate();
        return;
      }
      if (markers.has("stt-quota")) return this.#fatal("quota_exceeded", "You have exceeded your usage quota.", 1008);
      if (markers.has("stt-transcriber-error")) return this.#fatal("transcriber_error", "An error occurred while transcribing the audio.", 1011);
    }
    if (bytes.length > 0) {
      t.push(samplesOf(bytes, s.ulaw), () => {
        if (s.commitStrategy !== "vad") return;
        if (t.silenceSec >= s.vadSilenceSecs && t.speechSec * 1000 >= s.minSpeechMs) this.#commit();
      });
      if (t.uncommittedSec >= AUTO_COMMIT_SECONDS) this.#commit();
      const partial = textOf(t.words());
      if (partial !== "" && partial !== this.#lastPartial) {
        this.#lastPartial = partial;
        this.#send({ message_type: "partial_transcript", text: partial });
      }
    }
    if (msg.commit === true) {
      const uncommitted = t.uncommittedSec;
      if (uncommitted < MIN_COMMIT_SECONDS) {
        return this.#error(
          "commit_throttled",
          `Commit request ignored: only ${uncommitted.toFixed(2)}s of uncommitted audio. You need at least ${MIN_COMMIT_SECONDS}s of uncommitted audio before committing.`,
        );
      }
      this.#commit();
    }
  }

  #commit(): void {
    const s = this.#s!;
    const words = this.#t!.commit();
    this.#lastPartial = "";
    const text = textOf(words);
    this.#send({ message_type: "committed_transcript", text });
    if (s.includeTimestamps || s.includeLanguageDetection) {
      this.#send({
        message_type: "committed_transcript_with_timestamps",
        text,
        language_code: s.languageCode ?? "en",
        words: s.includeTimestamps ? words : null,
      });
    }
  }
}

// ------------------------------------------------------------------------------ batch speech to text

/** A FastAPI 422 of one field. */
function validation422(res: ServerResponse, field: string): void {
  json(res, 422, { detail: [{ type: "missing", loc: ["body", field], msg: "Field required", input: null }] });
}

/** The samples and rate of a 16-bit PCM WAV file (channels mixed), or null. */
function wavSamples(b: Buffer): { samples: Int16Array; rate: number } | null {
  if (b.length < 44 || b.toString("ascii", 0, 4) !== "RIFF" || b.toString("ascii", 8, 12) !== "WAVE") return null;
  let at = 12;
  let rate = 0;
  let channels = 1;
  let bits = 0;
  while (at + 8 <= b.length) {
    const id = b.toString("ascii", at, at + 4);
    const size = b.readUInt32LE(at + 4);
    const body = at + 8;
    if (id === "fmt " && body + 16 <= b.length) {
      channels = b.readUInt16LE(body + 2);
      rate = b.readUInt32LE(body + 4);
      bits = b.readUInt16LE(body + 14);
    } else if (id === "data") {
      if (bits !== 16 || rate <= 0 || channels < 1) return null;
      const end = Math.min(b.length, body + size);
      const frames = Math.floor((end - body) / (2 * channels));
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < channels; c++) sum += b.readInt16LE(body + (i * channels + c) * 2);
        samples[i] = Math.round(sum / channels);
      }
      return { samples, rate };
    }
    at = body + size + (size % 2);
  }
  return null;
}

/** `POST /v1/speech-to-text` (see the module comment); returns the body to record. */
async function batchSpeechToText(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<unknown> {
  let form: FormData | null = null;
  const contentType = req.headers["content-type"] ?? "";
  if (/^multipart\/form-data/i.test(contentType)) {
    try {
      form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body: raw }).formData();
    } catch {
      form = null;
    }
  }
  const fields: Record<string, unknown> = {};
  let file: Blob | null = null;
  for (const [name, value] of form?.entries() ?? []) {
    if (typeof value === "string") fields[name] = value;
    else {
      file = value;
      fields[name] = { name: value.name, type: value.type, bytes: value.size };
    }
  }
  const modelId = typeof fields.model_id === "string" ? fields.model_id : null;
  if (modelId === null) return validation422(res, "model_id"), fields;
  if (!FAKE_STT_MODELS.includes(modelId)) {
    return json(res, 400, { detail: { status: "model_not_found", message: `A model with model ID ${modelId} does not exist or is not available to you.` } }), fields;
  }
  const urls = ["cloud_storage_url", "source_url"].filter((n) => typeof fields[n] === "string").length;
  if ((file === null) === (urls === 0)) {
    return json(res, 400, { detail: { status: "invalid_parameters", message: "Exactly one of the file or cloud_storage_url parameters must be provided." } }), fields;
  }
  const fileFormat = fields.file_format ?? "other";
  if (fileFormat !== "other" && fileFormat !== "pcm_s16le_16") {
    return json(res, 422, { detail: [{ type: "enum", loc: ["body", "file_format"], msg: "Input should be 'pcm_s16le_16' or 'other'", input: fileFormat, ctx: { expected: "'pcm_s16le_16' or 'other'" } }] }), fields;
  }
  const bytes = file === null ? Buffer.alloc(0) : Buffer.from(await file.arrayBuffer());
  let t: Transcriber;
  let seconds: number;
  const wav = fileFormat === "pcm_s16le_16" ? { samples: samplesOf(bytes.subarray(0, bytes.length & ~1), false), rate: 16000 } : wavSamples(bytes);
  if (wav !== null) {
    t = new Transcriber(wav.rate);
    t.push(wav.samples);
    seconds = wav.samples.length / wav.rate;
  } else {
    // Not decoded: heard as speech throughout, as long as its MP3 frames say (else 1 s).
    const mp3 = audioDurationSec(new Uint8Array(bytes), "mp3_44100_128");
    seconds = mp3 > 0 ? mp3 : bytes.length > 0 ? 1 : 0;
    t = new Transcriber(1000);
    const n = Math.round(seconds * 1000);
    const loud = new Int16Array(n).fill(16000);
    t.push(loud);
    t.push(new Int16Array(10));
  }
  if (seconds < 0.1) return json(res, 400, { detail: { status: "audio_too_short", message: "The audio is too short: the minimum length is 100 ms." } }), fields;
  const words = t.commit().map((w) => ({ ...w, logprob: 0 }));
  json(res, 200, {
    language_code: typeof fields.language_code === "string" ? fields.language_code : "eng",
    language_probability: 0.98,
    text: textOf(words),
    words,
    transcription_id: randomBytes(10).toString("hex"),
  });
  return fields;
}
