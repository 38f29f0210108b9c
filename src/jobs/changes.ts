/**
 * Process-local notice of job changes (D30): whoever changes a job row in this process (the runner when
 * it claims, reports progress, hands back or ends a job; a cancel; the sweep) announces it here after the
 * change committed, so event streams and `Prefer: wait` answers of this process react at once instead of
 * at their next poll. Changes made by other processes are not seen here: the watchers poll the row as well
 * (watch.ts), so several processes still work, only with the poll's delay.
 *
 * One feed per gateway: an instance ({@link createJobChangeFeed}) that the gateway's services create once
 * and hand to its runner, its sweep, its cancels and its watchers, so two gateways in one process never
 * hear each other's changes.
 */
import { EventEmitter } from "node:events";

/** One committed change of a job row. */
export interface JobChange {
  accountId: string;
  jobId: string;
  /** True when the job reached a terminal status (`succeeded`, `failed`, `refunded`, `expired`). */
  ended: boolean;
  /** The runner (`JobRunner.workerId`) that made the change, or null (a cancel, the sweep). */
  by: string | null;
}

/** Listener of {@link JobChangeFeed}. */
export type JobChangeListener = (change: JobChange) => void;

/**
 * The feed: `publish` after a commit, `subscribe` for an account's changes (a job's queue position moves
 * when another job of the account starts or ends) or `subscribeAll` (the runner, to drop the work of jobs
 * ended elsewhere). Listeners run synchronously and must not throw.
 */
export class JobChangeFeed {
  readonly #emitter = new EventEmitter();

  constructor() {
    // Every open event stream and waiting request of an account listens: no leak warning for many.
    this.#emitter.setMaxListeners(0);
  }

  /** Announces a committed change of `change.jobId`. */
  publish(change: JobChange): void {
    this.#emitter.emit(`a:${change.accountId}`, change);
    this.#emitter.emit("*", change);
  }

  /** Calls `fn` for every change of a job of `accountId`; returns the unsubscribe function. */
  subscribe(accountId: string, fn: JobChangeListener): () => void {
    const key = `a:${accountId}`;
    this.#emitter.on(key, fn);
    return () => this.#emitter.off(key, fn);
  }

  /** Calls `fn` for every change; returns the unsubscribe function. */
  subscribeAll(fn: JobChangeListener): () => void {
    this.#emitter.on("*", fn);
    return () => this.#emitter.off("*", fn);
  }
}

/** A new, empty feed: one per gateway (its services hold it). */
export function createJobChangeFeed(): JobChangeFeed {
  return new JobChangeFeed();
}
