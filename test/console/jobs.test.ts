/**
 * The console's Jobs and Gallery pages in a real browser (issue 15, D30, D8): an image job submitted over
 * HTTP with a key made in the console reaches `succeeded` in the job list and shows in the gallery with its
 * image drawn, a working download and a share link; the list's filters live in the URL; a slow job is
 * followed live (progress bar) and canceled from the console after a confirmation, ending failed/canceled
 * with the balance back where it was. Role and label locators only.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

/** Creates a live key on the console's keys page and returns its secret (shown once). */
async function createKey(h: ConsoleHarness, page: Page, name: string): Promise<string> {
  await page.goto(h.url("/keys"));
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByLabel("Name").fill(name);
  await page.getByRole("button", { name: "Create key" }).click();
  const secret = await page.getByRole("textbox", { name: `New live key “${name}”` }).inputValue();
  await page.getByRole("button", { name: "Done, hide it" }).click();
  return secret;
}

async function balanceUsd(h: ConsoleHarness, apiKey: string): Promise<number> {
  const me = await h.gw.request("GET", "/v1/auth/me", { token: apiKey });
  assert.equal(me.status, 200, JSON.stringify(me.json));
  return me.json.balance_usd as number;
}

async function submitImage(h: ConsoleHarness, apiKey: string, prompt: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await h.gw.request("POST", "/v1/images/generations", { token: apiKey, body: { model: "imgA-v4", prompt }, headers });
  assert.equal(res.status, 202, JSON.stringify(res.json));
  return res.json.id as string;
}

describe("console jobs and gallery", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
  });

  test("an image job submitted over HTTP reaches succeeded in Jobs, and shows in the Gallery with its image, download and share link", async () => {
    const user = await h.signUp(page);
    await h.deposit(user.userId, 10);
    const apiKey = await createKey(h, page, "image runner");
    const id = await submitImage(h, apiKey, "a lighthouse at dusk, console jobs test");

    await page.goto(h.url("/jobs"));
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: `Details of ${id}` }) });
    await row.getByRole("cell", { name: /succeeded/ }).waitFor();
    await row.getByRole("cell", { name: "imgA-v4", exact: true }).waitFor();
    // The charge of a succeeded imgA-v4 image (0.054 USD): to the cent in the list, exact in its title
    // (and on the detail page).
    const amount = row.getByRole("cell", { name: "$0.05", exact: true });
    await amount.waitFor();
    assert.equal(await amount.locator("[title]").getAttribute("title"), "$0.054");
    assert.equal(await row.getByRole("button", { name: `Cancel ${id}` }).count(), 0, "an ended job has no cancel button");

    // Filters are kept in the URL and survive a reload.
    await page.getByLabel("Status").selectOption("failed");
    await page.waitForURL(/status=failed/);
    await page.getByText("No job matches these filters.").waitFor();
    await page.reload();
    assert.equal(await page.getByLabel("Status").inputValue(), "failed");
    await page.getByLabel("Status").selectOption("succeeded");
    await page.getByLabel("Kind").selectOption("image");
    await page.getByLabel("Model").selectOption("imgA-v4");
    await page.waitForURL(/model=imgA-v4/);
    assert.match(page.url(), /status=succeeded/);
    assert.match(page.url(), /kind=image/);
    await row.waitFor();
    await page.getByLabel("Kind").selectOption("video");
    await page.getByText("No job matches these filters.").waitFor();

    // The detail page shows the output.
    await page.goto(h.url("/jobs"));
    await row.getByRole("link", { name: `Details of ${id}` }).click();
    await page.getByRole("heading", { level: 1, name: "Job details" }).waitFor();
    await page.getByRole("heading", { level: 2, name: id }).waitFor();
    await page.getByRole("img", { name: `imgA-v4 image of ${id}` }).waitFor();

    // The gallery: the image drawn, a download that saves the file, the share link.
    await page.goto(h.url("/gallery"));
    await page.getByRole("heading", { level: 1, name: "Gallery" }).waitFor();
    const card = page.getByRole("article").filter({ has: page.getByRole("link", { name: `Details of ${id}` }) });
    const image = card.getByRole("img", { name: `imgA-v4 image of ${id}` });
    await image.waitFor();
    await image.scrollIntoViewIfNeeded();
    await page.waitForFunction(
      // Runs in the page; the test's own types have no DOM.
      (el) => {
        const img = el as unknown as { complete: boolean; naturalWidth: number };
        return img.complete && img.naturalWidth > 0;
      },
      await image.elementHandle(),
    );
    const [download] = await Promise.all([page.waitForEvent("download"), card.getByRole("link", { name: `Download imgA-v4 image of ${id}` }).click()]);
    const saved = await download.path();
    assert.ok(readFileSync(saved).length > 0, "the download saved the file");
    assert.match(download.suggestedFilename(), /\.(png|jpe?g|webp|svg)$/);

    // One share action per card: the button opens the link with its copy button.
    await card.getByRole("button", { name: `Share ${id}` }).click();
    const share = card.getByRole("textbox", { name: `Share link of ${id}` });
    const shareUrl = await share.inputValue();
    assert.equal(shareUrl, `${h.gw.url}/share/${id}`);
    const sharePage = await fetch(shareUrl);
    assert.equal(sharePage.status, 200);
    await card.getByRole("button", { name: `Copy the share link of ${id}` }).click();
    await card.getByRole("status").filter({ hasText: "Copied to the clipboard." }).waitFor();
    await h.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: h.gw.url });
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), shareUrl);

    // At 375 px neither page scrolls sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ["/jobs", "/gallery", `/jobs/${id}`]) {
      await page.goto(h.url(path));
      await page.getByRole("heading", { level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      assert.ok(overflow <= 0, `${path} is ${overflow} px wider than the screen`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test("a job's detail page follows it live: a running job turns succeeded and its output appears without a reload", async () => {
    const user = await h.signUp(page);
    await h.deposit(user.userId, 10);
    // At this harness's zero latency a `slow` image still takes about a second.
    const id = await submitImage(h, user.apiKey, "a slow harbour, console live test", { "x-svc-simulate": "slow" });
    await page.goto(h.url(`/jobs/${id}`));
    await page.getByRole("heading", { level: 2, name: id }).waitFor();
    await page.getByRole("definition").filter({ hasText: "succeeded" }).waitFor();
    await page.getByRole("img", { name: `imgA-v4 image of ${id}` }).waitFor();
    await page.getByRole("textbox", { name: `Share link of ${id}` }).waitFor();
  });

  test("empty states: a new account has no jobs and an empty gallery, each with a next step", async () => {
    await h.signUp(page);
    await page.goto(h.url("/jobs"));
    await page.getByText("No jobs yet.").waitFor();
    await page.getByRole("button", { name: "Make an image in the playground" }).waitFor();
    // The example call names this gateway's own address.
    await page.getByText(`export GATEWAY_URL=${h.gw.url}`).waitFor();
    await page.goto(h.url("/gallery"));
    await page.getByText("Nothing in the gallery yet.").waitFor();
    await page.getByRole("button", { name: "Make an image in the playground" }).waitFor();
  });

  test("a test-mode image: its prompt in the gallery, and no money moved (never \"charged\") on its card and detail page", async () => {
    const user = await h.signUp(page);
    const created = await h.gw.request("POST", "/v1/auth/keys", { token: user.apiKey, body: { name: "sandbox", mode: "test" } });
    const testKey = created.json.api_key as string;
    const id = await submitImage(h, testKey, "a red fox in the snow, test mode");
    await h.gw.waitForJob(testKey, id);
    await page.goto(h.url("/gallery"));
    const card = page.getByRole("article").filter({ has: page.getByRole("link", { name: `Details of ${id}` }) });
    await card.getByRole("heading", { name: "a red fox in the snow, test mode" }).waitFor();
    await card.getByText("test: no money moved").waitFor();
    await page.goto(h.url(`/jobs/${id}`));
    await page.getByRole("definition").filter({ hasText: "test key: no money moved" }).waitFor();
    assert.equal(await page.getByRole("term").filter({ hasText: /^Charged$/ }).count(), 0);
  });
});

describe("console: a slow job followed live and canceled", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  before(async () => {
    // Simulated latency at five times the typical one: an `X-Svc-Simulate: slow` image runs for tens of
    // seconds, long enough to cancel it by hand.
    h = await startConsole({ env: { SIM_LATENCY_SCALE: "5" } });
  });
  after(async () => {
    await h?.close();
  });

  test("the running job shows its progress; cancel asks first, then the job ends failed/canceled and the hold is back", async () => {
    const page = await h.context.newPage();
    const user = await h.signUp(page);
    await h.deposit(user.userId, 10);
    const apiKey = await createKey(h, page, "slow runner");
    const before = await balanceUsd(h, apiKey);
    const id = await submitImage(h, apiKey, "a slow sunrise, console cancel test", { "x-svc-simulate": "slow" });
    assert.ok((await balanceUsd(h, apiKey)) < before, "the submit placed a hold");

    await page.goto(h.url("/jobs"));
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: `Details of ${id}` }) });
    // Followed live: the job moves to processing with a progress bar, no reload needed.
    await row.getByRole("progressbar", { name: `Progress of ${id}` }).waitFor();
    await row.getByRole("cell", { name: /held/ }).waitFor();

    // The confirmation can be dismissed: nothing happens.
    await row.getByRole("button", { name: `Cancel ${id}` }).click();
    const dialog = page.getByRole("dialog", { name: "Cancel this job?" });
    await dialog.getByRole("button", { name: "Keep it" }).click();
    await dialog.waitFor({ state: "hidden" });
    await row.getByRole("progressbar", { name: `Progress of ${id}` }).waitFor();

    await row.getByRole("button", { name: `Cancel ${id}` }).click();
    await dialog.getByRole("button", { name: "Cancel the job" }).click();
    await dialog.waitFor({ state: "hidden" });
    await row.getByRole("cell", { name: /failed/ }).waitFor();
    await row.getByRole("cell", { name: /canceled/ }).waitFor();
    assert.equal(await row.getByRole("button", { name: `Cancel ${id}` }).count(), 0);

    const job = await h.gw.request("GET", `/v1/jobs/${id}`, { token: apiKey });
    assert.equal(job.json.status, "failed");
    assert.equal(job.json.error.code, "canceled");
    assert.equal(job.json.cost_usd, null);
    assert.equal(await balanceUsd(h, apiKey), before, "the whole hold was released");

    // The console's overview shows the balance back too, and the job's page says why it ended.
    await page.goto(h.url("/"));
    await page.getByRole("article", { name: "Balance" }).getByText("$10.50").waitFor();
    await page.goto(h.url(`/jobs/${id}`));
    await page.getByText("This job ended without an output.").waitFor();
    await page.getByRole("definition").filter({ hasText: "canceled:" }).waitFor();
  });
});
