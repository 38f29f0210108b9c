/**
 * Request contract of the audit log (D45): the query string of `GET /v1/orgs/{org_id}/audit-log` and of
 * the operator's `GET /v1/admin/audit-log` (which adds `org_id`), validated and documented by
 * `src/http/schemas/audit.ts`, with their `Static` types, the inputs of `src/accounts/audit-log.ts`.
 */
import type { Static } from "typebox";
import { obj, oneOf, queryInt, str } from "./schema.ts";

const TIME_BOUND = (what: string) =>
  str(`${what}: an ISO date (\`2025-03-01\`, a whole day in UTC) or an ISO instant with a zone (\`2025-03-01T12:00:00Z\`).`, { maxLength: 40, examples: ["2025-03-01"] });

const AUDIT_FILTERS = {
  action: str("Only this action (`key.created`, `member.removed`, ...).", { maxLength: 100, examples: ["key.created"] }),
  actor_id: str("Only changes made by this actor: a user id (`usr_...`), a key id (`key_...`) or `operator`.", { maxLength: 200 }),
  from: TIME_BOUND("Entries from"),
  to: TIME_BOUND("Entries before (a date includes that day)"),
  limit: queryInt(
    "Page size, 1 to 100 (default 20); with `format=csv` up to 10000 (default: every matching entry up to 10000).",
    "^0*(10000|[1-9][0-9]{0,3})$",
    "limit must be an integer from 1 to 100 (10000 with format=csv).",
    { examples: ["20"] },
  ),
  after: str("Cursor: the `id` of the last entry of the previous page.", { maxLength: 200 }),
  format: oneOf(["json", "csv"], "`json` (default) or `csv` (`text/csv` with a header row).", { "x-error-message": "format must be 'json' or 'csv'." }),
};

/** The query of `GET /v1/orgs/{org_id}/audit-log`. */
export const AUDIT_QUERY = obj(AUDIT_FILTERS);

/** The query of the operator's `GET /v1/admin/audit-log`: the same filters and `org_id`. */
export const ADMIN_AUDIT_QUERY = obj({
  ...AUDIT_FILTERS,
  org_id: str("Only this organization's entries (`org_...`); without it, every organization's and those of none (failed sign-ins of unknown emails).", { maxLength: 200 }),
});

export type AuditQueryString = Static<typeof AUDIT_QUERY>;
export type AdminAuditQueryString = Static<typeof ADMIN_AUDIT_QUERY>;
