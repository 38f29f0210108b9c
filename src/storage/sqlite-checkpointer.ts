/**
 * WAL checkpoints off the event loop for the embedded SQLite database (issue "Fast on the scale path":
 * tail latency and memory).
 *
 * SQLite's default automatic checkpoint runs inside the commit that crosses 1000 WAL pages: that commit
 * copies about 4 MB into the database file and syncs it twice, and on the one thread that serves every
 * request this stalled the event loop for 5-15 ms a few times a second under load. Here the connection of
 * the event loop never checkpoints (`wal_autocheckpoint = 0`); a worker thread with its own connection runs
 * `PRAGMA wal_checkpoint(PASSIVE)`, which never blocks writers or readers, when enough has been written.
 *
 * A passive checkpoint copies the frames that were in the WAL when it started; under sustained writes new
 * frames arrive meanwhile, so it never catches up with the end, and SQLite only starts the WAL over from its
 * beginning once a checkpoint has. Left alone, the WAL grew by the whole write volume of a busy period
 * (2 GB in 12 s of the speech benchmark, about 15 pages per request), and appending to fresh file space
 * cost the kernel a third of the process's CPU (zeroing page-cache pages). So when a passive checkpoint
 * ends behind a WAL of {@link CheckpointSettings.restartAfterFrames} frames or more, a second one runs while
 * this process holds its transactions back (`pause`: the event loop runs on, transactions queue for the
 * connection lock); it only has the frames written during the first, and the next write starts the WAL over.
 * The WAL then stays near that size and is rewritten in place.
 *
 * The thread starts on the first write-heavy period and exits after {@link THREAD_IDLE_EXIT_MS} without
 * work, so an idle gateway carries no second JavaScript heap.
 */
import { Worker } from "node:worker_threads";

/** When the checkpointer checkpoints (all optional; the defaults fit the gateway). */
export interface CheckpointSettings {
  /** How often the written-row count is read, ms (250). */
  checkEveryMs?: number;
  /** Rows written since the last checkpoint that ask for one (2000: about 1000 WAL pages of the gateway's tables). */
  rowsPerCheckpoint?: number;
  /** A checkpoint is also asked for this long after the last one whenever anything was written, ms (5000). */
  atLeastEveryMs?: number;
  /**
   * A passive checkpoint that ends with at least this many frames in the WAL (more have been appended
   * while it ran) is followed by a catch-up checkpoint with this process's transactions held back (16384 frames: 64 MB of
   * 4 KB pages). It pauses this process's transactions for 8-14 ms (the frames written during the first,
   * and two syncs); at the speech benchmark's 4,700 requests/s that happens a few times a second, at 300
   * requests/s once every few seconds.
   */
  restartAfterFrames?: number;
}

/** The outcome of `PRAGMA wal_checkpoint`: frames in the WAL and frames copied into the database file. */
interface CheckpointResult {
  busy?: number;
  log?: number;
  checkpointed?: number;
  error?: string;
}
/** The worker thread exits after this long without a checkpoint to run, ms. */
export const THREAD_IDLE_EXIT_MS = 30_000;

const WORKER_SOURCE = `
const { DatabaseSync } = require("node:sqlite");
const { parentPort, workerData } = require("node:worker_threads");
const db = new DatabaseSync(workerData.path);
db.exec("PRAGMA busy_timeout = 5000");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let idle = setTimeout(exit, workerData.idleExitMs);
function exit() { db.close(); process.exit(0); }
parentPort.on("message", (m) => {
  clearTimeout(idle);
  if (m === "close") return exit();
  let result = null;
  try { result = checkpoint.get(); } catch (e) { result = { error: String(e) }; }
  parentPort.postMessage(result);
  idle = setTimeout(exit, workerData.idleExitMs);
});
`;

/**
 * Runs passive WAL checkpoints of the SQLite file at `path` on a worker thread. `totalChanges()` gives the
 * rows this process's connections to the file have written (storage/sqlite-thread-lock.ts `rows`), a count
 * that only grows; `pause(fn)` runs `fn` while no transaction of this process is open on the file
 * (storage/sqlite.ts `CommitCoordinator.exclusive`). Call {@link close} before closing that connection.
 */
export class WalCheckpointer {
  readonly #path: string;
  readonly #totalChanges: () => number;
  readonly #pause: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly #timer: NodeJS.Timeout;
  readonly #rowsPerCheckpoint: number;
  readonly #atLeastEveryMs: number;
  readonly #restartAfterFrames: number;
  #worker: Worker | null = null;
  #running = false;
  #closed = false;
  #changesAtLast = 0;
  #lastAt = performance.now();

  constructor(
    path: string,
    totalChanges: () => number,
    pause: <T>(fn: () => Promise<T>) => Promise<T>,
    settings: CheckpointSettings = {},
  ) {
    this.#path = path;
    this.#totalChanges = totalChanges;
    this.#pause = pause;
    this.#rowsPerCheckpoint = settings.rowsPerCheckpoint ?? 2000;
    this.#atLeastEveryMs = settings.atLeastEveryMs ?? 5000;
    this.#restartAfterFrames = settings.restartAfterFrames ?? 16_384;
    this.#timer = setInterval(() => this.#check(), settings.checkEveryMs ?? 250);
    this.#timer.unref();
  }

  #check(): void {
    if (this.#running || this.#closed) return;
    const changes = this.#totalChanges();
    const written = changes - this.#changesAtLast;
    if (written === 0) return;
    if (written < this.#rowsPerCheckpoint && performance.now() - this.#lastAt < this.#atLeastEveryMs) return;
    this.#changesAtLast = changes;
    this.#lastAt = performance.now();
    this.#running = true;
    void this.#checkpoint().finally(() => {
      this.#running = false;
    });
  }

  async #checkpoint(): Promise<void> {
    const first = await this.#runOnThread();
    // The result counts the frames that were in the WAL when it started (all copied, unless a reader of
    // another process held some back); more have been appended since.
    if (this.#closed || first === null || first.error !== undefined || (first.log ?? 0) < this.#restartAfterFrames) return;
    await this.#pause(() => this.#runOnThread());
  }

  /** Runs one passive checkpoint on the thread; null when the thread exited first. */
  #runOnThread(): Promise<CheckpointResult | null> {
    if (this.#closed) return Promise.resolve(null);
    const worker = this.#thread();
    return new Promise((resolve) => {
      const onExit = () => resolve(null);
      worker.once("exit", onExit);
      worker.once("message", (m: CheckpointResult | null) => {
        worker.off("exit", onExit);
        resolve(m);
      });
      worker.postMessage("checkpoint");
    });
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path: this.#path, idleExitMs: THREAD_IDLE_EXIT_MS } });
    worker.unref();
    worker.once("exit", () => {
      if (this.#worker === worker) this.#worker = null;
    });
    worker.on("error", () => {});
    this.#worker = worker;
    return worker;
  }

  /** Stops checking and lets the thread close its connection and exit (after a checkpoint it is running). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    const worker = this.#worker;
    this.#worker = null;
    worker?.postMessage("close");
  }
}
