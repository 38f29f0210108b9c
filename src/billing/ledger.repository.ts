/**
 * The SQL of the ledger (billing/ledger.ts): account balances, `holds` and `ledger_entries`, in the
 * portable form (SQLite, and PostgreSQL inside a transaction where the ledger does not use the one-statement
 * forms of ledger-pg.repository.ts). Amounts are micro-USD, times epoch ms. What to write, in what order,
 * and which errors to raise stays in ledger.ts; these functions only run the statements and map the rows.
 */
import type { ExpressionBuilder, Kysely, Transaction } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import { type Param, prepare } from "../storage/prepared.ts";
import type { Database, LedgerKind } from "../storage/schema.ts";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";

/**
 * D34: the account's `low_balance_armed` once `credit` (micro-USD, >= 0) is added to its balance: armed
 * again when the new balance is above its alert threshold, else as it was (no threshold: as it was). Set
 * by every statement that gives money back (credits, captures, releases), so a recovery re-arms the alert
 * in its own transaction and the next fall below sends `balance.low` whatever the timing
 * (webhooks/balance-alerts.ts).
 */
export function rearmedAfterCredit(eb: ExpressionBuilder<Database, "accounts">, credit: number) {
  return eb
    .case()
    .when(eb(eb("balance_micros", "+", credit), ">", eb.ref("low_balance_micros")))
    .then(eb.lit(1))
    .else(eb.ref("low_balance_armed"))
    .end();
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
    .set((eb) => ({ balance_micros: eb("balance_micros", "+", p<number>(0)), low_balance_armed: rearmedAfterCredit(eb, p<number>(0)) }))
    .where("id", "=", p<string>(1))
    .returning("balance_micros"),
);

/**
 * Adds `delta` (signed micro-USD) to the balance if the result stays >= 0; returns the new balance or null.
 * A credit (delta >= 0) back above the low-balance threshold re-arms the alert ({@link rearmedAfterCredit}).
 */
export async function moveBalance(
  trx: Transaction<Database>,
  accountId: string,
  delta: Micros,
): Promise<Micros | null> {
  const res = delta < 0 ? await debitStmt(trx, -delta, accountId) : await creditStmt(trx, delta, accountId);
  const row = res.rows[0];
  return row ? Number(row.balance_micros) : null;
}

/**
 * Adds `amountMicros` (> 0) to the balance, and for a deposit to the cumulative deposits that drive the
 * tier too; a balance back above the low-balance threshold re-arms the alert ({@link rearmedAfterCredit}).
 * Returns the balance after, or null when there is no such account.
 */
export async function creditBalance(trx: Transaction<Database>, accountId: string, amountMicros: Micros, deposit: boolean): Promise<Micros | null> {
  const row = await trx
    .updateTable("accounts")
    .set((eb) =>
      deposit
        ? {
            balance_micros: eb("balance_micros", "+", amountMicros),
            total_deposits_micros: eb("total_deposits_micros", "+", amountMicros),
            low_balance_armed: rearmedAfterCredit(eb, amountMicros),
          }
        : { balance_micros: eb("balance_micros", "+", amountMicros), low_balance_armed: rearmedAfterCredit(eb, amountMicros) },
    )
    .where("id", "=", accountId)
    .returning("balance_micros")
    .executeTakeFirst();
  return row ? Number(row.balance_micros) : null;
}

/** One ledger entry to write: its kind, signed amount and the balance right after it (D17). */
export interface EntryFields {
  kind: LedgerKind;
  amount: Micros;
  balanceAfter: Micros;
  holdId?: string | null;
  jobId?: string | null;
  requestId?: string | null;
  reference?: string | null;
  /** The user behind a credit (D41), or null; a paid call's entries name theirs through its usage record. */
  userId?: string | null;
}

const ENTRY_FIELDS = 11;
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
    user_id: p<string | null>(base + 10),
  };
}
const insertOneEntry = prepare((db, p) => db.insertInto("ledger_entries").values(entryValues(p, 0)));
const insertTwoEntries = prepare((db, p) =>
  db.insertInto("ledger_entries").values([entryValues(p, 0), entryValues(p, ENTRY_FIELDS)]),
);

/**
 * Inserts one or two entries of the account made at `now`, in that order (so their `seq` order is the order
 * of the balances they carry).
 * @throws Error for any other number of entries.
 */
export async function insertEntries(
  trx: Transaction<Database>,
  accountId: string,
  now: number,
  entries: EntryFields[],
): Promise<void> {
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
      e.userId ?? null,
    );
  }
  if (entries.length === 1) await insertOneEntry(trx, ...args);
  else if (entries.length === 2) await insertTwoEntries(trx, ...args);
  else throw new Error("insertEntries takes one or two entries");
}

const insertHoldStmt = prepare((db, p) =>
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

/** An open hold to insert; `keyId`/`keyPeriod` name the key counter that counted it (D34), or null. */
export interface OpenHoldRow {
  id: string;
  accountId: string;
  amountMicros: Micros;
  jobId: string | null;
  reference: string | null;
  createdAt: number;
  requestId: string | null;
  keyId: string | null;
  keyPeriod: number | null;
}

/** Inserts an open hold. */
export async function insertHold(trx: Transaction<Database>, h: OpenHoldRow): Promise<void> {
  await insertHoldStmt(trx, h.id, h.accountId, h.amountMicros, h.jobId, h.reference, h.createdAt, h.requestId, h.keyId, h.keyPeriod);
}

const captureStmt = prepare((db, p) =>
  db
    .updateTable("holds")
    .set({ status: "captured", captured_micros: p<number>(0), settled_at: p<number>(1) })
    .where("id", "=", p<string>(2))
    .where("status", "=", "open")
    .where("amount_micros", ">=", p<number>(0))
    .returning(["account_id", "amount_micros", "job_id", "reference", "request_id", "key_id", "key_period_start", "budgeted"]),
);
const releaseStmt = prepare((db, p) =>
  db
    .updateTable("holds")
    .set({ status: "released", settled_at: p<number>(0) })
    .where("id", "=", p<string>(1))
    .where("status", "=", "open")
    .returning(["account_id", "amount_micros", "job_id", "reference", "request_id", "key_id", "key_period_start", "budgeted"]),
);

/** A hold that left `open`, as the settlement statements return it. */
export interface SettledHoldRow {
  accountId: string;
  amountMicros: Micros;
  jobId: string | null;
  reference: string | null;
  requestId: string | null;
  /** The key counter the hold was counted in (D34), or null. */
  keyId: string | null;
  keyPeriodStart: number | null;
  /** Whether the hold was counted in budget counters (D44). */
  budgeted: boolean;
}

function settledOf(r: {
  account_id: string;
  amount_micros: number;
  job_id: string | null;
  reference: string | null;
  request_id: string | null;
  key_id: string | null;
  key_period_start: number | null;
  budgeted: number;
}): SettledHoldRow {
  return {
    accountId: r.account_id,
    amountMicros: Number(r.amount_micros),
    jobId: r.job_id,
    reference: r.reference,
    requestId: r.request_id,
    keyId: r.key_id,
    keyPeriodStart: r.key_period_start === null ? null : Number(r.key_period_start),
    budgeted: Number(r.budgeted) === 1,
  };
}

/** Marks the hold captured for `finalMicros` if it is open and holds at least that much; null otherwise (nothing written). */
export async function markCaptured(trx: Transaction<Database>, holdId: string, finalMicros: Micros, now: number): Promise<SettledHoldRow | null> {
  const row = (await captureStmt(trx, finalMicros, now, holdId)).rows[0];
  return row ? settledOf(row) : null;
}

/** Marks the hold released if it is open; null otherwise (nothing written). */
export async function markReleased(trx: Transaction<Database>, holdId: string, now: number): Promise<SettledHoldRow | null> {
  const row = (await releaseStmt(trx, now, holdId)).rows[0];
  return row ? settledOf(row) : null;
}

/** The key counter a hold was counted in (D34), or null when there is no such hold. */
export async function holdKeyCounter(db: Executor, holdId: string): Promise<{ keyId: string | null; keyPeriodStart: number | null } | null> {
  const hold = await db.selectFrom("holds").select(["key_id", "key_period_start"]).where("id", "=", holdId).executeTakeFirst();
  if (!hold) return null;
  return { keyId: hold.key_id, keyPeriodStart: hold.key_period_start === null ? null : Number(hold.key_period_start) };
}

/**
 * Ids of at most `limit` synchronous-call holds (no job, not a realtime socket's) still open and created
 * before `cutoff` (epoch ms). A socket's hold lives as long as the socket and has its own sweep
 * ({@link staleMeteredHolds}).
 */
export async function staleSyncHoldIds(db: Kysely<Database>, cutoff: number, limit: number): Promise<string[]> {
  const stale = await db
    .selectFrom("holds")
    .select("id")
    .where("status", "=", "open")
    .where("job_id", "is", null)
    .where("heartbeat_at", "is", null)
    .where("created_at", "<", cutoff)
    .limit(limit)
    .execute();
  return stale.map((h) => h.id);
}

/** An open hold as a metered extension reads it (locked on PostgreSQL). Amounts micro-USD. */
export interface LockedHold {
  accountId: string;
  amountMicros: Micros;
  requestId: string | null;
  reference: string | null;
  keyId: string | null;
  keyPeriodStart: number | null;
  /** Whether the hold was counted in budget counters (D44). */
  budgeted: boolean;
}

/**
 * The open hold `holdId` (null when it is not open), its row locked until the end of `trx` on PostgreSQL
 * (SQLite's single writer needs no lock): the first lock of a metered extension, which then locks the
 * account and the key, the order every settlement takes (no deadlock).
 */
export async function lockOpenHold(trx: Transaction<Database>, holdId: string, pg: boolean): Promise<LockedHold | null> {
  let q = trx
    .selectFrom("holds")
    .select(["account_id", "amount_micros", "request_id", "reference", "key_id", "key_period_start", "budgeted"])
    .where("id", "=", holdId)
    .where("status", "=", "open");
  if (pg) q = q.forUpdate();
  const r = await q.executeTakeFirst();
  if (!r) return null;
  return {
    accountId: r.account_id,
    amountMicros: Number(r.amount_micros),
    requestId: r.request_id,
    reference: r.reference,
    keyId: r.key_id,
    keyPeriodStart: r.key_period_start === null ? null : Number(r.key_period_start),
    budgeted: Number(r.budgeted) === 1,
  };
}

/**
 * Adds `amountMicros` (> 0) to an open hold and persists its running count (`metered_micros` at `now`, the
 * heartbeat of a realtime socket, D42). Returns whether the hold was open (nothing written otherwise).
 */
export async function growHold(trx: Transaction<Database>, holdId: string, amountMicros: Micros, meteredMicros: Micros, now: number): Promise<boolean> {
  const res = await trx
    .updateTable("holds")
    .set((eb) => ({ amount_micros: eb("amount_micros", "+", amountMicros), metered_micros: meteredMicros, heartbeat_at: now }))
    .where("id", "=", holdId)
    .where("status", "=", "open")
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/**
 * Persists a realtime hold's running count: `metered_micros` (what it has charged so far, micro-USD) and the
 * heartbeat `now` (epoch ms). Returns whether the hold is still open.
 */
export async function markMetered(db: Executor, holdId: string, meteredMicros: Micros, now: number): Promise<boolean> {
  const res = await db
    .updateTable("holds")
    .set({ metered_micros: meteredMicros, heartbeat_at: now })
    .where("id", "=", holdId)
    .where("status", "=", "open")
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** An open realtime hold whose heartbeat stopped: what it holds and what it had charged, micro-USD. */
export interface StaleMeteredHold {
  id: string;
  amountMicros: Micros;
  meteredMicros: Micros;
  requestId: string | null;
  createdAt: number;
  heartbeatAt: number;
}

/** At most `limit` open realtime holds (D42, D43) whose last heartbeat is before `cutoff` (epoch ms). */
export async function staleMeteredHolds(db: Kysely<Database>, cutoff: number, limit: number): Promise<StaleMeteredHold[]> {
  const rows = await db
    .selectFrom("holds")
    .select(["id", "amount_micros", "metered_micros", "request_id", "created_at", "heartbeat_at"])
    .where("status", "=", "open")
    .where("heartbeat_at", "is not", null)
    .where("heartbeat_at", "<", cutoff)
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    amountMicros: Number(r.amount_micros),
    meteredMicros: Number(r.metered_micros ?? 0),
    requestId: r.request_id,
    createdAt: Number(r.created_at),
    heartbeatAt: Number(r.heartbeat_at),
  }));
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
  /** The organization (D41). */
  accountId: string;
  /** The user behind the entry (D41): a credit's own, a paid call's from its usage record; or null. */
  userId: string | null;
}

/** The columns of a ledger entry as the API shows it. */
const ENTRY_COLUMNS = [
  "ledger_entries.id",
  "ledger_entries.account_id",
  "ledger_entries.kind",
  "ledger_entries.amount_micros",
  "ledger_entries.balance_after_micros",
  "ledger_entries.job_id",
  "ledger_entries.request_id",
  "ledger_entries.reference",
  "ledger_entries.created_at",
] as const;

/** {@link ENTRY_COLUMNS} and the entry's user (D41): its own, else its paid call's (a primary-key lookup). */
function selectEntries(db: Executor) {
  return db.selectFrom("ledger_entries").select((eb) => [
    ...ENTRY_COLUMNS,
    eb.fn
      .coalesce(
        "ledger_entries.user_id",
        eb.selectFrom("usage_records").select("usage_records.user_id").whereRef("usage_records.id", "=", "ledger_entries.request_id"),
      )
      .as("user_id"),
  ]);
}

/** Maps a row of {@link selectEntries} to a {@link LedgerEntry}. */
function entryOf(r: {
  id: string;
  account_id: string;
  user_id: string | null;
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
    accountId: r.account_id,
    userId: r.user_id,
  };
}

/**
 * The entries of one request of the account (D29 `GET /v1/requests/{id}`), oldest first: its hold and
 * then its capture (`hold_release`, `charge`) or release, and a `refund` if a stream broke off.
 */
export async function ledgerOfRequest(db: Executor, accountId: string, requestId: string): Promise<LedgerEntry[]> {
  const rows = await selectEntries(db)
    .where("ledger_entries.request_id", "=", requestId)
    .where("ledger_entries.account_id", "=", accountId)
    .orderBy("ledger_entries.seq", "asc")
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
  let q = selectEntries(db)
    .where("ledger_entries.account_id", "=", accountId)
    .orderBy("ledger_entries.seq", "desc")
    .limit(opts.limit + 1);
  if (opts.after !== null) {
    const anchor = await db
      .selectFrom("ledger_entries")
      .select("seq")
      .where("id", "=", opts.after)
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    if (anchor) q = q.where("ledger_entries.seq", "<", Number(anchor.seq));
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
