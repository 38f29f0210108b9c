/**
 * Stripe Checkout top-ups (D33): `POST /v1/billing/checkout` (API key or session token) opens a Checkout
 * Session, `GET /v1/billing/checkout` says what a top-up may be (so clients learn whether payments are on); `POST /v1/billing/stripe/webhook` (public, signed by Stripe) records the paid ones as deposits.
 * Without `STRIPE_SECRET_KEY` both answer 404 before anything else (auth included); without
 * `STRIPE_WEBHOOK_SECRET` the webhook does.
 */
import type { Topups } from "../../accounts/topups.ts";
import { errors } from "../../errors.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { ADMIN_ONLY, principalOf, requireAuth } from "../auth.ts";
import { auditRequestOf, requestIdHeader } from "../audit-context.ts";
import { checkoutSettingsSchema, createCheckoutSchema, stripeWebhookSchema } from "../schemas/checkout.ts";
import { formReadByRoute } from "../schemas/common.ts";

/** Largest webhook body read, bytes: Stripe's Checkout Session events are a few kilobytes. */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;

export async function checkoutRoutes(app: App, services: Services): Promise<void> {
  const payments = (): Topups => {
    if (services.payments === null) throw errors.notFound();
    return services.payments;
  };
  app.addHook("onRequest", async () => {
    payments();
  });
  await app.register(async (acc: App) => {
    acc.addHook("onRequest", requireAuth(services, { allowSession: true }));
    acc.get("/v1/billing/checkout", { schema: checkoutSettingsSchema }, async () => payments().settings());
    // D41: top-ups are for admins and owners; the payment credits the caller's organization.
    acc.post("/v1/billing/checkout", { schema: createCheckoutSchema, config: ADMIN_ONLY }, async (req, reply) => {
      return reply.code(201).send(await payments().createCheckout(principalOf(req), req.body));
    });
  });
  // The signature covers the body's exact bytes: in this scope no JSON parser runs, every body arrives
  // as a Buffer (and no schema validates it: the signature does).
  await app.register(async (hook) => {
    hook.removeAllContentTypeParsers();
    hook.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));
    hook.addHook("onRequest", requestIdHeader);
    hook.addHook("onRequest", async () => {
      if (!payments().webhookEnabled) throw errors.notFound();
    });
    hook.post("/v1/billing/stripe/webhook", { schema: stripeWebhookSchema, validatorCompiler: formReadByRoute }, async (req) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const signature = req.headers["stripe-signature"];
      const result = await payments().receiveWebhook(raw, typeof signature === "string" ? signature : undefined, auditRequestOf(req));
      req.log.info(
        { stripe_event: result.eventId, stripe_event_type: result.eventType, stripe_session: result.sessionId, outcome: result.outcome },
        "stripe webhook",
      );
      return { received: true };
    });
  });
}
