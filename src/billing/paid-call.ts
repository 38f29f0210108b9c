/**
 * The paid-call flow (docs/architecture.md "one paid-call flow"; invariants 2 and 4; D17): hold the quote, call the
 * upstream, then capture the final amount or release the hold. Every service that charges money goes
 * through this file; only the ledger below it writes rows.
 *
 * - {@link PaidCalls.withHold} runs a synchronous call under a hold: the hold is released on every throw (a charge
 *   already captured is refunded), captured at most once and never above the hold, and the capture can
 *   share one transaction with the caller's own writes (a voice row, a job row).
 * - {@link PaidHold.stream} hands the hold over to a stream that settles after the call returned.
 * - {@link holdOrRefuse}, {@link settleCapture} and {@link settleRelease} are the same steps for
 *   asynchronous jobs, whose hold, capture and release happen in different transactions (submit, runner,
 *   sweep).
 *
 * The usage log (D29) rides on the same steps: a hold request with `usage` inserts the call's usage record
 * with the hold, and every capture, release or refund of a {@link PaidHold} finishes it in the same
 * transaction (the same statement on PostgreSQL), so usage and ledger agree. A test-mode call (D32,
 * `usage.mode` `test`) goes through the same flow with no hold and no ledger entry: only its usage record
 * is written, the balance is neither checked nor moved.
 */
import type { Transaction } from "kysely";
import { AppError, errors } from "../errors.ts";
import { modelNotFoundMessage } from "../upstreams/sync-failover.ts";
import { UpstreamError } from "../upstreams/types.ts";
import { observeBilling, observeUpstream } from "../metrics.ts";
import { annotateRequest, currentScope, inSpan, runInScope, type TraceScope } from "../observability/tracing.ts";
import type { Database } from "../storage/schema.ts";
import {
  captureHold,
  credit,
  type Executor,
  getBalance,
  type Hold,
  type PlacedHold,
  InsufficientFundsError,
  inTransaction,
  placeHoldAhead,
  releaseHold,
  type Settlement,
} from "./ledger.ts";
import type { BalanceEvents } from "./balance-events.ts";
import { KeySpendLimitError } from "./key-spend.ts";
import { BudgetExceededError } from "./budgets.ts";
import { formatUsd, type Micros } from "../money.ts";
import { finishUsage, insertUsage, type Units, type UsageEnd, type UsageStart, usageRow } from "./usage.ts";

/** What a service needs to make paid calls: the database and the gateway's {@link PaidCalls}. */
export interface PaidCallDeps {
  db: Executor;
  paidCalls: PaidCalls;
}

/** What to hold: `amountMicros` (> 0, micro-USD) of the account's balance. */
export interface HoldRequest {
  accountId: string;
  amountMicros: Micros;
  /** Catalog model id (or another short label) written on the ledger entries; the usage record's `model`. */
  reference?: string | null;
  /** Set when the call is (or becomes) a job: every entry of the hold carries it (D17). */
  jobId?: string | null;
  /**
   * The call's usage record (D29), written with the hold; its request id is carried by the hold's ledger
   * entries. With `mode: "test"` (D32) no hold is placed at all.
   */
  usage?: UsageStart | null;
}

/**
 * The 402 of the endpoint (D2): `insufficient_credits` for voice design and cloning, `billing_error` for
 * other audio and text calls, `insufficient_balance` for jobs.
 */
export type OnInsufficient = (err: InsufficientFundsError) => AppError;

/**
 * Places a hold, translating a balance that is too low into the endpoint's 402. Runs inside `db` when it
 * is a transaction, so a job row and its hold commit (or roll back) together. A test-mode request (D32)
 * places no hold: it writes only its usage record and returns null. With `events` (the gateway's), a hold
 * placed outside a transaction is told to its balance listeners (balance-events.ts). Outside a transaction
 * on SQLite it may return before its commit (ledger.ts `placeHoldAhead`): await its `committed` before
 * answering the caller.
 * @throws the AppError of `onInsufficient` (nothing written); AppError 402 `key_spend_limit` when the hold
 *   would take the key past its spend limit (D34; nothing written); database errors as they are.
 */
export async function holdOrRefuse(db: Executor, req: HoldRequest & { usage?: null }, onInsufficient: OnInsufficient, events?: BalanceEvents | null): Promise<PlacedHold>;
export async function holdOrRefuse(db: Executor, req: HoldRequest, onInsufficient: OnInsufficient, events?: BalanceEvents | null): Promise<PlacedHold | null>;
export async function holdOrRefuse(db: Executor, req: HoldRequest, onInsufficient: OnInsufficient, events?: BalanceEvents | null): Promise<PlacedHold | null> {
  if (req.usage?.mode === "test") {
    await insertUsage(db, testRow(req, req.usage));
    return null;
  }
  try {
    // A synchronous call's hold goes on without waiting for its commit (ledger.ts placeHoldAhead).
    const hold = await billingStep("hold", () => placeHoldAhead(db, req, events));
    annotateRequest({ "gw.hold_usd": hold.amountMicros / 1_000_000 });
    return hold;
  } catch (err) {
    if (err instanceof InsufficientFundsError) throw onInsufficient(err);
    if (err instanceof KeySpendLimitError) throw keySpendLimitError(err);
    if (err instanceof BudgetExceededError) throw budgetExceededError(err);
    throw err;
  }
}

/**
 * Runs one billing step: timed into `gateway_billing_duration_seconds` and, when the work is traced, in a
 * `billing.{step}` span of its request or job (D40). Also the steps of a realtime socket's hold (metered-hold.ts).
 */
export function billingStep<T>(step: "hold" | "capture" | "release", fn: () => Promise<T>): Promise<T> {
  return observeBilling(step, () => inSpan(`billing.${step}`, {}, fn));
}

/** Runs `fn` inside `scope` (a hold's, for a stream settling after its request's handler returned); `fn()` without one. */
function inScopeOf<T>(scope: TraceScope | undefined, fn: () => T): T {
  return scope === undefined ? fn() : runInScope(scope, fn);
}

/** The 402 `key_spend_limit` of D34, naming the limit, its period and what is left of it. */
export function keySpendLimitError(err: KeySpendLimitError): AppError {
  const left = Math.max(0, err.limitMicros - err.spentMicros);
  const per = err.period === "total" ? "in total" : `per ${err.period}`;
  return errors.keySpendLimit(
    `This call holds ${formatUsd(err.neededMicros)} USD, more than the ${formatUsd(left)} USD left of this API key's spend limit of ${formatUsd(err.limitMicros)} USD ${per}.`,
  );
}

/** The 402 `budget_exceeded` of D44 (`param` = the budget id), naming the budget and what is left of it. */
export function budgetExceededError(err: BudgetExceededError): AppError {
  const left = Math.max(0, err.amountMicros - err.spentMicros);
  return errors.budgetExceeded(
    `This call holds ${formatUsd(err.neededMicros)} USD, more than the ${formatUsd(left)} USD left of budget ${err.budgetId} (${formatUsd(err.amountMicros)} USD in its current window).`,
    err.budgetId,
  );
}

/** The usage record of a test-mode call: what would have been held, no hold. */
function testRow(req: HoldRequest, usage: UsageStart) {
  return usageRow(usage, { accountId: req.accountId, amountMicros: req.amountMicros, jobId: req.jobId, model: req.reference ?? "" }, Date.now());
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
  usage?: Omit<UsageEnd, "costMicros"> | null,
): Promise<Settlement> {
  const settled = await billingStep("capture", () => {
    // Without writes the capture is one statement on PostgreSQL (billing/ledger-pg.repository.ts): no transaction
    // around it, so a synchronous call settles in a single round trip.
    if (!writes) return captureHold(db, holdId, finalMicros, usage);
    return inTransaction(db, async (trx) => {
      const out = await captureHold(trx, holdId, finalMicros, usage);
      await writes(trx);
      return out;
    });
  });
  annotateRequest({ "gw.cost_usd": settled.chargedMicros / 1_000_000 });
  return settled;
}

/**
 * Releases a hold in full. Idempotent: null when it was already captured or released.
 * @throws database errors.
 */
export async function settleRelease(db: Executor, holdId: string): Promise<Settlement | null> {
  return billingStep("release", () => releaseHold(db, holdId));
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
 * Amounts in micro-USD. A test-mode hold (D32) has no ledger hold (`id` null): its settlements only
 * finish the usage record, and the balances it reports are the live balance, unchanged.
 */
export class PaidHold {
  /** The ledger hold, or null in test mode. */
  readonly id: string | null;
  readonly accountId: string;
  /** The amount held (in test mode: that would have been held): the most the call may cost. */
  readonly amountMicros: Micros;
  /** Balance right after the hold (in test mode: the live balance). */
  readonly balanceAfterMicros: Micros;
  /** The request id of the call's usage record (D29), or null when the call writes none. */
  readonly requestId: string | null;
  /** Whether this is a test-mode call (D32): no money moves. */
  readonly testMode: boolean;
  readonly #db: Executor;
  readonly #calls: PaidCalls;
  readonly #reference: string | null;
  #state: "open" | "captured" | "released" | "refunded" = "open";
  #charged: Micros = 0;
  #streaming = false;
  #note: { units?: Units; fallbackLayer?: number } = {};
  /** The trace scope the hold was placed in (D40): a stream settles in it after its handler returned. */
  readonly #scope: TraceScope | undefined = currentScope();

  /** Made by {@link PaidCalls.withHold}, which counts it in `calls` until it is settled. */
  constructor(
    db: Executor,
    calls: PaidCalls,
    hold: Hold | { id: null; accountId: string; amountMicros: Micros; balanceAfterMicros: Micros },
    reference: string | null,
    usage: { requestId: string; testMode: boolean } | null = null,
  ) {
    this.#db = db;
    this.#calls = calls;
    this.#reference = reference;
    this.id = hold.id;
    this.accountId = hold.accountId;
    this.amountMicros = hold.amountMicros;
    this.balanceAfterMicros = hold.balanceAfterMicros;
    this.requestId = usage?.requestId ?? null;
    this.testMode = usage?.testMode ?? false;
    calls.track(this);
  }

  /**
   * Notes what the call measured for its usage record (D29): units known only after the upstream answered
   * (tokens, a clip's length) and the fallback layer that served it. Written by the settlement.
   */
  note(fields: { units?: Units; fallbackLayer?: number }): void {
    this.#note = {
      units: { ...this.#note.units, ...fields.units },
      fallbackLayer: fields.fallbackLayer ?? this.#note.fallbackLayer,
    };
  }

  /** The usage fields of a settlement with `status`. */
  #end(status: UsageEnd["status"]): Omit<UsageEnd, "costMicros"> | null {
    return this.requestId === null ? null : { status, ...this.#note };
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
   * fails the hold stays open (and {@link PaidCalls.withHold} releases it).
   * @throws Error when the hold is no longer open; RangeError for a negative or fractional amount;
   *   whatever `writes` throws.
   */
  async capture(finalMicros: Micros, writes?: CaptureWrites): Promise<Settlement> {
    if (this.#state !== "open") throw new Error(`hold ${this.id ?? this.requestId} is already ${this.#state}`);
    if (!Number.isSafeInteger(finalMicros) || finalMicros < 0) {
      throw new RangeError(`final amount must be a non-negative safe integer, got ${finalMicros}`);
    }
    const charged = Math.min(finalMicros, this.amountMicros);
    const end = this.#end("succeeded");
    let settled: Settlement;
    if (this.id === null) {
      // Test mode (D32): the usage record is priced as usual; the balance stays as it is.
      const requestId = this.requestId;
      settled = await inTransaction(this.#db, async (trx) => {
        if (requestId !== null && end) await finishUsage(trx, requestId, { ...end, costMicros: charged });
        if (writes) await writes(trx);
        return { chargedMicros: charged, balanceAfterMicros: (await getBalance(trx, this.accountId)) ?? 0 };
      });
      annotateRequest({ "gw.cost_usd": charged / 1_000_000, "gw.test_mode": true }, this.#scope);
    } else {
      const id = this.id;
      settled = await inScopeOf(this.#scope, () => settleCapture(this.#db, id, charged, writes, end));
    }
    this.#state = "captured";
    this.#charged = charged;
    this.#calls.settled(this);
    return settled;
  }

  /** Releases the hold if it is still open (its usage record ends `failed`, cost 0); otherwise does nothing. */
  async release(): Promise<void> {
    if (this.#state !== "open") return;
    const end = this.#end("failed");
    const id = this.id;
    if (id !== null) await inScopeOf(this.#scope, () => billingStep("release", () => releaseHold(this.#db, id, end)));
    else if (this.requestId !== null && end) await finishUsage(this.#db, this.requestId, { ...end, costMicros: 0 });
    this.#state = "released";
    this.#calls.settled(this);
  }

  /**
   * Gives a captured charge back (ledger kind `refund`, carrying the hold and request ids): the call
   * failed after it was charged (a stream that broke off). Its usage record ends `refunded` with a cost of
   * 0 in the same transaction. Does nothing unless the hold was captured.
   */
  async refund(): Promise<void> {
    if (this.#state !== "captured") return;
    this.#state = "refunded";
    const end = this.#end("refunded");
    const requestId = this.requestId;
    await inTransaction(this.#db, async (trx) => {
      if (this.#charged > 0 && this.id !== null) {
        await credit(trx, {
          accountId: this.accountId,
          kind: "refund",
          amountMicros: this.#charged,
          holdId: this.id,
          requestId,
          reference: this.#reference,
        });
      }
      if (requestId !== null && end) await finishUsage(trx, requestId, { ...end, costMicros: 0 });
    });
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
 * The paid calls of one gateway (made once per gateway, services.ts): the holds its calls placed and have
 * not settled yet, so a shutdown can wait for them ({@link PaidCalls.drain}), and the gateway's balance
 * listeners that its holds are told to (D34 alerts). Two gateways in one process each have their own.
 */
export class PaidCalls {
  /** Holds placed by this gateway and not yet settled (for a graceful shutdown: {@link PaidCalls.drain}). */
  readonly #unsettled = new Set<object>();
  /**
   * Holds {@link PaidCalls.withHold} is placing (their statement may be queued or in flight, their PaidHold
   * not made yet): a drain waits for them too, or a hold committed after the database closed would stay open.
   */
  #placing = 0;
  #onDrained: (() => void) | null = null;
  readonly #events: BalanceEvents | null;

  /** `events`: the gateway's balance listeners, told of every hold its calls place (balance-events.ts). */
  constructor(events: BalanceEvents | null = null) {
    this.#events = events;
  }

  /** The gateway's balance listeners (null: none): told by writes made outside this flow, e.g. a job submit's hold. */
  get events(): BalanceEvents | null {
    return this.#events;
  }

  #drainedCheck(): void {
    if (this.#unsettled.size === 0 && this.#placing === 0) this.#onDrained?.();
  }

  /**
   * Called by a {@link PaidHold} (or a realtime socket's metered hold, metered-hold.ts) of this gateway when
   * it is made: it counts as open until {@link PaidCalls.settled}.
   */
  track(hold: object): void {
    this.#unsettled.add(hold);
  }

  /** Called by a hold of this gateway once it is settled. */
  settled(hold: object): void {
    this.#unsettled.delete(hold);
    this.#drainedCheck();
  }

  /**
   * Waits until every paid call of this gateway has settled its hold (captured or released), or `timeoutMs`
   * passed: a shutdown runs it after the HTTP server stopped taking requests and before the database
   * closes. A call whose caller already hung up still runs to its capture or release, and the server's own
   * close does not wait for it (its connection is gone). A hold still open at the deadline is left to the
   * sweep of orphaned holds (docs/architecture.md invariant 4).
   * @returns how many holds were still open at the deadline (0 when all settled).
   */
  async drain(timeoutMs: number): Promise<number> {
    if (this.#unsettled.size === 0 && this.#placing === 0) return 0;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.#onDrained = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#onDrained = null;
    return this.#unsettled.size + this.#placing;
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
  async withHold<T>(
    db: Executor,
    req: HoldRequest,
    policy: { onInsufficient: OnInsufficient },
    run: (hold: PaidHold) => Promise<T>,
  ): Promise<T> {
    const usage = req.usage ? { requestId: req.usage.requestId, testMode: req.usage.mode === "test" } : null;
    let placed: Hold | { id: null; accountId: string; amountMicros: Micros; balanceAfterMicros: Micros };
    let committed: Promise<void> | null = null;
    if (req.usage?.mode === "test") {
      // D32: no hold, the balance does not gate the call; the usage record is written as for a live call.
      if (!Number.isSafeInteger(req.amountMicros) || req.amountMicros <= 0) throw new RangeError(`amount must be a positive safe integer of micro-USD, got ${req.amountMicros}`);
      await insertUsage(db, testRow(req, req.usage));
      placed = { id: null, accountId: req.accountId, amountMicros: req.amountMicros, balanceAfterMicros: (await getBalance(db, req.accountId)) ?? 0 };
    } else {
      this.#placing++;
      try {
        const held = (await holdOrRefuse(db, req, policy.onInsufficient, this.#events))!;
        committed = held.committed;
        placed = held;
      } catch (err) {
        this.#placing--;
        this.#drainedCheck();
        throw err;
      }
      // No await between here and the PaidHold joining `unsettled`: a drain never sees the hold in neither.
      this.#placing--;
    }
    const hold = new PaidHold(db, this, placed, req.reference ?? null, usage);
    let out: T;
    try {
      out = await run(hold);
      // The hold may have gone ahead of its commit (ledger.ts placeHoldAhead): nothing is answered before
      // it is durable, so what the caller reads next has it. A capture on the writer thread already waited.
      if (committed) await committed;
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
}

/**
 * Releases or refunds after a failure. A database error here is swallowed so the call's own error is
 * what the caller sees: the hold stays open and the sweep releases it (docs/architecture.md invariant 4).
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
 * `provider_error` (with `message` when given, or naming `model` and the upstream id when no source has the
 * upstream model, D35), which {@link PaidCalls.withHold} answers after releasing the hold; except an AppError
 * (the failover's 429 when every source is at its cap), rethrown as it is, and a voice its source no longer
 * has, 410 `voice_unavailable` (D27).
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
    // No source of the family has the upstream model (D35): the 502 names the model and the upstream id.
    const notFound = err instanceof UpstreamError && err.modelNotFound;
    // The upstream's own message stays on the server (the log line of the 502), never in the answer.
    const appErr = errors.provider(notFound ? `${modelNotFoundMessage(model, err)} Nothing was charged.` : message);
    (appErr as Error).cause = err;
    throw appErr;
  }
}
