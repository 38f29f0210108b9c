/**
 * The transcription socket (D43): ElevenLabs' Scribe realtime protocol at `GET /v1/audio/transcriptions/realtime`
 * and at the dialect's `/elevenlabs/v1/speech-to-text/realtime` (one handler). The protocol edge only: the
 * client's `input_audio_chunk` messages go to the transcription session (audio/realtime/transcription-session.ts),
 * which owns the money, the limits and the upstream; what it reports is rendered as Scribe's messages.
 */
import type { FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import type { SessionEnd } from "../../audio/realtime/speech-session.ts";
import { type CommittedTranscript, TranscriptionSession, type TranscriptionSessionSink } from "../../audio/realtime/transcription-session.ts";
import { DEFAULT_TRANSCRIPTION_MODEL } from "../../catalog/models.ts";
import { AppError } from "../../errors.ts";
import type { Services } from "../../services.ts";
import { realtimeAudioInfo, type RealtimeAudioFormat, type VadSettings } from "../../upstreams/realtime.ts";
import { MODEL_CALL } from "../auth.ts";
import { simulateHeader } from "../call-context.ts";
import { transcriptionSocketSchema } from "../schemas/realtime.ts";
import type { Tag } from "../schemas/common.ts";
import type { App } from "../types.ts";
import { type AudioChunkMessage, ChunkTooLarge, committedMessages, jsonObject, MessageError, parseAudioChunk, partialMessage, sessionStartedMessage, transcriptionErrorMessage } from "./messages.ts";
import { authenticateByMessage, callerOfRequest, closeSocket, type RealtimeSockets, sendText, serveSocket, type SocketCaller, socketAuth, upgradeRequired } from "./sockets.ts";

/** Largest chunk of audio one message may carry, bytes (about 10 s of 48 kHz PCM). */
export const MAX_AUDIO_CHUNK_BYTES = 1024 * 1024;

/** ElevenLabs' name of the default realtime transcription model (D43), which names the catalog's default here. */
const SCRIBE_REALTIME = "scribe_v2_realtime";

/** The query of a transcription upgrade, as the route schema validated it. */
interface TranscriptionQuery {
  model_id?: string;
  audio_format?: RealtimeAudioFormat;
  commit_strategy?: "manual" | "vad";
  language_code?: string;
  include_timestamps?: "true" | "false";
  include_language_detection?: "true" | "false";
  vad_silence_threshold_secs?: string;
  vad_threshold?: string;
  min_speech_duration_ms?: string;
  min_silence_duration_ms?: string;
  inactivity_timeout?: string;
}

/** A VAD setting of the query: absent -> `def`; outside `[min, max]` -> AppError 400 naming it. */
function vadNumber(value: string | undefined, name: string, def: number, min: number, max: number): number {
  if (value === undefined) return def;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) throw new AppError(400, "invalid_request", `${name} must be from ${min} to ${max}.`, name);
  return n;
}

/** The VAD settings of the query (D43 and ElevenLabs' ranges). @throws AppError 400. */
function vadOf(q: TranscriptionQuery): VadSettings {
  return {
    silenceThresholdSecs: vadNumber(q.vad_silence_threshold_secs, "vad_silence_threshold_secs", 1.5, 0.3, 3),
    threshold: vadNumber(q.vad_threshold, "vad_threshold", 0.4, 0.1, 0.9),
    minSpeechDurationMs: vadNumber(q.min_speech_duration_ms, "min_speech_duration_ms", 100, 50, 2000),
    minSilenceDurationMs: vadNumber(q.min_silence_duration_ms, "min_silence_duration_ms", 100, 50, 2000),
  };
}

/** The catalog model a `model_id` names (D43: `scribe_v2_realtime` and the absent id name the default). */
function modelIdOf(q: TranscriptionQuery): string {
  const id = q.model_id;
  return id === undefined || id === SCRIBE_REALTIME ? DEFAULT_TRANSCRIPTION_MODEL : id;
}

/** Scribe's error type for an opening refused after first-message authentication (D43). */
function refusalKind(err: AppError): string {
  if (err.status === 402) return "quota_exceeded";
  if (err.status === 429) return "rate_limited";
  if (err.status === 401) return "auth_error";
  return "invalid_request";
}

/** One transcription socket: the bridge between its WebSocket and its {@link TranscriptionSession}. */
class TranscriptionSocket implements TranscriptionSessionSink {
  readonly #services: Services;
  readonly #sockets: RealtimeSockets;
  readonly #request: FastifyRequest;
  readonly #query: TranscriptionQuery;
  readonly #format: RealtimeAudioFormat;
  readonly #vad: VadSettings;
  #ws: WebSocket | null = null;
  #session: TranscriptionSession | null = null;

  /** @throws AppError 400 for a VAD setting out of range (before the upgrade). */
  constructor(services: Services, sockets: RealtimeSockets, request: FastifyRequest) {
    this.#services = services;
    this.#sockets = sockets;
    this.#request = request;
    this.#query = request.query as TranscriptionQuery;
    this.#format = this.#query.audio_format ?? "pcm_16000";
    this.#vad = vadOf(this.#query);
  }

  /** Whether committed transcripts also come with timestamps and the language (D43). */
  get #withTimestamps(): boolean {
    return this.#query.include_timestamps === "true" || this.#query.include_language_detection === "true";
  }

  /** Opens the session (model, limits, hold). @throws AppError: the refusal. */
  async open(caller: SocketCaller): Promise<void> {
    const q = this.#query;
    const rt = this.#services.config.realtime;
    this.#session = await TranscriptionSession.open(
      {
        db: this.#services.db.kysely,
        paidCalls: this.#services.paidCalls,
        events: this.#services.paidCalls.events,
        audio: this.#services.audio,
        onBackgroundError: (err) => this.#request.log.warn({ err: err instanceof Error ? err.message : String(err) }, "realtime transcription"),
      },
      {
        accountId: caller.principal.accountId,
        modelId: modelIdOf(q),
        stream: {
          audioFormat: this.#format,
          commitStrategy: q.commit_strategy ?? "manual",
          vad: this.#vad,
          languageCode: q.language_code ?? null,
          includeTimestamps: q.include_timestamps === "true",
          includeLanguageDetection: q.include_language_detection === "true",
        },
        inactivityTimeoutS: q.inactivity_timeout === undefined ? 20 : Number(q.inactivity_timeout),
        maxSessionS: rt.maxSessionS,
        heartbeatMs: rt.heartbeatMs,
        simulate: simulateHeader(this.#request.headers["x-svc-simulate"]),
        call: caller.call,
        guard: caller.guard,
      },
      this,
    );
    this.#sockets.add(this);
  }

  /** The socket is accepted: the upstream starts, messages go to the session (or authenticate it first). */
  attach(ws: WebSocket): void {
    this.#ws = ws;
    const info = realtimeAudioInfo(this.#format);
    const limits = { sampleRate: info.sampleRate, sampleBytes: info.bytesPerSample, maxBytes: MAX_AUDIO_CHUNK_BYTES };
    if (this.#session !== null) void this.#session.start();
    serveSocket<AudioChunkMessage>(ws, this.#request, {
      needsKey: this.#session === null,
      parse: (data, isBinary) => parseAudioChunk(jsonObject(data, isBinary), limits),
      refusalOf: (err) => (err instanceof ChunkTooLarge ? "chunk_size_exceeded" : err instanceof MessageError ? "input_error" : null),
      keyOf: (m) => m.key,
      authenticate: async (key) => {
        const ok = await authenticateByMessage(this.#services, this.#request, key, (caller) => this.open(caller), (code, message) => this.#refuse(code, message), refusalKind);
        if (ok) void this.#session?.start();
        return ok;
      },
      handle: async (m) => {
        const s = this.#session!;
        s.touch();
        if (m.audio.length > 0 || m.commit) await s.audio(m.audio, m.commit);
      },
      refuse: (code, message) => this.#refuse(code, message),
      crashCode: "error",
      closed: (code) => this.#session?.clientClosed(code) ?? Promise.resolve(),
    });
  }

  /** Ends the socket on a refusal: through the session when there is one (it settles), else the message and 1008. */
  #refuse(kind: string, message: string): void {
    if (this.#session !== null) {
      void this.#session.refuse(kind, message);
      return;
    }
    if (this.#ws === null) return;
    sendText(this.#ws, transcriptionErrorMessage(kind, message));
    closeSocket(this.#ws, 1008, message);
  }

  // TranscriptionSessionSink

  started(sessionId: string): void {
    const q = this.#query;
    const info = realtimeAudioInfo(this.#format);
    sendText(
      this.#ws,
      sessionStartedMessage(sessionId, {
        sample_rate: info.sampleRate,
        audio_format: this.#format,
        language_code: q.language_code ?? null,
        commit_strategy: q.commit_strategy ?? "manual",
        vad_silence_threshold_secs: this.#vad.silenceThresholdSecs,
        vad_threshold: this.#vad.threshold,
        min_speech_duration_ms: this.#vad.minSpeechDurationMs,
        min_silence_duration_ms: this.#vad.minSilenceDurationMs,
        model_id: this.#session?.model.id ?? modelIdOf(q),
        enable_logging: true,
        include_timestamps: q.include_timestamps === "true",
        include_language_detection: q.include_language_detection === "true",
      }),
    );
  }

  partial(text: string): void {
    sendText(this.#ws, partialMessage(text));
  }

  committed(c: CommittedTranscript): void {
    for (const m of committedMessages(c, this.#withTimestamps)) sendText(this.#ws, m);
  }

  error(kind: string, message: string): void {
    sendText(this.#ws, transcriptionErrorMessage(kind, message));
  }

  end(end: SessionEnd): void {
    this.#sockets.delete(this);
    if (this.#ws === null) return;
    if (end.error !== null) sendText(this.#ws, transcriptionErrorMessage(end.error.code, end.error.message));
    closeSocket(this.#ws, end.closeCode, end.error?.message ?? end.reason ?? "");
  }

  /** A graceful shutdown (D43): settled, then 1001. */
  shutdown(): Promise<void> {
    return this.#session?.shutdown() ?? Promise.resolve();
  }

  /** The connection closed before the upgrade completed: the session opened for it is settled. */
  shutdownIfUnattached(): void {
    if (this.#ws === null) void this.#session?.clientClosed(1006);
  }
}

/** Sockets opened before the upgrade, waiting for it (by request). */
const opened = new WeakMap<FastifyRequest, TranscriptionSocket>();

/** Registers the transcription socket at `url` (D43): `/v1/audio/transcriptions/realtime` natively, `/v1/speech-to-text/realtime` in the dialect. */
export function transcriptionSocketRoutes(app: App, services: Services, sockets: RealtimeSockets, opts: { url: string; tag: Tag; operationId: string }): void {
  app.route({
    method: "GET",
    url: opts.url,
    schema: transcriptionSocketSchema({ tag: opts.tag, operationId: opts.operationId }),
    config: MODEL_CALL,
    onRequest: socketAuth(services),
    preHandler: async (request) => {
      if (!request.ws) return;
      const socket = new TranscriptionSocket(services, sockets, request);
      const caller = callerOfRequest(services, request);
      if (caller === null) {
        opened.set(request, socket);
        return;
      }
      await socket.open(caller);
      opened.set(request, socket);
      request.raw.socket.once("close", () => socket.shutdownIfUnattached());
    },
    handler: async (request) => upgradeRequired(request),
    wsHandler: (ws, request) => {
      const socket = opened.get(request) ?? new TranscriptionSocket(services, sockets, request);
      opened.delete(request);
      socket.attach(ws);
    },
  });
}
