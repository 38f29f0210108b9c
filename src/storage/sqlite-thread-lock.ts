/**
 * The write lock that the threads of one process share for one SQLite file (the event loop's connection
 * and the ledger writer's, billing/ledger-writer.ts), and the count of rows they wrote.
 *
 * SQLite lets one connection write at a time; a second one waits in its busy handler, which sleeps on its
 * thread. On the event loop's thread such a sleep stalls every request. So before a connection of this
 * process opens a write transaction it takes this lock, waiting without blocking (`Atomics.waitAsync`), and
 * only then runs `begin immediate`, which then never waits. The lock is a ticket lock on shared memory:
 * threads get it in the order they asked, so a busy writer thread cannot starve the event loop.
 *
 * Layout of the shared buffer (32 bytes): Int32 [0] next ticket, [1] ticket served, [2] holder's thread
 * id + 1 (0: none); BigInt64 [2] rows written by every connection of the file (the checkpointer's gauge,
 * storage/sqlite-checkpointer.ts). Tickets wrap around at 2^32; only equality is compared.
 */
import { threadId } from "node:worker_threads";

const NEXT = 0;
const SERVING = 1;
const HOLDER = 2;
const ROWS = 2;

/** A ticket lock and a written-rows counter on a `SharedArrayBuffer` (see the module comment). */
export class ThreadWriteLock {
  /** The shared memory: hand it to another thread (`workerData`) to share the lock. */
  readonly buffer: SharedArrayBuffer;
  readonly #i32: Int32Array;
  readonly #i64: BigInt64Array;

  /** A new lock, or the view of `buffer` made by another thread's lock. */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(32)) {
    this.buffer = buffer;
    this.#i32 = new Int32Array(buffer, 0, 4);
    this.#i64 = new BigInt64Array(buffer, 0, 4);
  }

  /**
   * Takes the lock: undefined when it was free (taken at once, no await needed), else a promise that
   * resolves once this thread holds it. Never blocks the thread.
   */
  acquire(): Promise<void> | undefined {
    const ticket = Atomics.add(this.#i32, NEXT, 1);
    if (Atomics.load(this.#i32, SERVING) === ticket) {
      Atomics.store(this.#i32, HOLDER, threadId + 1);
      return undefined;
    }
    return this.#wait(ticket);
  }

  async #wait(ticket: number): Promise<void> {
    for (;;) {
      const serving = Atomics.load(this.#i32, SERVING);
      if (serving === ticket) break;
      const w = Atomics.waitAsync(this.#i32, SERVING, serving);
      if (w.async) await w.value;
    }
    Atomics.store(this.#i32, HOLDER, threadId + 1);
  }

  /** Hands the lock to the next ticket. Call it once per acquisition, from the thread that holds it. */
  release(): void {
    Atomics.store(this.#i32, HOLDER, 0);
    Atomics.add(this.#i32, SERVING, 1);
    Atomics.notify(this.#i32, SERVING);
  }

  /**
   * Releases the lock if the thread `id` holds it: that thread died inside a write transaction (its
   * connection closed, so SQLite rolled the transaction back). Returns whether it held it.
   */
  releaseIfHeldBy(id: number): boolean {
    if (id < 0 || Atomics.load(this.#i32, HOLDER) !== id + 1) return false;
    this.release();
    return true;
  }

  /** Adds `n` rows to the count of rows written to the file by this process's connections. */
  addRows(n: number): void {
    if (n > 0) Atomics.add(this.#i64, ROWS, BigInt(n));
  }

  /** Rows written to the file by this process's connections since the lock was made. */
  rows(): number {
    return Number(Atomics.load(this.#i64, ROWS));
  }
}
