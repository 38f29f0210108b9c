/**
 * Prediction webhooks of the Replicate dialect (D47) with the `replicate` client (1.4.0, unchanged), on
 * SQLite and PostgreSQL: `webhook` + `webhook_events_filter` on `run` and `predictions.create`, delivered
 * through the webhook outbox to a loopback receiver (`WEBHOOK_ALLOW_PRIVATE=1`). The receiver gets exactly
 * the filtered events (the outbox holds no other delivery for the URL once the prediction ended), each body
 * a prediction, and the client's exported `validateWebhook(request, secret)` accepts every one with the
 * secret of `replicate.webhooks.default.secret.get()` and refuses a tampered body (and another account's
 * secret). A speech prediction, whose `start` and `completed` are written at once, a canceled one and one
 * that `Cancel-After` ended `aborted` included. Exact money after each.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Prediction, validateWebhook } from "replicate";
import { BACKENDS } from "../helpers/backends.ts";
import { type Received, type Receiver, startReceiver } from "../webhooks/receiver.ts";
import {
  type Account,
  assertCharged,
  assertNotCharged,
  checkedBalance,
  fundedAccount,
  jobStatusIs,
  type ReplicateGateway,
  replicateClient,
  startReplicateGateway,
  IMAGE,
  SPEECH_PER_CHAR,
} from "./fixtures.ts";


/** A received delivery as the `Request` a fetch-style server hands its handler (what `validateWebhook` takes). */
function requestOf(url: string, x: Received, body = x.body): Request {
  const headers = new Headers();
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature", "content-type"]) {
    const v = x.headers[name];
    if (typeof v === "string") headers.set(name, v);
  }
  return new Request(url, { method: "POST", headers, body });
}

for (const backend of BACKENDS) {
  describe(`replicate prediction webhooks on ${backend.name} (D47)`, { skip: backend.skip }, () => {
    let rg: ReplicateGateway;
    let rx: Receiver;
    let user: Account;
    let secret: string;
    let voiceId: string;

    const gw = () => rg.gw;
    const client = () => replicateClient(rg.publicUrl, user.api_key);
    const balance = () => checkedBalance(gw(), user);

    /**
     * Waits for `count` deliveries to `path`, then for the outbox to hold no undelivered one for its URL,
     * and checks it made exactly `count`; returns them in the order received.
     */
    async function deliveriesTo(path: string, count: number): Promise<Received[]> {
      await rx.waitFor(() => rx.on(path).length >= count, `${count} deliveries to ${path}`);
      const url = rx.url + path;
      const end = Date.now() + 20_000;
      for (;;) {
        const rows = await gw().services.db.kysely.selectFrom("webhook_deliveries").select("status").where("url", "=", url).execute();
        if (rows.every((r) => r.status !== "pending")) {
          assert.equal(rows.length, count, `the outbox made exactly ${count} deliveries to ${path}`);
          break;
        }
        assert.ok(Date.now() < end, `deliveries to ${path} still pending`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const got = rx.on(path);
      assert.equal(got.length, count, `exactly ${count} requests reached ${path}`);
      return got;
    }

    /**
     * Checks a delivery with the client's `validateWebhook` and `key` (the account's default secret; the
     * suite's account by default): true, and false for a tampered copy; returns its prediction.
     */
    async function verified(path: string, x: Received, key = secret): Promise<Prediction> {
      assert.equal(await validateWebhook(requestOf(rx.url + path, x), key), true, "validateWebhook accepts it");
      const tampered = x.body.replace(/"status":"[a-z]+"/, '"status":"failed"');
      assert.notEqual(tampered, x.body);
      assert.equal(await validateWebhook(requestOf(rx.url + path, x, tampered), key), false, "a tampered body fails");
      assert.match(String(x.headers["content-type"]), /^application\/json/);
      return JSON.parse(x.body) as Prediction;
    }

    before(async () => {
      rx = await startReceiver();
      rg = await startReplicateGateway(backend.name, { WEBHOOK_ALLOW_PRIVATE: "1" });
      user = await fundedAccount(rg.gw);
      const s = await replicateClient(rg.publicUrl, user.api_key).webhooks.default.secret.get();
      assert.match(s.key, /^whsec_[A-Za-z0-9+/=]+$/);
      secret = s.key;
      voiceId = (await rg.gw.request("GET", "/v1/audio/voices?provider=alpha", { token: user.api_key })).json.data[0].voice_id as string;
    });
    after(async () => {
      await rg?.close();
      await rx?.close();
    });

    test("run with webhook_events_filter [completed]: one delivery, the succeeded prediction, signed", async () => {
      const start = await balance();
      const hook = `${rx.url}/completed-only`;
      const output = await client().run("gateway/imgB-2-pro", { input: { prompt: "a barn owl" }, webhook: hook, webhook_events_filter: ["completed"] });
      assert.ok(Array.isArray(output) && output.length === 1);
      const [x] = await deliveriesTo("/completed-only", 1);
      const p = await verified("/completed-only", x);
      assert.equal(p.status, "succeeded");
      assert.equal(p.model, "gateway/imgB-2-pro");
      assert.deepEqual(p.output, [String(output[0])]);
      assert.equal(p.webhook, hook);
      assert.deepEqual(p.webhook_events_filter, ["completed"]);
      assert.deepEqual(await client().predictions.get(p.id), p, "the body is the prediction as get answers it");
      assert.equal(await balance(), start - IMAGE);
      await assertCharged(gw(), user.api_key, p.id, "image", IMAGE);
    });

    test("the default filter (start and completed): the prediction as created, then as it ended", async () => {
      const start = await balance();
      const hook = `${rx.url}/default`;
      const created = await client().predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "a fox den" }, webhook: hook });
      assert.deepEqual(created.webhook_events_filter, ["start", "completed"]);
      const got = await deliveriesTo("/default", 2);
      const bodies = await Promise.all(got.map((x) => verified("/default", x)));
      assert.deepEqual(bodies.map((b) => b.status).sort(), ["starting", "succeeded"]);
      const started = bodies.find((b) => b.status === "starting");
      const ended = bodies.find((b) => b.status === "succeeded");
      assert.equal(started?.id, created.id);
      assert.equal(started?.output, null);
      assert.equal(ended?.id, created.id);
      assert.ok(Array.isArray(ended?.output) && ended.output.length === 1);
      assert.notEqual(got[0].headers["webhook-id"], got[1].headers["webhook-id"], "two events");
      assert.equal(await balance(), start - IMAGE);
      await assertCharged(gw(), user.api_key, created.id, "image", IMAGE);
    });

    test("webhook_events_filter [output, completed]: two deliveries of the succeeded prediction, no start", async () => {
      const start = await balance();
      const created = await client().predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "a tide pool" }, webhook: `${rx.url}/output`, webhook_events_filter: ["output", "completed"] });
      const got = await deliveriesTo("/output", 2);
      for (const x of got) {
        const p = await verified("/output", x);
        assert.equal(p.id, created.id);
        assert.equal(p.status, "succeeded");
      }
      assert.equal(await balance(), start - IMAGE);
      await assertCharged(gw(), user.api_key, created.id, "image", IMAGE);
    });

    test("a speech prediction with the default filter: start and completed, written at once, both signed", async () => {
      const start = await balance();
      const text = "Webhooks for speech.";
      const created = await client().predictions.create({ model: "gateway/alpha-multilingual-v2", input: { text, voice_id: voiceId }, webhook: `${rx.url}/speech` });
      assert.equal(created.status, "succeeded", "a speech prediction is stored at once");
      const got = await deliveriesTo("/speech", 2);
      const bodies = await Promise.all(got.map((x) => verified("/speech", x)));
      assert.deepEqual(bodies.map((b) => b.status).sort(), ["starting", "succeeded"]);
      const ended = bodies.find((b) => b.status === "succeeded");
      assert.equal(ended?.id, created.id);
      assert.equal(typeof ended?.output, "string");
      assert.equal(ended?.output, created.output);
      const cost = text.length * SPEECH_PER_CHAR;
      assert.equal(await balance(), start - cost);
      await assertCharged(gw(), user.api_key, created.id, "speech", cost);
    });

    test("a canceled prediction's completed event: the prediction canceled, the hold released", async () => {
      const start = await balance();
      const hanging = replicateClient(rg.publicUrl, user.api_key, { "X-Svc-Simulate": "hang" });
      const created = await hanging.predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "stopped midway", duration: 2 }, webhook: `${rx.url}/canceled` });
      await rx.waitFor(() => rx.on("/canceled").length >= 1, "the start event");
      assert.equal((await client().predictions.cancel(created.id)).status, "canceled");
      const got = await deliveriesTo("/canceled", 2);
      const bodies = await Promise.all(got.map((x) => verified("/canceled", x)));
      assert.deepEqual(bodies.map((b) => b.status), ["starting", "canceled"]);
      assert.equal(bodies[1].output, null);
      assert.equal(await balance(), start, "the hold released");
      await assertNotCharged(gw(), user.api_key, created.id, "video");
    });

    test("Cancel-After ending a queued prediction aborted: its completed event is the aborted prediction; a wait answers it aborted", async () => {
      // An account with one video place, held by a job that never ends by itself.
      const solo = await fundedAccount(gw(), 20, { video_concurrent: 1, video_queue_depth_cap: 5 });
      const start = await checkedBalance(gw(), solo);
      const blocker = await replicateClient(rg.publicUrl, solo.api_key, { "X-Svc-Simulate": "hang" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "holding the place", duration: 1 } });
      await jobStatusIs(gw(), blocker.id, (st) => st === "processing");
      const queued = await replicateClient(rg.publicUrl, solo.api_key, { "Cancel-After": "500ms" }).predictions.create({
        model: "gateway/vidD-3-fast",
        input: { prompt: "never runs", duration: 1 },
        webhook: `${rx.url}/aborted`,
        wait: 30,
      });
      assert.equal(queued.status, "aborted", "the wait ended with the deadline");
      const got = await deliveriesTo("/aborted", 2);
      // Signed with this account's own default secret (each account has its own).
      const soloSecret = (await replicateClient(rg.publicUrl, solo.api_key).webhooks.default.secret.get()).key;
      assert.notEqual(soloSecret, secret);
      assert.equal(await validateWebhook(requestOf(`${rx.url}/aborted`, got[0]), secret), false, "another account's secret fails");
      const bodies = await Promise.all(got.map((x) => verified("/aborted", x, soloSecret)));
      assert.deepEqual(bodies.map((b) => b.status).sort(), ["aborted", "starting"]);
      assert.equal((await replicateClient(rg.publicUrl, solo.api_key).predictions.cancel(blocker.id)).status, "canceled");
      assert.equal(await checkedBalance(gw(), solo), start, "both holds released");
      await assertNotCharged(gw(), solo.api_key, queued.id, "video");
    });

    test("a webhook the client rejects never reaches the gateway; one the gateway refuses is a 422 naming webhook", async () => {
      const start = await balance();
      await assert.rejects(client().predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "x" }, webhook: "not a url" }), /Invalid webhook URL/);
      await assert.rejects(
        client().predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "x" }, webhook: "ftp://127.0.0.1/hook" }),
        (err: Error & { response?: Response }) => {
          assert.equal(err.response?.status, 422, err.message);
          assert.match(err.message, /"invalid_fields":\[\{[^\]]*"field":"webhook"/);
          return true;
        },
      );
      await assert.rejects(
        client().predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "x" }, webhook: `${rx.url}/bad-filter`, webhook_events_filter: ["finished" as "completed"] }),
        (err: Error & { response?: Response }) => {
          assert.equal(err.response?.status, 422, err.message);
          assert.match(err.message, /"field":"webhook_events_filter"/);
          return true;
        },
      );
      assert.equal(await balance(), start, "nothing held");
    });
  });
}
