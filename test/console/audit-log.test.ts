/**
 * The audit log page of the web console (D45), in a real browser: an owner sees the organization's entries
 * (registration, a key made and renamed, the alert set) with actor, target and the fields before and after,
 * filters them by action (kept in the URL), and downloads the filtered CSV; a viewer is told the log is for
 * owners and admins. Role and label locators only. With `CONSOLE_SCREENSHOT_DIR` set, screenshots of the
 * page at 1280 and 375 px go there.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

describe("console audit log", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
  });

  /** The session token the console holds (session.ts). */
  const sessionToken = (p: Page) => p.evaluate("JSON.parse(localStorage.getItem('gateway.console.session')).token") as Promise<string>;
  /** A custom requests-per-minute limit: the console's own reads spend a tier-0 organization's 30 a minute quickly. */
  async function roomy(orgId: string): Promise<void> {
    const res = await h.gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100000 } });
    assert.equal(res.status, 200, JSON.stringify(res.json));
  }

  test("an owner reads, filters and downloads the organization's audit log", async () => {
    const user = await h.signUp(page);
    const token = await sessionToken(page);
    const me = await h.gw.request("GET", "/v1/auth/me", { token });
    const orgId = me.json.org_id as string;
    await roomy(orgId);
    const key = await h.gw.request("POST", "/v1/auth/keys", { token, body: { name: "ci runner" }, headers: { "user-agent": "audit-console-test" } });
    assert.equal((await h.gw.request("PATCH", `/v1/auth/keys/${key.json.key_id}`, { token, body: { name: "ci runner, prod" } })).status, 200);
    assert.equal((await h.gw.request("PUT", "/v1/billing/alerts", { token, body: { low_balance_usd: 1.5 } })).status, 200);

    await page.goto(h.url("/audit-log"));
    await page.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
    const table = page.getByRole("table");
    await table.getByText("alert.updated").waitFor();
    for (const action of ["key.updated", "key.created", "user.registered"]) await table.getByText(action, { exact: true }).waitFor();
    // The change of the rename: the name before and after.
    await table.getByText("ci runner, prod").waitFor();
    await table.getByText(user.email).first().waitFor();
    assert.ok((await table.getByText("audit-console-test").count()) > 0, "the user agent of the key's creation");
    if (process.env.CONSOLE_SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.CONSOLE_SCREENSHOT_DIR}/audit-log-1280.png`, fullPage: true });

    // Filter by action: only the key's creation; the filter is in the URL.
    await page.getByLabel("Action").selectOption("key.created");
    await page.waitForURL(/action=key\.created/);
    await table.getByText("key.updated").waitFor({ state: "detached" });
    await table.getByText("key.created", { exact: true }).waitFor();
    assert.equal(await table.getByRole("row").count(), 2, "a header row and the one entry");

    // The CSV of the filtered entries.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    assert.match(download.suggestedFilename(), /^audit-log-.*\.csv$/);
    const lines = readFileSync((await download.path())!, "utf8").trimEnd().split("\r\n");
    assert.equal(lines[0], "id,at,org_id,actor_type,actor_id,actor_email,action,target_type,target_id,request_id,ip,user_agent,changes");
    assert.equal(lines.length, 2);
    assert.ok(lines[1].includes(`,${orgId},user,${user.userId},${user.email},key.created,key,${key.json.key_id},req_`), lines[1]);
    assert.ok(!lines[1].includes(key.json.api_key), "never the key's secret");

    await page.setViewportSize({ width: 375, height: 800 });
    await page.getByLabel("Action").selectOption("");
    await table.getByText("alert.updated").waitFor();
    if (process.env.CONSOLE_SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.CONSOLE_SCREENSHOT_DIR}/audit-log-375.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test("a viewer is told the log is for owners and admins", async () => {
    const owner = await h.gw.register();
    await roomy(owner.org_id);
    const viewer = await h.signUp(page);
    const inv = await h.gw.request("POST", `/v1/orgs/${owner.org_id}/invites`, { token: owner.session_token, body: { email: viewer.email, role: "viewer" } });
    assert.equal(inv.status, 201, JSON.stringify(inv.json));
    assert.equal((await h.gw.request("POST", `/v1/invites/${inv.json.token}/accept`, { token: await sessionToken(page) })).status, 200);
    // Act for the owner's organization (the switcher's choice, org.ts).
    await page.evaluate(`localStorage.setItem('gateway.console.org.${viewer.userId}', '${owner.org_id}')`);
    await page.goto(h.url("/audit-log"));
    await page.getByText(/is for its owners and admins; your role is viewer/).waitFor();
    assert.equal(await page.getByRole("table").count(), 0);
  });
});
