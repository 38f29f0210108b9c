/**
 * Organizations, members, roles and invites (D41) over HTTP on both databases: organizations and
 * `X-Svc-Org`, invites (token shown once, expiry, wrong email, already a member), the last owner, keys
 * that outlive their creator's membership, every role against every route class (a table), voices that
 * belong to the organization, usage by member, and 50 parallel calls from keys of different members on
 * one balance (balance equals ledger, never negative, per-key limits and the low-balance alert per
 * organization).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { startStripeFake, type StripeFake } from "../../fakes/stripe.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway, type TestResponse } from "../helpers/gateway.ts";

const ALPHA_VOICE = "pNx4Lq8TzR2vWk7HdM3s";
/** 12 characters of alpha-turbo speech: 0.20 USD per 1000 characters, 2,400 micro-USD a call. */
const SPEECH = { model: "alpha-turbo-v2-5", input: "Hello there.", voice_id: ALPHA_VOICE };
const SPEECH_MICROS = 2_400;
const STRIPE_KEY = "sk_test_51OrgsGatewayKey0123456789abcdefgh";
const STRIPE_WHSEC = "whsec_orgsTestSigningSecret0123456789ab";

type User = Awaited<ReturnType<TestGateway["register"]>>;
type Role = "owner" | "admin" | "member" | "viewer";

function assertError(r: TestResponse, status: number, code: string): void {
  assert.equal(r.status, status, JSON.stringify(r.json));
  assert.equal(r.json.error.code, code, JSON.stringify(r.json));
  if (status === 403) assert.equal(r.json.error.type, "permission_error");
}

for (const backend of BACKENDS) {
  describe(`organizations (D41) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let stripe: StripeFake;
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

    /** An organization made by a fresh owner, with a member of each other role joined by invite. */
    async function team(name = "Team"): Promise<{ id: string; users: Record<Role, User> }> {
      const owner = await gw.register();
      const made = await gw.request("POST", "/v1/orgs", { ...as(owner.session_token), body: { name } });
      assert.equal(made.status, 201, JSON.stringify(made.json));
      const id = made.json.id as string;
      const users = { owner } as Record<Role, User>;
      for (const role of ["admin", "member", "viewer"] as const) {
        users[role] = await join(id, owner.session_token, role);
      }
      return { id, users };
    }
    /** A fresh user invited to `orgId` by `inviter` with `role`, who accepts. */
    async function join(orgId: string, inviter: string, role: Role): Promise<User> {
      const u = await gw.register();
      const inv = await gw.request("POST", `/v1/orgs/${orgId}/invites`, { ...as(inviter), body: { email: u.email, role } });
      assert.equal(inv.status, 201, JSON.stringify(inv.json));
      const ok = await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(u.session_token));
      assert.equal(ok.status, 200, JSON.stringify(ok.json));
      return u;
    }
    /** A key of `orgId` made by `u`'s session (with `role`, default the creator's). */
    async function keyOf(u: User, orgId: string, body: Record<string, unknown> = {}): Promise<{ key_id: string; api_key: string; role: Role }> {
      const r = await gw.request("POST", "/v1/auth/keys", { ...as(u.session_token, orgId), body });
      assert.equal(r.status, 201, JSON.stringify(r.json));
      return r.json;
    }
    async function fund(orgId: string, usd: number) {
      const r = await gw.request("POST", `/v1/admin/orgs/${orgId}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: usd } });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const lim = await gw.request("PUT", `/v1/admin/orgs/${orgId}/limits`, {
        token: ADMIN_TOKEN,
        body: { rpm: 10_000, per_model_rpm: 10_000, audio_concurrent_per_provider: { alpha: 100, beta: 100 } },
      });
      assert.equal(lim.status, 200, JSON.stringify(lim.json));
    }
    async function assertBalanced(orgId: string): Promise<number> {
      const balance = await getBalance(db(), orgId);
      assert.ok(balance !== null && balance >= 0, "never negative");
      assert.equal(balance, await ledgerSum(db(), orgId), "balance equals the ledger sum");
      return balance;
    }

    test("register makes a user, a personal organization with the signup credit, and me names both", async () => {
      const u = await gw.register();
      assert.match(u.org_id, /^org_/);
      const me = await gw.request("GET", "/v1/auth/me", as(u.session_token));
      assert.deepEqual(
        { user_id: me.json.user_id, org_id: me.json.org_id, role: me.json.role, balance: me.json.balance_usd, orgs: me.json.orgs },
        { user_id: u.user_id, org_id: u.org_id, role: "owner", balance: 0.5, orgs: [{ org_id: u.org_id, name: u.email, role: "owner" }] },
      );
      const byKey = await gw.request("GET", "/v1/auth/me", as(u.api_key));
      assert.deepEqual([byKey.json.user_id, byKey.json.org_id, byKey.json.role], [u.user_id, u.org_id, "admin"], "a key acts as admin");
      const ledger = await gw.request("GET", "/v1/billing/ledger", as(u.api_key));
      assert.deepEqual([ledger.json.data[0].kind, ledger.json.data[0].org_id, ledger.json.data[0].user_id], ["signup_credit", u.org_id, u.user_id]);
    });

    test("a new organization: the caller owns it, balance 0 (no signup credit); X-Svc-Org picks it; a foreign one is 404", async () => {
      const u = await gw.register();
      const other = await gw.register();
      const made = await gw.request("POST", "/v1/orgs", { ...as(u.session_token), body: { name: "Acme Studio" } });
      assert.equal(made.status, 201);
      assert.deepEqual([made.json.name, made.json.role, made.json.balance_usd], ["Acme Studio", "owner", 0]);
      const org = made.json.id as string;
      assert.match(org, /^org_/);
      assert.deepEqual([made.json.member_count, made.json.personal], [1, false]);
      const list = await gw.request("GET", "/v1/orgs", as(u.session_token));
      assert.deepEqual(list.json.data.map((o: { id: string; role: string }) => [o.id, o.role]), [[u.org_id, "owner"], [org, "owner"]]);
      // Each with its member count and whether it is a personal organization (the list and one organization agree).
      type Listed = { member_count: number; personal: boolean };
      assert.deepEqual(list.json.data.map((o: Listed) => [o.member_count, o.personal]), [[1, true], [1, false]]);
      const one = await gw.request("GET", `/v1/orgs/${u.org_id}`, as(u.session_token));
      assert.deepEqual([one.json.member_count, one.json.personal], [1, true]);
      const me = await gw.request("GET", "/v1/auth/me", as(u.session_token, org));
      assert.deepEqual([me.json.org_id, me.json.balance_usd, me.json.role], [org, 0, "owner"]);
      assert.equal((await gw.request("GET", "/v1/billing/ledger", as(u.session_token, org))).json.data.length, 0);
      // Foreign or unknown organizations are 404, never 403: in the header, in the path, with a key.
      assertError(await gw.request("GET", "/v1/auth/me", as(other.session_token, org)), 404, "org_not_found");
      assertError(await gw.request("GET", "/v1/auth/me", as(u.session_token, "org_nope")), 404, "org_not_found");
      assertError(await gw.request("GET", `/v1/orgs/${org}`, as(other.session_token)), 404, "org_not_found");
      assertError(await gw.request("GET", `/v1/orgs/${org}/members`, as(u.api_key)), 404, "org_not_found");
      assertError(await gw.request("GET", "/v1/auth/me", as(u.api_key, org)), 404, "org_not_found");
      const renamed = await gw.request("PATCH", `/v1/orgs/${org}`, { ...as(u.session_token), body: { name: "Acme" } });
      assert.equal(renamed.json.name, "Acme");
      assertError(await gw.request("POST", "/v1/orgs", { ...as(u.session_token), body: { name: "" } }), 400, "invalid_request");
    });

    test("invites: token shown once, accepted by the invited email's session within 7 days, once", async () => {
      const { id, users } = await team();
      const bob = await gw.register();
      const carol = await gw.register();
      const inv = await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.admin.session_token), body: { email: bob.email.toUpperCase(), role: "member" } });
      assert.equal(inv.status, 201);
      assert.match(inv.json.token, /^inv_/);
      assert.equal(inv.json.email, bob.email.toLowerCase());
      assert.equal(Date.parse(inv.json.expires_at) - Date.parse(inv.json.created_at), 7 * 24 * 3600 * 1000);
      const listed = await gw.request("GET", `/v1/orgs/${id}/invites`, as(users.owner.session_token));
      assert.ok(!JSON.stringify(listed.json).includes(inv.json.token), "the token is shown only once");
      assert.equal(listed.json.data[0].id, inv.json.id);

      assertError(await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(carol.session_token)), 403, "invite_email_mismatch");
      assertError(await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(bob.api_key)), 403, "forbidden_role");
      const ok = await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(bob.session_token));
      assert.deepEqual([ok.status, ok.json.org_id, ok.json.user_id, ok.json.role], [200, id, bob.user_id, "member"]);
      assertError(await gw.request("POST", `/v1/invites/${inv.json.token}/accept`, as(bob.session_token)), 404, "invite_not_found");
      assertError(await gw.request("POST", "/v1/invites/inv_nope_nope/accept", as(bob.session_token)), 404, "invite_not_found");
      // Already a member: refused at invite time, and at accept time for an invite made before joining.
      assertError(await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.owner.session_token), body: { email: bob.email, role: "viewer" } }), 409, "already_member");
      const dave = await gw.register();
      const first = await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.owner.session_token), body: { email: dave.email, role: "viewer" } });
      const second = await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.owner.session_token), body: { email: dave.email, role: "member" } });
      assert.equal((await gw.request("POST", `/v1/invites/${first.json.token}/accept`, as(dave.session_token))).status, 200);
      assertError(await gw.request("POST", `/v1/invites/${second.json.token}/accept`, as(dave.session_token)), 409, "already_member");
      // Expiry: an invite past its 7 days is refused.
      const erin = await gw.register();
      const late = await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.owner.session_token), body: { email: erin.email, role: "member" } });
      await db().updateTable("invites").set({ expires_at: Date.now() - 1 }).where("id", "=", late.json.id).execute();
      assertError(await gw.request("POST", `/v1/invites/${late.json.token}/accept`, as(erin.session_token)), 404, "invite_not_found");
      assertError(await gw.request("GET", "/v1/auth/me", as(erin.session_token, id)), 404, "org_not_found");
      // Admins invite below admin; owners any role; members nobody.
      assertError(await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.admin.session_token), body: { email: "x@example.com", role: "admin" } }), 403, "forbidden_role");
      assertError(await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.member.session_token), body: { email: "x@example.com", role: "viewer" } }), 403, "forbidden_role");
      assert.equal((await gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users.owner.session_token), body: { email: "x@example.com", role: "owner" } })).status, 201);
      const revoke = await gw.request("DELETE", `/v1/orgs/${id}/invites/${late.json.id}`, as(users.owner.session_token));
      assert.deepEqual(revoke.json, { id: late.json.id, deleted: true });
    });

    test("the last owner cannot leave or be demoted; roles change within the rules", async () => {
      const { id, users } = await team();
      const { owner, admin, member, viewer } = users;
      assertError(await gw.request("PATCH", `/v1/orgs/${id}/members/${owner.user_id}`, { ...as(owner.session_token), body: { role: "admin" } }), 409, "last_owner");
      assertError(await gw.request("DELETE", `/v1/orgs/${id}/members/${owner.user_id}`, as(owner.session_token)), 409, "last_owner");
      assertError(await gw.request("PATCH", `/v1/orgs/${id}/members/${owner.user_id}`, { ...as(admin.session_token), body: { role: "member" } }), 403, "forbidden_role");
      assertError(await gw.request("PATCH", `/v1/orgs/${id}/members/${member.user_id}`, { ...as(admin.session_token), body: { role: "admin" } }), 403, "forbidden_role");
      const down = await gw.request("PATCH", `/v1/orgs/${id}/members/${member.user_id}`, { ...as(admin.session_token), body: { role: "viewer" } });
      assert.equal(down.json.role, "viewer");
      assertError(await gw.request("PATCH", `/v1/orgs/${id}/members/${viewer.user_id}`, { ...as(member.session_token), body: { role: "member" } }), 403, "forbidden_role");
      assertError(await gw.request("PATCH", `/v1/orgs/${id}/members/usr_nobody`, { ...as(owner.session_token), body: { role: "member" } }), 404, "member_not_found");
      // A second owner: now the first may step down or leave.
      assert.equal((await gw.request("PATCH", `/v1/orgs/${id}/members/${admin.user_id}`, { ...as(owner.session_token), body: { role: "owner" } })).json.role, "owner");
      assert.equal((await gw.request("DELETE", `/v1/orgs/${id}/members/${owner.user_id}`, as(owner.session_token))).json.removed, true);
      assertError(await gw.request("GET", `/v1/orgs/${id}`, as(owner.session_token)), 404, "org_not_found");
      assertError(await gw.request("DELETE", `/v1/orgs/${id}/members/${admin.user_id}`, as(admin.session_token)), 409, "last_owner");
      const members = await gw.request("GET", `/v1/orgs/${id}/members`, as(viewer.session_token));
      const counted = await gw.request("GET", `/v1/orgs/${id}`, as(viewer.session_token));
      assert.deepEqual([counted.json.member_count, counted.json.personal], [3, false], "the count follows who left");
      assert.deepEqual(
        members.json.data.map((m: { user_id: string; role: string }) => [m.user_id, m.role]),
        [[admin.user_id, "owner"], [member.user_id, "viewer"], [viewer.user_id, "viewer"]],
      );
      // A member leaves by itself.
      assert.equal((await gw.request("DELETE", `/v1/orgs/${id}/members/${viewer.user_id}`, as(viewer.session_token))).status, 200);
    });

    test("two owners demoting or removing each other at once: exactly one succeeds, an owner always remains", async () => {
      for (const action of ["demote", "remove"] as const) {
        const { id, users } = await team();
        const second = users.admin;
        assert.equal((await gw.request("PATCH", `/v1/orgs/${id}/members/${second.user_id}`, { ...as(users.owner.session_token), body: { role: "owner" } })).status, 200);
        const hit = (by: User, target: User) =>
          action === "demote"
            ? gw.request("PATCH", `/v1/orgs/${id}/members/${target.user_id}`, { ...as(by.session_token), body: { role: "member" } })
            : gw.request("DELETE", `/v1/orgs/${id}/members/${target.user_id}`, as(by.session_token));
        const [a, b] = await Promise.all([hit(users.owner, second), hit(second, users.owner)]);
        const statuses = [a.status, b.status].sort();
        // The loser finds itself no longer owner (403), no longer a member (404), or the other as the last owner (409).
        assert.equal(statuses[0], 200, `${action}: ${JSON.stringify([a.json, b.json])}`);
        assert.ok([403, 404, 409].includes(statuses[1]), `${action}: ${JSON.stringify([a.json, b.json])}`);
        const owners = await db().selectFrom("memberships").select("user_id").where("org_id", "=", id).where("role", "=", "owner").execute();
        assert.equal(owners.length, 1, `${action}: one owner left`);
      }
    });

    test("an owner deletes an empty organization: its members and keys lose it; its history stays; never one with money or a personal one", async () => {
      const { id, users } = await team();
      const key = await keyOf(users.member, id);
      assertError(await gw.request("DELETE", `/v1/orgs/${id}`, as(users.admin.session_token)), 403, "forbidden_role");
      assertError(await gw.request("DELETE", `/v1/orgs/${id}`, as((await keyOf(users.owner, id)).api_key)), 403, "forbidden_role");
      assertError(await gw.request("DELETE", `/v1/orgs/${users.owner.org_id}`, as(users.owner.session_token)), 409, "personal_org");
      // A balance of exactly one call: refused until the call spends it.
      await gw.request("POST", `/v1/admin/orgs/${id}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: SPEECH_MICROS / 1e6 } });
      assertError(await gw.request("DELETE", `/v1/orgs/${id}`, as(users.owner.session_token)), 409, "org_not_empty");
      assert.equal((await gw.request("POST", "/v1/audio/speech", { token: key.api_key, body: SPEECH })).status, 200);
      assert.equal(await assertBalanced(id), 0);
      const gone = await gw.request("DELETE", `/v1/orgs/${id}`, as(users.owner.session_token));
      assert.deepEqual([gone.status, gone.json], [200, { id, deleted: true }]);
      for (const u of Object.values(users)) assertError(await gw.request("GET", `/v1/orgs/${id}`, as(u.session_token)), 404, "org_not_found");
      assertError(await gw.request("GET", "/v1/auth/me", as(key.api_key)), 401, "auth_error");
      assert.equal((await gw.request("GET", "/v1/auth/me", as(users.member.session_token))).json.org_id, users.member.org_id, "sessions go on in the personal organization");
      const seen = await gw.request("GET", `/v1/admin/orgs/${id}/ledger`, { token: ADMIN_TOKEN });
      assert.deepEqual(seen.json.data.map((e: { kind: string }) => e.kind), ["charge", "hold_release", "hold", "deposit"], "the operator still sees its ledger");
      await assertBalanced(id);
    });

    test("a key belongs to the organization and outlives its creator's membership", async () => {
      const { id, users } = await team();
      await fund(id, 5);
      const k = await keyOf(users.member, id);
      assert.equal(k.role, "member");
      const before = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(before.status, 200);
      assert.equal((await gw.request("DELETE", `/v1/orgs/${id}/members/${users.member.user_id}`, as(users.admin.session_token))).status, 200);
      const after = await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH });
      assert.equal(after.status, 200, "the key keeps working");
      const me = await gw.request("GET", "/v1/auth/me", as(k.api_key));
      assert.deepEqual([me.json.org_id, me.json.user_id], [id, users.member.user_id]);
      const keys = await gw.request("GET", "/v1/auth/keys", as(users.owner.session_token, id));
      const row = keys.json.data.find((r: { key_id: string }) => r.key_id === k.key_id);
      assert.deepEqual([row.created_by, row.role], [users.member.user_id, "member"]);
      const records = await gw.request("GET", `/v1/requests?user_id=${users.member.user_id}`, as(users.owner.session_token, id));
      assert.equal(records.json.data.length, 2);
      assert.ok(records.json.data.every((r: { org_id: string; user_id: string }) => r.org_id === id && r.user_id === users.member.user_id));
      await assertBalanced(id);
    });

    test("every role against every route class (403 forbidden_role, permission_error)", async () => {
      const { id, users } = await team();
      await fund(id, 20);
      const keys: Record<Exclude<Role, "owner">, string> = {
        admin: (await keyOf(users.owner, id, { role: "admin" })).api_key,
        member: (await keyOf(users.owner, id, { role: "member" })).api_key,
        viewer: (await keyOf(users.owner, id, { role: "viewer" })).api_key,
      };
      const othersKey = await keyOf(users.owner, id, { name: "the owner's" });
      const ok = (status: number) => status >= 200 && status < 300;
      /** A route class: one call, made as `role` (a session with X-Svc-Org, or a key of that role for model calls). */
      const classes: { name: string; allowed: Role[]; call: (role: Role) => Promise<TestResponse> }[] = [
        { name: "read the ledger", allowed: ["owner", "admin", "member", "viewer"], call: (r) => gw.request("GET", "/v1/billing/ledger", as(users[r].session_token, id)) },
        { name: "read usage", allowed: ["owner", "admin", "member", "viewer"], call: (r) => gw.request("GET", "/v1/usage?group_by=user", as(users[r].session_token, id)) },
        { name: "read jobs", allowed: ["owner", "admin", "member", "viewer"], call: (r) => gw.request("GET", "/v1/jobs", as(users[r].session_token, id)) },
        { name: "list members", allowed: ["owner", "admin", "member", "viewer"], call: (r) => gw.request("GET", `/v1/orgs/${id}/members`, as(users[r].session_token)) },
        {
          name: "call a model (a key of the role; an owner's key acts as admin)",
          allowed: ["owner", "admin", "member"],
          call: (r) => gw.request("POST", "/v1/audio/speech", { token: r === "owner" ? keys.admin : keys[r], body: SPEECH }),
        },
        { name: "make an own key", allowed: ["owner", "admin", "member"], call: (r) => gw.request("POST", "/v1/auth/keys", { ...as(users[r].session_token, id), body: { name: r } }) },
        {
          name: "change another member's key",
          allowed: ["owner", "admin"],
          call: (r) => gw.request("PATCH", `/v1/auth/keys/${othersKey.key_id}`, { ...as(users[r].session_token, id), body: { name: `renamed by ${r}` } }),
        },
        {
          name: "webhooks",
          allowed: ["owner", "admin"],
          call: (r) => gw.request("POST", "/v1/webhooks", { ...as(users[r].session_token, id), body: { url: `http://127.0.0.1:9/${r}` } }),
        },
        { name: "the webhook secret", allowed: ["owner", "admin"], call: (r) => gw.request("GET", "/v1/webhooks/secret", as(users[r].session_token, id)) },
        { name: "alerts", allowed: ["owner", "admin"], call: (r) => gw.request("PUT", "/v1/billing/alerts", { ...as(users[r].session_token, id), body: { low_balance_usd: 1 } }) },
        { name: "top-ups", allowed: ["owner", "admin"], call: (r) => gw.request("POST", "/v1/billing/checkout", { ...as(users[r].session_token, id), body: { amount_usd: 10 } }) },
        { name: "rename the organization", allowed: ["owner", "admin"], call: (r) => gw.request("PATCH", `/v1/orgs/${id}`, { ...as(users[r].session_token), body: { name: `Team ${r}` } }) },
        {
          name: "invite a member",
          allowed: ["owner", "admin"],
          call: (r) => gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users[r].session_token), body: { email: `${r}-${Date.now()}@example.com`, role: "member" } }),
        },
        {
          name: "invite an admin (the roles of admins)",
          allowed: ["owner"],
          call: (r) => gw.request("POST", `/v1/orgs/${id}/invites`, { ...as(users[r].session_token), body: { email: `a-${r}-${Date.now()}@example.com`, role: "admin" } }),
        },
      ];
      const table: string[] = [];
      for (const c of classes) {
        for (const role of ["owner", "admin", "member", "viewer"] as const) {
          const r = await c.call(role);
          const allowed = c.allowed.includes(role);
          table.push(`${c.name} as ${role}: ${r.status}`);
          if (allowed) assert.ok(ok(r.status), `${c.name} as ${role}: ${r.status} ${JSON.stringify(r.json)}`);
          else {
            assert.equal(r.status, 403, `${c.name} as ${role}: ${r.status} ${JSON.stringify(r.json)}`);
            assertError(r, 403, "forbidden_role");
          }
        }
      }
      // A key asking for more than its creator's role is refused; an owner's keys act as admin.
      assertError(await gw.request("POST", "/v1/auth/keys", { ...as(users.member.session_token, id), body: { role: "admin" } }), 403, "forbidden_role");
      assertError(await gw.request("POST", "/v1/auth/keys", { ...as(keys.viewer), body: {} }), 403, "forbidden_role");
      assert.equal((await keyOf(users.owner, id)).role, "admin");
      // Nothing refused moved money.
      await assertBalanced(id);
      assert.equal(table.length, classes.length * 4);
    });

    test("voices belong to the organization: every member's key may use them, other organizations get 403 voice_not_owned", async () => {
      const { id, users } = await team();
      await fund(id, 20);
      const ownerKey = await keyOf(users.owner, id);
      const design = await gw.request("POST", "/v1/audio/voice-design", {
        token: ownerKey.api_key,
        body: { description: "A calm, warm narrator voice with a slight rasp.", name: "Team voice" },
      });
      assert.equal(design.status, 200, JSON.stringify(design.json));
      const voiceId = design.json.voice_id as string;
      const memberKey = await keyOf(users.member, id);
      const mine = await gw.request("POST", "/v1/audio/speech", { token: memberKey.api_key, body: { model: "beta-speech-hd", input: "Hello.", voice_id: voiceId } });
      assert.equal(mine.status, 200, JSON.stringify(mine.json));
      const personal = await gw.request("POST", "/v1/audio/speech", { token: users.member.api_key, body: { model: "beta-speech-hd", input: "Hello.", voice_id: voiceId } });
      assertError(personal, 403, "voice_not_owned");
    });

    test("50 parallel calls from keys of different members on one balance: exact, never negative; key limits and the alert per organization", async () => {
      const { id, users } = await team();
      // 30 calls' worth and a little: some of the 50 must be refused for the balance.
      const start = 30 * SPEECH_MICROS + 1_000;
      await fund(id, start / 1e6);
      const hook = await gw.request("POST", "/v1/webhooks", { ...as(users.owner.session_token, id), body: { url: "http://127.0.0.1:9/hook", events: ["balance.low"] } });
      assert.equal(hook.status, 201);
      const alert = await gw.request("PUT", "/v1/billing/alerts", { ...as(users.admin.session_token, id), body: { low_balance_usd: (10 * SPEECH_MICROS) / 1e6 } });
      assert.equal(alert.status, 200, JSON.stringify(alert.json));
      const makers: User[] = [users.owner, users.admin, users.member, await join(id, users.owner.session_token, "member"), await join(id, users.owner.session_token, "member")];
      const keys: { api_key: string; key_id: string; user: string; limited: boolean }[] = [];
      for (const [i, u] of makers.entries()) {
        for (let j = 0; j < 2; j++) {
          // One key may spend 2.5 calls' worth: at most 2 of its calls pass.
          const limited = i === 2 && j === 0;
          const k = await keyOf(u, id, limited ? { spend_limit_usd: (2.5 * SPEECH_MICROS) / 1e6, spend_limit_period: "total" } : {});
          keys.push({ ...k, user: u.user_id, limited });
        }
      }
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => keys[i % keys.length]).map(async (k) => ({ k, r: await gw.request("POST", "/v1/audio/speech", { token: k.api_key, body: SPEECH }) })),
      );
      const statuses = answers.map((a) => a.r.status);
      const ok = answers.filter((a) => a.r.status === 200);
      for (const a of answers.filter((x) => x.r.status !== 200)) {
        assert.equal(a.r.status, 402, JSON.stringify(a.r.json));
        assert.ok(["billing_error", "key_spend_limit"].includes(a.r.json.error.code), a.r.json.error.code);
      }
      const limitedOk = ok.filter((a) => a.k.limited).length;
      assert.ok(limitedOk <= 2, `the limited key passed ${limitedOk} calls`);
      // Each call holds and charges exactly its price, and 45 calls come from keys without a limit: the
      // balance admits exactly 30 of them.
      assert.equal(ok.length, 30, `succeeded: ${ok.length} (${statuses.join(",")})`);
      const balance = await assertBalanced(id);
      assert.equal(balance, start - ok.length * SPEECH_MICROS, "exactly the successful calls were charged");
      assert.equal(await getBalance(db(), users.owner.org_id), 500_000, "the members' personal organizations are untouched");

      // The usage log names each member; the summary by member adds up.
      const byUser = await gw.request("GET", "/v1/usage?group_by=user", as(users.viewer.session_token, id));
      const expected = new Map<string, number>();
      for (const a of ok) expected.set(a.k.user, (expected.get(a.k.user) ?? 0) + 1);
      assert.deepEqual(
        Object.fromEntries(byUser.json.data.filter((g: { cost_usd: number }) => g.cost_usd > 0).map((g: { group: string; cost_usd: number }) => [g.group, Math.round(g.cost_usd * 1e6)])),
        Object.fromEntries([...expected].map(([u, n]) => [u, n * SPEECH_MICROS])),
      );
      // The alert fell once for the organization.
      const state = await gw.request("GET", "/v1/billing/alerts", as(users.viewer.session_token, id));
      assert.equal(state.json.armed, false, "balance.low was sent");
      await new Promise((r) => setTimeout(r, 300));
      const events = await db().selectFrom("webhook_events").select("account_id").where("type", "=", "balance.low").where("account_id", "=", id).execute();
      assert.equal(events.length, 1);
    });

    test("a Stripe top-up credits the organization that opened the checkout, naming the member who paid", async () => {
      const { id, users } = await team();
      const opened = await gw.request("POST", "/v1/billing/checkout", { ...as(users.admin.session_token, id), body: { amount_usd: 25 } });
      assert.equal(opened.status, 201, JSON.stringify(opened.json));
      const paid = await stripe.pay(opened.json.id);
      assert.deepEqual(paid.deliveries.map((d) => d.status), [200]);
      assert.equal(await assertBalanced(id), 25_000_000, "the organization got the deposit");
      assert.equal(await assertBalanced(users.admin.org_id), 500_000, "the payer's personal organization did not");
      const ledger = await gw.request("GET", "/v1/billing/ledger", as(users.viewer.session_token, id));
      assert.deepEqual(
        [ledger.json.data[0].kind, ledger.json.data[0].reference, ledger.json.data[0].org_id, ledger.json.data[0].user_id],
        ["deposit", opened.json.id, id, users.admin.user_id],
      );
      assert.equal((await gw.request("GET", "/v1/auth/me", as(users.member.session_token, id))).json.tier, 1, "the tier follows the organization's deposits");
    });

    test("operator routes address organizations; the user routes keep working on the personal one", async () => {
      const { id, users } = await team("Operators' view");
      const got = await gw.request("GET", `/v1/admin/orgs/${id}`, { token: ADMIN_TOKEN });
      assert.equal(got.status, 200);
      assert.deepEqual([got.json.org_id, got.json.name, got.json.members], [id, "Operators' view", 4]);
      const found = await gw.request("GET", `/v1/admin/orgs?q=${encodeURIComponent("operators")}`, { token: ADMIN_TOKEN });
      assert.ok(found.json.data.some((o: { org_id: string }) => o.org_id === id));
      const tier = await gw.request("PUT", `/v1/admin/orgs/${id}/tier`, { token: ADMIN_TOKEN, body: { tier: 3 } });
      assert.deepEqual(tier.json, { org_id: id, tier: 3, tier_override: 3 });
      assert.equal((await gw.request("GET", "/v1/auth/me", as(users.member.session_token, id))).json.tier, 3);
      assert.equal((await gw.request("GET", "/v1/auth/me", as(users.member.session_token))).json.tier, 0, "the member's personal organization keeps its own");
      const dep = await gw.request("POST", `/v1/admin/users/${users.member.user_id}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 1 } });
      assert.deepEqual([dep.json.user_id, dep.json.org_id, dep.json.balance_usd], [users.member.user_id, users.member.org_id, 1.5]);
      assertError(await gw.request("GET", "/v1/admin/orgs/org_nope", { token: ADMIN_TOKEN }), 404, "org_not_found");
      assertError(await gw.request("POST", "/v1/admin/users/usr_nope/deposits", { token: ADMIN_TOKEN, body: { amount_usd: 1 } }), 404, "user_not_found");
      const user = await gw.request("GET", `/v1/admin/users/${users.member.user_id}`, { token: ADMIN_TOKEN });
      assert.deepEqual([user.json.user_id, user.json.org_id, user.json.email], [users.member.user_id, users.member.org_id, users.member.email]);
    });
  });
}
