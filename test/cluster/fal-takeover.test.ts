/**
 * Durable upstream work across processes (D28): two gateways on PostgreSQL run jobs on a fal source (the
 * loopback fake of fal's queue). The process that claimed a job is SIGKILLed while fal is still working
 * on it; the other process takes the job over once its lease lapses (`JOB_LEASE_S`) and resumes it by
 * polling the recorded handle: the job succeeds, fal saw exactly one submit, and the customer paid once.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";

const KEY = "fal-cluster-key-0123456789";
const pgSkip = BACKENDS.find((b) => b.name === "postgres")?.skip ?? false;

describe("a SIGKILLed gateway's fal job finishes on the other gateway", { skip: pgSkip }, () => {
  let db: TempDatabase;
  let fake: FalFake;
  const blobDir = mkdtempSync(join(tmpdir(), "gw-fal-cluster-"));
  const procs: GatewayProcess[] = [];

  before(async () => {
    db = await createTempDatabase("postgres");
    // fal keeps each request in progress for 4 s: long enough to kill its runner mid-job.
    fake = await startFalFake({ apiKey: KEY, queueMs: 100, runMs: 4000 });
    const env = {
      DATABASE_URL: db.url,
      STORAGE_URL: `file:${blobDir}`,
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      FAL_KEY_FOR_TEST: KEY,
      UPSTREAMS: JSON.stringify([{ name: "fal-fake", protocol: "fal", base_url: fake.url, api_key: "env:FAL_KEY_FOR_TEST", families: ["imgA"] }]),
      JOB_LEASE_S: "1",
    };
    procs.push(await spawnGateway("serve", env));
    procs.push(await spawnGateway("serve", env));
  });
  after(async () => {
    for (const p of procs) await p.kill();
    await fake?.close();
    await db?.drop();
    rmSync(blobDir, { recursive: true, force: true });
  });

  test("one submit, one charge, the job delivered", async () => {
    const [a] = procs;
    const reg = await (await fetch(`${a.url}/v1/auth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "k@example.com", password: "correct horse battery" }) })).json() as { api_key: string; user_id: string; org_id: string };
    const auth = { authorization: `Bearer ${reg.api_key}`, "content-type": "application/json" };
    const submitted = await (await fetch(`${a.url}/v1/images/generations`, { method: "POST", headers: auth, body: JSON.stringify({ model: "imgA-v4", prompt: "a kite" }) })).json() as { id: string };
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // Wait until fal accepted the job and its handle is on the row.
      let row: { worker_id: string | null; upstream_handle_json: string | null } | undefined;
      for (let i = 0; i < 200; i++) {
        row = (await client.query("SELECT worker_id, upstream_handle_json FROM jobs WHERE id = $1", [submitted.id])).rows[0];
        if (row?.upstream_handle_json) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(row?.upstream_handle_json, `the handle was recorded: ${JSON.stringify(row)} ${JSON.stringify(submitted)} ${procs.map((p) => p.output()).join("\n")}`);
      const owner = procs.find((p) => row?.worker_id?.includes(`-${p.child.pid}-`));
      assert.ok(owner, `the claiming process among the gateways: ${row?.worker_id}`);
      await owner.kill();
      const survivor = procs.find((p) => p !== owner);
      assert.ok(survivor);

      interface JobView {
        status: string;
        fallback_layer: number;
        cost_usd: number | null;
      }
      // Watch the row (polling the API would spend the caller's requests per minute), then read the job once.
      for (let i = 0; i < 400; i++) {
        const status = (await client.query("SELECT status FROM jobs WHERE id = $1", [submitted.id])).rows[0]?.status as string | undefined;
        if (status && ["succeeded", "failed", "refunded", "expired"].includes(status)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const job = (await (await fetch(`${survivor.url}/v1/jobs/${submitted.id}`, { headers: auth })).json()) as JobView;
      assert.equal(job?.status, "succeeded", JSON.stringify(job));
      assert.equal(fake.submits().length, 1, "fal saw exactly one submit");
      const kinds = (await client.query("SELECT kind FROM ledger_entries WHERE account_id = $1 ORDER BY seq", [reg.org_id])).rows.map((r: { kind: string }) => r.kind);
      assert.deepEqual(kinds, ["signup_credit", "hold", "hold_release", "charge"]);
      const bal = await (await fetch(`${survivor.url}/v1/auth/me`, { headers: auth })).json() as { balance_usd: number };
      assert.equal(bal.balance_usd, 0.5 - (job?.cost_usd ?? 0));
    } finally {
      await client.end();
    }
  });
});
