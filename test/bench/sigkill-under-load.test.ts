/**
 * The money invariants survive a SIGKILL at any point (issue "Fast on the scale path" point 3), on both
 * databases. The real gateway (a child process) serves concurrent speech calls and image submits from
 * several accounts and is SIGKILLed at a random moment while they run, three times, each time restarted on
 * the same database and loaded again. Once the last restarted gateway's sweeps have settled every hold:
 * - bench/invariants.ts finds nothing (balance == ledger sum and never negative, no open hold, usage
 *   records == ledger charges);
 * - every speech call answered 200 before a kill has exactly one `charge` ledger entry, of the amount of
 *   its `X-Svc-Cost-USD` header: an acknowledged commit is never lost (SQLite's group commit answers a
 *   transaction only after the shared commit; on PostgreSQL the hold and the capture are one statement each).
 * Calls in flight at a kill fail at the client; the restarted gateway's sweep releases their holds and
 * refunds the image jobs that were processing (low thresholds below), and runs the pending ones.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, test } from "node:test";
import { sql } from "kysely";
import { checkInvariants } from "../../bench/invariants.ts";
import { ADMIN_TOKEN, benchUser } from "../../bench/lib.ts";
import { usdToMicros } from "../../src/money.ts";
import { openDatabase } from "../../src/storage/db.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";

const USERS = 4;
/** Speech loops answered at once (SIM_LATENCY_SCALE=0: the time of a call is the gateway's own work). */
const FAST_SPEECH_LOOPS = 16;
/** Speech loops with `X-Svc-Simulate: slow` (1 s upstream): their holds are open at any kill. */
const SLOW_SPEECH_LOOPS = 4;
/** Image submit loops, half of them `slow` so some jobs are processing at a kill. */
const IMAGE_LOOPS = 2;
const KILLS = 3;
/** How long the restarted gateway may take to settle every hold (a bound on the wait, not a performance claim). */
const SETTLE_TIMEOUT_MS = 45_000;

/** A speech call answered 200: its request id and the cost its header announced, micro-USD. */
interface Acked {
  requestId: string;
  costMicros: number;
}

interface LoadStats {
  acked: Acked[];
  /** Answers other than a speech 200 or an image 202, for the failure message. */
  otherAnswers: string[];
  clientErrors: number;
  jobsAccepted: number;
}

/**
 * Runs the load against `url` until `stop` is set: every loop keeps one call in flight. A fetch that
 * fails (the gateway was killed) ends its loop once `stop` is set, else it is retried.
 */
function runLoad(url: string, keys: string[], stop: { now: boolean }, stats: LoadStats): Promise<void> {
  let n = 0;
  const speech = async (key: string, slow: boolean) => {
    while (!stop.now) {
      try {
        const res = await fetch(`${url}/v1/audio/speech`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
            ...(slow ? { "x-svc-simulate": "slow" } : {}),
          },
          body: JSON.stringify({
            input: `Speech under load, take ${n++ % 4}.`,
            voice_id: DEMO_ALPHA_VOICE_ID,
            model: "alpha-flash-v2-5",
            response_format: "mp3_22050_32",
          }),
        });
        if (res.status === 200) {
          // The status line is sent only after the capture committed: record it before reading the body,
          // which the kill may cut off.
          const requestId = res.headers.get("x-svc-request-id");
          const cost = usdToMicros(res.headers.get("x-svc-cost-usd") ?? "");
          if (requestId !== null && cost !== null && cost > 0) stats.acked.push({ requestId, costMicros: cost });
          else stats.otherAnswers.push(`200 without a request id or cost: ${requestId} ${cost}`);
        } else {
          stats.otherAnswers.push(`speech ${res.status}`);
        }
        await res.arrayBuffer();
      } catch {
        stats.clientErrors++;
      }
    }
  };
  const images = async (key: string, slow: boolean) => {
    while (!stop.now) {
      try {
        const res = await fetch(`${url}/v1/images/generations`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
            ...(slow ? { "x-svc-simulate": "slow" } : {}),
          },
          body: JSON.stringify({ model: "imgA-v4", prompt: `a lighthouse, take ${n++}` }),
        });
        if (res.status === 202) stats.jobsAccepted++;
        // 429: the account's image queue is full (jobs left pending by a kill count until they ran).
        else if (res.status !== 429) stats.otherAnswers.push(`image ${res.status}`);
        await res.arrayBuffer();
      } catch {
        stats.clientErrors++;
      }
      await sleep(50);
    }
  };
  const loops: Promise<void>[] = [];
  for (let i = 0; i < FAST_SPEECH_LOOPS; i++) loops.push(speech(keys[i % keys.length], false));
  for (let i = 0; i < SLOW_SPEECH_LOOPS; i++) loops.push(speech(keys[i % keys.length], true));
  for (let i = 0; i < IMAGE_LOOPS; i++) loops.push(images(keys[i % keys.length], i % 2 === 0));
  return Promise.all(loops).then(() => {});
}

/** Open holds and unfinished jobs on the database (read while the gateway runs). */
async function unsettled(databaseUrl: string): Promise<{ holds: number; jobs: number }> {
  const db = openDatabase(databaseUrl, { poolSize: 1 });
  try {
    const k = db.kysely;
    const holds = await k.selectFrom("holds").select(sql<string>`count(*)`.as("n")).where("status", "=", "open").executeTakeFirstOrThrow();
    const jobs = await k.selectFrom("jobs").select(sql<string>`count(*)`.as("n")).where("status", "in", ["pending", "processing"]).executeTakeFirstOrThrow();
    return { holds: Number(holds.n), jobs: Number(jobs.n) };
  } finally {
    await db.close();
  }
}

for (const backend of BACKENDS) {
  describe(`SIGKILL under load on ${backend.name}`, { skip: backend.skip }, () => {
    let db: TempDatabase | null = null;
    let proc: GatewayProcess | null = null;
    let blobDir: string | null = null;
    after(async () => {
      await proc?.kill();
      await db?.drop();
      if (blobDir !== null) rmSync(blobDir, { recursive: true, force: true });
    });

    test(`${KILLS} kills at random moments: invariants hold, every acknowledged charge is in the ledger`, async () => {
      db = await createTempDatabase(backend.name);
      blobDir = mkdtempSync(join(tmpdir(), "gw-sigkill-"));
      const env = {
        DATABASE_URL: db.url,
        STORAGE_URL: `file:${blobDir}`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        SIM_LATENCY_SCALE: "0",
        // Holds left by a killed process are released 3 s after they were placed (slow calls take 1 s);
        // processing image jobs refunded 3 s after their last heartbeat.
        SWEEP_SYNC_HOLDS_AFTER_S: "3",
        SWEEP_IMAGE_AFTER_S: "3",
        SWEEP_VIDEO_AFTER_S: "3",
        JOB_LEASE_S: "1",
      };
      proc = await spawnGateway("serve", env);
      const keys: string[] = [];
      for (let i = 0; i < USERS; i++) keys.push((await benchUser(proc.url)).apiKey);

      const stats: LoadStats = { acked: [], otherAnswers: [], clientErrors: 0, jobsAccepted: 0 };
      for (let kill = 0; kill < KILLS; kill++) {
        const stop = { now: false };
        const ackedBefore = stats.acked.length;
        const load = runLoad(proc.url, keys, stop, stats);
        // Kill once the load is under way (some calls answered), after a random further 0-1.5 s.
        const started = Date.now();
        while (stats.acked.length - ackedBefore < 20 && Date.now() - started < 20_000) await sleep(10);
        assert.ok(stats.acked.length - ackedBefore >= 20, `the load got answers before kill ${kill + 1}`);
        await sleep(Math.floor(Math.random() * 1500));
        // No new calls from here: what is in flight now is what the kill cuts.
        stop.now = true;
        await proc.kill();
        await load;
        proc = await spawnGateway("serve", env);
      }
      // Every call that was answered was answered as it should be (the cut ones were not answered at all).
      assert.deepEqual(stats.otherAnswers, []);

      // The restarted gateway settles what the kills left: sync holds by the sweep, processing jobs refunded,
      // pending ones run.
      const deadline = Date.now() + SETTLE_TIMEOUT_MS;
      let left = await unsettled(db.url);
      while ((left.holds > 0 || left.jobs > 0) && Date.now() < deadline) {
        await sleep(250);
        left = await unsettled(db.url);
      }
      assert.deepEqual(left, { holds: 0, jobs: 0 }, `settled within ${SETTLE_TIMEOUT_MS} ms`);
      await proc.stop();

      const report = await checkInvariants(db.url);
      assert.deepEqual(report.problems, []);
      assert.equal(report.accounts, USERS);

      // Every acknowledged speech call has exactly its charge.
      const check = openDatabase(db.url, { poolSize: 2 });
      try {
        const k = check.kysely;
        const charges = new Map<string, number[]>();
        const ids = stats.acked.map((a) => a.requestId);
        for (let i = 0; i < ids.length; i += 500) {
          const rows = await k
            .selectFrom("ledger_entries")
            .select(["request_id", "amount_micros"])
            .where("kind", "=", "charge")
            .where("request_id", "in", ids.slice(i, i + 500))
            .execute();
          for (const r of rows) {
            const list = charges.get(r.request_id ?? "") ?? [];
            list.push(Number(r.amount_micros));
            charges.set(r.request_id ?? "", list);
          }
        }
        const lost = stats.acked.filter((a) => (charges.get(a.requestId) ?? []).length === 0);
        assert.deepEqual(lost.map((a) => a.requestId), [], `${lost.length} of ${stats.acked.length} acknowledged charges lost`);
        for (const a of stats.acked) assert.deepEqual(charges.get(a.requestId), [-a.costMicros], `charge of ${a.requestId}`);
        const negative = await k.selectFrom("accounts").select(["id", "balance_micros"]).where("balance_micros", "<", 0).execute();
        assert.deepEqual(negative, []);
        // The kills left work to settle: calls in flight failed at the client, their holds were released.
        const released = await k
          .selectFrom("usage_records")
          .select(sql<string>`count(*)`.as("n"))
          .where("status", "in", ["failed", "refunded"])
          .executeTakeFirstOrThrow();
        console.log(
          `# ${backend.name}: ${stats.acked.length} speech calls acknowledged and charged, ${stats.jobsAccepted} image jobs accepted, ` +
            `${stats.clientErrors} calls cut by the kills, ${released.n} calls or jobs settled without charge`,
        );
        assert.ok(stats.clientErrors > 0, "the kills caught calls in flight");
        assert.ok(Number(released.n) > 0, "the sweep released holds the kills left open");
      } finally {
        await check.close();
      }
    });
  });
}
