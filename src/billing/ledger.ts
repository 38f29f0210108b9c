/**
 * The ledger: the only writer of `ledger_entries`, `holds` and account balances (docs/architecture.md).
 *
 * Every change of a balance is one UPDATE guarded by `balance_micros >= amount` (so concurrent callers
 * can never overdraw: the row lock on PostgreSQL and the single writer on SQLite serialize them) and one
 * ledger entry carrying the balance right after it (D17), inside one transaction. Hence at every commit
 * the balance equals the sum of the account's ledger entries and is never negative (invariant 1).
 *
 * A sync call or a job holds its estimate ({@link placeHold}), then either captures the final amount
 * ({@link captureHold}: entries `hold_release` of the whole hold and `charge` of the final amount) or
 * releases it ({@link releaseHold}). A hold leaves `open` exactly once (invariant 2).
 *
 * On PostgreSQL, a hold, capture or release made outside a transaction is queued and shares one statement
 * and one commit with the others of the same moment (billing/ledger-pg-batch.ts); each call's result is
 * the one it would get alone. Inside a transaction (a job submit) it runs its own statement.
 *
 * On an SQLite file, a hold, capture or release made outside a transaction runs on the ledger's writer
 * thread when one is attached (ledger-writer.ts): the same functions, on the thread's own connection.
 *
 * A realtime socket (D42, D43) holds once and grows its hold block by block ({@link placeMeteredHold},
 * {@link extendMeteredHold}): each growth is one more `hold` entry of the same hold, in one transaction
 * that never overdraws and counts against the key's spend limit at once; its running count is persisted
 * on the hold ({@link persistMetered}) so that {@link settleStaleMeteredHolds} can capture it after a crash.
 */
import type { Kysely, Transaction } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import { recordLedger } from "../metrics.ts";
import { isPostgres } from "../storage/dialect.ts";
import type { Database } from "../storage/schema.ts";
import { pgCaptureHold, pgLockAccount, pgPlaceHold } from "./ledger-pg.repository.ts";
import { pgLedgerBatcher } from "./ledger-pg-batch.ts";
import {
  creditBalance,
  type EntryFields,
  getBalance,
  growHold,
  holdKeyCounter,
  insertEntries,
  insertHold,
  lockOpenHold,
  markCaptured,
  markMetered,
  markReleased,
  moveBalance,
  staleMeteredHolds,
  staleSyncHoldIds,
} from "./ledger.repository.ts";
import { ledgerWriterOf, LedgerWriterFailure } from "./ledger-writer.ts";
import { countKeySpend, type KeySpend, KeySpendLimitError, keySpendState, periodStart, uncountKeySpend } from "./key-spend.ts";
import { BudgetExceededError, budgetRoom, countBudgets, holdBudgetsForExtension, noteHoldBudgets, uncountHoldBudgets } from "./budgets.ts";
import type { BalanceEvents } from "./balance-events.ts";
import { type Executor, inTransaction } from "./executor.ts";
import type { Micros } from "../money.ts";
export { type Executor, inTransaction } from "./executor.ts";
export { getBalance, type LedgerEntry, ledgerOfRequest, ledgerSum, listLedger } from "./ledger.repository.ts";
import { endValues, finishUsage, insertUsage, type UsageEnd, type UsageStart, usageRow } from "./usage.ts";
import { endRealtimeUsage, markUsageRealtime, noteUsageHold, noteUsageUnits } from "./usage.repository.ts";
import type { UnitValues } from "./usage-units.ts";

/** The balance does not cover the amount asked for. Services translate it to their 402 code. */
export class InsufficientFundsError extends Error {
  readonly neededMicros: Micros;
  readonly balanceMicros: Micros | null;
  constructor(neededMicros: Micros, balanceMicros: Micros | null) {
    super("insufficient funds");
    this.name = "InsufficientFundsError";
    this.neededMicros = neededMicros;
    this.balanceMicros = balanceMicros;
  }
}

/**
 * The result of a call run on the ledger's writer thread (ledger-writer.ts), with the thread's error
 * turned back into the class this module throws, so callers see what the same call here would throw.
 */
async function fromWriter<T>(call: Promise<unknown>): Promise<T> {
  try {
    return (await call) as T;
  } catch (err) {
    if (!(err instanceof LedgerWriterFailure)) throw err;
    const { name, message, fields: f } = err.remote;
    if (name === "InsufficientFundsError") throw new InsufficientFundsError(f["neededMicros"] as Micros, f["balanceMicros"] as Micros | null);
    if (name === "KeySpendLimitError") throw new KeySpendLimitError(f as unknown as ConstructorParameters<typeof KeySpendLimitError>[0]);
    if (name === "BudgetExceededError") throw new BudgetExceededError(f as unknown as ConstructorParameters<typeof BudgetExceededError>[0]);
    if (name === "RangeError") throw new RangeError(message);
    throw new Error(message);
  }
}

function assertAmount(micros: Micros): void {
  if (!Number.isSafeInteger(micros) || micros <= 0) {
    throw new RangeError(`amount must be a positive safe integer of micro-USD, got ${micros}`);
  }
}

/** Writes the entries (ledger-repository.ts) and counts them in the metrics. */
async function writeEntries(trx: Transaction<Database>, accountId: string, now: number, entries: EntryFields[]): Promise<void> {
  for (const e of entries) recordLedger(e.kind, e.amount);
  await insertEntries(trx, accountId, now, entries);
}

/** Gives a settled hold's unused amount back to the key counter (D34) and the budget counters (D44) it was counted in, if any. */
async function uncountHold(
  trx: Transaction<Database>,
  holdId: string,
  hold: { keyId: string | null; keyPeriodStart: number | null; budgeted: boolean },
  amount: Micros,
): Promise<void> {
  if (hold.keyId !== null && hold.keyPeriodStart !== null) await uncountKeySpend(trx, hold.keyId, hold.keyPeriodStart, amount);
  if (hold.budgeted) await uncountHoldBudgets(trx, holdId, amount);
}

/** A placed hold. */
export interface Hold {
  id: string;
  accountId: string;
  amountMicros: Micros;
  /** Balance after the hold, micro-USD. */
  balanceAfterMicros: Micros;
}

/**
 * Holds `amountMicros` (> 0) of the account's balance: the balance drops by the amount and a `hold`
 * entry is written. Runs inside `db` if it is a transaction (so a job row and its hold commit together).
 * With `usage`, the call's usage record (D29, id = its request id) is inserted with the hold, in the same
 * statement on PostgreSQL; the hold and its entries then carry the request id. `reference` is the model.
 * A live call whose key has a spend limit (`usage.keySpend`, D34) is counted against the key's counter in
 * the same transaction, before the balance is checked (key-spend.ts); a live call of an organization with
 * budgets (`usage.budgets`, D44) against every budget that applies to it (budgets.ts). Such holds are not
 * batched.
 * With `events` (the gateway's, balance-events.ts), a hold made on `db` itself (not a transaction) is told
 * to its listeners once committed.
 * @throws KeySpendLimitError when the hold would take the key past its limit (nothing is written).
 * @throws BudgetExceededError when the hold would pass a `block` budget (nothing is written).
 * @throws InsufficientFundsError when the balance is below the amount (nothing is written).
 */
export async function placeHold(db: Executor, args: HoldArgs, events?: BalanceEvents | null): Promise<Hold> {
  const writer = ledgerWriterOf(db);
  const hold = writer ? await fromWriter<Hold>(writer.call("placeHold", [args])) : await placeHoldNow(db, args);
  // Only a hold lowers a balance (a capture gives back what the call did not use): the one write an alert hears of.
  events?.changed(db, args.accountId);
  return hold;
}

/**
 * {@link placeHold} for a synchronous paid call (billing/paid-call.ts): the same hold, the same errors, but
 * on the SQLite writer thread (ledger-writer.ts) it returns as soon as the hold is written in the thread's
 * open commit group, before that group commits (about a millisecond later), so the upstream call starts
 * without waiting for the commit (issue 33). What that changes:
 * - the capture, release or refund of the hold runs on the same thread and connection: it always sees it;
 * - a write of the event loop waits for the thread's commit (the file's thread lock), so it sees it too and
 *   no later hold, here or there, can spend the same balance;
 * - a plain read on the event loop's connection sees the hold once committed (a balance read at that
 *   moment reads the balance just before the hold);
 * - `events` hear of the hold once committed;
 * - if the process dies or the commit fails before it commits, the hold is gone: nothing was taken, and
 *   the capture of it fails (the call answers with an error), as if the hold had been released.
 * Elsewhere (PostgreSQL, a transaction, no writer thread) it is {@link placeHold}, committed at once.
 * Await `committed` before answering the caller (paid-call.ts does), so that what the caller reads next
 * has the hold in it.
 * @throws KeySpendLimitError, InsufficientFundsError as {@link placeHold} (nothing is written).
 */
export async function placeHoldAhead(db: Executor, args: HoldArgs, events?: BalanceEvents | null): Promise<PlacedHold> {
  const writer = ledgerWriterOf(db);
  if (!writer) return { ...(await placeHold(db, args, events)), committed: Promise.resolve() };
  const { value, committed } = await fromWriter<{ value: unknown; committed: Promise<void> }>(writer.callAhead([args]));
  const durable = committed.then(
    () => events?.changed(db, args.accountId),
    (err: unknown) => Promise.reject(err instanceof LedgerWriterFailure ? new Error(`the hold's commit failed: ${err.message}`) : err),
  );
  // Nobody may be waiting yet: a failed commit is reported to whoever awaits `committed`, never unhandled.
  durable.catch(() => {});
  return { ...(value as Hold), committed: durable };
}

/** A hold of {@link placeHoldAhead}: `committed` resolves once it is durable (rejects if its commit failed). */
export interface PlacedHold extends Hold {
  committed: Promise<void>;
}

async function placeHoldNow(db: Executor, args: HoldArgs): Promise<Hold> {
  assertAmount(args.amountMicros);
  const id = newTimeOrderedId("hold");
  const now = Date.now();
  const usage = args.usage
    ? usageRow(args.usage, { accountId: args.accountId, amountMicros: args.amountMicros, jobId: args.jobId, model: args.reference ?? "" }, now)
    : null;
  const requestId = usage?.id ?? null;
  const live = args.usage !== null && args.usage !== undefined && args.usage.mode !== "test";
  const keySpend = live ? (args.usage?.keySpend ?? null) : null;
  const budgeted = live && args.usage?.budgets === true;
  if (keySpend !== null || budgeted) return placeCountedHold(db, args, keySpend, budgeted, { id, now, usage, requestId });
  if (isPostgres(db)) {
    const a = {
      holdId: id,
      accountId: args.accountId,
      amount: args.amountMicros,
      jobId: args.jobId ?? null,
      requestId,
      reference: args.reference ?? null,
      now,
      usage,
      keyId: null,
      keyPeriod: null,
    };
    let balance: Micros;
    if (db.isTransaction) {
      // Inside the caller's transaction (a job submit): its own statement, committed with the transaction.
      const after = await pgPlaceHold(db, a);
      if (after === null) throw new InsufficientFundsError(args.amountMicros, await getBalance(db, args.accountId));
      balance = after;
    } else {
      // On its own: batched with the other holds of this moment (billing/ledger-pg-batch.ts).
      const outcome = await pgLedgerBatcher(db as Kysely<Database>).placeHold(a);
      if (!outcome.placed) throw new InsufficientFundsError(args.amountMicros, outcome.balance);
      balance = outcome.balance;
    }
    recordLedger("hold", -args.amountMicros);
    return { id, accountId: args.accountId, amountMicros: args.amountMicros, balanceAfterMicros: balance };
  }
  return inTransaction(db, (trx) => sqlitePlaceHold(trx, args, { id, now, usage, requestId, keyId: null, keyPeriod: null }));
}

/** What {@link placeHold} holds: `amountMicros` (> 0) of the account, for a job, with the call's usage record. */
export interface HoldArgs {
  accountId: string;
  amountMicros: Micros;
  jobId?: string | null;
  reference?: string | null;
  usage?: UsageStart | null;
}
interface HoldRow {
  id: string;
  now: number;
  usage: ReturnType<typeof usageRow> | null;
  requestId: string | null;
}

/** The portable hold (SQLite): debit, hold row, `hold` entry, usage record; in `trx`. */
async function sqlitePlaceHold(
  trx: Transaction<Database>,
  args: HoldArgs,
  h: HoldRow & { keyId: string | null; keyPeriod: number | null },
): Promise<Hold> {
  const balance = await moveBalance(trx, args.accountId, -args.amountMicros);
  if (balance === null) throw new InsufficientFundsError(args.amountMicros, await getBalance(trx, args.accountId));
  await insertHold(trx, {
    id: h.id,
    accountId: args.accountId,
    amountMicros: args.amountMicros,
    jobId: args.jobId ?? null,
    reference: args.reference ?? null,
    createdAt: h.now,
    requestId: h.requestId,
    keyId: h.keyId,
    keyPeriod: h.keyPeriod,
  });
  await writeEntries(trx, args.accountId, h.now, [
    {
      kind: "hold",
      amount: -args.amountMicros,
      balanceAfter: balance,
      holdId: h.id,
      jobId: args.jobId,
      requestId: h.requestId,
      reference: args.reference,
    },
  ]);
  if (h.usage !== null) await insertUsage(trx, h.usage);
  return { id: h.id, accountId: args.accountId, amountMicros: args.amountMicros, balanceAfterMicros: balance };
}

/**
 * A hold counted against its key's spend limit (D34) and its organization's budgets (D44), in one
 * transaction: the account row is locked first (settlements lock holds, then accounts, then keys, then
 * budgets: the same order, so no deadlock), then the key's counter takes the amount if the limit allows,
 * then the budget counters if every `block` budget allows, then the balance is debited; any refusal rolls
 * back.
 */
async function placeCountedHold(db: Executor, args: HoldArgs, spend: KeySpend | null, budgeted: boolean, h: HoldRow): Promise<Hold> {
  return inTransaction(db, async (trx) => {
    const pg = isPostgres(trx);
    if (pg) await pgLockAccount(trx, args.accountId);
    let counted: number | null = null;
    if (spend !== null) {
      const period = periodStart(spend.period, h.now);
      counted = await countKeySpend(trx, spend.keyId, args.amountMicros, period);
      if (counted === null) {
        const state = await keySpendState(trx, spend.keyId, period);
        throw new KeySpendLimitError({
          limitMicros: state?.limitMicros ?? spend.limitMicros,
          spentMicros: state?.spentMicros ?? 0,
          neededMicros: args.amountMicros,
          period: spend.period,
        });
      }
    }
    const call = { accountId: args.accountId, userId: args.usage?.userId ?? null, keyId: args.usage?.keyId ?? null };
    const budgets = budgeted ? await countBudgets(trx, call, args.amountMicros, h.now) : [];
    const keyId = spend === null ? null : spend.keyId;
    if (!pg) {
      const hold = await sqlitePlaceHold(trx, args, { ...h, keyId, keyPeriod: counted });
      await noteHoldBudgets(trx, h.id, budgets);
      return hold;
    }
    const after = await pgPlaceHold(trx, {
      holdId: h.id,
      accountId: args.accountId,
      amount: args.amountMicros,
      jobId: args.jobId ?? null,
      requestId: h.requestId,
      reference: args.reference ?? null,
      now: h.now,
      usage: h.usage,
      keyId,
      keyPeriod: counted,
    });
    if (after === null) throw new InsufficientFundsError(args.amountMicros, await getBalance(trx, args.accountId));
    await noteHoldBudgets(trx, h.id, budgets);
    recordLedger("hold", -args.amountMicros);
    return { id: h.id, accountId: args.accountId, amountMicros: args.amountMicros, balanceAfterMicros: after };
  });
}

/** Result of settling a hold. */
export interface Settlement {
  /** Amount charged, micro-USD (0 for a release). */
  chargedMicros: Micros;
  /** Balance after settlement, micro-USD. */
  balanceAfterMicros: Micros;
}

/**
 * Captures an open hold: releases the whole hold (`hold_release`) and charges `finalMicros`
 * (0 <= final <= held; `charge` entry, omitted when 0). Exactly once: a hold that is no longer open
 * throws and changes nothing. With `usage` (its `costMicros` is ignored: the record gets `finalMicros`),
 * the usage record of the hold's request is finished in the same statement (PostgreSQL) or transaction.
 * @throws Error when the hold is not open or the final amount exceeds the hold.
 */
export async function captureHold(
  db: Executor,
  holdId: string,
  finalMicros: Micros,
  usage?: Omit<UsageEnd, "costMicros"> | null,
): Promise<Settlement> {
  if (!Number.isSafeInteger(finalMicros) || finalMicros < 0) {
    throw new RangeError(`final amount must be a non-negative safe integer, got ${finalMicros}`);
  }
  const writer = ledgerWriterOf(db);
  if (writer) return fromWriter<Settlement>(writer.call("captureHold", [holdId, finalMicros, usage]));
  const now = Date.now();
  const end = usage ? endValues({ ...usage, costMicros: finalMicros }) : null;
  if (isPostgres(db)) {
    const a = { holdId, final: finalMicros, now, usage: end };
    const captured = db.isTransaction ? await pgCaptureHold(db, a) : await pgLedgerBatcher(db as Kysely<Database>).settle(a);
    if (captured === null) throw new Error(`hold ${holdId} is not open or is smaller than ${finalMicros}`);
    for (const e of captured.entries) recordLedger(e.kind, e.amount);
    return { chargedMicros: finalMicros, balanceAfterMicros: captured.balance };
  }
  return inTransaction(db, async (trx) => {
    const hold = await markCaptured(trx, holdId, finalMicros, now);
    if (!hold) throw new Error(`hold ${holdId} is not open or is smaller than ${finalMicros}`);
    const held = hold.amountMicros;
    const balance = await moveBalance(trx, hold.accountId, held - finalMicros);
    if (balance === null) throw new Error(`balance update failed for hold ${holdId}`);
    const common = { holdId, jobId: hold.jobId, requestId: hold.requestId, reference: hold.reference };
    const entries: EntryFields[] = [
      { kind: "hold_release", amount: held, balanceAfter: balance + finalMicros, ...common },
    ];
    if (finalMicros > 0)
      entries.push({ kind: "charge", amount: -finalMicros, balanceAfter: balance, ...common });
    await writeEntries(trx, hold.accountId, now, entries);
    await uncountHold(trx, holdId, hold, held - finalMicros);
    if (usage && hold.requestId !== null) await finishUsage(trx, hold.requestId, { ...usage, costMicros: finalMicros }, now);
    return { chargedMicros: finalMicros, balanceAfterMicros: balance };
  });
}

/**
 * Releases an open hold in full (`hold_release`). Idempotent: returns null when the hold was already
 * captured or released (nothing changes), otherwise the settlement. With `usage`, the usage record of the
 * hold's request is finished in the same transaction with that status and a cost of 0.
 */
export async function releaseHold(
  db: Executor,
  holdId: string,
  usage?: Omit<UsageEnd, "costMicros"> | null,
): Promise<Settlement | null> {
  const writer = ledgerWriterOf(db);
  if (writer) return fromWriter<Settlement | null>(writer.call("releaseHold", [holdId, usage]));
  const now = Date.now();
  if (isPostgres(db) && !db.isTransaction) {
    const end = usage ? endValues({ ...usage, costMicros: 0 }) : null;
    const released = await pgLedgerBatcher(db as Kysely<Database>).settle({ holdId, final: null, now, usage: end });
    if (released === null) return null;
    for (const e of released.entries) recordLedger(e.kind, e.amount);
    return { chargedMicros: 0, balanceAfterMicros: released.balance };
  }
  return inTransaction(db, async (trx) => {
    const hold = await markReleased(trx, holdId, now);
    if (!hold) return null;
    const held = hold.amountMicros;
    const balance = await moveBalance(trx, hold.accountId, held);
    if (balance === null) throw new Error(`balance update failed for hold ${holdId}`);
    await writeEntries(trx, hold.accountId, now, [
      {
        kind: "hold_release",
        amount: held,
        balanceAfter: balance,
        holdId,
        jobId: hold.jobId,
        requestId: hold.requestId,
        reference: hold.reference,
      },
    ]);
    await uncountHold(trx, holdId, hold, held);
    if (usage && hold.requestId !== null) await finishUsage(trx, hold.requestId, { ...usage, costMicros: 0 }, now);
    return { chargedMicros: 0, balanceAfterMicros: balance };
  });
}

/**
 * Credits an account: `signup_credit`, `deposit`, `refund` or a positive `adjustment`. A deposit also
 * raises the cumulative deposits that drive the tier. Returns the balance after, micro-USD. With `events`
 * (balance-events.ts), a credit made on `db` itself (not a transaction) is told to its listeners once committed.
 * @throws Error when the account does not exist.
 */
export async function credit(
  db: Executor,
  args: {
    accountId: string;
    kind: "signup_credit" | "deposit" | "refund" | "adjustment";
    amountMicros: Micros;
    reference?: string | null;
    jobId?: string | null;
    holdId?: string | null;
    /** The request of the paid call a `refund` gives back (D29). */
    requestId?: string | null;
    /** The user behind the credit (D41: the registering user, the member who paid a top-up), or null. */
    userId?: string | null;
  },
  events?: BalanceEvents | null,
): Promise<Micros> {
  assertAmount(args.amountMicros);
  const now = Date.now();
  const balance = await inTransaction(db, async (trx) => {
    const balance = await creditBalance(trx, args.accountId, args.amountMicros, args.kind === "deposit");
    if (balance === null) throw new Error(`account ${args.accountId} not found`);
    await writeEntries(trx, args.accountId, now, [
      {
        kind: args.kind,
        amount: args.amountMicros,
        balanceAfter: balance,
        reference: args.reference,
        jobId: args.jobId,
        holdId: args.holdId,
        requestId: args.requestId,
        userId: args.userId,
      },
    ]);
    if (args.kind === "refund" && args.holdId) {
      // A refunded charge no longer counts against the key's spend limit (D34) nor the budgets (D44).
      const hold = await holdKeyCounter(trx, args.holdId);
      if (hold) await uncountHold(trx, args.holdId, { ...hold, budgeted: true }, args.amountMicros);
    }
    return balance;
  });
  events?.changed(db, args.accountId);
  return balance;
}

/**
 * Releases synchronous-call holds (no job) still open after `olderThanMs`: the process that placed them
 * died between hold and capture (docs/architecture.md invariant 4). Job holds are the job sweep's. Returns how many
 * were released.
 */
export async function releaseStaleHolds(db: Kysely<Database>, olderThanMs: number): Promise<number> {
  const cutoff = Date.now() - olderThanMs;
  const stale = await staleSyncHoldIds(db, cutoff, 1000);
  let released = 0;
  for (const id of stale) {
    // The call's process died: its usage record (D29) ends failed, charged nothing, with the release.
    if (await releaseHold(db, id, { status: "failed" })) released++;
  }
  return released;
}

/**
 * The key spend left to a hold counted in `keyId`'s counter for the period starting at `period` (D34), or
 * null when the key has no limit. micro-USD, never negative.
 */
async function keySpendLeft(trx: Transaction<Database>, keyId: string, period: number): Promise<{ left: Micros; limitMicros: Micros; spentMicros: Micros } | null> {
  const state = await keySpendState(trx, keyId, period);
  if (state === null) return null;
  return { left: Math.max(0, state.limitMicros - state.spentMicros), ...state };
}

/**
 * Places the hold of a realtime socket (D42, D43): `amountMicros` (the price of one block), or what the
 * balance and the key's spend limit still allow if less, but at least `minMicros` (the price of one
 * character or second, at least 1 micro-USD); in one transaction with the account row locked, so parallel
 * sockets never overdraw. The hold is marked metered (running count 0, heartbeat `now`) and its usage record
 * (`args.usage`, live) realtime. Not for test mode (no hold): billing/metered-hold.ts handles that.
 * Budgets (D44) that apply to the call cap it the same way.
 * @throws InsufficientFundsError when the balance is below `minMicros`; KeySpendLimitError when the key's
 *   limit leaves less than `minMicros`; BudgetExceededError when a `block` budget does (nothing written).
 */
export async function placeMeteredHold(db: Executor, args: HoldArgs & { minMicros: Micros }, now = Date.now(), events?: BalanceEvents | null): Promise<Hold> {
  assertAmount(args.minMicros);
  if (args.amountMicros < args.minMicros) throw new RangeError("amountMicros must be at least minMicros");
  const hold = await inTransaction(db, async (trx) => {
    if (isPostgres(trx)) await pgLockAccount(trx, args.accountId);
    const balance = (await getBalance(trx, args.accountId)) ?? 0;
    let amount = Math.min(args.amountMicros, balance);
    const spend = args.usage && args.usage.mode !== "test" ? (args.usage.keySpend ?? null) : null;
    if (spend !== null) {
      const key = await keySpendLeft(trx, spend.keyId, periodStart(spend.period, now));
      if (key !== null && key.left < args.minMicros) {
        throw new KeySpendLimitError({ limitMicros: key.limitMicros, spentMicros: key.spentMicros, neededMicros: args.minMicros, period: spend.period });
      }
      if (key !== null) amount = Math.min(amount, key.left);
    }
    if (args.usage && args.usage.mode !== "test" && args.usage.budgets === true) {
      const room = await budgetRoom(trx, { accountId: args.accountId, userId: args.usage.userId ?? null, keyId: args.usage.keyId }, now);
      if (room !== null && room.leftMicros < args.minMicros) {
        throw new BudgetExceededError({ budgetId: room.budget.id, amountMicros: room.budget.amountMicros, spentMicros: room.budget.spentMicros, neededMicros: args.minMicros });
      }
      if (room !== null) amount = Math.min(amount, room.leftMicros);
    }
    if (amount < args.minMicros) throw new InsufficientFundsError(args.minMicros, balance);
    const placed = await placeHold(trx, { ...args, amountMicros: amount });
    await markMetered(trx, placed.id, 0, now);
    if (args.usage) await markUsageRealtime(trx, args.usage.requestId);
    return placed;
  });
  events?.changed(db, args.accountId);
  return hold;
}

/** The result of {@link extendMeteredHold}: micro-USD. */
export interface HoldExtension {
  /** What this extension added to the hold. */
  addedMicros: Micros;
  /** The hold's amount after it. */
  amountMicros: Micros;
  balanceAfterMicros: Micros;
}

/**
 * Grows the open realtime hold `holdId` by `wantMicros`, or by what the balance and the key's spend limit
 * allow if less, but at least `minMicros` (D42: "extended by another block in one atomic step that never
 * overdraws"): one more `hold` entry of the same hold, the key's counter raised in the same transaction
 * (locks: the hold, the account, the key: the order of every settlement), and the running count
 * `meteredMicros` persisted with the heartbeat `now` (and the usage record's `units` of that count, when given).
 * The budgets (D44) the hold was counted in cap it and count it the same way.
 * @throws InsufficientFundsError when the balance is below `minMicros`; KeySpendLimitError when the key's
 *   limit leaves less; BudgetExceededError when a `block` budget does; Error when the hold is not open (the
 *   sweep settled it). Nothing written then.
 */
export async function extendMeteredHold(
  db: Executor,
  holdId: string,
  a: { wantMicros: Micros; minMicros: Micros; meteredMicros: Micros; units?: UnitValues },
  now = Date.now(),
  events?: BalanceEvents | null,
): Promise<HoldExtension> {
  assertAmount(a.minMicros);
  if (a.wantMicros < a.minMicros) throw new RangeError("wantMicros must be at least minMicros");
  let accountId = "";
  const out = await inTransaction(db, async (trx) => {
    const pg = isPostgres(trx);
    const hold = await lockOpenHold(trx, holdId, pg);
    if (hold === null) throw new Error(`hold ${holdId} is not open`);
    accountId = hold.accountId;
    if (pg) await pgLockAccount(trx, hold.accountId);
    const balance = (await getBalance(trx, hold.accountId)) ?? 0;
    let amount = Math.min(a.wantMicros, balance);
    const counted = hold.keyId !== null && hold.keyPeriodStart !== null ? { keyId: hold.keyId, period: hold.keyPeriodStart } : null;
    if (counted !== null) {
      const key = await keySpendLeft(trx, counted.keyId, counted.period);
      if (key !== null && key.left < a.minMicros) {
        throw new KeySpendLimitError({ limitMicros: key.limitMicros, spentMicros: key.spentMicros, neededMicros: a.minMicros, period: "total" });
      }
      if (key !== null) amount = Math.min(amount, key.left);
    }
    const budgets = hold.budgeted ? await holdBudgetsForExtension(trx, holdId, now) : null;
    if (budgets?.room) {
      const room = budgets.room;
      if (room.leftMicros < a.minMicros) {
        throw new BudgetExceededError({ budgetId: room.budget.id, amountMicros: room.budget.amountMicros, spentMicros: room.budget.spentMicros, neededMicros: a.minMicros });
      }
      amount = Math.min(amount, room.leftMicros);
    }
    if (amount < a.minMicros) throw new InsufficientFundsError(a.minMicros, balance);
    if (counted !== null && (await countKeySpend(trx, counted.keyId, amount, counted.period)) === null) {
      throw new KeySpendLimitError({ limitMicros: 0, spentMicros: 0, neededMicros: amount, period: "total" });
    }
    if (budgets !== null) await budgets.count(amount);
    const after = await moveBalance(trx, hold.accountId, -amount);
    if (after === null) throw new InsufficientFundsError(a.minMicros, balance);
    if (!(await growHold(trx, holdId, amount, a.meteredMicros, now))) throw new Error(`hold ${holdId} is not open`);
    await writeEntries(trx, hold.accountId, now, [
      { kind: "hold", amount: -amount, balanceAfter: after, holdId, requestId: hold.requestId, reference: hold.reference },
    ]);
    if (hold.requestId !== null) {
      await noteUsageHold(trx, hold.requestId, hold.amountMicros + amount);
      // The running count is persisted with the units it prices, so the sweep's capture matches its record.
      if (a.units !== undefined) await noteUsageUnits(trx, hold.requestId, a.units, now);
    }
    return { addedMicros: amount, amountMicros: hold.amountMicros + amount, balanceAfterMicros: after };
  });
  events?.changed(db, accountId);
  return out;
}

/**
 * Persists a realtime hold's running count (D42: at least every 5 s): `meteredMicros` charged so far and
 * the heartbeat `now`, with the units delivered so far on its usage record `requestId` (null: none), in one
 * transaction. Returns false when the hold is no longer open (the sweep settled it).
 */
export async function persistMetered(db: Executor, holdId: string, meteredMicros: Micros, usage: { requestId: string; units: UnitValues } | null, now = Date.now()): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    if (!(await markMetered(trx, holdId, meteredMicros, now))) return false;
    if (usage !== null) await noteUsageUnits(trx, usage.requestId, usage.units, now);
    return true;
  });
}

/**
 * Settles the open realtime holds (D42, D43) whose heartbeat stopped before `now - olderThanMs`: their
 * socket's process died. Each captures its persisted running count (at most what it holds) and releases the
 * rest, its usage record ending `succeeded` with that cost (`failed` with 0 when nothing was charged), its
 * session length up to the last heartbeat and no close code. Returns how many it settled.
 */
export async function settleStaleMeteredHolds(db: Kysely<Database>, olderThanMs: number, now = Date.now()): Promise<number> {
  const stale = await staleMeteredHolds(db, now - olderThanMs, 1000);
  let settled = 0;
  for (const h of stale) {
    const final = Math.min(h.meteredMicros, h.amountMicros);
    const done = await inTransaction(db, async (trx) => {
      const status = final > 0 ? "succeeded" : "failed";
      let ok: boolean;
      if (final > 0) {
        ok = await captureHold(trx, h.id, final, { status }).then(
          () => true,
          () => false,
        );
      } else {
        ok = (await releaseHold(trx, h.id, { status })) !== null;
      }
      if (ok && h.requestId !== null) await endRealtimeUsage(trx, h.requestId, { sessionMs: Math.max(0, h.heartbeatAt - h.createdAt), contexts: null, closeCode: null });
      return ok;
    });
    if (done) settled++;
  }
  return settled;
}
