/**
 * Route schema of the ledger (D8, D17).
 */
import { AUTH_ERR, bool, errors, isoTime, LIST, nullable, obj, ok, oneOf, PAGE_QUERY, route, str, usd } from "./common.ts";

/** One ledger entry (D8, D17, D29), as listed and as shown with its request. */
export const LEDGER_ENTRY = obj(
  {
    id: str("Entry id (the cursor for `after`)."),
    kind: oneOf(["signup_credit", "deposit", "hold", "hold_release", "charge", "refund", "adjustment"], "Entry kind."),
    amount_usd: usd("Signed amount"),
    balance_usd: usd("Balance right after this entry"),
    job_id: nullable(str("The job the entry belongs to.")),
    request_id: nullable(str("The request (`req_...`) of the paid call the entry belongs to.")),
    reference: nullable(str("A deposit's payment reference, the model of a call.")),
    created_at: isoTime("Time of the entry."),
  },
  ["id", "kind", "amount_usd", "balance_usd", "job_id", "request_id", "reference", "created_at"],
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
