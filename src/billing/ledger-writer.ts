/**
 * The ledger's writer thread for the embedded SQLite database (issue 33: throughput and the tail).
 *
 * On SQLite every statement runs on the thread that calls it, and a paid call's hold and capture (nine
 * statements and their share of a commit) were two thirds of the gateway's CPU per chat call: one core
 * served about 3,500 calls/s, the other stayed mostly idle. So the holds, captures and releases made
 * outside a transaction (every synchronous paid call's) run on a worker thread with its own connection to
 * the same file (billing/ledger-writer-worker.ts runs ledger.ts's own functions there, with its own group
 * commit), while the event loop goes on serving requests. The two connections never wait for each other
 * inside SQLite: each takes the file's thread lock before it writes (storage/sqlite-thread-lock.ts).
 *
 * Semantics are those of the same call on the event loop's connection: a call's promise settles after its
 * transaction committed (or failed, with nothing written), with the same result or error
 * (ledger.ts `fromWriter` revives the error classes); only `callAhead` (ledger.ts `placeHoldAhead`)
 * answers before the commit and tells it apart. Work inside a transaction of the event loop
 * (a job submit's hold, a capture with the caller's writes) stays on the event loop's connection.
 * If the thread dies, its pending calls fail and later ones run on the event loop again.
 */
import { Worker } from "node:worker_threads";
import type { Kysely } from "kysely";
import type { Database } from "../storage/schema.ts";
import { ThreadWriteLock } from "../storage/sqlite-thread-lock.ts";
import { recordLedger } from "../metrics.ts";
import type { Executor } from "./executor.ts";

/** The ledger functions the writer thread runs. */
export type LedgerWriterOp = "placeHold" | "placeHoldAhead" | "captureHold" | "releaseHold";

/** A call to the thread (posted in arrays): its id, the function and its arguments (structured-cloneable, no `db`). */
export interface LedgerWriterRequest {
  id: number;
  op: LedgerWriterOp;
  args: unknown[];
}

/** An error thrown on the thread, as it crosses back: its class name, message and own fields. */
export interface LedgerWriterError {
  name: string;
  message: string;
  fields: Record<string, unknown>;
}

/**
 * The thread's answer (posted in arrays): the call's value or error, and the ledger entries recorded since its last answer
 * (`[kind, signed micro-USD]`, for this thread's metrics, metrics.ts `recordLedger`).
 */
export interface LedgerWriterReply {
  id: number;
  value?: unknown;
  error?: LedgerWriterError;
  /** For `placeHoldAhead`, a second answer once the hold's commit group committed, or its commit's error. */
  committed?: true;
  commitError?: LedgerWriterError;
  entries: [string, number][];
}

/** A call of the thread that failed: `error` is the thread's error as it crossed (ledger.ts revives it). */
export class LedgerWriterFailure extends Error {
  readonly remote: LedgerWriterError;
  constructor(remote: LedgerWriterError) {
    super(remote.message);
    this.name = "LedgerWriterFailure";
    this.remote = remote;
  }
}

/** The thread's connection: the SQLite file (absolute path) and the buffer of its thread lock. */
export interface LedgerWriterFile {
  file: string;
  threadLock: SharedArrayBuffer;
}

/** A writer thread and its calls in flight. */
export class LedgerWriter {
  readonly #worker: Worker;
  readonly #threadId: number;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  /** `placeHoldAhead` calls answered whose commit is still to come. */
  readonly #uncommitted = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();
  readonly #onEntries: (entries: [string, number][]) => void;
  readonly #threadLock: { releaseIfHeldBy(id: number): boolean };
  #nextId = 1;
  #alive = true;
  /**
   * Calls made in one run of the microtask queue, posted together at its end: one message for what one
   * callback started, sent at once (waiting for the end of the event-loop turn cost 11 % of the calls/s).
   */
  #outbox: LedgerWriterRequest[] = [];
  /** Called once no call is in flight (set by {@link close}). */
  #drained: (() => void) | null = null;
  #exited: Promise<void>;

  /**
   * Starts the thread on `file`. `onEntries` receives the ledger entries it recorded (for the metrics of
   * this thread); `threadLock` is this thread's view of the file's lock, released if the writer dies
   * holding it.
   */
  constructor(file: LedgerWriterFile, onEntries: (entries: [string, number][]) => void, threadLock: { releaseIfHeldBy(id: number): boolean }) {
    this.#onEntries = onEntries;
    this.#threadLock = threadLock;
    this.#worker = new Worker(new URL("./ledger-writer-worker.ts", import.meta.url), { workerData: file });
    // Read now: a worker's `threadId` becomes -1 once it has exited.
    this.#threadId = this.#worker.threadId;
    this.#worker.unref();
    this.#worker.on("message", (m: LedgerWriterReply[]) => this.#onReplies(m));
    this.#worker.on("error", (err) => this.#stop(err));
    this.#exited = new Promise((resolve) =>
      this.#worker.once("exit", (code) => {
        this.#stop(new Error(`the ledger writer thread exited (code ${code})`));
        resolve();
      }),
    );
  }

  /** Whether the thread is running (a dead one takes no calls: the ledger runs them on the event loop). */
  get alive(): boolean {
    return this.#alive;
  }

  /**
   * Runs `op(db, ...args)` on the thread. Resolves with its value once committed.
   * @throws LedgerWriterFailure with the thread's error; Error when the thread died first.
   */
  call(op: LedgerWriterOp, args: unknown[]): Promise<unknown> {
    return this.#post(this.#nextId++, op, args);
  }

  /**
   * Runs `placeHoldAhead` on the thread: resolves with the hold as soon as it is written in the thread's
   * open commit group, and `committed` once that group committed (rejects with the commit's error).
   * @throws LedgerWriterFailure with the thread's error (nothing written); Error when the thread died first.
   */
  async callAhead(args: unknown[]): Promise<{ value: unknown; committed: Promise<void> }> {
    const id = this.#nextId++;
    const committed = new Promise<void>((resolve, reject) => this.#uncommitted.set(id, { resolve, reject }));
    try {
      return { value: await this.#post(id, "placeHoldAhead", args), committed };
    } catch (err) {
      this.#uncommitted.delete(id);
      throw err;
    }
  }

  #post(id: number, op: LedgerWriterOp, args: unknown[]): Promise<unknown> {
    if (!this.#alive) return Promise.reject(new Error("the ledger writer thread is not running"));
    this.#worker.ref();
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      if (this.#outbox.push({ id, op, args }) === 1) queueMicrotask(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#outbox;
    this.#outbox = [];
    if (batch.length > 0 && this.#alive) this.#worker.postMessage(batch);
  }

  #onReplies(replies: LedgerWriterReply[]): void {
    for (const m of replies) {
      if (m.entries.length > 0) this.#onEntries(m.entries);
      if (m.committed || m.commitError) {
        const waiting = this.#uncommitted.get(m.id);
        this.#uncommitted.delete(m.id);
        if (m.commitError) waiting?.reject(new LedgerWriterFailure(m.commitError));
        else waiting?.resolve();
        continue;
      }
      const call = this.#pending.get(m.id);
      if (!call) continue;
      this.#pending.delete(m.id);
      if (m.error) call.reject(new LedgerWriterFailure(m.error));
      else call.resolve(m.value);
    }
    if (this.#pending.size === 0 && this.#uncommitted.size === 0) {
      this.#worker.unref();
      this.#drained?.();
    }
  }

  #stop(err: unknown): void {
    if (!this.#alive) return;
    this.#alive = false;
    // Its connection is gone, so SQLite rolled back any transaction it had open: hand its lock on.
    this.#threadLock.releaseIfHeldBy(this.#threadId);
    for (const call of this.#pending.values()) call.reject(err);
    this.#pending.clear();
    for (const waiting of this.#uncommitted.values()) waiting.reject(err);
    this.#uncommitted.clear();
    this.#drained?.();
  }

  /** Lets the calls in flight finish, then closes the thread's connection and waits for it to exit. */
  async close(): Promise<void> {
    if (!this.#alive) return this.#exited;
    if (this.#pending.size > 0 || this.#uncommitted.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    // Kept referenced until it exits: an unreferenced thread still starting up (a close right after the
    // start) would let the process end with this promise unsettled.
    this.#worker.ref();
    this.#worker.postMessage("close");
    await this.#exited;
  }
}

const writers = new WeakMap<object, LedgerWriter>();

/**
 * Starts the writer thread of the SQLite file behind `db` (storage/db.ts `Db.sqliteFile`) and routes the
 * ledger calls made on `db` to it; the entries it records count in this thread's metrics.
 */
export function startLedgerWriter(db: Kysely<Database>, file: LedgerWriterFile): LedgerWriter {
  const writer = new LedgerWriter(
    file,
    (entries) => {
      for (const [kind, amount] of entries) recordLedger(kind, amount);
    },
    new ThreadWriteLock(file.threadLock),
  );
  attachLedgerWriter(db, writer);
  return writer;
}

/** Routes the ledger calls made on `db` itself (not in a transaction) to `writer`. */
export function attachLedgerWriter(db: Kysely<Database>, writer: LedgerWriter): void {
  writers.set(db, writer);
}

/** The running writer of `db`, or undefined (PostgreSQL, in memory, a transaction, none attached, dead). */
export function ledgerWriterOf(db: Executor): LedgerWriter | undefined {
  if (db.isTransaction) return undefined;
  const w = writers.get(db);
  return w?.alive ? w : undefined;
}
