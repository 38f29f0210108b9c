/**
 * The API-key cache (accounts/auth-cache.ts, `AUTH_CACHE_MS`): a resolved key is reused for the TTL without a
 * database read; what this process changes (key deletion, deposits, tier and limit overrides) takes
 * effect at once; a change made behind its back (another process) takes effect after the TTL. The cache
 * belongs to one gateway: two gateways in one process keep their own.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

for (const backend of BACKENDS) {
  describe(`API-key cache on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, { AUTH_CACHE_MS: "1500" });
    });
    after(async () => {
      await gw?.close();
    });

    test("a key deleted behind the gateway's back works until the TTL, then answers 401", async () => {
      const u = await gw.register();
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).status, 200);
      // As another process would: straight in the database.
      await gw.services.db.kysely.deleteFrom("api_keys").where("account_id", "=", u.org_id).execute();
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).status, 200, "served from the cache");
      await new Promise((r) => setTimeout(r, 1600));
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).status, 401);
    });

    test("a key deleted through the API stops at once", async () => {
      const u = await gw.register();
      const created = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "second" } });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const key = created.json.api_key as string;
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: key })).status, 200);
      const del = await gw.request("DELETE", `/v1/auth/keys/${created.json.key_id}`, { token: u.session_token });
      assert.ok(del.status === 200 || del.status === 204, String(del.status));
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: key })).status, 401);
    });

    test("two gateways in one process keep their own caches and settings", async () => {
      // The first gateway caches for a minute, so that starting the second (seconds on a busy machine)
      // never outlasts its cache.
      const first = await startGateway(backend.name, { AUTH_CACHE_MS: "60000", DATABASE_URL: gw.services.config.databaseUrl }, { runner: false });
      try {
        const u = await first.register();
        assert.equal((await first.request("GET", "/v1/auth/me", { token: u.api_key })).status, 200);
        // A second gateway on the same database, its cache off: starting it leaves the first one's cache alone.
        const other = await startGateway(backend.name, { AUTH_CACHE_MS: "0", DATABASE_URL: gw.services.config.databaseUrl }, { runner: false });
        try {
          await first.services.db.kysely.deleteFrom("api_keys").where("account_id", "=", u.org_id).execute();
          assert.equal((await first.request("GET", "/v1/auth/me", { token: u.api_key })).status, 200, "the first gateway's cache");
          assert.equal((await other.request("GET", "/v1/auth/me", { token: u.api_key })).status, 401, "the second gateway caches nothing");
        } finally {
          await other.close();
        }
      } finally {
        await first.close();
      }
    });

    test("a deposit that raises the tier, and a limit override, apply to the next request", async () => {
      const u = await gw.register();
      const limits = async () => (await gw.request("GET", "/v1/auth/limits", { token: u.api_key })).json;
      const before = await limits();
      const dep = await gw.request("POST", `/v1/admin/users/${u.user_id}/deposits`, { token: ADMIN_TOKEN, body: { amount_usd: 1000 } });
      assert.equal(dep.status, 200);
      const afterDeposit = await limits();
      assert.notDeepEqual(afterDeposit.limits ?? afterDeposit, before.limits ?? before, "the tier's limits, not the cached ones");
      const set = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 7 } });
      assert.equal(set.status, 200);
      const afterOverride = await limits();
      assert.equal((afterOverride.limits ?? afterOverride).rpm, 7);
    });
  });
}
