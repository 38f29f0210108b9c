/**
 * The console's parts of issue 16 in a real browser: per-key controls on the keys page (D34: create with a
 * spend limit, period and model list, a refused field's message under that field, edit in a dialog, what a
 * call spent after a reload, expiry shown and "expired" marked), the low-balance alert on the billing page
 * (set, armed, removed), and card top-ups (D33) against the loopback Stripe fake: the console sends the
 * browser to the fake's Checkout page, paying there brings it back with the success notice and the deposit,
 * canceling with the cancel notice; a gateway without a Stripe key shows a sentence instead of the form.
 * Role and label locators only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { startStripeFake, type StripeFake } from "../../fakes/stripe.ts";
import { formatUsd } from "../../console/src/format.ts";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

const STRIPE_KEY = "sk_test_51ConsoleBillingKey0123456789abcdef";
const WEBHOOK_SECRET = "whsec_consoleBillingSigningSecret0123456789";

describe("console billing and key controls (payments on)", { skip: browserSkip }, () => {
  let fake: StripeFake;
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    fake = await startStripeFake({ apiKey: STRIPE_KEY });
    h = await startConsole({ env: { STRIPE_SECRET_KEY: STRIPE_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: fake.url } });
    fake.setWebhook({ url: `${h.gw.url}/v1/billing/stripe/webhook`, secret: WEBHOOK_SECRET });
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  const createForm = () => page.getByRole("form", { name: "Create a key" });

  test("keys: create with a spend limit, period and models (a refused model shown under its field), edit, spend after a call", async () => {
    const user = await h.signUp(page);
    await h.deposit(user.userId, 10);
    await page.goto(h.url("/keys"));
    // The list comes first; "Create key" opens the form in a dialog.
    await page.getByRole("button", { name: "Create key" }).click();
    const form = createForm();
    await form.getByLabel("Name").fill("limited");
    await form.getByLabel("Spend limit (USD)").fill("5");
    await form.getByLabel("Limit period").selectOption({ label: "per week" });
    await form.getByLabel("Allowed models").fill("no-such-model");
    await form.getByRole("button", { name: "Create key" }).click();
    // The gateway names the field (`param: models`): the message is under it, and the field is marked.
    await form.getByRole("alert").filter({ hasText: "unknown model no-such-model" }).waitFor();
    assert.equal(await form.getByLabel("Allowed models").getAttribute("aria-invalid"), "true");
    assert.equal(await page.getByRole("row").filter({ hasText: "limited" }).count(), 0, "nothing was created");

    await form.getByLabel("Allowed models").fill("txtA-large, imgA-*");
    await form.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByRole("textbox", { name: "New live key “limited”" }).inputValue();
    await page.getByRole("button", { name: "Done, hide it" }).click();
    const row = page.getByRole("row").filter({ hasText: "limited" });
    await row.getByText("$0.00 of $5.00 this week").waitFor();
    await row.getByRole("progressbar", { name: /^Spent of the limit of limited/ }).waitFor();
    await row.getByText("txtA-large", { exact: true }).waitFor();
    await row.getByText("imgA-*", { exact: true }).waitFor();
    await row.getByRole("cell", { name: "never", exact: true }).first().waitFor();
    // The dialog closed with the creation; opened again, its form is empty.
    await page.getByRole("button", { name: "Create key" }).click();
    assert.equal(await form.getByLabel("Spend limit (USD)").inputValue(), "");
    await form.getByRole("button", { name: "Cancel" }).click();
    await form.waitFor({ state: "detached" });

    // Edit: a lower limit per month, no model list, an expiry; an rpm over the account's is refused at its field.
    await row.getByRole("button", { name: /^Edit limited/ }).click();
    const dialog = page.getByRole("dialog", { name: /^Edit limited/ });
    assert.equal(await dialog.getByLabel("Spend limit (USD)").inputValue(), "5");
    assert.equal(await dialog.getByLabel("Allowed models").inputValue(), "txtA-large, imgA-*");
    await dialog.getByLabel("Spend limit (USD)").fill("2");
    await dialog.getByLabel("Limit period").selectOption({ label: "per month" });
    await dialog.getByLabel("Allowed models").fill("");
    await dialog.getByLabel("Expires at").fill("2030-01-01T12:00");
    await dialog.getByLabel("Requests per minute").fill("9999999");
    await dialog.getByRole("button", { name: "Save changes" }).click();
    await dialog.getByRole("alert").filter({ hasText: "rpm must be a whole number" }).waitFor();
    assert.equal(await dialog.getByLabel("Requests per minute").getAttribute("aria-invalid"), "true");
    await dialog.getByLabel("Requests per minute").fill("");
    await dialog.getByRole("button", { name: "Save changes" }).click();
    await dialog.waitFor({ state: "hidden" });
    await row.getByText("$0.00 of $2.00 this month").waitFor();
    await row.getByRole("cell", { name: "all", exact: true }).waitFor();
    await row.getByText("Jan 1, 2030, 12:00 PM").waitFor();
    const listed = await h.gw.request("GET", "/v1/auth/keys", { token: user.apiKey });
    const key = listed.json.data.find((k: { name: string | null }) => k.name === "limited");
    assert.deepEqual(
      { limit: key.spend_limit_usd, period: key.spend_limit_period, models: key.models, rpm: key.rpm, expires: key.expires_at },
      { limit: 2, period: "month", models: null, rpm: null, expires: "2030-01-01T12:00:00.000Z" },
    );

    // A call with the key spends; the page shows it after a reload.
    const call = await h.gw.request("POST", "/v1/chat/completions", {
      token: secret,
      body: { model: "txtA-large", messages: [{ role: "user", content: "Say hello." }], max_tokens: 20 },
    });
    assert.equal(call.status, 200);
    const spent = (await h.gw.request("GET", "/v1/auth/keys", { token: user.apiKey })).json.data.find((k: { name: string | null }) => k.name === "limited")
      .spent_usd as number;
    assert.ok(spent > 0);
    await page.reload();
    await row.getByText(`${formatUsd(spent, "en-US")} of $2.00 this month`).waitFor();

    // An expiry that has passed is marked (set in the database: the API refuses a past expiry).
    await h.gw.services.db.kysely.updateTable("api_keys").set({ expires_at: Date.now() - 60_000 }).where("id", "=", key.key_id).execute();
    await page.reload();
    await row.getByText("expired", { exact: true }).waitFor();
  });

  test("billing: set the low-balance alert (armed), then remove it", async () => {
    const user = await h.signUp(page);
    await page.goto(h.url("/billing"));
    await page.getByText("No alert is set.").waitFor();
    await page.getByText("none does yet").waitFor();
    await page.getByRole("link", { name: "webhook endpoints" }).waitFor();
    await page.getByLabel("Alert threshold (USD)").fill("0.25");
    await page.getByRole("button", { name: "Save alert" }).click();
    await page.getByRole("status").filter({ hasText: "Armed: a balance.low event is sent when the balance falls below $0.25." }).waitFor();
    assert.equal((await h.gw.request("GET", "/v1/billing/alerts", { token: user.apiKey })).json.low_balance_usd, 0.25);
    await page.reload();
    assert.equal(await page.getByLabel("Alert threshold (USD)").inputValue(), "0.25");

    await page.getByRole("button", { name: "Remove alert" }).click();
    await page.getByText("No alert is set.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Remove alert" }).count(), 0);
    assert.equal((await h.gw.request("GET", "/v1/billing/alerts", { token: user.apiKey })).json.low_balance_usd, null);
  });

  test("top-up: an amount out of range is refused at its field; Continue goes to Stripe's page, paying comes back with the deposit", async () => {
    await h.signUp(page);
    // The overview leads to it.
    await page.goto(h.url("/"));
    await page.getByRole("button", { name: "Top up" }).click();
    await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
    await page.getByRole("region", { name: "Balance" }).getByText("$0.50").waitFor();

    await page.getByRole("button", { name: "$100" }).click();
    assert.equal(await page.getByLabel("Amount (USD)").inputValue(), "100");
    assert.equal(await page.getByRole("button", { name: "$100" }).getAttribute("aria-pressed"), "true");
    await page.getByLabel("Amount (USD)").fill("2");
    await page.getByRole("button", { name: "Continue to payment" }).click();
    await page.getByRole("alert").filter({ hasText: "from 5 to 10000" }).waitFor();
    assert.equal(await page.getByLabel("Amount (USD)").getAttribute("aria-invalid"), "true");

    await page.getByRole("button", { name: "$25" }).click();
    await page.getByRole("button", { name: "Continue to payment" }).click();
    await page.waitForURL(`${fake.url}/c/pay/**`);
    const session = [...fake.sessions.values()].at(-1)!;
    assert.equal(session.amount_total, 2500);
    assert.equal(session.success_url, h.url("/billing?topup=success"));
    assert.equal(session.cancel_url, h.url("/billing?topup=cancel"));

    await page.getByRole("button", { name: "Pay 25.00 USD" }).click();
    await page.waitForURL(h.url("/billing?topup=success"));
    await page.getByRole("status").filter({ hasText: "Payment received; your balance updates once Stripe confirms it." }).waitFor();
    await page.getByRole("region", { name: "Balance" }).getByText("$25.50").waitFor();
    await page.getByRole("button", { name: "Dismiss" }).click();
    await page.waitForURL(h.url("/billing"));

    // Canceling on Stripe's page comes back with the cancel notice and no deposit.
    await page.getByRole("button", { name: "Continue to payment" }).click();
    await page.waitForURL(`${fake.url}/c/pay/**`);
    await page.getByRole("link", { name: "Cancel" }).click();
    await page.getByRole("status").filter({ hasText: "Top-up canceled" }).waitFor();
    await page.getByRole("region", { name: "Balance" }).getByText("$25.50").waitFor();
  });
});

describe("console billing (payments off)", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  before(async () => {
    h = await startConsole();
  });
  after(async () => {
    await h?.close();
  });

  test("without a Stripe key the top-up says so and offers no button; the alert still works", async () => {
    const page = await h.context.newPage();
    await h.signUp(page);
    await page.goto(h.url("/billing"));
    await page.getByText("Card top-ups are not enabled on this gateway; ask the operator for a deposit.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Continue to payment" }).count(), 0);
    assert.equal(await page.getByLabel("Amount (USD)").count(), 0);
    assert.equal(await page.getByRole("alert").count(), 0, "no error is shown");
    await page.getByLabel("Alert threshold (USD)").fill("1");
    await page.getByRole("button", { name: "Save alert" }).click();
    await page.getByRole("button", { name: "Remove alert" }).waitFor();
    // The overview offers no top-up that cannot work.
    await page.goto(h.url("/"));
    await page.getByRole("article", { name: "Balance" }).getByText("Card top-ups are off on this gateway").waitFor();
    // (Link buttons have the role `button`, Pico's convention.)
    assert.equal(await page.getByRole("button", { name: "Top up" }).count(), 0);
    assert.equal(await page.getByRole("link", { name: "Top up" }).count(), 0);
  });
});
