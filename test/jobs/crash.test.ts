/**
 * Invariants 2 and 4 across a crash: the gateway is SIGKILLed while jobs are processing; after a restart
 * the sweep refunds every job whose worker died, and the balance is exactly as before.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

async function call(url: string, method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  const json: any = await res.json();
  return { status: res.status, json };
}

for (const backend of BACKENDS) {
  describe(`crash recovery on ${backend.name}`, { skip: backend.skip }, () => {
    let db: TempDatabase | null = null;
    let proc: GatewayProcess | null = null;
    const blobDir = mkdtempSync(join(tmpdir(), "gw-crash-"));
    after(async () => {
      await proc?.kill();
      await db?.drop();
      rmSync(blobDir, { recursive: true, force: true });
    });

    test("SIGKILL while jobs are processing, restart: every hold released, balance as before", async () => {
      db = await createTempDatabase(backend.name);
      const env = {
        DATABASE_URL: db.url,
        STORAGE_URL: `file:${blobDir}`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        SIM_LATENCY_SCALE: "1",
        SWEEP_IMAGE_AFTER_S: "3",
        SWEEP_VIDEO_AFTER_S: "3",
      };
      proc = await spawnGateway("serve", env);
      const reg = await call(proc.url, "POST", "/v1/auth/register", { email: `crash-${Date.now()}@example.com`, password: "crash test password" });
      const { user_id, api_key } = reg.json;
      await call(proc.url, "POST", `/v1/admin/users/${user_id}/deposits`, { amount_usd: 20 }, ADMIN_TOKEN);
      // This test polls its jobs often: lift the per-minute request limit for the account (D22).
      await call(proc.url, "PUT", `/v1/admin/users/${user_id}/limits`, { rpm: 100_000 }, ADMIN_TOKEN);
      const before = (await call(proc.url, "GET", "/v1/auth/me", undefined, api_key)).json.balance_usd;
      assert.equal(before, 20.5);

      const ids: string[] = [];
      for (const body of [
        { model: "imgA-v4", prompt: "one" },
        { model: "imgA-v4-pro", prompt: "two", n: 2 },
        { model: "vidA-3-pro", prompt: "three", duration: 4 },
      ]) {
        const path = body.model.startsWith("vid") ? "/v1/videos/generations" : "/v1/images/generations";
        const r = await call(proc.url, "POST", path, body, api_key);
        assert.equal(r.status, 202, JSON.stringify(r.json));
        ids.push(r.json.id);
      }
      // Wait until the runner has claimed them (simulated upstream latency keeps them processing).
      for (let i = 0; i < 100; i++) {
        const statuses: string[] = await Promise.all(ids.map(async (id) => (await call(proc!.url, "GET", `/v1/jobs/${id}`, undefined, api_key)).json.status));
        if (statuses.every((s) => s === "processing")) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const held = (await call(proc.url, "GET", "/v1/auth/me", undefined, api_key)).json.balance_usd;
      assert.ok(held < before, "holds are in place");

      await proc.kill();
      proc = await spawnGateway("serve", env);
      const end = Date.now() + 30_000;
      let statuses: string[] = [];
      while (Date.now() < end) {
        statuses = await Promise.all(ids.map(async (id) => (await call(proc!.url, "GET", `/v1/jobs/${id}`, undefined, api_key)).json.status));
        if (statuses.every((s) => s === "refunded")) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.deepEqual(statuses, ["refunded", "refunded", "refunded"]);
      const after = (await call(proc.url, "GET", "/v1/auth/me", undefined, api_key)).json.balance_usd;
      assert.equal(after, before);
      const ledger = (await call(proc.url, "GET", "/v1/billing/ledger?limit=100", undefined, api_key)).json.data as { kind: string; job_id: string | null; amount_usd: number }[];
      for (const id of ids) {
        const entries = ledger.filter((e) => e.job_id === id);
        assert.deepEqual(entries.map((e) => e.kind).sort(), ["hold", "hold_release"]);
        assert.equal(Math.round(entries.reduce((s, e) => s + e.amount_usd, 0) * 1e6), 0);
      }
      const job = (await call(proc.url, "GET", `/v1/jobs/${ids[0]}`, undefined, api_key)).json;
      assert.equal(job.cost_usd, null);
      assert.equal(job.error.code, "worker_lost");
    });
  });
}
