/**
 * Request contracts of budgets (D44): the TypeBox schemas of the bodies of `POST /v1/budgets` and
 * `PATCH /v1/budgets/{budget_id}` (validated and documented by `src/http/schemas/budgets.ts`) and their
 * `Static` types, the input types of `src/accounts/budgets.ts`. The rules types cannot say (a known time
 * zone, an amount in micro-USD, a scope that names a member or key of the organization) are the service's.
 */
import type { Static } from "typebox";
import { arr, int, num, obj, oneOf, str } from "./schema.ts";

const AMOUNT = num("The budget per window, USD (more than 0, at most 6 decimals).", {
  exclusiveMinimum: 0,
  examples: [50],
  "x-error-message": "amount_usd must be a number of USD above 0 with at most 6 decimals.",
});
const PERIOD = oneOf(["day", "week", "month", "total"], "The calendar window: a day, a week (from Monday), a month of `timezone`, or `total` (one window forever).");
const TIMEZONE = str("IANA time zone whose calendar the windows follow (default `UTC`).", {
  minLength: 1,
  maxLength: 64,
  examples: ["Europe/Paris"],
});
const ACTION = oneOf(["block", "alert"], "`block` refuses a call whose hold would pass the budget (402 `budget_exceeded`); `alert` only sends `budget.threshold` events.");
const THRESHOLDS = arr(int("A percentage of the amount, 1-100.", { minimum: 1, maximum: 100 }), "Percentages at which one `budget.threshold` event is sent per window (default [50, 80, 100]).", {
  maxItems: 10,
  "x-error-message": "thresholds must be a list of at most 10 whole percentages from 1 to 100.",
});

/** What a budget counts: the organization, one member (user id) or one key. */
export const BUDGET_SCOPE = obj(
  {
    type: oneOf(["org", "member", "key"], "The organization's calls, one member's calls, or one API key's calls."),
    id: str("The organization id (`org_...`), the member's user id or the key id (`key_...`).", { minLength: 1, maxLength: 100 }),
  },
  ["type", "id"],
);

/** The body of `POST /v1/budgets`. */
export const CREATE_BUDGET_BODY = obj(
  { scope: BUDGET_SCOPE, amount_usd: AMOUNT, period: PERIOD, timezone: TIMEZONE, action: ACTION, thresholds: THRESHOLDS },
  ["scope", "amount_usd", "period"],
);

/** The body of `PATCH /v1/budgets/{budget_id}`: the fields to change (the scope stays). */
export const PATCH_BUDGET_BODY = obj({ amount_usd: AMOUNT, period: PERIOD, timezone: TIMEZONE, action: ACTION, thresholds: THRESHOLDS });

/** A budget creation body as received (types already checked by the route schema). */
export type CreateBudgetBody = Static<typeof CREATE_BUDGET_BODY>;
/** A budget change body as received (types already checked by the route schema). */
export type PatchBudgetBody = Static<typeof PATCH_BUDGET_BODY>;
