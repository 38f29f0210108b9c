/**
 * The operator API for the console's operator pages (issue 15 point 3), on SQLite and PostgreSQL: finding
 * accounts by email prefix or id with pagination, one account's page, its ledger, requests and usage (the
 * customer endpoints' answers, for that account only), revenue against upstream cost, the operator token,
 * 404 `user_not_found` (D21) and the D1 body for bad query values. Every answer is also checked against
 * /openapi.json by the test helpers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
type Json = any;

for (const backend of BACKENDS) {
  describe(`operator API (${backend.name})`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    const tag = Math.random().toString(36).slice(2, 8);
    const users: Record<"alice" | "aliceB" | "bob", { user_id: string; api_key: string; session_token: string; email: string }> = {} as never;
    const admin = (method: string, path: string, body?: unknown) => gw.request(method, path, { token: ADMIN_TOKEN, ...(body === undefined ? {} : { body }) });

    async function registerAs(email: string) {
      const res = await gw.request("POST", "/v1/auth/register", { body: { email, password: "correct horse battery" } });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      return { ...res.json, email: email.toLowerCase() };
    }
    async function speak(token: string, input: string) {
      const r = await gw.request("POST", "/v1/audio/speech", { token, body: { input, voice_id: DEMO_ALPHA_VOICE_ID } });
      assert.equal(r.status, 200);
    }
    /** Every page of an operator list, following `after`. */
    async function allPages(path: string, limit: number): Promise<Json[]> {
      const out: Json[] = [];
      let after: string | null = null;
      for (;;) {
        const sep = path.includes("?") ? "&" : "?";
        const res = await admin("GET", `${path}${sep}limit=${limit}${after ? `&after=${after}` : ""}`);
        assert.equal(res.status, 200, JSON.stringify(res.json));
        assert.ok(res.json.data.length <= limit);
        out.push(...res.json.data);
        if (!res.json.has_more) return out;
        after = res.json.data.at(-1).user_id ?? res.json.data.at(-1).id;
      }
    }

    before(async () => {
      gw = await startGateway(backend.name);
      // Mixed case in, lowercase stored; `.` and `-` are where a linguistic collation would go wrong.
      users.alice = await registerAs(`Alice.${tag}@Example.com`);
      users.aliceB = await registerAs(`alice-b.${tag}@example.com`);
      users.bob = await registerAs(`bob.${tag}@example.com`);
      await gw.deposit(users.alice.user_id, 12);
      await speak(users.alice.api_key, "Hello from Alice.");
      await speak(users.alice.api_key, "Hello again from Alice, a little longer.");
      await speak(users.bob.api_key, "Bob speaks once.");
      // A test-mode call: in Bob's usage with mode=test, never in the revenue.
      const testKey = (await gw.request("POST", "/v1/auth/keys", { token: users.bob.api_key, body: { mode: "test" } })).json.api_key as string;
      await speak(testKey, "Not live.");
      // An image job the simulator serves: revenue without an upstream cost figure.
      const job = await gw.request("POST", "/v1/images/generations", { token: users.alice.api_key, body: { model: "imgA-v4", prompt: "a lighthouse" } });
      assert.equal(job.status, 202, JSON.stringify(job.json));
      assert.equal((await gw.waitForJob(users.alice.api_key, job.json.id)).json.status, "succeeded");
    });
    after(async () => {
      await gw?.close();
    });

    test("search: email prefix, case-insensitive, newest first; exact user id; nothing; everything", async () => {
      const byEmail = await admin("GET", `/v1/admin/users?q=ALICE`);
      assert.equal(byEmail.status, 200);
      assert.deepEqual(
        byEmail.json.data.map((u: Json) => u.user_id),
        [users.aliceB.user_id, users.alice.user_id],
      );
      const dot = await admin("GET", `/v1/admin/users?q=${encodeURIComponent(`alice.`)}`);
      assert.deepEqual(dot.json.data.map((u: Json) => u.email), [users.alice.email]);
      const dash = await admin("GET", `/v1/admin/users?q=${encodeURIComponent(`Alice-`)}`);
      assert.deepEqual(dash.json.data.map((u: Json) => u.email), [users.aliceB.email]);
      // LIKE wildcards are plain characters.
      assert.deepEqual((await admin("GET", `/v1/admin/users?q=${encodeURIComponent("a%")}`)).json.data, []);
      assert.deepEqual((await admin("GET", `/v1/admin/users?q=${encodeURIComponent("_lice")}`)).json.data, []);

      const byId = await admin("GET", `/v1/admin/users?q=${users.bob.user_id}`);
      assert.equal(byId.json.data.length, 1);
      const bob = byId.json.data[0];
      assert.equal(bob.email, users.bob.email);
      assert.equal(bob.tier, 0);
      assert.equal(bob.tier_name, "Tier 0");
      assert.equal(bob.tier_override, null);
      assert.equal(bob.has_custom_limits, false);
      assert.equal(bob.keys, 2);
      assert.equal(bob.total_deposits_usd, 0);
      assert.ok(bob.balance_usd < 0.5 && bob.balance_usd > 0);
      assert.ok(bob.last_key_used_at === null || !Number.isNaN(Date.parse(bob.last_key_used_at)));

      const alice = (await admin("GET", `/v1/admin/users?q=${users.alice.user_id}`)).json.data[0];
      assert.equal(alice.total_deposits_usd, 12);
      assert.equal(alice.tier, 1);

      assert.deepEqual((await admin("GET", "/v1/admin/users?q=nobody")).json, { object: "list", data: [], has_more: false });
      const all = await admin("GET", "/v1/admin/users");
      assert.deepEqual(
        all.json.data.map((u: Json) => u.user_id),
        [users.bob.user_id, users.aliceB.user_id, users.alice.user_id],
      );
    });

    test("pagination: pages of one follow `after` without gaps or repeats", async () => {
      const full = (await admin("GET", "/v1/admin/users?limit=100")).json.data.map((u: Json) => u.user_id);
      const paged = (await allPages("/v1/admin/users", 1)).map((u) => u.user_id);
      assert.deepEqual(paged, full);
      const prefixPaged = (await allPages("/v1/admin/users?q=alice", 1)).map((u) => u.user_id);
      assert.deepEqual(prefixPaged, [users.aliceB.user_id, users.alice.user_id]);
      // An unknown cursor is the first page, as in the customer lists.
      assert.deepEqual((await admin("GET", "/v1/admin/users?after=usr_nope")).json.data.map((u: Json) => u.user_id), full);
    });

    test("one account: overrides, custom limits and the effective limits", async () => {
      const id = users.bob.user_id;
      assert.equal((await admin("PUT", `/v1/admin/users/${id}/tier`, { tier: 2 })).status, 200);
      assert.equal((await admin("PUT", `/v1/admin/users/${id}/limits`, { rpm: 777, audio_concurrent_per_provider: { alpha: 9 } })).status, 200);
      const res = await admin("GET", `/v1/admin/users/${id}`);
      assert.equal(res.status, 200);
      assert.equal(res.json.object, "admin.account");
      assert.equal(res.json.tier, 2);
      assert.equal(res.json.tier_override, 2);
      assert.equal(res.json.has_custom_limits, true);
      assert.deepEqual(res.json.limits_override, { rpm: 777, audio_concurrent_per_provider: { alpha: 9 } });
      assert.equal(res.json.limits.tier, 2);
      assert.equal(res.json.limits.rpm, 777);
      assert.equal(res.json.limits.audio_concurrent_per_provider.alpha, 9);
      // What the customer sees as its limits.
      const own = await gw.request("GET", "/v1/auth/limits", { token: users.bob.api_key });
      assert.equal(own.json.rpm, 777);
      const listed = (await admin("GET", `/v1/admin/users?q=${id}`)).json.data[0];
      assert.equal(listed.has_custom_limits, true);
      assert.equal(listed.tier_override, 2);
      // Back as it was.
      await admin("PUT", `/v1/admin/users/${id}/tier`, { tier: null });
      await admin("PUT", `/v1/admin/users/${id}/limits`, { rpm: null, audio_concurrent_per_provider: null });
      const back = await admin("GET", `/v1/admin/users/${id}`);
      assert.equal(back.json.has_custom_limits, false);
      assert.deepEqual(back.json.limits_override, {});
      assert.equal(back.json.tier, 0);
    });

    test("ledger, requests and usage of one account are what its owner sees, and only its own", async () => {
      const a = users.alice;
      const ledger = await admin("GET", `/v1/admin/users/${a.user_id}/ledger?limit=100`);
      assert.equal(ledger.status, 200);
      assert.deepEqual(ledger.json, (await gw.request("GET", "/v1/billing/ledger?limit=100", { token: a.api_key })).json);
      assert.ok(ledger.json.data.some((e: Json) => e.kind === "deposit"));

      const requests = await admin("GET", `/v1/admin/users/${a.user_id}/requests?limit=100`);
      assert.deepEqual(requests.json, (await gw.request("GET", "/v1/requests?limit=100", { token: a.api_key })).json);
      assert.equal(requests.json.data.length, 3);
      // The same filters.
      const speech = await admin("GET", `/v1/admin/users/${a.user_id}/requests?model=alpha-multilingual-v2&status=succeeded`);
      assert.equal(speech.json.data.length, 2);
      const pageOne = await admin("GET", `/v1/admin/users/${a.user_id}/requests?limit=1`);
      assert.equal(pageOne.json.has_more, true);
      const pageTwo = await admin("GET", `/v1/admin/users/${a.user_id}/requests?limit=1&after=${pageOne.json.data[0].id}`);
      assert.equal(pageTwo.json.data[0].id, requests.json.data[1].id);

      const usage = await admin("GET", `/v1/admin/users/${a.user_id}/usage?group_by=model`);
      assert.deepEqual(usage.json, (await gw.request("GET", "/v1/usage?group_by=model", { token: a.api_key })).json);
      assert.equal(usage.json.total.requests, 3);

      const bob = users.bob;
      const bobRequests = await admin("GET", `/v1/admin/users/${bob.user_id}/requests`);
      assert.deepEqual(bobRequests.json.data.map((r: Json) => r.model), ["alpha-multilingual-v2"]);
      const bobTest = await admin("GET", `/v1/admin/users/${bob.user_id}/requests?mode=test`);
      assert.equal(bobTest.json.data.length, 1);
      const bobUsage = await admin("GET", `/v1/admin/users/${bob.user_id}/usage`);
      assert.equal(bobUsage.json.total.requests, 1);
      const empty = await admin("GET", `/v1/admin/users/${users.aliceB.user_id}/ledger`);
      assert.deepEqual(empty.json.data.map((e: Json) => e.kind), ["signup_credit"]);
    });

    test("revenue: the live charges of the period, by day, model or both, against upstream cost", async () => {
      // What the ledgers charged (charges less refunds) over every account.
      let charged = 0;
      for (const u of Object.values(users)) {
        for (const e of (await admin("GET", `/v1/admin/users/${u.user_id}/ledger?limit=100`)).json.data) {
          if (e.kind === "charge" || e.kind === "refund") charged -= e.amount_usd;
        }
      }
      charged = Math.round(charged * 1e6) / 1e6;
      assert.ok(charged > 0);

      const byDay = await admin("GET", "/v1/admin/revenue");
      assert.equal(byDay.status, 200);
      assert.equal(byDay.json.object, "admin.revenue");
      assert.equal(byDay.json.group_by, "day");
      assert.equal(byDay.json.total.revenue_usd, charged);
      assert.equal(byDay.json.total.requests, 4, "3 of Alice, 1 of Bob; the test-mode call is not revenue");
      const today = new Date().toISOString().slice(0, 10);
      assert.ok(byDay.json.data.every((r: Json) => r.model === null && /^\d{4}-\d{2}-\d{2}$/.test(r.day)));
      assert.ok(byDay.json.data.some((r: Json) => r.day === today));

      const byModel = await admin("GET", "/v1/admin/revenue?group_by=model");
      const rows = Object.fromEntries(byModel.json.data.map((r: Json) => [r.model, r]));
      assert.deepEqual(Object.keys(rows).sort(), ["alpha-multilingual-v2", "imgA-v4"]);
      const sum = byModel.json.data.reduce((n: number, r: Json) => n + r.revenue_usd, 0);
      assert.equal(Math.round(sum * 1e6) / 1e6, charged);
      // Speech: synchronous, costed from the catalog (markup 1: cost = revenue).
      const speech = rows["alpha-multilingual-v2"];
      assert.equal(speech.requests, 3);
      assert.equal(speech.upstream_cost_usd, speech.revenue_usd);
      assert.equal(speech.upstream_cost_by_basis.catalog_usd, speech.revenue_usd);
      assert.equal(speech.margin_usd, 0);
      assert.equal(speech.uncosted_revenue_usd, 0);
      // The simulator's image job: no cost figure, its revenue still shown.
      const image = rows["imgA-v4"];
      assert.equal(image.requests, 1);
      assert.ok(image.revenue_usd > 0);
      assert.equal(image.upstream_cost_usd, null);
      assert.equal(image.margin_usd, null);
      assert.equal(image.uncosted_revenue_usd, image.revenue_usd);

      const both = await admin("GET", `/v1/admin/revenue?group_by=day_model&tz=Europe/Berlin&from=2020-01-01`);
      assert.ok(both.json.data.every((r: Json) => r.day !== null && r.model !== null));
      assert.equal(both.json.total.revenue_usd, charged);
      // A period without calls.
      const past = await admin("GET", "/v1/admin/revenue?from=2020-01-01&to=2020-01-31");
      assert.deepEqual(past.json.data, []);
      assert.equal(past.json.total.revenue_usd, 0);
      assert.equal(past.json.total.upstream_cost_usd, null);
    });

    test("revenue: a job's reported upstream cost goes into its margin", async () => {
      const db = gw.services.db.kysely;
      const job = await db.selectFrom("jobs").select(["id", "cost_micros"]).where("model", "=", "imgA-v4").executeTakeFirstOrThrow();
      // As the runner records it when a source reports what it charged (jobs/runner.ts).
      await db.updateTable("jobs").set({ upstream_cost_micros: 10_000, upstream_cost_basis: "reported" }).where("id", "=", job.id).execute();
      try {
        const image = (await admin("GET", "/v1/admin/revenue?group_by=model")).json.data.find((r: Json) => r.model === "imgA-v4");
        assert.equal(image.upstream_cost_usd, 0.01);
        assert.equal(image.upstream_cost_by_basis.reported_usd, 0.01);
        assert.equal(image.margin_usd, Math.round((Number(job.cost_micros) - 10_000)) / 1e6);
        assert.equal(image.uncosted_revenue_usd, 0);
      } finally {
        await db.updateTable("jobs").set({ upstream_cost_micros: null, upstream_cost_basis: null }).where("id", "=", job.id).execute();
      }
    });

    test("operator token: 401 without it, with a wrong one, or with a customer's key", async () => {
      const paths = ["/v1/admin/users", `/v1/admin/users/${users.bob.user_id}`, `/v1/admin/users/${users.bob.user_id}/ledger`, "/v1/admin/revenue"];
      for (const path of paths) {
        for (const token of [undefined, "wrong-token", `${ADMIN_TOKEN}x`, users.bob.api_key, users.bob.session_token]) {
          const res = await gw.request("GET", path, token === undefined ? {} : { token });
          assert.equal(res.status, 401, `${path} ${token}`);
          assert.equal(res.json.error.code, "auth_error");
          assert.equal(res.json.error.type, "authentication_error");
          assert.ok(!Buffer.from(res.bytes).toString("utf8").includes(users.bob.email));
        }
      }
    });

    test("unknown account: 404 user_not_found on every view of one account", async () => {
      for (const sub of ["", "/ledger", "/requests", "/usage"]) {
        const res = await admin("GET", `/v1/admin/users/usr_unknown${sub}`);
        assert.equal(res.status, 404, sub);
        assert.deepEqual(res.json.error, { code: "user_not_found", message: "No such user.", type: "invalid_request_error", param: null });
      }
    });

    test("bad query values: 400 with the D1 body naming the parameter", async () => {
      const cases: [string, string][] = [
        ["/v1/admin/users?limit=0", "limit"],
        ["/v1/admin/users?limit=abc", "limit"],
        ["/v1/admin/users?limit=101", "limit"],
        [`/v1/admin/users?q=${"a".repeat(300)}`, "q"],
        [`/v1/admin/users/${users.bob.user_id}/ledger?limit=-1`, "limit"],
        [`/v1/admin/users/${users.bob.user_id}/requests?status=done`, "status"],
        [`/v1/admin/users/${users.bob.user_id}/requests?from=yesterday`, "from"],
        [`/v1/admin/users/${users.bob.user_id}/usage?tz=Mars/Base`, "tz"],
        [`/v1/admin/users/${users.bob.user_id}/usage?group_by=week`, "group_by"],
        ["/v1/admin/revenue?group_by=key", "group_by"],
        ["/v1/admin/revenue?tz=Nowhere", "tz"],
        ["/v1/admin/revenue?from=2025-02-30", "from"],
        ["/v1/admin/revenue?from=2025-03-02&to=2025-02-28", "from"],
      ];
      for (const [path, param] of cases) {
        const res = await admin("GET", path);
        assert.equal(res.status, 400, path);
        assert.equal(res.json.error.code, "invalid_request", path);
        assert.equal(res.json.error.type, "invalid_request_error", path);
        assert.equal(res.json.error.param, param, path);
        assert.equal(typeof res.json.error.message, "string");
      }
    });

    test("the typed client reaches the operator API", async () => {
      const client = gw.client(ADMIN_TOKEN);
      const { data, error } = await client.GET("/v1/admin/users", { params: { query: { q: "bob" } } });
      assert.equal(error, undefined);
      assert.equal(data?.data[0]?.user_id, users.bob.user_id);
      const rev = await client.GET("/v1/admin/revenue", { params: { query: { group_by: "model" } } });
      assert.equal(rev.data?.object, "admin.revenue");
      const denied = await gw.client(users.bob.api_key).GET("/v1/admin/users/{user_id}", { params: { path: { user_id: users.bob.user_id } } });
      assert.equal(denied.response.status, 401);
    });
  });
}
