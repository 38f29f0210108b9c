/**
 * Route schemas of budgets (D44), tag `billing`: the organization's budgets (`/v1/budgets`) and the
 * operator's view of one organization's (`/v1/admin/orgs/{org_id}/budgets`).
 */
import { BUDGET_SCOPE, CREATE_BUDGET_BODY, PATCH_BUDGET_BODY } from "../../contracts/budgets.ts";
import { arr, AUTH_ERR, bool, errors, int, isoTime, json, LIST, nullable, obj, ok, oneOf, route, str, usd } from "./common.ts";

const ROLE_ERR = { 403: "`forbidden_role` (members and viewers read budgets; owners and admins change them)" };
const NOT_FOUND = { 404: "`budget_not_found`" };
const BAD_BODY = { 400: "`invalid_request` (a field; a time zone the runtime does not know; a scope that is not this organization, one of its members or keys; more than 100 budgets)" };

/** A budget with the figures of its current window. */
export const BUDGET = obj(
  {
    id: str("Budget id (`bud_...`); a key's spend limit shows as `bud_<key id>`."),
    object: oneOf(["budget"], "Always `budget`."),
    scope: BUDGET_SCOPE,
    amount_usd: usd("The budget per window"),
    period: oneOf(["day", "week", "month", "total"], "The calendar window."),
    timezone: str("The IANA time zone of the windows."),
    action: oneOf(["block", "alert"], "What happens at the amount: `block` refuses calls, `alert` only sends events."),
    thresholds: arr(int("A percentage."), "Percentages that send one `budget.threshold` event per window."),
    spent_usd: usd("Open holds and captured charges of live calls in the current window"),
    remaining_usd: usd("What is left in the current window (never below 0)"),
    window_start: isoTime("Start of the current window, in the budget's time zone."),
    window_end: nullable(isoTime("End of the current window (the next one's start); null for `total`.")),
    source: oneOf(["budget", "key_spend_limit"], "`budget`, or `key_spend_limit` for an API key's spend limit shown as a budget (changing it here changes the key's limit)."),
    created_at: isoTime("When it was made."),
  },
  ["id", "object", "scope", "amount_usd", "period", "timezone", "action", "thresholds", "spent_usd", "remaining_usd", "window_start", "window_end", "source", "created_at"],
);

const BUDGET_PARAMS = obj({ budget_id: str("Budget id.", { maxLength: 200 }) }, ["budget_id"]);
const ORG_PARAMS = obj({ org_id: str("Organization id (`org_...`).", { maxLength: 200 }) }, ["org_id"]);

const LIST_DESCRIPTION =
  "Every budget of the organization, with its API keys' spend limits as key budgets of action `block` in UTC. Budgets of the organization, of the calling member and of the calling key all apply to a call at once; a call whose hold would pass a `block` budget is refused with 402 `budget_exceeded` (`param` = the budget id) before any upstream call.";

/** `GET /v1/budgets`. */
export const listBudgetsSchema = route({
  operationId: "listBudgets",
  summary: "The organization's budgets",
  description: LIST_DESCRIPTION,
  tags: ["billing"],
  access: "keyOrSession",
  responses: { 200: ok("The budgets.", LIST(BUDGET)), ...errors(AUTH_ERR) },
});

/** `POST /v1/budgets`. */
export const createBudgetSchema = route({
  operationId: "createBudget",
  summary: "Create a budget",
  description:
    "Owners and admins. The window starts at the calendar boundary of `timezone` (midnight; Monday for weeks; the first for months). What the scope's live calls already hold or were charged in the current window counts at once. Each threshold crossed sends one `budget.threshold` event per window `{budget_id, scope, percent, spent_usd, amount_usd, window_start}`.",
  tags: ["billing"],
  access: "keyOrSession",
  body: json(CREATE_BUDGET_BODY),
  responses: { 201: ok("The budget.", BUDGET), ...errors({ ...BAD_BODY, ...AUTH_ERR, ...ROLE_ERR }) },
});

/** `GET /v1/budgets/{budget_id}`. */
export const getBudgetSchema = route({
  operationId: "getBudget",
  summary: "One budget",
  tags: ["billing"],
  access: "keyOrSession",
  params: BUDGET_PARAMS,
  responses: { 200: ok("The budget.", BUDGET), ...errors({ ...AUTH_ERR, ...NOT_FOUND }) },
});

/** `PATCH /v1/budgets/{budget_id}`. */
export const patchBudgetSchema = route({
  operationId: "updateBudget",
  summary: "Change a budget",
  description: "Owners and admins. A new period or time zone starts the counter again from the usage of the new current window. On a key's spend limit only `amount_usd` and `period` change (the key's limit).",
  tags: ["billing"],
  access: "keyOrSession",
  params: BUDGET_PARAMS,
  body: json(PATCH_BUDGET_BODY),
  responses: { 200: ok("The budget.", BUDGET), ...errors({ ...BAD_BODY, ...AUTH_ERR, ...ROLE_ERR, ...NOT_FOUND }) },
});

/** `DELETE /v1/budgets/{budget_id}`. */
export const deleteBudgetSchema = route({
  operationId: "deleteBudget",
  summary: "Delete a budget",
  description: "Owners and admins. On a key's spend limit it removes the key's limit.",
  tags: ["billing"],
  access: "keyOrSession",
  params: BUDGET_PARAMS,
  responses: {
    200: ok("Deleted.", obj({ id: str("Budget id."), object: oneOf(["budget"], "Always `budget`."), deleted: bool("Always true.", { enum: [true] }) }, ["id", "object", "deleted"])),
    ...errors({ ...AUTH_ERR, ...ROLE_ERR, ...NOT_FOUND }),
  },
});

/** `GET /v1/admin/orgs/{org_id}/budgets`. */
export const adminListBudgetsSchema = route({
  operationId: "adminListBudgets",
  summary: "An organization's budgets",
  description: LIST_DESCRIPTION,
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  responses: { 200: ok("The budgets.", LIST(BUDGET)), ...errors({ 401: "`auth_error`", 404: "`org_not_found`" }) },
});

/** `POST /v1/admin/orgs/{org_id}/budgets`. */
export const adminCreateBudgetSchema = route({
  operationId: "adminCreateBudget",
  summary: "Create a budget for an organization",
  description: "As `POST /v1/budgets`, recorded in the organization's audit log as the operator's.",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  body: json(CREATE_BUDGET_BODY),
  responses: { 201: ok("The budget.", BUDGET), ...errors({ ...BAD_BODY, 401: "`auth_error`", 404: "`org_not_found`" }) },
});
