/**
 * Errors raised before a route runs answer the D1 body (D1, D16; issue 9 point 6): the router's own
 * failures (a path parameter over the length limit, a path that does not decode) and requests Node's
 * HTTP parser rejects (oversized headers, a malformed request line or header). None of them repeats the
 * path or a header.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** What came back on a raw connection: status, lower-cased headers and the body text. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` bytes as they are on a fresh connection and reads until the server closes it. */
function rawRequest(url: string, request: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head, ...rest] = text.split("\r\n\r\n");
      const [statusLine, ...headerLines] = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const i = line.indexOf(":");
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n") });
    });
    socket.end(request);
  });
}

/** Asserts a D1 body of class `invalid_request_error` (D16: every 4xx here) with code `invalid_request`. */
function assertD1(body: unknown): void {
  assert.deepEqual(Object.keys(body as object), ["error"]);
  const error = (body as { error: Record<string, unknown> }).error;
  assert.deepEqual(Object.keys(error).sort(), ["code", "message", "param", "type"]);
  assert.equal(error.code, "invalid_request");
  assert.equal(error.type, "invalid_request_error");
  assert.equal(error.param, null);
  assert.equal(typeof error.message, "string");
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

  test("a path parameter of 5,000 characters: 414, D1 body, the path not repeated", async () => {
    const longId = `job_${"x".repeat(5000)}`;
    for (const token of [apiKey, undefined]) {
      const res = await gw.request("GET", `/v1/jobs/${longId}`, { token });
      assert.equal(res.status, 414);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assertD1(res.json);
      assert.ok(!JSON.stringify(res.json).includes("xxxxxxxx"), "the path is not echoed");
    }
  });

  test("a path parameter that does not decode: 400, D1 body", async () => {
    const res = await gw.request("GET", "/v1/jobs/job_%E0%A4%A", { token: apiKey });
    assert.equal(res.status, 400);
    assertD1(res.json);
    assert.ok(!JSON.stringify(res.json).includes("%E0"), "the path is not echoed");
  });

  test("headers over Node's size limit: 431, D1 body, no header repeated", async () => {
    const secret = `gw_${"s".repeat(20_000)}`;
    const res = await rawRequest(
      gw.url,
      `GET /v1/auth/me HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\n\r\n`,
    );
    assert.equal(res.status, 431);
    assert.match(res.headers["content-type"] ?? "", /^application\/json/);
    assert.equal(Number(res.headers["content-length"]), Buffer.byteLength(res.body));
    assertD1(JSON.parse(res.body));
    assert.ok(!res.body.includes("sssssss"), "the header is not echoed");
  });

  test("a malformed request line or header: 400, D1 body", async () => {
    for (const request of [
      "NOT AN HTTP REQUEST\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: localhost\r\nBroken header line\r\n\r\n",
      "GET /v1/auth/me?key=gw_secret HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n",
    ]) {
      const res = await rawRequest(gw.url, request);
      assert.equal(res.status, 400, request);
      assertD1(JSON.parse(res.body));
      assert.ok(!res.body.includes("gw_secret") && !res.body.includes("Broken"), "nothing of the request is echoed");
    }
  });

  test("the gateway still serves after those errors", async () => {
    const res = await gw.request("GET", "/healthz");
    assert.equal(res.status, 200);
  });
});
