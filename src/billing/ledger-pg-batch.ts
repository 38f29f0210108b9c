/**
 * Group commit for the PostgreSQL ledger (issue 14): holds, captures and releases made outside a
 * transaction are queued, and one statement (one round trip, one commit) serves every call queued
 * while the previous statement was in flight, for any number of accounts.
 *
 * Why: each single statement of billing/ledger-pg.repository.ts locks its account's row until its own commit, so
 * one busy account served at most one ledger write per commit (about 450 paid calls/s), and every call
 * paid a socket round trip of its own. A batch locks each account once for all of its calls.
 *
 * Two lanes, each with at most one statement in flight: holds, and settlements (captures and
 * releases). A call waits for the end of the current event-loop turn (`setImmediate`, so the other
 * requests of this turn join it) or for the lane's statement in flight; then the lane takes up to
 * {@link LEDGER_BATCH_MAX} queued calls. A lone call runs the single statement of billing/ledger-pg.repository.ts.
 *
 * Each call's result is the one it would get alone in queue order (the money invariants of docs/architecture.md):
 * - holds of one account are applied in queue order; the longest prefix whose running sum the balance
 *   covers is placed; the next one does not fit after the holds placed before it, so it is refused, and
 *   so is every following one larger than what remains, up to the first one that would fit: that one and
 *   the rest of the account's holds go back to the front of the queue for the next statement (their
 *   outcome depends on which of them are placed, which a window sum cannot say). Each statement decides
 *   at least one hold per account, so requeued holds always finish;
 * - a capture or release of a hold that is not open (or a capture above the hold) fails for that call
 *   only; two settlements of the same hold never share a statement (the second waits for the next one).
 * - ledger entries are inserted in account and queue order, so their `seq` order is the order of the
 *   balances they carry (D17), and the sum of an account's entries stays its balance.
 * A batch statement that fails (a constraint, a lost connection) commits nothing: its calls then run one
 * by one with the single statements, each getting its own result or error. No call is answered before
 * the statement that wrote it returned, that is committed.
 *
 * Deadlocks: a batch locks its accounts in id order (`for update` in a materialized CTE) before
 * updating them, and a settlement batch locks its holds before its accounts, as the single statements
 * do; two batches (of this or another process) that share accounts therefore queue, they never wait on
 * each other in a cycle.
 */
import type { Kysely } from "kysely";
import type { Database } from "../storage/schema.ts";
import { batchHolds, batchSettlements, type HoldRow, type PgSettleArgs, type SettleRow } from "./ledger-pg-batch.repository.ts";
import { getBalance } from "./ledger.repository.ts";
import { type PgHoldArgs, pgCaptureHold, pgPlaceHold, pgReleaseHold } from "./ledger-pg.repository.ts";

export type { PgSettleArgs } from "./ledger-pg-batch.repository.ts";

/** At most this many calls share one batch statement. */
export const LEDGER_BATCH_MAX = 100;


/** The outcome of a hold: placed (balance after it), or refused (the balance it did not fit, null without account). */
export type PgHoldOutcome = { placed: true; balance: number } | { placed: false; balance: number | null };

/** The balance after a settlement and the entries it wrote, or null when the hold was not open (nothing written). */
export type PgSettleOutcome = { balance: number; entries: { kind: string; amount: number }[] } | null;

interface Call<A, R> {
  args: A;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

/** Counts of a batcher's work (tests and benchmarks read them). */
export interface LedgerBatchStats {
  /** Statements run by the lanes (batch statements, single statements and fallbacks). */
  statements: number;
  /** Batch statements of two calls or more. */
  batches: number;
  /** Calls served by batch statements. */
  batchedCalls: number;
  /** Holds sent back to the queue by a batch (their outcome depended on holds before them). */
  requeued: number;
  /** Batch statements that failed and whose calls ran one by one. */
  fallbacks: number;
}

/**
 * One queue with at most one statement in flight. `run` serves a batch (of one call or more) and
 * returns the calls to put back at the front of the queue; it settles every other call itself.
 */
class Lane<A, R> {
  readonly #queue: Call<A, R>[] = [];
  #active = false;
  readonly #run: (calls: Call<A, R>[]) => Promise<Call<A, R>[]>;
  readonly #take: (queue: Call<A, R>[]) => Call<A, R>[];

  constructor(run: (calls: Call<A, R>[]) => Promise<Call<A, R>[]>, take: (queue: Call<A, R>[]) => Call<A, R>[]) {
    this.#run = run;
    this.#take = take;
  }

  push(args: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ args, resolve, reject });
      if (!this.#active) {
        this.#active = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  /** Runs statements until the queue is empty; calls queued meanwhile wait for the one in flight. */
  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const calls = this.#take(this.#queue);
        let again: Call<A, R>[];
        try {
          again = await this.#run(calls);
        } catch (err) {
          // `run` settles its calls; this is a bug guard so that no caller waits forever.
          for (const c of calls) c.reject(err);
          again = [];
        }
        this.#queue.unshift(...again);
      }
    } finally {
      this.#active = false;
    }
  }
}

/** The first {@link LEDGER_BATCH_MAX} calls of the queue, removed from it. */
function takeFirst<A, R>(queue: Call<A, R>[]): Call<A, R>[] {
  return queue.splice(0, LEDGER_BATCH_MAX);
}

/**
 * Up to {@link LEDGER_BATCH_MAX} calls of the queue, removed from it, at most one per hold: a second
 * settlement of a hold stays queued (in place) for the next statement, where it sees the first one's
 * outcome, as it would alone.
 */
function takeDistinctHolds<R>(queue: Call<PgSettleArgs, R>[]): Call<PgSettleArgs, R>[] {
  const taken: Call<PgSettleArgs, R>[] = [];
  const seen = new Set<string>();
  let kept = 0;
  for (const c of queue) {
    if (taken.length < LEDGER_BATCH_MAX && !seen.has(c.args.holdId)) {
      seen.add(c.args.holdId);
      taken.push(c);
    } else {
      queue[kept++] = c;
    }
  }
  queue.length = kept;
  return taken;
}

/** Runs `fn` and hands its result or error to the call. */
async function settle<A, R>(call: Call<A, R>, fn: () => Promise<R>): Promise<void> {
  try {
    call.resolve(await fn());
  } catch (err) {
    call.reject(err);
  }
}

/** The queues of one database (one Kysely instance). */
export class PgLedgerBatcher {
  readonly #db: Kysely<Database>;
  readonly stats: LedgerBatchStats = { statements: 0, batches: 0, batchedCalls: 0, requeued: 0, fallbacks: 0 };
  readonly #holds: Lane<PgHoldArgs, PgHoldOutcome>;
  readonly #settlements: Lane<PgSettleArgs, PgSettleOutcome>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
    this.#holds = new Lane((calls) => this.#runHolds(calls), takeFirst);
    this.#settlements = new Lane((calls) => this.#runSettlements(calls), takeDistinctHolds);
  }

  /** Queues a hold (see {@link pgPlaceHold}). */
  placeHold(args: PgHoldArgs): Promise<PgHoldOutcome> {
    return this.#holds.push(args);
  }

  /** Queues a capture (`final` micro-USD) or, with `final` null, a release (see {@link pgCaptureHold}, {@link pgReleaseHold}). */
  settle(args: PgSettleArgs): Promise<PgSettleOutcome> {
    return this.#settlements.push(args);
  }

  async #singleHold(a: PgHoldArgs): Promise<PgHoldOutcome> {
    this.stats.statements++;
    const balance = await pgPlaceHold(this.#db, a);
    if (balance !== null) return { placed: true, balance };
    return { placed: false, balance: await getBalance(this.#db, a.accountId) };
  }

  async #singleSettle(a: PgSettleArgs): Promise<PgSettleOutcome> {
    this.stats.statements++;
    if (a.final !== null) return pgCaptureHold(this.#db, { holdId: a.holdId, final: a.final, now: a.now, usage: a.usage });
    const released = await pgReleaseHold(this.#db, { holdId: a.holdId, now: a.now, usage: a.usage });
    return released && { balance: released.balance, entries: [{ kind: "hold_release", amount: released.amount }] };
  }

  /** Serves `calls` with one statement; on a failure of that statement, one by one. */
  async #runHolds(calls: Call<PgHoldArgs, PgHoldOutcome>[]): Promise<Call<PgHoldArgs, PgHoldOutcome>[]> {
    const [first] = calls;
    if (calls.length === 1 && first) {
      await settle(first, () => this.#singleHold(first.args));
      return [];
    }
    let rows: HoldRow[];
    try {
      this.stats.statements++;
      rows = await batchHolds(this.#db, calls.map((c) => c.args));
    } catch {
      // Nothing of the statement committed: each call gets its own statement and its own error.
      this.stats.fallbacks++;
      for (const c of calls) await settle(c, () => this.#singleHold(c.args));
      return [];
    }
    this.stats.batches++;
    const byOrd = new Map(rows.map((r) => [Number(r.ord), r]));
    const again: Call<PgHoldArgs, PgHoldOutcome>[] = [];
    calls.forEach((c, i) => {
      const r = byOrd.get(i + 1);
      if (!r) c.resolve({ placed: false, balance: null }); // no such account
      else if (r.placed) c.resolve({ placed: true, balance: Number(r.balance) });
      else if (r.refused) c.resolve({ placed: false, balance: Number(r.balance) });
      else again.push(c);
    });
    this.stats.batchedCalls += calls.length - again.length;
    this.stats.requeued += again.length;
    return again;
  }

  async #runSettlements(calls: Call<PgSettleArgs, PgSettleOutcome>[]): Promise<Call<PgSettleArgs, PgSettleOutcome>[]> {
    const [first] = calls;
    if (calls.length === 1 && first) {
      await settle(first, () => this.#singleSettle(first.args));
      return [];
    }
    let rows: SettleRow[];
    try {
      this.stats.statements++;
      rows = await batchSettlements(this.#db, calls.map((c) => c.args));
    } catch {
      this.stats.fallbacks++;
      for (const c of calls) await settle(c, () => this.#singleSettle(c.args));
      return [];
    }
    this.stats.batches++;
    this.stats.batchedCalls += calls.length;
    const byOrd = new Map(rows.map((r) => [Number(r.ord), r]));
    calls.forEach((c, i) => {
      const r = byOrd.get(i + 1);
      if (!r) return c.resolve(null);
      const amount = Number(r.amount_micros);
      const final = c.args.final;
      const entries = [{ kind: "hold_release", amount }];
      if (final !== null && final > 0) entries.push({ kind: "charge", amount: -final });
      c.resolve({ balance: Number(r.balance), entries });
    });
    return [];
  }
}

const batchers = new WeakMap<Kysely<Database>, PgLedgerBatcher>();

/** The batcher of `db` (one per Kysely instance, made on first use). */
export function pgLedgerBatcher(db: Kysely<Database>): PgLedgerBatcher {
  let b = batchers.get(db);
  if (!b) {
    b = new PgLedgerBatcher(db);
    batchers.set(db, b);
  }
  return b;
}
