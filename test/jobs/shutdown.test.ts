/**
 * Graceful shutdown: on SIGTERM a gateway finishes in-flight requests and hands the jobs its runner had
 * claimed back as `pending` (holds kept); the next process runs them to `succeeded`, charged once.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { openDatabase } from "../../src/storage/db.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";

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

describe("graceful shutdown", () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-term-"));
  let proc: GatewayProcess | null = null;
  after(async () => {
    await proc?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test("SIGTERM hands claimed jobs back; the next process completes them", async () => {
    const env = {
      DATABASE_URL: `sqlite:${join(dir, "gw.db")}`,
      STORAGE_URL: `file:${join(dir, "blobs")}`,
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      SIM_LATENCY_SCALE: "1",
    };
    proc = await spawnGateway("serve", env);
    const reg = await call(proc.url, "POST", "/v1/auth/register", { email: "term@example.com", password: "term password" });
    const { user_id, org_id, api_key } = reg.json;
    await call(proc.url, "PUT", `/v1/admin/users/${user_id}/limits`, { rpm: 100_000 }, ADMIN_TOKEN);
    const ids: string[] = [];
    for (const prompt of ["one", "two"]) {
      const r = await call(proc.url, "POST", "/v1/images/generations", { model: "imgA-v4", prompt }, api_key);
      assert.equal(r.status, 202);
      ids.push(r.json.id);
    }
    for (let i = 0; i < 100; i++) {
      const s = await Promise.all(ids.map(async (id) => (await call(proc!.url, "GET", `/v1/jobs/${id}`, undefined, api_key)).json.status));
      if (s.every((x) => x === "processing")) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await proc.stop();
    assert.equal(proc.child.exitCode, 0);

    const db = openDatabase(env.DATABASE_URL);
    try {
      const rows = await db.kysely.selectFrom("jobs").select(["status", "worker_id"]).where("id", "in", ids).execute();
      assert.deepEqual(rows.map((r) => [r.status, r.worker_id]), [["pending", null], ["pending", null]]);
      const holds = await db.kysely.selectFrom("holds").select("status").where("account_id", "=", org_id).execute();
      assert.deepEqual(holds.map((h) => h.status), ["open", "open"]);
    } finally {
      await db.close();
    }

    proc = await spawnGateway("serve", { ...env, SIM_LATENCY_SCALE: "0" });
    const end = Date.now() + 20_000;
    let statuses: string[] = [];
    while (Date.now() < end) {
      statuses = await Promise.all(ids.map(async (id) => (await call(proc!.url, "GET", `/v1/jobs/${id}`, undefined, api_key)).json.status));
      if (statuses.every((x) => x === "succeeded")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(statuses, ["succeeded", "succeeded"]);
    const me = await call(proc.url, "GET", "/v1/auth/me", undefined, api_key);
    assert.equal(me.json.balance_usd, 0.5 - 2 * 0.054);
  });

  test("SIGTERM waits for paid calls whose callers hung up: their holds settle before the database closes", async () => {
    const env = {
      DATABASE_URL: `sqlite:${join(dir, "gw2.db")}`,
      STORAGE_URL: `file:${join(dir, "blobs2")}`,
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      SIM_LATENCY_SCALE: "1",
    };
    await proc?.stop();
    proc = await spawnGateway("serve", env);
    const reg = await call(proc.url, "POST", "/v1/auth/register", { email: "hangup@example.com", password: "hangup password" });
    const { user_id, org_id, api_key } = reg.json;
    await call(proc.url, "PUT", `/v1/admin/users/${user_id}/limits`, { rpm: 100_000, audio_concurrent_per_provider: { alpha: 100 } }, ADMIN_TOKEN);
    // Speech on the simulator at its real latency; every caller hangs up while its call runs.
    const callers = Array.from({ length: 16 }, () => {
      const abort = new AbortController();
      const done = fetch(`${proc!.url}/v1/audio/speech`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${api_key}` },
        body: JSON.stringify({ model: "alpha-flash-v2-5", input: "A sentence that takes a moment to speak.", voice_id: DEMO_ALPHA_VOICE_ID }),
        signal: abort.signal,
      }).catch(() => null);
      return { abort, done };
    });
    const db = openDatabase(env.DATABASE_URL);
    try {
      for (let i = 0; i < 100; i++) {
        const open = await db.kysely.selectFrom("holds").select("id").where("account_id", "=", org_id).where("status", "=", "open").execute();
        if (open.length === callers.length) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      // The callers hang up and the gateway is told to stop at the same moment: their calls are still
      // releasing their holds when the HTTP server, which has no connection left to wait for, closes.
      for (const c of callers) c.abort.abort();
      const stopped = proc.stop();
      await Promise.all(callers.map((c) => c.done));
      await stopped;
      assert.equal(proc.child.exitCode, 0);
      const holds = await db.kysely.selectFrom("holds").select("status").where("account_id", "=", org_id).execute();
      assert.equal(holds.length, callers.length);
      assert.ok(holds.every((h) => h.status !== "open"), `no hold left open: ${holds.map((h) => h.status).join(", ")}`);
    } finally {
      await db.close();
    }
  });
});
