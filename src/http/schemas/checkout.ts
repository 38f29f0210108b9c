/**
 * Route schemas of Stripe Checkout top-ups (D33): opening a Checkout Session, and the webhook Stripe
 * calls when it is paid. Both answer 404 `not_found` without `STRIPE_SECRET_KEY`, the webhook also without
 * `STRIPE_WEBHOOK_SECRET`. The amount bounds are settings (`TOPUP_MIN_USD`, `TOPUP_MAX_USD`), so
 * accounts/topups.ts checks them; the schema checks the shape.
 */
import { DEPOSIT_EVENTS } from "../../accounts/topups.ts";
import { CHECKOUT_BODY } from "../../contracts/billing.ts";
import { AUTH_ERR, bool, errors, json, num, obj, ok, route, str } from "./common.ts";

const OFF = "`not_found` (payments are off: no `STRIPE_SECRET_KEY`)";

/** `GET /v1/billing/checkout`. */
export const checkoutSettingsSchema = route({
  operationId: "getCheckoutSettings",
  summary: "Whether card top-ups are on, and their limits",
  description: "Answers the smallest and largest top-up `POST /v1/billing/checkout` takes (`TOPUP_MIN_USD`, `TOPUP_MAX_USD`, both allowed), or 404 when payments are off.",
  tags: ["billing"],
  access: "keyOrSession",
  responses: {
    200: ok(
      "Card top-ups are on.",
      obj(
        {
          object: { type: "string", enum: ["billing.checkout_settings"], description: "Always `billing.checkout_settings`." },
          currency: { type: "string", enum: ["usd"], description: "Always `usd`." },
          min_usd: num("Smallest top-up, USD."),
          max_usd: num("Largest top-up, USD."),
        },
        ["object", "currency", "min_usd", "max_usd"],
      ),
    ),
    ...errors({ ...AUTH_ERR, 404: OFF }),
  },
});

/** `POST /v1/billing/checkout`. */
export const createCheckoutSchema = route({
  operationId: "createCheckout",
  summary: "Top up the balance with Stripe Checkout",
  description:
    "Opens a Stripe Checkout Session for `amount_usd` (whole cents, from `TOPUP_MIN_USD` to `TOPUP_MAX_USD`, both allowed; 5 and 10000 by default) and answers its id and the Stripe-hosted `url` to send the customer to. Nothing is charged or recorded now: when Stripe reports the payment (`POST /v1/billing/stripe/webhook`), the amount becomes a ledger `deposit` whose `reference` is the session id, and the tier follows the cumulative deposits.",
  tags: ["billing"],
  access: "keyOrSession",
  body: json(CHECKOUT_BODY),
  responses: {
    201: ok(
      "The Checkout Session.",
      obj(
        {
          id: str("The Checkout Session id; the deposit's ledger `reference` once paid.", { examples: ["cs_test_a1B2c3D4e5F6g7H8i9J0"] }),
          url: str("The Stripe-hosted payment page.", { examples: ["https://checkout.stripe.com/c/pay/cs_test_a1B2c3D4e5F6g7H8i9J0"] }),
        },
        ["id", "url"],
      ),
    ),
    ...errors({
      400: "`invalid_request` (`amount_usd` not whole cents or outside the limits; a return URL that is not http(s))",
      ...AUTH_ERR,
      404: OFF,
      502: "`provider_error` (Stripe unreachable or refusing; nothing charged)",
    }),
  },
});

/** `POST /v1/billing/stripe/webhook`. */
export const stripeWebhookSchema = route({
  operationId: "stripeWebhook",
  summary: "Stripe's webhook (payments)",
  description: `Called by Stripe, not by clients: register \`<PUBLIC_BASE_URL>/v1/billing/stripe/webhook\` in Stripe's dashboard for the events ${DEPOSIT_EVENTS.map((e) => `\`${e}\``).join(" and ")}. The body is verified, byte for byte, against the \`Stripe-Signature\` header with \`STRIPE_WEBHOOK_SECRET\`. A paid session records one \`deposit\` however often Stripe delivers its events; an unpaid session, an unknown user, another currency or another event type record nothing and answer 200 too.`,
  tags: ["billing"],
  access: "public",
  headers: obj({ "stripe-signature": str("Stripe's signature of the body (`t=<unix time>,v1=<hex HMAC-SHA256>`).", { examples: ["t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"] }) }),
  body: json(obj({}, [], { description: "A Stripe event (`{id: \"evt_...\", object: \"event\", type, data: {object}}`), read as raw bytes.", additionalProperties: true })),
  responses: {
    200: ok("The event was received (whether or not it recorded a deposit).", obj({ received: bool("Always true.") }, ["received"])),
    ...errors({
      400: "`invalid_request` (missing or bad `Stripe-Signature`: nothing recorded)",
      404: "`not_found` (payments are off: no `STRIPE_SECRET_KEY` or no `STRIPE_WEBHOOK_SECRET`)",
    }),
  },
});
