/**
 * The messages of the realtime sockets (D42, D43) as ElevenLabs' clients send and read them: parsing (with
 * the checks ElevenLabs makes: a JSON object, `voice_settings` ranges, `chunk_length_schedule` items 50..500,
 * base64 audio in whole samples) and the server's messages. Pure functions; the sockets (speech.ts,
 * transcription.ts) decide what to do with them.
 */
import { SCHEDULE_ITEM_RANGE } from "../../audio/realtime/chunker.ts";
import type { SpeechAudio } from "../../audio/realtime/speech-session.ts";
import type { CommittedTranscript } from "../../audio/realtime/transcription-session.ts";
import type { RealtimeVoiceSettings } from "../../upstreams/realtime.ts";

/** A client message that cannot be used: the socket answers `invalid_request` (speech) or `input_error` (transcription). */
export class MessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MessageError";
  }
}

/** Longest `context_id`, characters. */
const MAX_CONTEXT_ID = 128;

/** A message of a text-to-speech socket (`stream-input` or `multi-stream-input`), snake_case as sent. */
export interface SpeechMessage {
  /** The text, when the message has one (`""` ends a `stream-input` socket). */
  text: string | undefined;
  flush: boolean;
  tryTrigger: boolean;
  voiceSettings: RealtimeVoiceSettings | undefined;
  schedule: number[] | undefined;
  /** `multi-stream-input`: the context, null for the default one. */
  contextId: string | null;
  closeContext: boolean;
  closeSocket: boolean;
  /** A key sent in the message (`xi_api_key`, or `authorization: "Bearer <key>"`), for the first message only. */
  key: string | null;
}

/** The JSON object of a text frame. @throws MessageError for a binary frame, bad JSON or a non-object. */
export function jsonObject(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): Record<string, unknown> {
  if (isBinary) throw new MessageError("Messages are JSON text frames; a binary frame was received.");
  const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.from(data as ArrayBuffer).toString("utf8");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new MessageError("The message is not valid JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new MessageError("The message must be a JSON object.");
  return value as Record<string, unknown>;
}

/** `v[name]` as a boolean (absent or null: false). @throws MessageError for another type. */
function flag(v: Record<string, unknown>, name: string): boolean {
  const x = v[name];
  if (x === undefined || x === null) return false;
  if (typeof x !== "boolean") throw new MessageError(`${name} must be a boolean.`);
  return x;
}

/** A number in `[min, max]` or absent. @throws MessageError naming the field. */
function inRange(v: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const x = v[name];
  if (x === undefined || x === null) return undefined;
  if (typeof x !== "number" || !Number.isFinite(x) || x < min || x > max) throw new MessageError(`voice_settings.${name} must be a number from ${min} to ${max}.`);
  return x;
}

/** `voice_settings` (ElevenLabs' ranges: stability, similarity_boost, style 0..1; speed 0.7..1.2). */
function voiceSettingsOf(x: unknown): RealtimeVoiceSettings | undefined {
  if (x === undefined || x === null) return undefined;
  if (typeof x !== "object" || Array.isArray(x)) throw new MessageError("voice_settings must be an object.");
  const v = x as Record<string, unknown>;
  const out: RealtimeVoiceSettings = {};
  const stability = inRange(v, "stability", 0, 1);
  const similarity = inRange(v, "similarity_boost", 0, 1);
  const style = inRange(v, "style", 0, 1);
  const speed = inRange(v, "speed", 0.7, 1.2);
  if (stability !== undefined) out.stability = stability;
  if (similarity !== undefined) out.similarity_boost = similarity;
  if (style !== undefined) out.style = style;
  if (speed !== undefined) out.speed = speed;
  if (v.use_speaker_boost !== undefined && v.use_speaker_boost !== null) {
    if (typeof v.use_speaker_boost !== "boolean") throw new MessageError("voice_settings.use_speaker_boost must be a boolean.");
    out.use_speaker_boost = v.use_speaker_boost;
  }
  return out;
}

/** `generation_config.chunk_length_schedule` (items 50..500 characters, at most 20). */
function scheduleOf(x: unknown): number[] | undefined {
  if (x === undefined || x === null) return undefined;
  if (typeof x !== "object" || Array.isArray(x)) throw new MessageError("generation_config must be an object.");
  const s = (x as Record<string, unknown>).chunk_length_schedule;
  if (s === undefined || s === null) return undefined;
  if (!Array.isArray(s) || s.length === 0 || s.length > 20) throw new MessageError("generation_config.chunk_length_schedule must be a list of 1 to 20 numbers.");
  return s.map((n) => {
    if (typeof n !== "number" || !Number.isFinite(n) || n < SCHEDULE_ITEM_RANGE.min || n > SCHEDULE_ITEM_RANGE.max) {
      throw new MessageError(`Each item of chunk_length_schedule must be from ${SCHEDULE_ITEM_RANGE.min} to ${SCHEDULE_ITEM_RANGE.max}.`);
    }
    return Math.round(n);
  });
}

/** The key of a message: `xi_api_key`, or `authorization` as `Bearer <key>` (or the bare key). */
function keyOf(v: Record<string, unknown>): string | null {
  const xi = v.xi_api_key ?? v["xi-api-key"];
  if (typeof xi === "string" && xi.length > 0) return xi;
  const auth = v.authorization;
  if (typeof auth === "string" && auth.length > 0) return /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] ?? auth;
  return null;
}

/**
 * A text-to-speech message (D42): `text`, `flush`, `try_trigger_generation`, `voice_settings`,
 * `generation_config`, and for `multi-stream-input` `context_id`, `close_context`, `close_socket`.
 * Unknown fields are ignored (ElevenLabs' too: `pronunciation_dictionary_locators` ...).
 * @throws MessageError for a field of the wrong type or out of range.
 */
export function parseSpeechMessage(v: Record<string, unknown>, multi: boolean): SpeechMessage {
  const text = v.text;
  if (text !== undefined && text !== null && typeof text !== "string") throw new MessageError("text must be a string.");
  let contextId: string | null = null;
  if (multi && v.context_id !== undefined && v.context_id !== null) {
    if (typeof v.context_id !== "string" || v.context_id.length === 0 || v.context_id.length > MAX_CONTEXT_ID) {
      throw new MessageError(`context_id must be a string of 1 to ${MAX_CONTEXT_ID} characters.`);
    }
    contextId = v.context_id;
  }
  return {
    text: typeof text === "string" ? text : undefined,
    flush: flag(v, "flush"),
    tryTrigger: flag(v, "try_trigger_generation"),
    voiceSettings: voiceSettingsOf(v.voice_settings),
    schedule: scheduleOf(v.generation_config ?? v.generator_config),
    contextId,
    closeContext: multi && flag(v, "close_context"),
    closeSocket: multi && flag(v, "close_socket"),
    key: keyOf(v),
  };
}

/** Base64 of bytes. */
function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** An audio message of a text-to-speech socket (D42), with `contextId` on `multi-stream-input`. */
export function speechAudioMessage(audio: SpeechAudio, contextId: string | null, multi: boolean): string {
  return JSON.stringify({
    audio: b64(audio.audio),
    isFinal: false,
    normalizedAlignment: audio.normalizedAlignment,
    alignment: audio.alignment,
    ...(multi && contextId !== null ? { contextId } : {}),
  });
}

/**
 * The final message of a context (D42): `{"isFinal": true}`, with `contextId` (and `is_final`) on
 * `multi-stream-input`, and the socket's `request_id` (D29: its usage record; an addition ElevenLabs'
 * clients ignore, so a browser, which cannot read the upgrade's headers, finds its record).
 */
export function speechFinalMessage(contextId: string | null, multi: boolean, requestId: string): string {
  return JSON.stringify(multi ? { isFinal: true, is_final: true, ...(contextId !== null ? { contextId } : {}), request_id: requestId } : { isFinal: true, request_id: requestId });
}

/** An error message of a text-to-speech socket (D42): `{"error": "<native code>", "message"}`, and the socket's `request_id` once it has one. */
export function speechErrorMessage(code: string, message: string, requestId: string | null = null): string {
  return JSON.stringify({ error: code, message, ...(requestId !== null ? { request_id: requestId } : {}) });
}

/** A message of a transcription socket (D43): `input_audio_chunk` with its audio (decoded) and `commit`. */
export interface AudioChunkMessage {
  audio: Uint8Array;
  commit: boolean;
  key: string | null;
}

/**
 * An `input_audio_chunk` (D43): `audio_base_64` (may be empty: a keepalive, or a commit alone), `commit`,
 * `sample_rate` (when given, the socket's rate), `previous_text` (accepted, not used). `maxBytes` bounds
 * the decoded audio (`chunk_size_exceeded` beyond it).
 * @throws MessageError with `kind` `input_error` or `chunk_size_exceeded`.
 */
export function parseAudioChunk(v: Record<string, unknown>, opts: { sampleRate: number; sampleBytes: number; maxBytes: number }): AudioChunkMessage {
  if (v.message_type !== "input_audio_chunk") throw new MessageError(`message_type must be input_audio_chunk, got ${JSON.stringify(v.message_type ?? null).slice(0, 40)}.`);
  const b = v.audio_base_64 ?? "";
  if (typeof b !== "string") throw new MessageError("audio_base_64 must be a string.");
  if (b.length > Math.ceil((opts.maxBytes * 4) / 3) + 4) throw new ChunkTooLarge(`A chunk may hold at most ${opts.maxBytes} bytes of audio.`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b) || b.length % 4 === 1) throw new MessageError("audio_base_64 is not valid base64.");
  const audio = new Uint8Array(Buffer.from(b, "base64"));
  if (audio.length % opts.sampleBytes !== 0) throw new MessageError(`The audio must hold whole samples of ${opts.sampleBytes} bytes.`);
  const rate = v.sample_rate;
  if (rate !== undefined && rate !== null && rate !== opts.sampleRate) throw new MessageError(`sample_rate ${JSON.stringify(rate).slice(0, 20)} does not match the socket's audio_format (${opts.sampleRate} Hz).`);
  const commit = v.commit ?? false;
  if (typeof commit !== "boolean") throw new MessageError("commit must be a boolean.");
  return { audio, commit, key: keyOf(v) };
}

/** A chunk over the size limit (Scribe's `chunk_size_exceeded`). */
export class ChunkTooLarge extends MessageError {
  constructor(message: string) {
    super(message);
    this.name = "ChunkTooLarge";
  }
}

/** `session_started` (D43), echoing the socket's configuration. */
export function sessionStartedMessage(sessionId: string, config: Record<string, unknown>): string {
  return JSON.stringify({ message_type: "session_started", session_id: sessionId, config });
}

/** `partial_transcript`. */
export function partialMessage(text: string): string {
  return JSON.stringify({ message_type: "partial_transcript", text });
}

/**
 * The messages of a committed segment: `committed_transcript`, then (when timestamps or language detection
 * were asked) `committed_transcript_with_timestamps` with `words` and `language_code`.
 */
export function committedMessages(c: CommittedTranscript, withTimestamps: boolean): string[] {
  const out = [JSON.stringify({ message_type: "committed_transcript", text: c.text })];
  if (withTimestamps) {
    out.push(JSON.stringify({ message_type: "committed_transcript_with_timestamps", text: c.text, language_code: c.languageCode, words: c.words ?? [] }));
  }
  return out;
}

/** A Scribe error message (D43): `{"message_type": "<error type>", "error": "<text>"}`. */
export function transcriptionErrorMessage(kind: string, text: string): string {
  return JSON.stringify({ message_type: kind, error: text });
}
