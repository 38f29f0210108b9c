/**
 * `npm run fake-stripe`: a loopback fake of Stripe's Checkout API (fakes/stripe.ts), so the
 * top-ups (D33) can be tried end to end without a Stripe account: the gateway's `POST
 * /v1/billing/checkout` opens a session at the fake, and `POST /__fake/checkout/sessions/{id}/pay` (or the
 * Pay button of the session's `url` in a browser) plays the customer who pays: the fake signs the
 * `checkout.session.completed` event with the webhook secret and delivers it to the gateway.
 *
 * Environment: FAKE_STRIPE_PORT (default 18490; 0 picks a free one), FAKE_HOST (127.0.0.1),
 * FAKE_STRIPE_KEY (the secret key the fake accepts, default `sk_test_fake`), FAKE_STRIPE_WEBHOOK_URL
 * (default `http://127.0.0.1:8080/v1/billing/stripe/webhook`, the gateway's defaults),
 * FAKE_STRIPE_WEBHOOK_SECRET (default `whsec_fake_local_only`). It prints the environment to start the
 * gateway with.
 */
import { startStripeFake } from "../fakes/stripe.ts";

const env = process.env;
const apiKey = env.FAKE_STRIPE_KEY || "sk_test_fake";
const webhookUrl = env.FAKE_STRIPE_WEBHOOK_URL || "http://127.0.0.1:8080/v1/billing/stripe/webhook";
const webhookSecret = env.FAKE_STRIPE_WEBHOOK_SECRET || "whsec_fake_local_only";
const fake = await startStripeFake({
  port: Number(env.FAKE_STRIPE_PORT ?? 18490),
  host: env.FAKE_HOST || "127.0.0.1",
  apiKey,
  webhookUrl,
  webhookSecret,
});

console.log(`stripe fake        ${fake.url} (accepts the key ${apiKey})`);
console.log(`delivers events to ${webhookUrl}\n`);
console.log("Run the gateway against it, in another terminal:\n");
console.log(`  STRIPE_SECRET_KEY=${apiKey} STRIPE_WEBHOOK_SECRET=${webhookSecret} STRIPE_API_BASE=${fake.url} npm start\n`);
console.log("Then open a session with an API key and pay it (docs/payments.md):\n");
console.log(`  curl -s -X POST http://127.0.0.1:8080/v1/billing/checkout -H "Authorization: Bearer $API_KEY" -d '{"amount_usd": 25}'`);
console.log(`  curl -s -X POST ${fake.url}/__fake/checkout/sessions/<id>/pay\n`);
console.log("Ctrl-C prints how many requests the fake received.");

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  const paid = [...fake.sessions.values()].filter((s) => s.payment_status === "paid").length;
  console.log(`\nrequests received: ${fake.requests.length}; sessions ${fake.sessions.size} (${paid} paid)`);
  await fake.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
