/**
 * The text-to-speech sockets (D42): ElevenLabs' `stream-input` and `multi-stream-input` protocols at
 * `GET /v1/audio/speech/{voice_id}/stream-input|multi-stream-input` and at the dialect's
 * `/elevenlabs/v1/text-to-speech/{voice_id}/...` (one handler). This module is the protocol edge only: it
 * turns the client's messages into calls of the speech session (audio/realtime/speech-session.ts), which
 * owns the money, the limits and the upstream, and renders what the session reports as ElevenLabs'
 * messages and close codes.
 */
import type { FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import {
  type SessionEnd,
  type SpeechAudio,
  SpeechSession,
  type SpeechSessionDeps,
  type SpeechSessionParams,
  type SpeechSessionSink,
} from "../../audio/realtime/speech-session.ts";
import { DEFAULT_SPEECH_MODEL } from "../../catalog/models.ts";
import type { Services } from "../../services.ts";
import type { AudioFormat } from "../../upstreams/types.ts";
import { MODEL_CALL } from "../auth.ts";
import { simulateHeader } from "../call-context.ts";
import { catalogModelOf } from "../dialects/elevenlabs/models.ts";
import { speechSocketSchema } from "../schemas/realtime.ts";
import type { Tag } from "../schemas/common.ts";
import type { App } from "../types.ts";
import { jsonObject, MessageError, parseSpeechMessage, type SpeechMessage, speechAudioMessage, speechErrorMessage, speechFinalMessage } from "./messages.ts";
import {
  authenticateByMessage,
  callerOfRequest,
  closeSocket,
  type RealtimeSockets,
  sendText,
  serveSocket,
  type SocketCaller,
  socketAuth,
  upgradeRequired,
} from "./sockets.ts";

/**
 * Characters waiting to be spoken (every context) past which the socket stops reading the client until
 * they drop below half of it: TCP's own flow control then slows a client writing faster than speech.
 */
export const MAX_BACKLOG_CHARS = 10_000;

/** Audio the gateway keeps for a client that does not read it, bytes, before it ends the socket (1008). */
export const MAX_UNREAD_BYTES = 64 * 1024 * 1024;

/** The query of a text-to-speech upgrade, as the route schema validated it. */
interface SpeechQuery {
  model_id?: string;
  output_format?: string;
  inactivity_timeout?: string;
  auto_mode?: "true" | "false";
}

/** One text-to-speech socket: the bridge between its WebSocket and its {@link SpeechSession}. */
class SpeechSocket implements SpeechSessionSink {
  readonly #services: Services;
  readonly #sockets: RealtimeSockets;
  readonly #request: FastifyRequest;
  readonly #multi: boolean;
  #ws: WebSocket | null = null;
  #session: SpeechSession | null = null;

  constructor(services: Services, sockets: RealtimeSockets, request: FastifyRequest, multi: boolean) {
    this.#services = services;
    this.#sockets = sockets;
    this.#request = request;
    this.#multi = multi;
  }

  /** What the speech session needs of the gateway. */
  #deps(): SpeechSessionDeps {
    const library = this.#services.voiceLibrary;
    return {
      db: this.#services.db.kysely,
      paidCalls: this.#services.paidCalls,
      events: this.#services.paidCalls.events,
      audio: this.#services.audio,
      isAlphaVoice: (id) => library.isAlphaVoice(id),
      isBetaVoice: (id) => library.isBetaVoice(id),
      servedBy: (p) => library.servedBy(p),
      onBackgroundError: (err) => this.#request.log.warn({ err: err instanceof Error ? err.message : String(err) }, "realtime speech"),
    };
  }

  /** The session's settings: the upgrade's query and path, the gateway's realtime settings, the caller. */
  #params(caller: SocketCaller): SpeechSessionParams {
    const q = this.#request.query as SpeechQuery;
    const { voice_id: voiceId } = this.#request.params as { voice_id: string };
    const rt = this.#services.config.realtime;
    return {
      accountId: caller.principal.accountId,
      modelId: catalogModelOf(q.model_id ?? DEFAULT_SPEECH_MODEL),
      voiceId,
      format: (q.output_format ?? "mp3_44100_128") as AudioFormat,
      autoMode: q.auto_mode === "true",
      inactivityTimeoutS: q.inactivity_timeout === undefined ? 20 : Number(q.inactivity_timeout),
      maxSessionS: rt.maxSessionS,
      holdChars: rt.holdChars,
      heartbeatMs: rt.heartbeatMs,
      simulate: simulateHeader(this.#request.headers["x-svc-simulate"]),
      call: caller.call,
      guard: caller.guard,
    };
  }

  /**
   * The checks of an opening that take nothing (model, voice, balance), for a plain request: it then learns
   * why its upgrade would be refused (a browser never sees the refusal of an upgrade).
   * @throws AppError: the refusal an upgrade would get.
   */
  async preflight(caller: SocketCaller): Promise<void> {
    await SpeechSession.preflight(this.#deps(), this.#params(caller));
  }

  /**
   * Opens the session for `caller` (D42: model, voice, limits, hold).
   * @throws AppError: the refusal (an HTTP answer before the upgrade; after it, an error message and 1008).
   */
  async open(caller: SocketCaller): Promise<void> {
    this.#session = await SpeechSession.open(this.#deps(), this.#params(caller), this);
    this.#sockets.add(this);
  }

  /**
   * The socket is accepted: its messages go to the session (or, without a key before the upgrade, the
   * first one authenticates it).
   */
  attach(ws: WebSocket): void {
    this.#ws = ws;
    serveSocket<SpeechMessage>(ws, this.#request, {
      needsKey: this.#session === null,
      parse: (data, isBinary) => parseSpeechMessage(jsonObject(data, isBinary), this.#multi),
      refusalOf: (err) => (err instanceof MessageError ? "invalid_request" : null),
      keyOf: (m) => m.key,
      authenticate: (key) =>
        authenticateByMessage(this.#services, this.#request, key, (caller) => this.open(caller), (code, message) => this.#refuse(code, message), (err) => err.code),
      handle: (m) => {
        this.#handle(m);
        this.#flowControl();
      },
      refuse: (code, message) => this.#refuse(code, message),
      crashCode: "internal_error",
      closed: (code) => this.#session?.clientClosed(code) ?? Promise.resolve(),
    });
  }

  /** A parsed message (D42): a context's first message, text, flush, the end, `close_context`, `close_socket`. */
  #handle(m: SpeechMessage): void {
    const s = this.#session;
    if (s === null || !s.open) return;
    s.touch();
    if (m.closeSocket) return s.endInput({ flushBuffered: false });
    const ctx = this.#multi ? m.contextId : null;
    if (m.closeContext) return s.closeContext(ctx);
    if (!s.hasContext(ctx)) {
      // A context's first message (ElevenLabs': `{"text": " "}` with its settings); its text, if any, is buffered.
      if (!s.openContext(ctx, { voiceSettings: m.voiceSettings ?? {}, schedule: m.schedule })) return;
      if (m.text !== undefined && m.text.trim().length > 0) s.text(ctx, m.text, { flush: m.flush, tryTrigger: m.tryTrigger });
      else if (m.flush) s.flush(ctx);
      return;
    }
    // `stream-input`: an empty text ends the input (everything buffered is spoken, then the socket closes).
    if (!this.#multi && m.text === "") return s.endInput({ flushBuffered: true });
    if (m.text !== undefined && m.text.length > 0) s.text(ctx, m.text, { flush: m.flush, tryTrigger: m.tryTrigger });
    else if (m.flush) s.flush(ctx);
  }

  #paused = false;

  /** Stops reading the client while the text waiting is large; reads again once it halved (see {@link MAX_BACKLOG_CHARS}). */
  #flowControl(): void {
    const ws = this.#ws;
    const s = this.#session;
    if (ws === null || s === null) return;
    const backlog = s.open ? s.backlog() : 0;
    if (!this.#paused && backlog > MAX_BACKLOG_CHARS) {
      this.#paused = true;
      ws.pause();
    } else if (this.#paused && backlog <= MAX_BACKLOG_CHARS / 2) {
      this.#paused = false;
      ws.resume();
    }
  }

  /** Ends the socket on a refusal: through the session when there is one (it settles), else the message and 1008. */
  #refuse(code: string, message: string): void {
    if (this.#session !== null) return this.#session.refuse(code, message);
    if (this.#ws === null) return;
    sendText(this.#ws, speechErrorMessage(code, message));
    closeSocket(this.#ws, 1008, message);
  }

  // SpeechSessionSink

  audio(contextId: string | null, audio: SpeechAudio): void {
    sendText(this.#ws, speechAudioMessage(audio, contextId, this.#multi));
    // A client that does not read its audio would make the gateway hold it all: past the bound, the socket
    // ends (what was generated was paid for; nothing more is generated).
    if (this.#ws !== null && this.#ws.bufferedAmount > MAX_UNREAD_BYTES) {
      this.#session?.refuse("client_not_reading", `More than ${MAX_UNREAD_BYTES / 1024 / 1024} MB of audio were waiting for the client to read them.`);
    }
  }

  spoke(): void {
    this.#flowControl();
  }

  final(contextId: string | null): void {
    sendText(this.#ws, speechFinalMessage(contextId, this.#multi, this.#request.id));
  }

  end(end: SessionEnd): void {
    this.#sockets.delete(this);
    if (this.#ws === null) return;
    // A paused socket reads again, so its close handshake completes.
    if (this.#paused) {
      this.#paused = false;
      this.#ws.resume();
    }
    if (end.error !== null) sendText(this.#ws, speechErrorMessage(end.error.code, end.error.message, this.#request.id));
    closeSocket(this.#ws, end.closeCode, end.error?.message ?? end.reason ?? "");
  }

  /** A graceful shutdown (D42): settled, then 1001. */
  shutdown(graceMs: number): Promise<void> {
    return this.#session?.shutdown(graceMs) ?? Promise.resolve();
  }

  /** The connection closed before the upgrade completed: the session opened for it is settled (nothing was spoken). */
  shutdownIfUnattached(): void {
    if (this.#ws === null) void this.#session?.clientClosed(1006);
  }
}

/** Sockets opened before the upgrade, waiting for it (by request). */
const opened = new WeakMap<FastifyRequest, SpeechSocket>();

/**
 * Registers the text-to-speech sockets at `prefix` + `path` (D42): `/v1/audio/speech/:voice_id` natively,
 * `/v1/text-to-speech/:voice_id` in the ElevenLabs dialect (its scope gives the error shape).
 */
export function speechSocketRoutes(app: App, services: Services, sockets: RealtimeSockets, opts: { path: string; tag: Tag; idPrefix: string }): void {
  for (const multi of [false, true]) {
    const url = `${opts.path}/${multi ? "multi-stream-input" : "stream-input"}`;
    app.route({
      method: "GET",
      url,
      schema: speechSocketSchema({ multi, tag: opts.tag, operationId: `${opts.idPrefix}${multi ? "MultiStreamInput" : "StreamInput"}` }),
      config: MODEL_CALL,
      onRequest: socketAuth(services),
      // Before the upgrade: the session opens (a refusal is the HTTP answer); a client that leaves before the
      // upgrade completes settles it.
      preHandler: async (request) => {
        if (!request.ws) return;
        const caller = callerOfRequest(services, request);
        if (caller === null) return;
        const socket = new SpeechSocket(services, sockets, request, multi);
        await socket.open(caller);
        opened.set(request, socket);
        request.raw.socket.once("close", () => void socket.shutdownIfUnattached());
      },
      // A plain request (no `Upgrade: websocket`): the checks an upgrade would meet that take nothing, then 426.
      handler: async (request) => {
        const caller = callerOfRequest(services, request);
        if (caller !== null) await new SpeechSocket(services, sockets, request, multi).preflight(caller);
        upgradeRequired(request);
      },
      wsHandler: (ws, request) => {
        const socket = opened.get(request) ?? new SpeechSocket(services, sockets, request, multi);
        opened.delete(request);
        socket.attach(ws);
      },
    });
  }
}
