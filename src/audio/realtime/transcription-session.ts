/**
 * A realtime transcription session (D43): the service behind one Scribe realtime socket, whatever its path.
 * The socket's protocol edge (http/realtime/) parses the client's `input_audio_chunk` messages and renders
 * what this session reports (`session_started`, partial and committed transcripts, errors). This module
 * owns what the socket costs and where its audio goes:
 *
 * - at open: the transcription model, one request in the rpm windows and one call of the `host_1` audio pool
 *   for the socket's life (D12), and the socket's one hold of 60 s of audio (billing/metered-hold.ts);
 * - then the upstream stream (ElevenLabs Scribe when a source serves the family, else the simulator), with
 *   failover at opening (upstreams/realtime-failover.ts);
 * - every chunk of audio is paid before it is sent upstream: the seconds it starts (a started second of audio
 *   received is charged, D43) are reserved, extending the hold by 60 s of audio when needed, and charged at
 *   once; when the money is not there the chunk is not sent: `quota_exceeded` and 1008, no audio
 *   transcribed unpaid;
 * - the end as for speech (session.ts of speech): the client's close, inactivity, the time limit, an
 *   upstream failure (`transcriber_error`, 1011), a shutdown (1001); each settles the hold once.
 */
import type { Executor } from "../../billing/ledger.ts";
import type { MeteredHold } from "../../billing/metered-hold.ts";
import type { BalanceEvents } from "../../billing/balance-events.ts";
import type { PaidCalls } from "../../billing/paid-call.ts";
import type { CallContext } from "../../billing/usage.ts";
import { getModelOf } from "../../catalog/models.ts";
import { quoteRealtimeSeconds } from "../../catalog/quote.ts";
import type { AudioTextModel } from "../../catalog/types.ts";
import { AppError } from "../../errors.ts";
import type { CallGuard } from "../../limits/limiter.ts";
import { realtimeMetered, realtimeSockets } from "../../metrics.ts";
import { currentScope, runInScope, type TraceScope } from "../../observability/tracing.ts";
import type { AudioRouter } from "../../upstreams/audio-router.ts";
import { realtimeAudioInfo, type TranscriptionEvent, type TranscriptionStream, type TranscriptionStreamRequest, type TranscriptWord } from "../../upstreams/realtime.ts";
import type { SimulateMode } from "../../upstreams/types.ts";
import type { SessionEnd } from "./speech-session.ts";
import { admitSocket } from "./admission.ts";

/** Seconds of audio one block of the hold covers (D43). */
export const TRANSCRIPTION_BLOCK_S = 60;

/** What a transcription session needs of the gateway. */
export interface TranscriptionSessionDeps {
  db: Executor;
  paidCalls: PaidCalls;
  events?: BalanceEvents | null;
  audio: AudioRouter;
  onBackgroundError?: (err: unknown) => void;
}

/** The settings of a socket (its upgrade's query), validated by the edge. */
export interface TranscriptionSessionParams {
  accountId: string;
  /** The catalog model id (`host1-transcribe-1`; the alias `transcribe` and `scribe_v2_realtime` already mapped). */
  modelId: string;
  /** The stream's settings, `model` and `simulate` aside (filled here). */
  stream: Omit<TranscriptionStreamRequest, "model" | "simulate">;
  inactivityTimeoutS: number;
  maxSessionS: number;
  heartbeatMs: number;
  simulate: SimulateMode | null;
  call: CallContext;
  guard: CallGuard;
}

/** A committed transcript for the client (Scribe's `committed_transcript`, with words and language when asked). */
export interface CommittedTranscript {
  text: string;
  words: TranscriptWord[] | null;
  languageCode: string | null;
}

/** What the protocol edge renders for the client, in order; `end` once, last. */
export interface TranscriptionSessionSink {
  /** The upstream accepted the stream: `session_started`. */
  started(sessionId: string): void;
  partial(text: string): void;
  committed(c: CommittedTranscript): void;
  /** An error the session survives (Scribe's error message types, e.g. `input_error`). */
  error(kind: string, message: string): void;
  end(end: SessionEnd): void;
}

/**
 * A realtime transcription session (see the module comment). Made by {@link TranscriptionSession.open},
 * started with {@link TranscriptionSession.start} once the socket is accepted.
 */
export class TranscriptionSession {
  readonly #deps: TranscriptionSessionDeps;
  readonly #params: TranscriptionSessionParams;
  readonly #model: AudioTextModel;
  readonly #meter: MeteredHold;
  readonly #releaseSlot: () => Promise<void>;
  readonly #sink: TranscriptionSessionSink;
  readonly #scope: TraceScope | undefined = currentScope();
  readonly #bytesPerSecond: number;
  readonly #sampleBytes: number;
  #stream: TranscriptionStream | null = null;
  #fallbackLayer: 0 | 1 = 0;
  /** Chunks received before the upstream stream opened, sent once it does. */
  #early: { audio: Uint8Array; commit: boolean }[] = [];
  #receivedBytes = 0;
  /** Whole seconds of audio paid for so far (a started second counts, D43). */
  #paidSeconds = 0;
  #state: "open" | "ended" = "open";
  #inactivity: NodeJS.Timeout | null = null;
  readonly #limit: NodeJS.Timeout;
  #ending: Promise<void> | null = null;
  /** Money steps in order (a chunk's reservation before the next chunk's). */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(deps: TranscriptionSessionDeps, params: TranscriptionSessionParams, model: AudioTextModel, meter: MeteredHold, releaseSlot: () => Promise<void>, sink: TranscriptionSessionSink) {
    this.#deps = deps;
    this.#params = params;
    this.#model = model;
    this.#meter = meter;
    this.#releaseSlot = releaseSlot;
    this.#sink = sink;
    const info = realtimeAudioInfo(params.stream.audioFormat);
    this.#sampleBytes = info.bytesPerSample;
    this.#bytesPerSecond = info.sampleRate * info.bytesPerSample;
    realtimeSockets.inc({ kind: "transcription" });
    this.touch();
    this.#limit = setTimeout(() => void this.#end({ closeCode: 1000, error: { code: "session_time_limit_exceeded", message: `The session reached its time limit of ${params.maxSessionS} s.` } }), params.maxSessionS * 1000);
    this.#limit.unref();
  }

  /**
   * The transcription model a socket may use (D43: a catalog transcription model or its alias).
   * @throws AppError 400 `invalid_model`; 410 `model_retired`.
   */
  static modelFor(modelId: string): AudioTextModel {
    const model = getModelOf(modelId, "transcription");
    if (!model?.enabled) throw new AppError(400, "invalid_model", `'${modelId}' is not a transcription model (GET /v1/models?capability=transcription lists them).`, "model_id");
    return model;
  }

  /**
   * Opens a session before the socket is accepted: model, limits, hold (HTTP refusals as for speech: 400,
   * 402 below one second's price, 403, 429). Nothing is held when it throws.
   */
  static async open(deps: TranscriptionSessionDeps, params: TranscriptionSessionParams, sink: TranscriptionSessionSink): Promise<TranscriptionSession> {
    const model = TranscriptionSession.modelFor(params.modelId);
    if (params.call.mode !== "test" && !deps.audio.realtimeTranscription) {
      throw new AppError(
        400,
        "realtime_not_supported",
        "No configured transcription source has a realtime socket (UPSTREAMS: the transcribe family needs an elevenlabs source for it); use POST /v1/audio/transcriptions.",
        "model_id",
      );
    }
    const { meter, releaseSlot } = await admitSocket(deps, {
      accountId: params.accountId,
      model,
      call: params.call,
      guard: params.guard,
      kind: "transcription",
      units: { seconds: 0 },
      pricing: { price: (s) => quoteRealtimeSeconds(model, s), blockUnits: TRANSCRIPTION_BLOCK_S, usageUnits: (s) => ({ seconds: s }) },
      heartbeatMs: params.heartbeatMs,
      unit: "second of audio",
    });
    return new TranscriptionSession(deps, params, model, meter, releaseSlot, sink);
  }

  /** The socket's request id (its usage record). */
  get requestId(): string {
    return this.#meter.requestId;
  }

  /** The catalog model transcribing. */
  get model(): AudioTextModel {
    return this.#model;
  }

  /** Whether the session still takes audio. */
  get open(): boolean {
    return this.#state === "open";
  }

  /** Runs `fn` in the socket's trace scope (its upgrade request's, D40). */
  #inScope<T>(fn: () => Promise<T>): Promise<T> {
    return this.#scope === undefined ? fn() : runInScope(this.#scope, fn);
  }

  /**
   * Opens the upstream stream (after the socket was accepted), then `sink.started`; the audio received
   * meanwhile follows. An upstream that cannot open ends the session: `transcriber_error`, 1011.
   */
  async start(): Promise<void> {
    const router = this.#params.call.mode === "test" ? this.#deps.audio.testMode : this.#deps.audio;
    const req: TranscriptionStreamRequest = { ...this.#params.stream, model: this.#model.id, simulate: this.#params.simulate };
    try {
      const served = await this.#inScope(() => router.transcriptionStream(req, (e) => this.#onEvent(e)));
      if (this.#state !== "open") {
        await served.stream.close();
        return;
      }
      this.#stream = served.stream;
      this.#fallbackLayer = served.fallbackLayer;
      this.#sink.started(this.requestId);
      for (const e of this.#early.splice(0)) this.#stream.send(e.audio, e.commit);
    } catch (err) {
      this.#deps.onBackgroundError?.(err);
      const busy = err instanceof AppError && err.status === 429;
      await this.#end({ closeCode: busy ? 1008 : 1011, error: busy ? { code: "rate_limited", message: err.message } : { code: "transcriber_error", message: "No upstream could start the transcription (every source was tried); nothing was charged beyond the audio sent." } });
    }
  }

  /** An event of the upstream stream, relayed to the client. */
  #onEvent(e: TranscriptionEvent): void {
    if (this.#state !== "open") return;
    if (e.type === "partial") this.#sink.partial(e.text);
    else if (e.type === "committed") this.#sink.committed({ text: e.text, words: e.words, languageCode: e.languageCode });
    else if (e.type === "error") this.#sink.error(e.kind, e.message);
    else {
      if (e.error !== null) this.#deps.onBackgroundError?.(e.error);
      void this.#end({ closeCode: e.error === null ? 1000 : 1011, error: e.error === null ? null : { code: "transcriber_error", message: "The upstream transcription stream failed." } });
    }
  }

  /** A client message arrived: the inactivity timer starts again. */
  touch(): void {
    if (this.#inactivity !== null) clearTimeout(this.#inactivity);
    if (this.#state !== "open") return;
    this.#inactivity = setTimeout(
      () => void this.#end({ closeCode: 1000, error: { code: "input_timeout_exceeded", message: `No message was received for ${this.#params.inactivityTimeoutS} s; the session is closed.` } }),
      this.#params.inactivityTimeoutS * 1000,
    );
    this.#inactivity.unref();
  }

  /**
   * A chunk of audio (bytes of the socket's format) and whether it commits the segment: paid for (the started
   * seconds it adds), then sent upstream. Out of funds: `quota_exceeded` and 1008, the chunk not sent.
   * Resolves once handled (the edge keeps the order by awaiting).
   */
  audio(bytes: Uint8Array, commit: boolean): Promise<void> {
    const run = this.#queue.then(() => this.#audio(bytes, commit));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #audio(bytes: Uint8Array, commit: boolean): Promise<void> {
    if (this.#state !== "open") return;
    const total = this.#receivedBytes + bytes.length;
    const seconds = Math.ceil(total / this.#bytesPerSecond);
    const more = seconds - this.#paidSeconds;
    if (more > 0) {
      let refusal;
      try {
        refusal = await this.#inScope(() => this.#meter.reserve(more));
      } catch (err) {
        this.#deps.onBackgroundError?.(err);
        void this.#end({ closeCode: 1011, error: { code: "error", message: "The session's hold could not be extended; no more audio is transcribed." } });
        return;
      }
      if (refusal !== null) {
        const code = refusal.code === "insufficient_balance" ? "quota_exceeded" : refusal.code;
        void this.#end({ closeCode: 1008, error: { code, message: refusal.message } });
        return;
      }
      // D43: a started second of audio received is charged, and it is only sent once paid.
      this.#meter.charge(more);
      realtimeMetered.inc({ kind: "transcription", unit: "seconds" }, more);
      this.#paidSeconds = seconds;
    }
    this.#receivedBytes = total;
    if (this.#stream === null) this.#early.push({ audio: bytes, commit });
    else this.#stream.send(bytes, commit);
  }

  /** The number of bytes of one sample of the socket's format (audio must come in whole samples). */
  get sampleBytes(): number {
    return this.#sampleBytes;
  }

  /** The client refused something (`input_error` and the like): the session ends with 1008. */
  refuse(code: string, message: string): Promise<void> {
    return this.#end({ closeCode: 1008, error: { code, message } });
  }

  /** The client closed the socket (or it broke): the hold is settled. */
  clientClosed(code: number): Promise<void> {
    return this.#end({ closeCode: code, error: null });
  }

  /** A graceful shutdown: settled, then closed with 1001 (D42, D43). */
  shutdown(): Promise<void> {
    return this.#end({ closeCode: 1001, error: null, reason: "The gateway is shutting down; reconnect to continue." });
  }

  /** Ends once: closes the upstream stream, settles the hold, gives the pool slot back, then `sink.end`. */
  #end(end: SessionEnd): Promise<void> {
    this.#ending ??= (async () => {
      this.#state = "ended";
      if (this.#inactivity !== null) clearTimeout(this.#inactivity);
      clearTimeout(this.#limit);
      // Money steps already queued (a chunk being paid) finish first (they never wait for this end).
      await this.#queue;
      await this.#stream?.close();
      try {
        await this.#inScope(() => this.#meter.close({ closeCode: end.closeCode, contexts: null, fallbackLayer: this.#fallbackLayer }));
      } catch (err) {
        this.#deps.onBackgroundError?.(err);
      }
      await this.#releaseSlot().catch(() => {});
      realtimeSockets.dec({ kind: "transcription" });
      this.#sink.end(end);
    })();
    return this.#ending;
  }
}
