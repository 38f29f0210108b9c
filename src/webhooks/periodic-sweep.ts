/**
 * A sweep run every few seconds by one process (the alert sweeps of balance-alerts.ts and
 * budget-alerts.ts): one run at a time (a tick during a run is skipped), a failed run logged and tried
 * again at the next tick, and `stop` waiting for the run in flight.
 */

/** Minimal logger. */
interface SweepLog {
  warn(obj: object, msg?: string): void;
}

/** Runs `run` every `everyMs` ms once started, never two at once; failures are logged as `what` failed. */
export class PeriodicSweep {
  readonly #run: () => Promise<unknown>;
  readonly #everyMs: number;
  readonly #log: SweepLog;
  readonly #what: string;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;

  constructor(run: () => Promise<unknown>, everyMs: number, log: SweepLog, what: string) {
    this.#run = run;
    this.#everyMs = everyMs;
    this.#log = log;
    this.#what = what;
  }

  /** Starts the ticks (the timer does not keep the process alive). */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = this.#run()
        .catch((err: unknown) => this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, `${this.#what} failed`))
        .finally(() => {
          this.#running = null;
        });
    }, this.#everyMs);
    this.#timer.unref();
  }

  /** Stops the ticks and waits for a run in flight. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}

/**
 * Accounts to check soon, off the caller's path (the alert checks after a ledger write): `add` queues an
 * account (once, however often it is added before its check) and the queue runs `check` on each, one at a
 * time, on a later turn of the event loop. `check` must not throw (it logs its own failures).
 */
export class CheckQueue {
  readonly #check: (accountId: string) => Promise<void>;
  readonly #due = new Set<string>();
  #flushing = false;

  constructor(check: (accountId: string) => Promise<void>) {
    this.#check = check;
  }

  /** Queues `accountId` for a check. */
  add(accountId: string): void {
    this.#due.add(accountId);
    if (!this.#flushing) {
      this.#flushing = true;
      setImmediate(() => void this.#flush());
    }
  }

  async #flush(): Promise<void> {
    try {
      while (this.#due.size > 0) {
        const ids = [...this.#due];
        this.#due.clear();
        for (const id of ids) await this.#check(id);
      }
    } finally {
      this.#flushing = false;
    }
  }
}
