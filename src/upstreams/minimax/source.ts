/**
 * A MiniMax source of the beta family (D25): speech (whole, streamed, and realtime over MiniMax's T2A
 * WebSocket, D42), music, voice design and clone, and the system voice catalog, on MiniMax's own API.
 * Built by {@link createMiniMaxSource} from one `UPSTREAMS` entry of protocol `minimax`; the vidC job
 * source of the same entry is video-source.ts.
 *
 * | capability | call | module |
 * |---|---|---|
 * | `speech` | `POST /v1/t2a_v2` (SSE when streaming) | speech.ts |
 * | `openSpeechStream` | WebSocket `GET /ws/v1/t2a_v2` (`task_start`, `task_continue` per text, `task_finish`) | speech-socket.ts, socket-audio.ts |
 * | `music` | `POST /v1/music_generation` | music.ts |
 * | `designVoice`, `cloneVoice`, `listVoices` | `voice_design`; `files/upload` + `voice_clone`; `get_voice` | voices.ts |
 *
 * ## Timeouts
 * `timeoutMs` (the entry's `timeout_s`) is the total time of one call when given. When it is not: 60 s
 * for speech, voice listing, design and clone (MiniMax answers those in seconds; a streamed answer must
 * start within it and then never pause longer), and 300 s for music, which MiniMax generates before it
 * answers and which takes tens of seconds for a song (upstreams.md "Can take tens of seconds"). The two
 * defaults use two connection pools; `close()` releases both. A realtime stream waits at most the speech
 * timeout for each expected message (the task's start, the next audio of a text) and at most the entry's
 * connect timeout (default 10 s, capped by the timeout) for its connection; each stream owns its
 * connection, which the stream's own `close()` ends.
 *
 * ## Models
 * D35 defaults: `beta-speech-hd` -> `speech-2.8-hd`, `beta-speech-turbo` -> `speech-2.8-turbo`,
 * `beta-music` -> `music-2.5`, `beta-music-pro` -> `music-2.6`, each overridable by `models` (models.ts;
 * e.g. `{"beta-speech-hd": "speech-2.6-hd"}`). A model this source does not serve (another family's, a
 * music model on `speech`) throws an `unsupported` error before anything is sent. A call MiniMax refuses
 * with 2013 naming the model sent throws with `modelNotFound` and `upstreamModel` (api.ts, D35).
 */
import type { SpeechStream, SpeechStreamRequest, SpeechStreamSource } from "../realtime.ts";
import type {
  AudioBytes,
  AudioResult,
  MusicRequest,
  MusicSource,
  NamedSource,
  SpeechAdapter,
  SpeechRequest,
  UpstreamSourceConfig,
  VoiceCloneRequest,
  VoiceCreationAdapter,
  VoiceDesignRequest,
  VoiceListSource,
  VoiceRecord,
} from "../types.ts";
import { DEFAULT_CONNECT_TIMEOUT_MS } from "../keyed-http.ts";
import { createMiniMaxApi, MiniMaxError } from "./api.ts";
import type { MiniMaxApi } from "./api.ts";
import { betaUpstreamId, checkModelOverrides } from "./models.ts";
import { generateMusic } from "./music.ts";
import { synthesize } from "./speech.ts";
import { createMiniMaxSpeechSocket } from "./speech-socket.ts";
import { cloneVoice, designVoice, listSystemVoices } from "./voices.ts";

/** Default total time of a speech, voice listing, design or clone call, ms. */
export const DEFAULT_SPEECH_TIMEOUT_MS = 60_000;
/** Default total time of a music call, ms. */
export const DEFAULT_MUSIC_TIMEOUT_MS = 300_000;

/** Everything the gateway asks of a MiniMax source of the beta family. */
export interface MiniMaxSource extends NamedSource, SpeechAdapter, MusicSource, VoiceCreationAdapter, VoiceListSource, SpeechStreamSource {}

/**
 * Creates a MiniMax source of the beta family. `cfg.baseUrl` defaults to `https://api.minimax.io`; the
 * key is sent as `Authorization: Bearer <apiKey>`, only to the base host and `trustedHosts` (D25).
 * @throws RangeError for a bad configuration (name, base URL, key, timeout, trusted host, `models` entry).
 */
export function createMiniMaxSource(cfg: UpstreamSourceConfig): MiniMaxSource {
  if (typeof cfg.name !== "string" || cfg.name === "") throw new RangeError("name must be a non-empty string");
  const overrides = checkModelOverrides(cfg.models);
  const { name } = cfg;
  const transport = (timeoutMs: number): MiniMaxApi =>
    createMiniMaxApi({
      name,
      baseUrl: cfg.baseUrl,
      apiKey: cfg.apiKey,
      timeoutMs,
      trustedHosts: cfg.trustedHosts,
      connectTimeoutMs: cfg.connectTimeoutMs,
      dispatcher: cfg.dispatcher,
    });
  const api = transport(cfg.timeoutMs ?? DEFAULT_SPEECH_TIMEOUT_MS);
  const musicApi = cfg.timeoutMs === undefined ? transport(DEFAULT_MUSIC_TIMEOUT_MS) : api;

  const upstreamId = (model: string, kind: "speech" | "music"): string => {
    const id = model.startsWith(`beta-${kind}`) ? betaUpstreamId(model, overrides) : null;
    if (id === null) throw new MiniMaxError(`${name}: model ${JSON.stringify(model.slice(0, 60))} is not a ${kind} model of MiniMax`, { retryable: false, kind: "unsupported" });
    return id;
  };

  const speechTimeoutMs = cfg.timeoutMs ?? DEFAULT_SPEECH_TIMEOUT_MS;
  const socket = createMiniMaxSpeechSocket({
    name,
    api,
    apiKey: cfg.apiKey,
    timeoutMs: speechTimeoutMs,
    connectTimeoutMs: Math.min(cfg.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, speechTimeoutMs),
    upstreamId: (model) => upstreamId(model, "speech"),
  });

  return {
    name,
    async openSpeechStream(req: SpeechStreamRequest, signal?: AbortSignal): Promise<SpeechStream> {
      return socket.openSpeechStream(req, signal);
    },
    async speech(req: SpeechRequest, signal?: AbortSignal): Promise<AudioResult> {
      return synthesize(api, req, upstreamId(req.model, "speech"), signal);
    },
    async music(req: MusicRequest, signal?: AbortSignal): Promise<AudioBytes> {
      return generateMusic(musicApi, req, upstreamId(req.model, "music"), signal);
    },
    async designVoice(req: VoiceDesignRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }> {
      return designVoice(api, req, signal);
    },
    async cloneVoice(req: VoiceCloneRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }> {
      return cloneVoice(api, req, signal);
    },
    async listVoices(signal?: AbortSignal): Promise<VoiceRecord[]> {
      return listSystemVoices(api, signal);
    },
    async close(): Promise<void> {
      await api.close();
      if (musicApi !== api) await musicApi.close();
    },
  };
}
