/**
 * Waiting for the first chunk of an upstream stream before anything is decided on it: the failover of a
 * synchronous call (sync-failover.ts, D27) moves on when a stream fails before any audio, and a paid
 * call charges a stream only once its first chunk arrived. One helper for both,
 * {@link firstChunkThen}, and the stream it returns, {@link ChunkStream}.
 */
import { UpstreamError } from "./types.ts";

/**
 * Reads the first chunk of `chunks` (so a stream that fails before any audio fails its attempt, and the
 * call can move on, D27) and returns a {@link ChunkStream} of every chunk, that one first. `onEnd` runs
 * once: when the stream ends, breaks, or is closed with `return()`, even before it was iterated. `source`
 * names the stream in the error of an empty one (`speech`).
 * @throws the stream's error before its first chunk; an UpstreamError (retryable) when it ends empty.
 */
export async function firstChunkThen(chunks: AsyncIterable<Uint8Array>, onEnd: () => void, source: string): Promise<ChunkStream> {
  const it = chunks[Symbol.asyncIterator]();
  let first: IteratorResult<Uint8Array>;
  try {
    first = await it.next();
  } catch (err) {
    onEnd();
    throw err;
  }
  if (first.done === true) {
    onEnd();
    throw new UpstreamError(`${source}: the stream ended before any audio`, true);
  }
  return new ChunkStream(first.value, it, onEnd);
}

/**
 * The chunks of an upstream stream whose first chunk was already read. Iterate it once. `return()` (a
 * `break`, or a caller that drops the stream without reading it) closes the upstream stream and runs the
 * end hook; so does its end or its failure.
 */
export class ChunkStream implements AsyncIterableIterator<Uint8Array> {
  #head: Uint8Array | null;
  readonly #it: AsyncIterator<Uint8Array>;
  readonly #onEnd: () => void;
  #ended = false;
  constructor(head: Uint8Array, it: AsyncIterator<Uint8Array>, onEnd: () => void) {
    this.#head = head;
    this.#it = it;
    this.#onEnd = onEnd;
  }
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnd();
  }
  [Symbol.asyncIterator](): this {
    return this;
  }
  async next(): Promise<IteratorResult<Uint8Array>> {
    if (this.#head !== null) {
      const value = this.#head;
      this.#head = null;
      return { done: false, value };
    }
    if (this.#ended) return { done: true, value: undefined };
    try {
      const next = await this.#it.next();
      if (next.done === true) this.#end();
      return next;
    } catch (err) {
      this.#end();
      throw err;
    }
  }
  async return(): Promise<IteratorResult<Uint8Array>> {
    this.#head = null;
    if (!this.#ended) {
      this.#end();
      await this.#it.return?.();
    }
    return { done: true, value: undefined };
  }
}
