/**
 * Fallback of chat requests across sources and equivalent models (spec "Rate limiting and credits":
 * `X-Svc-Fallback: true` and `X-Svc-Fallback-Layer` when a substitute served the request).
 *
 * A plan is an ordered list of steps, each one model at one source:
 * - layer 0: the requested model at its primary source (no fallback headers);
 * - layer 1: the same model at another source;
 * - layer 2: the first equivalent model (at any of its sources);
 * - layer 3: the second equivalent model.
 *
 * Policy: the next step is tried only when an attempt failed with an {@link UpstreamError} whose
 * `retryable` is true (5xx, 429, network, timeout, malformed answer), or one saying the source does not have
 * the upstream model (`modelNotFound`, D35: another source or an equivalent may). Another non-retryable one
 * (a 4xx such as a bad request) is the request's own fault and would fail at every source, so it is rethrown at once;
 * so is anything that is not an `UpstreamError` (the caller's abort, a bug). When every step failed, the
 * last error is rethrown. Callers may pass their own `shouldFallBack` to widen or narrow this.
 *
 * Streams can only fall back before the first delta: once a delta went out to the client, the answer
 * has started and a failure propagates to the consumer.
 */
import { UpstreamError } from "../upstreams/types.ts";
import type { ChatAdapter, ChatDelta } from "../upstreams/chat-types.ts";

/** 0 = requested model at its primary source; 1 = same model, other source; 2 / 3 = first / second equivalent. */
export type FallbackLayer = 0 | 1 | 2 | 3;

/** One attempt of a plan: a catalog model served by one source. */
export interface FallbackStep {
  /** Our catalog id of the model this step serves (the equivalent's id on layers 2 and 3). */
  model: string;
  /** The source's name for that model (goes into `ChatRequest.upstreamModel`). */
  upstreamModel: string;
  /** The source (adapter) name, for logs and metrics. */
  source: string;
  adapter: ChatAdapter;
  layer: FallbackLayer;
}

/** The step that produced a result, and its layer (the `X-Svc-Fallback-Layer` value when > 0). */
export interface FallbackOutcome<T> {
  result: T;
  step: FallbackStep;
  layer: FallbackLayer;
}

/** Options of {@link runWithFallback} and {@link streamWithFallback}. */
export interface FallbackOptions {
  /** Decides whether an attempt's error lets the next step run. Default: {@link isFallbackError}. */
  shouldFallBack?: (err: unknown, step: FallbackStep) => boolean;
  /** Called for each failed attempt that is followed by another one (logs, metrics). */
  onFallback?: (err: unknown, failed: FallbackStep, next: FallbackStep) => void;
  /** The caller's signal: once aborted, no further step is started (the last error is rethrown). */
  signal?: AbortSignal;
  /**
   * Runs around each attempt (`attempt`: 1 for the first step tried, 2 for the next): the tracing of D40
   * gives each its CLIENT span here. Default: runs it as it is.
   */
  around?: <T>(step: FallbackStep, attempt: number, run: () => Promise<T>) => Promise<T>;
}

/** The default fallback policy: an {@link UpstreamError} with `retryable` or `modelNotFound` (D35) true. */
export function isFallbackError(err: unknown): boolean {
  return err instanceof UpstreamError && (err.retryable || err.modelNotFound);
}

/**
 * Runs `attempt` for each step of `plan` in order until one succeeds (see the file comment for the policy).
 *
 * @returns the first result, with the step and layer that produced it.
 * @throws the first error that does not allow fallback, or the last step's error when all failed.
 * @throws RangeError when `plan` is empty.
 */
export async function runWithFallback<T>(
  plan: readonly FallbackStep[],
  attempt: (step: FallbackStep) => Promise<T>,
  options: FallbackOptions = {},
): Promise<FallbackOutcome<T>> {
  if (plan.length === 0) throw new RangeError("fallback plan is empty");
  const shouldFallBack = options.shouldFallBack ?? isFallbackError;
  for (let i = 0; ; i++) {
    const step = plan[i];
    try {
      const result = await (options.around ? options.around(step, i + 1, () => attempt(step)) : attempt(step));
      return { result, step, layer: step.layer };
    } catch (err) {
      const next = plan[i + 1];
      if (next === undefined || options.signal?.aborted === true || !shouldFallBack(err, step)) throw err;
      options.onFallback?.(err, step, next);
    }
  }
}

/** A stream that has produced its first delta: the winning step and every delta, the first included. */
export interface FallbackStream {
  step: FallbackStep;
  layer: FallbackLayer;
  /**
   * All deltas of the winning attempt, starting with the one already received. Iterate it once; an
   * error after the first delta propagates here (no more fallback). Stopping early (`break`) closes the
   * upstream stream.
   */
  deltas: AsyncIterable<ChatDelta>;
}

/**
 * Opens the stream of each step in order until one yields its first delta; failures before that fall
 * back like {@link runWithFallback}. A stream that ends without any delta counts as a retryable
 * upstream failure. Resolves once the first delta arrived.
 *
 * @throws as {@link runWithFallback} does (the error of `open` or of the first `next()`).
 */
export async function streamWithFallback(
  plan: readonly FallbackStep[],
  open: (step: FallbackStep) => AsyncIterable<ChatDelta>,
  options: FallbackOptions = {},
): Promise<FallbackStream> {
  const { result, step, layer } = await runWithFallback(
    plan,
    async (current) => {
      const iterator = open(current)[Symbol.asyncIterator]();
      let first: IteratorResult<ChatDelta, unknown>;
      try {
        first = await iterator.next();
      } catch (err) {
        await closeQuietly(iterator);
        throw err;
      }
      if (first.done === true) {
        throw new UpstreamError(`${current.source}: the stream ended without any output`, true);
      }
      return { iterator, first: first.value };
    },
    options,
  );
  return { step, layer, deltas: continueStream(result.iterator, result.first) };
}

async function* continueStream(
  iterator: AsyncIterator<ChatDelta, unknown, undefined>,
  first: ChatDelta,
): AsyncGenerator<ChatDelta, void, undefined> {
  let finished = false;
  try {
    yield first;
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } catch (err) {
    finished = true; // a throwing iterator is already done
    throw err;
  } finally {
    // The consumer stopped early: release the upstream stream.
    if (!finished) await closeQuietly(iterator);
  }
}

async function closeQuietly(iterator: AsyncIterator<ChatDelta, unknown, undefined>): Promise<void> {
  try {
    await iterator.return?.();
  } catch {
    // Closing is best effort; the attempt's own error (if any) is what matters.
  }
}

/** One source of a model in the catalog: the source name and its name for the model. */
export interface ModelSource {
  source: string;
  upstreamModel: string;
}

/** What the catalog knows about a requested model, for {@link buildFallbackPlan}. */
export interface FallbackDescription {
  /** The requested catalog id (an alias already resolved). */
  model: string;
  /** Its sources, primary first. */
  sources: readonly ModelSource[];
  /** Equivalent models, first equivalent first; only the first two with a usable source are used. */
  equivalents?: readonly { model: string; sources: readonly ModelSource[] }[];
}

/**
 * Builds the plan for a request. `adapterFor` returns the adapter of a source, or undefined when that
 * source is not configured in this deployment; such sources are skipped before layers are numbered, so
 * the first usable source of the requested model is layer 0, the other usable ones layer 1, and the
 * first and second equivalents that have a usable source are layers 2 and 3 (further ones are ignored).
 * A (model, source) pair listed twice is tried once; an "equivalent" equal to the requested model is
 * ignored. The plan is empty when no source at all is usable (the caller answers "no upstream").
 */
export function buildFallbackPlan(
  description: FallbackDescription,
  adapterFor: (source: string) => ChatAdapter | undefined,
): FallbackStep[] {
  const plan: FallbackStep[] = [];
  const seen = new Set<string>();
  const usable = (model: string, sources: readonly ModelSource[]): Omit<FallbackStep, "layer">[] => {
    const steps: Omit<FallbackStep, "layer">[] = [];
    for (const { source, upstreamModel } of sources) {
      const key = JSON.stringify([model, source]);
      const adapter = adapterFor(source);
      if (adapter === undefined || seen.has(key)) continue;
      seen.add(key);
      steps.push({ model, upstreamModel, source, adapter });
    }
    return steps;
  };

  usable(description.model, description.sources).forEach((step, i) => plan.push({ ...step, layer: i === 0 ? 0 : 1 }));
  let layer: 2 | 3 = 2;
  for (const equivalent of description.equivalents ?? []) {
    if (equivalent.model === description.model) continue;
    const steps = usable(equivalent.model, equivalent.sources);
    if (steps.length === 0) continue;
    for (const step of steps) plan.push({ ...step, layer });
    if (layer === 3) break;
    layer = 3;
  }
  return plan;
}
