/**
 * Accounts over real HTTP on both databases: registration, login, me, keys (D2, D8, D21, D24) and the
 * operator API (D9, D21, D22).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

function assertError(
  res: { status: number; json: { error?: Record<string, unknown> } },
  status: number,
  code: string,
) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json.error?.code, code);
  assert.equal(typeof res.json.error?.message, "string");
  assert.ok("param" in (res.json.error ?? {}));
  assert.ok(typeof res.json.error?.type === "string");
}

for (const backend of BACKENDS) {
  describe(`accounts on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

    test("register returns secrets and a 0.50 balance; me shows it", async () => {
      const u = await gw.register();
      assert.match(u.user_id, /^usr_/);
      assert.match(u.org_id, /^org_/, "the personal organization (D41)");
      assert.match(u.api_key, /^gw_/);
      assert.match(u.session_token, /^sess_/);
      for (const token of [u.api_key, u.session_token]) {
        const me = await gw.request("GET", "/v1/auth/me", { token });
        assert.equal(me.status, 200);
        assert.equal(me.json.user_id, u.user_id);
        assert.equal(me.json.email, u.email.toLowerCase());
        assert.equal(me.json.balance_usd, 0.5);
        assert.equal(me.json.tier, 0);
        assert.equal(me.json.tier_name, "Tier 0");
        assert.equal(me.json.total_deposits_usd, 0);
        assert.ok(!Number.isNaN(Date.parse(me.json.created_at)));
      }
    });

    test("secrets are stored only as hashes", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const keys = await db.selectFrom("api_keys").selectAll().where("account_id", "=", u.org_id).execute();
      assert.equal(keys.length, 1);
      assert.notEqual(keys[0].key_hash, u.api_key);
      assert.ok(!JSON.stringify(keys).includes(u.api_key));
      const sessions = await db
        .selectFrom("sessions")
        .selectAll()
        .where("user_id", "=", u.user_id)
        .execute();
      assert.ok(!JSON.stringify(sessions).includes(u.session_token));
    });

    test("register: bad email, short password, taken email", async () => {
      assertError(
        await gw.request("POST", "/v1/auth/register", { body: { email: "nope", password: "longenough" } }),
        400,
        "invalid_request",
      );
      assertError(
        await gw.request("POST", "/v1/auth/register", { body: { email: "a@b.co", password: "short" } }),
        400,
        "invalid_request",
      );
      assertError(
        await gw.request("POST", "/v1/auth/register", { body: { email: 5, password: [] } }),
        400,
        "invalid_request",
      );
      assertError(
        await gw.request("POST", "/v1/auth/register", { body: "{not json" }),
        400,
        "invalid_request",
      );
      const u = await gw.register();
      assertError(
        await gw.request("POST", "/v1/auth/register", {
          body: { email: u.email.toUpperCase(), password: "another password" },
        }),
        409,
        "email_taken",
      );
    });

    test("login: right password gives a working session; wrong email or password same 401", async () => {
      const u = await gw.register();
      const ok = await gw.request("POST", "/v1/auth/login", {
        body: { email: u.email, password: "correct horse battery" },
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.json.user_id, u.user_id);
      const me = await gw.request("GET", "/v1/auth/me", { token: ok.json.session_token });
      assert.equal(me.status, 200);
      const wrongPw = await gw.request("POST", "/v1/auth/login", {
        body: { email: u.email, password: "wrong password" },
      });
      const wrongEmail = await gw.request("POST", "/v1/auth/login", {
        body: { email: "nobody@example.com", password: "wrong password" },
      });
      assertError(wrongPw, 401, "auth_error");
      assertError(wrongEmail, 401, "auth_error");
      assert.equal(wrongPw.json.error.message, wrongEmail.json.error.message);
    });

    test("missing, malformed or unknown keys: 401 auth_error", async () => {
      assertError(await gw.request("GET", "/v1/auth/me"), 401, "auth_error");
      assertError(
        await gw.request("GET", "/v1/auth/me", { headers: { authorization: "Basic abc" } }),
        401,
        "auth_error",
      );
      assertError(
        await gw.request("GET", "/v1/auth/me", { token: "gw_doesnotexist0000000000000000000000000000000" }),
        401,
        "auth_error",
      );
      assertError(
        await gw.request("POST", "/v1/audio/speech", { body: { input: "hi", voice_id: "x" } }),
        401,
        "auth_error",
      );
    });

    test("keys: several keys share one balance; list shows prefixes, never secrets; delete is immediate", async () => {
      // Through the typed client (packages/client): the document's paths and fields are checked by tsc.
      const u = await gw.register();
      const created = await gw.client(u.api_key).POST("/v1/auth/keys", { body: { name: "ci" } });
      assert.equal(created.response.status, 201);
      assert.ok(created.data);
      assert.match(created.data.key_id, /^key_/);
      assert.equal(created.data.name, "ci");
      const k2 = created.data.api_key;
      const me2 = await gw.client(k2).GET("/v1/auth/me");
      assert.equal(me2.data?.user_id, u.user_id);
      assert.equal(me2.data?.balance_usd, 0.5);

      const list = (await gw.client(u.session_token).GET("/v1/auth/keys")).data;
      assert.equal(list?.object, "list");
      assert.equal(list?.data.length, 2);
      for (const k of list?.data ?? []) {
        assert.equal(k.prefix.length, 12);
        assert.ok(!("api_key" in k));
      }
      assert.ok(list?.data.some((k) => k.prefix === k2.slice(0, 12)));

      const keyPath = { params: { path: { key_id: created.data.key_id } } };
      const other = await gw.register();
      const foreign = await gw.client(other.api_key).DELETE("/v1/auth/keys/{key_id}", keyPath);
      assertError({ status: foreign.response.status, json: foreign.error ?? {} }, 404, "key_not_found");
      assert.equal((await gw.client(k2).GET("/v1/auth/me")).response.status, 200);

      const del = await gw.client(u.api_key).DELETE("/v1/auth/keys/{key_id}", keyPath);
      assert.deepEqual(del.data, { key_id: created.data.key_id, deleted: true });
      const gone = await gw.client(k2).GET("/v1/auth/me");
      assertError({ status: gone.response.status, json: gone.error ?? {} }, 401, "auth_error");
      assert.equal((await gw.client(u.api_key).GET("/v1/auth/me")).response.status, 200);
    });

    test("operator: deposits raise balance, deposits and tier; override wins and clears", async () => {
      const u = await gw.register();
      const dep = await gw.request("POST", `/v1/admin/users/${u.user_id}/deposits`, {
        token: ADMIN_TOKEN,
        body: { amount_usd: 10, reference: "inv-1" },
      });
      assert.equal(dep.status, 200);
      assert.equal(dep.json.balance_usd, 10.5);
      assert.equal(dep.json.tier, 1);
      await gw.deposit(u.user_id, 39.999999);
      let me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.tier, 1);
      assert.equal(me.json.total_deposits_usd, 49.999999);
      await gw.deposit(u.user_id, 0.000001);
      me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.tier, 2);

      const ov = await gw.request("PUT", `/v1/admin/users/${u.user_id}/tier`, {
        token: ADMIN_TOKEN,
        body: { tier: 4 },
      });
      assert.equal(ov.status, 200);
      assert.equal(ov.json.tier, 4);
      me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.tier, 4);
      assert.equal(me.json.tier_name, "Tier 4");
      await gw.request("PUT", `/v1/admin/users/${u.user_id}/tier`, {
        token: ADMIN_TOKEN,
        body: { tier: null },
      });
      me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.tier, 2);

      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
      const ledger = await gw.request("GET", "/v1/billing/ledger", { token: u.api_key });
      assert.deepEqual(
        ledger.json.data.map((e: { kind: string }) => e.kind),
        ["deposit", "deposit", "deposit", "signup_credit"],
      );
    });

    test("operator: bad amounts, bad tiers, unknown users, wrong tokens", async () => {
      const u = await gw.register();
      const path = `/v1/admin/users/${u.user_id}`;
      for (const amount_usd of [0, -5, "ten", null, 1e-7, Number.MAX_VALUE, true]) {
        assertError(
          await gw.request("POST", `${path}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd } }),
          400,
          "invalid_request",
        );
      }
      for (const tier of [5, -1, 1.5, "2"]) {
        assertError(
          await gw.request("PUT", `${path}/tier`, { token: ADMIN_TOKEN, body: { tier } }),
          400,
          "invalid_request",
        );
      }
      assertError(
        await gw.request("POST", "/v1/admin/users/usr_nobody/deposits", {
          token: ADMIN_TOKEN,
          body: { amount_usd: 1 },
        }),
        404,
        "user_not_found",
      );
      assertError(
        await gw.request("PUT", "/v1/admin/users/usr_nobody/tier", { token: ADMIN_TOKEN, body: { tier: 1 } }),
        404,
        "user_not_found",
      );
      assertError(
        await gw.request("POST", `${path}/deposits`, { token: u.api_key, body: { amount_usd: 1 } }),
        401,
        "auth_error",
      );
      assertError(
        await gw.request("POST", `${path}/deposits`, { body: { amount_usd: 1 } }),
        401,
        "auth_error",
      );
      const me = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
      assert.equal(me.json.balance_usd, 0.5);
    });

    test("operator: custom limits override per field; null drops it", async () => {
      const u = await gw.register();
      const path = `/v1/admin/users/${u.user_id}/limits`;
      let r = await gw.request("PUT", path, {
        token: ADMIN_TOKEN,
        body: { rpm: 1000, audio_concurrent_per_provider: { alpha: 50 } },
      });
      assert.equal(r.status, 200);
      assert.deepEqual(r.json.limits_override, { rpm: 1000, audio_concurrent_per_provider: { alpha: 50 } });
      r = await gw.request("PUT", path, { token: ADMIN_TOKEN, body: { rpm: null } });
      assert.deepEqual(r.json.limits_override, { audio_concurrent_per_provider: { alpha: 50 } });
      assertError(
        await gw.request("PUT", path, { token: ADMIN_TOKEN, body: { bogus: 1 } }),
        400,
        "invalid_request",
      );
      assertError(
        await gw.request("PUT", path, { token: ADMIN_TOKEN, body: { rpm: -1 } }),
        400,
        "invalid_request",
      );
    });
  });
}

describe("operator API without GATEWAY_ADMIN_TOKEN", () => {
  test("answers 404", async () => {
    const gw = await startGateway("sqlite", { GATEWAY_ADMIN_TOKEN: "" });
    try {
      const u = await gw.register();
      const r = await gw.request("POST", `/v1/admin/users/${u.user_id}/deposits`, {
        token: ADMIN_TOKEN,
        body: { amount_usd: 1 },
      });
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, "not_found");
    } finally {
      await gw.close();
    }
  });
});
