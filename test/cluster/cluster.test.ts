/**
 * A small cluster on PostgreSQL and Redis (issue: tier limits shared across processes): two gateway
 * processes and one worker, many customers sending mixed requests through both gateways. Checks: the
 * per-minute window holds globally (within one request of the limit), no audio pool goes over its cap,
 * every job is claimed and ended exactly once, and balance == ledger sum for every account; then one
 * gateway is SIGKILLed mid-load and the survivors finish with nothing lost.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS, createTempDatabase, REDIS_SKIP, REDIS_TEST_URL, type TempDatabase } from "../helpers/backends.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";

const pgSkip = BACKENDS.find((b) => b.name === "postgres")?.skip ?? "no PostgreSQL";
const skip = pgSkip || REDIS_SKIP;

async function call(url: string, method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, json };
}

describe("cluster: two gateways and a worker on PostgreSQL and Redis", { skip }, () => {
  let db: TempDatabase;
  const blobDir = mkdtempSync(join(tmpdir(), "gw-cluster-"));
  const procs: GatewayProcess[] = [];
  let env: Record<string, string>;

  before(async () => {
    db = await createTempDatabase("postgres");
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: REDIS_TEST_URL,
      // Each test run uses its own Redis namespace: CI shares the Redis server.
      REDIS_PREFIX: `gwcluster:${randomBytes(4).toString("hex")}`,
      STORAGE_URL: `file:${blobDir}`,
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      SIM_LATENCY_SCALE: "0.02",
      SWEEP_IMAGE_AFTER_S: "3",
      SWEEP_VIDEO_AFTER_S: "3",
      // Synchronous calls here last well under a second: a hold older than 4 s was orphaned.
      SWEEP_SYNC_HOLDS_AFTER_S: "4",
    };
    // Migrations run at start: start one gateway first, then the others.
    procs.push(await spawnGateway("serve", env));
    procs.push(await spawnGateway("serve", env));
    procs.push(await spawnGateway("worker", env));
  });
  after(async () => {
    for (const p of procs) await p.kill();
    await db?.drop();
    rmSync(blobDir, { recursive: true, force: true });
  });

  test("limits hold globally, jobs run once, money stays exact, and a killed gateway loses nothing", async () => {
    const [a, b] = procs;
    const gateways = [a.url, b.url];
    const USERS = 8;
    const users: { id: string; key: string }[] = [];
    for (let i = 0; i < USERS; i++) {
      const r = await call(a.url, "POST", "/v1/auth/register", { email: `c${i}-${randomBytes(3).toString("hex")}@example.com`, password: "cluster password" });
      assert.equal(r.status, 200);
      users.push({ id: r.json.org_id, key: r.json.api_key });
      await call(b.url, "POST", `/v1/admin/users/${r.json.user_id}/deposits`, { amount_usd: 50 }, ADMIN_TOKEN);
      // Tier 2 by deposits: 120 requests per minute, alpha pool 4, images 8 running + 24 queued.
    }

    // 1. The per-minute window is global: 150 requests of one customer spread over both gateways.
    const burst = await Promise.all(
      Array.from({ length: 150 }, (_, i) => call(gateways[i % 2], "GET", "/v1/auth/me", undefined, users[0].key)),
    );
    const ok = burst.filter((r) => r.status === 200).length;
    assert.ok(ok >= 119 && ok <= 121, `accepted ${ok} of 150 with a limit of 120`);
    assert.equal(burst.filter((r) => r.status === 429).length, 150 - ok);

    // 2. Mixed load from the other customers through both gateways, with a gateway killed halfway.
    const jobIds: { user: number; id: string }[] = [];
    let maxAlpha = 0;
    const work = async (u: number) => {
      const { key } = users[u];
      for (let i = 0; i < 12; i++) {
        const gw = gateways[(u + i) % gateways.length];
        try {
          if (i % 3 === 0) {
            const r = await call(gw, "POST", "/v1/images/generations", { model: "imgA-v4", prompt: `cluster ${u} ${i}`, idempotency_key: `k-${u}-${i}` }, key);
            if (r.status === 202 || r.status === 200) jobIds.push({ user: u, id: r.json.id });
          } else {
            await call(gw, "POST", "/v1/audio/speech", { input: `cluster speech ${u} ${i}`, voice_id: DEMO_ALPHA_VOICE_ID, response_format: "ulaw_8000" }, key, i % 5 === 0 ? { "x-svc-simulate": "slow" } : {});
          }
        } catch {
          // The killed gateway drops its connections: the caller retries on the other one.
          if (i % 3 === 0) {
            const r = await call(a.url, "POST", "/v1/images/generations", { model: "imgA-v4", prompt: `cluster ${u} ${i}`, idempotency_key: `k-${u}-${i}` }, key);
            if (r.status === 202 || r.status === 200) jobIds.push({ user: u, id: r.json.id });
          }
        }
      }
    };
    const sampler = setInterval(async () => {
      try {
        const r = await call(a.url, "GET", "/v1/auth/limits", undefined, users[1].key);
        if (r.status === 200) maxAlpha = Math.max(maxAlpha, r.json.usage.audio_in_use.alpha);
      } catch {
        // ignore
      }
    }, 100);
    const load = Promise.all(users.slice(1).map((_, i) => work(i + 1)));
    await new Promise((r) => setTimeout(r, 700));
    await b.kill();
    gateways.splice(1, 1);
    await load;
    clearInterval(sampler);
    assert.ok(maxAlpha <= 4, `alpha pool peaked at ${maxAlpha} (cap 4)`);

    // 3. Every job ends (the worker and the surviving gateway run them; the sweep refunds what the
    //    killed gateway was running), exactly once.
    const ids = [...new Set(jobIds.map((j) => j.id))];
    assert.ok(ids.length > 0);
    const end = Date.now() + 60_000;
    let statuses: string[] = [];
    while (Date.now() < end) {
      statuses = await Promise.all(
        ids.map(async (id) => {
          const owner = jobIds.find((j) => j.id === id)!.user;
          return (await call(a.url, "GET", `/v1/jobs/${id}`, undefined, users[owner].key)).json?.status as string;
        }),
      );
      if (statuses.every((s) => ["succeeded", "failed", "refunded", "expired"].includes(s))) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.ok(statuses.every((s) => ["succeeded", "refunded"].includes(s)), statuses.join(","));

    // 4. Money: for every account the balance equals its ledger, every hold is settled, and each job's
    //    entries net its cost (succeeded) or zero (refunded).
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // Holds the killed gateway placed for synchronous calls are released by the sweep.
      let open = -1;
      for (let i = 0; i < 60 && open !== 0; i++) {
        open = (await client.query("select count(*)::int as n from holds where status = 'open'")).rows[0].n;
        if (open !== 0) await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(open, 0, "no hold left open");
      for (const u of users) {
        const { rows } = await client.query(
          "select a.balance_micros::text as balance, coalesce((select sum(amount_micros) from ledger_entries l where l.account_id = a.id), 0)::text as ledger from accounts a where a.id = $1",
          [u.id],
        );
        assert.equal(rows[0].balance, rows[0].ledger, `account ${u.id}`);
        assert.ok(Number(rows[0].balance) >= 0);
      }
      const perJob = await client.query(
        "select j.id, j.status, coalesce(j.cost_micros, 0)::text as cost, sum(l.amount_micros)::text as net, count(*) filter (where l.kind = 'hold')::int as holds, count(*) filter (where l.kind = 'charge')::int as charges from jobs j join ledger_entries l on l.job_id = j.id group by j.id, j.status, j.cost_micros",
      );
      for (const r of perJob.rows) {
        assert.equal(r.holds, 1, `job ${r.id} has one hold`);
        assert.ok(r.charges <= 1, `job ${r.id} charged at most once`);
        assert.equal(Number(r.net), r.status === "succeeded" ? -Number(r.cost) : 0, `job ${r.id} (${r.status})`);
      }
      const started = await client.query("select count(*)::int as n from jobs where status = 'succeeded' and worker_id is not null");
      assert.ok(started.rows[0].n > 0);
    } finally {
      await client.end();
    }
  });
});
