/**
 * The audit log (D45) over HTTP on both databases: every audited change (keys, members, invites,
 * organizations, webhooks, alerts, a Stripe top-up, the operator's deposits, tiers and limits, registration,
 * sign-ins and failed sign-ins) writes exactly one entry carrying the `X-Svc-Request-Id` of its answer;
 * a change that fails writes none (and an entry never commits without its change); no entry holds any of
 * the secrets the test made (keys, session tokens, webhook secrets, invite tokens, passwords), searched in
 * every entry's full JSON; owners and admins read the organization's log (members and viewers 403, foreign
 * organizations 404), with filters, pages and CSV; the operator reads every organization's.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Stripe from "stripe";
import { type FakeCheckoutSession, startStripeFake, type StripeFake } from "../../fakes/stripe.ts";
import { recordAudit } from "../../src/accounts/audit.ts";
import { hashSecret } from "../../src/accounts/secrets.ts";
import { inTransaction } from "../../src/billing/executor.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

const STRIPE_KEY = "sk_test_51AuditGatewayKey0123456789abcdefgh";
const STRIPE_WHSEC = "whsec_auditTestSigningSecret0123456789ab";
const PASSWORD = "correct horse battery";
type User = Awaited<ReturnType<TestGateway["register"]>>;
type Role = "owner" | "admin" | "member" | "viewer";

function assertError(r: TestResponse, status: number, code: string): void {
  assert.equal(r.status, status, JSON.stringify(r.json));
  assert.equal(r.json.error.code, code, JSON.stringify(r.json));
}

for (const backend of BACKENDS) {
  describe(`audit log (D45) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let stripe: StripeFake;
    /** Every secret the tests made or sent: none may appear in any entry. */
    const secrets = new Set<string>([PASSWORD, STRIPE_KEY, STRIPE_WHSEC]);
    before(async () => {
      stripe = await startStripeFake({ apiKey: STRIPE_KEY });
      gw = await startGateway(backend.name, {
        WEBHOOK_ALLOW_PRIVATE: "1",
        STRIPE_SECRET_KEY: STRIPE_KEY,
        STRIPE_WEBHOOK_SECRET: STRIPE_WHSEC,
        STRIPE_API_BASE: stripe.url,
      });
      stripe.setWebhook({ url: `${gw.url}/v1/billing/stripe/webhook`, secret: STRIPE_WHSEC });
    });
    after(async () => {
      await gw?.close();
      await stripe?.close();
    });
    const db = () => gw.services.db.kysely;
    const as = (token: string, org?: string) => ({ token, ...(org ? { headers: { "x-svc-org": org } } : {}) });
    const count = async () => Number((await db().selectFrom("audit_log").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);

    async function register(): Promise<User> {
      const u = await gw.register();
      secrets.add(u.api_key).add(u.session_token);
      return u;
    }
    /** An organization made by a fresh owner, with a member of each other role joined by invite. */
    async function team(name = "Team"): Promise<{ id: string; users: Record<Role, User> }> {
      const owner = await register();
      const made = await gw.request("POST", "/v1/orgs", { ...as(owner.session_token), body: { name } });
      assert.equal(made.status, 201, JSON.stringify(made.json));
      const users = { owner } as Record<Role, User>;
      for (const role of ["admin", "member", "viewer"] as const) {
        const u = await register();
        const inv = await gw.request("POST", `/v1/orgs/${made.json.id}/invites`, { ...as(owner.session_token), body: { email: u.email, role } });
        secrets.add(inv.json.token);
        assert.equal((await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(u.session_token))).status, 200);
        users[role] = u;
      }
      return { id: made.json.id, users };
    }

    /**
     * The one entry written by the request that answered `res`: asserts the answer succeeded with `status`,
     * carries `X-Svc-Request-Id`, and exactly one entry has that request id, with `action`, `orgId` and `actor`.
     */
    async function expectOne(
      res: TestResponse,
      status: number,
      want: { action: string; orgId: string | null; actor: { type: string; id: string; email?: string }; target?: { type: string; id: string } },
    ) {
      assert.equal(res.status, status, JSON.stringify(res.json));
      const requestId = res.headers.get("x-svc-request-id");
      assert.match(requestId ?? "", /^req_/, "the answer carries its request id");
      const rows = await db().selectFrom("audit_log").selectAll().where("request_id", "=", requestId!).execute();
      assert.equal(rows.length, 1, `exactly one entry for ${want.action}: ${JSON.stringify(rows)}`);
      const r = rows[0];
      assert.equal(r.action, want.action);
      assert.equal(r.org_id, want.orgId, `${want.action}: org`);
      assert.deepEqual({ type: r.actor_type, id: r.actor_id, ...(want.actor.email ? { email: r.actor_email } : {}) }, want.actor, `${want.action}: actor`);
      if (want.target) assert.deepEqual({ type: r.target_type, id: r.target_id }, want.target, `${want.action}: target`);
      assert.match(r.id, /^aud_[A-Za-z0-9]{30}$/);
      assert.equal(r.ip, "127.0.0.1");
      return { ...r, changes: r.changes_json === null ? {} : (JSON.parse(r.changes_json) as Record<string, [unknown, unknown]>) };
    }

    test("every audited change writes exactly one entry with the request id of its answer", async () => {
      // Registration and sign-ins (public routes).
      const email = `audit-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
      const reg = await gw.request("POST", "/v1/auth/register", { body: { email, password: PASSWORD }, headers: { "user-agent": "audit-test/1.0" } });
      secrets.add(reg.json.api_key).add(reg.json.session_token);
      const owner = { ...(reg.json as { user_id: string; org_id: string; api_key: string; session_token: string }), email };
      const registered = await expectOne(reg, 200, { action: "user.registered", orgId: owner.org_id, actor: { type: "user", id: owner.user_id, email } });
      assert.equal(registered.user_agent, "audit-test/1.0");
      const login = await gw.request("POST", "/v1/auth/login", { body: { email, password: PASSWORD } });
      secrets.add(login.json.session_token);
      const signIn = await expectOne(login, 200, { action: "session.created", orgId: owner.org_id, actor: { type: "user", id: owner.user_id, email } });
      assert.match(signIn.target_id, /^ses_/);
      const session = login.json.session_token as string;

      // Keys: created by a session (actor user), changed and revoked with an API key (actor key).
      const key = await gw.request("POST", "/v1/auth/keys", { ...as(session), body: { name: "ci", spend_limit_usd: 5 } });
      secrets.add(key.json.api_key);
      const created = await expectOne(key, 201, { action: "key.created", orgId: owner.org_id, actor: { type: "user", id: owner.user_id, email }, target: { type: "key", id: key.json.key_id } });
      assert.deepEqual(created.changes.name, [null, "ci"]);
      assert.deepEqual(created.changes.spend_limit_usd, [null, 5]);
      const defaultKeyId = (await gw.request("GET", "/v1/auth/keys", as(owner.api_key))).json.data[0].key_id as string;
      const patched = await gw.request("PATCH", `/v1/auth/keys/${key.json.key_id}`, { ...as(owner.api_key), body: { name: "ci-prod", rpm: 10 } });
      const updated = await expectOne(patched, 200, { action: "key.updated", orgId: owner.org_id, actor: { type: "key", id: defaultKeyId }, target: { type: "key", id: key.json.key_id } });
      assert.deepEqual(updated.changes, { name: ["ci", "ci-prod"], rpm: [null, 10] });
      await expectOne(await gw.request("DELETE", `/v1/auth/keys/${key.json.key_id}`, as(owner.api_key)), 200, {
        action: "key.revoked",
        orgId: owner.org_id,
        actor: { type: "key", id: defaultKeyId },
        target: { type: "key", id: key.json.key_id },
      });

      // Organizations, invites and members.
      const me = { type: "user", id: owner.user_id, email };
      const org = await gw.request("POST", "/v1/orgs", { ...as(session), body: { name: "Audit Co" } });
      const orgId = org.json.id as string;
      assert.deepEqual((await expectOne(org, 201, { action: "org.created", orgId, actor: me, target: { type: "org", id: orgId } })).changes, { name: [null, "Audit Co"] });
      const renamed = await expectOne(await gw.request("PATCH", `/v1/orgs/${orgId}`, { ...as(session), body: { name: "Audit Corp" } }), 200, { action: "org.updated", orgId, actor: me });
      assert.deepEqual(renamed.changes, { name: ["Audit Co", "Audit Corp"] });
      const bob = await register();
      const inv = await gw.request("POST", `/v1/orgs/${orgId}/invites`, { ...as(session), body: { email: bob.email, role: "member" } });
      secrets.add(inv.json.token);
      const invited = await expectOne(inv, 201, { action: "invite.created", orgId, actor: me, target: { type: "invite", id: inv.json.id } });
      assert.deepEqual(invited.changes, { email: [null, bob.email], role: [null, "member"] });
      await expectOne(await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(bob.session_token)), 200, {
        action: "invite.accepted",
        orgId,
        actor: { type: "user", id: bob.user_id, email: bob.email },
        target: { type: "invite", id: inv.json.id },
      });
      const promoted = await expectOne(await gw.request("PATCH", `/v1/orgs/${orgId}/members/${bob.user_id}`, { ...as(session), body: { role: "admin" } }), 200, {
        action: "member.updated",
        orgId,
        actor: me,
        target: { type: "user", id: bob.user_id },
      });
      assert.deepEqual(promoted.changes, { role: ["member", "admin"] });
      await expectOne(await gw.request("DELETE", `/v1/orgs/${orgId}/members/${bob.user_id}`, as(session)), 200, { action: "member.removed", orgId, actor: me, target: { type: "user", id: bob.user_id } });
      const inv2 = await gw.request("POST", `/v1/orgs/${orgId}/invites`, { ...as(session), body: { email: "carol@example.com", role: "viewer" } });
      secrets.add(inv2.json.token);
      await expectOne(await gw.request("DELETE", `/v1/orgs/${orgId}/invites/${inv2.json.id}`, as(session)), 200, { action: "invite.revoked", orgId, actor: me, target: { type: "invite", id: inv2.json.id } });

      // Webhooks and the low-balance alert (with the organization's session).
      const inOrg = as(session, orgId);
      const hook = await gw.request("POST", "/v1/webhooks", { ...inOrg, body: { url: "http://127.0.0.1:9/hook", events: ["job.failed"] } });
      secrets.add(hook.json.secret);
      const hooked = await expectOne(hook, 201, { action: "webhook.created", orgId, actor: me, target: { type: "webhook", id: hook.json.id } });
      assert.deepEqual(hooked.changes, { url: [null, "http://127.0.0.1:9/hook"], events: [null, ["job.failed"]] });
      const rotated = await gw.request("POST", `/v1/webhooks/${hook.json.id}/rotate-secret`, inOrg);
      secrets.add(rotated.json.secret);
      await expectOne(rotated, 200, { action: "webhook.secret_rotated", orgId, actor: me, target: { type: "webhook", id: hook.json.id } });
      await expectOne(await gw.request("DELETE", `/v1/webhooks/${hook.json.id}`, inOrg), 200, { action: "webhook.deleted", orgId, actor: me });
      const alert = await expectOne(await gw.request("PUT", "/v1/billing/alerts", { ...inOrg, body: { low_balance_usd: 2.5 } }), 200, { action: "alert.updated", orgId, actor: me });
      assert.deepEqual(alert.changes, { low_balance_usd: [null, 2.5] });
      secrets.add((await gw.request("GET", "/v1/webhooks/secret", inOrg)).json.secret);

      // The operator: by organization and by user.
      const operator = { type: "operator", id: "operator" };
      const dep = await expectOne(await gw.request("POST", `/v1/admin/orgs/${orgId}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 12.5, reference: "wire 42" } }), 200, {
        action: "deposit.created",
        orgId,
        actor: operator,
        target: { type: "org", id: orgId },
      });
      assert.deepEqual([dep.changes.balance_usd, dep.changes.amount_usd, dep.changes.reference], [[0, 12.5], [null, 12.5], [null, "wire 42"]]);
      const tier = await expectOne(await gw.request("PUT", `/v1/admin/orgs/${orgId}/tier`, { token: ADMIN_TOKEN, body: { tier: 3 } }), 200, { action: "tier.updated", orgId, actor: operator });
      assert.deepEqual(tier.changes.tier_override, [null, 3]);
      const limits = await expectOne(await gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, { token: ADMIN_TOKEN, body: { rpm: 77 } }), 200, { action: "limits.updated", orgId, actor: operator });
      assert.deepEqual(limits.changes, { rpm: [null, 77] });
      await expectOne(await gw.request("POST", `/v1/admin/users/${owner.user_id}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 1 } }), 200, { action: "deposit.created", orgId: owner.org_id, actor: operator });
      await expectOne(await gw.request("PUT", `/v1/admin/users/${owner.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: null } }), 200, { action: "tier.updated", orgId: owner.org_id, actor: operator });
      await expectOne(await gw.request("PUT", `/v1/admin/users/${owner.user_id}/limits`, { token: ADMIN_TOKEN, body: { tpm: 1000 } }), 200, { action: "limits.updated", orgId: owner.org_id, actor: operator });

      // A Stripe top-up: the paid session's event credits the organization once; a repeated delivery writes nothing.
      const opened = await gw.request("POST", "/v1/billing/checkout", { ...inOrg, body: { amount_usd: 20 } });
      assert.equal(opened.status, 201, JSON.stringify(opened.json));
      const paid = { ...(stripe.sessions.get(opened.json.id) as FakeCheckoutSession), payment_status: "paid", status: "complete" };
      const payload = JSON.stringify(stripe.buildEvent("checkout.session.completed", paid));
      const deliver = () => gw.request("POST", "/v1/billing/stripe/webhook", { body: payload, headers: { "stripe-signature": Stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_WHSEC }) } });
      const topup = await expectOne(await deliver(), 200, { action: "topup.credited", orgId, actor: me, target: { type: "org", id: orgId } });
      assert.deepEqual([topup.changes.amount_usd, topup.changes.session_id], [[null, 20], [null, opened.json.id]]);
      const again = await deliver();
      assert.equal(again.status, 200);
      assert.equal((await db().selectFrom("audit_log").select("id").where("request_id", "=", again.headers.get("x-svc-request-id")!).execute()).length, 0, "a duplicate delivery writes none");
      assert.equal((await db().selectFrom("audit_log").select("id").where("action", "=", "topup.credited").where("org_id", "=", orgId).execute()).length, 1);

      // Deleting an (empty) organization: its last entry.
      const empty = await gw.request("POST", "/v1/orgs", { ...as(session), body: { name: "Short-lived" } });
      await expectOne(await gw.request("DELETE", `/v1/orgs/${empty.json.id}`, as(session)), 200, { action: "org.deleted", orgId: empty.json.id, actor: me });

      // The organization's log through the API holds them, newest first, with the answer's request ids.
      const log = await gw.request("GET", `/v1/orgs/${orgId}/audit-log?limit=100`, as(session));
      assert.equal(log.status, 200, JSON.stringify(log.json));
      const actions = log.json.data.map((e: { action: string }) => e.action);
      assert.deepEqual(actions, [
        "topup.credited",
        "limits.updated",
        "tier.updated",
        "deposit.created",
        "alert.updated",
        "webhook.deleted",
        "webhook.secret_rotated",
        "webhook.created",
        "invite.revoked",
        "invite.created",
        "member.removed",
        "member.updated",
        "invite.accepted",
        "invite.created",
        "org.updated",
        "org.created",
      ]);
      const first = log.json.data.at(-1);
      assert.deepEqual(
        { org_id: first.org_id, actor: first.actor, target: first.target, changes: first.changes },
        { org_id: orgId, actor: { type: "user", id: owner.user_id, email }, target: { type: "org", id: orgId }, changes: { name: [null, "Audit Co"] } },
      );
      assert.equal(first.request_id, org.headers.get("x-svc-request-id"));
      assert.ok(!Number.isNaN(Date.parse(first.at)) && first.at.endsWith("Z"));
    });

    test("a change that fails writes no entry", async () => {
      const t = await team("Failures");
      const o = t.users.owner.session_token;
      const memberKey = await gw.request("POST", "/v1/auth/keys", { ...as(t.users.member.session_token, t.id), body: { name: "mine" } });
      const adminKey = await gw.request("POST", "/v1/auth/keys", { ...as(t.users.admin.session_token, t.id), body: { name: "theirs" } });
      secrets.add(memberKey.json.api_key).add(adminKey.json.api_key);
      const before = await count();
      const fails: [Promise<TestResponse>, number, string][] = [
        [gw.request("POST", "/v1/auth/keys", { ...as(o, t.id), body: { name: "x".repeat(65) } }), 400, "invalid_request"],
        [gw.request("PATCH", `/v1/auth/keys/${adminKey.json.key_id}`, { ...as(memberKey.json.api_key), body: { name: "mine now" } }), 403, "forbidden_role"],
        [gw.request("DELETE", `/v1/auth/keys/${adminKey.json.key_id}`, as(memberKey.json.api_key)), 403, "forbidden_role"],
        [gw.request("DELETE", "/v1/auth/keys/key_doesnotexist", as(o, t.id)), 404, "key_not_found"],
        [gw.request("PATCH", `/v1/auth/keys/${adminKey.json.key_id}`, { ...as(o, t.id), body: { rpm: -1 } }), 400, "invalid_request"],
        [gw.request("PATCH", `/v1/orgs/${t.id}`, { ...as(t.users.viewer.session_token), body: { name: "Mine" } }), 403, "forbidden_role"],
        [gw.request("POST", `/v1/orgs/${t.id}/invites`, { ...as(o), body: { email: t.users.member.email, role: "viewer" } }), 409, "already_member"],
        [gw.request("PATCH", `/v1/orgs/${t.id}/members/${t.users.owner.user_id}`, { ...as(o), body: { role: "admin" } }), 409, "last_owner"],
        [gw.request("DELETE", `/v1/orgs/${t.id}/members/${t.users.admin.user_id}`, as(t.users.admin.api_key)), 404, "org_not_found"],
        [gw.request("POST", "/v1/invites/inv_nosuchtoken0000000000/accept", as(t.users.viewer.session_token)), 404, "invite_not_found"],
        [gw.request("POST", "/v1/webhooks", { ...as(o, t.id), body: { url: "ftp://example.com/x" } }), 400, "invalid_webhook_url"],
        [gw.request("POST", "/v1/webhooks", { ...as(t.users.member.session_token, t.id), body: { url: "http://127.0.0.1:9/x" } }), 403, "forbidden_role"],
        [gw.request("DELETE", "/v1/webhooks/we_nosuchendpoint", as(o, t.id)), 404, "webhook_not_found"],
        [gw.request("POST", "/v1/webhooks/we_nosuchendpoint/rotate-secret", as(o, t.id)), 404, "webhook_not_found"],
        [gw.request("PUT", "/v1/billing/alerts", { ...as(o, t.id), body: { low_balance_usd: -1 } }), 400, "invalid_request"],
        [gw.request("POST", `/v1/admin/orgs/${t.id}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: -5 } }), 400, "invalid_request"],
        [gw.request("POST", "/v1/admin/orgs/org_nosuchorg/deposits", { token: ADMIN_TOKEN, body: { amount_usd: 5 } }), 404, "org_not_found"],
        [gw.request("PUT", "/v1/admin/orgs/org_nosuchorg/tier", { token: ADMIN_TOKEN, body: { tier: 2 } }), 404, "org_not_found"],
        [gw.request("PUT", `/v1/admin/orgs/${t.id}/limits`, { token: ADMIN_TOKEN, body: { rpm: "many" } }), 400, "invalid_request"],
        [gw.request("POST", "/v1/auth/register", { body: { email: t.users.viewer.email, password: "another password" } }), 409, "email_taken"],
      ];
      secrets.add("another password");
      for (const [pending, status, code] of fails) {
        const res = await pending;
        assertError(res, status, code);
      }
      // An organization with money in it cannot be deleted: its transaction rolls back, with no entry.
      await gw.request("POST", `/v1/admin/orgs/${t.id}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 1 } });
      const afterDeposit = await count();
      assertError(await gw.request("DELETE", `/v1/orgs/${t.id}`, as(o)), 409, "org_not_empty");
      assert.equal(await count(), afterDeposit, "a refused deletion writes none");
      assert.equal(afterDeposit, before + 1, "only the deposit that succeeded wrote an entry");
    });

    test("an entry commits with its change or not at all", async () => {
      const ctx = { actor: { type: "operator" as const, id: "operator" }, requestId: "req_rolledback", ip: null, userAgent: null };
      await assert.rejects(
        inTransaction(db(), async (trx) => {
          await recordAudit(trx, ctx, { orgId: null, action: "org.updated", target: { type: "org", id: "org_x" } });
          throw new Error("the change failed");
        }),
        /the change failed/,
      );
      assert.equal((await db().selectFrom("audit_log").select("id").where("request_id", "=", "req_rolledback").execute()).length, 0);
      // Outside a transaction it refuses to write at all.
      await assert.rejects(recordAudit(db(), ctx, { orgId: null, action: "org.updated", target: { type: "org", id: "org_x" } }), /transaction/);
    });

    test("failed sign-ins are recorded with the email tried, never the password", async () => {
      const u = await register();
      const wrong = `wrong-${Math.random().toString(36).slice(2)}-password`;
      secrets.add(wrong);
      const bad = await gw.request("POST", "/v1/auth/login", { body: { email: u.email.toUpperCase(), password: wrong } });
      assertError(bad, 401, "auth_error");
      const known = await expectOne(bad, 401, { action: "session.failed", orgId: u.org_id, actor: { type: "user", id: u.user_id, email: u.email }, target: { type: "user", id: u.user_id } });
      assert.deepEqual(known.changes, {});
      const nobody = `nobody-${Date.now()}@example.com`;
      const unknown = await gw.request("POST", "/v1/auth/login", { body: { email: nobody, password: wrong } });
      await expectOne(unknown, 401, { action: "session.failed", orgId: null, actor: { type: "user", id: "unknown", email: nobody } });
      // The operator sees it (no organization); the user's organization's owner sees the one on their account.
      const ops = await gw.request("GET", `/v1/admin/audit-log?action=session.failed&limit=100`, { token: ADMIN_TOKEN });
      assert.equal(ops.status, 200, JSON.stringify(ops.json));
      const mine = ops.json.data.find((e: { request_id: string }) => e.request_id === unknown.headers.get("x-svc-request-id"));
      assert.deepEqual([mine.org_id, mine.actor], [null, { type: "user", id: "unknown", email: nobody }]);
      const own = await gw.request("GET", `/v1/orgs/${u.org_id}/audit-log?action=session.failed`, as(u.session_token));
      assert.deepEqual(own.json.data.map((e: { request_id: string }) => e.request_id), [bad.headers.get("x-svc-request-id")]);
    });

    test("owners and admins read the organization's log; members and viewers 403; other organizations 404", async () => {
      const t = await team("Readers");
      const path = `/v1/orgs/${t.id}/audit-log`;
      for (const role of ["owner", "admin"] as const) {
        const r = await gw.request("GET", path, as(t.users[role].session_token));
        assert.equal(r.status, 200, `${role}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.object, "list");
        assert.equal(r.json.has_more, false);
        assert.deepEqual(r.json.data.map((e: { action: string }) => e.action), ["invite.accepted", "invite.created", "invite.accepted", "invite.created", "invite.accepted", "invite.created", "org.created"]);
      }
      for (const role of ["member", "viewer"] as const) assertError(await gw.request("GET", path, as(t.users[role].session_token)), 403, "forbidden_role");
      // A key acts in its own organization with its role: an admin's key reads, a member's is refused.
      const adminKey = await gw.request("POST", "/v1/auth/keys", { ...as(t.users.admin.session_token, t.id), body: {} });
      const memberKey = await gw.request("POST", "/v1/auth/keys", { ...as(t.users.member.session_token, t.id), body: {} });
      secrets.add(adminKey.json.api_key).add(memberKey.json.api_key);
      assert.equal((await gw.request("GET", path, as(adminKey.json.api_key))).status, 200);
      assertError(await gw.request("GET", path, as(memberKey.json.api_key)), 403, "forbidden_role");
      // Another organization (of a key, or of a session not a member of it) and unknown ones: 404.
      assertError(await gw.request("GET", path, as(t.users.owner.api_key)), 404, "org_not_found");
      const stranger = await register();
      assertError(await gw.request("GET", path, as(stranger.session_token)), 404, "org_not_found");
      assertError(await gw.request("GET", "/v1/orgs/org_nosuchorganization/audit-log", as(t.users.owner.session_token)), 404, "org_not_found");
      // Nothing but reads: no route changes or deletes an entry.
      for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
        assert.equal((await gw.request(method, path, { ...as(t.users.owner.session_token), body: {} })).status, 405, method);
      }
      assert.equal((await gw.request("GET", "/v1/admin/audit-log", as(t.users.owner.api_key))).status, 401, "a customer's key is not the operator");
    });

    test("filters, pages and CSV", async () => {
      const t = await team("Filters");
      const o = as(t.users.owner.session_token, t.id);
      const keys: string[] = [];
      for (const name of ["a", "b", "c"]) {
        const k = await gw.request("POST", "/v1/auth/keys", { ...o, body: { name: `k,${name}` } });
        secrets.add(k.json.api_key);
        keys.push(k.json.key_id);
      }
      const path = `/v1/orgs/${t.id}/audit-log`;
      const created = await gw.request("GET", `${path}?action=key.created`, o);
      assert.deepEqual(created.json.data.map((e: { target: { id: string } }) => e.target.id), [...keys].reverse(), "newest first");
      const byAdmin = await gw.request("GET", `${path}?actor_id=${t.users.admin.user_id}`, o);
      assert.deepEqual(byAdmin.json.data.map((e: { action: string }) => e.action), ["invite.accepted"]);
      // Pages: limit and after walk the same entries.
      const all = (await gw.request("GET", `${path}?limit=100`, o)).json.data.map((e: { id: string }) => e.id);
      const seen: string[] = [];
      let after = "";
      for (;;) {
        const page = await gw.request("GET", `${path}?limit=4${after}`, o);
        seen.push(...page.json.data.map((e: { id: string }) => e.id));
        if (!page.json.has_more) break;
        after = `&after=${page.json.data.at(-1).id}`;
      }
      assert.deepEqual(seen, all);
      // Time bounds: a window in the future is empty, one around now holds everything.
      const now = Date.now();
      assert.deepEqual((await gw.request("GET", `${path}?from=${new Date(now + 3_600_000).toISOString()}`, o)).json.data, []);
      const today = new Date(now).toISOString().slice(0, 10);
      assert.equal((await gw.request("GET", `${path}?from=${today}&to=${today}&limit=100`, o)).json.data.length, all.length);
      assertError(await gw.request("GET", `${path}?from=yesterday`, o), 400, "invalid_request");
      assertError(await gw.request("GET", `${path}?limit=101`, o), 400, "invalid_request");
      assertError(await gw.request("GET", `${path}?format=xml`, o), 400, "invalid_request");

      // CSV: a header row, then the entries newest first; fields with commas are quoted.
      const csv = await gw.request("GET", `${path}?format=csv&action=key.created`, o);
      assert.equal(csv.status, 200);
      assert.match(csv.headers.get("content-type") ?? "", /^text\/csv/);
      assert.equal(csv.headers.get("x-svc-has-more"), "false");
      const lines = Buffer.from(csv.bytes).toString("utf8").trimEnd().split("\r\n");
      assert.equal(lines[0], "id,at,org_id,actor_type,actor_id,actor_email,action,target_type,target_id,request_id,ip,user_agent,changes");
      assert.equal(lines.length, 4);
      assert.ok(lines[1].startsWith(`${created.json.data[0].id},${created.json.data[0].at},${t.id},user,${t.users.owner.user_id},${t.users.owner.email},key.created,key,${keys[2]},req_`), lines[1]);
      assert.ok(lines[1].includes(`""name"":[null,""k,c""]`), lines[1]);
      const capped = await gw.request("GET", `${path}?format=csv&limit=2`, o);
      assert.equal(Buffer.from(capped.bytes).toString("utf8").trimEnd().split("\r\n").length, 3);
      assert.equal(capped.headers.get("x-svc-has-more"), "true");
    });

    test("the operator reads every organization's log, or one's", async () => {
      const a = await team("Operator A");
      const b = await team("Operator B");
      const both = await gw.request("GET", "/v1/admin/audit-log?action=org.created&limit=100", { token: ADMIN_TOKEN });
      assert.equal(both.status, 200, JSON.stringify(both.json));
      const orgs = both.json.data.map((e: { org_id: string }) => e.org_id);
      assert.ok(orgs.indexOf(b.id) >= 0 && orgs.indexOf(a.id) > orgs.indexOf(b.id), "both, newest first");
      assert.match(both.headers.get("x-svc-request-id") ?? "", /^req_/);
      const one = await gw.request("GET", `/v1/admin/audit-log?org_id=${a.id}&limit=100`, { token: ADMIN_TOKEN });
      assert.ok(one.json.data.length > 0 && one.json.data.every((e: { org_id: string }) => e.org_id === a.id));
      const csv = await gw.request("GET", `/v1/admin/audit-log?org_id=${b.id}&format=csv`, { token: ADMIN_TOKEN });
      assert.equal(Buffer.from(csv.bytes).toString("utf8").trimEnd().split("\r\n").length, 1 + 7);
      assert.equal((await gw.request("GET", "/v1/admin/audit-log", { token: "wrong-token-0123456789" })).status, 401);
    });

    test("no entry holds a secret the tests made", async () => {
      // Every entry, every column, as stored; and the API's JSON and CSV views of all of them.
      const rows = await db().selectFrom("audit_log").selectAll().execute();
      assert.ok(rows.length > 50, `entries written: ${rows.length}`);
      const api = await gw.request("GET", "/v1/admin/audit-log?format=csv", { token: ADMIN_TOKEN });
      const texts = [JSON.stringify(rows), Buffer.from(api.bytes).toString("utf8")];
      const list = [...secrets].filter((s) => typeof s === "string" && s.length >= 8);
      assert.ok(list.length > 30, `secrets made: ${list.length}`);
      for (const s of list) {
        for (const text of texts) {
          assert.ok(!text.includes(s), `a secret (${s.slice(0, 8)}...) is in the audit log`);
          assert.ok(!text.includes(hashSecret(s)), `a secret's hash (${s.slice(0, 8)}...) is in the audit log`);
        }
      }
      for (const text of texts) assert.doesNotMatch(text, /\b(gw|sess|whsec)_[A-Za-z0-9]{8}/, "nothing shaped like a secret");
    });
  });
}
