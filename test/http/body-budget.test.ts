/**
 * Memory under large bodies (issue "Hardening" 7): large request bodies share a process-wide byte
 * budget (`BODY_BUDGET_MB`). While it is spent, another large body is refused at once with 503
 * `service_unavailable` and `Retry-After` in the D1 body (the client still reads the answer), small
 * bodies are not affected, and the budget comes back when the answer is done. The RSS figures are in
 * the benchmark (bench/README.md), not asserted here.
 */
import assert from "node:assert/strict";
import { type ClientRequest, request } from "node:http";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const MB = 1024 * 1024;

/** Starts a POST announcing `length` bytes and sends only `first` of them; returns the request and its answer. */
function partialPost(url: string, path: string, token: string, length: number, first: number) {
  const u = new URL(url);
  let req!: ClientRequest;
  const answer = new Promise<{ status: number; body: string; retryAfter: string | undefined }>((resolve, reject) => {
    req = request(
      { host: u.hostname, port: u.port, path, method: "POST", agent: false, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": String(length) } },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers["retry-after"] }));
      },
    );
    req.on("error", reject);
  });
  req.write(Buffer.alloc(first, 0x20));
  return { req, answer };
}

describe("the large-body budget", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite", { BODY_BUDGET_MB: "2" });
  });
  after(() => gw?.close());

  test("a second large body while the first is arriving is refused with 503 and Retry-After; small bodies pass; the budget comes back", async () => {
    const u = await gw.register();
    const body = JSON.stringify({ model: "imgA-v4", prompt: "p", parameters: { blob: "x".repeat(1.5 * MB) } });
    // The first large body: announced, only partly sent, so it keeps its reservation.
    const first = partialPost(gw.url, "/v1/images/generations", u.api_key, Buffer.byteLength(body), 64 * 1024);
    await new Promise((r) => setTimeout(r, 200));

    const refused = await fetch(`${gw.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json" },
      body,
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    const json = (await refused.json()) as { error: { code: string; type: string } };
    assert.equal(json.error.code, "service_unavailable");

    // A small body is not part of the budget.
    const small = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "small" } });
    assert.equal(small.status, 202, JSON.stringify(small.json));

    // The first body completes; then a large body is taken again.
    first.req.end(Buffer.from(body).subarray(64 * 1024));
    const firstAnswer = await first.answer;
    assert.ok(firstAnswer.status < 500, firstAnswer.body);
    const again = await fetch(`${gw.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json" },
      body,
    });
    assert.notEqual(again.status, 503, await again.text());
  });
});
