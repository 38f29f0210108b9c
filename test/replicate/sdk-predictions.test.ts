/**
 * Predictions of the Replicate dialect (D47) driven by the `replicate` client (1.4.0, unchanged), on SQLite
 * and PostgreSQL, behind the TLS front: `predictions.create` without a wait (`starting`/`processing`),
 * `get`, `list`, `wait`; `cancel` of a running video (its hold released), also by `run`'s `signal`;
 * `Prefer: wait` through `create({wait: 10})` and `wait: true` (succeeded at once), and `wait: 1` on a long
 * video (`starting`, then `replicate.wait` reaches `succeeded`; `run` with a 1 s blocking wait still returns
 * the video); `Cancel-After` ending `aborted` (a job that could not start:
 * the account's one video place held by another job) and `canceled` (a job running at its deadline), both
 * releasing the hold. Exact money after each: balance, balance == ledger sum, the usage record (kind,
 * cost, status) and its ledger entries.
 *
 * Long jobs: the simulator runs at `SIM_LATENCY_SCALE=0.1` here (a 1 s video of vidD-3-fast takes
 * (45 + 3) x 0.1 s +-20 %, at least 3.8 s; an image about 0.8 s), so that a 1 s wait runs out before the
 * video ends. Jobs that must still be running when they are canceled use the simulator's
 * `X-Svc-Simulate: hang` (a job that never ends by itself, as the OpenAI dialect's cancel test does), sent
 * on the create by the client's `fetch` option (fixtures.ts `replicateClient`), as is `Cancel-After`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BACKENDS } from "../helpers/backends.ts";
import {
  type Account,
  assertCharged,
  assertNotCharged,
  checkedBalance,
  fundedAccount,
  holdCount,
  jobStatusIs,
  type ReplicateGateway,
  replicateClient,
  settled,
  startReplicateGateway,
  VID_PER_S,
  IMAGE,
} from "./fixtures.ts";


for (const backend of BACKENDS) {
  describe(`replicate predictions on ${backend.name} (D47)`, { skip: backend.skip }, () => {
    let rg: ReplicateGateway;
    let user: Account;

    const gw = () => rg.gw;
    const client = (headers: Record<string, string> = {}) => replicateClient(rg.publicUrl, user.api_key, headers);
    const balance = () => checkedBalance(gw(), user);

    before(async () => {
      rg = await startReplicateGateway(backend.name, { SIM_LATENCY_SCALE: "0.1" });
      user = await fundedAccount(rg.gw, 20, { video_concurrent: 10, video_queue_depth_cap: 20, image_concurrent: 10 });
    });
    after(async () => {
      await rg?.close();
    });

    test("create without a wait answers starting or processing; get and list show it; wait reaches succeeded; charged once", async () => {
      const start = await balance();
      const created = await client().predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "a paper plane over a city", duration: 1 } });
      assert.match(created.id, /^job_/);
      assert.ok(["starting", "processing"].includes(created.status), created.status);
      assert.equal(created.model, "gateway/vidD-3-fast");
      assert.match(created.version, /^[0-9a-f]{64}$/);
      assert.deepEqual(created.input, { prompt: "a paper plane over a city", duration: 1 });
      assert.equal(created.output, null);
      assert.equal(created.error, null);
      assert.equal(created.urls.get, `${rg.publicUrl}/replicate/v1/predictions/${created.id}`);
      assert.equal(created.urls.cancel, `${rg.publicUrl}/replicate/v1/predictions/${created.id}/cancel`);
      assert.equal(await balance(), start - VID_PER_S, "held while it runs");

      const got = await client().predictions.get(created.id);
      assert.equal(got.id, created.id);
      assert.ok(["starting", "processing"].includes(got.status), got.status);
      const page = await client().predictions.list();
      assert.equal(page.next, null);
      assert.ok(page.results.some((p) => p.id === created.id), "listed");

      const done = await client().wait(created);
      assert.equal(done.status, "succeeded", JSON.stringify(done));
      assert.equal(typeof done.output, "string");
      assert.ok(String(done.output).startsWith(`${rg.publicUrl}/v1/files/`), String(done.output));
      assert.equal(typeof done.completed_at, "string");
      assert.ok((done.metrics?.predict_time ?? -1) >= 0);
      assert.equal(await balance(), start - VID_PER_S);
      await assertCharged(gw(), user.api_key, created.id, "video", VID_PER_S);
    });

    test("cancel of a running video: canceled, its whole hold released, nothing charged", async () => {
      const start = await balance();
      const holds = await holdCount(gw(), user);
      const created = await client({ "X-Svc-Simulate": "hang" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "a slow sunrise", duration: 4 } });
      await jobStatusIs(gw(), created.id, (s) => s === "processing");
      assert.equal((await client().predictions.get(created.id)).status, "processing");
      assert.equal(await balance(), start - 4 * VID_PER_S, "held");

      const canceled = await client().predictions.cancel(created.id);
      assert.equal(canceled.id, created.id);
      assert.equal(canceled.status, "canceled");
      assert.equal(canceled.output, null);
      assert.equal((await client().predictions.get(created.id)).status, "canceled");
      assert.equal(await balance(), start, "the hold released");
      assert.equal(await holdCount(gw(), user), holds + 1, "one hold, placed and released");
      await assertNotCharged(gw(), user.api_key, created.id, "video");
      // A second cancel answers the prediction as it is (Replicate's behaviour), moving nothing.
      assert.equal((await client().predictions.cancel(created.id)).status, "canceled");
      assert.equal(await balance(), start);
    });

    test("Prefer: wait: create({wait: 10}) and create({wait: true}) answer the succeeded prediction", async () => {
      const start = await balance();
      const seen: string[] = [];
      const watched = client();
      const own = watched.fetch;
      watched.fetch = (input, init) => {
        if (init?.method === "POST") seen.push(new Headers(init.headers).get("prefer") ?? "");
        return own(input, init);
      };
      const ten = await watched.predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "a teapot" }, wait: 10 });
      const blocking = await watched.predictions.create({ model: "gateway/imgB-2-pro", input: { prompt: "a teacup" }, wait: true });
      assert.deepEqual(seen, ["wait=10", "wait"], "what the client sent");
      for (const p of [ten, blocking]) {
        assert.equal(p.status, "succeeded", JSON.stringify(p));
        assert.ok(Array.isArray(p.output) && p.output.length === 1, JSON.stringify(p.output));
        assert.equal(typeof p.completed_at, "string");
        await assertCharged(gw(), user.api_key, p.id, "image", IMAGE);
      }
      assert.equal(await balance(), start - 2 * IMAGE);
    });

    test("wait: 1 on a long video answers starting; replicate.wait then reaches succeeded", async () => {
      const start = await balance();
      const created = await client().predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "a heron taking off", duration: 1 }, wait: 1 });
      assert.equal(created.status, "starting", "a wait that ran out answers starting (D47)");
      assert.equal(created.output, null);
      const done = await client().wait(created);
      assert.equal(done.status, "succeeded");
      assert.equal(typeof done.output, "string");
      assert.equal(await balance(), start - VID_PER_S);
      await assertCharged(gw(), user.api_key, created.id, "video", VID_PER_S);
    });

    test("run with a 1 s blocking wait on a long video: the answer is starting, run polls and returns the FileOutput", async () => {
      const start = await balance();
      const output = await client().run("gateway/vidD-3-fast", { input: { prompt: "a fox running in snow", duration: 1 }, wait: { mode: "block", timeout: 1 } });
      assert.ok(output instanceof ReadableStream && typeof (output as { url?: unknown }).url === "function", `a FileOutput, not an empty output: ${String(output)}`);
      const [p] = (await client().predictions.list()).results;
      assert.equal(p.status, "succeeded");
      assert.equal(String(output), p.output);
      assert.equal(await balance(), start - VID_PER_S);
      await assertCharged(gw(), user.api_key, p.id, "video", VID_PER_S);
    });

    test("run's 500 ms polls of a running video stay within a small per-minute limit: each read holds until the end or 2 s", async () => {
      // An account allowed 8 requests a minute: unheld, a 1 s wait and then polls every 500 ms over a video
      // of several seconds would pass 8 and end in a 429; held, the loop makes a few reads.
      const slow = await fundedAccount(rg.gw, 5, { rpm: 8, video_concurrent: 2 });
      const seen: string[] = [];
      const output = await replicateClient(rg.publicUrl, slow.api_key).run(
        "gateway/vidD-3-fast",
        { input: { prompt: "a slow tide", duration: 4 }, wait: { mode: "block", timeout: 1 } },
        (p) => seen.push(p.status),
      );
      assert.ok(output instanceof ReadableStream, `a FileOutput: ${String(output)}`);
      assert.equal(seen[0], "starting", "the 1 s wait ran out");
      assert.ok(seen.length <= 7, `at most a create and a few reads: ${seen.join(", ")}`);
      assert.equal(await checkedBalance(gw(), slow), 5_500_000 - 4 * VID_PER_S);
    });

    test("run with an AbortSignal: the client cancels the prediction itself; canceled, the hold released", async () => {
      const start = await balance();
      const controller = new AbortController();
      const seen: string[] = [];
      const running = client({ "X-Svc-Simulate": "hang" }).run(
        "gateway/vidD-3-fast",
        { input: { prompt: "interrupted", duration: 2 }, wait: { mode: "poll", interval: 50 }, signal: controller.signal },
        (p) => {
          seen.push(p.status);
          if (p.status === "processing") controller.abort();
        },
      );
      const output = await running;
      assert.equal(output, null, "a canceled prediction has no output");
      const [p] = (await client().predictions.list()).results;
      assert.equal(p.status, "canceled");
      assert.equal(seen[seen.length - 1], "canceled", "the client saw the cancel's answer");
      assert.equal(await balance(), start, "the hold released");
      await assertNotCharged(gw(), user.api_key, p.id, "video");
    });

    test("Cancel-After ends a job that could not start aborted, its hold released", async () => {
      // An account with one video place, held by a job that never ends by itself: the next video waits.
      const solo = await fundedAccount(gw(), 20, { video_concurrent: 1, video_queue_depth_cap: 5 });
      const soloClient = (headers: Record<string, string> = {}) => replicateClient(rg.publicUrl, solo.api_key, headers);
      const start = await checkedBalance(gw(), solo);
      const holds = await holdCount(gw(), solo);
      const blocker = await soloClient({ "X-Svc-Simulate": "hang" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "the place holder", duration: 2 } });
      await jobStatusIs(gw(), blocker.id, (s) => s === "processing");

      const waiting = await soloClient({ "Cancel-After": "1s" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "never started", duration: 3 } });
      assert.equal(waiting.status, "starting", "queued behind the blocker");
      assert.equal(await checkedBalance(gw(), solo), start - 5 * VID_PER_S, "both held");
      const ended = await settled(soloClient(), waiting.id);
      assert.equal(ended.status, "aborted", JSON.stringify(ended));
      assert.equal(ended.started_at ?? null, null, "it never started");
      assert.equal(await checkedBalance(gw(), solo), start - 2 * VID_PER_S, "the aborted job's hold released");
      await assertNotCharged(gw(), solo.api_key, waiting.id, "video");

      assert.equal((await soloClient().predictions.cancel(blocker.id)).status, "canceled");
      assert.equal(await checkedBalance(gw(), solo), start, "everything released");
      assert.equal(await holdCount(gw(), solo), holds + 2);
      await assertNotCharged(gw(), solo.api_key, blocker.id, "video");
    });

    test("Cancel-After cancels a job running at its deadline, its hold released", async () => {
      const start = await balance();
      const created = await client({ "Cancel-After": "2s", "X-Svc-Simulate": "hang" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "a clock ticking", duration: 3 } });
      await jobStatusIs(gw(), created.id, (s) => s === "processing");
      assert.equal(await balance(), start - 3 * VID_PER_S, "held");
      const ended = await settled(client(), created.id);
      assert.equal(ended.status, "canceled", JSON.stringify(ended));
      assert.equal(typeof ended.started_at, "string", "it had started");
      assert.equal(await balance(), start, "the hold released");
      await assertNotCharged(gw(), user.api_key, created.id, "video");
    });

    test("a Cancel-After that is not a duration is a 400 problem and holds nothing", async () => {
      const start = await balance();
      const holds = await holdCount(gw(), user);
      const f = client({ "Cancel-After": "soon" }).predictions.create({ model: "gateway/vidD-3-fast", input: { prompt: "x", duration: 1 } });
      await assert.rejects(f, (err: Error & { response?: Response }) => {
        assert.equal(err.response?.status, 400);
        assert.match(err.response?.headers.get("content-type") ?? "", /^application\/problem\+json/);
        return true;
      });
      assert.equal(await holdCount(gw(), user), holds);
      assert.equal(await balance(), start);
    });
  });
}
