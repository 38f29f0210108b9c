/**
 * The SDK's own machinery (packages/client: `Gateway`), against a loopback HTTP server (node:http) that
 * answers as each test scripts it: cursor pagination (one page, every item, the `after` cursor), retries
 * (429 and 503 with `Retry-After`, other 5xx, lost connections; never a POST without idempotency key;
 * `maxRetries` per client and per call), the error classes by status with the D1 body, status, headers
 * and request id, the per-call `timeout` and `signal`.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Gateway,
  GatewayError,
  InsufficientBalanceError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from "../../packages/client/src/index.ts";
import { freePort } from "../helpers/process.ts";

interface Hit {
  method: string;
  path: string;
  query: URLSearchParams;
  body: string;
  at: number;
}
type Handler = (req: IncomingMessage, res: ServerResponse, hit: Hit, n: number) => void;

let server: Server;
let base: string;
const hits: Hit[] = [];
const handlers = new Map<string, Handler>();

/** Sends `body` as JSON with `status` and `headers`. */
function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** A D1 error body. */
function d1(code: string, message: string, type: string, param: string | null = null) {
  return { error: { code, message, type, param } };
}

const ME = { user_id: "usr_1", email: "a@example.com", balance_usd: 0.5, tier: 0, tier_name: "Free", total_deposits_usd: 0, created_at: "2026-01-01T00:00:00.000Z" };
const job = (id: string, status = "pending") => ({
  object: "media.job",
  id,
  kind: "image",
  model: "imgA-v4",
  status,
  hold_usd: 0.054,
  cost_usd: null,
  output: null,
  error: null,
  fallback_layer: 0,
  idempotency_key: null,
  queue_position: null,
  progress: null,
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
});

/** The hits of `METHOD path`. */
const hitsOf = (key: string) => hits.filter((h) => `${h.method} ${h.path}` === key);

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const hit = { method: req.method ?? "", path: url.pathname, query: url.searchParams, body, at: Date.now() };
      hits.push(hit);
      const key = `${hit.method} ${hit.path}`;
      const handler = handlers.get(key);
      if (handler) handler(req, res, hit, hitsOf(key).length);
      else send(res, 404, d1("not_found", `No route ${key}.`, "invalid_request_error"));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
);
beforeEach(() => {
  hits.length = 0;
  handlers.clear();
});

describe("cursor pagination", () => {
  /** Five jobs, newest first, served `limit` at a time after the `after` cursor. */
  const JOBS = ["job_5", "job_4", "job_3", "job_2", "job_1"];
  const serveJobs: Handler = (_req, res, hit) => {
    const limit = Number(hit.query.get("limit") ?? 20);
    const after = hit.query.get("after");
    const start = after === null ? 0 : JOBS.indexOf(after) + 1;
    const data = JOBS.slice(start, start + limit).map((id) => job(id, "succeeded"));
    send(res, 200, { object: "list", data, has_more: start + limit < JOBS.length });
  };

  test("awaited, a list call is one page; getNextPage follows the last item's id", async () => {
    handlers.set("GET /v1/jobs", serveJobs);
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test" });
    const page = await client.jobs.list({ limit: 2, status: "succeeded" });
    assert.deepEqual(page.data.map((j) => j.id), ["job_5", "job_4"]);
    assert.equal(page.has_more, true);
    assert.equal(page.nextCursor(), "job_4");
    assert.deepEqual(JSON.parse(JSON.stringify(page)), page.body, "serialised, the page is the answer itself");
    const next = await page.getNextPage();
    assert.deepEqual(next.data.map((j) => j.id), ["job_3", "job_2"]);
    assert.equal(hits[0].query.get("limit"), "2");
    assert.equal(hits[0].query.get("status"), "succeeded");
    assert.equal(hits[0].query.get("after"), null);
    assert.equal(hits[1].query.get("after"), "job_4");
    assert.equal(hits[1].query.get("status"), "succeeded", "the filters stay on every page");
  });

  test("for await yields every item of every page, and stops at has_more false", async () => {
    handlers.set("GET /v1/jobs", serveJobs);
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test" });
    const ids: string[] = [];
    for await (const j of client.jobs.list({ limit: 2 })) ids.push(j.id);
    assert.deepEqual(ids, JOBS);
    assert.deepEqual(hits.map((h) => h.query.get("after")), [null, "job_4", "job_2"]);
    const last = await client.jobs.list({ limit: 2, after: "job_2" });
    assert.deepEqual(last.data.map((j) => j.id), ["job_1"]);
    assert.equal(last.hasNextPage(), false);
    assert.equal(last.nextCursor(), null);
    await assert.rejects(last.getNextPage(), /No next page/);
  });

  test("iterPages walks the pages; the gallery's cursor is job_id", async () => {
    handlers.set("GET /v1/gallery", (_req, res, hit) => {
      const after = hit.query.get("after");
      const item = (id: string) => ({ job_id: id, kind: "image", model: "imgA-v4", url: "http://x/1.png", urls: ["http://x/1.png"], content_type: "image/png", share_url: "http://x/s", cost_usd: 0.054, duration_sec: null, created_at: "2026-01-01T00:00:00.000Z" });
      send(res, 200, after === null ? { object: "list", data: [item("job_b")], has_more: true } : { object: "list", data: [item("job_a")], has_more: false });
    });
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test" });
    const pages = [];
    for await (const page of (await client.gallery.list({ limit: 1 })).iterPages()) pages.push(page.data.map((i) => i.job_id));
    assert.deepEqual(pages, [["job_b"], ["job_a"]]);
    assert.equal(hits[1].query.get("after"), "job_b");
  });
});

describe("retries", () => {
  test("a 429 with Retry-After is retried after that many seconds, then resolves", async () => {
    handlers.set("GET /v1/auth/me", (_req, res, _hit, n) => {
      if (n === 1) send(res, 429, d1("rate_limited", "slow down", "rate_limit_error"), { "retry-after": "1" });
      else send(res, 200, ME);
    });
    const me = await new Gateway({ baseUrl: base, apiKey: "gw_test" }).auth.me();
    assert.equal(me.user_id, "usr_1");
    const at = hitsOf("GET /v1/auth/me").map((h) => h.at);
    assert.equal(at.length, 2);
    assert.ok(at[1] - at[0] >= 950, `waited ${at[1] - at[0]} ms, Retry-After said 1 s`);
  });

  test("a 503 with Retry-After is honoured the same way", async () => {
    handlers.set("GET /v1/usage", (_req, res, _hit, n) => {
      if (n === 1) send(res, 503, d1("service_unavailable", "busy", "api_error"), { "retry-after": "1" });
      else send(res, 200, { object: "usage.summary", group_by: "day", data: [], total: { requests: 0, cost_usd: 0 } });
    });
    const summary = await new Gateway({ baseUrl: base, apiKey: "gw_test" }).usage.summary();
    assert.equal(summary.total.requests, 0);
    const at = hitsOf("GET /v1/usage").map((h) => h.at);
    assert.equal(at.length, 2);
    assert.ok(at[1] - at[0] >= 950, `waited ${at[1] - at[0]} ms`);
  });

  test("a 500 without Retry-After is retried with backoff, maxRetries times at most; then its error is thrown", async () => {
    handlers.set("GET /v1/auth/me", (_req, res) => send(res, 500, d1("internal_error", "boom", "api_error")));
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test", maxRetries: 2 });
    const started = Date.now();
    await assert.rejects(client.auth.me(), (err: unknown) => err instanceof InternalServerError && err.code === "internal_error");
    assert.equal(hitsOf("GET /v1/auth/me").length, 3, "one attempt and two retries");
    // Backoff 0.5 s then 1 s, less at most 25 % jitter each.
    assert.ok(Date.now() - started >= 1100, `${Date.now() - started} ms`);
  });

  test("maxRetries per call overrides the client's (0: one attempt)", async () => {
    handlers.set("GET /v1/auth/me", (_req, res) => send(res, 503, d1("service_unavailable", "busy", "api_error"), { "retry-after": "0" }));
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test", maxRetries: 5 });
    await assert.rejects(client.auth.me({ maxRetries: 0 }), InternalServerError);
    assert.equal(hitsOf("GET /v1/auth/me").length, 1);
    hits.length = 0;
    await assert.rejects(client.auth.me({ maxRetries: 1 }), InternalServerError);
    assert.equal(hitsOf("GET /v1/auth/me").length, 2);
  });

  test("a POST without idempotency key is never retried: a submit, a cancel", async () => {
    handlers.set("POST /v1/images/generations", (_req, res) => send(res, 503, d1("service_unavailable", "busy", "api_error"), { "retry-after": "0" }));
    handlers.set("POST /v1/jobs/job_1/cancel", (_req, res) => send(res, 429, d1("rate_limited", "slow down", "rate_limit_error"), { "retry-after": "0" }));
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test", maxRetries: 3 });
    await assert.rejects(client.images.generate({ model: "imgA-v4", prompt: "a fox" }), InternalServerError);
    assert.equal(hitsOf("POST /v1/images/generations").length, 1);
    await assert.rejects(client.jobs.cancel("job_1"), RateLimitError);
    assert.equal(hitsOf("POST /v1/jobs/job_1/cancel").length, 1);
  });

  test("a submit with idempotency_key is retried with the same body (the gateway replays, no new charge)", async () => {
    handlers.set("POST /v1/images/generations", (_req, res, _hit, n) => {
      if (n === 1) send(res, 503, d1("service_unavailable", "busy", "api_error"), { "retry-after": "0" });
      else send(res, 202, job("job_9"));
    });
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test" });
    const submitted = await client.images.generate({ model: "imgA-v4", prompt: "a fox", idempotency_key: "render-42" });
    assert.equal(submitted.id, "job_9");
    const posts = hitsOf("POST /v1/images/generations");
    assert.equal(posts.length, 2);
    assert.equal(posts[1].body, posts[0].body);
    assert.equal((JSON.parse(posts[1].body) as { idempotency_key: string }).idempotency_key, "render-42");
  });

  test("a Retry-After beyond 60 s is not waited out: the RateLimitError comes at once with retryAfterS", async () => {
    handlers.set("GET /v1/auth/me", (_req, res) => send(res, 429, d1("rate_limited", "come back later", "rate_limit_error"), { "retry-after": "120" }));
    await assert.rejects(new Gateway({ baseUrl: base, apiKey: "gw_test" }).auth.me(), (err: unknown) => err instanceof RateLimitError && err.retryAfterS === 120);
    assert.equal(hitsOf("GET /v1/auth/me").length, 1);
  });

  test("a lost connection is retried, then thrown as APIConnectionError with the cause", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const client = new Gateway({ baseUrl: closed, apiKey: "gw_test", maxRetries: 1 });
    const started = Date.now();
    await assert.rejects(client.auth.me(), (err: unknown) => {
      assert.ok(err instanceof APIConnectionError && !(err instanceof APITimeoutError));
      assert.equal(err.status, 0);
      assert.equal(err.code, "connection_error");
      assert.match(err.message, /ECONNREFUSED/);
      assert.ok(err.cause instanceof Error);
      return true;
    });
    assert.ok(Date.now() - started >= 350, "one backoff between the attempts");
  });
});

describe("errors by status", () => {
  const cases: [number, string, string, new (...args: never[]) => APIError][] = [
    [400, "invalid_request", "invalid_request_error", BadRequestError],
    [401, "auth_error", "authentication_error", AuthenticationError],
    [402, "insufficient_balance", "billing_error", InsufficientBalanceError],
    [403, "permission_denied", "permission_error", PermissionDeniedError],
    [404, "job_not_found", "invalid_request_error", NotFoundError],
    [409, "job_not_cancelable", "invalid_request_error", ConflictError],
    [429, "rate_limited", "rate_limit_error", RateLimitError],
    [500, "internal_error", "api_error", InternalServerError],
  ];
  for (const [status, code, type, ErrorClass] of cases) {
    test(`${status} is a ${ErrorClass.name} carrying the D1 body, the status, the headers and X-Svc-Request-Id`, async () => {
      handlers.set("GET /v1/jobs/job_x", (_req, res) => send(res, status, d1(code, `refused ${status}`, type, "id"), { "x-svc-request-id": `req_${status}`, "retry-after": "100" }));
      const client = new Gateway({ baseUrl: base, apiKey: "gw_test", maxRetries: 0 });
      await assert.rejects(client.jobs.get("job_x"), (err: unknown) => {
        assert.ok(err instanceof ErrorClass, `${(err as Error).name}`);
        assert.ok(err instanceof APIError && err instanceof GatewayError && err instanceof Error);
        assert.equal(err.name, ErrorClass.name);
        assert.equal(err.status, status);
        assert.equal(err.code, code);
        assert.equal(err.type, type);
        assert.equal(err.param, "id");
        assert.equal(err.message, `refused ${status}`);
        assert.equal(err.requestId, `req_${status}`);
        assert.equal(err.headers?.get("x-svc-request-id"), `req_${status}`);
        assert.deepEqual(err.error, d1(code, `refused ${status}`, type, "id"));
        return true;
      });
    });
  }

  test("an answer that is not a D1 error (a proxy's page) becomes code http_<status> with its text", async () => {
    handlers.set("GET /v1/auth/me", (_req, res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html>Bad gateway</html>");
    });
    await assert.rejects(new Gateway({ baseUrl: base, maxRetries: 0 }).auth.me(), (err: unknown) => {
      assert.ok(err instanceof InternalServerError);
      assert.equal(err.code, "http_502");
      assert.equal(err.message, "<html>Bad gateway</html>");
      assert.equal(err.error, null);
      return true;
    });
  });
});

describe("timeout and abort", () => {
  test("an attempt past its timeout is an APITimeoutError (after the retries)", async () => {
    // The answer comes long after any timeout here, so a loaded machine cannot let it win the race; the
    // connections it leaves open are closed with the server.
    handlers.set("GET /v1/auth/me", (_req, res) => {
      setTimeout(() => send(res, 200, ME), 60_000).unref();
    });
    const client = new Gateway({ baseUrl: base, apiKey: "gw_test", timeout: 10_000 });
    await assert.rejects(client.auth.me({ timeout: 100, maxRetries: 0 }), (err: unknown) => err instanceof APITimeoutError && err.code === "timeout" && err.status === 0);
    assert.equal(hitsOf("GET /v1/auth/me").length, 1);
    hits.length = 0;
    await assert.rejects(client.auth.me({ timeout: 100, maxRetries: 1 }), APITimeoutError);
    assert.equal(hitsOf("GET /v1/auth/me").length, 2, "a timeout is retried like a lost connection");
  });

  test("the timeout covers the wait for the headers, not the reading of a long body", async () => {
    handlers.set("POST /v1/audio/speech", (_req, res) => {
      res.writeHead(200, { "content-type": "audio/mpeg" });
      res.write(Buffer.alloc(100));
      setTimeout(() => res.end(Buffer.alloc(100)), 1500).unref();
    });
    const response = await new Gateway({ baseUrl: base, apiKey: "gw_test", timeout: 1000 }).audio.speech({ input: "Hi.", voice_id: "v" });
    assert.equal((await response.arrayBuffer()).byteLength, 200);
  });

  test("an aborted signal rejects with its reason at once and is not retried", async () => {
    handlers.set("GET /v1/auth/me", (_req, res) => {
      setTimeout(() => send(res, 200, ME), 1500).unref();
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stop")), 100);
    await assert.rejects(new Gateway({ baseUrl: base, apiKey: "gw_test" }).auth.me({ signal: controller.signal }), /stop/);
    assert.equal(hitsOf("GET /v1/auth/me").length, 1);
  });

  test("an abort during the wait before a retry rejects at once", async () => {
    handlers.set("GET /v1/auth/me", (_req, res) => send(res, 503, d1("service_unavailable", "busy", "api_error"), { "retry-after": "5" }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("enough")), 200);
    await assert.rejects(new Gateway({ baseUrl: base, apiKey: "gw_test" }).auth.me({ signal: controller.signal }), /enough/);
    assert.equal(hitsOf("GET /v1/auth/me").length, 1);
  });

  test("a signal already aborted sends nothing", async () => {
    await assert.rejects(new Gateway({ baseUrl: base }).auth.me({ signal: AbortSignal.abort(new Error("before")) }), /before/);
    assert.equal(hits.length, 0);
  });
});
