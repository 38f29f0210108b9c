/**
 * Organizations in the web console (D41, issue 34), in a real browser: the switcher (two organizations,
 * switching changes the balance shown, the choice survives a reload), the members page (invite with a
 * one-time link, the pending invite, change a role, remove a member), an invite accepted from its link by
 * a second user in a second browser (signed out first: sign in, come back, accept, land in the
 * organization), a refused accept shown clearly, role-aware actions (a viewer sees no "Create key", no
 * playground and no webhook forms), and the operator's organization pages. Role and label locators only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { browserSkip, type ConsoleHarness, launchBrowser, PASSWORD, startConsole } from "./harness.ts";

describe("console organizations", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  let second: Awaited<ReturnType<typeof launchBrowser>>;
  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
    second = await launchBrowser();
  });
  after(async () => {
    await second?.close();
    await h?.close();
  });

  const balance = (p: Page) => p.getByRole("article", { name: "Balance" });
  /** The sidebar's switcher: a button naming the current organization, opening the list of the user's ones. */
  const switcher = (p: Page) => p.getByRole("button", { name: /^Organization / });
  /** The organization this browser acts for (org.ts keeps it in localStorage per user). */
  const selected = (p: Page) =>
    p.evaluate("localStorage.getItem('gateway.console.org.' + JSON.parse(localStorage.getItem('gateway.console.session')).userId)") as Promise<string | null>;
  /** Picks the organization named `name` in the switcher's list. */
  async function choose(p: Page, name: string): Promise<void> {
    await switcher(p).click();
    await p.getByRole("list", { name: "Switch organization" }).getByRole("button", { name: new RegExp(`^${name.replace(/[.+]/g, "\\$&")} \\(`) }).click();
    await switcher(p).getByText(name, { exact: true }).waitFor();
  }

  /** Operator deposit into an organization (`POST /v1/admin/orgs/{id}/deposits`). */
  async function depositOrg(orgId: string, amountUsd: number): Promise<void> {
    const res = await h.gw.request("POST", `/v1/admin/orgs/${orgId}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: amountUsd } });
    assert.equal(res.status, 200, JSON.stringify(res.json));
  }

  /**
   * A custom requests-per-minute limit (D22) for an organization two browsers read at once: a tier-0
   * organization's 30 a minute are spent by the console's own reads in a test this quick.
   */
  async function roomy(orgId: string): Promise<void> {
    const res = await h.gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100000, per_model_rpm: 100000 } });
    assert.equal(res.status, 200, JSON.stringify(res.json));
  }

  /** Creates an organization with "New organization" in the switcher's list; it is selected at once. Returns its id. */
  async function newOrg(p: Page, name: string): Promise<string> {
    await switcher(p).click();
    await p.getByRole("button", { name: "New organization" }).click();
    const dialog = p.getByRole("dialog", { name: "New organization" });
    await dialog.getByLabel("Organization name").fill(name);
    await dialog.getByRole("button", { name: "Create organization" }).click();
    await dialog.waitFor({ state: "hidden" });
    // Selected at once (the list reloads with it).
    await switcher(p).getByText(name, { exact: true }).waitFor();
    const id = await selected(p);
    assert.match(id ?? "", /^org_/);
    return id ?? "";
  }

  test("switcher: two organizations, switching changes the balance shown and survives a reload", async () => {
    const user = await h.signUp(page);
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    await balance(page).getByText("$0.50").first().waitFor();
    await page.getByText("Your role: owner").waitFor();
    await switcher(page).getByText(user.email).waitFor();

    const acme = await newOrg(page, "Acme studio");
    // The new organization's own balance: no signup credit.
    await balance(page).getByText("$0.00").first().waitFor();
    await depositOrg(acme, 20);
    await page.reload();
    await balance(page).getByText("$20.00").first().waitFor();
    assert.equal(await selected(page), acme);
    await switcher(page).getByText("Acme studio", { exact: true }).waitFor();

    await choose(page, user.email);
    await balance(page).getByText("$0.50").first().waitFor();
    await balance(page).getByText(user.email).waitFor();
    await choose(page, "Acme studio");
    await balance(page).getByText("$20.00").first().waitFor();

    // Every page acts for the selected organization: its keys are not the personal one's.
    await page.goto(h.url("/keys"));
    await page.getByText("No keys yet.").waitFor();
    await choose(page, user.email);
    await page.getByRole("button", { name: /^Revoke / }).first().waitFor();
  });

  test("members: invite (one-time link), pending invite, accept from the link in a second browser, change the role, a viewer's hidden actions, remove", async () => {
    const owner = await h.signUp(page);
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    const orgId = await newOrg(page, "Team Blue");
    await depositOrg(orgId, 5);
    await roomy(orgId);
    const invitee = await h.gw.register();

    await page.getByRole("link", { name: "Members" }).click();
    await page.getByRole("heading", { level: 1, name: "Members" }).waitFor();
    const members = page.getByRole("region", { name: "Members" });
    await members.getByRole("cell", { name: `${owner.email} (you)` }).waitFor();

    // A refusal shows the gateway's message: the owner is already a member.
    const invite = page.getByRole("region", { name: "Invite someone" });
    await invite.getByLabel("Email").fill(owner.email);
    await invite.getByRole("button", { name: "Create invite link" }).click();
    await invite.getByRole("alert").getByText("already a member").waitFor();

    await invite.getByLabel("Email").fill(invitee.email);
    await invite.getByLabel("Role").selectOption("member");
    await invite.getByRole("button", { name: "Create invite link" }).click();
    const link = await page.getByRole("textbox", { name: `Invite link for ${invitee.email}` }).inputValue();
    assert.match(link, new RegExp(`^${h.url("/invites/")}inv_`));
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("status").filter({ hasText: "Copied to the clipboard." }).waitFor();
    const pending = page.getByRole("region", { name: "Pending invites" });
    await pending.getByRole("cell", { name: invitee.email, exact: true }).waitFor();

    // A second invite, revoked.
    await invite.getByLabel("Email").fill("someone-else@example.com");
    await invite.getByRole("button", { name: "Create invite link" }).click();
    await pending.getByRole("button", { name: "Revoke the invite of someone-else@example.com" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke invite" }).click();
    await pending.getByRole("cell", { name: "someone-else@example.com", exact: true }).waitFor({ state: "detached" });

    // The invited user opens the link signed out, signs in, comes back and accepts.
    const p2 = await second.context.newPage();
    await p2.goto(link);
    await p2.getByRole("heading", { level: 1, name: "Join an organization" }).waitFor();
    await p2.getByRole("button", { name: "Sign in to accept" }).click();
    await p2.getByLabel("Email").fill(invitee.email);
    await p2.getByLabel("Password").fill(PASSWORD);
    await p2.getByRole("button", { name: "Sign in" }).click();
    await p2.getByRole("heading", { level: 1, name: "Join an organization" }).waitFor();
    await p2.getByRole("button", { name: "Accept and join" }).click();
    await p2.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    // Now in Team Blue, as a member: its balance, not the personal one's.
    await balance(p2).getByText("$5.00").first().waitFor();
    assert.equal(await selected(p2), orgId);
    await switcher(p2).getByText("Team Blue", { exact: true }).waitFor();
    await p2.getByText("Your role: member").waitFor();
    // Members see no top-up and no invite form.
    await p2.getByRole("link", { name: "Members" }).click();
    await p2.getByRole("cell", { name: owner.email, exact: true }).waitFor();
    assert.equal(await p2.getByRole("region", { name: "Invite someone" }).count(), 0);
    // The used link does not work twice.
    await p2.goto(link);
    await p2.getByRole("button", { name: "Accept and join" }).click();
    await p2.getByRole("alert").getByText(/No such invite/).waitFor();
    await p2.getByText("Ask the person who invited you for a new link.").waitFor();

    // The owner sees the new member (and no pending invite), and makes them a viewer.
    await page.reload();
    await members.getByRole("cell", { name: invitee.email, exact: true }).waitFor();
    await pending.getByText("No pending invites.").waitFor();
    await members.getByLabel(`Role of ${invitee.email}`).selectOption("viewer");
    await page.getByRole("status").filter({ hasText: `${invitee.email} is now viewer.` }).waitFor();

    // The viewer: no "Create key", no playground tools, no webhook forms.
    await p2.goto(h.url("/keys"));
    await p2.getByText("Your role: viewer").waitFor();
    await p2.getByRole("heading", { name: "The organization's keys" }).waitFor();
    assert.equal(await p2.getByRole("button", { name: "Create key" }).count(), 0);
    await p2.goto(h.url("/playground"));
    await p2.getByText(/Your role in this organization is viewer/).waitFor();
    assert.equal(await p2.getByRole("button", { name: "Create the playground key" }).count(), 0);
    await p2.goto(h.url("/webhooks"));
    await p2.getByText(/managed by this organization's admins and owners/).waitFor();
    assert.equal(await p2.getByRole("button", { name: "Add endpoint" }).count(), 0);

    // The owner removes the member; the last owner is not offered to leave (the gateway would refuse it).
    await members.getByRole("button", { name: `Remove ${invitee.email}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove member" }).click();
    await members.getByRole("cell", { name: invitee.email, exact: true }).waitFor({ state: "detached" });
    await page.getByText("You are the only owner of Team Blue, so you cannot leave it").waitFor();
    assert.equal(await page.getByRole("button", { name: "Leave Team Blue" }).count(), 0);

    // The removed member's browser falls back to their personal organization.
    await p2.goto(h.url("/"));
    await balance(p2).getByText("$0.50").first().waitFor();
    await p2.close();
  });

  test("an invite for another email: the accept is refused with what to do; registering the invited email accepts it", async () => {
    await h.signUp(page);
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    const orgId = await newOrg(page, "Team Green");
    const other = await h.gw.register();
    const made = await h.gw.request("POST", `/v1/orgs/${orgId}/invites`, {
      token: (await page.evaluate("JSON.parse(localStorage.getItem('gateway.console.session')).token")) as string,
      body: { email: `not-${other.email}`, role: "member" },
    });
    assert.equal(made.status, 201);
    const p2 = await second.context.newPage();
    await p2.goto(h.url("/sign-in"));
    await p2.getByLabel("Email").fill(other.email);
    await p2.getByLabel("Password").fill(PASSWORD);
    await p2.getByRole("button", { name: "Sign in" }).click();
    await p2.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await p2.goto(h.url(`/invites/${made.json.token as string}`));
    await p2.getByRole("button", { name: "Accept and join" }).click();
    await p2.getByRole("alert").waitFor();
    await p2.getByText("Sign out, then sign in or register with the email the invite was sent to.").waitFor();
    await p2.getByRole("button", { name: "Sign out to use another account" }).click();
    // The invited email has no account yet: register with it, come back, accept.
    await p2.getByRole("button", { name: "Register to accept" }).click();
    await p2.getByLabel("Email").fill(`not-${other.email}`);
    await p2.getByLabel("Password").fill(PASSWORD);
    await p2.getByRole("button", { name: "Create account" }).click();
    await p2.getByRole("textbox", { name: "Your first API key" }).waitFor();
    await p2.getByRole("button", { name: "Continue" }).click();
    await p2.getByRole("button", { name: "Accept and join" }).click();
    await p2.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    assert.equal(await selected(p2), orgId);
    await switcher(p2).getByText("Team Green", { exact: true }).waitFor();
    await p2.getByText("Your role: member").waitFor();
    await p2.close();
  });

  test("operator: organizations listed and searched, one with its members, a deposit", async () => {
    const user = await h.signUp(page);
    await page.getByRole("button", { name: "Continue to the overview" }).click();
    const orgId = await newOrg(page, "Operator Seen Org");
    await page.evaluate(`sessionStorage.setItem("gateway.console.operator", ${JSON.stringify(ADMIN_TOKEN)})`);
    await page.goto(h.url("/operator/orgs"));
    await page.getByLabel("Name prefix or organization id").fill("Operator Seen");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByRole("link", { name: "Operator Seen Org" }).click();
    await page.getByRole("heading", { level: 1, name: "Organization" }).waitFor();
    await page.getByRole("region", { name: "Members" }).getByRole("link", { name: user.email }).waitFor();
    await page.getByLabel("Amount (USD)").fill("12.5");
    await page.getByRole("button", { name: "Deposit" }).click();
    await page.getByRole("status").filter({ hasText: "Deposited. Balance now $12.50" }).waitFor();
    await page.getByRole("article", { name: "Balance" }).getByText("$12.50").first().waitFor();
    assert.match(page.url(), new RegExp(`/operator/orgs/${orgId}$`));
  });
});
