/**
 * Failover of realtime streams across the sources of their family (D27, D42, D43): a socket holds once; its
 * stream is opened on the family's first source that accepts it, and a speech chunk that fails before any
 * of its audio reached the caller (a retryable failure, or a source without the model) is spoken again on
 * the next source, which then serves the rest of the socket. After the first audio of a chunk nothing moves:
 * the failure is the caller's (the session does not charge that chunk).
 *
 * Each source keeps its place of `max_concurrency` (D25) for as long as the socket streams from it; a source
 * at its cap or with an open circuit is skipped, not failed. Opening a stream and the first audio of each
 * chunk count in the source's circuit and statistics (registry.ts), as an HTTP call and the first byte of
 * an HTTP stream do. The simulator (a slot without state) has none of these.
 */
import { errors } from "../errors.ts";
import { inAttemptSpan } from "../observability/tracing.ts";
import type { SourceState, UpstreamRegistry } from "./registry.ts";
import { SourceUnavailableError } from "./registry.ts";
import type {
  SpeechPiece,
  SpeechStream,
  SpeechStreamRequest,
  SpeechStreamSource,
  TranscriptionEvent,
  TranscriptionStream,
  TranscriptionStreamRequest,
  TranscriptionStreamSource,
} from "./realtime.ts";
import { BUSY_RETRY_AFTER_S, type SyncSlot, triesNextSource } from "./sync-failover.ts";
import { UpstreamError } from "./types.ts";

/** A stream open at one slot, with the function that gives the slot's concurrency place back. */
interface Opened<S> {
  stream: S;
  slot: SyncSlot<unknown>;
  release: () => void;
}

/** The last failure of each kind while walking the slots (as sync-failover.ts ranks them). */
class Failures {
  busy = false;
  notFound: unknown = null;
  other: unknown = null;

  note(err: unknown): void {
    if (err instanceof SourceUnavailableError && err.reason === "busy") this.busy = true;
    else if (err instanceof UpstreamError && err.modelNotFound) this.notFound = err;
    else this.other = err;
  }

  /** The error when no slot is left: a source that failed, else every source busy (429), else "no such model". */
  final(): unknown {
    if (this.other !== null) return this.other;
    if (this.busy) return errors.rateLimited("Every upstream source of this model is at its concurrency limit; retry shortly.", BUSY_RETRY_AFTER_S);
    return this.notFound ?? new UpstreamError("no source could open the stream", true);
  }
}

/**
 * Opens a stream on `slot`: through the source's circuit and concurrency gate (its place kept until
 * `release`), in a CLIENT span of the socket's trace (D40).
 */
async function openOn<A, S>(
  registry: UpstreamRegistry,
  slot: SyncSlot<A>,
  open: (adapter: A) => Promise<S>,
  trace: { operation: "text_to_speech" | "transcribe"; model: string; attempt: number; fallbackLayer: number },
): Promise<Opened<S>> {
  const state: SourceState | null = slot.state;
  const span = <T>(fn: () => Promise<T>) =>
    inAttemptSpan(
      () => ({ ...trace, provider: state?.source.protocol ?? "simulator", source: slot.name, baseUrl: state?.source.baseUrl ?? null }),
      () => fn(),
    );
  if (state === null) return { stream: await span(() => open(slot.adapter)), slot, release: () => {} };
  state.checkAdmission();
  if (!state.gate.tryAcquire()) throw new SourceUnavailableError(state.name, "busy");
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    state.gate.release();
  };
  try {
    return { stream: await span(() => registry.call(state, () => open(slot.adapter))), slot, release };
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * A {@link SpeechStream} over the slots of a family (see the module comment): opened lazily at the first
 * chunk, moved to the next slot when a chunk fails before its first audio with a retryable error (or a
 * source without the model), closed with {@link FailoverSpeechStream.close}.
 */
export class FailoverSpeechStream implements SpeechStream {
  readonly #registry: UpstreamRegistry;
  readonly #slots: readonly SyncSlot<SpeechStreamSource>[];
  readonly #req: SpeechStreamRequest;
  #next = 0;
  #attempts = 0;
  #current: Opened<SpeechStream> | null = null;
  #closed = false;
  readonly #failures = new Failures();

  /** `slots`: the family's sources in order (or the simulator alone); `req` is the socket's, fixed. */
  constructor(registry: UpstreamRegistry, slots: readonly SyncSlot<SpeechStreamSource>[], req: SpeechStreamRequest) {
    if (slots.length === 0) throw new RangeError("FailoverSpeechStream: no source");
    this.#registry = registry;
    this.#slots = slots;
    this.#req = req;
  }

  /** The source serving now (its `UPSTREAMS` name; null for the simulator or before the first chunk). */
  get source(): string | null {
    return this.#current?.slot.name ?? null;
  }

  /** 0 while the family's first source serves, 1 once a later one does (D27 `fallback_layer`). */
  get fallbackLayer(): 0 | 1 {
    return this.#current !== null && this.#slots.indexOf(this.#current.slot as SyncSlot<SpeechStreamSource>) > 0 ? 1 : 0;
  }

  /**
   * Opens the stream on the next slot that accepts it.
   * @throws the failure that ends the walk (see {@link Failures.final}) when no slot is left.
   */
  async #openNext(signal?: AbortSignal): Promise<Opened<SpeechStream>> {
    while (this.#next < this.#slots.length) {
      const i = this.#next++;
      const slot = this.#slots[i];
      try {
        return await openOn(this.#registry, slot, (s) => s.openSpeechStream(this.#req, signal), {
          operation: "text_to_speech",
          model: this.#req.model,
          attempt: ++this.#attempts,
          fallbackLayer: i === 0 ? 0 : 1,
        });
      } catch (err) {
        if (!triesNextSource(err) || signal?.aborted === true) throw err;
        this.#failures.note(err);
      }
    }
    throw this.#failures.final();
  }

  /** Closes the current stream and gives its place back (best effort). */
  async #drop(): Promise<void> {
    const cur = this.#current;
    this.#current = null;
    if (cur === null) return;
    cur.release();
    await cur.stream.close().catch(() => {});
  }

  /**
   * Speaks one chunk (see {@link SpeechStream.synthesize}) with failover before its first audio.
   * @throws the chunk's failure after its first audio; the walk's final failure when no slot is left;
   *   Error once closed.
   */
  async *synthesize(text: string, signal?: AbortSignal): AsyncGenerator<SpeechPiece> {
    for (;;) {
      if (this.#closed) throw new Error("the speech stream is closed");
      this.#current ??= await this.#openNext(signal);
      const cur = this.#current;
      const it = cur.stream.synthesize(text, signal)[Symbol.asyncIterator]();
      let first: IteratorResult<SpeechPiece>;
      try {
        const state = cur.slot.state;
        first = state === null ? await it.next() : await this.#registry.call(state, () => it.next(), signal);
      } catch (err) {
        await this.#drop();
        if (!triesNextSource(err) || signal?.aborted === true) throw err;
        this.#failures.note(err);
        continue;
      }
      if (first.done === true) return;
      try {
        yield first.value;
        for (;;) {
          const r = await it.next();
          if (r.done === true) return;
          yield r.value;
        }
      } finally {
        // An early stop by the caller (the session closing) ends the chunk at the source too.
        await it.return?.().catch(() => undefined);
      }
    }
  }

  /** Closes the stream at its source and gives the source's place back. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#drop();
  }
}

/** A transcription stream open at one source, and which source and layer serve it (D27). */
export interface ServedTranscription {
  stream: TranscriptionStream;
  source: string | null;
  fallbackLayer: 0 | 1;
}

/**
 * Opens a realtime transcription stream on the first of `slots` that accepts it (D27, D43): a retryable
 * failure at opening (or a source without the model) moves to the next slot; once open, the stream stays
 * on its source (its `closed` event ends the socket). The source's concurrency place is kept until the
 * stream closes.
 * @throws the walk's final failure (AppError 429 when every source is at its cap; the last UpstreamError).
 */
export async function openTranscriptionOnSources(
  registry: UpstreamRegistry,
  slots: readonly SyncSlot<TranscriptionStreamSource>[],
  req: TranscriptionStreamRequest,
  onEvent: (event: TranscriptionEvent) => void,
  signal?: AbortSignal,
): Promise<ServedTranscription> {
  if (slots.length === 0) throw new RangeError("openTranscriptionOnSources: no source");
  const failures = new Failures();
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i];
    let release: () => void = () => {};
    // Events of an attempt that failed to open never reach the session; the place is given back at `closed`.
    let live = false;
    const relay = (event: TranscriptionEvent) => {
      if (!live) return;
      if (event.type === "closed") release();
      onEvent(event);
    };
    try {
      const opened = await openOn(registry, slot, (s) => s.openTranscriptionStream(req, relay, signal), {
        operation: "transcribe",
        model: req.model,
        attempt: i + 1,
        fallbackLayer: i === 0 ? 0 : 1,
      });
      release = opened.release;
      live = true;
      const stream = opened.stream;
      return {
        source: slot.name,
        fallbackLayer: i === 0 ? 0 : 1,
        stream: {
          send: (audio, commit) => stream.send(audio, commit),
          close: async () => {
            release();
            await stream.close().catch(() => {});
          },
        },
      };
    } catch (err) {
      if (!triesNextSource(err) || signal?.aborted === true) throw err;
      failures.note(err);
    }
  }
  throw failures.final();
}
