/**
 * The console's rough edges of issue 42, in a real browser (Chromium at 1400x900 and 375 px wide):
 * - payments off: the pages make no request that fails (no `GET /v1/billing/checkout` 404) and log no error;
 * - counts agree with their noun ("1 call", never "1 calls");
 * - a long organization name is readable in the switcher (wrapped, never cut sideways) and in its list;
 * - leaving is offered only when the gateway allows it (not to an only owner, personal organization included);
 * - the organizations page: each organization with role, members, personal or team, switch and create;
 * - the usage filters fit one row at 1400 px and stay inside a 375 px screen;
 * - "Sign out" is on screen at 1400x900 (and in a shorter window, and at 375 px);
 * - the API reference at /docs carries the project's name, not Fastify's logo.
 * Role and label locators only; geometry through bounding boxes.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

/** A name of the longest length the API takes (100 characters). */
const LONG_NAME = "The Extraordinarily Long-Named International Generative Media Production Studio of Northern Europe".padEnd(100, "!");
const WIDE = { width: 1400, height: 900 };
const PHONE = { width: 375, height: 812 };

/** What went wrong in a page: console errors, failed requests and answers of 400 and above. */
function watch(page: Page): { problems: string[]; requests: string[] } {
  const problems: string[] = [];
  const requests: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("requestfailed", (r) => problems.push(`failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ""}`));
  page.on("request", (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return { problems, requests };
}

/** The bounding box of a located element (it must be rendered). */
async function box(locator: ReturnType<Page["getByRole"]>) {
  const b = await locator.boundingBox();
  assert.ok(b, "the element is rendered");
  return b;
}

describe("console rough edges (issue 42)", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  before(async () => {
    // Payments off: no STRIPE_SECRET_KEY.
    h = await startConsole({ viewport: WIDE });
  });
  after(async () => {
    await h?.close();
  });

  /** A new user signed up in a fresh tab, with room in the per-minute window for a test that visits many pages. */
  async function newUser(page: Page) {
    const user = await h.signUp(page);
    const roomy = await h.gw.request("PUT", `/v1/admin/users/${user.userId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100000, per_model_rpm: 100000 } });
    assert.equal(roomy.status, 200, JSON.stringify(roomy.json));
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    return user;
  }
  const sessionToken = (page: Page) => page.evaluate("JSON.parse(localStorage.getItem('gateway.console.session')).token") as Promise<string>;
  const switcher = (page: Page) => page.getByRole("button", { name: /^Organization / });

  /** Opens the switcher's list and picks "New organization"; the new one is selected at once. */
  async function newOrg(page: Page, name: string): Promise<void> {
    await switcher(page).click();
    await page.getByRole("button", { name: "New organization" }).click();
    const dialog = page.getByRole("dialog", { name: "New organization" });
    await dialog.getByLabel("Organization name").fill(name);
    await dialog.getByRole("button", { name: "Create organization" }).click();
    await dialog.waitFor({ state: "hidden" });
    await page.getByRole("article", { name: "Balance" }).getByText(name).waitFor();
  }

  test("payments off: overview, billing, usage, organizations, keys and members make no failing request and log no error", async () => {
    const page = await h.context.newPage();
    const { problems, requests } = watch(page);
    await newUser(page);
    await page.getByText("Card top-ups are off on this gateway: the operator adds deposits.").waitFor();
    for (const [path, heading] of [
      ["/billing", "Billing"],
      ["/usage", "Usage"],
      ["/organizations", "Your organizations"],
      ["/keys", "API keys"],
      ["/members", "Members"],
      ["/", "Overview"],
    ] as const) {
      await page.goto(h.url(path));
      await page.getByRole("heading", { level: 1, name: heading }).waitFor();
      await page.waitForLoadState("networkidle");
    }
    await page.goto(h.url("/billing"));
    await page.getByText("Card top-ups are not enabled on this gateway; ask the operator for a deposit.").waitFor();
    await page.waitForLoadState("networkidle");
    assert.deepEqual(problems, [], "no failed request, no console error");
    assert.ok(requests.includes("GET /v1/capabilities"), "payments are read from the capabilities");
    assert.deepEqual(
      requests.filter((r) => r.includes("/v1/billing/checkout")),
      [],
      "no checkout call while payments are off",
    );
    await page.close();
  });

  test("counts agree with their noun: one call reads '1 call' on the overview and '1 request' on the usage page", async () => {
    const page = await h.context.newPage();
    const user = await newUser(page);
    const spoke = await h.gw.client(user.apiKey).POST("/v1/audio/speech", { body: { input: "One call.", voice_id: DEMO_ALPHA_VOICE_ID }, parseAs: "arrayBuffer" });
    assert.equal(spoke.response.status, 200);
    await page.reload();
    await page.getByText(/Last 7 days: .+ in 1 call · last 30 days: .+ in 1 call\./).waitFor();
    assert.equal(await page.getByText(/\b1 calls\b/).count(), 0);
    const model = spoke.response.headers.get("x-svc-model") ?? "";
    assert.ok(model.length > 0);
    await page.goto(h.url(`/usage?model=${encodeURIComponent(model)}`));
    await page.getByText("1 request,", { exact: false }).first().waitFor();
    assert.equal(await page.getByText(/\b1 requests\b/).count(), 0);
    await page.close();
  });

  test("a long organization name: wrapped in the switcher and its list, never cut sideways, at 1400 and 375 px", async () => {
    const page = await h.context.newPage();
    await newUser(page);
    await newOrg(page, LONG_NAME);
    for (const viewport of [WIDE, PHONE]) {
      await page.setViewportSize(viewport);
      await page.goto(h.url("/"));
      const button = switcher(page);
      await button.getByText(LONG_NAME).waitFor();
      assert.equal(await button.getAttribute("title"), LONG_NAME, "the whole name in the tooltip");
      // Nothing overflows sideways: the name wraps inside the button, the button fits the screen.
      const overflow = await button.evaluate((el) => el.scrollWidth - el.clientWidth);
      assert.ok(overflow <= 0, `the button's content fits its width (overflow ${overflow}px)`);
      const b = await box(button);
      assert.ok(b.x >= 0 && b.x + b.width <= viewport.width, "the switcher fits the screen");
      assert.ok(b.height > 50, "the name takes more than one line");
      // The list shows it whole: not clipped in either direction.
      await button.click();
      const choice = page.getByRole("list", { name: "Switch organization" }).getByRole("button", { name: new RegExp(`^${LONG_NAME.replace(/[.!]/g, "\\$&")} \\(owner`) });
      await choice.waitFor();
      const name = choice.getByText(LONG_NAME);
      const clipped = await name.evaluate((el) => ({ x: el.scrollWidth - el.clientWidth, y: el.scrollHeight - el.clientHeight }));
      assert.deepEqual(clipped, { x: 0, y: 0 }, "the name in the list is not clipped");
      const c = await box(choice);
      assert.ok(c.x >= 0 && c.x + c.width <= viewport.width, "the list fits the screen");
      await page.keyboard.press("Escape");
      await choice.waitFor({ state: "detached" });
    }
    await page.close();
  });

  test("leave: not offered to the only owner of a personal organization; offered, and working, with a second owner", async () => {
    const page = await h.context.newPage();
    const user = await newUser(page);
    await page.goto(h.url("/members"));
    await page.getByText(`${user.email} is your personal organization and you are its only owner`, { exact: false }).waitFor();
    assert.equal(await page.getByRole("button", { name: /^Leave / }).count(), 0, "no Leave the gateway would refuse");
    // Refused by the gateway too (409 last_owner), which is why it is not offered.
    const token = await sessionToken(page);
    const me = await h.gw.request("GET", "/v1/auth/me", { token });
    const refused = await h.gw.request("DELETE", `/v1/orgs/${me.json.org_id}/members/${user.userId}`, { token });
    assert.deepEqual([refused.status, refused.json.error.code], [409, "last_owner"]);

    // A team with a second owner: leaving is offered and works.
    const made = await h.gw.request("POST", "/v1/orgs", { token, body: { name: "Two Owners" } });
    assert.equal(made.status, 201);
    const org = made.json.id as string;
    const other = await h.gw.register();
    const invite = await h.gw.request("POST", `/v1/orgs/${org}/invites`, { token, body: { email: other.email, role: "owner" } });
    assert.equal(invite.status, 201, JSON.stringify(invite.json));
    assert.equal((await h.gw.request("POST", `/v1/invites/${invite.json.token}/accept`, { token: other.session_token })).status, 200);
    await page.goto(h.url("/organizations"));
    const row = page.getByRole("row").filter({ hasText: "Two Owners" });
    await row.getByRole("cell", { name: "2", exact: true }).waitFor();
    await row.getByRole("button", { name: "Switch to Two Owners" }).click();
    await switcher(page).getByText("Two Owners").waitFor();
    await page.goto(h.url("/members"));
    await page.getByRole("button", { name: "Leave Two Owners" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Leave" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await switcher(page).getByText(user.email).waitFor();
    await page.close();
  });

  test("organizations page: every organization with role, members, personal or team; switch and create; linked from the switcher and the navigation", async () => {
    const page = await h.context.newPage();
    const user = await newUser(page);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Organizations" }).click();
    await page.getByRole("heading", { level: 1, name: "Your organizations" }).waitFor();
    const personal = page.getByRole("row").filter({ hasText: user.email });
    for (const text of ["owner", "personal", "1"]) await personal.getByRole("cell", { name: text, exact: true }).waitFor();
    await page.getByText("You belong to 1 organization.").waitFor();

    await page.getByRole("main").getByRole("button", { name: "New organization" }).click();
    const dialog = page.getByRole("dialog", { name: "New organization" });
    await dialog.getByLabel("Organization name").fill("Page Made Org");
    await dialog.getByRole("button", { name: "Create organization" }).click();
    await dialog.waitFor({ state: "hidden" });
    const team = page.getByRole("row").filter({ hasText: "Page Made Org" });
    for (const text of ["owner", "team", "1"]) await team.getByRole("cell", { name: text, exact: true }).waitFor();
    await team.getByText("(current)").waitFor();
    await switcher(page).getByText("Page Made Org").waitFor();
    await page.getByText("You belong to 2 organizations.").waitFor();

    await personal.getByRole("button", { name: `Switch to ${user.email}` }).click();
    await switcher(page).getByText(user.email).waitFor();
    await personal.getByText("(current)").waitFor();

    // The switcher's list links here too.
    await page.goto(h.url("/"));
    await switcher(page).click();
    await page.getByRole("link", { name: "All organizations" }).click();
    await page.getByRole("heading", { level: 1, name: "Your organizations" }).waitFor();
    await page.close();
  });

  test("usage filters: one row at 1400 px; inside the screen at 375 px", async () => {
    const page = await h.context.newPage();
    await newUser(page);
    const labels = ["From", "To (included)", "Model", "Key", "Status", "Key mode"];
    await page.goto(h.url("/usage"));
    await page.getByRole("heading", { name: "Totals" }).waitFor();
    const tops = [];
    for (const label of labels) tops.push(Math.round((await box(page.getByLabel(label, { exact: true }))).y));
    assert.ok(Math.max(...tops) - Math.min(...tops) <= 2, `one row at 1400 px: ${tops.join(", ")}`);

    await page.setViewportSize(PHONE);
    await page.getByRole("heading", { name: "Totals" }).waitFor();
    for (const label of labels) {
      const b = await box(page.getByLabel(label, { exact: true }));
      assert.ok(b.x >= 0 && b.x + b.width <= PHONE.width, `${label} inside the screen`);
    }
    const sideways = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
    assert.equal(sideways, 0, "the page does not scroll sideways");
    await page.close();
  });

  test("Sign out is on screen at 1400x900 (the list of organizations open too), in a shorter window, and at 375 px", async () => {
    const page = await h.context.newPage();
    await newUser(page);
    await newOrg(page, LONG_NAME);
    const signOut = page.getByRole("button", { name: "Sign out" });
    const onScreen = async (viewport: { width: number; height: number }, what: string) => {
      const b = await box(signOut);
      assert.ok(b.y >= 0 && b.y + b.height <= viewport.height && b.x >= 0 && b.x + b.width <= viewport.width, `${what}: Sign out at ${JSON.stringify(b)}`);
    };
    for (const viewport of [WIDE, { width: 1400, height: 600 }, PHONE]) {
      await page.setViewportSize(viewport);
      await page.goto(h.url("/"));
      await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
      await onScreen(viewport, `${viewport.width}x${viewport.height}`);
      await switcher(page).click();
      await page.getByRole("link", { name: "All organizations" }).waitFor();
      await onScreen(viewport, `${viewport.width}x${viewport.height}, organizations listed`);
      await page.keyboard.press("Escape");
    }
    // At 1400 px the navigation scrolls on its own, so its last link is reachable in a short window.
    await page.setViewportSize({ width: 1400, height: 600 });
    const apiDocs = page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API docs" });
    await apiDocs.scrollIntoViewIfNeeded();
    const d = await box(apiDocs);
    assert.ok(d.y + d.height <= (await box(signOut)).y, "the last link scrolls into view above Sign out");
    await signOut.click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.close();
  });

  test("the API reference carries the project's name: title, logo, a link back to the console; no Fastify logo, no decision numbers", async () => {
    const page = await h.context.newPage();
    const { problems } = watch(page);
    await page.goto(`${h.gw.url}/docs`);
    await page.getByRole("heading", { name: /Media Gateway API/ }).first().waitFor();
    assert.equal(await page.title(), "API reference · Media Gateway");
    const logo = page.getByRole("img", { name: "Media Gateway API reference" });
    await logo.waitFor();
    const src = (await logo.getAttribute("src")) ?? "";
    assert.match(src, /^data:image\/svg\+xml;base64,/);
    const svg = Buffer.from(src.split(",")[1] ?? "", "base64").toString("utf8");
    assert.match(svg, /Media Gateway/);
    assert.doesNotMatch(svg, /fastify/i);
    assert.equal(await page.getByRole("link", { name: "Console", exact: true }).getAttribute("href"), "/console/");
    assert.equal(await page.getByRole("link", { name: "Media Gateway: back to the console" }).getAttribute("href"), "/console/");
    await page.getByText(/Keys and balances belong to organizations/).waitFor();
    const text = (await page.evaluate("document.body.innerText")) as string;
    assert.doesNotMatch(text, /\bD\d{1,2}\b|fastify/i);
    await page.waitForLoadState("networkidle");
    assert.deepEqual(problems, []);
    await page.close();
  });
});
