/**
 * Request contracts of the organization endpoints (D41): the bodies of `POST /v1/orgs`,
 * `PATCH /v1/orgs/{org_id}`, `POST /v1/orgs/{org_id}/invites` and `PATCH /v1/orgs/{org_id}/members/{user_id}`
 * (validated and documented by `src/http/schemas/orgs.ts`) and their `Static` types, the inputs of
 * `src/accounts/orgs.ts`.
 */
import type { Static } from "typebox";
import { obj, oneOf, str } from "./schema.ts";

/** A role in an organization (D41). */
export const ROLE_IN = oneOf(["owner", "admin", "member", "viewer"], "`owner`, `admin`, `member` or `viewer`.", {
  "x-error-message": "role must be one of owner, admin, member, viewer.",
});

const NAME = str("The organization's name, 1 to 100 characters.", {
  minLength: 1,
  maxLength: 100,
  examples: ["Acme Studio"],
  "x-error-message": "name must be a string of 1 to 100 characters.",
});

/** The body of `POST /v1/orgs` and `PATCH /v1/orgs/{org_id}`. */
export const ORG_BODY = obj({ name: NAME }, ["name"]);

/** The body of `POST /v1/orgs/{org_id}/invites`. */
export const INVITE_BODY = obj(
  {
    email: str("The invited person's email; only a session of the user with this email can accept.", {
      maxLength: 254,
      examples: ["bob@example.com"],
      "x-error-message": "email must be a valid email address.",
    }),
    role: ROLE_IN,
  },
  ["email", "role"],
);

/** The body of `PATCH /v1/orgs/{org_id}/members/{user_id}`. */
export const MEMBER_BODY = obj({ role: ROLE_IN }, ["role"]);

export type OrgBody = Static<typeof ORG_BODY>;
export type InviteBody = Static<typeof INVITE_BODY>;
export type MemberBody = Static<typeof MEMBER_BODY>;
