/**
 * The SDK's organization calls (D41: `client.orgs`, `.members`, `.invites`, `client.invites.accept`, the
 * `org` option and `withOrg`, `client.admin.orgs`) end to end against a real gateway on loopback, on
 * SQLite and PostgreSQL: an organization made, a member invited and accepted with a second user's
 * session, members listed, a role changed, a member removed; refusals thrown as their classes (403
 * `forbidden_role`, 404 `org_not_found`, 409 `last_owner`, `personal_org`). Every answer the SDK gets is
 * also checked against the gateway's /openapi.json (helpers/document-check.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConflictError, Gateway, NotFoundError, PermissionDeniedError } from "../../packages/client/src/index.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { documentChecker } from "../helpers/document-check.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

type User = Awaited<ReturnType<TestGateway["register"]>>;

/** Asserts that `call` rejects with `cls` carrying `status` and the D1 `code`. */
async function rejectsWith(call: Promise<unknown>, cls: new (...args: never[]) => Error, status: number, code: string): Promise<void> {
  await assert.rejects(call, (err: Error & { status?: number; code?: string }) => {
    assert.ok(err instanceof cls, `${err.name}: ${err.message}`);
    assert.deepEqual([err.status, err.code], [status, code], err.message);
    return true;
  });
}

for (const backend of BACKENDS) {
  describe(`the SDK's organization calls against a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    /** The SDK for `token` (and `org`), with every answer checked against the published document. */
    let sdk: (token: string, org?: string) => Gateway;

    before(async () => {
      gw = await startGateway(backend.name);
      const doc = await (await fetch(`${gw.url}/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
      const checker = documentChecker(doc as Parameters<typeof documentChecker>[0]);
      const checked = async (request: Request): Promise<Response> => {
        const response = await fetch(request);
        const type = response.headers.get("content-type") ?? "";
        const body: unknown = type.includes("json") ? await response.clone().json() : null;
        const problems = checker.check(request.method, request.url, response.status, type, body);
        assert.deepEqual(problems, [], `${request.method} ${request.url}: answer differs from /openapi.json`);
        return response;
      };
      sdk = (token, org) => new Gateway({ baseUrl: gw.url, apiKey: token, org, maxRetries: 0, fetch: checked });
    });
    after(async () => {
      await gw?.close();
    });

    test("create, invite, accept with the second user's session, list members, change a role, remove", async () => {
      const alice = await gw.register();
      const bob = await gw.register();
      const a = sdk(alice.session_token);
      const b = sdk(bob.session_token);

      const org = await a.orgs.create({ name: "Acme Studio" });
      assert.deepEqual([org.object, org.name, org.role, org.balance_usd], ["organization", "Acme Studio", "owner", 0]);
      assert.match(org.id, /^org_/);
      assert.deepEqual((await a.orgs.list()).data.map((o) => [o.id, o.role]), [[alice.org_id, "owner"], [org.id, "owner"]]);
      assert.equal((await a.orgs.get(org.id)).name, "Acme Studio");
      assert.equal((await a.orgs.update(org.id, { name: "Acme" })).name, "Acme");

      const invite = await a.orgs.invites.create(org.id, { email: bob.email, role: "member" });
      assert.match(invite.token, /^inv_/);
      assert.deepEqual([invite.org_id, invite.email, invite.role, invite.expired], [org.id, bob.email, "member", false]);
      const pending = await a.orgs.invites.list(org.id);
      assert.deepEqual(pending.data.map((i) => i.id), [invite.id]);
      assert.ok(!("token" in pending.data[0]), "listed invites never carry their token");

      const joined = await b.invites.accept(invite.token);
      assert.deepEqual([joined.org_id, joined.user_id, joined.email, joined.role], [org.id, bob.user_id, bob.email, "member"]);
      assert.equal((await a.orgs.invites.list(org.id)).data.length, 0, "an accepted invite is no longer pending");
      await rejectsWith(b.invites.accept(invite.token), NotFoundError, 404, "invite_not_found");

      const members = await b.orgs.members.list(org.id);
      assert.deepEqual(members.data.map((m) => [m.user_id, m.role]), [[alice.user_id, "owner"], [bob.user_id, "member"]]);
      assert.deepEqual((await b.orgs.list()).data.map((o) => [o.id, o.role]), [[bob.org_id, "owner"], [org.id, "member"]]);

      const demoted = await a.orgs.members.update(org.id, bob.user_id, { role: "viewer" });
      assert.deepEqual([demoted.user_id, demoted.role], [bob.user_id, "viewer"]);
      // A viewer reads but may not invite, rename or make keys (403 forbidden_role).
      assert.equal((await b.orgs.members.list(org.id)).data.length, 2);
      await rejectsWith(b.orgs.invites.create(org.id, { email: "carol@example.com", role: "viewer" }), PermissionDeniedError, 403, "forbidden_role");
      await rejectsWith(b.orgs.update(org.id, { name: "Mine" }), PermissionDeniedError, 403, "forbidden_role");
      await rejectsWith(b.orgs.invites.list(org.id), PermissionDeniedError, 403, "forbidden_role");
      await rejectsWith(b.withOrg(org.id).keys.create({ name: "viewer key" }), PermissionDeniedError, 403, "forbidden_role");
      await rejectsWith(a.orgs.members.update(org.id, alice.user_id, { role: "admin" }), ConflictError, 409, "last_owner");

      const removed = await a.orgs.members.remove(org.id, bob.user_id);
      assert.deepEqual(removed, { org_id: org.id, user_id: bob.user_id, removed: true });
      assert.deepEqual((await a.orgs.members.list(org.id)).data.map((m) => m.user_id), [alice.user_id]);
      // Once removed, the organization is unknown to bob: 404, never 403.
      await rejectsWith(b.orgs.get(org.id), NotFoundError, 404, "org_not_found");
      await rejectsWith(b.withOrg(org.id).auth.me(), NotFoundError, 404, "org_not_found");
      await rejectsWith(a.orgs.members.remove(org.id, bob.user_id), NotFoundError, 404, "member_not_found");
    });

    test("the org option and withOrg send X-Svc-Org: a session acts for any of its organizations, a key for its own only", async () => {
      const alice = await gw.register();
      const a = sdk(alice.session_token);
      const org = await a.orgs.create({ name: "Side Project" });

      assert.equal(a.org, null);
      const team = a.withOrg(org.id);
      assert.equal(team.org, org.id);
      assert.equal(a.org, null, "withOrg leaves the client it was called on unchanged");
      const me = await team.auth.me();
      assert.deepEqual([me.org_id, me.org_name, me.role, me.balance_usd], [org.id, "Side Project", "owner", 0]);
      assert.equal((await a.auth.me()).org_id, alice.org_id, "without org: the personal organization");
      assert.equal((await sdk(alice.session_token, org.id).auth.me()).org_id, org.id, "the org option does the same");
      assert.equal((await team.withOrg(null).auth.me()).org_id, alice.org_id, "withOrg(null): back to the default");

      // A key made while acting for the organization belongs to it, and acts there without any header.
      const key = await team.keys.create({ name: "ci" });
      const byKey = sdk(key.api_key);
      assert.equal((await byKey.auth.me()).org_id, org.id);
      assert.deepEqual((await byKey.orgs.list()).data.map((o) => o.id), [org.id], "a key sees its own organization only");
      assert.equal((await byKey.withOrg(org.id).auth.me()).org_id, org.id, "naming its own organization is fine");
      // A key that names another organization, or any org id unknown to a session: 404 org_not_found.
      await rejectsWith(byKey.withOrg(alice.org_id).auth.me(), NotFoundError, 404, "org_not_found");
      await rejectsWith(byKey.orgs.get(alice.org_id), NotFoundError, 404, "org_not_found");
      await rejectsWith(a.withOrg("org_doesnotexist").auth.me(), NotFoundError, 404, "org_not_found");
      await rejectsWith(a.orgs.get("org_doesnotexist"), NotFoundError, 404, "org_not_found");
      await rejectsWith(a.orgs.members.list("org_doesnotexist"), NotFoundError, 404, "org_not_found");

      // Invites are accepted with a session, never a key.
      const bob = await gw.register();
      const invite = await team.orgs.invites.create(org.id, { email: bob.email, role: "viewer" });
      await rejectsWith(sdk(bob.api_key).invites.accept(invite.token), PermissionDeniedError, 403, "forbidden_role");
      await rejectsWith(a.invites.accept(invite.token), PermissionDeniedError, 403, "invite_email_mismatch");
      assert.deepEqual(await a.orgs.invites.revoke(org.id, invite.id), { id: invite.id, deleted: true });
      await rejectsWith(sdk(bob.session_token).invites.accept(invite.token), NotFoundError, 404, "invite_not_found");

      // Only an empty organization goes, never a personal one.
      await rejectsWith(a.orgs.delete(alice.org_id), ConflictError, 409, "personal_org");
      assert.deepEqual(await a.orgs.delete(org.id), { id: org.id, deleted: true });
      await rejectsWith(byKey.auth.me(), Error, 401, "auth_error");
    });

    test("admin.orgs: find, read, credit, tier, limits, ledger, usage and requests of an organization", async () => {
      const owner: User = await gw.register();
      const org = await sdk(owner.session_token).orgs.create({ name: `Operator Co ${owner.user_id}` });
      const admin = sdk(ADMIN_TOKEN).admin;

      const found = [];
      for await (const o of admin.orgs.list({ q: `operator co ${owner.user_id}`, limit: 5 })) found.push(o);
      assert.deepEqual(found.map((o) => [o.org_id, o.members, o.balance_usd]), [[org.id, 1, 0]]);
      assert.equal((await admin.orgs.list({ q: org.id })).data[0].org_id, org.id, "q matches an exact id too");

      const credited = await admin.orgs.deposit(org.id, { amount_usd: 12 });
      assert.equal(credited.balance_usd, 12);
      assert.equal((await admin.orgs.get(org.id)).tier, 1, "deposits raise the tier");
      assert.equal((await admin.orgs.setTier(org.id, { tier: 3 })).tier, 3);
      assert.equal((await admin.orgs.setLimits(org.id, { rpm: 500 })).org_id, org.id);
      assert.equal((await sdk(owner.session_token, org.id).auth.me()).tier, 3, "the member sees the organization's tier");

      const ledger = await admin.orgs.ledger(org.id);
      assert.deepEqual(ledger.data.map((e) => [e.kind, e.amount_usd]), [["deposit", 12]]);
      assert.equal((await admin.orgs.usage(org.id)).total.requests, 0);
      assert.equal((await admin.orgs.requests(org.id)).data.length, 0);
      await rejectsWith(admin.orgs.get("org_doesnotexist"), NotFoundError, 404, "org_not_found");
    });
  });
}
