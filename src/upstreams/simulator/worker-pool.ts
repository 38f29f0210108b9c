/**
 * A small pool of render workers running `encode-worker.ts`, shared by the simulated speech and media
 * upstreams. Tasks queue until a worker is free; a worker streams encoded chunks back, then `done` or
 * `error`. Idle workers are unref'd so they never keep the process alive; a crashed worker fails its task
 * and is replaced on demand.
 */
import { Worker } from "node:worker_threads";
import { UpstreamError } from "../types.ts";
import type { EncodeWorkerMessage } from "./encode-worker.ts";

/** What the pool needs of a task. */
export interface PoolTask {
  readonly id: number;
  readonly chunks: Uint8Array[];
  started: boolean;
  /** The message that starts the task in a worker. */
  request(): unknown;
  /** Called after each chunk arrives (streaming consumers wake up). */
  notify(): void;
  /** Short name for error messages (`speech`, `music`, `sfx`). */
  readonly label: string;
}

interface Slot<T> {
  worker: Worker;
  task: T | null;
}

/** Runs tasks on at most `size` workers. */
export class RenderPool<T extends PoolTask> {
  readonly #size: number;
  readonly #onDone: (task: T, durationSec: number) => void;
  readonly #onFail: (task: T, err: Error) => void;
  readonly #closedMessage: string;
  readonly #slots: Slot<T>[] = [];
  readonly #queue: T[] = [];
  #closed = false;

  /**
   * @param onDone called when a worker finished a task (with the rendered duration, seconds)
   * @param onFail called when a task fails, its worker crashes or the pool closes
   */
  constructor(size: number, onDone: (task: T, durationSec: number) => void, onFail: (task: T, err: Error) => void, closedMessage: string) {
    this.#size = Math.max(1, size);
    this.#onDone = onDone;
    this.#onFail = onFail;
    this.#closedMessage = closedMessage;
  }

  /** Number of live workers: 0 until the first task (workers start on first use), at most `size`. */
  get workers(): number {
    return this.#slots.length;
  }

  /** Queues `task` (fails it at once when the pool is closed). */
  submit(task: T): void {
    if (this.#closed) {
      this.#onFail(task, new UpstreamError(this.#closedMessage, false));
      return;
    }
    this.#queue.push(task);
    this.#pump();
  }

  /** Removes a task that has not started yet; true when it was removed. */
  cancel(task: T): boolean {
    const i = this.#queue.indexOf(task);
    if (i < 0) return false;
    this.#queue.splice(i, 1);
    return true;
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.task === null);
      if (!slot) {
        if (this.#slots.length >= this.#size) return;
        slot = this.#spawn();
      }
      const task = this.#queue.shift() as T;
      task.started = true;
      slot.task = task;
      slot.worker.ref();
      slot.worker.postMessage(task.request());
    }
  }

  #spawn(): Slot<T> {
    const worker = new Worker(new URL("./encode-worker.ts", import.meta.url));
    worker.unref();
    const slot: Slot<T> = { worker, task: null };
    this.#slots.push(slot);
    worker.on("message", (msg: EncodeWorkerMessage) => this.#onMessage(slot, msg));
    worker.on("error", (err) => this.#onCrash(slot, err));
    worker.on("exit", (code) => this.#onCrash(slot, new Error(`render worker exited with code ${code}`)));
    return slot;
  }

  #onMessage(slot: Slot<T>, msg: EncodeWorkerMessage): void {
    const task = slot.task;
    if (!task || task.id !== msg.id) return;
    if (msg.type === "chunk") {
      task.chunks.push(msg.bytes);
      task.notify();
      return;
    }
    slot.task = null;
    slot.worker.unref();
    if (msg.type === "done") this.#onDone(task, msg.durationSec);
    else this.#onFail(task, new UpstreamError(`simulated ${task.label} rendering failed: ${msg.message}`));
    this.#pump();
  }

  #onCrash(slot: Slot<T>, err: Error): void {
    const i = this.#slots.indexOf(slot);
    if (i < 0) return;
    this.#slots.splice(i, 1);
    const task = slot.task;
    slot.task = null;
    if (task) this.#onFail(task, new UpstreamError(`simulated ${task.label} worker failed: ${err.message}`));
    if (!this.#closed) this.#pump();
  }

  /** Fails queued and running tasks and terminates every worker. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const task of this.#queue.splice(0)) this.#onFail(task, new UpstreamError(this.#closedMessage, false));
    const slots = this.#slots.splice(0);
    for (const s of slots) {
      if (s.task) this.#onFail(s.task, new UpstreamError(this.#closedMessage, false));
      s.task = null;
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}
