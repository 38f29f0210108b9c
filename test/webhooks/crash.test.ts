/**
 * Deliveries survive SIGKILL (D31): the real gateway process ends a job, its first delivery attempt is
 * answered 500, and the process is SIGKILLed before the retry is due. After a restart on the same
 * database the retry goes out with the same `webhook-id`, verifies with the official package, and the
 * receiver gets the event exactly once with a 2xx.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { BACKENDS, createTempDatabase, type TempDatabase } from "../helpers/backends.ts";
import { ADMIN_TOKEN } from "../helpers/gateway.ts";
import { type GatewayProcess, spawnGateway } from "../helpers/process.ts";
import { type Receiver, startReceiver, verify } from "./receiver.ts";

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
  describe(`webhook delivery across SIGKILL on ${backend.name}`, { skip: backend.skip }, () => {
    let db: TempDatabase | null = null;
    let proc: GatewayProcess | null = null;
    let rx: Receiver | null = null;
    const blobDir = mkdtempSync(join(tmpdir(), "gw-hooks-crash-"));
    after(async () => {
      await proc?.kill();
      await rx?.close();
      await db?.drop();
      rmSync(blobDir, { recursive: true, force: true });
    });

    test("SIGKILL between a job's end and its successful delivery: delivered after the restart, once", async () => {
      db = await createTempDatabase(backend.name);
      rx = await startReceiver();
      rx.respond = ({ count }) => (count === 1 ? 500 : 200);
      const env = {
        DATABASE_URL: db.url,
        STORAGE_URL: `file:${blobDir}`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        SIM_LATENCY_SCALE: "0",
        WEBHOOK_ALLOW_PRIVATE: "1",
        // Long enough that the kill below lands before the retry is due.
        WEBHOOK_RETRY_SCHEDULE_S: "3",
      };
      proc = await spawnGateway("serve", env);
      const reg = await call(proc.url, "POST", "/v1/auth/register", { email: `hooks-crash-${Date.now()}@example.com`, password: "crash test password" });
      const { user_id, api_key } = reg.json;
      await call(proc.url, "POST", `/v1/admin/users/${user_id}/deposits`, { amount_usd: 20 }, ADMIN_TOKEN);
      await call(proc.url, "PUT", `/v1/admin/users/${user_id}/limits`, { rpm: 100_000 }, ADMIN_TOKEN);
      const ep = await call(proc.url, "POST", "/v1/webhooks", { url: `${rx.url}/hook` }, api_key);
      assert.equal(ep.status, 201, JSON.stringify(ep.json));
      const job = await call(proc.url, "POST", "/v1/images/generations", { model: "imgA-v4", prompt: "a harbour" }, api_key);
      assert.equal(job.status, 202, JSON.stringify(job.json));

      await rx.waitFor(() => rx!.received.length >= 1, "the first attempt");
      // Wait until the failed attempt is recorded (pending, retry scheduled), then kill the process.
      for (let i = 0; i < 200; i++) {
        const log = await call(proc.url, "GET", "/v1/webhooks/deliveries", undefined, api_key);
        if (log.json.data[0]?.attempts.length === 1) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const before = await call(proc.url, "GET", "/v1/webhooks/deliveries", undefined, api_key);
      assert.equal(before.json.data[0].status, "pending");
      assert.equal(before.json.data[0].attempts[0].status_code, 500);
      await proc.kill();
      assert.equal(rx.received.length, 1, "the retry was not sent before the kill");

      proc = await spawnGateway("serve", env);
      await rx.waitFor(() => rx!.received.length >= 2, "the retry after the restart");
      const [first, second] = rx.received;
      assert.equal(second.status, 200);
      assert.equal(second.headers["webhook-id"], first.headers["webhook-id"]);
      const event = verify(ep.json.secret, second);
      assert.equal(event.type, "job.succeeded");
      assert.equal((event.data as { id: string }).id, job.json.id);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(rx.received.filter((x) => x.status === 200).length, 1, "delivered exactly once with a 2xx");
      const log = await call(proc.url, "GET", "/v1/webhooks/deliveries", undefined, api_key);
      assert.equal(log.json.data[0].status, "succeeded");
      assert.deepEqual(log.json.data[0].attempts.map((a: { status_code: number }) => a.status_code), [500, 200]);
    });
  });
}
