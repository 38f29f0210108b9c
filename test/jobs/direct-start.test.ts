/**
 * A submit starts its job at once on its own process's runner (jobs.ts `JobStarter`, runner.ts) when the
 * runner has room and the account's pool is below its cap with nothing waiting, on both databases: the
 * 202 shows it `processing`, the row is the runner's, and the job runs and settles as a claimed one does.
 * Otherwise it waits `pending` with its `queue_position` and starts in order when a slot frees (the
 * runner claims at once when a job of an account at its cap ends). Concurrent submits of one account
 * never start more than its cap (the account row's lock), and a runner that stops hands back a job a
 * submit gave it while it was stopping.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { type JobStarter, submitJob } from "../../src/jobs/jobs.ts";
import { JobRunner } from "../../src/jobs/runner.ts";
import { validateImageJob } from "../../src/jobs/validate.ts";
import type { ClaimedJob } from "../../src/storage/job-queue.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ControlledVisual, controlledVisual, sleep } from "./job-api-helpers.ts";

for (const backend of BACKENDS) {
  describe(`jobs started by their submit on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let ctl: ControlledVisual;
    let seq = 0;
    before(async () => {
      ctl = controlledVisual();
      // No timer claims during a test: every start is a submit's or follows a job's end.
      gw = await startGateway(backend.name, {}, { overrides: { visual: ctl }, runner: { pollMs: 600_000 } });
    });
    after(async () => {
      await gw?.close();
    });

    const prompt = (name: string) => `${name} ${backend.name} ${++seq}`;
    const submit = (token: string, p: string) => gw.request("POST", "/v1/images/generations", { token, body: { model: "imgA-v4", prompt: p } });
    const row = (id: string) =>
      gw.services.db.kysely.selectFrom("jobs").select(["status", "worker_id", "started_at"]).where("id", "=", id).executeTakeFirstOrThrow();
    async function rowStatus(id: string, status: string) {
      const end = Date.now() + 10_000;
      for (;;) {
        const r = await row(id);
        if (r.status === status) return r;
        if (Date.now() > end) assert.fail(`job ${id} is ${r.status}, not ${status}`);
        await sleep(5);
      }
    }

    test("202 processing when the runner and the account have room; pending in order at the cap; each starts as a slot frees", async () => {
      const u = await gw.register(); // tier 0: two images at once, six queued
      await gw.deposit(u.user_id, 5);
      const workerId = gw.services.jobStarter()?.workerId;
      assert.ok(workerId);
      const ps = [1, 2, 3, 4].map((i) => prompt(`direct-${i}`));
      const ids: string[] = [];
      for (const [i, p] of ps.entries()) {
        const r = await submit(u.api_key, p);
        assert.equal(r.status, 202, JSON.stringify(r.json));
        ids.push(r.json.id);
        if (i < 2) {
          assert.deepEqual([r.json.status, r.json.queue_position, r.json.progress], ["processing", null, null], `job ${i + 1} starts at once`);
          const started = await row(r.json.id);
          assert.equal(started.worker_id, workerId, "run by this process's runner");
          assert.ok(Number(started.started_at) > 0);
          await ctl.started(p);
        } else {
          assert.deepEqual([r.json.status, r.json.queue_position], ["pending", i - 1], `job ${i + 1} waits at the cap`);
        }
        await sleep(2); // distinct created_at: the order under test is the submission order
      }
      // The first job's end frees a slot: the runner claims the oldest waiting job at once.
      ctl.end(ps[0]);
      await ctl.started(ps[2]);
      assert.equal((await row(ids[2])).status, "processing");
      // A new job while one waits does not overtake it, even with a slot about to free.
      const p5 = prompt("direct-5");
      const r5 = await submit(u.api_key, p5);
      assert.deepEqual([r5.json.status, r5.json.queue_position], ["pending", 2]);
      ctl.end(ps[1], "fail");
      await ctl.started(ps[3]);
      ctl.end(ps[2]);
      await ctl.started(p5);
      ctl.end(ps[3]);
      ctl.end(p5);
      for (const id of [ids[0], ids[2], ids[3], r5.json.id]) await rowStatus(id, "succeeded");
      await rowStatus(ids[1], "failed");
      // Money and usage as for any job: four charged, one released; usage records agree with the ledger.
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
      const usage = await db.selectFrom("usage_records").select(["job_id", "status", "cost_micros", "fallback_layer"]).where("account_id", "=", u.org_id).execute();
      const byJob = new Map(usage.map((r) => [r.job_id, r]));
      for (const id of [ids[0], ids[2], ids[3], r5.json.id]) {
        assert.deepEqual([byJob.get(id)?.status, Number(byJob.get(id)?.cost_micros), Number(byJob.get(id)?.fallback_layer)], ["succeeded", 54_000, 0]);
      }
      assert.deepEqual([byJob.get(ids[1])?.status, Number(byJob.get(ids[1])?.cost_micros)], ["failed", 0]);
    });

    test("concurrent submits of one account start no more than its cap; the rest wait in order", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 20);
      const limits = { rpm: 100_000, per_model_rpm: 100_000, image_concurrent: 3, image_queue_depth_cap: 50 };
      assert.equal((await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: limits })).status, 200);
      // A starter that always has room: only the account's cap and its lock decide.
      const adopted: ClaimedJob[] = [];
      const starter: JobStarter = { workerId: "test-starter", reserve: () => true, unreserve: () => {}, adopt: (job) => adopted.push(job) };
      const deps = { db: gw.services.db.kysely, publicBaseUrl: gw.services.config.publicBaseUrl, starter };
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => {
          const body = { model: "imgA-v4", prompt: prompt(`race-${i}`) };
          return submitJob(deps, { accountId: u.org_id, keyId: null }, validateImageJob(body), body);
        }),
      );
      const started = results.filter((r) => r.started);
      assert.equal(started.length, 3, "the cap of 3");
      assert.deepEqual(adopted.map((j) => j.id).sort(), started.map((r) => r.job.id).sort());
      // Each answer's place is its place when it committed (a submit that committed later may still queue
      // ahead: it began earlier); read now, the places are 1 to 9 in the order the runner starts them.
      for (const r of results.filter((x) => !x.started)) assert.ok(Number(r.job.queue_position) >= 1 && Number(r.job.queue_position) <= 9);
      const listed = await gw.request("GET", "/v1/jobs?status=pending&limit=100", { token: u.api_key });
      assert.deepEqual(listed.json.data.map((j: { queue_position: number }) => j.queue_position), [9, 8, 7, 6, 5, 4, 3, 2, 1], "newest first");
      const rows = await gw.services.db.kysely.selectFrom("jobs").select(["status", "worker_id"]).where("account_id", "=", u.org_id).execute();
      assert.equal(rows.filter((r) => r.status === "processing" && r.worker_id === "test-starter").length, 3);
      // Nothing runs the fake starter's jobs: cancel every job (holds released, D30).
      for (const r of results) {
        const c = await gw.request("POST", `/v1/jobs/${r.job.id}/cancel`, { token: u.api_key });
        assert.equal(c.status, 200, JSON.stringify(c.json));
      }
      assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 20_000_000 + 500_000);
    });

    test("a runner that stops hands back, as pending, a job a submit gave it while it was stopping", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 5);
      const runner = new JobRunner(
        {
          db: gw.services.db.kysely,
          blobs: gw.services.blobs,
          visual: ctl,
          fetchOutput: () => Promise.reject(new Error("no downloads here")),
          sweep: gw.services.sweep,
          log: { info() {}, warn() {}, error() {} },
          changes: gw.services.jobChanges,
        },
        { pollMs: 600_000, sweepMs: 600_000 },
      );
      runner.start();
      await sleep(50); // its first claim finds nothing: no backlog, room for submits
      assert.equal(runner.reserve(), true);
      const stopping = runner.stop();
      assert.equal(runner.reserve(), false, "no new places once stopping");
      const body = { model: "imgA-v4", prompt: prompt("stopping") };
      const starter: JobStarter = { workerId: runner.workerId, reserve: () => true, unreserve: () => runner.unreserve(), adopt: (job) => runner.adopt(job) };
      const out = await submitJob({ db: gw.services.db.kysely, publicBaseUrl: gw.services.config.publicBaseUrl, starter }, { accountId: u.org_id, keyId: null }, validateImageJob(body), body);
      assert.equal(out.started, true);
      await stopping;
      const r = await gw.services.db.kysely.selectFrom("jobs").select(["status", "worker_id"]).where("id", "=", out.job.id).executeTakeFirstOrThrow();
      assert.deepEqual([r.status, r.worker_id], ["pending", null]);
      // The gateway's own runner takes it from there.
      gw.services.nudgeRunner();
      await ctl.started(body.prompt);
      ctl.end(body.prompt);
      await rowStatus(out.job.id, "succeeded");
    });
  });
}
