/**
 * A realtime speech session (D42): the service behind one text-to-speech socket, whatever its path (native
 * or ElevenLabs dialect) or flavour (`stream-input`: one context; `multi-stream-input`: up to 5). The socket's
 * protocol edge (http/realtime/) parses ElevenLabs' messages and renders what this session reports; this
 * module owns what the socket costs and what is generated when:
 *
 * - at open: the model (catalog, with realtime support), the voice (D20, as the HTTP route: audio/speech.ts
 *   `resolveVoice`), one request in the rpm windows and one audio call of the tier's pool for the socket's
 *   whole life (D12, D42), and the socket's one hold (billing/metered-hold.ts);
 * - per context: text buffered and cut into chunks (chunker.ts), each chunk reserved before it is sent to
 *   the upstream (extending the hold by a block when needed), spoken on the family's sources with failover
 *   before its first audio (upstreams/realtime-failover.ts), charged once its audio came back (whether or
 *   not the client is still there), never charged when the upstream failed it; chunks of a context are
 *   spoken one after the other, contexts side by side;
 * - alignment: the source's, shifted to start at the context's first audio (as ElevenLabs' do); for a
 *   source that gives none, an estimate at the speaking rate;
 * - the end: out of funds (what was paid for is delivered, then `insufficient_balance` and 1008), an
 *   upstream failure after the failover ran out (`provider_error`, 1011), a sixth context
 *   (`max_active_conversations`, 1008), inactivity (1000), the session time limit (1000), the client's
 *   end (1000), the client gone, or a shutdown (1001): each settles the hold once and gives the pool slot back.
 */
import { type Executor, getBalance, InsufficientFundsError } from "../../billing/ledger.ts";
import type { MeteredHold, MeterRefusal } from "../../billing/metered-hold.ts";
import { realtimeInsufficient } from "../../billing/metered-hold.ts";
import type { BalanceEvents } from "../../billing/balance-events.ts";
import type { PaidCalls } from "../../billing/paid-call.ts";
import type { CallContext } from "../../billing/usage.ts";
import { getModelOf } from "../../catalog/models.ts";
import { quoteSpeech } from "../../catalog/quote.ts";
import type { SpeechModel } from "../../catalog/types.ts";
import { AppError, errors } from "../../errors.ts";
import type { CallGuard } from "../../limits/limiter.ts";
import { realtimeMetered, realtimeSockets } from "../../metrics.ts";
import { currentScope, runInScope, type TraceScope } from "../../observability/tracing.ts";
import type { AudioRouter } from "../../upstreams/audio-router.ts";
import type { CharAlignment, RealtimeVoiceSettings, SpeechPiece } from "../../upstreams/realtime.ts";
import type { FailoverSpeechStream } from "../../upstreams/realtime-failover.ts";
import { type AudioFormat, type SimulateMode, UpstreamError } from "../../upstreams/types.ts";
import { codePoints } from "../text-limits.ts";
import { resolveVoice, type VoiceDeps, voiceUnknownToSource } from "../speech.ts";
import { admitSocket } from "./admission.ts";
import { AlignmentEstimate, audioMs } from "./alignment.ts";
import { TextChunker } from "./chunker.ts";

/** Most contexts a `multi-stream-input` socket may have open at once (D42, ElevenLabs' limit). */
export const MAX_CONTEXTS = 5;


/** What a speech session needs of the gateway. */
export interface SpeechSessionDeps extends VoiceDeps {
  db: Executor;
  paidCalls: PaidCalls;
  events?: BalanceEvents | null;
  /** The gateway's audio router; test-mode sockets use its simulator-only view. */
  audio: AudioRouter;
  /** Where failures that end nothing are told (a persist that failed). */
  onBackgroundError?: (err: unknown) => void;
}

/** The settings of a socket (the query of its upgrade), validated by the edge. */
export interface SpeechSessionParams {
  accountId: string;
  /** The catalog model id (an ElevenLabs id already mapped, D36). */
  modelId: string;
  /** The voice as the caller named it. */
  voiceId: string;
  format: AudioFormat;
  /** `auto_mode`: generate at sentence ends instead of the chunk schedule. */
  autoMode: boolean;
  /** Seconds without a client message before the socket closes (1..180, D42). */
  inactivityTimeoutS: number;
  /** The session time limit, seconds (`REALTIME_MAX_SESSION_S`). */
  maxSessionS: number;
  /** Characters one block of the hold covers (`REALTIME_HOLD_CHARS`). */
  holdChars: number;
  /** How often the running count is persisted, ms (at most 5000, D42). */
  heartbeatMs: number;
  simulate: SimulateMode | null;
  call: CallContext;
  guard: CallGuard;
}

/** One message of audio for the client (ElevenLabs' `{audio, alignment, normalizedAlignment}`), context null for `stream-input`. */
export interface SpeechAudio {
  audio: Uint8Array;
  alignment: CharAlignment | null;
  normalizedAlignment: CharAlignment | null;
}

/**
 * Why a session ends: the close code, the error message sent before it (null for a clean end), and the
 * close frame's reason when there is no error message (a shutdown's).
 */
export interface SessionEnd {
  closeCode: number;
  error: { code: string; message: string } | null;
  reason?: string;
}

/** What the protocol edge renders for the client. Called in order; `end` once, last. */
export interface SpeechSessionSink {
  audio(contextId: string | null, audio: SpeechAudio): void;
  /** The context's last audio was sent (ElevenLabs' `{"isFinal": true}`). */
  final(contextId: string | null): void;
  /** The session is settled: send `error` if any, then close with `closeCode`. */
  end(end: SessionEnd): void;
  /** A chunk was spoken (or dropped): the text waiting shrank ({@link SpeechSession.backlog}). */
  spoke?(): void;
}

/** The first message of a context: its voice settings and chunk schedule (checked by the edge). */
export interface ContextInit {
  voiceSettings: RealtimeVoiceSettings;
  schedule?: readonly number[];
}

/** One context of a socket: its text buffer, its chunks waiting, its upstream stream. */
interface SpeechContext {
  id: string | null;
  chunker: TextChunker;
  queue: string[];
  voiceSettings: RealtimeVoiceSettings;
  stream: FailoverSpeechStream | null;
  running: boolean;
  /** `close_context` (or the end) was asked: final once the queue is spoken. */
  closing: boolean;
  /** Where the context's next chunk starts in its audio, ms (alignment offsets). */
  offsetMs: number;
}

/**
 * A realtime speech session (see the module comment). Made by {@link SpeechSession.open}; the edge feeds it
 * the client's messages and closes it with {@link SpeechSession.clientClosed} or {@link SpeechSession.shutdown}.
 */
export class SpeechSession {
  readonly #deps: SpeechSessionDeps;
  readonly #params: SpeechSessionParams;
  readonly #model: SpeechModel;
  readonly #voice: { upstreamVoiceId: string; home: string | null | undefined };
  readonly #meter: MeteredHold;
  readonly #releaseSlot: () => Promise<void>;
  readonly #sink: SpeechSessionSink;
  readonly #scope: TraceScope | undefined = currentScope();
  readonly #contexts = new Map<string | null, SpeechContext>();
  readonly #abort = new AbortController();
  #contextsUsed = 0;
  /** 1 once a later source of the family served a chunk (D27: the record's `fallback_layer`). */
  #fallbackLayer: 0 | 1 = 0;
  /** `open`, or `draining` (no new text: in-flight chunks finish, then `end`), or `ended`. */
  #state: "open" | "draining" | "ended" = "open";
  #pendingEnd: SessionEnd | null = null;
  /** Draining after the client's end of input: the chunks queued are still spoken. */
  #speakQueued = false;
  #inactivity: NodeJS.Timeout | null = null;
  readonly #limit: NodeJS.Timeout;
  #ended: Promise<void> | null = null;

  private constructor(
    deps: SpeechSessionDeps,
    params: SpeechSessionParams,
    model: SpeechModel,
    voice: { upstreamVoiceId: string; home: string | null | undefined },
    meter: MeteredHold,
    releaseSlot: () => Promise<void>,
    sink: SpeechSessionSink,
  ) {
    this.#deps = deps;
    this.#params = params;
    this.#model = model;
    this.#voice = voice;
    this.#meter = meter;
    this.#releaseSlot = releaseSlot;
    this.#sink = sink;
    realtimeSockets.inc({ kind: "speech" });
    this.touch();
    this.#limit = setTimeout(() => void this.#finish({ closeCode: 1000, error: { code: "session_time_limit_exceeded", message: `The session reached its time limit of ${params.maxSessionS} s.` } }, "drain"), params.maxSessionS * 1000);
    this.#limit.unref();
  }

  /**
   * The speech model a socket may use: a catalog speech model, enabled, with realtime support (D42).
   * @throws AppError 400 `not_a_tts_model` (unknown), `realtime_not_supported` (`alpha-v3`); 410 `model_retired`.
   */
  static modelFor(modelId: string): SpeechModel {
    const model = getModelOf(modelId, "speech");
    if (!model?.enabled) throw errors.notATtsModel(modelId);
    if (!model.supportsRealtime) {
      throw new AppError(400, "realtime_not_supported", `Model '${modelId}' has no realtime socket (GET /v1/models shows \`realtime\` per speech model); use POST /v1/audio/speech, or a realtime model such as alpha-flash-v2-5.`, "model_id");
    }
    return model;
  }

  /**
   * The checks of {@link SpeechSession.open} that take nothing (no rpm window, no pool slot, no hold): the
   * model, the voice and a balance of at least one character's price (test mode: no balance check).
   * @throws AppError as {@link SpeechSession.open} would for these.
   */
  static async preflight(deps: SpeechSessionDeps, params: SpeechSessionParams): Promise<void> {
    const model = SpeechSession.modelFor(params.modelId);
    await resolveVoice(deps, params.accountId, params.voiceId, model);
    if (params.call.mode === "test") return;
    const balance = (await getBalance(deps.db, params.accountId)) ?? 0;
    const unit = Math.max(1, quoteSpeech(model, 1));
    if (balance < unit) throw realtimeInsufficient("character")(new InsufficientFundsError(unit, balance));
  }

  /**
   * Opens a session before the socket is accepted: model, voice, limits, hold. Everything refused here is
   * an HTTP answer (D42): 400 (model, voice), 402 (`billing_error` for a balance below one character's
   * price, `key_spend_limit`), 403 (`voice_not_owned`, `model_not_allowed`), 429 (rpm, the audio pool).
   * Nothing is held when it throws.
   */
  static async open(deps: SpeechSessionDeps, params: SpeechSessionParams, sink: SpeechSessionSink): Promise<SpeechSession> {
    const model = SpeechSession.modelFor(params.modelId);
    const voice = await resolveVoice(deps, params.accountId, params.voiceId, model);
    const { meter, releaseSlot } = await admitSocket(deps, {
      accountId: params.accountId,
      model,
      call: params.call,
      guard: params.guard,
      kind: "speech",
      units: { characters: 0 },
      pricing: { price: (chars) => quoteSpeech(model, chars), blockUnits: params.holdChars, usageUnits: (chars) => ({ characters: chars }) },
      heartbeatMs: params.heartbeatMs,
      unit: "character",
    });
    return new SpeechSession(deps, params, model, voice, meter, releaseSlot, sink);
  }

  /** The catalog model spoken. */
  get model(): SpeechModel {
    return this.#model;
  }

  /** The socket's request id (its usage record). */
  get requestId(): string {
    return this.#meter.requestId;
  }

  /** Whether the session still takes client messages. */
  get open(): boolean {
    return this.#state === "open";
  }

  /** A client message arrived: the inactivity timer starts again. */
  touch(): void {
    if (this.#inactivity !== null) clearTimeout(this.#inactivity);
    if (this.#state !== "open") return;
    this.#inactivity = setTimeout(() => this.#idle(), this.#params.inactivityTimeoutS * 1000);
    this.#inactivity.unref();
  }

  /** The inactivity timer fired: close (1000) unless audio is still being generated (then wait again). */
  #idle(): void {
    if ([...this.#contexts.values()].some((c) => c.running || c.queue.length > 0)) {
      this.touch();
      return;
    }
    void this.#finish({ closeCode: 1000, error: { code: "input_timeout_exceeded", message: `No message was received for ${this.#params.inactivityTimeoutS} s (inactivity_timeout); the session is closed.` } }, "drain");
  }

  /**
   * Characters waiting to be spoken, every context together: buffered text and chunks queued (the chunk
   * being spoken excluded). The edge stops reading the client while it is large (flow control: a client
   * writing faster than speech is spoken waits instead of piling text up in the gateway).
   */
  backlog(): number {
    let n = 0;
    for (const c of this.#contexts.values()) {
      n += c.chunker.buffered;
      for (const q of c.queue) n += q.length;
    }
    return n;
  }

  /** Whether context `id` exists (its first message was received). */
  hasContext(id: string | null): boolean {
    return this.#contexts.has(id);
  }

  /**
   * Starts context `id` (null: the single context of `stream-input`) with its first message's settings.
   * Returns false (and ends the session: `max_active_conversations`, 1008) when it would be the sixth open one.
   */
  openContext(id: string | null, init: ContextInit): boolean {
    if (this.#state !== "open") return false;
    if (this.#contexts.has(id)) return true;
    if (this.#contexts.size >= MAX_CONTEXTS) {
      void this.#finish({ closeCode: 1008, error: { code: "max_active_conversations", message: `At most ${MAX_CONTEXTS} contexts may be open on one socket; close one (close_context) before opening another.` } }, "drain");
      return false;
    }
    this.#contextsUsed++;
    this.#contexts.set(id, {
      id,
      chunker: new TextChunker({ schedule: init.schedule, autoMode: this.#params.autoMode, maxChars: this.#model.maxInputChars }),
      queue: [],
      voiceSettings: init.voiceSettings,
      stream: null,
      running: false,
      closing: false,
      offsetMs: 0,
    });
    return true;
  }

  /** Text for context `id` (opened before): buffered, and chunks due now are queued for generation. */
  text(id: string | null, text: string, opts: { flush?: boolean; tryTrigger?: boolean } = {}): void {
    const ctx = this.#contexts.get(id);
    if (ctx === undefined || this.#state !== "open" || ctx.closing) return;
    ctx.queue.push(...ctx.chunker.push(text, opts));
    this.#pump(ctx);
  }

  /** `flush` of context `id`: everything buffered is generated now. */
  flush(id: string | null): void {
    this.text(id, "", { flush: true });
  }

  /**
   * `close_context`: the chunks already due are spoken, what was buffered without a flush is dropped (as
   * ElevenLabs does), then the context's final message; the context no longer counts against the limit.
   */
  closeContext(id: string | null): void {
    const ctx = this.#contexts.get(id);
    if (ctx === undefined || ctx.closing) return;
    ctx.chunker.discard();
    ctx.closing = true;
    this.#pump(ctx);
  }

  /**
   * The end of the input: `{"text": ""}` of `stream-input` (everything buffered is spoken) or
   * `close_socket` of `multi-stream-input` (what was flushed is spoken). Each context then gets its final
   * message and the socket closes normally (1000).
   */
  endInput(opts: { flushBuffered: boolean }): void {
    if (this.#state !== "open") return;
    this.#speakQueued = true;
    // Every context's worker runs before the session drains, so the drain waits for them.
    for (const ctx of [...this.#contexts.values()]) {
      if (opts.flushBuffered) ctx.queue.push(...ctx.chunker.flush());
      else ctx.chunker.discard();
      ctx.closing = true;
      this.#pump(ctx);
    }
    void this.#finish({ closeCode: 1000, error: null }, "drain");
  }

  /** The client's message was refused (`invalid_request` and the like): the session ends with 1008. */
  refuse(code: string, message: string): void {
    void this.#finish({ closeCode: 1008, error: { code, message } }, "drain");
  }

  /**
   * The client closed the socket (or it broke): nothing new is generated; chunks already reserved finish and
   * are charged (their audio came back, D42), then the hold is settled. Resolves once settled.
   */
  clientClosed(code: number): Promise<void> {
    return this.#finish({ closeCode: code, error: null }, "drain");
  }

  /**
   * A graceful shutdown: the chunks in flight get `graceMs` to finish (then they stop, uncharged), the hold
   * is settled, and the socket closes with 1001 (D42).
   */
  shutdown(graceMs: number): Promise<void> {
    // No error message: a shutdown is not the client's fault (LiveKit's plugin would fail the context); the close frame says why.
    const done = this.#finish({ closeCode: 1001, error: null, reason: "The gateway is shutting down; reconnect to continue." }, "drain");
    const timer = setTimeout(() => this.#abort.abort(), graceMs);
    timer.unref();
    return done.finally(() => clearTimeout(timer));
  }

  /** Starts context `ctx`'s worker unless it runs: speaks its queue in order. */
  #pump(ctx: SpeechContext): void {
    if (ctx.running) return;
    ctx.running = true;
    void this.#inScope(() => this.#work(ctx)).finally(() => {
      ctx.running = false;
      this.#afterWork();
    });
  }

  /** Runs `fn` in the socket's trace scope (its upgrade request's, D40). */
  #inScope<T>(fn: () => Promise<T>): Promise<T> {
    return this.#scope === undefined ? fn() : runInScope(this.#scope, fn);
  }

  /** Speaks `ctx`'s queue, then sends its final message when it is closing. */
  async #work(ctx: SpeechContext): Promise<void> {
    while (ctx.queue.length > 0 && this.#state !== "ended") {
      // Draining: the chunks queued are spoken only at the client's own end of input; any other end speaks
      // nothing more than the chunk in flight (it was paid for).
      if (this.#state === "draining" && !this.#speakQueued) break;
      const chunk = ctx.queue.shift()!;
      const ok = await this.#speak(ctx, chunk);
      this.#sink.spoke?.();
      if (!ok) return;
    }
    if (ctx.closing && ctx.queue.length === 0 && this.#contexts.get(ctx.id) === ctx) {
      this.#contexts.delete(ctx.id);
      await ctx.stream?.close();
      if (this.#state !== "ended") this.#sink.final(ctx.id);
    }
  }

  /** Once a worker stopped: a draining session whose work is done is settled. */
  #afterWork(): void {
    if (this.#state === "draining" && this.#pendingEnd !== null && ![...this.#contexts.values()].some((c) => c.running)) {
      const end = this.#pendingEnd;
      void this.#inScope(() => this.#settle(end));
    }
  }

  /**
   * Reserves, speaks and charges one chunk. Returns false when the session ends because of it (out of
   * funds, an upstream failure).
   */
  async #speak(ctx: SpeechContext, chunk: string): Promise<boolean> {
    const chars = codePoints(chunk);
    if (chars === 0) return true;
    let refusal: MeterRefusal | null;
    try {
      refusal = await this.#meter.reserve(chars);
    } catch (err) {
      this.#deps.onBackgroundError?.(err);
      void this.#finish({ closeCode: 1011, error: { code: "internal_error", message: "The session's hold could not be extended; nothing more is generated." } }, "abort");
      return false;
    }
    if (refusal !== null) {
      // D42: what was paid for is delivered (the chunks in flight finish), then the error and 1008.
      ctx.queue.length = 0;
      void this.#finish({ closeCode: 1008, error: { code: refusal.code, message: refusal.message } }, "drain");
      return false;
    }
    ctx.stream ??= this.#openStream(ctx);
    // A source that gives no alignment with a chunk's first audio gives none (MiniMax): the estimate's.
    let estimate: AlignmentEstimate | null = null;
    let first = true;
    let bytes = 0;
    try {
      for await (const piece of ctx.stream.synthesize(chunk, this.#abort.signal)) {
        bytes += piece.audio.length;
        if (first && piece.alignment === null && piece.normalizedAlignment === null) estimate = new AlignmentEstimate(chunk, this.#params.format);
        first = false;
        if (this.#state === "ended") continue;
        this.#sink.audio(ctx.id, this.#shifted(ctx, piece, estimate));
      }
      const rest = estimate === null ? null : estimate.rest();
      if (rest !== null && this.#state !== "ended") this.#sink.audio(ctx.id, { audio: new Uint8Array(0), alignment: this.#offset(rest, ctx.offsetMs), normalizedAlignment: this.#offset(rest, ctx.offsetMs) });
    } catch (err) {
      this.#meter.unreserve(chars);
      if (this.#abort.signal.aborted) return false;
      this.#deps.onBackgroundError?.(err);
      void this.#finish({ closeCode: 1011, error: this.#upstreamError(err) }, "abort");
      return false;
    }
    this.#meter.charge(chars);
    if (ctx.stream.fallbackLayer === 1) this.#fallbackLayer = 1;
    realtimeMetered.inc({ kind: "speech", unit: "characters" }, chars);
    ctx.offsetMs += audioMs(bytes, this.#params.format);
    return true;
  }

  /** The error message of a chunk the upstream failed (after the failover ran out): never the upstream's own words. */
  #upstreamError(err: unknown): { code: string; message: string } {
    const mapped = voiceUnknownToSource(this.#deps, this.#params.voiceId, this.#model, this.#voice.home, err);
    if (mapped instanceof AppError) return { code: mapped.code, message: mapped.message };
    if (err instanceof UpstreamError && err.voiceUnavailable) {
      const gone = errors.voiceUnavailable();
      return { code: gone.code, message: gone.message };
    }
    return { code: "provider_error", message: "The upstream failed to generate this text (every source was tried); it was not charged." };
  }

  /** The upstream stream of `ctx`: the family's sources with failover (the simulator in test mode). */
  #openStream(ctx: SpeechContext): FailoverSpeechStream {
    const router = this.#params.call.mode === "test" ? this.#deps.audio.testMode : this.#deps.audio;
    return router.speechStream(
      this.#model.voiceProvider,
      { model: this.#model.id, voiceId: this.#voice.upstreamVoiceId, format: this.#params.format, voiceSettings: ctx.voiceSettings, simulate: this.#params.simulate },
      this.#voice.home,
    );
  }

  /** `piece` for the client: its alignment (or the estimate's, for a source without any) shifted by the context's audio so far. */
  #shifted(ctx: SpeechContext, piece: SpeechPiece, estimate: AlignmentEstimate | null): SpeechAudio {
    const own = piece.alignment ?? piece.normalizedAlignment;
    const alignment = own ?? estimate?.next(piece.audio) ?? null;
    return {
      audio: piece.audio,
      alignment: this.#offset(piece.alignment ?? alignment, ctx.offsetMs),
      normalizedAlignment: this.#offset(piece.normalizedAlignment ?? alignment, ctx.offsetMs),
    };
  }

  /** `a` with every start shifted by `offsetMs`; null stays null. */
  #offset(a: CharAlignment | null, offsetMs: number): CharAlignment | null {
    if (a === null) return null;
    if (offsetMs === 0) return a;
    return { chars: a.chars, charStartTimesMs: a.charStartTimesMs.map((t) => Math.round(t + offsetMs)), charDurationsMs: a.charDurationsMs };
  }

  /**
   * Ends the session once: `drain` lets the chunks already reserved finish (they are paid for), `abort`
   * stops them (an upstream failure: an unfinished chunk is not charged). Then settles (see {@link #settle}).
   * Resolves once settled and `sink.end` was called.
   */
  #finish(end: SessionEnd, how: "drain" | "abort"): Promise<void> {
    if (this.#state === "open") {
      this.#state = "draining";
      this.#pendingEnd = end;
      if (this.#inactivity !== null) clearTimeout(this.#inactivity);
      clearTimeout(this.#limit);
    } else if (this.#pendingEnd !== null && this.#pendingEnd.error === null && end.error !== null && !this.#settling) {
      // A clean end still draining (the client's end of input) meets an error (out of funds, the upstream):
      // the error wins, and what was queued is no longer spoken.
      this.#pendingEnd = end;
      this.#speakQueued = false;
    }
    if (how === "abort") this.#abort.abort();
    this.#ended ??= new Promise<void>((resolve) => {
      this.#onSettled = resolve;
    });
    this.#afterWork();
    return this.#ended;
  }

  #onSettled: (() => void) | null = null;
  #settling = false;

  /** Settles the hold (capture what was charged, release the rest), closes the upstream streams, gives the slot back, then `sink.end`. */
  async #settle(end: SessionEnd): Promise<void> {
    if (this.#settling) return;
    this.#settling = true;
    this.#state = "ended";
    for (const ctx of this.#contexts.values()) await ctx.stream?.close();
    this.#contexts.clear();
    try {
      await this.#meter.close({ closeCode: end.closeCode, contexts: this.#contextsUsed, fallbackLayer: this.#fallbackLayer });
    } catch (err) {
      // Left open: the sweep captures the persisted count and releases the rest.
      this.#deps.onBackgroundError?.(err);
    }
    await this.#releaseSlot().catch(() => {});
    realtimeSockets.dec({ kind: "speech" });
    this.#sink.end(end);
    this.#onSettled?.();
  }
}
