/**
 * Browser journeys of the webhooks page and the operator pages (issue 15 wave 2): a customer adds a
 * webhook endpoint on a loopback receiver (its secret shown once), sees the delivery a finished job
 * caused and replays it, rotates and reveals secrets, deletes the endpoint; the operator signs in with
 * the operator token, finds the customer by email, credits 10 USD (tier 1, D9), overrides the tier, and
 * opens the upstreams and revenue pages. Role and label locators only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { startReceiver, verify, type Receiver } from "../webhooks/receiver.ts";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

describe("console: webhooks and operator pages", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let rx: Receiver;
  let page: Page;
  before(async () => {
    rx = await startReceiver();
    h = await startConsole({ env: { WEBHOOK_ALLOW_PRIVATE: "1" } });
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
    await rx?.close();
  });

  test("webhooks: add an endpoint (secret once), see a job's delivery, replay it, rotate, reveal the default secret, delete", async () => {
    const user = await h.signUp(page);
    await page.goto(h.url("/webhooks"));
    await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
    await page.getByText("No endpoints yet.").waitFor();
    const url = `${rx.url}/hook`;
    await page.getByLabel("Endpoint URL").fill(url);
    // Every event is ticked by default; untick one to send a subset.
    await page.getByRole("checkbox", { name: /balance\.low/ }).uncheck();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = await page.getByRole("textbox", { name: `Signing secret of ${url}` }).inputValue();
    assert.match(secret, /^whsec_/);
    const row = page.getByRole("row").filter({ hasText: url });
    await row.getByText("job.succeeded, job.failed, job.refunded, job.expired").waitFor();
    await page.getByRole("button", { name: "Done, hide it" }).click();
    assert.equal(await page.getByText(secret).count(), 0);

    // A job ends: the endpoint receives job.succeeded, signed with the secret shown once.
    const job = await h.gw.request("POST", "/v1/images/generations", { token: user.apiKey, body: { model: "imgA-v4", prompt: "a lighthouse" } });
    assert.equal(job.status, 202);
    await rx.waitFor(() => rx.on("/hook").length === 1, "the job's delivery");
    assert.equal(verify(secret, rx.on("/hook")[0]).type, "job.succeeded");

    await page.getByRole("link", { name: "See the delivery log" }).click();
    await page.getByRole("heading", { level: 1, name: "Webhook deliveries" }).waitFor();
    const delivery = page.getByRole("row").filter({ hasText: "job.succeeded" });
    await delivery.getByText("succeeded", { exact: true }).waitFor();
    await delivery.getByText(/HTTP 200 in \d+ ms/).waitFor();
    await delivery.getByRole("button", { name: /^Replay job\.succeeded evt_/ }).click();
    await page.getByRole("status").filter({ hasText: "is being sent again" }).waitFor();
    await rx.waitFor(() => rx.on("/hook").length === 2, "the replayed delivery");
    assert.equal(rx.on("/hook")[1].headers["webhook-id"], rx.on("/hook")[0].headers["webhook-id"]);

    // Filters live in the URL.
    await page.getByLabel("Status").selectOption("failed");
    await page.getByText("No deliveries match these filters.").waitFor();
    assert.match(page.url(), /status=failed/);
    await page.reload();
    assert.equal(await page.getByLabel("Status").inputValue(), "failed");
    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("Event type").selectOption("job.succeeded");
    await page.getByRole("row").filter({ hasText: "job.succeeded" }).first().waitFor();

    // Rotate: a new secret, shown once; the default secret only on demand.
    await page.goto(h.url("/webhooks"));
    await page.getByRole("button", { name: `Rotate the secret of ${url}` }).click();
    const rotated = await page.getByRole("textbox", { name: `New signing secret of ${url}` }).inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    await page.getByRole("button", { name: "Done, hide it" }).click();
    assert.equal(await page.getByRole("textbox", { name: "Default signing secret" }).count(), 0);
    await page.getByRole("button", { name: "Reveal the default secret" }).click();
    assert.match(await page.getByRole("textbox", { name: "Default signing secret" }).inputValue(), /^whsec_/);
    await page.getByRole("button", { name: "Hide it" }).click();

    // Delete, after a confirmation.
    await page.getByRole("button", { name: `Delete ${url}` }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this endpoint?" });
    await dialog.getByRole("button", { name: "Delete endpoint" }).click();
    await page.getByText("No endpoints yet.").waitFor();
  });

  test("operator: sign in with the token, find the customer, deposit 10 USD (tier 1), override the tier, upstreams and revenue", async () => {
    const user = await h.signUp(page);
    // An operator page without the operator token sends to the operator sign-in.
    await page.goto(h.url("/operator/accounts"));
    await page.getByRole("heading", { level: 1, name: "Operator sign-in" }).waitFor();
    await page.getByLabel("Operator token").fill("not-the-token");
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.getByRole("alert").waitFor();
    await page.getByLabel("Operator token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.getByRole("heading", { level: 1, name: "Accounts" }).waitFor();
    // Never in the URL, and not in localStorage (this tab's sessionStorage only).
    assert.ok(!page.url().includes(ADMIN_TOKEN));
    assert.equal(await page.evaluate("JSON.stringify(localStorage).includes('" + ADMIN_TOKEN + "')"), false);

    await page.getByLabel("Email prefix or account id").fill(user.email.slice(0, 12));
    await page.getByRole("button", { name: "Search" }).click();
    assert.match(page.url(), /[?&]q=/);
    await page.getByRole("link", { name: user.email }).click();
    await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
    const tier = page.getByRole("article", { name: "Tier", exact: true });
    const balance = page.getByRole("article", { name: "Balance", exact: true });
    await tier.getByText("Tier 0", { exact: true }).waitFor();
    await balance.getByText("$0.50").waitFor();

    await page.getByLabel("Amount (USD)").fill("10");
    await page.getByLabel("Reference").fill("invoice 2026-117");
    await page.getByRole("button", { name: "Deposit" }).click();
    await page.getByRole("status").filter({ hasText: "Deposited." }).waitFor();
    await balance.getByText("$10.50").waitFor();
    await tier.getByText("Tier 1", { exact: true }).waitFor();
    await page.getByRole("row").filter({ hasText: "invoice 2026-117" }).waitFor();

    await page.getByRole("combobox", { name: "Tier", exact: true }).selectOption({ label: "Tier 3" });
    await page.getByRole("button", { name: "Save tier" }).click();
    await tier.getByText("Override: tier 3.").waitFor();
    await tier.getByText("Tier 3", { exact: true }).waitFor();

    await page.getByLabel("Requests per minute").fill("600");
    await page.getByRole("button", { name: "Save limits" }).click();
    await page.getByRole("status").filter({ hasText: "Limits saved." }).waitFor();
    await page.getByText(/with the operator's overrides of: rpm/).waitFor();

    await page.getByRole("link", { name: "Upstreams" }).click();
    await page.getByRole("heading", { level: 1, name: "Upstreams" }).waitFor();
    await page.getByText("No upstream sources are configured").waitFor();

    await page.getByRole("link", { name: "Revenue" }).click();
    await page.getByRole("heading", { level: 1, name: "Revenue" }).waitFor();
    await page.getByRole("heading", { name: "By model" }).waitFor();
    // The first journey's live image job is revenue without a cost figure (the simulator served it).
    await page.getByRole("row").filter({ hasText: "imgA-v4" }).waitFor();
    await page.getByRole("img", { name: "Revenue and upstream cost by day" }).waitFor();
    await page.getByLabel("From").fill("2020-01-01");
    assert.match(page.url(), /from=2020-01-01/);
  });
});
