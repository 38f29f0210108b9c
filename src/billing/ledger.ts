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
 */
import type { Kysely, Transaction } from "kysely";
import { newId } from "../ids.ts";
import { recordLedger } from "../metrics.ts";
import { isPostgres, pgCaptureHold, pgPlaceHold } from "../storage/ledger-pg.ts";
import { type Param, prepare } from "../storage/prepared.ts";
import type { Database, LedgerKind } from "../storage/schema.ts";
import type { Micros } from "./money.ts";

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
  reference?: string | null;
}

const ENTRY_FIELDS = 9;
function entryValues(p: Param, base: number) {
  return {
    id: p<string>(base + 8),
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
      newId("le"),
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
  }),
);
const captureStmt = prepare((db, p) =>
  db
    .updateTable("holds")
    .set({ status: "captured", captured_micros: p<number>(0), settled_at: p<number>(1) })
    .where("id", "=", p<string>(2))
    .where("status", "=", "open")
    .where("amount_micros", ">=", p<number>(0))
    .returning(["account_id", "amount_micros", "job_id", "reference"]),
);
const releaseStmt = prepare((db, p) =>
  db
    .updateTable("holds")
    .set({ status: "released", settled_at: p<number>(0) })
    .where("id", "=", p<string>(1))
    .where("status", "=", "open")
    .returning(["account_id", "amount_micros", "job_id", "reference"]),
);

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
 * @throws InsufficientFundsError when the balance is below the amount (nothing is written).
 */
export async function placeHold(
  db: Executor,
  args: { accountId: string; amountMicros: Micros; jobId?: string | null; reference?: string | null },
): Promise<Hold> {
  assertAmount(args.amountMicros);
  const id = newId("hold");
  const now = Date.now();
  if (isPostgres(db)) {
    const balance = await pgPlaceHold(db, {
      holdId: id,
      accountId: args.accountId,
      amount: args.amountMicros,
      jobId: args.jobId ?? null,
      reference: args.reference ?? null,
      now,
    });
    if (balance === null) throw new InsufficientFundsError(args.amountMicros, await getBalance(db, args.accountId));
    recordLedger("hold", -args.amountMicros);
    return { id, accountId: args.accountId, amountMicros: args.amountMicros, balanceAfterMicros: balance };
  }
  return inTransaction(db, async (trx) => {
    const balance = await moveBalance(trx, args.accountId, -args.amountMicros);
    if (balance === null) {
      const acc = await trx
        .selectFrom("accounts")
        .select("balance_micros")
        .where("id", "=", args.accountId)
        .executeTakeFirst();
      throw new InsufficientFundsError(args.amountMicros, acc ? Number(acc.balance_micros) : null);
    }
    await insertHold(
      trx,
      id,
      args.accountId,
      args.amountMicros,
      args.jobId ?? null,
      args.reference ?? null,
      now,
    );
    await insertEntries(trx, args.accountId, now, [
      {
        kind: "hold",
        amount: -args.amountMicros,
        balanceAfter: balance,
        holdId: id,
        jobId: args.jobId,
        reference: args.reference,
      },
    ]);
    return { id, accountId: args.accountId, amountMicros: args.amountMicros, balanceAfterMicros: balance };
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
 * throws and changes nothing.
 * @throws Error when the hold is not open or the final amount exceeds the hold.
 */
export async function captureHold(db: Executor, holdId: string, finalMicros: Micros): Promise<Settlement> {
  if (!Number.isSafeInteger(finalMicros) || finalMicros < 0) {
    throw new RangeError(`final amount must be a non-negative safe integer, got ${finalMicros}`);
  }
  const now = Date.now();
  if (isPostgres(db)) {
    const captured = await pgCaptureHold(db, { holdId, final: finalMicros, now });
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
    const common = { holdId, jobId: hold.job_id, reference: hold.reference };
    const entries: EntryFields[] = [
      { kind: "hold_release", amount: held, balanceAfter: balance + finalMicros, ...common },
    ];
    if (finalMicros > 0)
      entries.push({ kind: "charge", amount: -finalMicros, balanceAfter: balance, ...common });
    await insertEntries(trx, hold.account_id, now, entries);
    return { chargedMicros: finalMicros, balanceAfterMicros: balance };
  });
}

/**
 * Releases an open hold in full (`hold_release`). Idempotent: returns null when the hold was already
 * captured or released (nothing changes), otherwise the settlement.
 */
export async function releaseHold(db: Executor, holdId: string): Promise<Settlement | null> {
  const now = Date.now();
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
        reference: hold.reference,
      },
    ]);
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
  },
): Promise<Micros> {
  assertAmount(args.amountMicros);
  const now = Date.now();
  return inTransaction(db, async (trx) => {
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
      },
    ]);
    return balance;
  });
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
    if (await releaseHold(db, h.id)) released++;
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
  createdAt: number;
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
    .select(["id", "kind", "amount_micros", "balance_after_micros", "job_id", "created_at"])
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
    entries: rows.slice(0, opts.limit).map((r) => ({
      id: r.id,
      kind: r.kind,
      amountMicros: Number(r.amount_micros),
      balanceAfterMicros: Number(r.balance_after_micros),
      jobId: r.job_id,
      createdAt: Number(r.created_at),
    })),
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
