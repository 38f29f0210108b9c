/**
 * An organization's state as the API shows it (spec "Authentication", D8, D9, D41): balance, deposits and
 * the effective tier, with the caller (user) and role. Registration and login are in registration.ts,
 * authentication and its cache in auth-cache.ts, key management in keys.ts, effective limits in
 * limits.ts, organizations and members in orgs.ts; the SQL in the `*.repository.ts` modules beside them.
 */
import type { Executor } from "../billing/ledger.ts";
import { type Micros, microsToUsd } from "../money.ts";
import { effectiveTier, tierRow } from "../catalog/tiers.ts";
import { errors } from "../errors.ts";
import type { Role } from "../storage/schema.ts";
import { accountById, userById } from "./accounts.repository.ts";
import { orgsOfUser } from "./orgs.repository.ts";

/** The account fields the API shows (D8), with the organization and the caller's role (D41). */
export interface AccountView {
  /** The caller: the session's user, or the key's creator (D41). */
  user_id: string | null;
  /** The caller's email (null for a key whose creator is unknown). */
  email: string | null;
  /** The organization the call acted for (D41). */
  org_id: string;
  org_name: string | null;
  /** The caller's role in it (a key's: see D41). */
  role: Role;
  balance_usd: number;
  tier: number;
  tier_name: string;
  total_deposits_usd: number;
  created_at: string;
  /** The user's organizations with their role (a session), or only the key's (a key). */
  orgs: { org_id: string; name: string | null; role: Role }[];
}

/** Loads an organization's state: balance, deposits and effective tier (override wins). */
export async function getAccount(
  db: Executor,
  accountId: string,
): Promise<{
  id: string;
  name: string | null;
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

/**
 * `GET /v1/auth/me` (D8, D41): the caller and the organization it acts for. `created_at` is the
 * organization's creation time. @throws AppError 401 when the organization vanished.
 */
export async function me(
  db: Executor,
  caller: { accountId: string; userId: string | null; role: Role; keyId: string | null },
): Promise<AccountView> {
  const a = await getAccount(db, caller.accountId);
  if (!a) throw errors.auth();
  const user = caller.userId === null ? null : await userById(db, caller.userId);
  const orgs =
    caller.keyId === null && user !== null
      ? (await orgsOfUser(db, user.id)).map((o) => ({ org_id: o.id, name: o.name, role: o.role }))
      : [{ org_id: a.id, name: a.name, role: caller.role }];
  return {
    user_id: caller.userId,
    email: user?.email ?? null,
    org_id: a.id,
    org_name: a.name,
    role: caller.role,
    balance_usd: microsToUsd(a.balanceMicros),
    tier: a.tier,
    tier_name: tierRow(a.tier).name,
    total_deposits_usd: microsToUsd(a.totalDepositsMicros),
    created_at: new Date(a.createdAt).toISOString(),
    orgs,
  };
}
