/**
 * The web console's main journeys in a real browser (issue 15): register (the first key shown once), sign
 * out and in, the balance after an operator deposit, create a key (its secret shown once) and revoke it,
 * a refused session sending the user to sign in, and the public pricing and tier pages. Role and label
 * locators only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

describe("console journeys", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
  });

  const balance = () => page.getByRole("article", { name: "Balance" });

  test("register: signed in at once, the first API key shown once with a copy button; sign out and back in", async () => {
    const user = await h.signUp(page);
    assert.match(user.apiKey, /^gw_/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("status").filter({ hasText: "Copied to the clipboard." }).waitFor();
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    // The signup credit (spec "Accounts": 0.50 USD).
    await balance().getByText("$0.50").waitFor();
    // The key is never shown again.
    assert.equal(await page.getByText(user.apiKey).count(), 0);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    // A customer page now sends the user to sign in, and back after it.
    await page.goto(h.url("/keys"));
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("wrong password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor();
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
  });

  test("overview: the balance and the tier follow an operator deposit", async () => {
    const user = await h.signUp(page);
    await page.goto(h.url("/"));
    await balance().getByText("$0.50").waitFor();
    await page.getByRole("article", { name: "Tier" }).getByText("Tier 0").waitFor();
    await h.deposit(user.userId, 100);
    await page.reload();
    await balance().getByText("$100.50").waitFor();
    await page.getByRole("article", { name: "Tier" }).getByText(/Tier [1-4]/).waitFor();
    // No jobs yet, no paid calls yet: the empty states say so.
    await page.getByText("No image or video jobs yet.").waitFor();
    await page.getByText("No paid calls in the last 30 days.").waitFor();
  });

  test("another account signing in at the same browser never sees the previous one's data", async () => {
    const first = await h.signUp(page);
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    await balance().getByText(first.email).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    // In the same page (no reload): what the console cached for the first account must not show.
    const second = await h.gw.register();
    await page.getByLabel("Email").fill(second.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await balance().getByText(second.email).waitFor();
    assert.equal(await page.getByText(first.email).count(), 0);
  });

  test("keys: create a test key (secret shown once), see it listed, revoke it after a confirmation", async () => {
    await h.signUp(page);
    await page.goto(h.url("/keys"));
    // The list comes first; "Create key" opens the form in a dialog.
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByLabel("Name").fill("ci runner");
    await page.getByRole("radio", { name: /^Test/ }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByRole("textbox", { name: "New test key “ci runner”" }).inputValue();
    assert.match(secret, /^gw_test_/);
    await page.getByText("shown only once").first().waitFor();
    const row = page.getByRole("row").filter({ hasText: "ci runner" });
    await row.waitFor();
    await row.getByText("test", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Done, hide it" }).click();
    // The click returns before React has re-rendered: wait for the box to go, then check nothing shows the secret.
    await page.getByRole("textbox", { name: /New test key/ }).waitFor({ state: "detached" });
    assert.equal(await page.getByText(secret).count(), 0);
    assert.equal(await page.getByRole("textbox", { name: /New test key/ }).count(), 0);

    await row.getByRole("button", { name: /^Revoke ci runner/ }).click();
    const dialog = page.getByRole("dialog", { name: "Revoke this key?" });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    assert.equal(await row.count(), 1);
    await row.getByRole("button", { name: /^Revoke ci runner/ }).click();
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await row.waitFor({ state: "detached" });
    // The revoked key is refused by the API.
    const res = await h.gw.request("GET", "/v1/auth/me", { token: secret });
    assert.equal(res.status, 401);
  });

  test("a session the gateway refuses ends: the user is sent to sign in and told why", async () => {
    await h.signUp(page);
    await page.evaluate("localStorage.setItem('gateway.console.session', JSON.stringify({ token: 'sess_not_a_real_token', userId: 'u' }))");
    await page.goto(h.url("/"));
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.getByText("Your session has ended").waitFor();
  });

  test("pricing: public, filtered by modality and model with the filters in the URL", async () => {
    const signOut = page.getByRole("button", { name: "Sign out" });
    if ((await signOut.count()) > 0) await signOut.click();
    await page.goto(h.url("/pricing"));
    await page.getByRole("heading", { level: 2, name: "Text models" }).waitFor();
    await page.getByRole("heading", { level: 2, name: "Image, video and audio models" }).waitFor();
    await page.getByLabel("Modality").selectOption("image");
    await page.waitForURL(/modality=image/);
    // The URL changes before React re-renders the list: wait for the heading to go rather than count it.
    await page.getByRole("heading", { level: 2, name: "Text models" }).waitFor({ state: "detached" });
    await page.getByRole("cell", { name: "imgA-v4", exact: true }).waitFor();
    await page.getByLabel("Model name or id").fill("no-such-model");
    await page.getByText("No model matches these filters.").waitFor();
    await page.waitForURL(/model=no-such-model/);
    // The filters survive a reload.
    await page.reload();
    assert.equal(await page.getByLabel("Model name or id").inputValue(), "no-such-model");
    assert.equal(await page.getByLabel("Modality").inputValue(), "image");
  });

  test("tiers: the five tiers and their limits", async () => {
    await page.goto(h.url("/tiers"));
    for (let t = 0; t <= 4; t++) await page.getByRole("cell", { name: `Tier ${t}` }).waitFor();
    await page.getByRole("columnheader", { name: "Requests / min" }).waitFor();
  });

  test("the navigation is reachable by keyboard: the skip link first, then the links", async () => {
    await page.goto(h.url("/tiers"));
    await page.getByRole("heading", { level: 1, name: "Tiers and limits" }).waitFor();
    const focused = async () => (await page.evaluate("document.activeElement?.textContent ?? ''")) as string;
    await page.keyboard.press("Tab");
    assert.equal(await focused(), "Skip to content");
    for (let i = 0; i < 10 && (await focused()) !== "Pricing"; i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Pricing" }).waitFor();
    // After a navigation the new page's heading has the focus (screen readers announce it).
    assert.equal(await focused(), "Pricing");
    assert.equal(await page.evaluate("document.activeElement?.tagName"), "H1");
  });

  test("an unknown console path shows the not-found page, inside the console", async () => {
    await page.goto(h.url("/no/such/page"));
    await page.getByRole("heading", { level: 1, name: "Page not found" }).waitFor();
  });
});

describe("console at 375 px", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  before(async () => {
    h = await startConsole({ viewport: { width: 375, height: 800 } });
  });
  after(async () => {
    await h?.close();
  });

  test("no page scrolls sideways on a phone; wide tables scroll inside their box", async () => {
    const page = await h.context.newPage();
    await h.signUp(page);
    for (const path of ["/", "/keys", "/billing", "/pricing", "/tiers", "/sign-in", "/register"]) {
      await page.goto(h.url(path));
      await page.getByRole("heading", { level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      assert.ok(overflow <= 0, `${path} is ${overflow} px wider than the screen`);
    }
  });
});
