/**
 * Failover of a synchronous call across the sources of its family (D27): the call is held once by its
 * service; this walks the sources in configuration order while a failure is retryable and nothing has
 * reached the caller yet, and says which source served it (`X-Svc-Fallback-Layer: 1` for any source
 * after the first).
 *
 * A source that answers that the upstream model or endpoint does not exist (`UpstreamError.modelNotFound`,
 * D35) cannot serve the call but is healthy: the call moves on to the next source, and when none is left
 * the caller's 502 names the model ({@link modelNotFoundMessage}). The registry logs it and shows it as the
 * source's `last_error`; it never counts toward opening the source's circuit.
 *
 * Each attempt goes through the source's circuit and statistics (registry.ts) and takes a place of its
 * `max_concurrency` gate, a second gate beside the caller's tier pools. A source at its cap or with an
 * open circuit is skipped, not failed. The place is given back when the attempt settles, unless the
 * attempt keeps it ({@link AttemptContext.keepSlot}) for a stream that outlives the call; the stream then
 * gives it back at its end.
 */
import { errors } from "../errors.ts";
import type { SourceState, UpstreamRegistry } from "./registry.ts";
import { SourceUnavailableError } from "./registry.ts";
import { UpstreamError } from "./types.ts";
import { type GenAiOperation, inAttemptSpan } from "../observability/tracing.ts";

/** What the CLIENT span of each attempt names (D40): the operation and the catalog model asked for. */
export interface AttemptTrace {
  operation: GenAiOperation;
  /** The catalog id. */
  model: string;
  /** The call's input, read only when content capture is on (D40). */
  content?: () => string;
}

/** One place a synchronous call can be served: a configured source (with its registry state) or the simulator. */
export interface SyncSlot<A> {
  /** The source's name (`UPSTREAMS` entry), or null for the built-in simulator. */
  name: string | null;
  /** The registry state (circuit, gate, statistics); null for the simulator, which has none. */
  state: SourceState | null;
  adapter: A;
}

/** What an attempt is given besides its adapter. */
export interface AttemptContext {
  /**
   * Keeps the source's concurrency place past the attempt (a stream still delivering) and returns the
   * function that gives it back (idempotent). Without this call the place is given back when the
   * attempt settles.
   */
  keepSlot(): () => void;
}

/** A value and where it came from: the source's name (null: the simulator) and the fallback layer (D27). */
export interface Served<T> {
  value: T;
  source: string | null;
  /** 0 when the family's first source served the call, 1 for any later one. */
  fallbackLayer: 0 | 1;
}

/** How long a caller is told to wait when every source of the family is at its `max_concurrency`, seconds. */
export const BUSY_RETRY_AFTER_S = 1;

/** Longest upstream id quoted in a message (an id is short; anything longer is cut). */
const MAX_UPSTREAM_ID_CHARS = 120;

/**
 * Whether `err` moves a call (or a job's submit) to the family's next source: a retryable
 * {@link UpstreamError}, or one saying the source does not have the upstream model (D35).
 */
export function triesNextSource(err: unknown): boolean {
  return err instanceof UpstreamError && (err.retryable || err.modelNotFound);
}

/**
 * The caller's message when no source served `model` (a catalog id) and the last one tried answered that its
 * upstream model does not exist (D35): names the catalog model and the upstream id `err` carries, never a
 * key or a URL. The caller adds what happened to the money.
 */
export function modelNotFoundMessage(model: string, err: UpstreamError): string {
  const id = err.upstreamModel === null ? null : err.upstreamModel.replace(/\s+/g, " ").slice(0, MAX_UPSTREAM_ID_CHARS);
  return `No upstream source serves ${model}: the source answered that its upstream model${id === null ? "" : ` ${id}`} does not exist.`;
}

/**
 * Runs `attempt` on each slot in order until one succeeds (D27, D35):
 * - a retryable {@link UpstreamError} (connection error, timeout, 429, 5xx, an open circuit, a source at
 *   its cap), or one with `modelNotFound` (the source does not have the upstream model), moves the call to
 *   the next slot, unless `signal` aborted (the caller left);
 * - anything else (a refusal of the input, content refused, a voice gone, the caller's abort, a bug) ends
 *   the call at once and is rethrown;
 * - when no slot served the call: the last failure other than these two kinds is rethrown; without one,
 *   a slot skipped at its `max_concurrency` makes it 429 `rate_limited` with `Retry-After` (D28); otherwise
 *   every slot said it has no such model, and the last of those errors is rethrown (the service's 502
 *   names the model: `callUpstream` in billing/paid-call.ts).
 *
 * With `trace`, each attempt made (a source skipped at its cap or with an open circuit is none) runs in a
 * CLIENT span of the caller's trace (D40).
 *
 * @throws RangeError when `slots` is empty; AppError 429 `rate_limited`; the attempt's errors as above.
 */
export async function runOnSources<A, T>(
  registry: UpstreamRegistry,
  slots: readonly SyncSlot<A>[],
  attempt: (adapter: A, ctx: AttemptContext) => Promise<T>,
  signal?: AbortSignal,
  trace?: AttemptTrace,
): Promise<Served<T>> {
  if (slots.length === 0) throw new RangeError("runOnSources: no source");
  // The last failure of each kind: a source at its cap, a source without the model, any other.
  let sawBusy = false;
  let notFound: unknown = null;
  let other: unknown = null;
  const made = { attempts: 0 };
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i]!;
    const fallbackLayer: 0 | 1 = i === 0 ? 0 : 1;
    try {
      const value = await attemptOn(registry, slot, traced(attempt, slot, fallbackLayer, made, trace), signal);
      return { value, source: slot.name, fallbackLayer };
    } catch (err) {
      if (!triesNextSource(err) || signal?.aborted === true) throw err;
      if (err instanceof SourceUnavailableError && err.reason === "busy") sawBusy = true;
      else if (err instanceof UpstreamError && err.modelNotFound) notFound = err;
      else other = err;
    }
  }
  // A source that failed says most; then a full source (it may have the model: retry shortly); then "no
  // source has the model" (D35).
  if (other !== null) throw other;
  if (sawBusy) {
    throw errors.rateLimited("Every upstream source of this model is at its concurrency limit; retry shortly.", BUSY_RETRY_AFTER_S);
  }
  throw notFound;
}

/** `attempt` in a CLIENT span of its own (D40) when the call is traced; `attempt` itself otherwise. */
function traced<A, T>(
  attempt: (adapter: A, ctx: AttemptContext) => Promise<T>,
  slot: SyncSlot<A>,
  fallbackLayer: 0 | 1,
  made: { attempts: number },
  trace: AttemptTrace | undefined,
): (adapter: A, ctx: AttemptContext) => Promise<T> {
  if (trace === undefined) return attempt;
  return (adapter, ctx) =>
    inAttemptSpan(
      () => ({
        operation: trace.operation,
        model: trace.model,
        provider: slot.state?.source.protocol ?? "simulator",
        source: slot.name,
        baseUrl: slot.state?.source.baseUrl ?? null,
        attempt: ++made.attempts,
        fallbackLayer,
        content: trace.content,
      }),
      () => attempt(adapter, ctx),
    );
}

/** One attempt on one slot: through the source's gate and circuit, or straight to the simulator. */
async function attemptOn<A, T>(
  registry: UpstreamRegistry,
  slot: SyncSlot<A>,
  attempt: (adapter: A, ctx: AttemptContext) => Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  const state = slot.state;
  if (state === null) return attempt(slot.adapter, { keepSlot: () => () => {} });
  state.checkAdmission();
  if (!state.gate.tryAcquire()) throw new SourceUnavailableError(state.name, "busy");
  let kept = false;
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    state.gate.release();
  };
  try {
    return await registry.call(
      state,
      () =>
        attempt(slot.adapter, {
          keepSlot: () => {
            kept = true;
            return release;
          },
        }),
      signal,
    );
  } catch (err) {
    release();
    throw err;
  } finally {
    if (!kept) release();
  }
}
