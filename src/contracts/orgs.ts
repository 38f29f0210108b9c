/**
 * Request contracts of the organization endpoints (D41): the bodies of `POST /v1/orgs`,
 * `PATCH /v1/orgs/{org_id}`, `POST /v1/orgs/{org_id}/invites` and `PATCH /v1/orgs/{org_id}/members/{user_id}`
 * (validated and documented by `src/http/schemas/orgs.ts`) and their `Static` types, the inputs of
 * `src/accounts/orgs.ts`.
 */
import type { Static } from "typebox";
import { int, nullable, obj, oneOf, str } from "./schema.ts";

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

/** A retention window an organization sets for itself (D46): days, or null for the operator's. */
const DAYS = (what: string) =>
  nullable(
    int(`${what} Whole days from 0 up to the operator's window (a longer one is refused); null goes back to the operator's window.`, {
      minimum: 0,
      maximum: 36500,
      "x-error-message": "{param} must be a whole number of days from 0 to the operator's window, or null.",
    }),
  );

/** The organization's own retention windows in `PATCH /v1/orgs/{org_id}` (owners only). */
export const RETENTION_BODY = obj(
  {
    prompts_days: DAYS("How long the texts of requests (speech text, prompts, lyrics, a job's parameters) are kept. 0: they are never stored (zero retention); the calls still run."),
    outputs_days: DAYS("How long generated files are kept; their URLs then answer 410 `output_expired`."),
  },
  [],
  { additionalProperties: false, description: "Shorter retention windows for this organization; a field left out is unchanged." },
);

/** The body of `PATCH /v1/orgs/{org_id}`: a new name (admins and owners), retention windows (owners), or both. */
export const ORG_PATCH_BODY = obj({ name: NAME, retention: RETENTION_BODY }, [], {
  minProperties: 1,
  "x-error-message": "Send name, retention or both.",
});

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
export type OrgPatchBody = Static<typeof ORG_PATCH_BODY>;
export type InviteBody = Static<typeof INVITE_BODY>;
export type MemberBody = Static<typeof MEMBER_BODY>;
