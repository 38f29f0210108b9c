/**
 * Claiming jobs (storage/job-queue.ts) on both databases: pending jobs oldest first within each owner's
 * concurrency cap (running jobs count, per kind or in a combined pool), in one pass over several
 * accounts, returned in the queue's order with what the runner needs; deferred jobs wait; lapsed leases
 * (D28) are taken over only when asked; and on PostgreSQL concurrent claimers never exceed a cap nor
 * take the same job.
 */
import assert from "node:assert/strict";
import type { Insertable } from "kysely";
import { after, before, describe, test } from "node:test";
import { type AccountLimitsRow, claimJobs, type ConcurrencyCaps } from "../../src/storage/job-queue.ts";
import { type Db, migrate, openDatabase } from "../../src/storage/db.ts";
import type { JobsTable } from "../../src/storage/schema.ts";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";

/** Caps read from the test's accounts: `tier_override` is the image cap; 9 means a combined pool of 3. */
const capsOf = (a: AccountLimitsRow): ConcurrencyCaps =>
  Number(a.tier_override) === 9 ? { image: 3, video: 3, combined: 3 } : { image: Number(a.tier_override ?? 2), video: 1, combined: null };

for (const backend of BACKENDS) {
  describe(`claimJobs on ${backend.name}`, { skip: backend.skip }, () => {
    let temp: TempDatabase;
    let db: Db;
    let seq = 0;
    let clock = 1_700_000_000_000;
    before(async () => {
      temp = await createTempDatabase(backend.name);
      db = openDatabase(temp.url);
      await migrate(db);
    });
    after(async () => {
      await db?.close();
      await temp?.drop();
    });

    async function account(imageCap: number): Promise<string> {
      const id = `usr_q${++seq}`;
      await db.kysely
        .insertInto("accounts")
        .values({ id, name: `${id}@example.com`, balance_micros: 0, total_deposits_micros: 0, tier_override: imageCap, limits_override: null, created_at: 0 })
        .execute();
      return id;
    }
    async function job(accountId: string, over: Partial<Insertable<JobsTable>> = {}): Promise<string> {
      const id = `job_q${String(++seq).padStart(6, "0")}`;
      const at = ++clock;
      await db.kysely
        .insertInto("jobs")
        .values({
          id,
          account_id: accountId,
          api_key_id: null,
          kind: "image",
          model: "imgA-v4",
          status: "pending",
          hold_id: null,
          hold_micros: 1,
          cost_micros: null,
          request_json: `{"prompt":"${id}"}`,
          request_hash: null,
          idempotency_key: null,
          output_json: null,
          duration_sec: null,
          error_code: null,
          error_message: null,
          created_at: at,
          updated_at: at,
          started_at: null,
          heartbeat_at: null,
          worker_id: null,
          upstream_source: null,
          upstream_handle_json: null,
          upstream_cost_micros: null,
          upstream_cost_basis: null,
          not_before: null,
          progress: null,
          webhook_url: `https://example.com/${id}`,
          ...over,
        })
        .execute();
      return id;
    }
    const statusOf = async (id: string) =>
      db.kysely.selectFrom("jobs").select(["status", "worker_id", "started_at", "heartbeat_at"]).where("id", "=", id).executeTakeFirstOrThrow();
    /** Ends every job still claimable or running, so tests do not see each other's jobs. */
    async function clear() {
      await db.kysely.updateTable("jobs").set({ status: "failed" }).where("status", "in", ["pending", "processing"]).execute();
    }

    test("one pass over several accounts: oldest first within each cap, in queue order, with the runner's columns", async () => {
      await clear();
      const a = await account(2);
      const b = await account(2);
      const a1 = await job(a);
      const b1 = await job(b);
      const a2 = await job(a);
      const a3 = await job(a); // over a's cap of 2
      const b2 = await job(b, { kind: "video" });
      const { jobs: claimed, capped } = await claimJobs(db.kysely, "w1", 10, capsOf, { takeOver: false });
      assert.deepEqual(capped, [a], "a's third job waits for its cap");
      assert.deepEqual(claimed.map((j) => j.id), [a1, b1, a2, b2]);
      const first = claimed[0];
      assert.equal(first.account_id, a);
      assert.equal(first.request_json, `{"prompt":"${a1}"}`);
      assert.equal(first.webhook_url, `https://example.com/${a1}`);
      assert.equal(first.fallback_layer, 0);
      assert.equal(first.mode, "live");
      for (const id of [a1, b1, a2, b2]) {
        const r = await statusOf(id);
        assert.equal(r.status, "processing");
        assert.equal(r.worker_id, "w1");
        assert.ok(Number(r.started_at) > 0 && Number(r.heartbeat_at) === Number(r.started_at));
        assert.equal(Number(r.started_at), first.started_at);
      }
      assert.equal((await statusOf(a3)).status, "pending");
      // a's running jobs count: nothing more until one ends.
      assert.deepEqual((await claimJobs(db.kysely, "w1", 10, capsOf, { takeOver: false })).jobs, []);
      await db.kysely.updateTable("jobs").set({ status: "succeeded" }).where("id", "=", a1).execute();
      assert.deepEqual((await claimJobs(db.kysely, "w1", 10, capsOf, { takeOver: false })).jobs.map((j) => j.id), [a3]);
    });

    test("the limit, a combined pool, deferred jobs", async () => {
      await clear();
      const c = await account(9); // combined pool of 3
      const ids = [await job(c), await job(c, { kind: "video" }), await job(c, { kind: "video" }), await job(c)];
      const later = await job(c, { not_before: Date.now() + 60_000 });
      assert.deepEqual((await claimJobs(db.kysely, "w2", 1, capsOf, { takeOver: false })).jobs.map((j) => j.id), [ids[0]]);
      assert.deepEqual((await claimJobs(db.kysely, "w2", 10, capsOf, { takeOver: false })).jobs.map((j) => j.id), [ids[1], ids[2]]);
      assert.deepEqual(await claimJobs(db.kysely, "w2", 10, capsOf, { takeOver: false }), { jobs: [], capped: [c] }, "the pool of 3 is full");
      await db.kysely.updateTable("jobs").set({ status: "succeeded" }).where("id", "in", [ids[0], ids[1], ids[2]]).execute();
      assert.deepEqual((await claimJobs(db.kysely, "w2", 10, capsOf, { takeOver: false })).jobs.map((j) => j.id), [ids[3]], "not the deferred one");
      assert.equal((await statusOf(later)).status, "pending");
    });

    test("a lapsed lease (D28) is taken over only when asked", async () => {
      await clear();
      const a = await account(5);
      const old = Date.now() - 120_000;
      const lapsed = await job(a, {
        status: "processing",
        worker_id: "dead",
        started_at: old,
        heartbeat_at: old,
        upstream_source: "fal",
        upstream_handle_json: '{"source":"fal","requestId":"r1"}',
      });
      assert.deepEqual((await claimJobs(db.kysely, "w3", 10, capsOf, { takeOver: false, leaseMs: 30_000 })).jobs, []);
      assert.equal((await statusOf(lapsed)).worker_id, "dead");
      const taken = (await claimJobs(db.kysely, "w3", 10, capsOf, { leaseMs: 30_000 })).jobs;
      assert.deepEqual(taken.map((j) => j.id), [lapsed]);
      assert.equal(taken[0].upstream_handle_json, '{"source":"fal","requestId":"r1"}');
      assert.equal((await statusOf(lapsed)).worker_id, "w3");
    });

    test("concurrent claimers share the jobs without exceeding a cap or taking one twice", async () => {
      await clear();
      const accounts = [await account(3), await account(3), await account(3)];
      // More than one claimer's candidates (at least 50): two claimers lock different jobs of the same
      // accounts, and only the account rows they lock keep them from both filling the same cap.
      for (let i = 0; i < 30; i++) for (const a of accounts) await job(a);
      // Rounds of four claimers at once (on PostgreSQL one may find the others' candidates locked and
      // take nothing that round), until nothing more can start.
      const all = [];
      for (let round = 0; round < 10; round++) {
        const claimed = (await Promise.all(Array.from({ length: 4 }, (_, w) => claimJobs(db.kysely, `w4-${w}`, 2, capsOf, { takeOver: false })))).flatMap((r) => r.jobs);
        if (claimed.length === 0) break;
        all.push(...claimed);
      }
      assert.equal(new Set(all.map((j) => j.id)).size, all.length, "no job twice");
      for (const a of accounts) {
        const running = await db.kysely.selectFrom("jobs").select("id").where("account_id", "=", a).where("status", "=", "processing").execute();
        assert.equal(running.length, 3, `account ${a} runs its cap, no more`);
      }
      assert.equal(all.length, 9);
    });
  });
}
