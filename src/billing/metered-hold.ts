/**
 * The paid-call flow of a realtime socket (D42, D43; docs/architecture.md "Realtime sockets"): a socket is
 * one long paid call, held once and settled once, whose hold grows block by block while it is open.
 *
 * - {@link MeteredHold.open} places the hold of one block (the price of `REALTIME_HOLD_CHARS` characters,
 *   or of 60 s of audio), or what the balance and the key's spend limit still allow if less, at least the
 *   price of one unit; a balance below that is the endpoint's 402 before the socket opens.
 * - Before any unit (a character of text, a second of audio) beyond what is held goes upstream, the session
 *   {@link MeteredHold.reserve}s it: the hold is extended by another block in one atomic step that never
 *   overdraws and that the key's spend limit counts at once (ledger.ts `extendMeteredHold`); when the money
 *   is not there the reservation is refused and nothing is sent.
 * - A reserved unit is {@link MeteredHold.charge}d once the upstream delivered it, or
 *   {@link MeteredHold.unreserve}d when the upstream failed it (never a charge for a failed chunk).
 * - The running count is persisted with a heartbeat every `heartbeatMs` (and at every extension), so that a
 *   killed process loses at most that much metering and the sweep (ledger.ts `settleStaleMeteredHolds`)
 *   captures what was persisted and releases the rest.
 * - {@link MeteredHold.close} captures the price of every charged unit (rounded once, D7) and releases the
 *   rest, finishing the one usage record of the socket (`realtime: true`, its session length, contexts and
 *   close code) in the same transaction.
 *
 * Test-mode keys (D32) go through the same steps with no hold: their usage record is priced as usual and
 * no money moves.
 */
import { AppError, errors } from "../errors.ts";
import { formatUsd, type Micros } from "../money.ts";
import type { BalanceEvents } from "./balance-events.ts";
import {
  captureHold,
  type Executor,
  extendMeteredHold,
  getBalance,
  inTransaction,
  InsufficientFundsError,
  persistMetered,
  placeMeteredHold,
  releaseHold,
} from "./ledger.ts";
import { KeySpendLimitError } from "./key-spend.ts";
import { BudgetExceededError } from "./budgets.ts";
import { billingStep, budgetExceededError, keySpendLimitError, type OnInsufficient, type PaidCalls } from "./paid-call.ts";
import { finishUsage, insertUsage, unitColumns, type Units, type UsageStart, usageRow } from "./usage.ts";
import { endRealtimeUsage, markUsageRealtime } from "./usage.repository.ts";

/** How a socket's units are priced and held: a unit is a character (speech) or a second of audio (transcription). */
export interface MeterPricing {
  /** The price of `units` units, micro-USD, rounded once (D7): the catalog's quote. */
  price(units: number): Micros;
  /** Units one block holds (REALTIME_HOLD_CHARS characters; 60 s of audio). */
  blockUnits: number;
  /** The usage record's units for `units` units (`{characters}` or `{seconds}`). */
  usageUnits(units: number): Units;
}

/** A reservation the money does not cover: the socket's error message (D42) and nothing sent. */
export interface MeterRefusal {
  /** `insufficient_balance` (the balance), or `key_spend_limit` (D34). */
  code: "insufficient_balance" | "key_spend_limit" | "budget_exceeded";
  message: string;
}

/** What opens a metered hold. */
export interface MeteredHoldRequest {
  accountId: string;
  /** The catalog model id, the reference of the ledger entries and the usage record's model. */
  model: string;
  /** The socket's usage record (its request id is the upgrade request's); `mode: "test"` places no hold. */
  usage: UsageStart;
  pricing: MeterPricing;
  /** How often the running count and the heartbeat are persisted, ms (D42: at most 5 s). */
  heartbeatMs: number;
}

/** The end of a socket, as its usage record keeps it (D42). */
export interface MeterEnd {
  /** The WebSocket close code the socket ends with. */
  closeCode: number;
  /** Speech contexts used (null for transcription). */
  contexts: number | null;
  /** Units measured beyond the charged ones (none today), merged into the usage record's units. */
  units?: Units;
  /** 1 when a later source of the family served the socket (D27), else 0. */
  fallbackLayer?: number;
}

/** A settled socket: what it cost and the balance after, micro-USD (in test mode the live balance, unchanged). */
export interface MeterSettlement {
  units: number;
  costMicros: Micros;
  balanceMicros: Micros;
}

/** Dependencies of a metered hold: the database, the gateway's paid calls (drained at shutdown), its balance listeners. */
export interface MeterDeps {
  db: Executor;
  paidCalls: PaidCalls;
  events?: BalanceEvents | null;
  /** Where a failed persist is reported (never thrown: the socket goes on). */
  onPersistError?: (err: unknown) => void;
}

/**
 * The one hold of a realtime socket (see the module comment). Units are whole characters or seconds;
 * amounts micro-USD. Every method that touches money runs one at a time (a socket's contexts may call
 * {@link MeteredHold.reserve} together).
 */
export class MeteredHold {
  /** The ledger hold, or null in test mode. */
  readonly holdId: string | null;
  readonly accountId: string;
  readonly requestId: string;
  readonly testMode: boolean;
  readonly model: string;
  readonly #deps: MeterDeps;
  readonly #pricing: MeterPricing;
  readonly #openedAt = Date.now();
  #heldMicros: Micros;
  #charged = 0;
  #reserved = 0;
  #persistedUnits = 0;
  #state: "open" | "closing" | "closed" = "open";
  #queue: Promise<unknown> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #settlement: Promise<MeterSettlement> | null = null;

  private constructor(deps: MeterDeps, req: MeteredHoldRequest, holdId: string | null, heldMicros: Micros) {
    this.#deps = deps;
    this.#pricing = req.pricing;
    this.holdId = holdId;
    this.accountId = req.accountId;
    this.requestId = req.usage.requestId;
    this.testMode = req.usage.mode === "test";
    this.model = req.model;
    this.#heldMicros = heldMicros;
    deps.paidCalls.track(this);
    if (holdId !== null) {
      this.#timer = setInterval(() => void this.#enqueue(() => this.#persist()), Math.max(50, req.heartbeatMs));
      this.#timer.unref();
    }
  }

  /**
   * Opens the socket's hold (see the module comment).
   * @throws the AppError of `onInsufficient` (the endpoint's 402) when the balance is below one unit's
   *   price, AppError 402 `key_spend_limit` when the key's limit leaves less (D34); nothing written.
   */
  static async open(deps: MeterDeps, req: MeteredHoldRequest, onInsufficient: OnInsufficient): Promise<MeteredHold> {
    const block = Math.max(1, req.pricing.price(req.pricing.blockUnits));
    const unit = Math.max(1, req.pricing.price(1));
    if (req.usage.mode === "test") {
      // D32: no hold, the balance gates nothing; the record is written as for a live socket.
      const now = Date.now();
      await inTransaction(deps.db, async (trx) => {
        await insertUsage(trx, usageRow(req.usage, { accountId: req.accountId, amountMicros: block, model: req.model }, now));
        await markUsageRealtime(trx, req.usage.requestId);
      });
      return new MeteredHold(deps, req, null, block);
    }
    try {
      const hold = await billingStep("hold", () =>
        placeMeteredHold(deps.db, { accountId: req.accountId, amountMicros: block, minMicros: unit, reference: req.model, usage: req.usage }, Date.now(), deps.events ?? null),
      );
      return new MeteredHold(deps, req, hold.id, hold.amountMicros);
    } catch (err) {
      if (err instanceof InsufficientFundsError) throw onInsufficient(err);
      if (err instanceof KeySpendLimitError) throw keySpendLimitError(err);
      if (err instanceof BudgetExceededError) throw budgetExceededError(err);
      throw err;
    }
  }

  /** Units charged so far (delivered by the upstream). */
  get chargedUnits(): number {
    return this.#charged;
  }

  /** What the hold holds now, micro-USD (in test mode what it would hold). */
  get heldMicros(): Micros {
    return this.#heldMicros;
  }

  /** The price of the units charged so far, micro-USD. */
  get chargedMicros(): Micros {
    return this.#pricing.price(this.#charged);
  }

  /** Runs `fn` after every money step queued before it (one at a time). */
  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Reserves `units` more (> 0) before they are sent upstream: covered by the hold as it is, or after
   * extending it by a block (or by what the balance allows, at least what these units need). Returns null
   * when reserved, or the refusal (nothing reserved) when the money is not there.
   * @throws Error when the hold is closed or was settled by the sweep; database errors.
   */
  reserve(units: number): Promise<MeterRefusal | null> {
    if (!Number.isSafeInteger(units) || units <= 0) return Promise.reject(new RangeError(`units must be a positive integer, got ${units}`));
    return this.#enqueue(async () => {
      if (this.#state !== "open") throw new Error("the socket's hold is closed");
      const needTotal = this.#pricing.price(this.#charged + this.#reserved + units);
      if (needTotal <= this.#heldMicros || this.testMode) {
        if (this.testMode && needTotal > this.#heldMicros) this.#heldMicros += Math.max(needTotal - this.#heldMicros, this.#pricing.price(this.#pricing.blockUnits));
        this.#reserved += units;
        return null;
      }
      const need = needTotal - this.#heldMicros;
      const want = Math.max(need, this.#pricing.price(this.#pricing.blockUnits));
      // The count persisted with the extension: the charges made meanwhile go with the next heartbeat.
      const charged = this.#charged;
      try {
        const ext = await billingStep("hold", () =>
          extendMeteredHold(
            this.#deps.db,
            this.holdId!,
            { wantMicros: want, minMicros: need, meteredMicros: this.#pricing.price(charged), units: unitColumns(this.#pricing.usageUnits(charged)) },
            Date.now(),
            this.#deps.events ?? null,
          ),
        );
        this.#heldMicros = ext.amountMicros;
        this.#persistedUnits = charged;
      } catch (err) {
        if (err instanceof InsufficientFundsError) {
          return {
            code: "insufficient_balance",
            message: `The balance left after what this and other calls hold (${formatUsd(err.balanceMicros ?? 0)} USD) cannot pay for the next ${units} ${units === 1 ? "unit" : "units"} of this session; what was paid for has been delivered. Top up to continue.`,
          };
        }
        if (err instanceof KeySpendLimitError) {
          return { code: "key_spend_limit", message: `This API key's spend limit leaves too little for the next ${units} units of this session; what was paid for has been delivered.` };
        }
        if (err instanceof BudgetExceededError) {
          return { code: "budget_exceeded", message: `Budget ${err.budgetId} leaves too little for the next ${units} units of this session; what was paid for has been delivered.` };
        }
        throw err;
      }
      this.#reserved += units;
      return null;
    });
  }

  /** Gives back `units` reserved for text or audio the upstream failed: they will not be charged. */
  unreserve(units: number): void {
    this.#reserved = Math.max(0, this.#reserved - units);
  }

  /** Charges `units` reserved before, now that the upstream delivered them (persisted with the next heartbeat). */
  charge(units: number): void {
    const n = Math.min(units, this.#reserved);
    this.#reserved -= n;
    this.#charged += n;
  }

  /** Persists the running count and the heartbeat now (ledger.ts `persistMetered`); errors go to `onPersistError`. */
  async #persist(): Promise<void> {
    if (this.#state !== "open" || this.holdId === null) return;
    const charged = this.#charged;
    try {
      const usage = charged !== this.#persistedUnits ? { requestId: this.requestId, units: unitColumns(this.#pricing.usageUnits(charged)) } : null;
      await persistMetered(this.#deps.db, this.holdId, this.#pricing.price(charged), usage);
      this.#persistedUnits = charged;
    } catch (err) {
      this.#deps.onPersistError?.(err);
    }
  }

  /** Persists the running count now (the heartbeat does it every `heartbeatMs` by itself). */
  persist(): Promise<void> {
    return this.#enqueue(() => this.#persist());
  }

  /**
   * Settles the socket once (later calls return the same settlement): captures the price of the charged
   * units (at most the hold) and releases the rest, finishing the usage record `succeeded` (`failed`, cost 0,
   * when nothing was charged) with the session's length, contexts and close code. Units still reserved are
   * not charged (their audio never came back).
   * @throws database errors (the hold then stays open for the sweep, which captures the persisted count).
   */
  close(end: MeterEnd): Promise<MeterSettlement> {
    this.#settlement ??= this.#enqueue(async () => {
      this.#state = "closing";
      if (this.#timer !== null) clearInterval(this.#timer);
      this.#reserved = 0;
      const units = this.#charged;
      const cost = Math.min(this.#pricing.price(units), this.#heldMicros);
      const status = units > 0 ? ("succeeded" as const) : ("failed" as const);
      const usageEnd = { status, units: { ...this.#pricing.usageUnits(units), ...end.units }, fallbackLayer: end.fallbackLayer };
      const realtime = { sessionMs: Date.now() - this.#openedAt, contexts: end.contexts, closeCode: end.closeCode };
      try {
        let balance: Micros;
        if (this.holdId === null) {
          balance = await inTransaction(this.#deps.db, async (trx) => {
            await finishUsage(trx, this.requestId, { ...usageEnd, costMicros: cost });
            await endRealtimeUsage(trx, this.requestId, realtime);
            return (await getBalance(trx, this.accountId)) ?? 0;
          });
        } else {
          const holdId = this.holdId;
          balance = await billingStep(units > 0 ? "capture" : "release", () =>
            inTransaction(this.#deps.db, async (trx) => {
              let after: Micros;
              if (units > 0) after = (await captureHold(trx, holdId, cost, usageEnd)).balanceAfterMicros;
              else {
                const released = await releaseHold(trx, holdId, usageEnd);
                if (released === null) throw new Error(`hold ${holdId} is no longer open`);
                after = released.balanceAfterMicros;
              }
              await endRealtimeUsage(trx, this.requestId, realtime);
              return after;
            }),
          );
        }
        this.#state = "closed";
        return { units, costMicros: cost, balanceMicros: balance };
      } finally {
        this.#deps.paidCalls.settled(this);
      }
    });
    return this.#settlement;
  }
}

/** The 402 a socket answers before it opens when the balance is below one unit's price (D42: `billing_error`). */
export function realtimeInsufficient(what: string): OnInsufficient {
  return (err) => errors.billing(`The balance (${formatUsd(err.balanceMicros ?? 0)} USD) is below the price of one ${what}; top up to open a realtime session.`);
}

/** Whether `err` is the AppError of a refused socket opening (402, 403, 429 ...), answered before the upgrade. */
export function isRefusal(err: unknown): err is AppError {
  return err instanceof AppError && err.status < 500;
}
