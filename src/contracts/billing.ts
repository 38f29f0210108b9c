/**
 * Request contracts of the balance: the low-balance alert (D34) and Stripe Checkout top-ups (D33). The
 * TypeBox schemas of the JSON bodies of `PUT /v1/billing/alerts` and `POST /v1/billing/checkout`
 * (validated and documented by `src/http/schemas/billing.ts` and `checkout.ts`) and their `Static` types,
 * the input types of `src/webhooks/balance-alerts.ts` and `src/accounts/topups.ts`. The amount rules
 * (6 decimals, whole cents, the top-up bounds, which are settings) stay the services' checks.
 */
import type { Static, TString } from "typebox";
import { nullable, num, obj, str } from "./schema.ts";

/** Longest `success_url` / `cancel_url` accepted, characters (Stripe's own limit is larger). */
export const MAX_RETURN_URL_CHARS = 2048;

/** The body of `PUT /v1/billing/alerts`. */
export const ALERTS_BODY = obj(
  {
    low_balance_usd: nullable(
      num("Threshold, USD (at most 6 decimals), or null.", {
        minimum: 0,
        "x-error-message": "low_balance_usd must be a non-negative number of USD with at most 6 decimals, or null to remove the alert.",
      }),
    ),
  },
  ["low_balance_usd"],
);

const RETURN_URL = (description: string, example: string): TString =>
  str(description, {
    format: "uri",
    pattern: "^https?://",
    maxLength: MAX_RETURN_URL_CHARS,
    examples: [example],
    "x-error-message": `{param} must be an absolute http:// or https:// URL of at most ${MAX_RETURN_URL_CHARS} characters.`,
  });

/** The body of `POST /v1/billing/checkout`. */
export const CHECKOUT_BODY = obj(
  {
    amount_usd: num("The top-up in USD, a whole number of cents.", {
      examples: [25],
      "x-error-message": "amount_usd must be a number of USD in whole cents.",
    }),
    success_url: RETURN_URL("Where Stripe sends the customer after paying (default: the console with `?topup=success`).", "https://example.com/billing?topup=success"),
    cancel_url: RETURN_URL("Where Stripe sends the customer who cancels (default: the console with `?topup=cancel`).", "https://example.com/billing?topup=cancel"),
  },
  ["amount_usd"],
);

/** A low-balance alert body as received (types already checked by the route schema). */
export type AlertsBody = Static<typeof ALERTS_BODY>;
/** A Checkout top-up body as received (types already checked by the route schema). */
export type CheckoutBody = Static<typeof CHECKOUT_BODY>;
