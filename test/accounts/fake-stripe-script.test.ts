/**
 * `npm run fake-stripe` starts the Stripe fake and prints the environment that points a gateway at it; the
 * official SDK opens a session there, the fake-only `/pay` marks it paid (its delivery fails while no
 * gateway listens), and on SIGTERM the script reports what it received.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import Stripe from "stripe";
import { freePort } from "../helpers/process.ts";

test("fake-stripe prints the gateway's environment and answers the Stripe SDK", async () => {
  const gatewayPort = await freePort();
  const child = spawn(process.execPath, ["scripts/fake-stripe.ts"], {
    env: { ...process.env, FAKE_STRIPE_PORT: "0", FAKE_STRIPE_KEY: "sk_test_script", FAKE_STRIPE_WEBHOOK_URL: `http://127.0.0.1:${gatewayPort}/v1/billing/stripe/webhook` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", () => {
        if (out.includes("npm start")) resolve();
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const m = /STRIPE_SECRET_KEY=(\S+) STRIPE_WEBHOOK_SECRET=(whsec_\S+) STRIPE_API_BASE=(http:\/\/127\.0\.0\.1:\d+) npm start/.exec(out);
    assert.ok(m, out);
    assert.equal(m[1], "sk_test_script");
    const base = new URL(m[3]);
    const stripe = new Stripe(m[1], { protocol: "http", host: base.hostname, port: Number(base.port), maxNetworkRetries: 0 });
    const session = await stripe.checkout.sessions.create({
      mode: "payment",
      line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount: 2500, product_data: { name: "Balance top-up" } } }],
      client_reference_id: "usr_x",
    });
    assert.equal(session.amount_total, 2500);
    assert.equal(session.payment_status, "unpaid");
    const pay = await fetch(`${m[3]}/__fake/checkout/sessions/${session.id}/pay`, { method: "POST" });
    assert.equal(pay.status, 200);
    const paid = (await pay.json()) as { session: { payment_status: string }; event: { type: string }; deliveries: { status: number | null }[] };
    assert.equal(paid.session.payment_status, "paid");
    assert.equal(paid.event.type, "checkout.session.completed");
    assert.deepEqual(paid.deliveries.map((d) => d.status), [null], "nothing listens at the webhook URL");
    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).status, "complete");
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
    assert.match(out, /requests received: 3; sessions 1 \(1 paid\)/);
  } finally {
    child.kill("SIGKILL");
  }
});
