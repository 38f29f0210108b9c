/**
 * The paid-call flow (design.md "one paid-call flow"; invariants 2 and 4; D17): hold the quote, call the
 * upstream, then capture the final amount or release the hold. Every service that charges money goes
 * through this file; only the ledger below it writes rows.
 *
 * - {@link withHold} runs a synchronous call under a hold: the hold is released on every throw (a charge
 *   already captured is refunded), captured at most once and never above the hold, and the capture can
 *   share one transaction with the caller's own writes (a voice row, a job row).
 * - {@link PaidHold.stream} hands the hold over to a stream that settles after the call returned.
 * - {@link holdOrRefuse}, {@link settleCapture} and {@link settleRelease} are the same steps for
 *   asynchronous jobs, whose hold, capture and release happen in different transactions (submit, runner,
 *   sweep).
 */
import type { Transaction } from "kysely";
import { AppError, errors } from "../errors.ts";
import { UpstreamError } from "../upstreams/types.ts";
import { observeUpstream } from "../metrics.ts";
import type { Database } from "../storage/schema.ts";
import {
  captureHold,
  credit,
  type Executor,
  type Hold,
  InsufficientFundsError,
  inTransaction,
  placeHold,
  releaseHold,
  type Settlement,
} from "./ledger.ts";
import type { Micros } from "./money.ts";

/** What to hold: `amountMicros` (> 0, micro-USD) of the account's balance. */
export interface HoldRequest {
  accountId: string;
  amountMicros: Micros;
  /** Catalog model id (or another short label) written on the ledger entries. */
  reference?: string | null;
  /** Set when the call is (or becomes) a job: every entry of the hold carries it (D17). */
  jobId?: string | null;
}

/**
 * The 402 of the endpoint (D2): `insufficient_credits` for voice design and cloning, `billing_error` for
 * other audio and text calls, `insufficient_balance` for jobs.
 */
export type OnInsufficient = (err: InsufficientFundsError) => AppError;

/**
 * Places a hold, translating a balance that is too low into the endpoint's 402. Runs inside `db` when it
 * is a transaction, so a job row and its hold commit (or roll back) together.
 * @throws the AppError of `onInsufficient` (nothing written); database errors as they are.
 */
export async function holdOrRefuse(db: Executor, req: HoldRequest, onInsufficient: OnInsufficient): Promise<Hold> {
  try {
    return await placeHold(db, req);
  } catch (err) {
    if (err instanceof InsufficientFundsError) throw onInsufficient(err);
    throw err;
  }
}

/** Writes that must commit together with a capture (a voice row, a job row), in the capture's transaction. */
export type CaptureWrites = (trx: Transaction<Database>) => Promise<void>;

/**
 * Captures an open hold with `finalMicros` (0 <= final <= held) and runs `writes` in the same
 * transaction (the transaction of `db` when it is one): either both commit or neither does, and the hold
 * is then still open.
 * @throws Error when the hold is not open or smaller than `finalMicros`; whatever `writes` throws.
 */
export async function settleCapture(
  db: Executor,
  holdId: string,
  finalMicros: Micros,
  writes?: CaptureWrites,
): Promise<Settlement> {
  return inTransaction(db, async (trx) => {
    const settled = await captureHold(trx, holdId, finalMicros);
    if (writes) await writes(trx);
    return settled;
  });
}

/**
 * Releases a hold in full. Idempotent: null when it was already captured or released.
 * @throws database errors.
 */
export async function settleRelease(db: Executor, holdId: string): Promise<Settlement | null> {
  return releaseHold(db, holdId);
}

/** How a {@link PaidHold.stream} settles. */
export interface StreamSettlement {
  /**
   * For a hold still open when the stream starts: the final amount, micro-USD, asked for once the stream
   * ended normally (capped at the hold). Omit it when the hold was captured before the stream (then a
   * stream that breaks is refunded instead).
   */
  finalMicros?: () => Micros;
  /** Called once the stream's money is settled by a capture. */
  onCaptured?: (settled: Settlement) => void;
}

/**
 * A placed hold, settled exactly once by {@link PaidHold.capture}, {@link PaidHold.release} or a stream.
 * Amounts in micro-USD.
 */
export class PaidHold {
  readonly id: string;
  readonly accountId: string;
  /** The amount held: the most the call may cost. */
  readonly amountMicros: Micros;
  /** Balance right after the hold. */
  readonly balanceAfterMicros: Micros;
  readonly #db: Executor;
  readonly #reference: string | null;
  #state: "open" | "captured" | "released" | "refunded" = "open";
  #charged: Micros = 0;
  #streaming = false;

  constructor(db: Executor, hold: Hold, reference: string | null) {
    this.#db = db;
    this.#reference = reference;
    this.id = hold.id;
    this.accountId = hold.accountId;
    this.amountMicros = hold.amountMicros;
    this.balanceAfterMicros = hold.balanceAfterMicros;
  }

  /** `open` until settled; `refunded` after a captured charge was given back. */
  get state(): "open" | "captured" | "released" | "refunded" {
    return this.#state;
  }

  /** True once a stream took the hold over ({@link PaidHold.stream}). */
  get streaming(): boolean {
    return this.#streaming;
  }

  /**
   * Captures `min(finalMicros, hold)` and runs `writes` in the same transaction. When that transaction
   * fails the hold stays open (and {@link withHold} releases it).
   * @throws Error when the hold is no longer open; RangeError for a negative or fractional amount;
   *   whatever `writes` throws.
   */
  async capture(finalMicros: Micros, writes?: CaptureWrites): Promise<Settlement> {
    if (this.#state !== "open") throw new Error(`hold ${this.id} is already ${this.#state}`);
    const charged = Math.min(finalMicros, this.amountMicros);
    const settled = await settleCapture(this.#db, this.id, charged, writes);
    this.#state = "captured";
    this.#charged = charged;
    return settled;
  }

  /** Releases the hold if it is still open; otherwise does nothing. */
  async release(): Promise<void> {
    if (this.#state !== "open") return;
    await settleRelease(this.#db, this.id);
    this.#state = "released";
  }

  /**
   * Gives a captured charge back (ledger kind `refund`, carrying the hold id): the call failed after it
   * was charged (a stream that broke off). Does nothing unless the hold was captured with a charge.
   */
  async refund(): Promise<void> {
    if (this.#state !== "captured") return;
    this.#state = "refunded";
    if (this.#charged > 0) {
      await credit(this.#db, {
        accountId: this.accountId,
        kind: "refund",
        amountMicros: this.#charged,
        holdId: this.id,
        reference: this.#reference,
      });
    }
  }

  /**
   * Hands the hold over to a stream that outlives the call: yields `chunks` and settles when it ends.
   * With `finalMicros` (hold still open): a normal end captures the final amount, a break or an early
   * stop releases the hold. Without it (hold already captured): a break refunds the charge; an early
   * stop by the consumer keeps it (the audio was delivered until the client left). Iterate it once.
   */
  stream<C>(chunks: AsyncIterable<C>, settle: StreamSettlement = {}): AsyncGenerator<C> {
    this.#streaming = true;
    return this.#settleStream(chunks, settle);
  }

  async *#settleStream<C>(chunks: AsyncIterable<C>, settle: StreamSettlement): AsyncGenerator<C> {
    let ended = false;
    try {
      for await (const chunk of chunks) yield chunk;
      ended = true;
    } catch (err) {
      await this.release();
      await this.refund();
      throw err;
    } finally {
      if (ended && this.#state === "open" && settle.finalMicros) {
        const settled = await this.capture(settle.finalMicros());
        settle.onCaptured?.(settled);
      } else if (!ended) {
        // An early stop by the consumer: an open hold goes back; a captured one stays charged.
        await this.release();
      }
    }
  }
}

/**
 * Runs `run` under a hold of `req.amountMicros`: places the hold (a balance that is too low throws the
 * AppError of `onInsufficient`, the endpoint's 402 of D2), then runs the call, which must settle the
 * hold with {@link PaidHold.capture} or hand it to {@link PaidHold.stream}.
 *
 * Guarantees: whenever `run` throws, an open hold is released and a captured charge refunded before the
 * error propagates (invariant 4); a hold is captured at most once and never above its amount
 * (invariant 2); a `run` that returns without settling is a bug, reported as an Error after the hold was
 * released.
 * @throws AppError of `onInsufficient`; whatever `run` throws.
 */
export async function withHold<T>(
  db: Executor,
  req: HoldRequest,
  policy: { onInsufficient: OnInsufficient },
  run: (hold: PaidHold) => Promise<T>,
): Promise<T> {
  const hold = new PaidHold(db, await holdOrRefuse(db, req, policy.onInsufficient), req.reference ?? null);
  let out: T;
  try {
    out = await run(hold);
  } catch (err) {
    await giveBack(hold);
    throw err;
  }
  if (hold.state === "open" && !hold.streaming) {
    await giveBack(hold);
    throw new Error(`paid call on ${req.reference ?? "?"} returned without settling its hold`);
  }
  return out;
}

/**
 * Releases or refunds after a failure. A database error here is swallowed so the call's own error is
 * what the caller sees: the hold stays open and the sweep releases it (design.md invariant 4).
 */
async function giveBack(hold: PaidHold): Promise<void> {
  try {
    await hold.release();
    await hold.refund();
  } catch {
    // Left to the sweep of orphaned holds.
  }
}

/**
 * Calls an upstream with its metrics (`observeUpstream`); a failure becomes AppError 502
 * `provider_error` (with `message` when given), which {@link withHold} answers after releasing the hold;
 * except an AppError (the failover's 429 when every source is at its cap), rethrown as it is, and a voice
 * its source no longer has, 410 `voice_unavailable` (D27).
 */
export async function callUpstream<T>(model: string, call: () => Promise<T>, message?: string): Promise<T> {
  try {
    return await observeUpstream(model, call);
  } catch (err) {
    // Already the caller's answer: every source of the family at its max_concurrency (429, D28).
    if (err instanceof AppError) throw err;
    // The voice's source no longer has it (D27): 410, not a provider failure.
    if (err instanceof UpstreamError && err.voiceUnavailable) {
      const gone = errors.voiceUnavailable();
      (gone as Error).cause = err;
      throw gone;
    }
    // The upstream's own message stays on the server (the log line of the 502), never in the answer.
    const appErr = errors.provider(message);
    (appErr as Error).cause = err;
    throw appErr;
  }
}
