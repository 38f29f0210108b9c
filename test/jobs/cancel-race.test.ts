/**
 * A cancel racing a job's success ends in exactly one of them (D30; docs/architecture.md invariants 1 and 2), on both
 * databases: many jobs are each ended by their upstream and canceled by their owner at nearly the same
 * moment, several races at once. The cancels land from 5 ms before the upstream delivers to a little after
 * the time a delivery takes to commit on this machine (measured first, as load varies), so they hit every
 * stage of the success path; the first race cancels before delivery and the last after the success, so
 * both outcomes are always exercised. Every job ends either `failed`/`canceled` with the cancel answered
 * 200 and its hold released (nets 0), or `succeeded` with the cancel answered 409 and one charge (nets
 * -cost); never both, never neither; and the balance equals the ledger sum and the initial balance minus
 * the charges.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ControlledVisual, controlledVisual, sleep } from "./job-api-helpers.ts";

const RACES = 40;
const AT_ONCE = 4;
const COST_MICROS = 54_000; // imgA-v4, one image

for (const backend of BACKENDS) {
  describe(`cancel racing success on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let ctl: ControlledVisual;
    before(async () => {
      ctl = controlledVisual();
      gw = await startGateway(backend.name, {}, { overrides: { visual: ctl }, runner: { pollMs: 10 } });
    });
    after(async () => {
      await gw?.close();
    });

    test(`${RACES} races: each job is either canceled (hold released) or succeeded (charged once), and the ledger agrees`, async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 50);
      const limits = { rpm: 100_000, per_model_rpm: 100_000, image_concurrent: 50, image_queue_depth_cap: 100 };
      assert.equal((await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: limits })).status, 200);
      const db = gw.services.db.kysely;

      const start = async (prompt: string) => {
        const submitted = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt } });
        assert.equal(submitted.status, 202);
        await ctl.started(prompt);
        return submitted.json.id as string;
      };
      const untilEnded = async (id: string) => {
        for (;;) {
          const row = await db.selectFrom("jobs").select("status").where("id", "=", id).executeTakeFirstOrThrow();
          if (row.status !== "processing") return row.status;
          await sleep(1);
        }
      };
      const cancel = (id: string) => gw.request("POST", `/v1/jobs/${id}/cancel`, { token: u.api_key });

      // How long a delivery takes to commit here (the window a cancel can race), ms.
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const id = await start(`race calibration ${backend.name} ${i}`);
        const t0 = Date.now();
        ctl.end(`race calibration ${backend.name} ${i}`);
        assert.equal(await untilEnded(id), "succeeded");
        times.push(Date.now() - t0);
      }
      const windowMs = Math.max(...times) * 1.5 + 5;

      const race = async (i: number) => {
        const prompt = `race ${backend.name} ${i}`;
        const id = await start(prompt);
        if (i === 0) {
          // Bookend: the cancel lands first.
          const canceled = await cancel(id);
          ctl.end(prompt);
          return { id, prompt, canceled };
        }
        if (i === RACES - 1) {
          // Bookend: the success lands first.
          ctl.end(prompt);
          await untilEnded(id);
          return { id, prompt, canceled: await cancel(id) };
        }
        const offset = -5 + ((windowMs + 5) * i) / (RACES - 1);
        const [, canceled] = await Promise.all([
          sleep(Math.max(0, -offset)).then(() => ctl.end(prompt)),
          sleep(Math.max(0, offset)).then(() => cancel(id)),
        ]);
        return { id, prompt, canceled };
      };
      const initial = (await getBalance(db, u.org_id)) ?? 0;
      const results: Awaited<ReturnType<typeof race>>[] = [];
      for (let i = 0; i < RACES; i += AT_ONCE) {
        results.push(...(await Promise.all(Array.from({ length: Math.min(AT_ONCE, RACES - i) }, (_, k) => race(i + k)))));
      }

      // Let every runner finish what it was doing (a lost success deletes its outputs and stops).
      for (const r of results) {
        for (let t = 0; t < 500; t++) {
          const row = await db.selectFrom("jobs").select("status").where("id", "=", r.id).executeTakeFirstOrThrow();
          if (row.status !== "processing") break;
          await sleep(10);
        }
      }
      await sleep(300);

      let succeeded = 0;
      let canceled = 0;
      for (const r of results) {
        const job = await db.selectFrom("jobs").select(["status", "error_code", "cost_micros", "hold_id"]).where("id", "=", r.id).executeTakeFirstOrThrow();
        const entries = await db.selectFrom("ledger_entries").select(["kind", "amount_micros"]).where("job_id", "=", r.id).orderBy("seq").execute();
        const net = entries.reduce((s, e) => s + Number(e.amount_micros), 0);
        const hold = await db.selectFrom("holds").select("status").where("id", "=", job.hold_id!).executeTakeFirstOrThrow();
        if (r.canceled.status === 200) {
          canceled++;
          assert.equal(r.canceled.json.status, "failed", r.id);
          assert.equal(r.canceled.json.error.code, "canceled", r.id);
          assert.equal(job.status, "failed", `${r.id}: the cancel won and stays won`);
          assert.equal(job.error_code, "canceled");
          assert.deepEqual(entries.map((e) => e.kind), ["hold", "hold_release"], r.id);
          assert.equal(net, 0, r.id);
          assert.equal(hold.status, "released");
        } else {
          succeeded++;
          assert.equal(r.canceled.status, 409, `${r.id}: ${JSON.stringify(r.canceled.json)}`);
          assert.equal(r.canceled.json.error.code, "job_not_cancelable");
          assert.equal(job.status, "succeeded", r.id);
          assert.deepEqual(entries.map((e) => e.kind), ["hold", "hold_release", "charge"], r.id);
          assert.equal(net, -COST_MICROS, r.id);
          assert.equal(Number(job.cost_micros), COST_MICROS);
          assert.equal(hold.status, "captured");
        }
      }
      const balance = (await getBalance(db, u.org_id)) ?? -1;
      assert.equal(balance, await ledgerSum(db, u.org_id), "balance == ledger sum");
      assert.equal(balance, initial - succeeded * COST_MICROS, "only the successes are charged");
      assert.equal(succeeded + canceled, RACES);
      assert.ok(canceled > 0 && succeeded > 0, `both outcomes occurred: ${canceled} canceled, ${succeeded} succeeded`);
      console.log(`# ${backend.name}: ${canceled} canceled, ${succeeded} succeeded (cancels spread over ${Math.round(windowMs)} ms)`);
    });
  });
}
