/**
 * Route schemas of the audit log: an organization's (`GET /v1/orgs/{org_id}/audit-log`, tag
 * `organizations`) and the operator's (`GET /v1/admin/audit-log`, tag `operator`), as JSON pages or CSV.
 */
import { ADMIN_AUDIT_QUERY, AUDIT_QUERY } from "../../contracts/audit.ts";
import { AUTH_ERR, bool, errors, isoTime, LIST, nullable, obj, oneOf, route, str, typed } from "./common.ts";

const ACTOR = obj(
  {
    type: oneOf(["user", "key", "operator"], "`user` (a session's user), `key` (an API key) or `operator` (the operator token; `stripe` for a top-up whose payer is not known)."),
    id: str("The user's id (`usr_...`), the key's id (`key_...`), or `operator`; a failed sign-in of an unknown email: `unknown`."),
    email: str("A user's email; for a failed sign-in, the email that was tried."),
  },
  ["type", "id"],
);

/** One entry of the log. */
export const AUDIT_ENTRY = obj(
  {
    id: str("Entry id (`aud_...`)."),
    object: oneOf(["audit.entry"], "Always `audit.entry`."),
    at: isoTime("When the change was made."),
    org_id: nullable(str("The organization the change belongs to; null for an event without one (a failed sign-in of an unknown email).")),
    actor: ACTOR,
    action: str("What was done, `<object>.<verb>`: `key.created`, `key.updated`, `key.revoked`, `member.updated`, `member.removed`, `invite.created`, `invite.revoked`, `invite.accepted`, `org.created`, `org.updated`, `org.deleted`, `budget.created`, `budget.updated`, `budget.deleted`, `webhook.created`, `webhook.deleted`, `webhook.secret_rotated`, `alert.updated`, `topup.credited`, `deposit.created`, `tier.updated`, `limits.updated`, `user.registered`, `session.created`, `session.failed`.", { examples: ["key.created"] }),
    target: obj({ type: str("What kind of thing was changed: `key`, `user`, `invite`, `org`, `budget`, `webhook`, `session`."), id: str("Its id.") }, ["type", "id"]),
    request_id: str("The `X-Svc-Request-Id` of the request that made the change."),
    ip: nullable(str("The client's address.")),
    user_agent: nullable(str("The client's `User-Agent`.")),
    changes: typed({
      type: "object",
      description: "`{field: [before, after]}` of the fields the change set (`[null, value]` at a creation). Never a secret: no key, token, password or webhook secret is ever recorded, before or after.",
      additionalProperties: { type: "array", minItems: 2, maxItems: 2 },
      examples: [{ name: ["ci", "ci-prod"] }],
    }),
  },
  ["id", "object", "at", "org_id", "actor", "action", "target", "request_id", "ip", "user_agent", "changes"],
);

const PAGE = LIST(AUDIT_ENTRY, { has_more: bool("More entries follow (the next page: `after` = the last `id`).") });
const CSV_DOC = "With `format=csv`: `text/csv` with a header row `id,at,org_id,actor_type,actor_id,actor_email,action,target_type,target_id,request_id,ip,user_agent,changes` (`changes` as JSON), every matching entry up to 10000 (or `limit`); `X-Svc-Has-More: true` when more match.";
const ANSWER = (what: string) => ({
  description: `${what} ${CSV_DOC}`,
  headers: { "X-Svc-Has-More": str("CSV only: `true` when more entries match than the answer holds.") },
  content: { "application/json": { schema: PAGE }, "text/csv": { schema: { type: "string" } } },
});
const BAD = { 400: "`invalid_request` (limit, format, a bad time, `from` after `to`)" };

/** `GET /v1/orgs/{org_id}/audit-log`. */
export const orgAuditLogSchema = route({
  operationId: "listOrgAuditLog",
  summary: "An organization's audit log, newest first",
  description:
    "Every change made through the API to the organization, its keys, members, invites, budgets, webhooks, alerts, top-ups, deposits, tier and limits, and its members' sign-ins, with who made it (user, key or operator), the request id, address and user agent, and the fields before and after. Append-only: no route changes or deletes an entry. Owners and admins.",
  tags: ["organizations"],
  access: "keyOrSession",
  params: obj({ org_id: str("Organization id (`org_...`).", { maxLength: 200 }) }, ["org_id"]),
  query: AUDIT_QUERY,
  responses: {
    200: ANSWER("One page."),
    ...errors({
      ...BAD,
      ...AUTH_ERR,
      403: "`forbidden_role` (members and viewers)",
      404: "`org_not_found` (no such organization, or the caller is not a member of it; an API key reaches only its own)",
    }),
  },
});

/** `GET /v1/admin/audit-log`. */
export const adminAuditLogSchema = route({
  operationId: "adminListAuditLog",
  summary: "The audit log of every organization, newest first",
  description: "The entries of every organization (and those of none, such as failed sign-ins of unknown emails), or one organization's with `org_id`; the same filters as an organization's log.",
  tags: ["operator"],
  access: "admin",
  query: ADMIN_AUDIT_QUERY,
  responses: {
    200: ANSWER("One page."),
    ...errors({
      ...BAD,
      401: "`auth_error` (no operator token, a wrong one, or a customer's key)",
      404: "`not_found` (the operator API is off: `GATEWAY_ADMIN_TOKEN` is not set)",
    }),
  },
});
