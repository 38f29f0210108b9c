/**
 * Errors raised before routing answer the D1 body (D1, D16; issue 9 point 6, issue 10 point 2), checked
 * byte for byte on raw loopback connections to a real gateway: requests Node's HTTP parser rejects
 * (malformed request line, chunk size or length, forbidden bytes in a header, a head over the size
 * limit), the router's own failures (a path that does not decode, a path parameter too long), an
 * unsupported `Expect`, and requests arriving while the gateway shuts down. None of them repeats the
 * path or a header; every answer after which the gateway closes the connection says `Connection: close`,
 * and every other one leaves the connection usable.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type RawAnswer, RawConnection } from "../helpers/raw-http.ts";

const HOST = "Host: localhost\r\n";

/** Asserts a D1 body: exactly `{error: {code, message, type, param: null}}` with the given code and type. */
function assertD1(answer: RawAnswer, code = "invalid_request", type = "invalid_request_error"): void {
  assert.match(answer.headers["content-type"] ?? "", /^application\/json/);
  assert.equal(Number(answer.headers["content-length"]), Buffer.byteLength(answer.body));
  const body = JSON.parse(answer.body) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  assert.equal(body.error.code, code);
  assert.equal(body.error.type, type);
  assert.equal(body.error.param, null);
  assert.equal(typeof body.error.message, "string");
}

/** Asserts the answer says `Connection: close` and the gateway closed the connection after it. */
function assertClosed(answer: RawAnswer & { closed: boolean }): void {
  assert.equal(answer.headers.connection?.toLowerCase(), "close");
  assert.equal(answer.closed, true, "the gateway closed the connection");
}

describe("errors before routing answer the D1 body", () => {
  let gw: TestGateway;
  let apiKey: string;
  before(async () => {
    gw = await startGateway("sqlite");
    apiKey = (await gw.register()).api_key;
  });
  after(async () => {
    await gw?.close();
  });

  /** Sends one raw request and asserts a 400 D1 answer with `Connection: close`, nothing of the request echoed. */
  async function assertBadHttp(request: string, ...secrets: string[]): Promise<void> {
    const res = await RawConnection.exchange(gw.url, request);
    assert.equal(res.status, 400, JSON.stringify(request.slice(0, 80)));
    assertD1(res);
    assertClosed(res);
    for (const s of secrets) assert.ok(!res.body.includes(s), `${s} is not echoed`);
  }

  test("a malformed request line: 400, D1 body, Connection: close", async () => {
    await assertBadHttp("NOT AN HTTP REQUEST\r\n\r\n", "NOT");
    await assertBadHttp(`GET /v1/auth/me?key=gw_secret HTTP/9.9\r\n${HOST}\r\n`, "gw_secret");
  });

  test("a malformed header line: 400, D1 body, Connection: close", async () => {
    await assertBadHttp(`GET /healthz HTTP/1.1\r\n${HOST}Broken header line\r\n\r\n`, "Broken");
  });

  test("a malformed chunk size: 400, D1 body, Connection: close", async () => {
    await assertBadHttp(
      `POST /v1/auth/register HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`,
      "ZZ",
    );
  });

  test("Content-Length together with Transfer-Encoding: chunked: 400, D1 body, Connection: close", async () => {
    await assertBadHttp(
      `POST /v1/auth/register HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
    );
  });

  test("a negative Content-Length: 400, D1 body, Connection: close", async () => {
    await assertBadHttp(`POST /v1/auth/register HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: -1\r\n\r\n`);
  });

  test("a NUL inside a header value: 400, D1 body, Connection: close", async () => {
    await assertBadHttp(`GET /v1/auth/me HTTP/1.1\r\n${HOST}Authorization: Bearer gw_sec\0ret\r\n\r\n`, "gw_sec");
  });

  test("a bare CR inside a header value: 400, D1 body, Connection: close", async () => {
    await assertBadHttp(`GET /v1/auth/me HTTP/1.1\r\n${HOST}Authorization: Bearer gw_sec\rret\r\n\r\n`, "gw_sec");
  });

  test("headers over the size limit: 431, D1 body, Connection: close, no header repeated", async () => {
    const secret = `gw_${"s".repeat(20_000)}`;
    const res = await RawConnection.exchange(gw.url, `GET /v1/auth/me HTTP/1.1\r\n${HOST}Authorization: Bearer ${secret}\r\n\r\n`);
    assert.equal(res.status, 431);
    assertD1(res);
    assertClosed(res);
    assert.ok(!res.body.includes("sssssss"), "the header is not echoed");
  });

  test("a query string over the size limit: 431 (one limit for the request head), D1 body, Connection: close", async () => {
    // Node's parser counts the request line and the headers against one limit (router-errors.ts says
    // why this is 431 rather than 414).
    const res = await RawConnection.exchange(gw.url, `GET /v1/auth/me?key=gw_${"q".repeat(20_000)} HTTP/1.1\r\n${HOST}\r\n`);
    assert.equal(res.status, 431);
    assertD1(res);
    assertClosed(res);
    assert.ok(!res.body.includes("qqqqqqq") && !res.body.includes("gw_"), "the query is not echoed");
  });

  test("a path component that does not decode (FST_ERR_BAD_URL): 400, D1 body, the path not echoed, connection kept", async () => {
    const conn = await RawConnection.open(gw.url);
    try {
      conn.write(`GET /v1/jobs/job_%E0%A4%A HTTP/1.1\r\n${HOST}Authorization: Bearer ${apiKey}\r\n\r\n`);
      const res = await conn.read();
      assert.equal(res.status, 400);
      assertD1(res);
      assert.ok(!res.body.includes("%E0") && !res.body.includes("job_"), "the path is not echoed");
      assert.notEqual(res.headers.connection?.toLowerCase(), "close");
      // The request was read whole: the connection serves the next one.
      conn.write(`GET /healthz HTTP/1.1\r\n${HOST}\r\n`);
      assert.equal((await conn.read()).status, 200);
    } finally {
      conn.destroy();
    }
  });

  test("a path parameter of 5,000 characters: 414, D1 body, the path not echoed, connection kept", async () => {
    for (const auth of [`Authorization: Bearer ${apiKey}\r\n`, ""]) {
      const conn = await RawConnection.open(gw.url);
      try {
        conn.write(`GET /v1/jobs/job_${"x".repeat(5000)} HTTP/1.1\r\n${HOST}${auth}\r\n`);
        const res = await conn.read();
        assert.equal(res.status, 414);
        assertD1(res);
        assert.ok(!res.body.includes("xxxxxxxx"), "the path is not echoed");
        assert.notEqual(res.headers.connection?.toLowerCase(), "close");
        conn.write(`GET /healthz HTTP/1.1\r\n${HOST}\r\n`);
        assert.equal((await conn.read()).status, 200);
      } finally {
        conn.destroy();
      }
    }
  });

  test("an Expect other than 100-continue: 417, D1 body, Connection: close, nothing run", async () => {
    const email = `expect-${Date.now()}@example.com`;
    const body = JSON.stringify({ email, password: "correct horse battery" });
    const res = await RawConnection.exchange(
      gw.url,
      `POST /v1/auth/register HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: foo\r\n\r\n${body}`,
    );
    assert.equal(res.status, 417);
    assertD1(res);
    assertClosed(res);
    assert.ok(!res.body.includes("foo"), "the header is not echoed");
    const user = await gw.services.db.kysely.selectFrom("users").select("id").where("email", "=", email).executeTakeFirst();
    assert.equal(user, undefined, "the request did not run");
  });

  test("Expect: 100-continue still works: 100 Continue, then the route's answer", async () => {
    const body = JSON.stringify({ email: `continue-${Date.now()}@example.com`, password: "correct horse battery" });
    const conn = await RawConnection.open(gw.url);
    try {
      conn.write(
        `POST /v1/auth/register HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
      );
      assert.equal((await conn.read()).status, 100);
      conn.write(body);
      const res = await conn.read();
      assert.ok(res.status === 200 || res.status === 201, `${res.status} ${res.body}`);
      assert.match(JSON.parse(res.body).api_key, /^gw_/);
    } finally {
      conn.destroy();
    }
  });

  test("the gateway still serves after those errors", async () => {
    const res = await gw.request("GET", "/healthz");
    assert.equal(res.status, 200);
  });
});

describe("a request arriving while the gateway shuts down", () => {
  test("503 service_unavailable in the D1 body (not Fastify's), Connection: close", async () => {
    const gw = await startGateway("sqlite");
    const { api_key } = await gw.register();
    let closing: Promise<void> | undefined;
    const conn = await RawConnection.open(gw.url);
    try {
      // The head arrives in two parts: the connection is busy (not idle), so the shutdown waits for it.
      conn.write(`GET /v1/auth/me HTTP/1.1\r\n${HOST}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      closing = gw.close();
      while (gw.app.server.listening) await new Promise((resolve) => setTimeout(resolve, 5));
      conn.write(`Authorization: Bearer ${api_key}\r\n\r\n`);
      const res = { ...(await conn.read()), closed: await conn.closedByServer() };
      assert.equal(res.status, 503);
      assertD1(res, "service_unavailable", "api_error");
      assertClosed(res);
      assert.ok(!res.body.includes("gw_"), "the key is not echoed");
    } finally {
      conn.destroy();
      await (closing ?? gw.close());
    }
  });
});
