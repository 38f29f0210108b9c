/**
 * The render cache shared by the simulated speech and media upstreams: encoded clips by key in a
 * byte-bounded LRU, one rendering per key at a time (identical concurrent requests share it), small
 * jobs rendered inline, larger ones on a {@link RenderPool} of workers that starts on first use.
 */
import { availableParallelism } from "node:os";
import { abortError } from "./delay.ts";
import { type PoolTask, RenderPool } from "./worker-pool.ts";

/**
 * A least-recently-used map bounded by the sum of its values' `bytes` (a Map keeps insertion order;
 * a hit is moved to the end, eviction takes from the front).
 */
export class ByteLruCache<V extends { bytes: number }> {
  private readonly maxBytes: number;
  private readonly map = new Map<string, V>();
  private total = 0;

  /** `maxBytes`: the budget. */
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** The value of `key` (marking it most recently used), or undefined. */
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  /** Stores `value`, evicting the least recently used values over budget. Values over budget are not kept. */
  set(key: string, value: V): void {
    const old = this.map.get(key);
    if (old !== undefined) {
      this.map.delete(key);
      this.total -= old.bytes;
    }
    if (value.bytes > this.maxBytes) return;
    this.map.set(key, value);
    this.total += value.bytes;
    for (const [k, v] of this.map) {
      if (this.total <= this.maxBytes) break;
      this.map.delete(k);
      this.total -= v.bytes;
    }
  }

  /** Number of entries and bytes held. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.map.size, bytes: this.total };
  }

  /** Drops everything. */
  clear(): void {
    this.map.clear();
    this.total = 0;
  }
}

/** One rendering in progress on a worker (shared by identical concurrent requests). */
export class RenderTask<J, C> implements PoolTask {
  readonly id: number;
  readonly key: string;
  readonly job: J;
  readonly label: string;
  /** Encoded chunks received so far, in order (emptied after completion unless the cache keeps them). */
  readonly chunks: Uint8Array[] = [];
  clip: C | null = null;
  error: Error | null = null;
  started = false;
  consumers = 0;
  readonly #message: unknown;
  #wakers: (() => void)[] = [];

  constructor(id: number, key: string, job: J, label: string, message: unknown) {
    this.id = id;
    this.key = key;
    this.job = job;
    this.label = label;
    this.#message = message;
  }

  /** The worker message that renders this task. */
  request(): unknown {
    return this.#message;
  }

  /** Wakes everyone waiting for progress. */
  notify(): void {
    const w = this.#wakers;
    this.#wakers = [];
    for (const f of w) f();
  }

  /** Resolves at the next progress (chunk, completion or failure); rejects when `signal` aborts. */
  changed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const onAbort = () => reject(abortError(signal as AbortSignal));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#wakers.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }
}

/** Occupancy of a {@link RenderCache}: cached clips (count, bytes), renderings in progress, live workers. */
export interface RenderStats {
  cacheEntries: number;
  cacheBytes: number;
  inflight: number;
  workers: number;
}

/** How a {@link RenderCache} renders jobs of type `J` into clips of type `C`. */
export interface RenderCacheOptions<J, C extends { bytes: number }> {
  /** Byte budget of the cache (default 64 MiB). Clips over a quarter of it are not kept. */
  maxBytes?: number;
  /** Number of render workers (default `clamp(availableParallelism() - 1, 2, 4)`), started on first use. */
  workers?: number;
  /** Message of the {@link UpstreamError} that fails renderings after `close()`. */
  closedMessage: string;
  /** Short name of a job for error messages (`speech`, `music`, `sfx`). */
  label(job: J): string;
  /** The message posted to `encode-worker.ts` to render `job`. */
  workerRequest(id: number, job: J): unknown;
  /** Renders `job` on the calling thread: its length in seconds and its encoded chunks. */
  renderInline(job: J): { durationSec: number; chunks: Iterable<Uint8Array> };
  /** True when `job` is small enough to render inline. */
  isSmall(job: J): boolean;
  /** The clip of a finished rendering: its encoded chunks and its length in seconds. */
  clipOf(parts: readonly Uint8Array[], durationSec: number): C;
  /** Keep a task's chunks after completion (streaming readers still read them). Default false. */
  keepChunks?: boolean;
}

/**
 * Encoded clips by key (a hash of everything that determines the bytes): at most `maxBytes` of clips in
 * LRU order, plus the renderings in progress, one per key. {@link RenderCache.obtain} answers a cached
 * clip, joins the rendering of the same key, renders a small job inline or starts a worker task.
 * Returned byte arrays are shared: treat them as read-only.
 */
export class RenderCache<J, C extends { bytes: number }> {
  readonly #opts: RenderCacheOptions<J, C>;
  readonly #clips: ByteLruCache<C>;
  readonly #maxClipBytes: number;
  readonly #inflight = new Map<string, RenderTask<J, C>>();
  readonly #pool: RenderPool<RenderTask<J, C>>;
  #nextTaskId = 1;
  #closed = false;

  /** No worker starts here: the pool spawns one per queued task up to `opts.workers`. */
  constructor(opts: RenderCacheOptions<J, C>) {
    this.#opts = opts;
    const maxBytes = opts.maxBytes ?? 64 * 1024 * 1024;
    this.#clips = new ByteLruCache(maxBytes);
    this.#maxClipBytes = maxBytes / 4;
    const workers = opts.workers ?? Math.min(4, Math.max(2, availableParallelism() - 1));
    this.#pool = new RenderPool<RenderTask<J, C>>(
      workers,
      (task, durationSec) => this.#finish(task, durationSec),
      (task, err) => this.#fail(task, err),
      opts.closedMessage,
    );
  }

  /** The clip of `key` (cached or just rendered inline) or the worker task rendering it. */
  obtain(key: string, job: J): C | RenderTask<J, C> {
    const cached = this.#clips.get(key);
    if (cached) return cached;
    const running = this.#inflight.get(key);
    if (running) return running;
    if (this.#opts.isSmall(job)) {
      const { durationSec, chunks } = this.#opts.renderInline(job);
      const clip = this.#opts.clipOf(Array.from(chunks), durationSec);
      this.#remember(key, clip);
      return clip;
    }
    const task = new RenderTask<J, C>(this.#nextTaskId, key, job, this.#opts.label(job), this.#opts.workerRequest(this.#nextTaskId, job));
    this.#nextTaskId++;
    this.#inflight.set(key, task);
    this.#pool.submit(task);
    return task;
  }

  /** Registers a consumer of `task` (pair with {@link RenderCache.release}). */
  join(task: RenderTask<J, C>): void {
    task.consumers++;
  }

  /** A consumer left; a task nobody waits for any more is dropped if it has not started. */
  release(task: RenderTask<J, C>): void {
    task.consumers--;
    if (task.consumers <= 0 && !task.started && task.clip === null && task.error === null) {
      if (this.#pool.cancel(task)) this.#forget(task);
    }
  }

  /** The finished clip of `task`; throws its rendering error or the abort reason of `signal`. */
  async wait(task: RenderTask<J, C>, signal?: AbortSignal): Promise<C> {
    for (;;) {
      if (task.error) throw task.error;
      if (task.clip) return task.clip;
      await task.changed(signal);
    }
  }

  /** Cache occupancy (entries, bytes), renderings in progress and live workers; for metrics and tests. */
  stats(): RenderStats {
    const s = this.#clips.size;
    return { cacheEntries: s.entries, cacheBytes: s.bytes, inflight: this.#inflight.size, workers: this.#pool.workers };
  }

  /** Terminates the workers, fails renderings in progress and empties the cache. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool.close();
    this.#clips.clear();
  }

  /** Caches `clip` unless it would take more than a quarter of the budget. */
  #remember(key: string, clip: C): void {
    if (clip.bytes <= this.#maxClipBytes && !this.#closed) this.#clips.set(key, clip);
  }

  #forget(task: RenderTask<J, C>): void {
    if (this.#inflight.get(task.key) === task) this.#inflight.delete(task.key);
  }

  #finish(task: RenderTask<J, C>, durationSec: number): void {
    const clip = this.#opts.clipOf(task.chunks, durationSec);
    if (!this.#opts.keepChunks) task.chunks.length = 0;
    task.clip = clip;
    this.#remember(task.key, clip);
    this.#forget(task);
    task.notify();
  }

  #fail(task: RenderTask<J, C>, err: Error): void {
    task.error = err;
    if (!this.#opts.keepChunks) task.chunks.length = 0;
    this.#forget(task);
    task.notify();
  }
}
