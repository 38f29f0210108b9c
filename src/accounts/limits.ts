/**
 * The effective limits of an account (D12, D22): its tier (deposits, or the operator's override) and the
 * operator's per-field overrides applied to the tier row. The pure rules live in limits/effective.ts;
 * this module reads the account (accounts sit above limits).
 */
import type { Executor } from "../billing/ledger.ts";
import { effectiveTier, tierRow } from "../catalog/tiers.ts";
import { applyOverrides, type EffectiveLimits } from "../limits/effective.ts";
import type { AccountLimitsRow } from "../storage/job-queue.ts";
import { accountLimitsRow } from "./accounts.repository.ts";

/** The memo key of an account's limits: its effective tier and its overrides' JSON. */
function memoKey(row: AccountLimitsRow): { tier: number; key: string } {
  const tier = effectiveTier(Number(row.total_deposits_micros), row.tier_override === null ? null : Number(row.tier_override));
  return { tier, key: `${tier}|${row.limits_override ?? ""}` };
}

/**
 * The effective limits of an account from its row's columns (also for rows read elsewhere: the job claim
 * reads them with its lock). Without overrides the returned row is the tier's own row: read only.
 */
export function limitsOf(row: AccountLimitsRow): EffectiveLimits {
  return applyOverrides(tierRow(memoKey(row).tier), row.limits_override);
}

/**
 * Effective limits memoized by (tier, overrides): most accounts share a handful of rows, so the hot path
 * (authentication, once per request) parses no override JSON. One per gateway (held by its auth cache),
 * never shared between gateways of one process. The rows it returns are shared: read only.
 */
export class LimitsMemo {
  readonly #rows = new Map<string, EffectiveLimits>();
  /** Most distinct (tier, overrides) pairs kept; past it the memo starts over. */
  static readonly MAX_ENTRIES = 10_000;

  /** {@link limitsOf} `row`, memoized. */
  of(row: AccountLimitsRow): EffectiveLimits {
    const { tier, key } = memoKey(row);
    let limits = this.#rows.get(key);
    if (!limits) {
      if (this.#rows.size > LimitsMemo.MAX_ENTRIES) this.#rows.clear();
      limits = applyOverrides(tierRow(tier), row.limits_override);
      this.#rows.set(key, limits);
    }
    return limits;
  }
}

/**
 * The account's effective limits (its tier row with the operator's overrides, D12/D22), or null when the
 * account does not exist: one read of the account row, and everything a job submit needs from it: the
 * video guard (`videoConcurrent`, `combinedMediaConcurrent`, `name`), the concurrency and queue caps and
 * the pool a job's queue position counts in (`mediaCaps` of limits/effective.ts). The returned row may be
 * the tier's own row: read only.
 */
export async function effectiveLimits(db: Executor, accountId: string): Promise<EffectiveLimits | null> {
  const row = await accountLimitsRow(db, accountId);
  return row ? limitsOf(row) : null;
}
