/**
 * What the signed-in user's role in the selected organization allows (D41), so the pages hide the actions
 * the gateway would refuse (403 `forbidden_role`) instead of offering them. It mirrors the server's rules:
 * - the ranking of src/accounts/roles.ts: `owner` > `admin` > `member` > `viewer`;
 * - the route classes of src/http/auth.ts: reads need `viewer`, every other call `member`, the
 *   `ADMIN_ONLY` routes `admin` (webhooks and their secret and replays, the low-balance alert, top-ups);
 * - src/accounts/keys.ts `assertMayManage`: members change and revoke only their own keys, admins every key;
 * - src/accounts/orgs.ts `requireManages`: admins invite, change and remove members and viewers (and only
 *   give those roles), owners anyone; anyone may leave; renaming needs `admin`, deleting `owner`;
 * - budgets (D44): owners and admins write, members and viewers read.
 * The gateway stays the judge: a hidden button is a courtesy, every refusal still shows its message.
 */
import { useQuery } from "@tanstack/react-query";
import { api, type paths, unwrap } from "./api.ts";

/** A member's role in an organization (the API's `role` field). */
export type Role = paths["/v1/auth/me"]["get"]["responses"][200]["content"]["application/json"]["role"];

/** Every role, strongest first. */
export const ROLES: readonly Role[] = ["owner", "admin", "member", "viewer"];

const RANK: Record<Role, number> = { owner: 4, admin: 3, member: 2, viewer: 1 };

/** What each role may do, in a phrase (the members page's legend). */
export const ROLE_HELP: Record<Role, string> = {
  owner: "everything, including the roles of admins and owners",
  admin: "every key, members below admin, webhooks, alerts, top-ups",
  member: "model calls, their own keys, reads",
  viewer: "reads: usage, ledger, jobs",
};

/** Whether `role` has at least the rights of `need`. */
export function atLeast(role: Role | undefined, need: Role): boolean {
  return role !== undefined && RANK[role] >= RANK[need];
}

/** The least role of each action the console offers (the route classes above). */
export const NEEDS = {
  /** Model calls: the playground's tools, canceling a job. */
  call: "member",
  /** Creating an API key (own keys are changed and revoked by their creator too). */
  createKey: "member",
  /** Changing or revoking another member's key. */
  manageAnyKey: "admin",
  /** Adding, deleting and rotating webhook endpoints, the default secret, replays. */
  webhooks: "admin",
  /** Setting the low-balance alert. */
  alerts: "admin",
  /** Card top-ups (Checkout). */
  topUp: "admin",
  /** Creating, changing and deleting budgets (D44; everyone reads them). */
  budgets: "admin",
  /** Inviting, listing and revoking invites; changing and removing members below admin. */
  members: "admin",
  /** Reading the audit log. */
  auditLog: "admin",
  /** Deleting the organization. */
  deleteOrg: "owner",
} as const satisfies Record<string, Role>;

/** Whether `role` may do `action` (false while the role is not known yet: hidden until it is). */
export function can(role: Role | undefined, action: keyof typeof NEEDS): boolean {
  return atLeast(role, NEEDS[action]);
}

/** Whether `role` (user `userId`) may change or revoke a key made by `createdBy`. */
export function canManageKey(role: Role | undefined, userId: string | null, createdBy: string | null): boolean {
  return can(role, "manageAnyKey") || (can(role, "createKey") && userId !== null && createdBy === userId);
}

/** Whether `role` may change or remove a member whose role is `memberRole` (owners anyone, admins below admin). */
export function canManageMember(role: Role | undefined, memberRole: Role): boolean {
  return role === "owner" || (role === "admin" && RANK[memberRole] < RANK.admin);
}

/** The roles `role` may give by invite or change (owners any, admins member and viewer, others none). */
export function assignableRoles(role: Role | undefined): Role[] {
  return ROLES.filter((r) => canManageMember(role, r));
}

/**
 * The caller's role in the selected organization (`GET /v1/auth/me`, the query `["me"]` the overview and
 * billing pages read too), or undefined while it loads or when it failed.
 */
export function useRole(): Role | undefined {
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")) });
  return me.data?.role;
}
