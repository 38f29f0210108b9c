/**
 * Organizations, members and invites (D41). An organization is the billing entity (the `accounts` row:
 * balance, ledger, tier, limits, keys, webhooks, alerts, top-ups); users are its members with a role:
 * - `owner`: everything, including the roles of admins and other owners;
 * - `admin`: keys of everyone, members below admin (invite, change, remove), webhooks, alerts, top-ups;
 * - `member`: calls, own keys, reads;
 * - `viewer`: reads (usage, ledger, jobs).
 * The organization's last owner cannot leave or be demoted (409 `last_owner`). Unknown organizations and
 * organizations the caller does not belong to are 404 `org_not_found`, never 403.
 *
 * Callers are sessions (a user, with the user's role in the organization named in the path) or API keys
 * (the key's own organization only, with the key's role: roles.ts `keyRoleFor`).
 *
 * Every change writes one audit entry (D45; `audit` names the actor and the request) in its transaction:
 * `org.created`, `org.updated`, `org.deleted`, `invite.created`, `invite.revoked`, `invite.accepted`,
 * `member.updated` (a role change) and `member.removed` (a removal, or a member leaving); never an
 * invite's token.
 */
import { randomBytes } from "node:crypto";
import type { InviteBody, MemberBody, OrgBody } from "../contracts/orgs.ts";
import { type Executor, inTransaction } from "../billing/ledger.ts";
import { effectiveTier, tierRow } from "../catalog/tiers.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import { microsToUsd } from "../money.ts";
import { isUniqueViolation } from "../storage/db.ts";
import type { Role } from "../storage/schema.ts";
import { insertAccount, userById } from "./accounts.repository.ts";
import {
  closeOrg,
  deleteInvite,
  deleteMembership,
  insertInvite,
  insertMembership,
  inviteByTokenHash,
  isPersonalOrg,
  type InviteRow,
  isMemberByEmail,
  lockOrg,
  markInviteAccepted,
  memberOf,
  type MemberRow,
  membersOf,
  orgById,
  orgContents,
  type OrgRow,
  orgsOfUser,
  ownerCount,
  pendingInvites,
  roleOf,
  updateOrgName,
  updateRole,
} from "./orgs.repository.ts";
import { above, requireRole } from "./roles.ts";
import type { AccountAuthChanges } from "./auth-cache.ts";
import { type AuditContext, recordAudit } from "./audit.ts";
import { hashSecret } from "./secrets.ts";

/** How long an invite can be accepted, ms (D41: 7 days). */
export const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,189}\.[^\s@]{1,63}$/;

/** Who calls (http/auth.ts `Principal`): the organization it acts for, its user, role and key (null: a session). */
export interface OrgCaller {
  accountId: string;
  userId: string | null;
  role: Role;
  keyId: string | null;
}

/** An organization as the API shows it, with the caller's role. */
export interface OrgView {
  id: string;
  object: "organization";
  name: string | null;
  role: Role;
  balance_usd: number;
  tier: number;
  tier_name: string;
  total_deposits_usd: number;
  created_at: string;
  /** How many members it has (the caller included). */
  member_count: number;
  /** Whether it is a user's personal organization (made at registration, named after its owner's email; never deleted). */
  personal: boolean;
}

function orgView(r: Omit<OrgRow, "role">, role: Role): OrgView {
  const tier = effectiveTier(r.totalDepositsMicros, r.tierOverride);
  return {
    id: r.id,
    object: "organization",
    name: r.name,
    role,
    balance_usd: microsToUsd(r.balanceMicros),
    tier,
    tier_name: tierRow(tier).name,
    total_deposits_usd: microsToUsd(r.totalDepositsMicros),
    created_at: new Date(r.createdAt).toISOString(),
    member_count: r.memberCount,
    personal: r.personal,
  };
}

/** A member as the API shows it. */
export interface MemberView {
  object: "organization.member";
  org_id: string;
  user_id: string;
  email: string;
  role: Role;
  created_at: string;
}

function memberView(orgId: string, m: MemberRow): MemberView {
  return { object: "organization.member", org_id: orgId, user_id: m.userId, email: m.email, role: m.role, created_at: new Date(m.createdAt).toISOString() };
}

/** An invite as the API lists it (never its token). */
export interface InviteView {
  id: string;
  object: "organization.invite";
  org_id: string;
  email: string;
  role: Role;
  created_by: string | null;
  created_at: string;
  expires_at: string;
  expired: boolean;
}

function inviteView(i: InviteRow, now: number): InviteView {
  return {
    id: i.id,
    object: "organization.invite",
    org_id: i.orgId,
    email: i.email,
    role: i.role,
    created_by: i.createdBy,
    created_at: new Date(i.createdAt).toISOString(),
    expires_at: new Date(i.expiresAt).toISOString(),
    expired: i.expiresAt <= now,
  };
}

/**
 * The caller's role in `orgId`: a session's user's membership, or a key's own role in its own organization.
 * @throws AppError 404 `org_not_found` (not a member, another organization's key, or no such organization).
 */
export async function roleIn(db: Executor, caller: OrgCaller, orgId: string): Promise<Role> {
  if (caller.keyId !== null) {
    if (orgId !== caller.accountId) throw errors.orgNotFound("org_id");
    return caller.role;
  }
  const role = caller.userId === null ? null : await roleOf(db, orgId, caller.userId);
  if (role === null) throw errors.orgNotFound("org_id");
  return role;
}

/** The user behind a caller who makes or joins something. @throws AppError 403 `forbidden_role` without one. */
function userOf(caller: OrgCaller): string {
  if (caller.userId === null) throw errors.forbiddenRole("This API key has no member behind it; use a member's session.");
  return caller.userId;
}

/** A valid organization name, trimmed. @throws AppError 400 `invalid_request` (`name`): not 1 to 100 characters. */
export function orgName(name: unknown): string {
  if (typeof name !== "string" || name.trim().length === 0 || name.length > 100) {
    throw errors.invalidRequest("name must be a string of 1 to 100 characters.", "name");
  }
  return name.trim();
}

/**
 * `POST /v1/orgs {name}`: a new organization with the caller (a session's user, or a key's creator) as
 * its owner and a balance of 0 (no signup credit: that is the personal organization's alone).
 * @throws AppError 400 `invalid_request` (name), 403 `forbidden_role` (a key without a creator).
 */
export async function createOrg(db: Executor, caller: OrgCaller, body: OrgBody, audit: AuditContext): Promise<OrgView> {
  const name = orgName(body.name);
  const userId = userOf(caller);
  const id = newId("org");
  const now = Date.now();
  await inTransaction(db, async (trx) => {
    await insertAccount(trx, { id, name, createdAt: now });
    await insertMembership(trx, { orgId: id, userId, role: "owner", createdAt: now });
    await recordAudit(trx, audit, { orgId: id, action: "org.created", target: { type: "org", id }, changes: { name: [null, name] } });
  });
  const row = await orgById(db, id);
  if (!row) throw errors.orgNotFound();
  return orgView(row, "owner");
}

/** `GET /v1/orgs`: a session's user's organizations with the user's role; a key sees its own organization. */
export async function listOrgs(db: Executor, caller: OrgCaller): Promise<{ object: "list"; data: OrgView[] }> {
  if (caller.keyId !== null || caller.userId === null) {
    const row = await orgById(db, caller.accountId);
    return { object: "list", data: row ? [orgView(row, caller.role)] : [] };
  }
  return { object: "list", data: (await orgsOfUser(db, caller.userId)).map((o) => orgView(o, o.role)) };
}

/** `GET /v1/orgs/{org_id}`. @throws AppError 404 `org_not_found`. */
export async function getOrg(db: Executor, caller: OrgCaller, orgId: string): Promise<OrgView> {
  const role = await roleIn(db, caller, orgId);
  const row = await orgById(db, orgId);
  if (!row) throw errors.orgNotFound("org_id");
  return orgView(row, role);
}

/**
 * `PATCH /v1/orgs/{org_id} {name}` (admins and owners); writes `org.updated` with the name before and after.
 * @throws AppError 404 `org_not_found`, 403 `forbidden_role`, 400.
 */
export async function renameOrg(db: Executor, caller: OrgCaller, orgId: string, body: OrgBody, audit: AuditContext): Promise<OrgView> {
  const role = await roleIn(db, caller, orgId);
  requireRole(role, "admin", "Renaming the organization");
  const name = orgName(body.name);
  await inTransaction(db, async (trx) => {
    const before = await orgById(trx, orgId);
    if (!before) throw errors.orgNotFound("org_id");
    await updateOrgName(trx, orgId, name);
    const changes: Record<string, [unknown, unknown]> = before.name === name ? {} : { name: [before.name, name] };
    await recordAudit(trx, audit, { orgId, action: "org.updated", target: { type: "org", id: orgId }, changes });
  });
  return getOrg(db, caller, orgId);
}

/** `GET /v1/orgs/{org_id}/members` (every member). @throws AppError 404 `org_not_found`. */
export async function listMembers(db: Executor, caller: OrgCaller, orgId: string): Promise<{ object: "list"; data: MemberView[] }> {
  await roleIn(db, caller, orgId);
  return { object: "list", data: (await membersOf(db, orgId)).map((m) => memberView(orgId, m)) };
}

/**
 * Refuses a change by `callerRole` of a member who has (or would get) `role`: admins manage members below
 * admin, owners everyone. @throws AppError 403 `forbidden_role`.
 */
function requireManages(callerRole: Role, role: Role, what: string): void {
  requireRole(callerRole, "admin", what);
  if (callerRole !== "owner" && !above(callerRole, role)) {
    throw errors.forbiddenRole(`${what} for the role ${role} needs the role owner; admins manage members below admin.`);
  }
}

/**
 * `POST /v1/orgs/{org_id}/invites {email, role}`: an invite the invited user accepts with a session of
 * that email within 7 days. The token is returned only here (stored as a hash). Admins invite members and
 * viewers, owners any role.
 * @throws AppError 404 `org_not_found`, 403 `forbidden_role`, 400 `invalid_request` (email), 409
 *   `already_member` (a user with that email is a member).
 */
export async function createInvite(
  db: Executor,
  caller: OrgCaller,
  orgId: string,
  body: InviteBody,
  audit: AuditContext,
): Promise<InviteView & { token: string }> {
  const role = await roleIn(db, caller, orgId);
  requireManages(role, body.role, "Inviting a member");
  const email = typeof body.email === "string" ? body.email.trim().toLowerCase() : "";
  if (!EMAIL_RE.test(email) || email.length > 254) throw errors.invalidRequest("email must be a valid email address.", "email");
  if (await isMemberByEmail(db, orgId, email)) throw errors.alreadyMember();
  const token = `inv_${randomBytes(32).toString("base64url")}`;
  const now = Date.now();
  const row: InviteRow = {
    id: newId("inv"),
    orgId,
    email,
    role: body.role,
    createdBy: caller.userId,
    createdAt: now,
    expiresAt: now + INVITE_TTL_MS,
    acceptedAt: null,
  };
  await inTransaction(db, async (trx) => {
    await insertInvite(trx, { ...row, tokenHash: hashSecret(token) });
    await recordAudit(trx, audit, {
      orgId,
      action: "invite.created",
      target: { type: "invite", id: row.id },
      changes: { email: [null, email], role: [null, body.role] },
    });
  });
  return { ...inviteView(row, now), token };
}

/** `GET /v1/orgs/{org_id}/invites` (admins and owners): invites not accepted yet, newest first, without tokens. */
export async function listInvites(db: Executor, caller: OrgCaller, orgId: string): Promise<{ object: "list"; data: InviteView[] }> {
  requireRole(await roleIn(db, caller, orgId), "admin", "Listing invites");
  const now = Date.now();
  return { object: "list", data: (await pendingInvites(db, orgId)).map((i) => inviteView(i, now)) };
}

/** `DELETE /v1/orgs/{org_id}/invites/{invite_id}` (admins and owners); writes `invite.revoked`. @throws AppError 404 `invite_not_found`. */
export async function revokeInvite(db: Executor, caller: OrgCaller, orgId: string, inviteId: string, audit: AuditContext): Promise<void> {
  requireRole(await roleIn(db, caller, orgId), "admin", "Revoking an invite");
  await inTransaction(db, async (trx) => {
    if (!(await deleteInvite(trx, orgId, inviteId))) throw errors.inviteNotFound();
    await recordAudit(trx, audit, { orgId, action: "invite.revoked", target: { type: "invite", id: inviteId } });
  });
}

/**
 * `POST /v1/invites/{token}/accept`: makes the caller (a session of the invited email's user) a member
 * with the invite's role; an invite is accepted once. Writes `invite.accepted` (target the invite, the
 * role given) in the organization's log.
 * @throws AppError 403 `forbidden_role` (an API key: accept with a session), 404 `invite_not_found`
 *   (unknown, used or expired), 403 `invite_email_mismatch` (the session's user is not the invited
 *   email), 409 `already_member`.
 */
export async function acceptInvite(db: Executor, caller: OrgCaller, token: string, audit: AuditContext): Promise<MemberView> {
  if (caller.keyId !== null) throw errors.forbiddenRole("Accept an invite with a session token (sign in as the invited email), not an API key.");
  const userId = userOf(caller);
  const invite = typeof token === "string" && token.length <= 200 ? await inviteByTokenHash(db, hashSecret(token)) : null;
  const now = Date.now();
  if (!invite || invite.acceptedAt !== null) throw errors.inviteNotFound();
  if (invite.expiresAt <= now) throw errors.inviteExpired();
  const user = await userById(db, userId);
  if (!user || user.email !== invite.email) throw errors.inviteEmailMismatch();
  try {
    await inTransaction(db, async (trx) => {
      if ((await roleOf(trx, invite.orgId, userId)) !== null) throw errors.alreadyMember();
      if (!(await markInviteAccepted(trx, invite.id, now))) throw errors.inviteNotFound();
      await insertMembership(trx, { orgId: invite.orgId, userId, role: invite.role, createdAt: now });
      await recordAudit(trx, audit, {
        orgId: invite.orgId,
        action: "invite.accepted",
        target: { type: "invite", id: invite.id },
        changes: { member: [null, userId], role: [null, invite.role] },
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.alreadyMember();
    throw err;
  }
  return memberView(invite.orgId, { userId, email: user.email, role: invite.role, createdAt: now });
}

/**
 * `PATCH /v1/orgs/{org_id}/members/{user_id} {role}`: admins change members and viewers among those two
 * roles; owners change anyone to anything. The last owner cannot be demoted. Writes `member.updated`
 * (target the user, the role before and after).
 * @throws AppError 404 `org_not_found` / `member_not_found`, 403 `forbidden_role`, 409 `last_owner`.
 */
export async function changeRole(db: Executor, caller: OrgCaller, orgId: string, userId: string, body: MemberBody, audit: AuditContext): Promise<MemberView> {
  await roleIn(db, caller, orgId);
  return inTransaction(db, async (trx) => {
    await lockOrg(trx, orgId);
    // The caller's role as of the lock: a concurrent change of it is seen (two owners cannot demote each other).
    const callerRole = await roleIn(trx, caller, orgId);
    const member = await memberOf(trx, orgId, userId);
    if (!member) throw errors.memberNotFound();
    requireManages(callerRole, member.role, "Changing a member's role");
    requireManages(callerRole, body.role, "Changing a member's role");
    if (member.role === "owner" && body.role !== "owner" && (await ownerCount(trx, orgId)) <= 1) throw errors.lastOwner();
    await updateRole(trx, orgId, userId, body.role);
    const changes: Record<string, [unknown, unknown]> = member.role === body.role ? {} : { role: [member.role, body.role] };
    await recordAudit(trx, audit, { orgId, action: "member.updated", target: { type: "user", id: userId }, changes });
    return memberView(orgId, { ...member, role: body.role });
  });
}

/**
 * `DELETE /v1/orgs/{org_id}/members/{user_id}`: a member leaves (any role, their own user id) or is removed
 * (admins remove members and viewers, owners anyone). The keys the member made stay the organization's
 * and keep working (D41). The last owner cannot leave. Writes `member.removed` (target the user, the role
 * it had).
 * @throws AppError 404 `org_not_found` / `member_not_found`, 403 `forbidden_role`, 409 `last_owner`.
 */
export async function removeMember(
  db: Executor,
  caller: OrgCaller,
  orgId: string,
  userId: string,
  audit: AuditContext,
): Promise<{ org_id: string; user_id: string; removed: true }> {
  await roleIn(db, caller, orgId);
  await inTransaction(db, async (trx) => {
    await lockOrg(trx, orgId);
    const callerRole = await roleIn(trx, caller, orgId);
    const member = await memberOf(trx, orgId, userId);
    if (!member) throw errors.memberNotFound();
    const self = caller.keyId === null && caller.userId === userId;
    if (!self) requireManages(callerRole, member.role, "Removing a member");
    if (member.role === "owner" && (await ownerCount(trx, orgId)) <= 1) throw errors.lastOwner();
    await deleteMembership(trx, orgId, userId);
    await recordAudit(trx, audit, { orgId, action: "member.removed", target: { type: "user", id: userId }, changes: { role: [member.role, null] } });
  });
  return { org_id: orgId, user_id: userId, removed: true };
}

/**
 * `DELETE /v1/orgs/{org_id}` (owners; D41 "delete the organization"): closes an organization with nothing
 * in it: no balance, no open hold, no unfinished job. Its members, invites and keys go (the keys stop at
 * once: `auth` drops them from the cache); its ledger, usage and jobs stay for the operator, so no money
 * and no history disappears (nor its audit log: `org.deleted` is its last entry). A personal organization
 * cannot be deleted.
 * @throws AppError 404 `org_not_found`, 403 `forbidden_role` (not an owner; keys act as admin at most),
 *   409 `personal_org`, 409 `org_not_empty` (a balance, an open hold or an unfinished job).
 */
export async function deleteOrg(
  db: Executor,
  auth: AccountAuthChanges,
  caller: OrgCaller,
  orgId: string,
  audit: AuditContext,
): Promise<{ id: string; deleted: true }> {
  requireRole(await roleIn(db, caller, orgId), "owner", "Deleting the organization");
  if (await isPersonalOrg(db, orgId)) throw errors.personalOrg();
  await inTransaction(db, async (trx) => {
    await lockOrg(trx, orgId);
    const left = await orgContents(trx, orgId);
    if (!left) throw errors.orgNotFound("org_id");
    if (left.balanceMicros > 0) {
      throw errors.orgNotEmpty(`The organization still has a balance of ${microsToUsd(left.balanceMicros)} USD: spend it, or ask the operator, before deleting it.`);
    }
    if (left.openHolds > 0 || left.activeJobs > 0) throw errors.orgNotEmpty("The organization has calls or jobs in progress: delete it once they have ended.");
    await closeOrg(trx, orgId);
    await recordAudit(trx, audit, { orgId, action: "org.deleted", target: { type: "org", id: orgId } });
  });
  auth.forgetAccount(orgId);
  return { id: orgId, deleted: true };
}
