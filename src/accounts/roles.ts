/**
 * Roles of organization members (D41) and the rule that compares them: `owner` > `admin` > `member` >
 * `viewer`. What each role may do is decided where the action is (http/auth.ts per route class, the
 * organization and key services for the finer rules); this module only ranks them and refuses.
 */
import { errors } from "../errors.ts";
import type { Role } from "../storage/schema.ts";

export type { Role } from "../storage/schema.ts";

/** Every role, strongest first. */
export const ROLES: readonly Role[] = ["owner", "admin", "member", "viewer"];

const RANK: Record<Role, number> = { owner: 4, admin: 3, member: 2, viewer: 1 };

/** Whether `x` is a role name. */
export function isRole(x: unknown): x is Role {
  return typeof x === "string" && Object.hasOwn(RANK, x);
}

/** Whether `role` has at least the rights of `need`. */
export function atLeast(role: Role, need: Role): boolean {
  return RANK[role] >= RANK[need];
}

/** Whether `role` is strictly stronger than `other`. */
export function above(role: Role, other: Role): boolean {
  return RANK[role] > RANK[other];
}

/**
 * Refuses unless `role` has at least the rights of `need`.
 * @throws AppError 403 `forbidden_role` (`permission_error`) naming the role the action needs and `what` it is.
 */
export function requireRole(role: Role, need: Role, what: string): void {
  if (!atLeast(role, need)) {
    throw errors.forbiddenRole(`${what} needs the role ${need} or above in this organization; the caller's role is ${role}.`);
  }
}

/**
 * The role an API key acts with (D41, docs/decisions.md): its creator's role when it was made, at most
 * `admin` (a key never does what is the owner's alone: the roles of admins, deleting the organization).
 */
export function keyRoleFor(creatorRole: Role): Role {
  return creatorRole === "owner" ? "admin" : creatorRole;
}
