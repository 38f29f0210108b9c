/**
 * An ElevenLabs source: speech, music, sound effects and the voice catalog of the alpha family, realtime
 * speech (D42), and batch and realtime transcription of the `transcribe` family (Scribe, D43) on
 * ElevenLabs' own API (D25). Built by {@link createElevenLabsSource} from one `UPSTREAMS` entry of
 * protocol `elevenlabs` (families `alpha` and/or `transcribe`). The HTTP calls are synchronous: one
 * request answered by the whole audio, transcript or listing page; the realtime calls are WebSockets.
 *
 * ## Calls
 * | method | request | notes |
 * |---|---|---|
 * | `speech` | `POST /v1/text-to-speech/{voice_id}?output_format=` | speech.ts; `req.stream` ignored; `voice_not_found` -> `voiceUnavailable` |
 * | `music` | `POST /v1/music?output_format=` | music.ts; below 3000 ms generated at 3000 ms and trimmed (D26) |
 * | `sfx` | `POST /v1/sound-generation?output_format=` | music.ts |
 * | `listVoices` | `GET /v2/voices`, then `GET /v1/shared-voices`, every page | voices.ts |
 * | `transcribe` | `POST /v1/speech-to-text` (multipart `file`, `model_id` `scribe_v2`) | transcribe.ts; `understand` is absent (ElevenLabs answers no questions about audio) |
 * | `openSpeechStream` | WebSocket `/v1/text-to-speech/{voice_id}/multi-stream-input` | speech-socket.ts: one context per chunk; `eleven_v3` has no socket (`unsupported`) |
 * | `openTranscriptionStream` | WebSocket `/v1/speech-to-text/realtime?model_id=scribe_v2_realtime` | scribe-socket.ts; open at `session_started` |
 * A model the source does not serve for a call (`alpha-music` asked of `speech`, a model of another
 * family) is refused before anything is sent: a non-retryable error of kind `unsupported`.
 *
 * ## Timeouts
 * `cfg.timeoutMs` bounds every HTTP call when given. Otherwise speech, sound effects and each
 * voice-listing page get 60 s, music and transcription 300 s (ElevenLabs composes a song of minutes in
 * about real time; a long recording takes a while to upload). The two limits are two keyed transports
 * sharing one undici `Agent` (one connection pool per source, closed by `close()`; a `cfg.dispatcher` is
 * shared instead and never closed). A socket's connect (TCP, TLS, upgrade; for Scribe then again for
 * `session_started`) is bounded by the connect timeout (`connectTimeoutMs`, default 10 s, capped by
 * `timeoutMs`); a speech chunk fails when no message of it comes for the short limit (`timeoutMs`, 60 s).
 * Sockets are not pooled: `close()` releases the HTTP pool only, each stream closes its own socket.
 */
import { adapterDispatcher, DEFAULT_CONNECT_TIMEOUT_MS } from "../undici.ts";
import type { SpeechStream, SpeechStreamRequest, SpeechStreamSource, TranscriptionEvent, TranscriptionStream, TranscriptionStreamRequest, TranscriptionStreamSource } from "../realtime.ts";
import type {
  AudioBytes,
  AudioResult,
  AudioTextAdapter,
  AudioTextRequest,
  MusicAdapter,
  MusicRequest,
  NamedSource,
  SfxRequest,
  SpeechAdapter,
  SpeechRequest,
  UpstreamSourceConfig,
  VoiceListSource,
  VoiceRecord,
} from "../types.ts";
import { createElevenLabsApi, ElevenLabsError } from "./api.ts";
import type { ElevenLabsApi } from "./api.ts";
import { checkModelOverrides, upstreamModelId } from "./models.ts";
import type { ElevenLabsCapability } from "./models.ts";
import { composeMusic, generateSfx } from "./music.ts";
import { openScribeSocket } from "./scribe-socket.ts";
import { synthesize } from "./speech.ts";
import { openSpeechSocket } from "./speech-socket.ts";
import { transcribeBatch } from "./transcribe.ts";
import { listAllVoices } from "./voices.ts";

/** Total time of a speech, sound-effect or voice-listing call when `timeoutMs` is not configured, ms. */
export const DEFAULT_SPEECH_TIMEOUT_MS = 60_000;

/** Total time of a music call when `timeoutMs` is not configured, ms. */
export const DEFAULT_MUSIC_TIMEOUT_MS = 300_000;

/**
 * An ElevenLabs source: the alpha family's speech, music, sound effects and voice catalog, realtime speech
 * (D42), and the `transcribe` family's batch and realtime transcription (D43). No `understand`.
 */
export interface ElevenLabsSource
  extends NamedSource,
    SpeechAdapter,
    MusicAdapter,
    VoiceListSource,
    Pick<AudioTextAdapter, "transcribe">,
    SpeechStreamSource,
    TranscriptionStreamSource {}

/**
 * Creates an ElevenLabs source from its `UPSTREAMS` entry: `baseUrl` default `https://api.elevenlabs.io`,
 * the key sent as `xi-api-key`, `models` overriding ElevenLabs' model ids by gateway model id
 * (defaults, D35: `alpha-v3` -> `eleven_v3`, `alpha-multilingual-v2` -> `eleven_multilingual_v2`,
 * `alpha-flash-v2-5` and `alpha-turbo-v2-5` -> `eleven_flash_v2_5`, `alpha-music` -> `music_v2`,
 * `alpha-sfx` -> `eleven_text_to_sound_v2`, `host1-transcribe-1` -> `scribe_v2`; an override such as
 * `{"alpha-music": "music_v2_5"}` replaces one; realtime transcription always uses `scribe_v2_realtime`),
 * timeouts as the module comment says. A call ElevenLabs answers "no such model" (400
 * `model_not_found`, or 422 on `model_id`) throws an error with `modelNotFound` and `upstreamModel` (D35).
 * @throws RangeError for a bad configuration (name, base URL, empty key, timeout, trusted host, `models` entry).
 */
export function createElevenLabsSource(cfg: UpstreamSourceConfig): ElevenLabsSource {
  if (typeof cfg.name !== "string" || cfg.name === "") throw new RangeError("name must be a non-empty string");
  for (const [field, value] of [["timeoutMs", cfg.timeoutMs], ["connectTimeoutMs", cfg.connectTimeoutMs]] as const) {
    // Checked here, before the shared Agent is built with them (keyed-http checks only `timeoutMs`).
    if (value !== undefined && (!Number.isFinite(value) || value <= 0)) throw new RangeError(`${field} must be a positive number, got ${value}`);
  }
  const overrides = checkModelOverrides(cfg.models);
  const { name } = cfg;
  const shortTimeoutMs = cfg.timeoutMs ?? DEFAULT_SPEECH_TIMEOUT_MS;
  const longTimeoutMs = cfg.timeoutMs ?? DEFAULT_MUSIC_TIMEOUT_MS;
  const connectTimeoutMs = Math.min(cfg.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, shortTimeoutMs);
  const transport = { ...cfg, connectTimeoutMs };
  delete transport.models;

  // One pool for both transports; an Agent opens no connection until used, so a configuration that
  // keyed-http refuses below costs nothing but the close in the catch.
  const { dispatcher, ownAgent } = adapterDispatcher(cfg.dispatcher, connectTimeoutMs);
  let short: ElevenLabsApi;
  let long: ElevenLabsApi;
  try {
    short = createElevenLabsApi({ ...transport, timeoutMs: shortTimeoutMs, dispatcher });
    long = createElevenLabsApi({ ...transport, timeoutMs: longTimeoutMs, dispatcher });
  } catch (err) {
    if (ownAgent !== null) void ownAgent.close();
    throw err;
  }

  const modelOf = (model: string, capability: ElevenLabsCapability): string => {
    const id = upstreamModelId(model, capability, overrides);
    if (id === null) throw new ElevenLabsError(`${name}: model ${JSON.stringify(model.slice(0, 60))} is not served by ElevenLabs for ${capability}`, { retryable: false, kind: "unsupported" });
    return id;
  };

  return {
    name,
    async speech(req: SpeechRequest, signal?: AbortSignal): Promise<AudioResult> {
      return synthesize(short, req, modelOf(req.model, "speech"), signal);
    },
    async music(req: MusicRequest, signal?: AbortSignal): Promise<AudioBytes> {
      return composeMusic(long, req, modelOf(req.model, "music"), signal);
    },
    async sfx(req: SfxRequest, signal?: AbortSignal): Promise<AudioBytes> {
      return generateSfx(short, req, modelOf(req.model, "sfx"), signal);
    },
    async listVoices(signal?: AbortSignal): Promise<VoiceRecord[]> {
      return listAllVoices(short, signal);
    },
    async transcribe(req: AudioTextRequest, signal?: AbortSignal): Promise<{ text: string }> {
      return transcribeBatch(long, req, modelOf(req.model, "transcribe"), signal);
    },
    async openSpeechStream(req: SpeechStreamRequest, signal?: AbortSignal): Promise<SpeechStream> {
      return openSpeechSocket({ api: short, apiKey: cfg.apiKey, connectTimeoutMs, idleTimeoutMs: shortTimeoutMs, modelOf: (m) => modelOf(m, "speech") }, req, signal);
    },
    async openTranscriptionStream(req: TranscriptionStreamRequest, onEvent: (event: TranscriptionEvent) => void, signal?: AbortSignal): Promise<TranscriptionStream> {
      return openScribeSocket({ api: short, apiKey: cfg.apiKey, connectTimeoutMs, checkModel: (m) => void modelOf(m, "transcribe") }, req, onEvent, signal);
    },
    async close(): Promise<void> {
      if (ownAgent !== null) await ownAgent.close();
    },
  };
}
