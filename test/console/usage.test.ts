/**
 * The Usage and Ledger pages of the console in a real browser (issue 15, D29): a user registers, makes a
 * speech call and an image job with its API key over HTTP, then finds both in Usage, filters by model
 * (kept in the URL), key and status, opens the request detail with its ledger entries, downloads the CSV
 * and finds the model's row in it (and the member's, and the FOCUS export's row of the model); the Ledger shows the job's hold and charge, signed. Role and label
 * locators only.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

const IMAGE_MODEL = "imgA-v4";

describe("console usage and ledger", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  let apiKey: string;
  let userId: string;
  let speech: { id: string; model: string };
  let image: { id: string; jobId: string };

  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
    const user = await h.signUp(page);
    apiKey = user.apiKey;
    userId = user.userId;
    // Tier 3 (200 requests a minute): the paging test makes 24 more calls, and the console's own calls count too.
    await h.deposit(user.userId, 250);
    const s = await h.gw.request("POST", "/v1/audio/speech", { token: apiKey, body: { input: "Hello from the usage page.", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(s.status, 200);
    const speechId = s.headers.get("x-svc-request-id")!;
    const record = await h.gw.request("GET", `/v1/requests/${speechId}`, { token: apiKey });
    speech = { id: speechId, model: record.json.model };
    assert.notEqual(speech.model, IMAGE_MODEL);
    const i = await h.gw.request("POST", "/v1/images/generations", { token: apiKey, body: { model: IMAGE_MODEL, prompt: "a lighthouse at dawn" } });
    assert.equal(i.status, 202);
    image = { id: i.headers.get("x-svc-request-id")!, jobId: i.json.id };
    assert.equal((await h.gw.waitForJob(apiKey, image.jobId)).json.status, "succeeded");
  });
  after(async () => {
    await h?.close();
  });

  const requestLink = (id: string) => page.getByRole("link", { name: `Request ${id}` });

  test("usage: both calls listed with totals; filter by model (kept in the URL), key and status", async () => {
    await page.goto(h.url("/usage"));
    await requestLink(speech.id).waitFor();
    await requestLink(image.id).waitFor();
    const imageRow = page.getByRole("row").filter({ has: requestLink(image.id) });
    await imageRow.getByRole("cell", { name: "succeeded" }).waitFor();
    await imageRow.getByRole("link", { name: `Job ${image.jobId}` }).waitFor();
    await imageRow.getByText("1 image", { exact: true }).waitFor();
    await page.getByRole("row").filter({ has: requestLink(speech.id) }).getByText(/^\d+ characters$/).waitFor();
    const totals = page.getByRole("region", { name: "Totals" });
    await totals.getByRole("definition").filter({ hasText: /^2$/ }).waitFor();

    await page.getByLabel("Model", { exact: true }).selectOption(IMAGE_MODEL);
    await page.waitForURL(/model=imgA-v4/);
    await requestLink(speech.id).waitFor({ state: "detached" });
    await requestLink(image.id).waitFor();
    await totals.getByRole("term").filter({ hasText: IMAGE_MODEL }).waitFor();
    // The filter survives a reload.
    await page.reload();
    await requestLink(image.id).waitFor();
    assert.equal(await page.getByLabel("Model", { exact: true }).inputValue(), IMAGE_MODEL);
    assert.equal(await requestLink(speech.id).count(), 0);

    await page.getByLabel("Model", { exact: true }).selectOption("");
    await requestLink(speech.id).waitFor();
    const keys = await h.gw.request("GET", "/v1/auth/keys", { token: apiKey });
    await page.getByLabel("Key", { exact: true }).selectOption(keys.json.data[0].key_id);
    await page.waitForURL(/key_id=/);
    await requestLink(speech.id).waitFor();
    await requestLink(image.id).waitFor();
    await page.getByLabel("Status").selectOption("failed");
    await page.getByText("No requests match these filters.").waitFor();
  });

  test("request detail: the record and its hold and charge", async () => {
    await page.goto(h.url(`/usage?model=${IMAGE_MODEL}`));
    await requestLink(image.id).click();
    await page.getByRole("heading", { level: 1, name: "Request details" }).waitFor();
    await page.getByRole("heading", { level: 2, name: `Request ${image.id}` }).waitFor();
    const entries = page.getByRole("region", { name: "Ledger entries" });
    await entries.getByRole("cell", { name: "Hold", exact: true }).waitFor();
    await entries.getByRole("cell", { name: "Charge", exact: true }).waitFor();
    // Debits carry a minus sign and a word, not only a colour.
    await entries.getByRole("row").filter({ has: page.getByRole("cell", { name: "Hold", exact: true }) }).getByText(/^-\$[\d.]+ debit$/).waitFor();
    await page.getByRole("link", { name: `Job ${image.jobId}` }).first().waitFor();

    await page.goto(h.url("/usage/req_unknown000000000000000000000000"));
    await page.getByRole("alert").waitFor();
  });

  test("usage: Download CSV saves the period's sums, the model's row included", async () => {
    await page.goto(h.url("/usage"));
    await requestLink(image.id).waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    assert.match(download.suggestedFilename(), /^usage-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}-by-model\.csv$/);
    const csv = readFileSync((await download.path())!, "utf8");
    const lines = csv.split(/\r?\n/);
    assert.match(lines[0], /^group,requests,cost_usd/);
    assert.ok(lines.some((l) => l.startsWith(`${IMAGE_MODEL},1,`)), csv);
    assert.ok(lines.some((l) => l.startsWith(`${speech.model},1,`)), csv);

    await page.getByLabel("CSV rows per").selectOption("day");
    const [byDay] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    assert.match(byDay.suggestedFilename(), /-by-day\.csv$/);

    await page.getByLabel("CSV rows per").selectOption("member");
    const [byMember] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    assert.match(byMember.suggestedFilename(), /-by-member\.csv$/);
    assert.ok(readFileSync((await byMember.path())!, "utf8").split(/\r?\n/).some((l) => l.startsWith(`${userId},2,`)), "both calls under the member");

    const [focus] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download FOCUS 1.2" }).click()]);
    assert.match(focus.suggestedFilename(), /^focus-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = readFileSync((await focus.path())!, "utf8").split("\r\n");
    assert.match(rows[0], /^BilledCost,BillingAccountId,/);
    assert.ok(rows.some((l) => l.includes(`,${IMAGE_MODEL},${IMAGE_MODEL},`)), "the image model's row, SkuId and SkuPriceId");
  });

  test("ledger: the job's hold and charge with links to the request and the job, amounts signed", async () => {
    await page.goto(h.url("/ledger"));
    const jobRows = page.getByRole("row").filter({ has: page.getByRole("link", { name: `Job ${image.jobId}` }) });
    await jobRows.first().waitFor();
    const hold = jobRows.filter({ has: page.getByRole("cell", { name: "Hold", exact: true }) });
    const charge = jobRows.filter({ has: page.getByRole("cell", { name: "Charge", exact: true }) });
    await hold.waitFor();
    await charge.waitFor();
    await hold.getByText(/^-\$[\d.]+ debit$/).waitFor();
    await hold.getByRole("link", { name: `Request ${image.id}` }).waitFor();
    // The deposit is a credit.
    const deposit = page.getByRole("row").filter({ has: page.getByRole("cell", { name: "Deposit", exact: true }) });
    await deposit.getByText("+$250.00 credit").waitFor();
    // The request link opens the request detail.
    await hold.getByRole("link", { name: `Request ${image.id}` }).click();
    await page.getByRole("heading", { level: 2, name: `Request ${image.id}` }).waitFor();
  });

  test("usage and ledger page by 25: next, previous and first page", async () => {
    // 26 records (and over 25 ledger entries): the first speech call moves to the second page.
    for (let n = 0; n < 24; n++) {
      const s = await h.gw.request("POST", "/v1/audio/speech", { token: apiKey, body: { input: `Call number ${n}.`, voice_id: DEMO_ALPHA_VOICE_ID } });
      assert.equal(s.status, 200);
    }
    await page.goto(h.url("/usage"));
    await requestLink(image.id).waitFor();
    assert.equal(await requestLink(speech.id).count(), 0);
    await page.getByRole("button", { name: "Next page" }).click();
    await page.waitForURL(/after=/);
    await requestLink(speech.id).waitFor();
    assert.equal(await page.getByRole("button", { name: "Next page" }).isDisabled(), true);
    await page.getByRole("button", { name: "Previous page" }).click();
    await requestLink(image.id).waitFor();

    await page.goto(h.url("/ledger"));
    // The oldest entry, the signup credit, is on the last page (each call wrote 3 entries).
    const signup = page.getByRole("cell", { name: "Signup credit", exact: true });
    const next = page.getByRole("button", { name: "Next page" });
    await next.waitFor();
    assert.equal(await signup.count(), 0);
    while (!(await next.isDisabled())) {
      const before = page.url();
      await next.click();
      await page.waitForURL((u) => u.href !== before);
      await page.getByRole("table").waitFor();
    }
    await signup.waitFor();
    await page.getByRole("button", { name: "First page" }).click();
    await signup.waitFor({ state: "detached" });
  });

  test("at 375 px no usage page scrolls sideways", async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ["/usage", `/usage/${image.id}`, "/ledger"]) {
      await page.goto(h.url(path));
      await page.getByRole("heading", { level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      assert.ok(overflow <= 0, `${path} is ${overflow} px wider than the screen`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
