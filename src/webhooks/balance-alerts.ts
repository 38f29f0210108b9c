/**
 * Low-balance alerts (D34): an account's threshold (`PUT /v1/billing/alerts`) and the one `balance.low`
 * event (D31) sent when its balance falls below it, armed again once the balance is back above.
 *
 * The state is two columns of the account: the threshold and `low_balance_armed`. One conditional UPDATE
 * ({@link checkLowBalance}) moves it: armed and below disarms it and writes the event in the same
 * transaction; disarmed and above arms it again. Whoever runs it first wins, so the event is written once
 * per fall whatever the number of processes, and only if the fall committed.
 *
 * Re-arming: every ledger statement that gives money back (deposits, Stripe top-ups, operator credits,
 * refunds, hold releases and captures; billing/ledger.repository.ts `rearmedAfterCredit` and its
 * PostgreSQL forms) arms the alert again in its own UPDATE when the new balance is above the threshold.
 * So a recovery is never waiting for a check, and the next fall below, however soon, sends its event; a
 * fall never sends two, since only a recovery re-arms.
 *
 * Firing: after every hold made outside a caller's transaction (the ledger tells
 * {@link BalanceAlerts.touch}), for accounts this process knows to have a threshold; and a sweep every few
 * seconds finds every account whose state is due (holds made inside transactions, such as job holds, or
 * by another process, or lost with a crash), so no fall is missed for longer than the sweep interval.
 */
import type { Kysely } from "kysely";
import { type AuditContext, recordAudit } from "../accounts/audit.ts";
import type { Executor } from "../billing/ledger.ts";
import { inTransaction } from "../billing/ledger.ts";
import type { AlertsBody } from "../contracts/billing.ts";
import { type Micros, microsToUsd, usdToMicros } from "../money.ts";
import { errors } from "../errors.ts";
import type { Database } from "../storage/schema.ts";
import { accountsAlertDue, alertState, alertThreshold, moveAlertState, setAlertThreshold } from "./balance-alerts.repository.ts";
import { CheckQueue, PeriodicSweep } from "./periodic-sweep.ts";
import { enqueueBalanceLow } from "./outbox.ts";

/** The alert setting as the API shows it; USD amounts. */
export interface AlertView {
  object: "billing.alerts";
  /** The threshold, or null when no alert is set. */
  low_balance_usd: number | null;
  /** Whether the next fall below the threshold sends `balance.low` (false after one was sent, until the balance is back above). */
  armed: boolean;
  balance_usd: number;
}

/** The largest threshold accepted, micro-USD (one million USD). */
const MAX_THRESHOLD_MICROS = 1_000_000 * 1_000_000;

/** `GET /v1/billing/alerts`. @throws AppError 401 when the account vanished. */
export async function getLowBalanceAlert(db: Executor, accountId: string): Promise<AlertView> {
  const state = await alertState(db, accountId);
  if (!state) throw errors.auth();
  return {
    object: "billing.alerts",
    low_balance_usd: state.thresholdMicros === null ? null : microsToUsd(state.thresholdMicros),
    armed: state.armed,
    balance_usd: microsToUsd(state.balanceMicros),
  };
}

/**
 * Parses the body of `PUT /v1/billing/alerts` `{"low_balance_usd": <number or null>}` (D34) into micro-USD
 * or null (no alert).
 * @throws AppError 400 `invalid_request` (param `low_balance_usd`) unless a non-negative USD amount with at
 *   most 6 decimals or null.
 */
export function parseThreshold(body: AlertsBody): Micros | null {
  const raw = body.low_balance_usd;
  if (raw === null) return null;
  const micros = typeof raw === "number" ? usdToMicros(raw) : null;
  if (micros === null || micros < 0 || micros > MAX_THRESHOLD_MICROS) {
    throw errors.invalidRequest("low_balance_usd must be a non-negative number of USD with at most 6 decimals, or null to remove the alert.", "low_balance_usd");
  }
  return micros;
}

/** A low-balance state change found by {@link checkLowBalance}. */
export type AlertChange = "fired" | "rearmed" | null;

/**
 * Moves the account's alert state if it is due (see the module comment): armed with the balance below the
 * threshold sends one `balance.low` event `{balance_usd, threshold_usd}` to the account's endpoints that
 * take it and disarms; disarmed with the balance above the threshold arms again. Returns what changed.
 */
export async function checkLowBalance(db: Kysely<Database>, accountId: string): Promise<AlertChange> {
  return inTransaction(db, async (trx) => {
    const moved = await moveAlertState(trx, accountId);
    if (!moved) return null;
    if (moved.armed) return "rearmed";
    await enqueueBalanceLow(trx, accountId, {
      balance_usd: microsToUsd(moved.balanceMicros),
      threshold_usd: microsToUsd(moved.thresholdMicros),
    });
    return "fired";
  });
}

/** How long this process trusts what it read of an account's threshold, ms. */
const THRESHOLD_CACHE_MS = 5000;
const THRESHOLD_CACHE_MAX = 100_000;

/** Minimal logger. */
interface AlertLog {
  warn(obj: object, msg?: string): void;
}

/** This process's alert checks: after ledger changes ({@link touch}) and by a periodic sweep. */
export class BalanceAlerts {
  readonly #db: Kysely<Database>;
  readonly #log: AlertLog;
  /** Threshold of recently touched accounts (null: none), as read at `at`. */
  readonly #thresholds = new Map<string, { micros: Micros | null; at: number }>();
  readonly #queue = new CheckQueue((accountId) => this.#check(accountId));
  readonly #periodic: PeriodicSweep;
  /** Called after each `balance.low` written (the delivery loop looks at the outbox at once). */
  onFired: (() => void) | null = null;

  constructor(db: Kysely<Database>, log: AlertLog, opts: { sweepMs?: number } = {}) {
    this.#db = db;
    this.#log = log;
    this.#periodic = new PeriodicSweep(() => this.sweep(), opts.sweepMs ?? 5000, log, "low-balance sweep");
  }

  /**
   * The balance of `accountId` changed (a ledger write committed): checks its alert soon, off the
   * caller's path, when the account has a threshold.
   */
  touch(accountId: string): void {
    const known = this.#thresholds.get(accountId);
    if (known && known.micros === null && Date.now() - known.at < THRESHOLD_CACHE_MS) return;
    this.#queue.add(accountId);
  }

  /** The threshold was set in this process: later touches see it at once. */
  thresholdSet(accountId: string, micros: Micros | null): void {
    this.#remember(accountId, micros);
  }

  #remember(accountId: string, micros: Micros | null): void {
    if (this.#thresholds.size >= THRESHOLD_CACHE_MAX) this.#thresholds.clear();
    this.#thresholds.set(accountId, { micros, at: Date.now() });
  }

  async #check(accountId: string): Promise<void> {
    try {
      const known = this.#thresholds.get(accountId);
      if (!known || Date.now() - known.at >= THRESHOLD_CACHE_MS) {
        this.#remember(accountId, (await alertThreshold(this.#db, accountId))?.thresholdMicros ?? null);
      }
      if (this.#thresholds.get(accountId)?.micros == null) return;
      if ((await checkLowBalance(this.#db, accountId)) === "fired") this.onFired?.();
    } catch (err) {
      // The sweep tries again; a failed check never fails the call that moved the balance.
      this.#log.warn({ err: err instanceof Error ? err.message : String(err), accountId }, "low-balance check failed");
    }
  }

  /**
   * One sweep: checks every account whose alert state is due (armed and below, or disarmed and above).
   * Returns how many events it wrote.
   */
  async sweep(limit = 500): Promise<number> {
    const due = await accountsAlertDue(this.#db, limit);
    let fired = 0;
    for (const id of due) if ((await checkLowBalance(this.#db, id)) === "fired") fired++;
    if (fired > 0) this.onFired?.();
    return fired;
  }

  /** Starts the periodic sweep. */
  start(): void {
    this.#periodic.start();
  }

  /** Stops the sweep and waits for a sweep in flight. */
  async stop(): Promise<void> {
    await this.#periodic.stop();
  }
}

/**
 * `PUT /v1/billing/alerts` (D34): sets (micro-USD) or removes (null) the account's low-balance threshold.
 * A new threshold is armed and checked at once, so setting one above the current balance sends
 * `balance.low` right away; setting the same threshold again keeps its state. Writes `alert.updated`
 * (D45; `low_balance_usd` before and after) as `audit`, in the transaction of the change.
 * @throws AppError 401 when the account vanished.
 */
export async function setLowBalanceAlert(
  db: Kysely<Database>,
  alerts: BalanceAlerts | null,
  accountId: string,
  micros: Micros | null,
  audit: AuditContext,
): Promise<AlertView> {
  const same = await inTransaction(db, async (trx) => {
    const before = await alertThreshold(trx, accountId);
    if (!before) throw errors.auth();
    const unchanged = before.thresholdMicros === micros;
    if (!unchanged) await setAlertThreshold(trx, accountId, micros);
    const usd = (m: Micros | null) => (m === null ? null : microsToUsd(m));
    await recordAudit(trx, audit, {
      orgId: accountId,
      action: "alert.updated",
      target: { type: "org", id: accountId },
      changes: unchanged ? {} : { low_balance_usd: [usd(before.thresholdMicros), usd(micros)] },
    });
    return unchanged;
  });
  alerts?.thresholdSet(accountId, micros);
  if (micros !== null && !same && (await checkLowBalance(db, accountId)) === "fired") alerts?.onFired?.();
  return getLowBalanceAlert(db, accountId);
}
