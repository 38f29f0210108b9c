/**
 * Route schema of the ledger (D8, D17).
 */
import { ALERTS_BODY } from "../../contracts/billing.ts";
import { AUTH_ERR, bool, errors, isoTime, json, LIST, nullable, obj, ok, oneOf, PAGE_QUERY, route, str, usd } from "./common.ts";

/** One ledger entry (D8, D17, D29), as listed and as shown with its request. */
export const LEDGER_ENTRY = obj(
  {
    id: str("Entry id (the cursor for `after`)."),
    org_id: str("The organization whose balance the entry moved."),
    user_id: nullable(str("The member behind the entry: who made the paid call (a key's creator or a session's user), registered (signup credit) or paid a top-up; null for operator deposits and entries from before organizations.")),
    kind: oneOf(["signup_credit", "deposit", "hold", "hold_release", "charge", "refund", "adjustment"], "Entry kind."),
    amount_usd: usd("Signed amount"),
    balance_usd: usd("Balance right after this entry"),
    job_id: nullable(str("The job the entry belongs to.")),
    request_id: nullable(str("The request (`req_...`) of the paid call the entry belongs to.")),
    reference: nullable(str("A deposit's payment reference, the model of a call.")),
    created_at: isoTime("Time of the entry."),
  },
  ["id", "org_id", "user_id", "kind", "amount_usd", "balance_usd", "job_id", "request_id", "reference", "created_at"],
);

/** `GET /v1/billing/ledger`. */
export const listLedgerSchema = route({
  operationId: "listLedger",
  summary: "Ledger entries, newest first",
  description: "Every change of the balance. A succeeded job nets `-cost_usd` over its entries; a failed, refunded or expired job nets 0.",
  tags: ["billing"],
  access: "keyOrSession",
  query: PAGE_QUERY,
  responses: {
    200: ok("One page.", LIST(LEDGER_ENTRY, { has_more: bool("More entries follow.") })),
    ...errors({ 400: "`invalid_request` (limit outside 1-100)", ...AUTH_ERR }),
  },
});

/** The low-balance alert setting (D34). */
const ALERTS = obj(
  {
    object: oneOf(["billing.alerts"], "Always `billing.alerts`."),
    low_balance_usd: nullable(usd("The threshold; null: no alert")),
    armed: bool("Whether the next fall below the threshold sends `balance.low` (false once it was sent, until the balance is back above)."),
    balance_usd: usd("The current balance"),
  },
  ["object", "low_balance_usd", "armed", "balance_usd"],
);

/** `GET /v1/billing/alerts`. */
export const getAlertsSchema = route({
  operationId: "getBillingAlerts",
  summary: "The low-balance alert",
  tags: ["billing"],
  access: "keyOrSession",
  responses: { 200: ok("The alert setting.", ALERTS), ...errors(AUTH_ERR) },
});

/** `PUT /v1/billing/alerts`. */
export const putAlertsSchema = route({
  operationId: "setBillingAlerts",
  summary: "Set the low-balance alert",
  description:
    "When the balance falls below `low_balance_usd`, one `balance.low` webhook event goes to the endpoints that take it, with `data: {balance_usd, threshold_usd}`; the alert is armed again once the balance is back above. A new threshold above the current balance sends the event at once. `null` removes the alert.",
  tags: ["billing"],
  access: "keyOrSession",
  body: json(ALERTS_BODY),
  responses: { 200: ok("The alert setting.", ALERTS), ...errors({ 400: "`invalid_request`", ...AUTH_ERR }) },
});
