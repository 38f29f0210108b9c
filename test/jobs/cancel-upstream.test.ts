/**
 * Cancel of jobs on a real source (D28, D30), on both databases: the gateway runs imgA on the loopback fake
 * of fal's queue, configured through `UPSTREAMS` as `npm start` builds it. A processing job that fal
 * accepted is withdrawn there (`PUT cancel_url`) before the cancel answers, its hold is released, and the
 * runner stops polling it without charging; a pending job, which never reached fal, is canceled without a
 * call to fal. The job's `progress` follows fal's state: 0 while it waits in fal's queue, null once it
 * runs (fal reports no fraction).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { openEvents, sleep } from "./job-api-helpers.ts";

const FAL_KEY = "fal-cancel-key-2b7e9c4d1a60";

for (const backend of BACKENDS) {
  describe(`cancel of jobs on fal on ${backend.name}`, { skip: backend.skip }, () => {
    let fal: FalFake;
    let gw: TestGateway;
    before(async () => {
      // Jobs wait 400 ms in fal's queue, then run for a minute: they are still running when canceled.
      fal = await startFalFake({ apiKey: FAL_KEY, queueMs: 400, runMs: 60_000 });
      const upstreams = [{ name: "fal", protocol: "fal", base_url: fal.url, api_key: "env:CANCEL_FAL_KEY", families: ["imgA"] }];
      gw = await startGateway(backend.name, { CANCEL_FAL_KEY: FAL_KEY, UPSTREAMS: JSON.stringify(upstreams) }, {
        runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } },
      });
    });
    after(async () => {
      await gw?.close();
      await fal?.close();
    });

    /** The fal request id of a job once fal accepted it (the handle on the row, D28). */
    async function requestIdOf(jobId: string): Promise<string> {
      for (let i = 0; i < 1000; i++) {
        const row = await gw.services.db.kysely.selectFrom("jobs").select("upstream_handle_json").where("id", "=", jobId).executeTakeFirstOrThrow();
        if (row.upstream_handle_json !== null) return (JSON.parse(row.upstream_handle_json) as { requestId: string }).requestId;
        await sleep(10);
      }
      assert.fail(`job ${jobId} was never accepted by fal`);
    }
    const cancels = (requestId: string) => fal.requests.filter((r) => r.method === "PUT" && r.path.includes(`/requests/${requestId}/cancel`)).length;
    const statusPolls = (requestId: string) => fal.requests.filter((r) => r.method === "GET" && r.path.includes(`/requests/${requestId}/status`)).length;
    /** Waits until nobody polls `requestId` any more: no new status request for 500 ms. */
    async function pollingStopped(requestId: string) {
      for (let i = 0; i < 40; i++) {
        const before = statusPolls(requestId);
        await sleep(500);
        if (statusPolls(requestId) === before) return;
      }
      assert.fail(`the runner kept polling ${requestId}`);
    }
    async function ledgerKinds(jobId: string) {
      const rows = await gw.services.db.kysely.selectFrom("ledger_entries").select("kind").where("job_id", "=", jobId).orderBy("seq").execute();
      return rows.map((r) => r.kind);
    }

    test("processing jobs are withdrawn at fal, a pending one needs no call; holds released, nothing charged, the runner stops", async () => {
      const u = await gw.register(); // tier 0: two images run at once
      const db = gw.services.db.kysely;
      const before = await getBalance(db, u.org_id);
      const submit = async (prompt: string) => {
        const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt } });
        assert.equal(r.status, 202, JSON.stringify(r.json));
        return r.json.id as string;
      };
      const j1 = await submit("a lighthouse");
      const events = await openEvents(`${gw.url}/v1/jobs/${j1}/events`, u.api_key);
      const j2 = await submit("a harbour");
      const j3 = await submit("a boat");
      const r1 = await requestIdOf(j1);
      const r2 = await requestIdOf(j2);
      assert.equal((await gw.request("GET", `/v1/jobs/${j3}`, { token: u.api_key })).json.queue_position, 1);

      // fal's queue, then fal running it: progress 0, then null (fal says no fraction).
      const progress: (number | null)[] = [];
      for (;;) {
        const e = await events.next();
        assert.ok(e);
        if (e.data.status === "processing") progress.push(e.data.progress);
        if (progress.includes(0) && progress.at(-1) === null && progress.indexOf(0) < progress.lastIndexOf(null)) break;
      }

      // The pending job: no handle, no call to fal.
      const putsBefore = fal.requests.filter((r) => r.method === "PUT").length;
      const c3 = await gw.request("POST", `/v1/jobs/${j3}/cancel`, { token: u.api_key });
      assert.equal(c3.status, 200);
      assert.equal(c3.json.error.code, "canceled");
      assert.equal(fal.requests.filter((r) => r.method === "PUT").length, putsBefore);
      assert.deepEqual(await ledgerKinds(j3), ["hold", "hold_release"]);
      // The freed slot goes to nobody: j3 never reached fal.
      assert.equal(fal.submits().length, 2);

      // A processing job: withdrawn at fal before the answer.
      assert.equal(cancels(r1), 0);
      const c1 = await gw.request("POST", `/v1/jobs/${j1}/cancel`, { token: u.api_key });
      assert.equal(c1.status, 200, JSON.stringify(c1.json));
      assert.equal(c1.json.status, "failed");
      assert.equal(c1.json.error.code, "canceled");
      assert.equal(cancels(r1), 1, "PUT cancel_url at fal");
      const last = await events.rest();
      assert.deepEqual(last.map((e) => [e.data.status, e.data.error?.code]), [["failed", "canceled"]], "the stream ends with the cancel");
      await pollingStopped(r1);
      assert.deepEqual(await ledgerKinds(j1), ["hold", "hold_release"]);
      assert.equal(cancels(r2), 0, "the other job is untouched");
      assert.equal((await gw.request("GET", `/v1/jobs/${j2}`, { token: u.api_key })).json.status, "processing");

      const c2 = await gw.request("POST", `/v1/jobs/${j2}/cancel`, { token: u.api_key });
      assert.equal(c2.status, 200);
      assert.equal(cancels(r2), 1);
      await pollingStopped(r2);
      assert.equal((await gw.request("POST", `/v1/jobs/${j2}/cancel`, { token: u.api_key })).json.error.code, "job_not_cancelable");
      assert.equal(cancels(r2), 1, "a second cancel sends nothing");

      assert.equal(fal.submits().length, 2, "each job submitted to fal once, never again");
      assert.equal(await getBalance(db, u.org_id), before, "nothing charged");
      assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
      for (const r of fal.requests) assert.ok(!JSON.stringify(r.body ?? "").includes(FAL_KEY));
    });
  });
}
