/**
 * Operator actions (D9, D21, D22, D41): finding users and organizations and reading one (issue 15 point 3),
 * deposits, tier override and per-organization limit overrides. The actions take an organization id; the
 * operator's `/v1/admin/users/{user_id}/...` routes act on the user's personal organization. Each action
 * writes one audit entry (D45: `deposit.created`, `tier.updated`, `limits.updated`; actor the operator, as
 * `audit` says) in its transaction.
 */
import type { Kysely } from "kysely";
import { credit, type Executor, inTransaction } from "../billing/ledger.ts";
import { type DepositBody, LIMIT_FIELDS, type LimitsPatch } from "../contracts/admin.ts";
import { microsToUsd, usdToMicros } from "../money.ts";
import { type TierRowJson, tierRowJson } from "../catalog/pricing.ts";
import { effectiveTier, MAX_TIER, tierRow } from "../catalog/tiers.ts";
import { errors } from "../errors.ts";
import { type AdminAccountRow, adminOrgRow, adminUserRow, personalOrgOf, searchAccounts, searchOrgs } from "./admin.repository.ts";
import { membersOf } from "./orgs.repository.ts";
import type { Dialect } from "../storage/db.ts";
import type { Database } from "../storage/schema.ts";
import { getAccount } from "./accounts.ts";
import { limitsOverrideOf, updateLimitsOverride, updateTierOverride } from "./accounts.repository.ts";
import type { AccountAuthChanges } from "./auth-cache.ts";
import { limitsOf } from "./limits.ts";
import { type AuditContext, changesOf, recordAudit } from "./audit.ts";

/**
 * A user with its personal organization as the operator API lists it (D9, D41): the fields of
 * `GET /v1/auth/me` (D8) and what an operator needs at a glance: the tier override, whether custom limits
 * (D22) are set, the number of API keys and when one was last used (written at most once a minute per key).
 */
export interface AdminAccountView {
  user_id: string;
  email: string;
  /** The user's personal organization, whose balance and tier these are (D41). */
  org_id: string;
  balance_usd: number;
  tier: number;
  tier_name: string;
  total_deposits_usd: number;
  created_at: string;
  tier_override: number | null;
  has_custom_limits: boolean;
  keys: number;
  last_key_used_at: string | null;
}

/** An organization as the operator API lists it (D41): as a user's row, with its name and member count. */
export interface AdminOrgView extends Omit<AdminAccountView, "user_id" | "email"> {
  name: string | null;
  members: number;
}

function orgView(r: AdminAccountRow): AdminOrgView {
  const tier = effectiveTier(r.totalDepositsMicros, r.tierOverride);
  return {
    org_id: r.id,
    name: r.name,
    balance_usd: microsToUsd(r.balanceMicros),
    tier,
    tier_name: tierRow(tier).name,
    total_deposits_usd: microsToUsd(r.totalDepositsMicros),
    created_at: new Date(r.createdAt).toISOString(),
    tier_override: r.tierOverride,
    has_custom_limits: r.limitsOverride !== null,
    keys: r.keys,
    last_key_used_at: r.lastKeyUsedAt === null ? null : new Date(r.lastKeyUsedAt).toISOString(),
    members: r.members,
  };
}

function accountView(r: AdminAccountRow): AdminAccountView {
  const { name: _name, members: _members, ...rest } = orgView(r);
  return { user_id: r.userId ?? "", email: r.email ?? "", ...rest };
}

/** A page query of the operator's lists, as validated by the route schema (`limit` 1-100 as text, default 20). */
type PageQuery = { q?: string; limit?: string; after?: string };

function pageOpts(query: PageQuery) {
  const q = query.q?.trim() ?? "";
  return { q: q === "" ? null : q, limit: query.limit === undefined ? 20 : Number(query.limit), after: query.after ?? null };
}

/**
 * `GET /v1/admin/users?q=&limit=&after=`: users with their personal organization, newest first, those
 * whose user or organization id is `q` or whose email starts with `q` (case-insensitive; admin.repository.ts
 * says why a prefix), all of them without `q`. `after` is a user id.
 */
export async function listAccounts(
  db: Kysely<Database>,
  dialect: Dialect,
  query: PageQuery,
): Promise<{ object: "list"; data: AdminAccountView[]; has_more: boolean }> {
  const page = await searchAccounts(db, dialect, pageOpts(query));
  return { object: "list", data: page.rows.map(accountView), has_more: page.hasMore };
}

/** `GET /v1/admin/orgs?q=&limit=&after=` (D41): organizations newest first, by exact id or name prefix. */
export async function listOrgs(
  db: Kysely<Database>,
  dialect: Dialect,
  query: PageQuery,
): Promise<{ object: "list"; data: AdminOrgView[]; has_more: boolean }> {
  const page = await searchOrgs(db, dialect, pageOpts(query));
  return { object: "list", data: page.rows.map(orgView), has_more: page.hasMore };
}

/** The overrides and effective limits of a row, as the operator's pages show them. */
function limitsOfRow(row: AdminAccountRow) {
  return {
    limits_override: row.limitsOverride === null ? {} : (JSON.parse(row.limitsOverride) as Record<string, unknown>),
    limits: tierRowJson(
      limitsOf({ total_deposits_micros: row.totalDepositsMicros, tier_override: row.tierOverride, limits_override: row.limitsOverride }),
    ),
  };
}

/**
 * `GET /v1/admin/users/{user_id}`: the user's personal organization as listed, its limit overrides (D22,
 * `{}` when none) and the effective limits (its tier row with the overrides applied, as
 * `GET /v1/auth/limits` shows them).
 * @throws AppError 404 `user_not_found` (D21).
 */
export async function getAccountForOperator(
  db: Executor,
  userId: string,
): Promise<AdminAccountView & { object: "admin.account"; limits_override: Record<string, unknown>; limits: TierRowJson }> {
  const row = await adminUserRow(db, userId);
  if (!row) throw errors.userNotFound();
  return { object: "admin.account", ...accountView(row), ...limitsOfRow(row) };
}

/**
 * `GET /v1/admin/orgs/{org_id}` (D41): the organization as listed, its members, overrides and effective limits.
 * @throws AppError 404 `org_not_found`.
 */
export async function getOrgForOperator(db: Executor, orgId: string) {
  const row = await adminOrgRow(db, orgId);
  if (!row) throw errors.orgNotFound("org_id");
  const members = (await membersOf(db, orgId)).map((m) => ({
    user_id: m.userId,
    email: m.email,
    role: m.role,
    created_at: new Date(m.createdAt).toISOString(),
  }));
  return { object: "admin.org" as const, ...orgView(row), members_list: members, ...limitsOfRow(row) };
}

/**
 * The personal organization of `userId`: what the operator's `/v1/admin/users/{user_id}/...` routes act on (D41).
 * @throws AppError 404 `user_not_found` (D21) for an unknown user or one without a personal organization.
 */
export async function personalOrgOrThrow(db: Executor, userId: string): Promise<string> {
  const org = await personalOrgOf(db, userId);
  if (org === null) throw errors.userNotFound();
  return org;
}

/**
 * Throws 404 `org_not_found` (D41) unless the organization exists: the operator's views of one
 * organization's ledger, requests and usage answer 404 for an unknown id instead of an empty page.
 */
export async function requireOrg(db: Executor, orgId: string): Promise<void> {
  if (!(await getAccount(db, orgId))) throw errors.orgNotFound("org_id");
}

/** Largest single deposit accepted, micro-USD (1,000,000 USD): guards against typos. */
const MAX_DEPOSIT_MICROS = 1_000_000 * 1_000_000;

/**
 * Records a deposit (ledger kind `deposit`), raising cumulative deposits and so the tier.
 * `amount_usd` is a positive decimal number (or numeric string) with at most 6 decimals. `auth` then drops
 * the account's cached keys (they carry the old tier). Writes `deposit.created` (target the organization;
 * balance, cumulative deposits and tier before and after, the reference).
 * @returns `{balance_usd, tier}` after the deposit.
 * @throws AppError 400 invalid_request (non-positive or non-numeric amount), 404 org_not_found (the
 *   operator's user routes resolve the user's personal organization first: 404 user_not_found there).
 */
export async function depositFunds(
  db: Executor,
  auth: AccountAuthChanges,
  orgId: string,
  body: DepositBody,
  audit: AuditContext,
): Promise<{ org_id: string; balance_usd: number; total_deposits_usd: number; tier: number }> {
  const raw = body.amount_usd;
  const micros = typeof raw === "number" || typeof raw === "string" ? usdToMicros(raw) : null;
  if (micros === null || micros <= 0 || micros > MAX_DEPOSIT_MICROS) {
    throw errors.invalidRequest(
      "amount_usd must be a positive number of USD with at most 6 decimals.",
      "amount_usd",
    );
  }
  if (body.reference !== undefined && (typeof body.reference !== "string" || body.reference.length > 200)) {
    throw errors.invalidRequest("reference must be a string of at most 200 characters.", "reference");
  }
  const reference = typeof body.reference === "string" ? body.reference : null;
  const out = await inTransaction(db, async (trx) => {
    const before = await getAccount(trx, orgId);
    if (!before) throw errors.orgNotFound("org_id");
    await credit(trx, { accountId: orgId, kind: "deposit", amountMicros: micros, reference });
    const after = await getAccount(trx, orgId);
    if (!after) throw errors.orgNotFound("org_id");
    const shown = (a: typeof after) => ({ balance_usd: microsToUsd(a.balanceMicros), total_deposits_usd: microsToUsd(a.totalDepositsMicros), tier: a.tier });
    await recordAudit(trx, audit, {
      orgId,
      action: "deposit.created",
      target: { type: "org", id: orgId },
      changes: { ...changesOf(shown(before), shown(after)), amount_usd: [null, microsToUsd(micros)], ...(reference === null ? {} : { reference: [null, reference] }) },
    });
    return {
      org_id: orgId,
      balance_usd: microsToUsd(after.balanceMicros),
      total_deposits_usd: microsToUsd(after.totalDepositsMicros),
      tier: after.tier,
    };
  });
  // The tier follows deposits: cached keys of this account must see the new limits now.
  auth.forgetAccount(orgId);
  return out;
}

/**
 * Sets (0..4) or clears (null) the operator's tier override; the override wins over deposits. `auth`
 * drops the account's cached keys. Writes `tier.updated` (the override and the tier, before and after).
 * @throws AppError 400 invalid_request (tier outside 0..4), 404 org_not_found.
 */
export async function setTierOverride(
  db: Executor,
  auth: AccountAuthChanges,
  orgId: string,
  tier: unknown,
  audit: AuditContext,
): Promise<{ org_id: string; tier: number; tier_override: number | null }> {
  if (tier !== null && (typeof tier !== "number" || !Number.isInteger(tier) || tier < 0 || tier > MAX_TIER)) {
    throw errors.invalidRequest(`tier must be an integer from 0 to ${MAX_TIER}, or null.`, "tier");
  }
  const a = await inTransaction(db, async (trx) => {
    const before = await getAccount(trx, orgId);
    if (!before || !(await updateTierOverride(trx, orgId, tier))) throw errors.orgNotFound("org_id");
    const after = await getAccount(trx, orgId);
    if (!after) throw errors.orgNotFound("org_id");
    const shown = (x: typeof after) => ({ tier_override: x.tierOverride, tier: x.tier });
    await recordAudit(trx, audit, { orgId, action: "tier.updated", target: { type: "org", id: orgId }, changes: changesOf(shown(before), shown(after)) });
    return after;
  });
  auth.forgetAccount(orgId);
  return { org_id: orgId, tier: a.tier, tier_override: a.tierOverride };
}

const POOL_KEYS = ["host_1", "host_2", "alpha", "beta", "host_3"];

/**
 * Merges `patch` into the account's limit overrides (D22): each field a non-negative integer (or, for
 * `audio_concurrent_per_provider`, an object of them), `null` drops the field's override. `auth` drops the
 * account's cached keys. Writes `limits.updated` (each override that changed, before and after; null: none).
 * @returns the overrides now in force.
 * @throws AppError 400 invalid_request (unknown field or bad value), 404 org_not_found.
 */
export async function setLimitsOverride(
  db: Executor,
  auth: AccountAuthChanges,
  orgId: string,
  patch: LimitsPatch,
  audit: AuditContext,
): Promise<{ org_id: string; limits_override: Record<string, unknown> }> {
  const isCount = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 1e9;
  for (const [k, v] of Object.entries(patch)) {
    if (!(LIMIT_FIELDS as readonly string[]).includes(k))
      throw errors.invalidRequest(`Unknown limit field '${k}'.`, k);
    if (v === null) continue;
    if (k === "audio_concurrent_per_provider") {
      const ok =
        typeof v === "object" &&
        !Array.isArray(v) &&
        Object.entries(v as Record<string, unknown>).every(
          ([pk, pv]) => POOL_KEYS.includes(pk) && isCount(pv),
        );
      if (!ok)
        throw errors.invalidRequest(`${k} must map ${POOL_KEYS.join(", ")} to non-negative integers.`, k);
    } else if (!isCount(v)) {
      throw errors.invalidRequest(`${k} must be a non-negative integer or null.`, k);
    }
  }
  const out = await inTransaction(db, async (trx) => {
    const row = await limitsOverrideOf(trx, orgId);
    if (!row) throw errors.orgNotFound("org_id");
    const current = row.json ? (JSON.parse(row.json) as Record<string, unknown>) : {};
    const before = { ...current };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete current[k];
      else current[k] = v;
    }
    const text = Object.keys(current).length > 0 ? JSON.stringify(current) : null;
    await updateLimitsOverride(trx, orgId, text);
    await recordAudit(trx, audit, { orgId, action: "limits.updated", target: { type: "org", id: orgId }, changes: changesOf(before, current) });
    return { org_id: orgId, limits_override: current };
  });
  auth.forgetAccount(orgId);
  return out;
}
