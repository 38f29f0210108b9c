/**
 * Stripe Checkout top-ups (D33) on both databases, against the loopback Stripe fake driven by the official
 * `stripe` SDK inside the gateway: a checkout opens a session with the right parameters (and nothing
 * reaches Stripe for a refused amount); Stripe's signed events record one deposit per paid session however
 * they are retried or delivered concurrently, raise the tier, and nothing for unsigned, unpaid, foreign or
 * unknown ones; the balance stays the ledger sum; Stripe's keys and the webhook secret never reach an
 * answer or the log. Then the settings: payments off (404), a key without a webhook secret (webhook 404, a
 * warning at boot), Stripe refusing the key or unreachable (502).
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import Stripe from "stripe";
import { type FakeCheckoutSession, startStripeFake, type StripeFake } from "../../fakes/stripe.ts";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { loadConfig } from "../../src/config.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { freePort } from "../helpers/process.ts";

const KEY = "sk_test_51TopupsGatewayKey0123456789abcdef";
const WHSEC = "whsec_topupsTestSigningSecret0123456789";
const WEBHOOK = "/v1/billing/stripe/webhook";

/** A log sink keeping the raw JSON lines. */
function logSink(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  return { stream, lines };
}

/** The deposits (ledger kind `deposit`) of an account, oldest first. */
async function deposits(gw: TestGateway, accountId: string): Promise<{ amount_micros: number; reference: string | null }[]> {
  const rows = await gw.services.db.kysely
    .selectFrom("ledger_entries")
    .select(["amount_micros", "reference"])
    .where("account_id", "=", accountId)
    .where("kind", "=", "deposit")
    .execute();
  return rows.map((r) => ({ amount_micros: Number(r.amount_micros), reference: r.reference }));
}

/** Balance is never negative and equals the ledger sum (docs/architecture.md invariant 1). */
async function assertBalanced(gw: TestGateway, accountId: string): Promise<number> {
  const db = gw.services.db.kysely;
  const balance = await getBalance(db, accountId);
  assert.ok(balance !== null && balance >= 0);
  assert.equal(balance, await ledgerSum(db, accountId), "balance equals the ledger sum");
  return balance;
}

for (const backend of BACKENDS) {
  describe(`Stripe top-ups on ${backend.name}`, { skip: backend.skip }, () => {
    let fake: StripeFake;
    let gw: TestGateway;
    const log = logSink();

    before(async () => {
      fake = await startStripeFake({ apiKey: KEY });
      gw = await startGateway(
        backend.name,
        { STRIPE_SECRET_KEY: KEY, STRIPE_WEBHOOK_SECRET: WHSEC, STRIPE_API_BASE: fake.url, LOG_LEVEL: "info" },
        { logStream: log.stream },
      );
      fake.setWebhook({ url: gw.url + WEBHOOK, secret: WHSEC });
    });
    after(async () => {
      await gw?.close();
      await fake?.close();
    });

    /** Opens a checkout for a fresh user (`amount_usd`, as the API key or the session token). */
    async function checkout(amountUsd: number, opts: { session?: boolean } = {}) {
      const u = await gw.register();
      const res = await gw.request("POST", "/v1/billing/checkout", {
        token: opts.session ? u.session_token : u.api_key,
        body: { amount_usd: amountUsd },
      });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      return { u, id: res.json.id as string, url: res.json.url as string };
    }

    /** A signed webhook delivery of `payload` (signed with `secret`, default the right one). */
    function post(payload: string, secret: string | null = WHSEC) {
      const headers: Record<string, string> = {};
      if (secret !== null) headers["stripe-signature"] = Stripe.webhooks.generateTestHeaderString({ payload, secret });
      return gw.request("POST", WEBHOOK, { body: payload, headers });
    }

    test("a checkout opens a Stripe session with the right parameters; nothing is charged yet", async () => {
      fake.reset();
      const { u, id, url } = await checkout(25);
      assert.match(id, /^cs_test_/);
      assert.equal(url, `${fake.url}/c/pay/${id}`);
      const calls = fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/checkout/sessions");
      assert.equal(calls.length, 1);
      assert.equal(calls[0].headers.authorization, "Bearer [redacted]", "the SDK authenticates with the secret key");
      assert.deepEqual(calls[0].body, {
        mode: "payment",
        line_items: [{ quantity: "1", price_data: { currency: "usd", unit_amount: "2500", product_data: { name: "Balance top-up" } } }],
        client_reference_id: u.org_id,
        metadata: { org_id: u.org_id, user_id: u.user_id },
        success_url: `${gw.url}/console/?topup=success`,
        cancel_url: `${gw.url}/console/?topup=cancel`,
      });
      const session = fake.sessions.get(id);
      assert.equal(session?.amount_total, 2500);
      assert.equal(session?.status, "open");
      assert.deepEqual(await deposits(gw, u.org_id), []);
      assert.equal(await assertBalanced(gw, u.org_id), 500_000, "only the signup credit");
    });

    test("a session token may open a checkout, with its own return URLs", async () => {
      const u = await gw.register();
      fake.reset();
      const res = await gw.request("POST", "/v1/billing/checkout", {
        token: u.session_token,
        body: { amount_usd: 12.34, success_url: "https://example.com/ok?x=1", cancel_url: "http://localhost:3000/back" },
      });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      const body = fake.requests[0].body as Record<string, unknown>;
      assert.equal(body.success_url, "https://example.com/ok?x=1");
      assert.equal(body.cancel_url, "http://localhost:3000/back");
      assert.equal((body.line_items as { price_data: { unit_amount: string } }[])[0].price_data.unit_amount, "1234");
      const anonymous = await gw.request("POST", "/v1/billing/checkout", { body: { amount_usd: 10 } });
      assert.equal(anonymous.status, 401);
    });

    test("TOPUP_MIN_USD and TOPUP_MAX_USD are allowed; just outside, or not whole cents, is refused before Stripe", async () => {
      const u = await gw.register();
      const settings = await gw.request("GET", "/v1/billing/checkout", { token: u.session_token });
      assert.equal(settings.status, 200);
      assert.deepEqual(settings.json, { object: "billing.checkout_settings", currency: "usd", min_usd: 5, max_usd: 10000 });
      // The capabilities say the same (issue 42: a client learns it without a call that can 404).
      const caps = await gw.request("GET", "/v1/capabilities", { token: u.session_token });
      assert.equal(caps.status, 200);
      assert.deepEqual(caps.json.payments, { card_top_ups: true, min_usd: 5, max_usd: 10000 });
      fake.reset();
      for (const amount of [5, 10000]) {
        const ok = await gw.request("POST", "/v1/billing/checkout", { token: u.api_key, body: { amount_usd: amount } });
        assert.equal(ok.status, 201, `${amount}: ${JSON.stringify(ok.json)}`);
      }
      const sent = fake.requests.map((r) => (r.body as { line_items: { price_data: { unit_amount: string } }[] }).line_items[0].price_data.unit_amount);
      assert.deepEqual(sent, ["500", "1000000"]);
      fake.reset();
      for (const amount of [4.99, 10000.01, 5.001, 0, -10, "10", null]) {
        const bad = await gw.request("POST", "/v1/billing/checkout", { token: u.api_key, body: { amount_usd: amount } });
        assert.equal(bad.status, 400, `${String(amount)}: ${JSON.stringify(bad.json)}`);
        assert.equal(bad.json.error.code, "invalid_request");
        assert.equal(bad.json.error.param, "amount_usd");
      }
      for (const field of ["success_url", "cancel_url"]) {
        for (const value of ["ftp://example.com/x", "not a url", "javascript:alert(1)", 42]) {
          const bad = await gw.request("POST", "/v1/billing/checkout", { token: u.api_key, body: { amount_usd: 10, [field]: value } });
          assert.equal(bad.status, 400, `${field}=${String(value)}`);
          assert.equal(bad.json.error.param, field);
        }
      }
      assert.equal(fake.requests.length, 0, "nothing reached Stripe");
    });

    test("Stripe failing answers 502 provider_error without any secret; nothing recorded", async () => {
      const u = await gw.register();
      fake.setFailure(500);
      try {
        const res = await gw.request("POST", "/v1/billing/checkout", { token: u.api_key, body: { amount_usd: 20 } });
        assert.equal(res.status, 502);
        assert.equal(res.json.error.code, "provider_error");
        assert.equal(res.json.error.type, "provider_error");
        const text = Buffer.from(res.bytes).toString();
        assert.ok(!text.includes(KEY) && !text.includes("sk_test") && !text.includes(WHSEC));
      } finally {
        fake.setFailure(null);
      }
      assert.deepEqual(await deposits(gw, u.org_id), []);
    });

    test("a paid session records one deposit with the session id as reference, and the tier follows", async () => {
      const { u, id } = await checkout(25, { session: true });
      const before = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(before.json.tier, 0);
      const paid = await fake.pay(id);
      assert.deepEqual(paid.deliveries.map((d) => [d.status, d.body]), [[200, { received: true }]]);
      assert.deepEqual(await deposits(gw, u.org_id), [{ amount_micros: 25_000_000, reference: id }]);
      const me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.tier, 1, "25 USD of deposits earns tier 1");
      assert.equal(me.json.total_deposits_usd, 25);
      assert.equal(me.json.balance_usd, 25.5);
      const ledger = await gw.request("GET", "/v1/billing/ledger", { token: u.api_key });
      const entry = ledger.json.data[0];
      assert.equal(entry.kind, "deposit");
      assert.equal(entry.amount_usd, 25);
      assert.equal(entry.reference, id);
      assert.equal(await assertBalanced(gw, u.org_id), 25_500_000);

      // Stripe retries the same event later, and then sends another success event for the session.
      const replay = await fake.deliver(paid.event, 1);
      assert.equal(replay[0].status, 200);
      const other = await fake.deliver(fake.buildEvent("checkout.session.async_payment_succeeded", paid.session), 1);
      assert.equal(other[0].status, 200);
      assert.equal((await deposits(gw, u.org_id)).length, 1, "a replay records nothing");
      assert.equal(await assertBalanced(gw, u.org_id), 25_500_000);
    });

    test("the same event delivered 5 times at once records exactly one deposit", async () => {
      const { u, id } = await checkout(1234.56);
      const paid = await fake.pay(id, { deliveries: 5 });
      assert.equal(paid.deliveries.length, 5);
      for (const d of paid.deliveries) assert.deepEqual([d.status, d.body], [200, { received: true }], d.error);
      assert.deepEqual(await deposits(gw, u.org_id), [{ amount_micros: 1_234_560_000, reference: id }]);
      assert.equal(await assertBalanced(gw, u.org_id), 1_235_060_000);
      const me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.tier, 4, "1234.56 USD of deposits earns tier 4");
    });

    test("an unpaid session records nothing; its delayed payment's success does, once", async () => {
      const { u, id } = await checkout(60);
      const unpaid = await fake.pay(id, { paymentStatus: "unpaid" });
      assert.deepEqual(unpaid.deliveries.map((d) => [d.status, d.body]), [[200, { received: true }]]);
      assert.deepEqual(await deposits(gw, u.org_id), []);
      const later = await fake.pay(id, { type: "checkout.session.async_payment_succeeded", deliveries: 3 });
      assert.deepEqual(later.deliveries.map((d) => d.status), [200, 200, 200]);
      assert.deepEqual(await deposits(gw, u.org_id), [{ amount_micros: 60_000_000, reference: id }]);
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).json.tier, 2);
    });

    test("the organization comes from metadata.org_id when client_reference_id is missing", async () => {
      const { u, id } = await checkout(10);
      const session = { ...(fake.sessions.get(id) as FakeCheckoutSession), client_reference_id: null, payment_status: "paid", status: "complete" };
      const res = await post(JSON.stringify(fake.buildEvent("checkout.session.completed", session)));
      assert.deepEqual([res.status, res.json], [200, { received: true }]);
      assert.deepEqual(await deposits(gw, u.org_id), [{ amount_micros: 10_000_000, reference: id }]);
      const ledger = await gw.request("GET", "/v1/billing/ledger", { token: u.api_key });
      assert.deepEqual([ledger.json.data[0].org_id, ledger.json.data[0].user_id], [u.org_id, u.user_id], "the member who paid (D41)");
    });

    test("a session opened before organizations (it names the user) credits the user's personal organization", async () => {
      const { u, id } = await checkout(11);
      const session = { ...(fake.sessions.get(id) as FakeCheckoutSession), client_reference_id: u.user_id, metadata: { user_id: u.user_id }, payment_status: "paid", status: "complete" };
      const res = await post(JSON.stringify(fake.buildEvent("checkout.session.completed", session)));
      assert.deepEqual([res.status, res.json], [200, { received: true }]);
      assert.deepEqual(await deposits(gw, u.org_id), [{ amount_micros: 11_000_000, reference: id }]);
      assert.equal(await assertBalanced(gw, u.org_id), 11_500_000);
    });

    test("unknown users, other currencies and other event types answer 200 and record nothing", async () => {
      const { u, id } = await checkout(30);
      const base = { ...(fake.sessions.get(id) as FakeCheckoutSession), payment_status: "paid", status: "complete" };
      const events = [
        fake.buildEvent("checkout.session.completed", { ...base, id: "cs_test_unknownuser", client_reference_id: "usr_nobody", metadata: { user_id: "usr_nobody" } }),
        fake.buildEvent("checkout.session.completed", { ...base, id: "cs_test_nouser", client_reference_id: null, metadata: {} }),
        fake.buildEvent("checkout.session.completed", { ...base, id: "cs_test_euro", currency: "eur" }),
        fake.buildEvent("checkout.session.expired", { ...base, status: "expired", payment_status: "unpaid" }),
        fake.buildEvent("checkout.session.async_payment_failed", { ...base, payment_status: "unpaid" }),
        fake.buildEvent("payment_intent.succeeded", { id: "pi_123", object: "payment_intent", amount: 3000, currency: "usd", metadata: { user_id: u.user_id } }),
      ];
      for (const event of events) {
        const res = await post(JSON.stringify(event));
        assert.deepEqual([res.status, res.json], [200, { received: true }], event.type);
      }
      assert.deepEqual(await deposits(gw, u.org_id), []);
      const count = await gw.services.db.kysely.selectFrom("topups").select((eb) => eb.fn.countAll<string>().as("n")).where("session_id", "in", ["cs_test_unknownuser", "cs_test_nouser", "cs_test_euro"]).executeTakeFirst();
      assert.equal(Number(count?.n), 0);
    });

    test("a missing or bad signature answers 400 and records nothing", async () => {
      const { u, id } = await checkout(40);
      const session = { ...(fake.sessions.get(id) as FakeCheckoutSession), payment_status: "paid", status: "complete" };
      const payload = JSON.stringify(fake.buildEvent("checkout.session.completed", session));
      const tampered = payload.replace('"amount_total":4000', '"amount_total":400000');
      assert.notEqual(tampered, payload);
      const cases = [
        await post(payload, null),
        await post(payload, "whsec_not_the_secret"),
        await gw.request("POST", WEBHOOK, { body: tampered, headers: { "stripe-signature": Stripe.webhooks.generateTestHeaderString({ payload, secret: WHSEC }) } }),
        await gw.request("POST", WEBHOOK, { body: payload, headers: { "stripe-signature": Stripe.webhooks.generateTestHeaderString({ payload, secret: WHSEC, timestamp: Math.floor(Date.now() / 1000) - 3600 }) } }),
        await gw.request("POST", WEBHOOK, { body: payload, headers: { "stripe-signature": "t=1,v1=00" } }),
      ];
      for (const res of cases) {
        assert.equal(res.status, 400, JSON.stringify(res.json));
        assert.equal(res.json.error.code, "invalid_request");
        assert.ok(!Buffer.from(res.bytes).toString().includes(WHSEC));
      }
      assert.deepEqual(await deposits(gw, u.org_id), []);
      // The same payload, correctly signed, is accepted: the body was read byte for byte.
      const ok = await post(payload);
      assert.equal(ok.status, 200);
      assert.equal((await deposits(gw, u.org_id)).length, 1);
    });

    test("the webhook takes any content type and a body that is not JSON only with a valid signature", async () => {
      const res = await gw.request("POST", WEBHOOK, { body: "not json", headers: { "content-type": "text/plain", "stripe-signature": "t=1,v1=00" } });
      assert.equal(res.status, 400);
      const empty = await gw.request("POST", WEBHOOK, { headers: { "stripe-signature": "t=1,v1=00" } });
      assert.equal(empty.status, 400);
    });

    test("Stripe's keys and the webhook secret never appear in the log", () => {
      assert.ok(log.lines.length > 0);
      assert.ok(log.lines.some((l) => l.includes('"outcome":"recorded"')), "webhook outcomes are logged");
      for (const line of log.lines) {
        assert.ok(!line.includes(KEY) && !line.includes(WHSEC), line);
        assert.ok(!/sk_test_[A-Za-z0-9*]{4}/.test(line), line);
      }
    });
  });
}

describe("payment settings", () => {
  test("TOPUP_* and STRIPE_API_BASE are validated at boot", () => {
    const c = loadConfig({});
    assert.equal(c.payments.stripeSecretKey, null);
    assert.equal(c.payments.topupMinMicros, 5_000_000);
    assert.equal(c.payments.topupMaxMicros, 10_000_000_000);
    assert.deepEqual(c.payments.stripeApiBase, { protocol: "https", host: "api.stripe.com", port: 443 });
    assert.deepEqual(loadConfig({ STRIPE_API_BASE: "http://127.0.0.1:18490/" }).payments.stripeApiBase, { protocol: "http", host: "127.0.0.1", port: 18490 });
    assert.equal(loadConfig({ TOPUP_MIN_USD: "10", TOPUP_MAX_USD: "10" }).payments.topupMaxMicros, 10_000_000);
    for (const env of [
      { TOPUP_MIN_USD: "abc" },
      { TOPUP_MIN_USD: "5.001" },
      { TOPUP_MIN_USD: "0.10" },
      { TOPUP_MAX_USD: "1000000" },
      { TOPUP_MIN_USD: "20", TOPUP_MAX_USD: "10" },
      { STRIPE_API_BASE: "api.stripe.com" },
      { STRIPE_API_BASE: "ftp://api.stripe.com" },
      { STRIPE_API_BASE: "https://api.stripe.com/v1" },
    ]) {
      assert.throws(() => loadConfig(env), /TOPUP_M(IN|AX)_USD|STRIPE_API_BASE/, JSON.stringify(env));
    }
  });

  test("without STRIPE_SECRET_KEY both payment routes answer 404 not_found, before auth", async () => {
    const gw = await startGateway("sqlite");
    try {
      const u = await gw.register();
      for (const [path, token] of [["/v1/billing/checkout", u.api_key], ["/v1/billing/checkout", undefined], [WEBHOOK, undefined]] as const) {
        const res = await gw.request("POST", path, { token, body: { amount_usd: 10 } });
        assert.equal(res.status, 404, path);
        assert.equal(res.json.error.code, "not_found");
      }
      const settings = await gw.request("GET", "/v1/billing/checkout", { token: u.api_key });
      assert.equal(settings.status, 404, "the settings say payments are off");
      // The capabilities say it with a 200, so a client (the console) asks without a 404.
      const caps = await gw.request("GET", "/v1/capabilities", { token: u.session_token });
      assert.equal(caps.status, 200);
      assert.deepEqual(caps.json.payments, { card_top_ups: false, min_usd: null, max_usd: null });
    } finally {
      await gw.close();
    }
  });

  test("a key Stripe refuses answers 502 without the key; no webhook secret: the webhook is 404 and the boot log warns once", async () => {
    const fake = await startStripeFake({ apiKey: KEY });
    const wrong = "sk_test_51WrongKeyOfTheGateway9876543210zyxw";
    const log = logSink();
    const gw = await startGateway("sqlite", { STRIPE_SECRET_KEY: wrong, STRIPE_API_BASE: fake.url, LOG_LEVEL: "info" }, { logStream: log.stream });
    try {
      const u = await gw.register();
      const res = await gw.request("POST", "/v1/billing/checkout", { token: u.api_key, body: { amount_usd: 10 } });
      assert.equal(res.status, 502);
      assert.equal(res.json.error.code, "provider_error");
      const hook = await gw.request("POST", WEBHOOK, { body: "{}", headers: { "stripe-signature": "t=1,v1=00" } });
      assert.equal(hook.status, 404);
      assert.equal(hook.json.error.code, "not_found");
      const warnings = log.lines.filter((l) => l.includes("STRIPE_WEBHOOK_SECRET"));
      assert.equal(warnings.length, 1, log.lines.join("\n"));
      assert.equal((JSON.parse(warnings[0]) as { level: number }).level, 40);
      const cause = log.lines.find((l) => l.includes('"code":"provider_error"'));
      assert.match(cause ?? "", /StripeAuthenticationError \(HTTP 401\)/, "the log says why");
      for (const text of [...log.lines, Buffer.from(res.bytes).toString()]) {
        assert.ok(!text.includes(wrong) && !text.includes(wrong.slice(-4)), text);
      }
    } finally {
      await gw.close();
      await fake.close();
    }
  });

  test("Stripe unreachable answers 502 provider_error", async () => {
    const port = await freePort();
    const gw = await startGateway("sqlite", { STRIPE_SECRET_KEY: KEY, STRIPE_WEBHOOK_SECRET: WHSEC, STRIPE_API_BASE: `http://127.0.0.1:${port}` });
    try {
      const u = await gw.register();
      const res = await gw.request("POST", "/v1/billing/checkout", { token: u.api_key, body: { amount_usd: 10 } });
      assert.equal(res.status, 502);
      assert.equal(res.json.error.code, "provider_error");
      assert.ok(!Buffer.from(res.bytes).toString().includes(KEY));
    } finally {
      await gw.close();
    }
  });
});
