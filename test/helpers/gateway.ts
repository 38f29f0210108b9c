/**
 * Starts a real gateway on loopback for a test: its own database (SQLite file or a random PostgreSQL
 * database), simulator at zero latency, an operator token. `close()` stops it and drops the database.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type GatewayClient } from "../../packages/client/src/index.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import { type App, buildApp } from "../../src/http/app.ts";
import type { RunnerOptions } from "../../src/jobs/runner.ts";
import { createServices, type ServiceOverrides, type Services } from "../../src/services.ts";
import { migrate } from "../../src/storage/db.ts";
import { type Backend, createTempDatabase } from "./backends.ts";
import { documentChecker } from "./document-check.ts";
import { freePort } from "./process.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface TestGateway {
  url: string;
  app: App;
  services: Services;
  /**
   * JSON request helper: returns status, headers and parsed body (or raw bytes for non-JSON). Like the
   * typed client, it fails the test when the answer's status or JSON body is not what /openapi.json
   * documents for the operation (helpers/document-check.ts).
   */
  request(
    method: string,
    path: string,
    opts?: { body?: unknown; token?: string; headers?: Record<string, string> },
  ): Promise<TestResponse>;
  /**
   * The typed client (packages/client, generated from the OpenAPI document), sending `token` (an API key
   * or session token) as `Authorization: Bearer` on every call; without it, unauthenticated.
   */
  client(token?: string): GatewayClient;
  /** Registers a fresh user and returns its secrets. */
  register(): Promise<{ user_id: string; org_id: string; api_key: string; session_token: string; email: string }>;
  /** Operator deposit (USD). */
  deposit(userId: string, amountUsd: number): Promise<void>;
  /** Polls `GET /v1/jobs/{id}` until the job is terminal (or `timeoutMs` passes). */
  waitForJob(token: string, jobId: string, timeoutMs?: number): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  json: any;
  bytes: Uint8Array;
}

let userCounter = 0;

export async function startGateway(
  backend: Backend = "sqlite",
  env: Record<string, string> = {},
  opts: { overrides?: ServiceOverrides; runner?: RunnerOptions | false; logStream?: NodeJS.WritableStream } = {},
): Promise<TestGateway> {
  const db = await createTempDatabase(backend);
  const blobDir = mkdtempSync(join(tmpdir(), "gw-blobs-"));
  const port = await freePort();
  const config: Config = loadConfig({
    PORT: String(port),
    DATABASE_URL: db.url,
    STORAGE_URL: `file:${blobDir}`,
    GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
    SIM_LATENCY_SCALE: "0",
    LOG_LEVEL: "silent",
    // Tests register many accounts from 127.0.0.1; the registration limit has its own tests.
    REGISTRATIONS_PER_ADDRESS: "1000000000",
    ...env,
  });
  const services = await createServices(config, opts.overrides);
  // As main.ts does before serving: createServices applies no migrations.
  await migrate(services.db);
  if (opts.runner !== false) services.startRunner({ pollMs: 50, sweepMs: 500, heartbeatMs: 200, ...(opts.runner ?? {}) });
  const app = await buildApp(services, opts.logStream ? { logStream: opts.logStream } : { logger: false });
  await app.listen({ port, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${port}`;
  // Every answer a test receives is checked against the document the server publishes (all of it: the
  // operator API is listed for the operator token only).
  const operator: Record<string, string> = config.adminToken === null ? {} : { authorization: `Bearer ${config.adminToken}` };
  const checker = documentChecker((await (await fetch(`${url}/openapi.json`, { headers: operator })).json()) as Parameters<typeof documentChecker>[0]);
  const conform = (method: string, path: string, status: number, contentType: string, json: unknown) => {
    const problems = checker.check(method, path, status, contentType, json);
    if (problems.length > 0) throw new Error(`answer differs from /openapi.json:\n${problems.join("\n")}\n${JSON.stringify(json)?.slice(0, 500)}`);
  };

  const request: TestGateway["request"] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await fetch(url + path, { method, headers, body });
    const bytes = new Uint8Array(await res.arrayBuffer());
    let json: unknown = null;
    if ((res.headers.get("content-type") ?? "").includes("json"))
      json = JSON.parse(Buffer.from(bytes).toString("utf8"));
    conform(method, path, res.status, res.headers.get("content-type") ?? "", json);
    return { status: res.status, headers: res.headers, json, bytes };
  };

  const client = (token?: string) => {
    const c = createClient(url, token);
    c.use({
      async onResponse({ request, response }) {
        const type = response.headers.get("content-type") ?? "";
        const json: unknown = type.includes("json") ? await response.clone().json() : null;
        conform(request.method, request.url, response.status, type, json);
        return undefined;
      },
    });
    return c;
  };

  return {
    url,
    app,
    services,
    request,
    client,
    async register() {
      const email = `user${++userCounter}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
      const { data, error, response } = await client().POST("/v1/auth/register", {
        body: { email, password: "correct horse battery" },
      });
      if (!data) throw new Error(`register failed: ${response.status} ${JSON.stringify(error)}`);
      // `org_id` (D41) is in the answer; the generated client schema may predate it.
      return { ...(data as typeof data & { org_id: string }), email };
    },
    async deposit(userId, amountUsd) {
      const res = await request("POST", `/v1/admin/users/${userId}/deposits`, {
        token: ADMIN_TOKEN,
        body: { amount_usd: amountUsd },
      });
      if (res.status !== 200) throw new Error(`deposit failed: ${res.status} ${JSON.stringify(res.json)}`);
    },
    async waitForJob(token, jobId, timeoutMs = 20_000) {
      // Watch the row (polling the API would spend the caller's requests-per-minute), then read the
      // job through the API once.
      const end = Date.now() + timeoutMs;
      for (;;) {
        const row = await services.db.kysely.selectFrom("jobs").select("status").where("id", "=", jobId).executeTakeFirst();
        if (!row || ["succeeded", "failed", "refunded", "expired"].includes(row.status) || Date.now() > end) break;
        await new Promise((res) => setTimeout(res, 25));
      }
      const { data, error, response } = await client(token).GET("/v1/jobs/{id}", { params: { path: { id: jobId } } });
      const json = data ?? error ?? null;
      return { status: response.status, headers: response.headers, json, bytes: new TextEncoder().encode(JSON.stringify(json)) };
    },
    async close() {
      await app.close();
      await services.close();
      await db.drop();
      rmSync(blobDir, { recursive: true, force: true });
    },
  };
}
