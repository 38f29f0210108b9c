/**
 * The Budgets page of the console (D44) in a real browser, against a real gateway: an owner creates a day
 * budget in Asia/Tokyo in the create dialog, and the row shows its window in Tokyo's calendar, the spend
 * (a bar) and what remains; calls made with the owner's API key spend it until the gateway refuses the
 * next one (402 `budget_exceeded`), and the page shows it reached; the owner edits the amount, adds a
 * member budget that alerts only, sees a key's spend limit listed as a key budget, and deletes a budget
 * after a confirmation; a member of the organization, in a second browser, reads the budgets without any
 * action. Role and label locators only. With `CONSOLE_SCREENSHOT_DIR` set, screenshots of the page.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { browserSkip, type ConsoleHarness, launchBrowser, startConsole } from "./harness.ts";

/** The calendar day (`Nov 30`) of today and tomorrow in `timeZone`, as the page writes dates (en-US). */
function tokyoDays(): [string, string] {
  const day = (t: number) => new Intl.DateTimeFormat("en-US", { timeZone: "Asia/Tokyo", month: "short", day: "numeric" }).format(new Date(t));
  const now = Date.now();
  // Tomorrow in Tokyo is 24 hours later (Tokyo keeps no daylight saving time).
  return [day(now), day(now + 86_400_000)];
}

describe("console budgets", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  let second: Awaited<ReturnType<typeof launchBrowser>>;
  let owner: { email: string; userId: string; apiKey: string };
  let orgId: string;
  let member: Awaited<ReturnType<ConsoleHarness["gw"]["register"]>>;

  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
    second = await launchBrowser();
    owner = await h.signUp(page);
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    const me = await h.gw.request("GET", "/v1/auth/me", { token: owner.apiKey });
    orgId = me.json.org_id;
    await h.deposit(owner.userId, 20);
    // Room for the console's own reads next to the test's calls.
    assert.equal((await h.gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100000, per_model_rpm: 100000 } })).status, 200);
    // A member joins the owner's organization by invite.
    member = await h.gw.register();
    const invite = await h.gw.request("POST", `/v1/orgs/${orgId}/invites`, { token: owner.apiKey, body: { email: member.email, role: "member" } });
    assert.equal(invite.status, 201, JSON.stringify(invite.json));
    assert.equal((await h.gw.request("POST", `/v1/invites/${invite.json.token}/accept`, { token: member.session_token })).status, 200);
  });
  after(async () => {
    await second?.close();
    await h?.close();
  });

  const budgets = () => page.getByRole("region", { name: "The organization's budgets" });
  const speak = () => h.gw.request("POST", "/v1/audio/speech", { token: owner.apiKey, body: { input: "Hello.", voice_id: DEMO_ALPHA_VOICE_ID } });
  const shot = async (p: Page, name: string) => {
    if (process.env.CONSOLE_SCREENSHOT_DIR) await p.screenshot({ path: `${process.env.CONSOLE_SCREENSHOT_DIR}/${name}.png`, fullPage: true });
  };

  test("an owner creates a day budget in Asia/Tokyo; calls spend it until refused; the row shows window, spend and remaining", async () => {
    await page.getByRole("link", { name: "Budgets" }).click();
    await page.getByRole("heading", { level: 1, name: "Budgets" }).waitFor();
    await budgets().getByText("No budgets yet.").waitFor();

    await page.getByRole("button", { name: "Create budget" }).click();
    const dialog = page.getByRole("dialog", { name: "Create a budget" });
    assert.equal(await dialog.getByLabel("Applies to").inputValue(), "org");
    await dialog.getByLabel("Amount (USD)").fill("0.01");
    await dialog.getByLabel("Period").selectOption("day");
    await dialog.getByLabel("Time zone").fill("Asia/Tokyo");
    assert.equal(await dialog.getByLabel("Block: refuse calls that would go past it (402)").isChecked(), true);
    await dialog.getByLabel("Alert thresholds (%)").fill("50, 100");
    await shot(page, "budgets-create-1280");
    await dialog.getByRole("button", { name: "Create budget" }).click();
    await dialog.waitFor({ state: "hidden" });

    const [today, tomorrow] = tokyoDays();
    const row = budgets().getByRole("row").filter({ hasText: "Organization" });
    await row.getByText(`Daily: ${today}, 00:00 – ${tomorrow}, 00:00`).waitFor();
    await row.getByText("Asia/Tokyo").waitFor();
    await row.getByText("$0.00 of $0.01").waitFor();
    await row.getByText("$0.01 left").waitFor();
    await row.getByText("alerts at 50%, 100%").waitFor();
    const api = await h.gw.request("GET", "/v1/budgets", { token: owner.apiKey });
    assert.deepEqual(api.json.data.map((b: { scope: unknown; amount_usd: number; timezone: string }) => [b.scope, b.amount_usd, b.timezone]), [[{ type: "org", id: orgId }, 0.01, "Asia/Tokyo"]]);

    // 0.00243 USD a call: four fit, the fifth would pass the budget and is refused before any upstream call.
    for (let i = 0; i < 4; i++) assert.equal((await speak()).status, 200);
    const refused = await speak();
    assert.equal(refused.status, 402);
    assert.equal(refused.json.error.code, "budget_exceeded");
    await page.reload();
    await row.getByText("$0.00972 of $0.01").waitFor();
    await row.getByText("$0.00028 left").waitFor();
    const bar = row.getByRole("progressbar", { name: /^Spent of the Daily budget of organization / });
    assert.ok(Math.abs(Number(await bar.getAttribute("value")) - 0.972) < 1e-9);
    await shot(page, "budgets-1280");
  });

  test("the owner edits the amount, adds an alert-only member budget, sees a key's spend limit, and deletes", async () => {
    await page.goto(h.url("/budgets"));
    const row = budgets().getByRole("row").filter({ hasText: "Organization" });
    await row.getByRole("button", { name: /^Edit the Daily budget of organization / }).click();
    const edit = page.getByRole("dialog", { name: /^Edit the Daily budget/ });
    await edit.getByLabel("Amount (USD)").fill("1");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await edit.waitFor({ state: "hidden" });
    await row.getByText("$0.00972 of $1.00").waitFor();
    assert.equal((await speak()).status, 200, "the raised budget lets calls through again");

    await page.getByRole("button", { name: "Create budget" }).click();
    const dialog = page.getByRole("dialog", { name: "Create a budget" });
    await dialog.getByLabel("Applies to").selectOption("member");
    await dialog.getByLabel("Member").selectOption({ label: `${member.email} (member)` });
    await dialog.getByLabel("Amount (USD)").fill("5");
    await dialog.getByLabel("Period").selectOption("month");
    await dialog.getByLabel("Time zone").fill("Europe/Paris");
    await dialog.getByLabel("Alert only: send events, keep serving").check();
    await dialog.getByRole("button", { name: "Create budget" }).click();
    await dialog.waitFor({ state: "hidden" });
    const memberRow = budgets().getByRole("row").filter({ hasText: member.email });
    await memberRow.getByText("alert only").waitFor();
    await memberRow.getByText("Europe/Paris").waitFor();
    await memberRow.getByText("$0.00 of $5.00").waitFor();

    // A key's spend limit is a key budget.
    const capped = await h.gw.request("POST", "/v1/auth/keys", { token: owner.apiKey, body: { name: "capped", spend_limit_usd: 3, spend_limit_period: "week" } });
    assert.equal(capped.status, 201);
    await page.reload();
    const keyRow = budgets().getByRole("row").filter({ hasText: "the key's spend limit" });
    await keyRow.getByText(/^capped \(/).waitFor();
    await keyRow.getByText("$0.00 of $3.00").waitFor();
    await keyRow.getByText("no alerts").waitFor();

    await memberRow.getByRole("button", { name: /^Delete the Monthly budget of member / }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete budget" }).click();
    await memberRow.waitFor({ state: "detached" });
    assert.equal((await h.gw.request("GET", "/v1/budgets", { token: owner.apiKey })).json.data.length, 2);
    await shot(page, "budgets-edited-1280");
  });

  test("a member reads the budgets without actions", async () => {
    const p2 = await second.context.newPage();
    await p2.goto(h.url("/sign-in"));
    await p2.getByLabel("Email").fill(member.email);
    await p2.getByLabel("Password").fill("correct horse battery");
    await p2.getByRole("button", { name: "Sign in" }).click();
    await p2.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await p2.getByRole("button", { name: /^Organization / }).click();
    await p2.getByRole("list", { name: "Switch organization" }).getByRole("button", { name: new RegExp(`^${owner.email.replace(/[.+]/g, "\\$&")} \\(`) }).click();
    await p2.getByText("Your role: member").waitFor();
    await p2.goto(h.url("/budgets"));
    const list = p2.getByRole("region", { name: "The organization's budgets" });
    await list.getByRole("row").filter({ hasText: "Organization" }).getByText("$0.01215 of $1.00").waitFor();
    await p2.getByText("your role is member, so you can read them").waitFor();
    assert.equal(await p2.getByRole("button", { name: "Create budget" }).count(), 0);
    assert.equal(await list.getByRole("button", { name: /^(Edit|Delete) / }).count(), 0);
    await shot(p2, "budgets-member-1280");
    await p2.setViewportSize({ width: 375, height: 800 });
    await p2.reload();
    await list.getByRole("row").first().waitFor();
    const scrolls = await p2.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth");
    assert.equal(scrolls, false, "no sideways scroll at 375 px");
    await shot(p2, "budgets-member-375");
  });
});
