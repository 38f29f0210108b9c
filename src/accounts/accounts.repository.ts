/**
 * SQL of the `accounts` (organizations, D41), `users` and `sessions` tables (the team's SQL decision: each service folder owns its
 * repository modules). Free functions taking the database or a transaction first; rows are mapped to
 * plain numbers here, so the services above never see driver types (PostgreSQL's `bigint` as text).
 */
import type { Executor } from "../billing/ledger.ts";
import { prepare } from "../storage/prepared.ts";
import type { AccountLimitsRow } from "../storage/job-queue.ts";

/** An organization as {@link accountById} reads it (money in micro-USD, times in epoch ms). */
export interface AccountRow {
  id: string;
  name: string | null;
  balanceMicros: number;
  totalDepositsMicros: number;
  tierOverride: number | null;
  createdAt: number;
}

/** Inserts a new organization (D41) with a zero balance (a signup credit is a ledger entry written next). */
export async function insertAccount(db: Executor, row: { id: string; name: string | null; createdAt: number }): Promise<void> {
  await db
    .insertInto("accounts")
    .values({
      id: row.id,
      name: row.name,
      balance_micros: 0,
      total_deposits_micros: 0,
      tier_override: null,
      limits_override: null,
      created_at: row.createdAt,
    })
    .execute();
}

/** Inserts a user (D41): the login. `email` already trimmed and lower-cased. */
export async function insertUser(
  db: Executor,
  row: { id: string; email: string; passwordHash: string; personalOrgId: string | null; createdAt: number },
): Promise<void> {
  await db
    .insertInto("users")
    .values({ id: row.id, email: row.email, password_hash: row.passwordHash, personal_org_id: row.personalOrgId, created_at: row.createdAt })
    .execute();
}

/** The id, password hash and personal organization of the user of `email` (already trimmed and lower-cased), or null. */
export async function credentialsByEmail(db: Executor, email: string): Promise<{ id: string; passwordHash: string; personalOrgId: string | null } | null> {
  const row = await db.selectFrom("users").select(["id", "password_hash", "personal_org_id"]).where("email", "=", email).executeTakeFirst();
  return row ? { id: row.id, passwordHash: row.password_hash, personalOrgId: row.personal_org_id } : null;
}

/** A user as the API shows it (D41), or null. */
export interface UserRow {
  id: string;
  email: string;
  personalOrgId: string | null;
  createdAt: number;
}

/** The user `userId`, or null when there is none. */
export async function userById(db: Executor, userId: string): Promise<UserRow | null> {
  const u = await db.selectFrom("users").select(["id", "email", "personal_org_id", "created_at"]).where("id", "=", userId).executeTakeFirst();
  return u ? { id: u.id, email: u.email, personalOrgId: u.personal_org_id, createdAt: Number(u.created_at) } : null;
}

/** The user of `email` (trimmed and lower-cased), or null. */
export async function userByEmail(db: Executor, email: string): Promise<UserRow | null> {
  const u = await db.selectFrom("users").select(["id", "email", "personal_org_id", "created_at"]).where("email", "=", email).executeTakeFirst();
  return u ? { id: u.id, email: u.email, personalOrgId: u.personal_org_id, createdAt: Number(u.created_at) } : null;
}

/** An organization's balance, deposits, tier override and creation time, or null when it does not exist. */
export async function accountById(db: Executor, accountId: string): Promise<AccountRow | null> {
  const a = await db
    .selectFrom("accounts")
    .select(["id", "name", "balance_micros", "total_deposits_micros", "tier_override", "created_at"])
    .where("id", "=", accountId)
    .executeTakeFirst();
  if (!a) return null;
  return {
    id: a.id,
    name: a.name,
    balanceMicros: Number(a.balance_micros),
    totalDepositsMicros: Number(a.total_deposits_micros),
    tierOverride: a.tier_override === null ? null : Number(a.tier_override),
    createdAt: Number(a.created_at),
  };
}

/** The columns an account's effective limits derive from (accounts/limits.ts `limitsOf`), or null. */
export async function accountLimitsRow(db: Executor, accountId: string): Promise<AccountLimitsRow | null> {
  const row = await db
    .selectFrom("accounts")
    .select(["total_deposits_micros", "tier_override", "limits_override"])
    .where("id", "=", accountId)
    .executeTakeFirst();
  return row ?? null;
}

/** Sets (or clears, null) the operator's tier override (D12). @returns false when the account does not exist. */
export async function updateTierOverride(db: Executor, accountId: string, tier: number | null): Promise<boolean> {
  const res = await db.updateTable("accounts").set({ tier_override: tier }).where("id", "=", accountId).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/**
 * The account's limit overrides as stored (JSON text, D22): `{ json: null }` when none are set, null when
 * the account does not exist.
 */
export async function limitsOverrideOf(db: Executor, accountId: string): Promise<{ json: string | null } | null> {
  const row = await db.selectFrom("accounts").select("limits_override").where("id", "=", accountId).executeTakeFirst();
  return row ? { json: row.limits_override } : null;
}

/** Replaces the account's limit overrides (JSON text, or null for none; D22). */
export async function updateLimitsOverride(db: Executor, accountId: string, json: string | null): Promise<void> {
  await db.updateTable("accounts").set({ limits_override: json }).where("id", "=", accountId).execute();
}

/** Opens a session of a user: its token is stored only as a hash (D8). Times in epoch ms. */
export async function insertSession(
  db: Executor,
  row: { id: string; userId: string; tokenHash: string; createdAt: number; expiresAt: number },
): Promise<void> {
  await db
    .insertInto("sessions")
    .values({ id: row.id, user_id: row.userId, token_hash: row.tokenHash, created_at: row.createdAt, expires_at: row.expiresAt })
    .execute();
}

// One round trip per session request for the session and its user's personal organization.
const sessionByHashQuery = prepare((db, p) =>
  db
    .selectFrom("sessions")
    .innerJoin("users", "users.id", "sessions.user_id")
    .select(["sessions.user_id", "sessions.token_hash", "sessions.expires_at", "users.personal_org_id", "users.email"])
    .where("sessions.token_hash", "=", p<string>(0)),
);

/** A session as authentication reads it: its user and the user's personal organization (D41). */
export interface SessionRow {
  userId: string;
  tokenHash: string;
  /** Epoch ms. */
  expiresAt: number;
  personalOrgId: string | null;
  /** The user's email (the audit log's actor, D45). */
  email: string;
}

/** The session whose token hashes to `tokenHash`, or null. Compiled once. */
export async function sessionByHash(db: Executor, tokenHash: string): Promise<SessionRow | null> {
  const s = (await sessionByHashQuery(db, tokenHash)).rows[0];
  if (!s) return null;
  return { userId: s.user_id, tokenHash: s.token_hash, expiresAt: Number(s.expires_at), personalOrgId: s.personal_org_id, email: s.email };
}
