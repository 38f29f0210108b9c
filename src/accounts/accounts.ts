/**
 * An account's state as the API shows it (spec "Authentication", D8, D9): balance, deposits and the
 * effective tier. Registration and login are in registration.ts, authentication and its cache in
 * auth-cache.ts, key management in keys.ts, effective limits in limits.ts; the SQL in the
 * `*.repository.ts` modules beside them.
 */
import type { Executor } from "../billing/ledger.ts";
import { type Micros, microsToUsd } from "../money.ts";
import { effectiveTier, tierRow } from "../catalog/tiers.ts";
import { errors } from "../errors.ts";
import { accountById } from "./accounts.repository.ts";

/** The account fields the API shows. */
export interface AccountView {
  user_id: string;
  email: string;
  balance_usd: number;
  tier: number;
  tier_name: string;
  total_deposits_usd: number;
  created_at: string;
}

/** Loads an account's state: balance, deposits and effective tier (override wins). */
export async function getAccount(
  db: Executor,
  accountId: string,
): Promise<{
  id: string;
  email: string;
  balanceMicros: Micros;
  totalDepositsMicros: Micros;
  tier: number;
  tierOverride: number | null;
  createdAt: number;
} | null> {
  const a = await accountById(db, accountId);
  if (!a) return null;
  return { ...a, tier: effectiveTier(a.totalDepositsMicros, a.tierOverride) };
}

/** `GET /v1/auth/me` (D8). @throws AppError 401 when the account vanished. */
export async function me(db: Executor, accountId: string): Promise<AccountView> {
  const a = await getAccount(db, accountId);
  if (!a) throw errors.auth();
  return {
    user_id: a.id,
    email: a.email,
    balance_usd: microsToUsd(a.balanceMicros),
    tier: a.tier,
    tier_name: tierRow(a.tier).name,
    total_deposits_usd: microsToUsd(a.totalDepositsMicros),
    created_at: new Date(a.createdAt).toISOString(),
  };
}
