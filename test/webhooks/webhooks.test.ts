/**
 * Webhooks over real HTTP (D31) on both databases: a receiver on loopback (`WEBHOOK_ALLOW_PRIVATE=1`)
 * verifies every signature with the official `standardwebhooks` package; a 500 is retried with the same
 * `webhook-id`, each event reaches each destination once after a 2xx; 410 disables the endpoint;
 * rotate-secret; replay; the delivery log; the URL rule (400 `invalid_webhook_url`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Receiver, startReceiver, verify } from "./receiver.ts";

type User = Awaited<ReturnType<TestGateway["register"]>>;

for (const backend of BACKENDS) {
  describe(`webhooks on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let rx: Receiver;
    before(async () => {
      rx = await startReceiver();
      gw = await startGateway(backend.name, { WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_RETRY_SCHEDULE_S: "0.3,0.3,0.3" });
    });
    after(async () => {
      await gw?.close();
      await rx?.close();
    });

    async function user(): Promise<User> {
      const u = await gw.register();
      await gw.deposit(u.user_id, 20);
      await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000 } });
      return u;
    }
    async function imageJob(u: User, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
      const res = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "a lighthouse", ...extra }, headers });
      assert.equal(res.status, 202, JSON.stringify(res.json));
      return gw.waitForJob(u.api_key, res.json.id as string);
    }
    async function endpoint(u: User, path: string, events?: string[]) {
      const res = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url: rx.url + path, ...(events ? { events } : {}) } });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      return res.json as { id: string; secret: string; events: string[] };
    }
    async function deliveries(u: User, query = "") {
      const res = await gw.request("GET", `/v1/webhooks/deliveries${query}`, { token: u.api_key });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      return res.json as { data: { id: string; event_id: string; event_type: string; endpoint_id: string | null; url: string; status: string; attempts: { status_code: number | null; duration_ms: number; error: string | null }[] }[]; has_more: boolean };
    }
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    test("endpoints: secret shown once, listed without it, all event types by default; delete", async () => {
      const u = await user();
      const ep = await endpoint(u, "/list");
      assert.match(ep.secret, /^whsec_[A-Za-z0-9+/=]+$/);
      assert.deepEqual(ep.events, ["job.succeeded", "job.failed", "job.refunded", "job.expired", "balance.low", "budget.threshold"]);
      const list = await gw.request("GET", "/v1/webhooks", { token: u.api_key });
      assert.equal(list.status, 200);
      assert.deepEqual(list.json.data.map((e: { id: string }) => e.id), [ep.id]);
      assert.equal(list.json.data[0].disabled, false);
      assert.ok(!JSON.stringify(list.json).includes(ep.secret), "the list never shows the secret");
      const other = await user();
      assert.equal((await gw.request("DELETE", `/v1/webhooks/${ep.id}`, { token: other.api_key })).json.error.code, "webhook_not_found");
      assert.equal((await gw.request("POST", `/v1/webhooks/${ep.id}/rotate-secret`, { token: other.api_key })).status, 404);
      const del = await gw.request("DELETE", `/v1/webhooks/${ep.id}`, { token: u.session_token });
      assert.deepEqual(del.json, { id: ep.id, deleted: true });
      assert.deepEqual((await gw.request("GET", "/v1/webhooks", { token: u.api_key })).json.data, []);
      const bad = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url: rx.url + "/x", events: ["job.nope"] } });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.code, "invalid_request");
      // The default secret is created once and then stable.
      const s1 = (await gw.request("GET", "/v1/webhooks/secret", { token: u.api_key })).json.secret;
      const s2 = (await gw.request("GET", "/v1/webhooks/secret", { token: u.session_token })).json.secret;
      assert.match(s1, /^whsec_/);
      assert.equal(s1, s2);
    });

    test("a 500 is retried with the same webhook-id; each event is delivered once after a 2xx; signatures verify; the log records every attempt", async () => {
      const u = await user();
      const ep = await endpoint(u, "/retry", ["job.succeeded"]);
      rx.respond = ({ path, count }) => (path === "/retry" && count === 1 ? 500 : 200);
      const job = await imageJob(u, { webhook_url: `${rx.url}/own` });
      assert.equal(job.json.status, "succeeded");
      await rx.waitFor(() => rx.on("/retry").length >= 2 && rx.on("/own").length >= 1, "the retry and the job's own webhook_url");
      // Longer than the whole retry schedule: nothing more arrives once each destination answered 2xx.
      await sleep(1500);
      const retry = rx.on("/retry");
      const own = rx.on("/own");
      assert.deepEqual(retry.map((x) => x.status), [500, 200]);
      assert.equal(own.length, 1);
      const defaultSecret = (await gw.request("GET", "/v1/webhooks/secret", { token: u.api_key })).json.secret as string;
      const a1 = verify(ep.secret, retry[0]);
      const a2 = verify(ep.secret, retry[1]);
      const b = verify(defaultSecret, own[0]);
      assert.equal(retry[0].headers["webhook-id"], retry[1].headers["webhook-id"], "same webhook-id on the retry");
      assert.equal(a1.id, retry[0].headers["webhook-id"]);
      assert.equal(a1.id, b.id, "one event, two destinations");
      assert.match(a1.id, /^evt_/);
      assert.equal(a1.type, "job.succeeded");
      assert.equal(a2.id, a1.id);
      assert.equal(retry[0].body, retry[1].body, "the body is the same on every attempt");
      // data is the job object as GET /v1/jobs/{id} shows it.
      assert.deepEqual(a1.data, job.json);
      assert.throws(() => verify(defaultSecret, retry[1]), /signature/i, "an endpoint's secret is its own");

      const log = await deliveries(u);
      assert.equal(log.data.length, 2);
      const toEndpoint = log.data.find((d) => d.endpoint_id === ep.id)!;
      const toOwn = log.data.find((d) => d.endpoint_id === null)!;
      assert.equal(toEndpoint.status, "succeeded");
      assert.deepEqual(toEndpoint.attempts.map((x) => [x.status_code, x.error]), [[500, "http_500"], [200, null]]);
      assert.ok(toEndpoint.attempts.every((x) => x.duration_ms >= 0));
      assert.equal(toEndpoint.event_id, a1.id);
      assert.equal(toOwn.url, `${rx.url}/own`);
      assert.equal(toOwn.status, "succeeded");
      // Filters and paging.
      assert.equal((await deliveries(u, "?status=pending")).data.length, 0);
      assert.equal((await deliveries(u, "?event_type=job.failed")).data.length, 0);
      const p1 = await deliveries(u, "?limit=1");
      assert.equal(p1.has_more, true);
      const p2 = await deliveries(u, `?limit=1&after=${p1.data[0].id}`);
      assert.equal(p2.has_more, false);
      assert.notEqual(p2.data[0].id, p1.data[0].id);
      // Another account sees none of it.
      assert.equal((await deliveries(await user())).data.length, 0);
    });

    test("a failed job sends job.failed; an endpoint answering 410 is disabled and gets nothing more", async () => {
      const u = await user();
      const ep = await endpoint(u, "/gone");
      rx.respond = ({ path }) => (path === "/gone" ? 410 : 200);
      const failed = await imageJob(u, {}, { "x-svc-simulate": "fail" });
      assert.equal(failed.json.status, "failed");
      await rx.waitFor(() => rx.on("/gone").length >= 1, "the first delivery to /gone");
      const body = verify(ep.secret, rx.on("/gone")[0]);
      assert.equal(body.type, "job.failed");
      assert.equal((body.data as { status: string }).status, "failed");
      for (let i = 0; i < 100; i++) {
        if ((await deliveries(u)).data[0]?.status === "failed") break;
        await sleep(20);
      }
      const log = await deliveries(u);
      assert.equal(log.data[0].status, "failed");
      assert.deepEqual(log.data[0].attempts.map((x) => x.status_code), [410], "no retry after 410");
      const list = await gw.request("GET", "/v1/webhooks", { token: u.api_key });
      assert.equal(list.json.data[0].disabled, true);
      await imageJob(u);
      await sleep(800);
      assert.equal(rx.on("/gone").length, 1, "nothing is sent to a disabled endpoint");
      assert.equal((await deliveries(u)).data.length, 1, "no delivery row for a disabled endpoint");
    });

    test("rotate-secret: later deliveries verify with the new secret only", async () => {
      const u = await user();
      const ep = await endpoint(u, "/rotate");
      rx.respond = () => 200;
      const rotated = await gw.request("POST", `/v1/webhooks/${ep.id}/rotate-secret`, { token: u.api_key });
      assert.equal(rotated.status, 200);
      assert.equal(rotated.json.id, ep.id);
      assert.notEqual(rotated.json.secret, ep.secret);
      await imageJob(u);
      await rx.waitFor(() => rx.on("/rotate").length >= 1, "a delivery after the rotation");
      const got = rx.on("/rotate")[0];
      assert.equal(verify(rotated.json.secret as string, got).type, "job.succeeded");
      assert.throws(() => verify(ep.secret, got), /signature/i);
    });

    test("a delivery leased by a sender that died is not sent while the lease holds, and is sent once it lapses", async () => {
      const u = await user();
      await endpoint(u, "/lease");
      rx.respond = () => 200;
      await imageJob(u);
      await rx.waitFor(() => rx.on("/lease").length >= 1, "the first delivery");
      let log = await deliveries(u);
      for (let i = 0; i < 100 && log.data[0].status !== "succeeded"; i++) {
        await sleep(20);
        log = await deliveries(u);
      }
      // As a process SIGKILLed in the middle of an attempt leaves it: pending, leased by a dead claim.
      const db = gw.services.db.kysely;
      const row = () => db.updateTable("webhook_deliveries").where("id", "=", log.data[0].id);
      await row().set({ status: "pending", next_attempt_at: Date.now(), lease_owner: "wl_dead", lease_until: Date.now() + 60_000 }).execute();
      await sleep(1200);
      assert.equal(rx.on("/lease").length, 1, "not sent while another claim holds the lease");
      await row().set({ lease_until: Date.now() - 1 }).execute();
      await rx.waitFor(() => rx.on("/lease").length >= 2, "the delivery after the lease lapsed");
      assert.equal(rx.on("/lease")[1].headers["webhook-id"], rx.on("/lease")[0].headers["webhook-id"]);
    });

    test("replay sends the same event again now (same webhook-id, same body) and answers 202; 404 for an unknown or foreign id", async () => {
      const u = await user();
      const ep = await endpoint(u, "/replay");
      rx.respond = () => 200;
      await imageJob(u);
      await rx.waitFor(() => rx.on("/replay").length >= 1, "the first delivery");
      let log = await deliveries(u);
      for (let i = 0; i < 100 && log.data[0].status !== "succeeded"; i++) {
        await sleep(20);
        log = await deliveries(u);
      }
      const first = rx.on("/replay")[0];
      const res = await gw.request("POST", `/v1/webhooks/deliveries/${log.data[0].id}/replay`, { token: u.api_key });
      assert.equal(res.status, 202, JSON.stringify(res.json));
      assert.equal(res.json.status, "pending");
      await rx.waitFor(() => rx.on("/replay").length >= 2, "the replay");
      const again = rx.on("/replay")[1];
      assert.equal(again.headers["webhook-id"], first.headers["webhook-id"]);
      assert.equal(again.body, first.body);
      verify(ep.secret, again);
      for (let i = 0; i < 100 && log.data[0].attempts.length < 2; i++) {
        await sleep(20);
        log = await deliveries(u);
      }
      assert.deepEqual(log.data[0].attempts.map((x) => x.status_code), [200, 200]);
      const unknown = await gw.request("POST", "/v1/webhooks/deliveries/whd_nope/replay", { token: u.api_key });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error.code, "delivery_not_found");
      const foreign = await gw.request("POST", `/v1/webhooks/deliveries/${log.data[0].id}/replay`, { token: (await user()).api_key });
      assert.equal(foreign.json.error.code, "delivery_not_found");
    });
  });
}

describe("webhook URL rule without WEBHOOK_ALLOW_PRIVATE", () => {
  let gw: TestGateway;
  before(async () => {
    const hosts: Record<string, string[]> = { "hooks.public.example": ["93.184.215.14"], "hooks.internal.example": ["93.184.215.14", "10.1.2.3"] };
    gw = await startGateway("sqlite", {}, { overrides: { resolveHost: async (h) => hosts[h] ?? [] } });
  });
  after(async () => {
    await gw?.close();
  });

  test("http, private addresses and names resolving to them are refused with 400 invalid_webhook_url; nothing is charged", async () => {
    const u = await gw.register();
    for (const url of ["http://hooks.public.example/x", "https://127.0.0.1/x", "https://10.0.0.8/x", "https://[::1]/x", "https://hooks.internal.example/x", "https://nowhere.example/x", "https://user:pw@hooks.public.example/x", "not a url"]) {
      const res = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url } });
      assert.equal(res.status, 400, url);
      assert.equal(res.json.error.code, "invalid_webhook_url", url);
    }
    const ok = await gw.request("POST", "/v1/webhooks", { token: u.api_key, body: { url: "https://hooks.public.example/x" } });
    assert.equal(ok.status, 201, JSON.stringify(ok.json));

    const before = (await gw.request("GET", "/v1/auth/me", { token: u.api_key })).json.balance_usd;
    for (const webhook_url of ["http://hooks.public.example/x", "https://169.254.169.254/latest", "https://hooks.internal.example/x", 42]) {
      const res = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "x", webhook_url } });
      assert.equal(res.status, 400, String(webhook_url));
      assert.equal(res.json.error.code, "invalid_webhook_url");
      assert.equal(res.json.error.param, "webhook_url");
    }
    assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).json.balance_usd, before, "nothing held or charged");
  });
});
