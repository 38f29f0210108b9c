/**
 * An ElevenLabs source: speech, music, sound effects and the voice catalog of the alpha family on
 * ElevenLabs' own API (D25). Built by {@link createElevenLabsSource} from one `UPSTREAMS` entry of
 * protocol `elevenlabs`. Every call is synchronous: one HTTP request answered by the whole audio (or one
 * listing page); nothing is streamed, nothing is polled.
 *
 * ## Calls
 * | method | request | notes |
 * |---|---|---|
 * | `speech` | `POST /v1/text-to-speech/{voice_id}?output_format=` | speech.ts; `req.stream` ignored; `voice_not_found` -> `voiceUnavailable` |
 * | `music` | `POST /v1/music?output_format=` | music.ts; below 3000 ms generated at 3000 ms and trimmed (D26) |
 * | `sfx` | `POST /v1/sound-generation?output_format=` | music.ts |
 * | `listVoices` | `GET /v2/voices`, then `GET /v1/shared-voices`, every page | voices.ts |
 * A model the source does not serve for a call (`alpha-music` asked of `speech`, a model of another
 * family) is refused before anything is sent: a non-retryable error of kind `unsupported`.
 *
 * ## Timeouts
 * `cfg.timeoutMs` bounds every call when given. Otherwise speech, sound effects and each voice-listing
 * page get 60 s and music 300 s (ElevenLabs composes a song of minutes in about real time). The two
 * limits are two keyed transports sharing one undici `Agent` (one connection pool per source, closed by
 * `close()`; a `cfg.dispatcher` is shared instead and never closed).
 */
import { adapterDispatcher, DEFAULT_CONNECT_TIMEOUT_MS } from "../undici.ts";
import type { AudioBytes, AudioResult, MusicAdapter, MusicRequest, NamedSource, SfxRequest, SpeechAdapter, SpeechRequest, UpstreamSourceConfig, VoiceListSource, VoiceRecord } from "../types.ts";
import { createElevenLabsApi, ElevenLabsError } from "./api.ts";
import type { ElevenLabsApi } from "./api.ts";
import { checkModelOverrides, upstreamModelId } from "./models.ts";
import type { AlphaCapability } from "./models.ts";
import { composeMusic, generateSfx } from "./music.ts";
import { synthesize } from "./speech.ts";
import { listAllVoices } from "./voices.ts";

/** Total time of a speech, sound-effect or voice-listing call when `timeoutMs` is not configured, ms. */
export const DEFAULT_SPEECH_TIMEOUT_MS = 60_000;

/** Total time of a music call when `timeoutMs` is not configured, ms. */
export const DEFAULT_MUSIC_TIMEOUT_MS = 300_000;

/** An ElevenLabs source: the alpha family's speech, music, sound effects and voice catalog. */
export interface ElevenLabsSource extends NamedSource, SpeechAdapter, MusicAdapter, VoiceListSource {}

/**
 * Creates an ElevenLabs source from its `UPSTREAMS` entry: `baseUrl` default `https://api.elevenlabs.io`,
 * the key sent as `xi-api-key`, `models` overriding ElevenLabs' model ids by gateway model id
 * (defaults, D35: `alpha-v3` -> `eleven_v3`, `alpha-multilingual-v2` -> `eleven_multilingual_v2`,
 * `alpha-flash-v2-5` and `alpha-turbo-v2-5` -> `eleven_flash_v2_5`, `alpha-music` -> `music_v2`,
 * `alpha-sfx` -> `eleven_text_to_sound_v2`; an override such as `{"alpha-music": "music_v2_5"}` replaces
 * one), timeouts as the module comment says. A call ElevenLabs answers "no such model" (400
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

  const modelOf = (model: string, capability: AlphaCapability): string => {
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
    async close(): Promise<void> {
      if (ownAgent !== null) await ownAgent.close();
    },
  };
}
