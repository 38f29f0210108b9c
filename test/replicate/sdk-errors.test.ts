/**
 * Refusals, test-mode keys, idempotency and paging of the Replicate dialect (D47) with the `replicate`
 * client (1.4.0, unchanged), on SQLite and PostgreSQL behind the TLS front: an unknown model (404
 * `ApiError`, problem+json), invalid input (422 with `invalid_fields` naming the field), a bad key (401), a
 * balance too low (402), each holding and charging nothing; a prediction that fails (`run` throws, the hold
 * released); another account's prediction (404 to get and cancel); a test-mode key (`gw_test_...`) whose
 * predictions run on the simulator and move no money; a create retried with the same `Idempotency-Key`
 * (the same answer, one job, one charge; another body is a 409); `predictions.list` paging past 100.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FileOutput } from "replicate";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import {
  type Account,
  assertCharged,
  assertNotCharged,
  assertProblem,
  checkedBalance,
  failure,
  fundedAccount,
  holdCount,
  jobStatusIs,
  magicOf,
  micros,
  type ReplicateGateway,
  replicateClient,
  startReplicateGateway,
  usageOf,
  IMAGE,
  SPEECH_PER_CHAR,
} from "./fixtures.ts";


for (const backend of BACKENDS) {
  describe(`replicate refusals, test mode, idempotency and paging on ${backend.name} (D47)`, { skip: backend.skip }, () => {
    let rg: ReplicateGateway;
    let user: Account;
    let voiceId: string;

    const gw = () => rg.gw;
    const client = (headers: Record<string, string> = {}) => replicateClient(rg.publicUrl, user.api_key, headers);
    const balance = () => checkedBalance(gw(), user);
    const ledgerRows = async (a: Account) =>
      (await gw().services.db.kysely.selectFrom("ledger_entries").select("id").where("account_id", "=", a.org_id).execute()).length;

    before(async () => {
      rg = await startReplicateGateway(backend.name);
      user = await fundedAccount(rg.gw);
      voiceId = (await rg.gw.request("GET", "/v1/audio/voices?provider=alpha", { token: user.api_key })).json.data[0].voice_id as string;
    });
    after(async () => {
      await rg?.close();
    });

    test("an unknown model: 404 problem+json from run and models.get, an unknown version 422; nothing held", async () => {
      const start = await balance();
      const holds = await holdCount(gw(), user);
      const run = await failure(client().run("gateway/no-such-model", { input: { prompt: "x" } }));
      assertProblem(run, 404, "model_not_found");
      assert.match(run.body.detail, /gateway\/no-such-model/);
      assertProblem(await failure(client().run("acme/unknown", { input: { prompt: "x" } })), 404, "model_not_found");
      assertProblem(await failure(client().models.get("gateway", "no-such-model")), 404, "model_not_found");
      const version = await failure(client().predictions.create({ version: "0".repeat(64), input: { prompt: "x" } }));
      assertProblem(version, 422);
      assert.deepEqual(version.body.invalid_fields.map((f: { field: string }) => f.field), ["version"]);
      assertProblem(await failure(client().predictions.get("job_doesnotexist")), 404);
      assertProblem(await failure(client().predictions.cancel("job_doesnotexist")), 404);
      assert.equal(await holdCount(gw(), user), holds);
      assert.equal(await balance(), start);
    });

    test("invalid input: 422 with invalid_fields naming the field, nothing held or charged", async () => {
      const start = await balance();
      const holds = await holdCount(gw(), user);
      const cases: [string, Record<string, unknown>, string][] = [
        ["gateway/vidD-3-fast", { prompt: "waves", duration: 99 }, "duration"],
        ["gateway/imgB-2-pro", { size: "1:1" }, "prompt"],
        ["gateway/imgB-edit-pro", { prompt: "edit", image_url: "http://127.0.0.1/not-https.png" }, "image_url"],
        ["black-forest-labs/flux-2-pro", { prompt: "x", aspect_ratio: 5 }, "aspect_ratio"],
        ["google/veo-3.1-fast", { prompt: "x", resolution: "1080p" }, "resolution"],
        ["gateway/alpha-multilingual-v2", { text: "no voice given" }, "voice_id"],
      ];
      for (const [model, input, field] of cases) {
        const f = await failure(client().run(model as `${string}/${string}`, { input }));
        assertProblem(f, 422);
        assert.ok(Array.isArray(f.body.invalid_fields) && f.body.invalid_fields.length >= 1, JSON.stringify(f.body));
        const named = (f.body.invalid_fields as { field: string; type: string; description: string }[]).map((x) => x.field);
        // An input field is named `input.<field>`, whichever check refused it (the dialect's or the native one).
        assert.ok(named.includes(`input.${field}`), `${model}: input.${field} in ${JSON.stringify(f.body)}`);
        for (const x of f.body.invalid_fields as { type: string; description: string }[]) {
          assert.equal(typeof x.type, "string");
          assert.equal(typeof x.description, "string");
        }
      }
      assert.equal(await holdCount(gw(), user), holds, "no hold");
      assert.equal(await balance(), start, "nothing charged");
    });

    test("a bad key or none: 401 problem+json; `Token <key>` is accepted as Replicate's other scheme", async () => {
      assertProblem(await failure(replicateClient(rg.publicUrl, "gw_live_not_a_real_key_0000000000").predictions.list()), 401, "auth_error");
      const start = await balance();
      assertProblem(await failure(replicateClient(rg.publicUrl, "gw_live_not_a_real_key_0000000000").run("gateway/imgB-2-pro", { input: { prompt: "x" } })), 401);
      const none = await fetch(`${rg.publicUrl}/replicate/v1/predictions`);
      assert.equal(none.status, 401);
      assert.match(none.headers.get("content-type") ?? "", /^application\/problem\+json/);
      const token = await fetch(`${rg.publicUrl}/replicate/v1/predictions`, { headers: { authorization: `Token ${user.api_key}` } });
      assert.equal(token.status, 200);
      assert.equal(await balance(), start);
    });

    test("a balance too low for the hold: 402 problem+json, nothing held", async () => {
      // Tier 1 by the operator (video allowed) with only the signup credit: 10 s of vidD-3-fast (1.35 USD) cannot be held.
      const poor = await gw().register();
      const tier = await gw().request("PUT", `/v1/admin/users/${poor.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 1 } });
      assert.equal(tier.status, 200);
      const start = await checkedBalance(gw(), poor);
      assert.ok(start < 1_350_000, `the signup credit only: ${start}`);
      const holds = await holdCount(gw(), poor);
      const entries = await ledgerRows(poor);
      const f = await failure(replicateClient(rg.publicUrl, poor.api_key).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "too dear", duration: 10 } }));
      assertProblem(f, 402, "insufficient_balance");
      assert.equal(await holdCount(gw(), poor), holds, "no hold");
      assert.equal(await ledgerRows(poor), entries, "no ledger entry");
      assert.equal(await checkedBalance(gw(), poor), start);
      assert.deepEqual((await replicateClient(rg.publicUrl, poor.api_key).predictions.list()).results, [], "no prediction");
    });

    test("a prediction that fails: run throws the client's 'Prediction failed', the hold released, nothing charged", async () => {
      const start = await balance();
      const failing = client({ "X-Svc-Simulate": "fail" });
      await assert.rejects(failing.run("gateway/imgB-2-pro", { input: { prompt: "this one fails" } }), /^Error: Prediction failed: /);
      const [p] = (await client().predictions.list()).results;
      assert.equal(p.status, "failed");
      assert.equal(typeof p.error, "string");
      assert.equal(p.output, null);
      assert.equal(await balance(), start, "the hold released");
      await assertNotCharged(gw(), user.api_key, p.id, "image");
    });

    test("another account's prediction is not found: get and cancel answer 404 and change nothing", async () => {
      const mine = await client({ "X-Svc-Simulate": "hang" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "only mine", duration: 1 } });
      const other = await fundedAccount(gw());
      const theirs = replicateClient(rg.publicUrl, other.api_key);
      assertProblem(await failure(theirs.predictions.get(mine.id)), 404);
      assertProblem(await failure(theirs.predictions.cancel(mine.id)), 404);
      assert.ok(!(await theirs.predictions.list()).results.some((p) => p.id === mine.id), "not listed to them");
      assert.notEqual((await client().predictions.get(mine.id)).status, "canceled");
      const start = await balance();
      assert.equal((await client().predictions.cancel(mine.id)).status, "canceled");
      assert.equal(await balance(), start + 135_000, "its owner's cancel releases the hold");
      await assertNotCharged(gw(), user.api_key, mine.id, "video");
    });

    test("a test-mode key: image, video and speech predictions run on the simulator and move no money", async () => {
      const created = await gw().request("POST", "/v1/auth/keys", { token: user.session_token, body: { name: "replicate-ci", mode: "test" } });
      assert.equal(created.status, 201);
      const testKey = created.json.api_key as string;
      assert.match(testKey, /^gw_test_/);
      const test = replicateClient(rg.publicUrl, testKey);
      const start = await balance();
      const entries = await ledgerRows(user);

      const image = await test.run("gateway/imgB-2-pro", { input: { prompt: "a test image" } });
      assert.ok(Array.isArray(image) && image.length === 1);
      assert.equal(magicOf(new Uint8Array(await (await (image[0] as FileOutput).blob()).arrayBuffer())), "png");
      const video = await test.run("gateway/vidD-3-fast", { input: { prompt: "a test video", duration: 2 } });
      assert.equal(magicOf(new Uint8Array(await (await (video as FileOutput).blob()).arrayBuffer())), "mp4");
      const speech = await test.run("gateway/alpha-multilingual-v2", { input: { text: "A test voice.", voice_id: voiceId } });
      assert.equal(magicOf(new Uint8Array(await (await (speech as FileOutput).blob()).arrayBuffer())), "mp3");

      assert.equal(await balance(), start, "the balance unchanged");
      assert.equal(await ledgerRows(user), entries, "no ledger entry");
      const predictions = (await test.predictions.list()).results.slice(0, 3);
      assert.deepEqual(predictions.map((p) => [p.model, p.status]), [
        ["gateway/alpha-multilingual-v2", "succeeded"],
        ["gateway/vidD-3-fast", "succeeded"],
        ["gateway/imgB-2-pro", "succeeded"],
      ]);
      const kinds = ["speech", "video", "image"];
      for (const [i, p] of predictions.entries()) {
        const records = await usageOf(gw(), testKey, p.id, "test");
        assert.equal(records.length, 1, JSON.stringify(records));
        assert.equal(records[0].mode, "test");
        assert.equal(records[0].kind, kinds[i]);
        assert.equal(records[0].status, "succeeded");
        assert.deepEqual(records[0].ledger, [], "no ledger entry for a test-mode call");
        assert.deepEqual(await usageOf(gw(), user.api_key, p.id, "live"), [], "no live record");
      }
      const cost = (id: string) => usageOf(gw(), testKey, id, "test").then((r) => micros(r[0].cost_usd ?? Number.NaN));
      assert.equal(await cost(predictions[2].id), IMAGE, "priced as live, not charged");
      assert.equal(await cost(predictions[1].id), 2 * 135_000);
    });

    test("an image create retried with the same Idempotency-Key: the same answer, one job, one hold, one charge; another body is a 409", async () => {
      const start = await balance();
      const holds = await holdCount(gw(), user);
      const keyed = client({ "Idempotency-Key": `replicate-image-${backend.name}` });
      const params = { model: "gateway/imgB-2-pro", input: { prompt: "one lighthouse, once" } } as const;
      const first = await keyed.predictions.create(params);
      const second = await keyed.predictions.create(params);
      assert.deepEqual(second, first, "the first answer again");
      assert.equal(await holdCount(gw(), user), holds + 1, "one hold");
      const jobs = await gw().services.db.kysely.selectFrom("jobs").select("id").where("account_id", "=", user.org_id).where("request_json", "like", "%one lighthouse, once%").execute();
      assert.deepEqual(jobs.map((j) => j.id), [first.id], "one job");
      assertProblem(await failure(keyed.predictions.create({ ...params, input: { prompt: "another lighthouse" } })), 409, "idempotency_conflict");

      const done = await client().wait(first);
      assert.equal(done.status, "succeeded");
      assert.equal(await balance(), start - IMAGE);
      await assertCharged(gw(), user.api_key, first.id, "image", IMAGE);
    });

    test("a speech create retried with the same Idempotency-Key: one prediction, one charge", async () => {
      const start = await balance();
      const text = "Said once.";
      const keyed = client({ "Idempotency-Key": `replicate-speech-${backend.name}` });
      const params = { model: "gateway/alpha-multilingual-v2", input: { text, voice_id: voiceId } } as const;
      const first = await keyed.predictions.create(params);
      const second = await keyed.predictions.create(params);
      assert.equal(first.status, "succeeded");
      assert.deepEqual(second, first);
      assert.equal(await balance(), start - text.length * SPEECH_PER_CHAR);
      await assertCharged(gw(), user.api_key, first.id, "speech", text.length * SPEECH_PER_CHAR);
    });

    test("predictions.list pages past 100: next, then paginate walks every prediction once", async () => {
      const many = await fundedAccount(gw(), 20, { image_concurrent: 50, image_queue_depth_cap: 500 });
      const c = replicateClient(rg.publicUrl, many.api_key);
      const start = await checkedBalance(gw(), many);
      const ids: string[] = [];
      for (let batch = 0; batch < 101; batch += 20) {
        const n = Math.min(20, 101 - batch);
        const made = await Promise.all(Array.from({ length: n }, (_, i) => c.predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: `page item ${batch + i}` } })));
        ids.push(...made.map((p) => p.id));
      }
      const first = await c.predictions.list();
      assert.equal(first.results.length, 100);
      assert.ok(first.next?.startsWith(`${rg.publicUrl}/replicate/v1/predictions?cursor=`), String(first.next));
      const walked: string[] = [];
      for await (const page of c.paginate(() => c.predictions.list())) walked.push(...page.map((p) => p.id));
      assert.equal(walked.length, 101);
      assert.deepEqual([...walked].sort(), [...ids].sort(), "every prediction once");
      for (const id of ids) await jobStatusIs(gw(), id, (st) => st === "succeeded");
      assert.equal(await checkedBalance(gw(), many), start - 101 * IMAGE);
    });
  });
}
