/**
 * SQL of organizations' members and invites (D41): `memberships` and `invites`, and the organization rows
 * as members see them. Free functions taking the database or a transaction first (the team's SQL decision).
 */
import { type ExpressionBuilder, type SqlBool, sql } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import { isPostgres } from "../storage/dialect.ts";
import type { AccountLimitsRow } from "../storage/job-queue.ts";
import type { Database, Role } from "../storage/schema.ts";

/** Adds `userId` to `orgId` with `role`. */
export async function insertMembership(db: Executor, row: { orgId: string; userId: string; role: Role; createdAt: number }): Promise<void> {
  await db.insertInto("memberships").values({ org_id: row.orgId, user_id: row.userId, role: row.role, created_at: row.createdAt }).execute();
}

/** The role of `userId` in `orgId` with the organization's limits columns, or null when not a member. */
export async function membershipWithLimits(db: Executor, userId: string, orgId: string): Promise<(AccountLimitsRow & { role: Role; has_budgets: number }) | null> {
  const row = await db
    .selectFrom("memberships")
    .innerJoin("accounts", "accounts.id", "memberships.org_id")
    .select(["memberships.role", "accounts.total_deposits_micros", "accounts.tier_override", "accounts.limits_override", "accounts.has_budgets"])
    .where("memberships.user_id", "=", userId)
    .where("memberships.org_id", "=", orgId)
    .executeTakeFirst();
  return row ?? null;
}

/** The role of `userId` in `orgId`, or null when not a member. */
export async function roleOf(db: Executor, orgId: string, userId: string): Promise<Role | null> {
  const row = await db.selectFrom("memberships").select("role").where("org_id", "=", orgId).where("user_id", "=", userId).executeTakeFirst();
  return row?.role ?? null;
}

/** The organization `userId` joined first, or null when none. */
export async function firstOrgOf(db: Executor, userId: string): Promise<string | null> {
  const row = await db
    .selectFrom("memberships")
    .select("org_id")
    .where("user_id", "=", userId)
    .orderBy("created_at", "asc")
    .orderBy("org_id", "asc")
    .executeTakeFirst();
  return row?.org_id ?? null;
}

/** An organization with the caller's role, as listed (money micro-USD, times epoch ms). */
export interface OrgRow {
  id: string;
  name: string | null;
  role: Role;
  balanceMicros: number;
  totalDepositsMicros: number;
  tierOverride: number | null;
  createdAt: number;
  /** How many members it has. */
  memberCount: number;
  /** Whether it is some user's personal organization (made at registration; it cannot be deleted). */
  personal: boolean;
}

/** The member count and the personal flag of the `accounts` row in scope, as subqueries (one statement per list). */
function orgFacts(eb: ExpressionBuilder<Database, "accounts">) {
  return [
    eb
      .selectFrom("memberships as counted")
      .select((c) => c.fn.countAll<number | string>().as("n"))
      .whereRef("counted.org_id", "=", "accounts.id")
      .as("member_count"),
    eb.exists(eb.selectFrom("users").select("users.id").whereRef("users.personal_org_id", "=", "accounts.id")).as("personal"),
  ] as const;
}

function orgSelect(db: Executor) {
  return db
    .selectFrom("memberships")
    .innerJoin("accounts", "accounts.id", "memberships.org_id")
    .select((eb) => [
      "accounts.id",
      "accounts.name",
      "memberships.role",
      "accounts.balance_micros",
      "accounts.total_deposits_micros",
      "accounts.tier_override",
      "accounts.created_at",
      ...orgFacts(eb),
    ]);
}

function orgRowOf(r: {
  id: string;
  name: string | null;
  role: Role;
  balance_micros: number;
  total_deposits_micros: number;
  tier_override: number | null;
  created_at: number;
  member_count: number | string | null;
  personal: SqlBool;
}): OrgRow {
  return {
    id: r.id,
    name: r.name,
    role: r.role,
    balanceMicros: Number(r.balance_micros),
    totalDepositsMicros: Number(r.total_deposits_micros),
    tierOverride: r.tier_override === null ? null : Number(r.tier_override),
    createdAt: Number(r.created_at),
    memberCount: Number(r.member_count ?? 0),
    // SQLite answers 0/1, PostgreSQL a boolean.
    personal: Boolean(Number(r.personal)),
  };
}

/** The organizations of `userId`, oldest membership first, each with the user's role. */
export async function orgsOfUser(db: Executor, userId: string): Promise<OrgRow[]> {
  const rows = await orgSelect(db)
    .where("memberships.user_id", "=", userId)
    .orderBy("memberships.created_at", "asc")
    .orderBy("accounts.id", "asc")
    .execute();
  return rows.map(orgRowOf);
}

/** The organization `orgId` with `role` as the caller's role (a key's), or null when there is none. */
export async function orgById(db: Executor, orgId: string): Promise<Omit<OrgRow, "role"> | null> {
  const r = await db
    .selectFrom("accounts")
    .select((eb) => ["id", "name", "balance_micros", "total_deposits_micros", "tier_override", "created_at", ...orgFacts(eb)])
    .where("id", "=", orgId)
    .executeTakeFirst();
  return r ? orgRowOf({ ...r, role: "viewer" }) : null;
}

/** Renames an organization. */
export async function updateOrgName(db: Executor, orgId: string, name: string): Promise<void> {
  await db.updateTable("accounts").set({ name }).where("id", "=", orgId).execute();
}

/** A member as listed (times epoch ms). */
export interface MemberRow {
  userId: string;
  email: string;
  role: Role;
  createdAt: number;
}

/** The members of `orgId`, oldest first. */
export async function membersOf(db: Executor, orgId: string): Promise<MemberRow[]> {
  const rows = await db
    .selectFrom("memberships")
    .innerJoin("users", "users.id", "memberships.user_id")
    .select(["memberships.user_id", "users.email", "memberships.role", "memberships.created_at"])
    .where("memberships.org_id", "=", orgId)
    .orderBy("memberships.created_at", "asc")
    .orderBy("memberships.user_id", "asc")
    .execute();
  return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, createdAt: Number(r.created_at) }));
}

/** The member `userId` of `orgId`, or null. */
export async function memberOf(db: Executor, orgId: string, userId: string): Promise<MemberRow | null> {
  return (await membersOf(db, orgId)).find((m) => m.userId === userId) ?? null;
}

/** Whether the user of `email` is a member of `orgId`. */
export async function isMemberByEmail(db: Executor, orgId: string, email: string): Promise<boolean> {
  const row = await db
    .selectFrom("memberships")
    .innerJoin("users", "users.id", "memberships.user_id")
    .select("memberships.user_id")
    .where("memberships.org_id", "=", orgId)
    .where("users.email", "=", email)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Locks the organization's row until the end of the transaction on PostgreSQL (role changes and removals
 * of one organization then run one after the other, so two owners cannot demote each other at once);
 * SQLite has one writer already.
 */
export async function lockOrg(trx: Executor, orgId: string): Promise<void> {
  if (isPostgres(trx)) await sql`select 1 from accounts where id = ${orgId} for update`.execute(trx);
}

/** How many owners `orgId` has. */
export async function ownerCount(db: Executor, orgId: string): Promise<number> {
  const row = await db
    .selectFrom("memberships")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("org_id", "=", orgId)
    .where("role", "=", "owner")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Sets the role of a member. */
export async function updateRole(db: Executor, orgId: string, userId: string, role: Role): Promise<void> {
  await db.updateTable("memberships").set({ role }).where("org_id", "=", orgId).where("user_id", "=", userId).execute();
}

/** Removes a member. @returns false when there was no such member. */
export async function deleteMembership(db: Executor, orgId: string, userId: string): Promise<boolean> {
  const res = await db.deleteFrom("memberships").where("org_id", "=", orgId).where("user_id", "=", userId).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** An invite as stored (times epoch ms). */
export interface InviteRow {
  id: string;
  orgId: string;
  email: string;
  role: Role;
  createdBy: string | null;
  createdAt: number;
  expiresAt: number;
  acceptedAt: number | null;
}

/** Inserts an invite (its token only as a hash). */
export async function insertInvite(db: Executor, row: InviteRow & { tokenHash: string }): Promise<void> {
  await db
    .insertInto("invites")
    .values({
      id: row.id,
      org_id: row.orgId,
      email: row.email,
      role: row.role,
      token_hash: row.tokenHash,
      created_by: row.createdBy,
      created_at: row.createdAt,
      expires_at: row.expiresAt,
      accepted_at: row.acceptedAt,
    })
    .execute();
}

const INVITE_COLUMNS = ["id", "org_id", "email", "role", "created_by", "created_at", "expires_at", "accepted_at"] as const;

function inviteOf(r: {
  id: string;
  org_id: string;
  email: string;
  role: Role;
  created_by: string | null;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
}): InviteRow {
  return {
    id: r.id,
    orgId: r.org_id,
    email: r.email,
    role: r.role,
    createdBy: r.created_by,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    acceptedAt: r.accepted_at === null ? null : Number(r.accepted_at),
  };
}

/** The invite whose token hashes to `tokenHash`, or null. */
export async function inviteByTokenHash(db: Executor, tokenHash: string): Promise<InviteRow | null> {
  const r = await db.selectFrom("invites").select([...INVITE_COLUMNS]).where("token_hash", "=", tokenHash).executeTakeFirst();
  return r ? inviteOf(r) : null;
}

/** The invites of `orgId` not accepted yet, newest first (expired ones included: the caller tells). */
export async function pendingInvites(db: Executor, orgId: string): Promise<InviteRow[]> {
  const rows = await db
    .selectFrom("invites")
    .select([...INVITE_COLUMNS])
    .where("org_id", "=", orgId)
    .where("accepted_at", "is", null)
    .orderBy("created_at", "desc")
    .execute();
  return rows.map(inviteOf);
}

/** Marks the invite accepted, once. @returns false when it was accepted already (a concurrent accept). */
export async function markInviteAccepted(db: Executor, id: string, now: number): Promise<boolean> {
  const res = await db.updateTable("invites").set({ accepted_at: now }).where("id", "=", id).where("accepted_at", "is", null).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Deletes a pending invite of `orgId`. @returns false when there is none. */
export async function deleteInvite(db: Executor, orgId: string, id: string): Promise<boolean> {
  const res = await db.deleteFrom("invites").where("org_id", "=", orgId).where("id", "=", id).where("accepted_at", "is", null).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** What keeps an organization from being deleted (D41): its balance (micro-USD), open holds and unfinished jobs. */
export async function orgContents(db: Executor, orgId: string): Promise<{ balanceMicros: number; openHolds: number; activeJobs: number } | null> {
  const org = await db.selectFrom("accounts").select("balance_micros").where("id", "=", orgId).executeTakeFirst();
  if (!org) return null;
  const holds = await db
    .selectFrom("holds")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("account_id", "=", orgId)
    .where("status", "=", "open")
    .executeTakeFirstOrThrow();
  const jobs = await db
    .selectFrom("jobs")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("account_id", "=", orgId)
    .where("status", "in", ["pending", "processing"])
    .executeTakeFirstOrThrow();
  return { balanceMicros: Number(org.balance_micros), openHolds: Number(holds.n), activeJobs: Number(jobs.n) };
}

/** Whether `orgId` is some user's personal organization. */
export async function isPersonalOrg(db: Executor, orgId: string): Promise<boolean> {
  return (await db.selectFrom("users").select("id").where("personal_org_id", "=", orgId).executeTakeFirst()) !== undefined;
}

/**
 * Closes an organization (D41 "delete"): its memberships, invites and API keys go, so nobody can act for
 * it any more; its ledger, usage, jobs and top-ups stay (the operator still sees them, balances still equal
 * their ledgers).
 */
export async function closeOrg(db: Executor, orgId: string): Promise<void> {
  await db.deleteFrom("invites").where("org_id", "=", orgId).execute();
  await db.deleteFrom("memberships").where("org_id", "=", orgId).execute();
  await db.deleteFrom("api_keys").where("account_id", "=", orgId).execute();
}
