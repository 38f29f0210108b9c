/**
 * The job API of D30 over real HTTP on both databases: the list (filters, paging, only the caller's jobs),
 * cancel (pending and processing jobs end `failed`/`canceled` with the hold released and the runner's work
 * dropped; 409 and 404), `queue_position` counting down for a tier-0 account and across the combined pool
 * of tier 4, `Retry-After` only on polls of unfinished jobs, the event stream (every change in order, then
 * the end) and `Prefer: wait`.
 *
 * The image upstream is a controlled one (job-api-helpers.ts) so each step happens when the test says;
 * the database, runner, limits and HTTP are the real ones. The last suite runs the built-in simulator, whose
 * timing gives the progress.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ControlledVisual, controlledVisual, openEvents, type ServerEvent, sleep } from "./job-api-helpers.ts";

const IMAGE_HOLD_MICROS = 54_000; // imgA-v4, one image

function assertError(res: { status: number; json: { error?: Record<string, unknown> } }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json?.error?.code, code, JSON.stringify(res.json));
}

for (const backend of BACKENDS) {
  describe(`job API on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let ctl: ControlledVisual;
    let seq = 0;
    before(async () => {
      ctl = controlledVisual();
      gw = await startGateway(backend.name, {}, { overrides: { visual: ctl }, runner: { pollMs: 20 } });
    });
    after(async () => {
      await gw?.close();
    });

    /** A user; `roomy` lifts the request windows and the image pool so a test is limited by nothing else. */
    async function user(opts: { depositUsd?: number; roomy?: boolean } = {}) {
      const u = await gw.register();
      if (opts.depositUsd) await gw.deposit(u.user_id, opts.depositUsd);
      if (opts.roomy) {
        const limits = { rpm: 100_000, per_model_rpm: 100_000, image_concurrent: 50, image_queue_depth_cap: 100, video_concurrent: 50, video_queue_depth_cap: 100 };
        const r = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: limits });
        assert.equal(r.status, 200, JSON.stringify(r.json));
      }
      return u;
    }
    const prompt = (name: string) => `${name} ${backend.name} ${++seq}`;
    const submitImage = (token: string, p: string, headers?: Record<string, string>) =>
      gw.request("POST", "/v1/images/generations", { token, body: { model: "imgA-v4", prompt: p }, headers });
    const getJob = (token: string, id: string, headers?: Record<string, string>) => gw.request("GET", `/v1/jobs/${id}`, { token, headers });
    const cancel = (token: string, id: string) => gw.request("POST", `/v1/jobs/${id}/cancel`, { token });
    /** Ledger kinds and sum of one job, micro-USD. */
    async function ledgerOf(jobId: string) {
      const rows = await gw.services.db.kysely.selectFrom("ledger_entries").select(["kind", "amount_micros"]).where("job_id", "=", jobId).orderBy("seq").execute();
      return { kinds: rows.map((r) => r.kind), net: rows.reduce((s, r) => s + Number(r.amount_micros), 0) };
    }
    async function balanceMatchesLedger(userId: string) {
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, userId), await ledgerSum(db, userId));
    }
    /** Waits until the job's row has `status` (the runner works asynchronously). */
    async function rowStatus(id: string, status: string, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const r = await gw.services.db.kysely.selectFrom("jobs").select("status").where("id", "=", id).executeTakeFirstOrThrow();
        if (r.status === status) return;
        if (Date.now() > end) assert.fail(`job ${id} is ${r.status}, not ${status}`);
        await sleep(10);
      }
    }

    test("GET /v1/jobs: newest first, filters by status, kind and model, pages with after, only the caller's jobs", async () => {
      const a = await user({ depositUsd: 20, roomy: true });
      const b = await user({ roomy: true });
      const prompts = [prompt("list-a"), prompt("list-b"), prompt("list-c")];
      const ids: string[] = [];
      for (const p of prompts) {
        const r = await submitImage(a.api_key, p);
        assert.equal(r.status, 202);
        ids.push(r.json.id);
        await sleep(3); // distinct created_at: the order under test is the submission order
      }
      const vp = prompt("list-video");
      const v = await gw.request("POST", "/v1/videos/generations", { token: a.api_key, body: { model: "vidA-2.5-pro", prompt: vp, duration: 5 } });
      assert.equal(v.status, 202, JSON.stringify(v.json));
      ids.push(v.json.id);
      const other = await submitImage(b.api_key, prompt("list-other"));
      assert.equal(other.status, 202);

      for (const p of [...prompts, vp]) await ctl.started(p);
      ctl.end(prompts[0]);
      ctl.end(prompts[1], "fail");
      await rowStatus(ids[0], "succeeded");
      await rowStatus(ids[1], "failed");

      const all = await gw.request("GET", "/v1/jobs", { token: a.api_key });
      assert.equal(all.status, 200);
      assert.equal(all.json.object, "list");
      assert.equal(all.json.has_more, false);
      assert.deepEqual(all.json.data.map((j: { id: string }) => j.id), [...ids].reverse(), "newest first, only the caller's");
      assert.equal(all.json.data[0].kind, "video");
      assert.equal(all.json.data[0].status, "processing");

      const ofStatus = async (query: string) => (await gw.request("GET", `/v1/jobs?${query}`, { token: a.api_key })).json.data.map((j: { id: string }) => j.id);
      assert.deepEqual(await ofStatus("status=succeeded"), [ids[0]]);
      assert.deepEqual(await ofStatus("status=failed"), [ids[1]]);
      assert.deepEqual(await ofStatus("status=processing&kind=image"), [ids[2]]);
      assert.deepEqual(await ofStatus("kind=video"), [ids[3]]);
      assert.deepEqual(await ofStatus("model=imgA-v4"), [ids[2], ids[1], ids[0]]);
      assert.deepEqual(await ofStatus("model=imgA-v4&status=pending"), []);
      assert.deepEqual(await ofStatus("kind=audio"), []);

      // Pages of 2, then 2, then none left.
      const p1 = await gw.request("GET", "/v1/jobs?limit=2", { token: a.api_key });
      assert.deepEqual(p1.json.data.map((j: { id: string }) => j.id), [ids[3], ids[2]]);
      assert.equal(p1.json.has_more, true);
      const p2 = await gw.request("GET", `/v1/jobs?limit=2&after=${ids[2]}`, { token: a.api_key });
      assert.deepEqual(p2.json.data.map((j: { id: string }) => j.id), [ids[1], ids[0]]);
      assert.equal(p2.json.has_more, false);
      // Another account's job as the cursor reveals nothing: it is ignored (the first page).
      const foreign = await gw.request("GET", `/v1/jobs?limit=1&after=${other.json.id}`, { token: a.api_key });
      assert.deepEqual(foreign.json.data.map((j: { id: string }) => j.id), [ids[3]]);

      const bList = await gw.request("GET", "/v1/jobs", { token: b.api_key });
      assert.deepEqual(bList.json.data.map((j: { id: string }) => j.id), [other.json.id]);

      assertError(await gw.request("GET", "/v1/jobs?limit=0", { token: a.api_key }), 400, "invalid_request");
      assertError(await gw.request("GET", "/v1/jobs?limit=101", { token: a.api_key }), 400, "invalid_request");
      assertError(await gw.request("GET", "/v1/jobs?status=done", { token: a.api_key }), 400, "invalid_request");
      assertError(await gw.request("GET", "/v1/jobs?kind=music", { token: a.api_key }), 400, "invalid_request");
      assertError(await gw.request("GET", "/v1/jobs"), 401, "auth_error");

      ctl.end(prompts[2]);
      ctl.end(vp);
      assert.equal((await cancel(b.api_key, other.json.id)).status, 200);
    });

    test("cancel: a pending and a processing job end failed/canceled with the whole hold released; the runner stops without charging; 409 once ended; 404 for unknown and another user's", async () => {
      const u = await user(); // tier 0: two images run, the rest wait
      const stranger = await user();
      const before = await getBalance(gw.services.db.kysely, u.org_id);
      const [p1, p2, p3] = [prompt("cancel-1"), prompt("cancel-2"), prompt("cancel-3")];
      const j1 = (await submitImage(u.api_key, p1)).json;
      const j2 = (await submitImage(u.api_key, p2)).json;
      await ctl.started(p1);
      await ctl.started(p2);
      const j3 = (await submitImage(u.api_key, p3)).json;
      assert.equal((await getJob(u.api_key, j3.id)).json.status, "pending");

      // A pending job: never reaches the upstream.
      const c3 = await cancel(u.api_key, j3.id);
      assert.equal(c3.status, 200, JSON.stringify(c3.json));
      assert.equal(c3.json.id, j3.id);
      assert.equal(c3.json.object, "media.job");
      assert.equal(c3.json.status, "failed");
      assert.equal(c3.json.error.code, "canceled");
      assert.equal(c3.json.cost_usd, null);
      assert.equal(c3.json.queue_position, null);
      assert.deepEqual(await ledgerOf(j3.id), { kinds: ["hold", "hold_release"], net: 0 });

      // A processing job: the runner's upstream call is aborted, and finishing it later charges nothing.
      const c1 = await cancel(u.api_key, j1.id);
      assert.equal(c1.status, 200, JSON.stringify(c1.json));
      assert.equal(c1.json.status, "failed");
      assert.equal(c1.json.error.code, "canceled");
      await ctl.aborted(p1);
      ctl.end(p1);
      await sleep(200);
      assert.equal((await getJob(u.api_key, j1.id)).json.status, "failed");
      assert.deepEqual(await ledgerOf(j1.id), { kinds: ["hold", "hold_release"], net: 0 });
      assert.equal(ctl.calls(p3), 0, "the canceled pending job never started");

      // Ended jobs cannot be canceled: a canceled one, a succeeded one.
      assertError(await cancel(u.api_key, j1.id), 409, "job_not_cancelable");
      ctl.end(p2);
      await rowStatus(j2.id, "succeeded");
      assertError(await cancel(u.api_key, j2.id), 409, "job_not_cancelable");
      assert.deepEqual(await ledgerOf(j2.id), { kinds: ["hold", "hold_release", "charge"], net: -IMAGE_HOLD_MICROS });

      // Unknown and another user's: 404, and the job is untouched.
      assertError(await cancel(u.api_key, "job_doesnotexist"), 404, "job_not_found");
      const p4 = prompt("cancel-4");
      const j4 = (await submitImage(u.api_key, p4)).json;
      assertError(await cancel(stranger.api_key, j4.id), 404, "job_not_found");
      assertError(await cancel(u.api_key + "x", j4.id), 401, "auth_error");
      await ctl.started(p4);
      assert.equal((await getJob(u.api_key, j4.id)).json.status, "processing");
      assert.equal((await cancel(u.api_key, j4.id)).status, 200);

      assert.equal(await getBalance(gw.services.db.kysely, u.org_id), (before ?? 0) - IMAGE_HOLD_MICROS, "only the succeeded job is charged");
      await balanceMatchesLedger(u.org_id);
    });

    test("tier 0: queue_position counts down as jobs start; Retry-After on unfinished polls only; the event stream shows every change in order and ends", async () => {
      const u = await user(); // tier 0: image_concurrent 2
      const ps = [1, 2, 3, 4, 5].map((i) => prompt(`queue-${i}`));
      const ids: string[] = [];
      for (const p of ps) {
        const r = await submitImage(u.api_key, p);
        assert.equal(r.status, 202, JSON.stringify(r.json));
        ids.push(r.json.id);
        await sleep(3);
      }
      await ctl.started(ps[0]);
      await ctl.started(ps[1]);
      for (const [i, id] of ids.entries()) {
        const r = await getJob(u.api_key, id);
        assert.equal(r.json.status, i < 2 ? "processing" : "pending", `job ${i + 1}`);
        assert.equal(r.json.queue_position, i < 2 ? null : i - 1, `job ${i + 1}: 1 starts next`);
        assert.equal(r.headers.get("retry-after"), i < 2 ? "1" : "2", `job ${i + 1}: Retry-After`);
      }
      // The list shows the same places.
      const listed = await gw.request("GET", "/v1/jobs?status=pending", { token: u.api_key });
      assert.deepEqual(listed.json.data.map((j: { queue_position: number }) => j.queue_position), [3, 2, 1]);

      const events = await openEvents(`${gw.url}/v1/jobs/${ids[4]}/events`, u.api_key);
      assert.equal(events.status, 200);
      assert.match(events.headers.get("content-type") ?? "", /^text\/event-stream/);
      const seen: ServerEvent[] = [];
      const expectNext = async (status: string, queuePosition: number | null, progress: number | null = null) => {
        const e = await events.next();
        assert.ok(e, `an event (${status}, ${queuePosition}) before the stream ended`);
        seen.push(e);
        assert.equal(e.event, "job");
        assert.equal(e.data.id, ids[4]);
        assert.deepEqual([e.data.status, e.data.queue_position, e.data.progress], [status, queuePosition, progress], JSON.stringify(seen.map((s) => s.data.status)));
      };
      await expectNext("pending", 3);
      ctl.end(ps[0]); // job 3 starts: job 5 moves up
      await expectNext("pending", 2);
      ctl.end(ps[1], "fail"); // a failure frees the slot too: job 4 starts
      await expectNext("pending", 1);
      assert.equal((await getJob(u.api_key, ids[3])).json.status, "processing");
      ctl.end(ps[2]);
      await ctl.started(ps[4]);
      await expectNext("processing", null);
      // The upstream reports progress: it is stored and streamed (the runner writes it with its heartbeat).
      await sleep(250);
      await ctl.progress(ps[4], 0.42);
      await expectNext("processing", null, 0.42);
      const polled = await getJob(u.api_key, ids[4]);
      assert.equal(polled.json.progress, 0.42);
      assert.equal(polled.headers.get("retry-after"), "1");
      ctl.end(ps[4]);
      await expectNext("succeeded", null);
      assert.equal(await events.next(), null, "the stream ends after a terminal status");
      await events.close();

      const done = await getJob(u.api_key, ids[4]);
      assert.equal(done.json.status, "succeeded");
      assert.equal(done.headers.get("retry-after"), null, "no Retry-After on a terminal job");
      assert.equal((await getJob(u.api_key, ids[1])).headers.get("retry-after"), null, "nor on a failed one");
      ctl.end(ps[3]);
      await rowStatus(ids[3], "succeeded");
      await balanceMatchesLedger(u.org_id);
    });

    test("tier 4: image and video jobs wait in one combined queue, and queue_position counts across both kinds", async () => {
      const u = await user({ depositUsd: 10 });
      assert.equal((await gw.request("PUT", `/v1/admin/users/${u.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 4 } })).status, 200);
      // Fill the combined pool of 38 with images, then queue a video and an image behind them.
      const running = Array.from({ length: 38 }, (_, i) => prompt(`combined-${i}`));
      for (const p of running) assert.equal((await submitImage(u.api_key, p)).status, 202);
      for (const p of running) await ctl.started(p);
      const vp = prompt("combined-video");
      const video = await gw.request("POST", "/v1/videos/generations", { token: u.api_key, body: { model: "vidA-2.5-pro", prompt: vp, duration: 5 } });
      assert.equal(video.status, 202, JSON.stringify(video.json));
      await sleep(3);
      const ip = prompt("combined-image");
      const image = (await submitImage(u.api_key, ip)).json;
      await sleep(100); // a runner pass: neither may start while the pool is full
      const v = await getJob(u.api_key, video.json.id);
      assert.deepEqual([v.json.status, v.json.queue_position], ["pending", 1]);
      assert.equal(v.headers.get("retry-after"), "5", "a waiting video polls at the long end");
      assert.deepEqual([(await getJob(u.api_key, image.id)).json.status, (await getJob(u.api_key, image.id)).json.queue_position], ["pending", 2]);
      ctl.end(running[0]); // one place frees: the video, first in the combined queue, starts
      await ctl.started(vp);
      assert.deepEqual((await getJob(u.api_key, image.id)).json.queue_position, 1);
      for (const p of [...running.slice(1), vp, ip]) ctl.end(p);
      await rowStatus(image.id, "succeeded");
      await balanceMatchesLedger(u.org_id);
    });

    test("events: an ended job gives one event and the end; unknown or another user's job is 404; a canceled job's stream ends with failed/canceled", async () => {
      const u = await user({ roomy: true });
      const stranger = await user();
      const p = prompt("events");
      const job = (await submitImage(u.api_key, p)).json;
      await ctl.started(p);
      const stream = await openEvents(`${gw.url}/v1/jobs/${job.id}/events`, u.api_key);
      assert.equal((await stream.next())?.data.status, "processing");
      assert.equal((await cancel(u.api_key, job.id)).status, 200);
      const rest = await stream.rest();
      assert.deepEqual(rest.map((e) => [e.data.status, e.data.error?.code]), [["failed", "canceled"]]);

      const again = await openEvents(`${gw.url}/v1/jobs/${job.id}/events`, u.api_key);
      assert.deepEqual((await again.rest()).map((e) => e.data.status), ["failed"]);

      assertError(await gw.request("GET", `/v1/jobs/${job.id}/events`, { token: stranger.api_key }), 404, "job_not_found");
      assertError(await gw.request("GET", "/v1/jobs/job_nope/events", { token: u.api_key }), 404, "job_not_found");
      assertError(await gw.request("GET", `/v1/jobs/${job.id}/events`), 401, "auth_error");
    });

    test("Prefer: wait on submit and on poll answers with the ended job within the wait, same status codes, Preference-Applied", async () => {
      const u = await user({ roomy: true });
      const p = prompt("wait-submit");
      setTimeout(() => ctl.end(p), 300);
      const started = Date.now();
      const r = await submitImage(u.api_key, p, { prefer: "respond-async, wait=20" });
      assert.equal(r.status, 202, "a new job stays 202");
      assert.equal(r.json.status, "succeeded", JSON.stringify(r.json));
      assert.ok(r.json.output.url.startsWith(gw.url));
      assert.equal(r.headers.get("preference-applied"), "wait=20");
      assert.ok(Date.now() - started >= 250, "it did wait for the job");

      // Poll with a wait: the job ends meanwhile.
      const p2 = prompt("wait-poll");
      const j2 = (await submitImage(u.api_key, p2)).json;
      await ctl.started(p2);
      setTimeout(() => ctl.end(p2, "fail"), 300);
      const polled = await getJob(u.api_key, j2.id, { prefer: "wait=10" });
      assert.equal(polled.status, 200);
      assert.equal(polled.json.status, "failed");
      assert.equal(polled.headers.get("preference-applied"), "wait=10");
      assert.equal(polled.headers.get("retry-after"), null);

      // A job that does not end within the wait: answered as it is after the wait, with Retry-After.
      const p3 = prompt("wait-timeout");
      const j3 = (await submitImage(u.api_key, p3)).json;
      await ctl.started(p3);
      const t0 = Date.now();
      const slow = await getJob(u.api_key, j3.id, { prefer: "wait=1" });
      assert.ok(Date.now() - t0 >= 900, "waited about a second");
      assert.equal(slow.status, 200);
      assert.equal(slow.json.status, "processing");
      assert.equal(slow.headers.get("preference-applied"), "wait=1");
      assert.equal(slow.headers.get("retry-after"), "1");

      // Over 60 counts as 60 (the job has ended: at once); 0 and nonsense are ignored.
      ctl.end(p3);
      await rowStatus(j3.id, "succeeded");
      assert.equal((await getJob(u.api_key, j3.id, { prefer: "wait=600" })).headers.get("preference-applied"), "wait=60");
      assert.equal((await getJob(u.api_key, j3.id, { prefer: "wait=0" })).headers.get("preference-applied"), null);
      assert.equal((await getJob(u.api_key, j3.id, { prefer: "wait=soon" })).headers.get("preference-applied"), null);
      assert.equal((await getJob(u.api_key, j3.id)).headers.get("preference-applied"), null);
      assertError(await getJob(u.api_key, "job_nope", { prefer: "wait=5" }), 404, "job_not_found");
      await balanceMatchesLedger(u.org_id);
    });
  });

  describe(`job progress from the simulator's timing on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      // SIM_LATENCY_SCALE=0 with X-Svc-Simulate: slow: each job takes about one second.
      gw = await startGateway(backend.name, {}, { runner: { pollMs: 20, heartbeatMs: 100 } });
    });
    after(async () => {
      await gw?.close();
    });

    test("a processing job's progress rises between 0 and 1 and is streamed; the job ends succeeded", async () => {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "progress" }, headers: { "x-svc-simulate": "slow" } });
      assert.equal(r.status, 202);
      const stream = await openEvents(`${gw.url}/v1/jobs/${r.json.id}/events`, u.api_key);
      const events = await stream.rest(20_000);
      const statuses = events.map((e) => e.data.status);
      assert.equal(statuses.at(-1), "succeeded");
      const progress = events.filter((e) => e.data.status === "processing" && e.data.progress !== null).map((e) => e.data.progress as number);
      assert.ok(progress.length >= 1, `progress was streamed: ${JSON.stringify(events.map((e) => e.data))}`);
      // Measured against the simulated delay; 1 once the upstream delivered, while the output is stored.
      assert.ok(progress.every((p) => p > 0 && p <= 1), JSON.stringify(progress));
      assert.ok(progress.some((p) => p < 1), `a fraction while it worked: ${JSON.stringify(progress)}`);
      assert.deepEqual(progress, [...progress].sort((a, b) => a - b), "it only rises");
      // Status changes come in lifecycle order.
      const order = ["pending", "processing", "succeeded"];
      const ranks = statuses.map((s) => order.indexOf(s));
      assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b));
    });
  });
}
