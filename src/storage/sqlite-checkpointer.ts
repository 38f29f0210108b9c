/**
 * WAL checkpoints off the event loop for the embedded SQLite database (issue "Fast on the scale path":
 * tail latency).
 *
 * SQLite's default automatic checkpoint runs inside the commit that crosses 1000 WAL pages: that commit
 * copies about 4 MB into the database file and syncs it twice, and on the one thread that serves every
 * request this stalled the event loop for 5-15 ms a few times a second under load. Here the connection of
 * the event loop never checkpoints (`wal_autocheckpoint = 0`); a worker thread with its own connection runs
 * `PRAGMA wal_checkpoint(PASSIVE)`, which never blocks writers or readers, when enough has been written.
 *
 * The thread starts on the first write-heavy period and exits after {@link THREAD_IDLE_EXIT_MS} without
 * work, so an idle gateway carries no second JavaScript heap.
 */
import { type StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

/** How often the written-row count is read, ms. */
const CHECK_EVERY_MS = 250;
/** Rows written since the last checkpoint (about 1000 WAL pages of the gateway's tables) that ask for one. */
const ROWS_PER_CHECKPOINT = 2000;
/** A checkpoint is also asked for this long after the last one whenever anything was written, ms. */
const CHECKPOINT_AT_LEAST_EVERY_MS = 5000;
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
 * Runs passive WAL checkpoints of the SQLite file at `path` on a worker thread. `totalChanges` is a
 * statement `select total_changes() as n` on the event loop's connection (rows it has written since it
 * opened). Call {@link close} before closing that connection.
 */
export class WalCheckpointer {
  readonly #path: string;
  readonly #totalChanges: StatementSync;
  readonly #timer: NodeJS.Timeout;
  #worker: Worker | null = null;
  #running = false;
  #changesAtLast = 0;
  #lastAt = performance.now();

  constructor(path: string, totalChanges: StatementSync) {
    this.#path = path;
    this.#totalChanges = totalChanges;
    this.#timer = setInterval(() => this.#check(), CHECK_EVERY_MS);
    this.#timer.unref();
  }

  #check(): void {
    if (this.#running) return;
    const changes = Number((this.#totalChanges.get() as { n: number }).n);
    const written = changes - this.#changesAtLast;
    if (written === 0) return;
    if (written < ROWS_PER_CHECKPOINT && performance.now() - this.#lastAt < CHECKPOINT_AT_LEAST_EVERY_MS) return;
    this.#changesAtLast = changes;
    this.#lastAt = performance.now();
    this.#running = true;
    const worker = this.#thread();
    worker.once("message", () => {
      this.#running = false;
    });
    worker.postMessage("checkpoint");
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path: this.#path, idleExitMs: THREAD_IDLE_EXIT_MS } });
    worker.unref();
    worker.once("exit", () => {
      if (this.#worker === worker) this.#worker = null;
      this.#running = false;
    });
    worker.on("error", () => {});
    this.#worker = worker;
    return worker;
  }

  /** Stops checking and lets the thread close its connection and exit (after a checkpoint it is running). */
  close(): void {
    clearInterval(this.#timer);
    const worker = this.#worker;
    this.#worker = null;
    worker?.postMessage("close");
  }
}
