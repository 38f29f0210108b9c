/**
 * Route schemas of organizations, members and invites (D41), tag `organizations`. Every operation takes
 * an API key (its own organization only) or a session token (the user's organizations); an organization
 * the caller does not belong to answers 404 `org_not_found`, an action the caller's role does not allow
 * 403 `forbidden_role`.
 */
import { INVITE_BODY, MEMBER_BODY, ORG_BODY, ORG_PATCH_BODY, ROLE_IN } from "../../contracts/orgs.ts";
import { AUTH_ERR, bool, errors, int, isoTime, json, LIST, nullable, obj, ok, oneOf, route, str, usd } from "./common.ts";

const ROLE = { ...ROLE_IN, description: "A role: `owner` (everything), `admin` (keys, members below admin, webhooks, alerts, top-ups, limits), `member` (calls, own keys, reads), `viewer` (reads)." };
const ORG_ID = str("Organization id (`org_...`).", { maxLength: 200, examples: ["org_3kTMd9fQk2aQ8xYvL1pZrW"] });
const ORG_PARAMS = obj({ org_id: ORG_ID }, ["org_id"]);
const MEMBER_PARAMS = obj({ org_id: ORG_ID, user_id: str("User id (`usr_...`).", { maxLength: 200 }) }, ["org_id", "user_id"]);
const NOT_FOUND = { 404: "`org_not_found` (no such organization, or the caller is not a member of it; an API key reaches only its own)" };
const ROLE_ERR = { 403: "`forbidden_role` (the caller's role does not allow this)" };

const RETENTION = obj(
  {
    prompts_days: int("Days the texts of requests (speech text, prompts, lyrics, a job's parameters) are kept with jobs and their events; 0: never stored."),
    outputs_days: int("Days generated files are kept; their URLs then answer 410 `output_expired`."),
    usage_days: int("Days usage records are kept (the operator's window)."),
    audit_days: int("Days audit-log entries are kept (the operator's window)."),
  },
  ["prompts_days", "outputs_days", "usage_days", "audit_days"],
  { description: "The retention windows that apply to the organization: its own where an owner shortened them, else the operator's. Ledger entries are never deleted." },
);

const ORG = obj(
  {
    id: str("Organization id (`org_...`)."),
    object: oneOf(["organization"], "Always `organization`."),
    name: nullable(str("Its name (a personal organization: its owner's email).")),
    role: ROLE,
    balance_usd: usd("The shared balance"),
    tier: int("Effective tier, 0 to 4."),
    tier_name: str("Name of the tier."),
    total_deposits_usd: usd("Cumulative deposits"),
    created_at: isoTime("When it was made."),
    member_count: int("How many members it has, the caller included."),
    personal: bool("Whether it is a personal organization: the one each user gets at registration, named after its owner's email, which cannot be deleted."),
    retention: RETENTION,
  },
  ["id", "object", "name", "role", "balance_usd", "tier", "tier_name", "total_deposits_usd", "created_at", "member_count", "personal", "retention"],
);

const MEMBER = obj(
  {
    object: oneOf(["organization.member"], "Always `organization.member`."),
    org_id: str("Organization id."),
    user_id: str("User id."),
    email: str("The member's email."),
    role: ROLE,
    created_at: isoTime("When the user joined."),
  },
  ["object", "org_id", "user_id", "email", "role", "created_at"],
);

const INVITE_FIELDS = {
  id: str("Invite id (`inv_...`)."),
  object: oneOf(["organization.invite"], "Always `organization.invite`."),
  org_id: str("Organization id."),
  email: str("The invited email (lowercased)."),
  role: ROLE,
  created_by: nullable(str("The member who invited.")),
  created_at: isoTime("When it was made."),
  expires_at: isoTime("When it stops being accepted (7 days after it was made)."),
  expired: bool("Whether it expired."),
};
const INVITE = obj(INVITE_FIELDS, Object.keys(INVITE_FIELDS) as (keyof typeof INVITE_FIELDS)[]);

/** `POST /v1/orgs`. */
export const createOrgSchema = route({
  operationId: "createOrg",
  summary: "Create an organization",
  description: "A new organization with the caller (a session's user, or the user who made the API key) as its owner and a balance of 0: only personal organizations get the signup credit. Top it up with Checkout or an operator deposit.",
  tags: ["organizations"],
  access: "keyOrSession",
  body: json(ORG_BODY),
  responses: {
    201: ok("The organization.", ORG),
    ...errors({ 400: "`invalid_request` (name)", ...AUTH_ERR, 403: "`forbidden_role` (an API key without a member behind it)" }),
  },
});

/** `GET /v1/orgs`. */
export const listOrgsSchema = route({
  operationId: "listOrgs",
  summary: "The caller's organizations",
  description: "A session sees every organization of its user, with the user's role, oldest membership first; an API key sees its own organization. Send `X-Svc-Org: <org_id>` with a session token to act for one of them on the other endpoints (default: the personal one).",
  tags: ["organizations"],
  access: "keyOrSession",
  responses: {
    200: ok("The organizations.", LIST(ORG)),
    ...errors(AUTH_ERR),
  },
});

/** `GET /v1/orgs/{org_id}`. */
export const getOrgSchema = route({
  operationId: "getOrg",
  summary: "One organization",
  tags: ["organizations"],
  access: "keyOrSession",
  params: ORG_PARAMS,
  responses: {
    200: ok("The organization, with the caller's role.", ORG),
    ...errors({ ...AUTH_ERR, ...NOT_FOUND }),
  },
});

/** `PATCH /v1/orgs/{org_id}`. */
export const updateOrgSchema = route({
  operationId: "updateOrg",
  summary: "Rename an organization or shorten its retention windows",
  description:
    "`name`: admins and owners. `retention`: owners only (API keys act as admin at most, so this needs an owner's session): `prompts_days` and `outputs_days` from 0 up to the operator's windows, or null for the operator's. `prompts_days: 0` is zero retention: the texts of the organization's requests are never stored (the calls still run; a job whose texts were held by a gateway process that stopped before the job reached its upstream fails with `prompt_unavailable`, nothing charged). A shorter window also applies to what is already stored, at the next retention sweep. Nothing is changed when any part is refused.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: ORG_PARAMS,
  body: json(ORG_PATCH_BODY),
  responses: {
    200: ok("The organization.", ORG),
    ...errors({ 400: "`invalid_request` (name; a retention window that is not a whole number from 0 to the operator's)", ...AUTH_ERR, ...ROLE_ERR, ...NOT_FOUND }),
  },
});

/** `DELETE /v1/orgs/{org_id}`. */
export const deleteOrgSchema = route({
  operationId: "deleteOrg",
  summary: "Delete an organization",
  description: "Owners only (API keys act as admin at most, so this needs an owner's session). Only an organization with nothing in it: no balance, no call or job in progress; a personal organization cannot be deleted. Its members, invites and keys go (the keys stop at once); its ledger, usage and jobs stay for the operator.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: ORG_PARAMS,
  responses: {
    200: ok("Deleted.", obj({ id: str("Organization id."), deleted: bool("Always true.", { enum: [true] }) }, ["id", "deleted"])),
    ...errors({ ...AUTH_ERR, 403: "`forbidden_role` (not an owner)", ...NOT_FOUND, 409: "`personal_org`, `org_not_empty` (a balance, or calls or jobs in progress)" }),
  },
});

/** `GET /v1/orgs/{org_id}/members`. */
export const listMembersSchema = route({
  operationId: "listOrgMembers",
  summary: "The members of an organization",
  description: "Every member may list them, oldest first.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: ORG_PARAMS,
  responses: {
    200: ok("The members.", LIST(MEMBER)),
    ...errors({ ...AUTH_ERR, ...NOT_FOUND }),
  },
});

/** `PATCH /v1/orgs/{org_id}/members/{user_id}`. */
export const updateMemberSchema = route({
  operationId: "updateOrgMember",
  summary: "Change a member's role",
  description: "Admins change members and viewers between those two roles; owners change anyone to any role. The last owner cannot be demoted (409 `last_owner`).",
  tags: ["organizations"],
  access: "keyOrSession",
  params: MEMBER_PARAMS,
  body: json(MEMBER_BODY),
  responses: {
    200: ok("The member.", MEMBER),
    ...errors({
      400: "`invalid_request` (role)",
      ...AUTH_ERR,
      ...ROLE_ERR,
      404: "`org_not_found`, `member_not_found`",
      409: "`last_owner` (the organization's only owner cannot be demoted)",
    }),
  },
});

/** `DELETE /v1/orgs/{org_id}/members/{user_id}`. */
export const removeMemberSchema = route({
  operationId: "removeOrgMember",
  summary: "Remove a member, or leave",
  description: "Any member may leave (its own user id, with a session); admins remove members and viewers, owners anyone. The keys the member made stay the organization's and keep working. The last owner cannot leave (409 `last_owner`).",
  tags: ["organizations"],
  access: "keyOrSession",
  params: MEMBER_PARAMS,
  responses: {
    200: ok(
      "Removed.",
      obj({ org_id: str("Organization id."), user_id: str("User id."), removed: bool("Always true.", { enum: [true] }) }, ["org_id", "user_id", "removed"]),
    ),
    ...errors({ ...AUTH_ERR, ...ROLE_ERR, 404: "`org_not_found`, `member_not_found`", 409: "`last_owner` (the organization's only owner cannot leave)" }),
  },
});

/** `POST /v1/orgs/{org_id}/invites`. */
export const createInviteSchema = route({
  operationId: "createOrgInvite",
  summary: "Invite someone by email",
  description: "Admins invite members and viewers, owners any role. The `token` is shown only here: send it to the invited person, who accepts within 7 days with `POST /v1/invites/{token}/accept` signed in (session token) as that email.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: ORG_PARAMS,
  body: json(INVITE_BODY),
  responses: {
    201: ok(
      "The invite and its token (secret, shown once).",
      obj({ ...INVITE_FIELDS, token: str("The invite token (`inv_...`), shown only here.") }, [...(Object.keys(INVITE_FIELDS) as (keyof typeof INVITE_FIELDS)[]), "token"]),
    ),
    ...errors({ 400: "`invalid_request` (email or role)", ...AUTH_ERR, ...ROLE_ERR, ...NOT_FOUND, 409: "`already_member` (a user with this email is a member)" }),
  },
});

/** `GET /v1/orgs/{org_id}/invites`. */
export const listInvitesSchema = route({
  operationId: "listOrgInvites",
  summary: "Invites not accepted yet",
  description: "Admins and owners; newest first, expired ones included (`expired`), tokens never.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: ORG_PARAMS,
  responses: {
    200: ok("The invites.", LIST(INVITE)),
    ...errors({ ...AUTH_ERR, ...ROLE_ERR, ...NOT_FOUND }),
  },
});

/** `DELETE /v1/orgs/{org_id}/invites/{invite_id}`. */
export const revokeInviteSchema = route({
  operationId: "revokeOrgInvite",
  summary: "Revoke an invite",
  tags: ["organizations"],
  access: "keyOrSession",
  params: obj({ org_id: ORG_ID, invite_id: str("Invite id (`inv_...`).", { maxLength: 200 }) }, ["org_id", "invite_id"]),
  responses: {
    200: ok("Revoked.", obj({ id: str("Invite id."), deleted: bool("Always true.", { enum: [true] }) }, ["id", "deleted"])),
    ...errors({ ...AUTH_ERR, ...ROLE_ERR, 404: "`org_not_found`, `invite_not_found` (unknown or already accepted)" }),
  },
});

/** `POST /v1/invites/{token}/accept`. */
export const acceptInviteSchema = route({
  operationId: "acceptOrgInvite",
  summary: "Accept an invite",
  description: "With a session token of the invited email's user: makes the user a member with the invite's role. An invite is accepted once, within 7 days.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: obj({ token: str("The invite token (`inv_...`).", { maxLength: 200 }) }, ["token"]),
  responses: {
    200: ok("The new membership.", MEMBER),
    ...errors({
      ...AUTH_ERR,
      403: "`invite_email_mismatch` (the session's user is not the invited email), `forbidden_role` (an API key: accept with a session)",
      404: "`invite_not_found` (unknown, used or expired)",
      409: "`already_member`",
    }),
  },
});
