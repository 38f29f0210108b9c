/**
 * The ledger: the only writer of `ledger_entries`, `holds` and account balances (design.md).
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
 * and one commit with the others of the same moment (storage/ledger-pg-batch.ts); each call's result is
 * the one it would get alone. Inside a transaction (a job submit) it runs its own statement.
 */
import type { Kysely, Transaction } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import { recordLedger } from "../metrics.ts";
import { isPostgres, pgCaptureHold, pgLockAccount, pgPlaceHold } from "../storage/ledger-pg.ts";
import { pgLedgerBatcher } from "../storage/ledger-pg-batch.ts";
import { type Param, prepare } from "../storage/prepared.ts";
import type { Database, LedgerKind } from "../storage/schema.ts";
import { countKeySpend, type KeySpend, KeySpendLimitError, keySpendState, periodStart, uncountKeySpend } from "./key-spend.ts";
import type { Micros } from "./money.ts";
import { endValues, finishUsage, insertUsage, type UsageEnd, type UsageStart, usageRow } from "./usage.ts";

/** A database handle or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

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

/** Runs `fn` in the given transaction, or opens one. */
export async function inTransaction<T>(
  db: Executor,
  fn: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return fn(db as Transaction<Database>);
  return (db as Kysely<Database>).transaction().execute(fn);
}

/** Told the account whose balance a ledger write changed, after it committed (D34 alerts). */
export type BalanceListener = (accountId: string) => void;
const balanceListeners = new WeakMap<Kysely<Database>, BalanceListener>();

/**
 * Registers the listener of `db` (one per database handle): it hears of every hold, capture, release and
 * credit made on `db` itself once committed. Writes made inside a caller's transaction are not heard
 * (their commit is the caller's); whoever listens must also look for changes by other means (a sweep).
 */
export function onBalanceChange(db: Kysely<Database>, listener: BalanceListener): void {
  balanceListeners.set(db, listener);
}

function balanceChanged(db: Executor, accountId: string): void {
  if (!db.isTransaction) balanceListeners.get(db as Kysely<Database>)?.(accountId);
}

function assertAmount(micros: Micros): void {
  if (!Number.isSafeInteger(micros) || micros <= 0) {
    throw new RangeError(`amount must be a positive safe integer of micro-USD, got ${micros}`);
  }
}

// Hot-path statements, compiled once per database (storage/prepared.ts).
const debitStmt = prepare((db, p) =>
  db
    .updateTable("accounts")
    .set((eb) => ({ balance_micros: eb("balance_micros", "-", p<number>(0)) }))
    .where("id", "=", p<string>(1))
    .where("balance_micros", ">=", p<number>(0))
    .returning("balance_micros"),
);
const creditStmt = prepare((db, p) =>
  db
    .updateTable("accounts")
    .set((eb) => ({ balance_micros: eb("balance_micros", "+", p<number>(0)) }))
    .where("id", "=", p<string>(1))
    .returning("balance_micros"),
);

/** Adds `delta` (signed micro-USD) to the balance if the result stays >= 0; returns the new balance or null. */
async function moveBalance(
  trx: Transaction<Database>,
  accountId: string,
  delta: Micros,
): Promise<Micros | null> {
  const res = delta < 0 ? await debitStmt(trx, -delta, accountId) : await creditStmt(trx, delta, accountId);
  const row = res.rows[0];
  return row ? Number(row.balance_micros) : null;
}

interface EntryFields {
  kind: LedgerKind;
  amount: Micros;
  balanceAfter: Micros;
  holdId?: string | null;
  jobId?: string | null;
  requestId?: string | null;
  reference?: string | null;
}

const ENTRY_FIELDS = 10;
function entryValues(p: Param, base: number) {
  return {
    id: p<string>(base + 8),
    request_id: p<string | null>(base + 9),
    account_id: p<string>(base),
    kind: p<LedgerKind>(base + 1),
    amount_micros: p<number>(base + 2),
    balance_after_micros: p<number>(base + 3),
    hold_id: p<string | null>(base + 4),
    job_id: p<string | null>(base + 5),
    reference: p<string | null>(base + 6),
    created_at: p<number>(base + 7),
  };
}
const insertOneEntry = prepare((db, p) => db.insertInto("ledger_entries").values(entryValues(p, 0)));
const insertTwoEntries = prepare((db, p) =>
  db.insertInto("ledger_entries").values([entryValues(p, 0), entryValues(p, ENTRY_FIELDS)]),
);

async function insertEntries(
  trx: Transaction<Database>,
  accountId: string,
  now: number,
  entries: EntryFields[],
) {
  for (const e of entries) recordLedger(e.kind, e.amount);
  const args: unknown[] = [];
  for (const e of entries) {
    args.push(
      accountId,
      e.kind,
      e.amount,
      e.balanceAfter,
      e.holdId ?? null,
      e.jobId ?? null,
      e.reference ?? null,
      now,
      newTimeOrderedId("le"),
      e.requestId ?? null,
    );
  }
  if (entries.length === 1) await insertOneEntry(trx, ...args);
  else if (entries.length === 2) await insertTwoEntries(trx, ...args);
  else throw new Error("insertEntries takes one or two entries");
}

const insertHold = prepare((db, p) =>
  db.insertInto("holds").values({
    id: p<string>(0),
    account_id: p<string>(1),
    amount_micros: p<number>(2),
    status: "open",
    captured_micros: null,
    job_id: p<string | null>(3),
    reference: p<string | null>(4),
    created_at: p<number>(5),
    settled_at: null,
    request_id: p<string | null>(6),
    key_id: p<string | null>(7),
    key_period_start: p<number | null>(8),
  }),
);
const captureStmt = prepare((db, p) =>
  db
    .updateTable("holds")
    .set({ status: "captured", captured_micros: p<number>(0), settled_at: p<number>(1) })
    .where("id", "=", p<string>(2))
    .where("status", "=", "open")
    .where("amount_micros", ">=", p<number>(0))
    .returning(["account_id", "amount_micros", "job_id", "reference", "request_id", "key_id", "key_period_start"]),
);
const releaseStmt = prepare((db, p) =>
  db
    .updateTable("holds")
    .set({ status: "released", settled_at: p<number>(0) })
    .where("id", "=", p<string>(1))
    .where("status", "=", "open")
    .returning(["account_id", "amount_micros", "job_id", "reference", "request_id", "key_id", "key_period_start"]),
);

/** Gives a settled hold's unused amount back to the key counter it was counted in (D34), if any. */
async function uncountHold(trx: Transaction<Database>, hold: { key_id: string | null; key_period_start: number | null }, amount: Micros): Promise<void> {
  if (hold.key_id !== null && hold.key_period_start !== null) await uncountKeySpend(trx, hold.key_id, Number(hold.key_period_start), amount);
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
 * the same transaction, before the balance is checked (key-spend.ts); such holds are not batched.
 * @throws KeySpendLimitError when the hold would take the key past its limit (nothing is written).
 * @throws InsufficientFundsError when the balance is below the amount (nothing is written).
 */
export async function placeHold(db: Executor, args: HoldArgs): Promise<Hold> {
  const hold = await placeHoldNow(db, args);
  // Only a hold lowers a balance (a capture gives back what the call did not use): the one write an alert hears of.
  balanceChanged(db, args.accountId);
  return hold;
}

async function placeHoldNow(db: Executor, args: HoldArgs): Promise<Hold> {
  assertAmount(args.amountMicros);
  const id = newTimeOrderedId("hold");
  const now = Date.now();
  const usage = args.usage
    ? usageRow(args.usage, { accountId: args.accountId, amountMicros: args.amountMicros, jobId: args.jobId, model: args.reference ?? "" }, now)
    : null;
  const requestId = usage?.id ?? null;
  const keySpend = args.usage && args.usage.mode !== "test" ? (args.usage.keySpend ?? null) : null;
  if (keySpend !== null) return placeCountedHold(db, args, keySpend, { id, now, usage, requestId });
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
      // On its own: batched with the other holds of this moment (storage/ledger-pg-batch.ts).
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
  if (balance === null) {
    const acc = await trx
      .selectFrom("accounts")
      .select("balance_micros")
      .where("id", "=", args.accountId)
      .executeTakeFirst();
    throw new InsufficientFundsError(args.amountMicros, acc ? Number(acc.balance_micros) : null);
  }
  await insertHold(trx, h.id, args.accountId, args.amountMicros, args.jobId ?? null, args.reference ?? null, h.now, h.requestId, h.keyId, h.keyPeriod);
  await insertEntries(trx, args.accountId, h.now, [
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
 * A hold counted against its key's spend limit (D34), in one transaction: the account row is locked first
 * (settlements lock holds, then accounts, then keys: the same order, so no deadlock), then the key's
 * counter takes the amount if the limit allows, then the balance is debited; either refusal rolls back.
 */
async function placeCountedHold(db: Executor, args: HoldArgs, spend: KeySpend, h: HoldRow): Promise<Hold> {
  return inTransaction(db, async (trx) => {
    const pg = isPostgres(trx);
    if (pg) await pgLockAccount(trx, args.accountId);
    const period = periodStart(spend.period, h.now);
    const counted = await countKeySpend(trx, spend.keyId, args.amountMicros, period);
    if (counted === null) {
      const state = await keySpendState(trx, spend.keyId, period);
      throw new KeySpendLimitError({
        limitMicros: state?.limitMicros ?? spend.limitMicros,
        spentMicros: state?.spentMicros ?? 0,
        neededMicros: args.amountMicros,
        period: spend.period,
      });
    }
    if (!pg) return sqlitePlaceHold(trx, args, { ...h, keyId: spend.keyId, keyPeriod: counted });
    const after = await pgPlaceHold(trx, {
      holdId: h.id,
      accountId: args.accountId,
      amount: args.amountMicros,
      jobId: args.jobId ?? null,
      requestId: h.requestId,
      reference: args.reference ?? null,
      now: h.now,
      usage: h.usage,
      keyId: spend.keyId,
      keyPeriod: counted,
    });
    if (after === null) throw new InsufficientFundsError(args.amountMicros, await getBalance(trx, args.accountId));
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
    const hold = (await captureStmt(trx, finalMicros, now, holdId)).rows[0];
    if (!hold) throw new Error(`hold ${holdId} is not open or is smaller than ${finalMicros}`);
    const held = Number(hold.amount_micros);
    const balance = await moveBalance(trx, hold.account_id, held - finalMicros);
    if (balance === null) throw new Error(`balance update failed for hold ${holdId}`);
    const common = { holdId, jobId: hold.job_id, requestId: hold.request_id, reference: hold.reference };
    const entries: EntryFields[] = [
      { kind: "hold_release", amount: held, balanceAfter: balance + finalMicros, ...common },
    ];
    if (finalMicros > 0)
      entries.push({ kind: "charge", amount: -finalMicros, balanceAfter: balance, ...common });
    await insertEntries(trx, hold.account_id, now, entries);
    await uncountHold(trx, hold, held - finalMicros);
    if (usage && hold.request_id !== null) await finishUsage(trx, hold.request_id, { ...usage, costMicros: finalMicros }, now);
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
  const now = Date.now();
  if (isPostgres(db) && !db.isTransaction) {
    const end = usage ? endValues({ ...usage, costMicros: 0 }) : null;
    const released = await pgLedgerBatcher(db as Kysely<Database>).settle({ holdId, final: null, now, usage: end });
    if (released === null) return null;
    for (const e of released.entries) recordLedger(e.kind, e.amount);
    return { chargedMicros: 0, balanceAfterMicros: released.balance };
  }
  return inTransaction(db, async (trx) => {
    const hold = (await releaseStmt(trx, now, holdId)).rows[0];
    if (!hold) return null;
    const held = Number(hold.amount_micros);
    const balance = await moveBalance(trx, hold.account_id, held);
    if (balance === null) throw new Error(`balance update failed for hold ${holdId}`);
    await insertEntries(trx, hold.account_id, now, [
      {
        kind: "hold_release",
        amount: held,
        balanceAfter: balance,
        holdId,
        jobId: hold.job_id,
        requestId: hold.request_id,
        reference: hold.reference,
      },
    ]);
    await uncountHold(trx, hold, held);
    if (usage && hold.request_id !== null) await finishUsage(trx, hold.request_id, { ...usage, costMicros: 0 }, now);
    return { chargedMicros: 0, balanceAfterMicros: balance };
  });
}

/**
 * Credits an account: `signup_credit`, `deposit`, `refund` or a positive `adjustment`. A deposit also
 * raises the cumulative deposits that drive the tier. Returns the balance after, micro-USD.
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
  },
): Promise<Micros> {
  assertAmount(args.amountMicros);
  const now = Date.now();
  const balance = await inTransaction(db, async (trx) => {
    const row = await trx
      .updateTable("accounts")
      .set((eb) =>
        args.kind === "deposit"
          ? {
              balance_micros: eb("balance_micros", "+", args.amountMicros),
              total_deposits_micros: eb("total_deposits_micros", "+", args.amountMicros),
            }
          : { balance_micros: eb("balance_micros", "+", args.amountMicros) },
      )
      .where("id", "=", args.accountId)
      .returning("balance_micros")
      .executeTakeFirst();
    if (!row) throw new Error(`account ${args.accountId} not found`);
    const balance = Number(row.balance_micros);
    await insertEntries(trx, args.accountId, now, [
      {
        kind: args.kind,
        amount: args.amountMicros,
        balanceAfter: balance,
        reference: args.reference,
        jobId: args.jobId,
        holdId: args.holdId,
        requestId: args.requestId,
      },
    ]);
    if (args.kind === "refund" && args.holdId) {
      // A refunded charge no longer counts against the key's spend limit (D34).
      const hold = await trx.selectFrom("holds").select(["key_id", "key_period_start"]).where("id", "=", args.holdId).executeTakeFirst();
      if (hold) await uncountHold(trx, hold, args.amountMicros);
    }
    return balance;
  });
  balanceChanged(db, args.accountId);
  return balance;
}

/**
 * Releases synchronous-call holds (no job) still open after `olderThanMs`: the process that placed them
 * died between hold and capture (design.md invariant 4). Job holds are the job sweep's. Returns how many
 * were released.
 */
export async function releaseStaleHolds(db: Kysely<Database>, olderThanMs: number): Promise<number> {
  const cutoff = Date.now() - olderThanMs;
  const stale = await db
    .selectFrom("holds")
    .select("id")
    .where("status", "=", "open")
    .where("job_id", "is", null)
    .where("created_at", "<", cutoff)
    .limit(1000)
    .execute();
  let released = 0;
  for (const h of stale) {
    // The call's process died: its usage record (D29) ends failed, charged nothing, with the release.
    if (await releaseHold(db, h.id, { status: "failed" })) released++;
  }
  return released;
}

/** One ledger entry as the API shows it (D8, D17); amounts in micro-USD. */
export interface LedgerEntry {
  id: string;
  kind: LedgerKind;
  amountMicros: Micros;
  balanceAfterMicros: Micros;
  jobId: string | null;
  /** The request of the paid call the entry belongs to (D29), or null. */
  requestId: string | null;
  /** A deposit's payment reference, the model of a call, ... (D29), or null. */
  reference: string | null;
  createdAt: number;
}

/** The columns of a ledger entry as the API shows it. */
const ENTRY_COLUMNS = ["id", "kind", "amount_micros", "balance_after_micros", "job_id", "request_id", "reference", "created_at"] as const;

/** Maps a row of {@link ENTRY_COLUMNS} to a {@link LedgerEntry}. */
function entryOf(r: {
  id: string;
  kind: LedgerKind;
  amount_micros: number;
  balance_after_micros: number;
  job_id: string | null;
  request_id: string | null;
  reference: string | null;
  created_at: number;
}): LedgerEntry {
  return {
    id: r.id,
    kind: r.kind,
    amountMicros: Number(r.amount_micros),
    balanceAfterMicros: Number(r.balance_after_micros),
    jobId: r.job_id,
    requestId: r.request_id,
    reference: r.reference,
    createdAt: Number(r.created_at),
  };
}

/**
 * The entries of one request of the account (D29 `GET /v1/requests/{id}`), oldest first: its hold and
 * then its capture (`hold_release`, `charge`) or release, and a `refund` if a stream broke off.
 */
export async function ledgerOfRequest(db: Executor, accountId: string, requestId: string): Promise<LedgerEntry[]> {
  const rows = await db
    .selectFrom("ledger_entries")
    .select([...ENTRY_COLUMNS])
    .where("request_id", "=", requestId)
    .where("account_id", "=", accountId)
    .orderBy("seq", "asc")
    .execute();
  return rows.map(entryOf);
}

/**
 * The account's ledger, newest first (by the internal sequence, so entries of the same millisecond keep
 * their order): at most `limit` entries older than the entry `after` (a public id from a previous page),
 * and whether more exist. An `after` that names no entry of this account is ignored (the first page).
 */
export async function listLedger(
  db: Executor,
  accountId: string,
  opts: { limit: number; after: string | null },
): Promise<{ entries: LedgerEntry[]; hasMore: boolean }> {
  let q = db
    .selectFrom("ledger_entries")
    .select([...ENTRY_COLUMNS])
    .where("account_id", "=", accountId)
    .orderBy("seq", "desc")
    .limit(opts.limit + 1);
  if (opts.after !== null) {
    const anchor = await db
      .selectFrom("ledger_entries")
      .select("seq")
      .where("id", "=", opts.after)
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    if (anchor) q = q.where("seq", "<", Number(anchor.seq));
  }
  const rows = await q.execute();
  const hasMore = rows.length > opts.limit;
  return {
    hasMore,
    entries: rows.slice(0, opts.limit).map(entryOf),
  };
}

/** Sum of the account's ledger entries, micro-USD (tests and audits compare it with the balance). */
export async function ledgerSum(db: Executor, accountId: string): Promise<Micros> {
  const row = await db
    .selectFrom("ledger_entries")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("amount_micros"), eb.lit(0)).as("total"))
    .where("account_id", "=", accountId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/** The account's balance, micro-USD, or null when there is no such account. */
export async function getBalance(db: Executor, accountId: string): Promise<Micros | null> {
  const row = await db
    .selectFrom("accounts")
    .select("balance_micros")
    .where("id", "=", accountId)
    .executeTakeFirst();
  return row ? Number(row.balance_micros) : null;
}
