/**
 * The registry of real upstream sources (docs/architecture.md "Real upstreams", D25, D27): one {@link SourceState}
 * per configured source, holding its circuit, its concurrency gate and its call statistics.
 *
 * - Circuit (D27, cockatiel's circuit breaker): opens after 5 consecutive retryable failures of calls
 *   to the source, lets one trial call through 30 s later (success closes it, a retryable failure opens
 *   it for another 30 s); a success resets the count; a non-retryable failure neither counts nor resets.
 *   While open, or while the trial is in flight, calls are refused at once (never queued). One nuance
 *   comes from cockatiel: a trial that ends in a non-retryable failure (the source answered, refusing
 *   the input) closes the circuit like a success, since the source is evidently up.
 * - Concurrency (D27): a source at `max_concurrency` is skipped, not failed.
 * - Statistics (D25, `GET /v1/admin/upstreams`): successes and failures of the last 5 minutes and the
 *   median latency of the successful calls among them.
 * - Last error (D35, `last_error` of `GET /v1/admin/upstreams`): the latest failure of a call to the source,
 *   whatever its kind, as a short code (`model_not_found`, `http_503`, `timeout`, `content_rejected`, ...),
 *   a short message without the source's key or any URL (a URL is cut to its path), and its time
 *   ({@link describeFailure}).
 * - A source answering that the upstream model or endpoint does not exist (`UpstreamError.modelNotFound`,
 *   D35) is healthy: other models on it work. It is non-retryable, so it never counts toward the circuit;
 *   it counts as a failure in the statistics and is its `last_error` (a misconfigured id shows up there),
 *   and a warning log line names the source and the upstream id.
 *
 * Refusals (open circuit, source busy) throw {@link SourceUnavailableError}, a retryable
 * {@link UpstreamError}: the caller moves on to the family's next source. Nothing here holds or shows a key.
 */
import { BrokenCircuitError, CircuitState, circuitBreaker, ConsecutiveBreaker, handleWhen, type CircuitBreakerPolicy } from "cockatiel";
import type { UpstreamProtocol, UpstreamSource } from "./config.ts";
import { UpstreamError } from "./types.ts";
import { redactSecret } from "./util.ts";

/** Consecutive retryable failures that open a circuit (D27). */
export const CIRCUIT_FAILURE_THRESHOLD = 5;
/** Milliseconds an open circuit waits before letting one trial call through (D27). */
export const CIRCUIT_HALF_OPEN_AFTER_MS = 30_000;
/** Milliseconds of history in the statistics (D25: the last 5 minutes). */
export const STATS_WINDOW_MS = 5 * 60_000;

/** A circuit's state as `GET /v1/admin/upstreams` shows it (D25). */
export type CircuitStatus = "closed" | "open" | "half_open";

/** One row of `GET /v1/admin/upstreams` (D25). Holds no key and no URL. */
export interface SourceSnapshot {
  name: string;
  protocol: UpstreamProtocol;
  families: string[];
  /** `half_open`: the 30 s are over and the next call (or the one in flight) is the trial. */
  circuit: CircuitStatus;
  /** Calls to the source running now. */
  in_flight: number;
  /** Calls that succeeded in the last 5 minutes. */
  successes: number;
  /** Calls that failed (retryable or not) in the last 5 minutes; refusals by the registry excluded. */
  failures: number;
  /** Median duration of the successful calls of the last 5 minutes, whole milliseconds; null when none. */
  p50_ms: number | null;
  /** 95th percentile (nearest rank) of the same durations, whole milliseconds; null when none. */
  p95_ms: number | null;
  /** The latest failure of a call to the source, of any age (D35); null when none since the start. */
  last_error: LastError | null;
}

/** A source's latest failure (D35): what `GET /v1/admin/upstreams` shows as `last_error`. No key, no URL. */
export interface LastError {
  /**
   * `model_not_found`, `content_rejected`, `voice_unavailable`, `timeout`, `network_error`,
   * `malformed_answer`, `refused` (a URL the key may not go to), `http_<status>` (an HTTP answer, e.g.
   * `http_503`), `upstream_error` (another upstream failure) or `internal_error` (not an upstream failure).
   */
  code: string;
  /** The failure's message, on one line, at most {@link LAST_ERROR_MESSAGE_CHARS} characters. */
  message: string;
  /** When it happened, ISO 8601 UTC. */
  at: string;
}

/** Longest `last_error.message`, characters. */
export const LAST_ERROR_MESSAGE_CHARS = 200;

/** Where the registry writes its warnings (pino's `warn` fits). */
export interface RegistryLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Tuning of a registry; the defaults are D27's numbers. Tests shorten the delays. */
export interface RegistryOptions {
  /** Consecutive retryable failures that open a circuit (default 5). */
  failureThreshold?: number;
  /** Milliseconds before an open circuit lets a trial through (default 30 000). */
  halfOpenAfterMs?: number;
  /** Milliseconds of history in the statistics (default 300 000). */
  windowMs?: number;
  /** Where warnings go (a source without the upstream model, D35); default: nowhere. */
  log?: RegistryLog;
}

/** A field of an error object (the adapters' `kind` and `status`), unknown until checked. */
function fieldOf(err: object, name: "kind" | "status"): unknown {
  return (err as Record<string, unknown>)[name];
}

/**
 * The `last_error` of a failed call (D35): a code from the error's kind (see {@link LastError.code}) and its
 * message on one line, with `secret` (the source's key) removed and every URL reduced to its path (no
 * scheme, host, credentials, query or fragment), cut to {@link LAST_ERROR_MESSAGE_CHARS} characters. `now` is `Date.now()` milliseconds.
 */
export function describeFailure(err: unknown, secret: string, now: number = Date.now()): LastError {
  let code = "internal_error";
  if (err instanceof UpstreamError) {
    const kind = fieldOf(err, "kind");
    const status = fieldOf(err, "status");
    if (err.modelNotFound) code = "model_not_found";
    else if (err.contentRejected) code = "content_rejected";
    else if (err.voiceUnavailable) code = "voice_unavailable";
    else if (kind === "timeout") code = "timeout";
    else if (kind === "network") code = "network_error";
    else if (kind === "malformed") code = "malformed_answer";
    else if (kind === "refused") code = "refused";
    else if (typeof status === "number" && Number.isInteger(status)) code = `http_${status}`;
    else code = "upstream_error";
  }
  const raw = err instanceof Error ? err.message : String(err);
  const message = redactSecret(raw, secret)
    // A URL keeps only its path (an endpoint id): no host (the row shows no URL, D25), and its credentials,
    // query and fragment may hold a key.
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#]*([^\s?#]*)(?:\?[^\s#]*)?(?:#\S*)?/gi, (_url, path: string) => path || "/")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, LAST_ERROR_MESSAGE_CHARS);
  return { code, message, at: new Date(now).toISOString() };
}

/**
 * Thrown by {@link UpstreamRegistry.run} when it does not call the source: its circuit is open (or its
 * half-open trial is in flight), or it is at `max_concurrency`. Retryable: the family's next source is
 * tried (D27). Counted nowhere (no HTTP call was made).
 */
export class SourceUnavailableError extends UpstreamError {
  /** The source's name. */
  readonly source: string;
  /** Why the call was refused. */
  readonly reason: "circuit_open" | "busy";
  constructor(source: string, reason: "circuit_open" | "busy") {
    super(reason === "busy" ? `source ${source} is at its max_concurrency` : `the circuit of source ${source} is open`, true);
    this.name = "SourceUnavailableError";
    this.source = source;
    this.reason = reason;
  }
}

/**
 * A counter of calls in flight with an optional limit (`max_concurrency`, D27). Synchronous, so a
 * `tryAcquire` and its `release` bracket one call of this process.
 */
export class ConcurrencyGate {
  /** Most calls at once; null: no limit. */
  readonly limit: number | null;
  #inFlight = 0;
  constructor(limit: number | null) {
    this.limit = limit;
  }
  /** Calls holding a slot now. */
  get inFlight(): number {
    return this.#inFlight;
  }
  /** Takes a slot; false (nothing taken) when the limit is reached. */
  tryAcquire(): boolean {
    if (this.limit !== null && this.#inFlight >= this.limit) return false;
    this.#inFlight++;
    return true;
  }
  /** Gives back a slot taken by {@link tryAcquire}. Throws when none is held (a programming error). */
  release(): void {
    if (this.#inFlight === 0) throw new Error("ConcurrencyGate.release() without a slot");
    this.#inFlight--;
  }
}

/** Count buckets of the statistics window, and the latency samples kept for the median. */
const BUCKETS = 30;
const LATENCY_SAMPLES = 512;

/**
 * Successes and failures over a sliding window (`windowMs`, in 30 buckets: an event leaves the window
 * between `windowMs - windowMs/30` and `windowMs` after it happened), and the latencies of the last 512
 * successes (a ring) for the median and the 95th percentile. Times are `Date.now()` milliseconds.
 */
export class CallWindow {
  readonly windowMs: number;
  readonly #bucketMs: number;
  readonly #starts = new Array<number>(BUCKETS).fill(-Infinity);
  readonly #ok = new Array<number>(BUCKETS).fill(0);
  readonly #failed = new Array<number>(BUCKETS).fill(0);
  readonly #latencyAt = new Array<number>(LATENCY_SAMPLES).fill(-Infinity);
  readonly #latencyMs = new Array<number>(LATENCY_SAMPLES).fill(0);
  #next = 0;
  constructor(windowMs: number = STATS_WINDOW_MS) {
    this.windowMs = windowMs;
    this.#bucketMs = Math.max(1, Math.ceil(windowMs / BUCKETS));
  }
  #bucket(now: number): number {
    const start = Math.floor(now / this.#bucketMs) * this.#bucketMs;
    const i = Math.floor(now / this.#bucketMs) % BUCKETS;
    if (this.#starts[i] !== start) {
      this.#starts[i] = start;
      this.#ok[i] = 0;
      this.#failed[i] = 0;
    }
    return i;
  }
  /** Records a successful call that took `ms` milliseconds, at `now`. */
  success(ms: number, now: number = Date.now()): void {
    this.#ok[this.#bucket(now)]!++;
    this.#latencyAt[this.#next] = now;
    this.#latencyMs[this.#next] = Math.max(0, ms);
    this.#next = (this.#next + 1) % LATENCY_SAMPLES;
  }
  /** Records a failed call at `now`. */
  failure(now: number = Date.now()): void {
    this.#failed[this.#bucket(now)]!++;
  }
  /** Counts and median latency (whole ms, null without a success) of the window ending at `now`. */
  read(now: number = Date.now()): { successes: number; failures: number; p50Ms: number | null; p95Ms: number | null } {
    const cutoff = now - this.windowMs;
    let successes = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.#starts[i]! > cutoff && this.#starts[i]! <= now) {
        successes += this.#ok[i]!;
        failures += this.#failed[i]!;
      }
    }
    const recent: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      if (this.#latencyAt[i]! > cutoff && this.#latencyAt[i]! <= now) recent.push(this.#latencyMs[i]!);
    }
    recent.sort((a, b) => a - b);
    const p50Ms = recent.length === 0 ? null : Math.round(recent[Math.floor((recent.length - 1) / 2)]!);
    const p95Ms = recent.length === 0 ? null : Math.round(recent[Math.ceil(recent.length * 0.95) - 1]!);
    return { successes, failures, p50Ms, p95Ms };
  }
}

/** The live state of one configured source: its configuration, circuit, gate and statistics. */
export class SourceState {
  /** The validated configuration entry (holds the key: never log or answer it). */
  readonly source: UpstreamSource;
  readonly gate: ConcurrencyGate;
  readonly stats: CallWindow;
  /** The circuit breaker; {@link UpstreamRegistry.run} is the only caller of its `execute`. */
  readonly breaker: CircuitBreakerPolicy;
  readonly #halfOpenAfterMs: number;
  /** `Date.now()` when the circuit last opened (cockatiel keeps its own copy, not public). */
  #openedAt = 0;
  /** The latest failure of a call (D35), or null. */
  #lastError: LastError | null = null;
  constructor(source: UpstreamSource, options: RegistryOptions = {}) {
    this.source = source;
    this.gate = new ConcurrencyGate(source.maxConcurrency);
    this.stats = new CallWindow(options.windowMs);
    this.#halfOpenAfterMs = options.halfOpenAfterMs ?? CIRCUIT_HALF_OPEN_AFTER_MS;
    // Only a retryable UpstreamError counts (D27); any other error passes through cockatiel uncounted.
    this.breaker = circuitBreaker(
      handleWhen((err) => err instanceof UpstreamError && err.retryable),
      { halfOpenAfter: this.#halfOpenAfterMs, breaker: new ConsecutiveBreaker(options.failureThreshold ?? CIRCUIT_FAILURE_THRESHOLD) },
    );
    this.breaker.onBreak(() => {
      this.#openedAt = Date.now();
    });
  }
  /** The source's name (`UPSTREAMS` entry `name`). */
  get name(): string {
    return this.source.name;
  }
  /** The circuit as D25 shows it: `half_open` once the trial is due or running. */
  get circuit(): CircuitStatus {
    switch (this.breaker.state) {
      case CircuitState.Closed:
        return "closed";
      case CircuitState.HalfOpen:
        return "half_open";
      default:
        return this.breaker.state === CircuitState.Open && Date.now() - this.#openedAt >= this.#halfOpenAfterMs ? "half_open" : "open";
    }
  }
  /**
   * Whether a call would be let through now: the circuit is closed or its trial is due (not already in
   * flight), and the gate has room. Advisory: {@link UpstreamRegistry.run} decides again.
   */
  available(): boolean {
    return this.#admits() && (this.gate.limit === null || this.gate.inFlight < this.gate.limit);
  }
  /** Closed, or open with the trial due; false while open and waiting, or while the trial runs. */
  #admits(): boolean {
    const state = this.breaker.state;
    if (state === CircuitState.Closed) return true;
    if (state === CircuitState.Open) return Date.now() - this.#openedAt >= this.#halfOpenAfterMs;
    return false;
  }
  /** The latest failure of a call to the source (D35), or null when none since the start. */
  get lastError(): LastError | null {
    return this.#lastError;
  }
  /** Records a failed call as the source's {@link lastError} (the key removed, URLs cut to their paths). */
  recordFailure(err: unknown, now: number = Date.now()): void {
    this.#lastError = describeFailure(err, this.source.apiKey, now);
  }
  /** The source's row of `GET /v1/admin/upstreams` (no key, no URL). */
  snapshot(): SourceSnapshot {
    const { successes, failures, p50Ms, p95Ms } = this.stats.read();
    return {
      name: this.source.name,
      protocol: this.source.protocol,
      families: [...this.source.families],
      circuit: this.circuit,
      in_flight: this.gate.inFlight,
      successes,
      failures,
      p50_ms: p50Ms,
      p95_ms: p95Ms,
      last_error: this.#lastError,
    };
  }
  /** Used by {@link UpstreamRegistry.run}: throws {@link SourceUnavailableError} unless a call may start. */
  checkAdmission(): void {
    if (!this.#admits()) throw new SourceUnavailableError(this.name, "circuit_open");
  }
}

/**
 * Every configured source (`UPSTREAMS` then `TEXT_UPSTREAMS`, D25), each with its {@link SourceState}.
 * One per process: circuits, gates and statistics are this process's view.
 */
export class UpstreamRegistry {
  readonly #states: SourceState[];
  readonly #byName: Map<string, SourceState>;
  readonly #log: RegistryLog | null;
  /**
   * `sources` as `loadUpstreams` returns them (names unique); `options` tunes the circuit and the window
   * (tests shorten them). Throws when two sources share a name.
   */
  constructor(sources: readonly UpstreamSource[], options: RegistryOptions = {}) {
    this.#states = sources.map((s) => new SourceState(s, options));
    this.#log = options.log ?? null;
    this.#byName = new Map(this.#states.map((s) => [s.name, s]));
    if (this.#byName.size !== this.#states.length) throw new Error("UpstreamRegistry: source names must be unique");
  }
  /** Every source state, in configuration order. */
  get states(): readonly SourceState[] {
    return this.#states;
  }
  /** The state of the source named `name`, or undefined. */
  get(name: string): SourceState | undefined {
    return this.#byName.get(name);
  }
  /**
   * The sources serving `family` (a D25 family name: `alpha`, `imgB`, `transcribe`, `txtA`, ...), in
   * configuration order, whatever their circuit; empty when none (the simulator serves the family, D25).
   */
  sourcesFor(family: string): SourceState[] {
    return this.#states.filter((s) => s.source.families.includes(family));
  }
  /**
   * Runs one upstream HTTP call `fn` on `source` (a state of this registry, or its name), through the
   * source's gate and circuit, and records it in the statistics (duration in ms, from start to settle).
   * - Refuses without calling `fn` (throws {@link SourceUnavailableError}, retryable, counted nowhere)
   *   when the circuit is open or its trial is in flight, or when the source is at `max_concurrency`.
   * - Otherwise resolves with `fn`'s value (a success: closes a half-open circuit and resets the failure
   *   count), or rethrows `fn`'s error: an {@link UpstreamError} with `retryable` counts toward opening
   *   the circuit; a non-retryable one does not (and does not reset the count); both count as failures
   *   in the statistics and become the source's `last_error`. An error thrown after `signal` (the caller's)
   *   aborted is not counted as a failure, nor is a request the source does not serve (`unsupported`:
   *   nothing was sent). Any other error is counted as a failure but not by the circuit. A source without
   *   the upstream model (`modelNotFound`, D35) is a non-retryable failure, logged as a warning naming the
   *   source and the upstream id.
   * Throws a plain Error for a source name this registry does not have.
   */
  async run<T>(source: SourceState | string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const state = this.#state(source);
    state.checkAdmission();
    if (!state.gate.tryAcquire()) throw new SourceUnavailableError(state.name, "busy");
    try {
      return await this.#execute(state, fn, signal);
    } finally {
      state.gate.release();
    }
  }

  /**
   * Like {@link run}, without taking a place of the source's `max_concurrency` gate: for the HTTP calls
   * of a job that already holds its place for its whole life at the source (submit, polls, cancel; the
   * job runner takes the place with `gate.tryAcquire()` and gives it back when the job leaves the
   * source). Same circuit, statistics and errors as {@link run}.
   */
  async call<T>(source: SourceState | string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const state = this.#state(source);
    state.checkAdmission();
    return this.#execute(state, fn, signal);
  }

  #state(source: SourceState | string): SourceState {
    const state = typeof source === "string" ? this.#byName.get(source) : source;
    if (state === undefined || this.#byName.get(state.name) !== state) throw new Error(`UpstreamRegistry.run: unknown source ${String(typeof source === "string" ? source : source.name)}`);
    return state;
  }

  async #execute<T>(state: SourceState, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const started = Date.now();
    try {
      const value = await state.breaker.execute(() => fn());
      state.stats.success(Date.now() - started);
      return value;
    } catch (err) {
      // Another call opened the circuit between the admission check and the start.
      if (err instanceof BrokenCircuitError) throw new SourceUnavailableError(state.name, "circuit_open");
      // A request the source does not serve was never sent: no failure of the source.
      if (!signal?.aborted && !(err instanceof UpstreamError && err.unsupported)) {
        state.stats.failure();
        state.recordFailure(err);
        if (err instanceof UpstreamError && err.modelNotFound) {
          this.#log?.warn(
            { source: state.name, upstream_model: err.upstreamModel },
            `upstream source ${state.name} does not have the upstream model ${err.upstreamModel ?? "(unnamed)"}: the family's next source, if any, is tried (D35)`,
          );
        }
      }
      throw err;
    }
  }
  /** One row per source for `GET /v1/admin/upstreams` (D25), in configuration order; no key anywhere. */
  snapshot(): SourceSnapshot[] {
    return this.#states.map((s) => s.snapshot());
  }
}
