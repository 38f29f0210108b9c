/**
 * The request-body budget (issue "Hardening" 7; issue 27 point 5: it counts bytes, not guesses), over real
 * HTTP on loopback with raw sockets:
 * - stalled chunked uploads hold only the bytes they sent: three of them hang while twenty ordinary
 *   chunked uploads succeed at the same time;
 * - a declared `Content-Length` is reserved up front: a body that does not fit is refused at once with 503
 *   `service_unavailable` and `Retry-After` in the D1 body, small bodies pass, the budget comes back;
 * - a stalled body (chunked, declared or multipart) is abandoned after `BODY_IDLE_TIMEOUT_S` with 408 and
 *   the connection closed, and its budget is given back: a later large upload succeeds;
 * - the bound holds: many concurrent large bodies, declared or chunked, are partly refused with the
 *   documented 503 (never another 5xx), the accounting never exceeds the bound, and all of it comes back.
 * The RSS figures are in the benchmark (bench/README.md), not asserted here.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type RawAnswer, RawConnection } from "../helpers/raw-http.ts";

const MB = 1024 * 1024;
const PATH = "/v1/images/generations";

/** One chunk of a chunked body, framed. */
function frame(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")]);
}
const LAST_CHUNK = "0\r\n\r\n";

/** A request head: chunked unless `length` is given. */
function head(token: string, opts: { length?: number; contentType?: string; path?: string } = {}): string {
  const framing = opts.length === undefined ? "Transfer-Encoding: chunked" : `Content-Length: ${opts.length}`;
  return (
    `POST ${opts.path ?? PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: ${opts.contentType ?? "application/json"}\r\n${framing}\r\n\r\n`
  );
}

/** A valid image request of about `size` bytes (a padding field the route ignores). */
function imageBody(size: number, prompt = "p"): Buffer {
  const base = JSON.stringify({ model: "imgA-v4", prompt, pad: "" });
  return Buffer.from(JSON.stringify({ model: "imgA-v4", prompt, pad: "x".repeat(Math.max(0, size - base.length)) }));
}

/** Splits `data` at `cuts` random points. */
function randomPieces(data: Buffer, cuts: number): Buffer[] {
  const points = Array.from({ length: cuts }, () => Math.floor(Math.random() * data.length)).sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let at = 0;
  for (const p of [...points, data.length]) {
    if (p > at) pieces.push(data.subarray(at, p));
    at = Math.max(at, p);
  }
  return pieces;
}

/** Sends `body` chunked on a new connection, in random pieces with a pause between them, and reads the answer. */
async function chunkedUpload(url: string, token: string, body: Buffer, cuts = 6): Promise<RawAnswer> {
  const conn = await RawConnection.open(url);
  try {
    conn.write(head(token));
    for (const piece of randomPieces(body, cuts)) {
      conn.write(frame(piece));
      await new Promise((r) => setImmediate(r));
    }
    conn.write(LAST_CHUNK);
    return await conn.read(30_000);
  } finally {
    conn.destroy();
  }
}

/** Whether `conn` has no answer yet. */
async function stillWaiting(conn: RawConnection): Promise<boolean> {
  try {
    await conn.read(1);
    return false;
  } catch (err) {
    return (err as Error).message === "no answer in time";
  }
}

/** Waits until `cond()` or `ms` pass; returns the last value. */
async function eventually(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

/** Asserts the D1 503 of the budget. */
function assertRefused(a: RawAnswer): void {
  assert.equal(a.status, 503, a.body);
  assert.equal(a.headers["retry-after"], "1");
  const json = JSON.parse(a.body) as { error: { code: string; type: string; message: string; param: null } };
  assert.deepEqual(Object.keys(json.error).sort(), ["code", "message", "param", "type"]);
  assert.equal(json.error.code, "service_unavailable");
  assert.equal(json.error.type, "api_error");
}

/** A user with money and generous request windows (many uploads in a row). */
async function uploader(gw: TestGateway): Promise<string> {
  const u = await gw.register();
  await gw.deposit(u.user_id, 50);
  const r = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 1_000_000, per_model_rpm: 1_000_000 } });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return u.api_key;
}

describe("the body budget counts bytes as they arrive (no idle time-out in reach)", () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startGateway("sqlite", { BODY_BUDGET_MB: "25", BODY_IDLE_TIMEOUT_S: "120" });
    key = await uploader(gw);
  });
  after(() => gw?.close());

  test("three stalled chunked uploads hang while twenty ordinary chunked uploads succeed", async () => {
    const budget = gw.app.bodyBudget;
    const stalled: RawConnection[] = [];
    try {
      // Each sends a first chunk of 1 MB and then nothing: it holds 1 MB, not the body limit.
      for (let i = 0; i < 3; i++) {
        const conn = await RawConnection.open(gw.url);
        conn.write(head(key));
        conn.write(frame(Buffer.from(`{"model":"imgA-v4","prompt":"stalled","pad":"${"x".repeat(MB)}`)));
        stalled.push(conn);
      }
      assert.ok(await eventually(() => budget.inUse >= 3 * MB, 5000), `reserved ${budget.inUse}`);
      assert.ok(budget.inUse < 4 * MB, `the stalled uploads hold what they sent, not the body limit: ${budget.inUse}`);

      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => chunkedUpload(gw.url, key, imageBody(4096 + i * 997, `ordinary ${i}`))));
      for (const a of answers) assert.equal(a.status, 202, a.body);
      for (const conn of stalled) assert.ok(await stillWaiting(conn), "a stalled upload is still waiting for the rest of its body");
    } finally {
      for (const conn of stalled) conn.destroy();
    }
    assert.ok(await eventually(() => budget.inUse === 0, 5000), `all given back: ${budget.inUse}`);
  });

  test("a declared length is reserved up front: a body that does not fit is refused at once with the D1 503, small bodies pass, the budget comes back", async () => {
    const budget = gw.app.bodyBudget;
    const big = imageBody(20 * MB);
    const first = await RawConnection.open(gw.url);
    try {
      // Announced whole, only 64 KB sent: 20 MB stay reserved.
      first.write(head(key, { length: big.length }));
      first.write(big.subarray(0, 64 * 1024));
      assert.ok(await eventually(() => budget.inUse >= 20 * MB, 5000), `reserved ${budget.inUse}`);

      const second = imageBody(10 * MB);
      const refused = await RawConnection.exchange(gw.url, Buffer.concat([Buffer.from(head(key, { length: second.length })), second]));
      assertRefused(refused);
      // A small chunked body and a small declared one still pass.
      assert.equal((await chunkedUpload(gw.url, key, imageBody(2000, "small chunked"))).status, 202);
      const small = await gw.request("POST", PATH, { token: key, body: { model: "imgA-v4", prompt: "small" } });
      assert.equal(small.status, 202, JSON.stringify(small.json));

      first.write(big.subarray(64 * 1024));
      const firstAnswer = await first.read(30_000);
      assert.equal(firstAnswer.status, 202, firstAnswer.body);
    } finally {
      first.destroy();
    }
    assert.ok(await eventually(() => budget.inUse === 0, 5000), `all given back: ${budget.inUse}`);
    const again = imageBody(10 * MB);
    const taken = await RawConnection.exchange(gw.url, Buffer.concat([Buffer.from(head(key, { length: again.length })), again]));
    assert.equal(taken.status, 202, taken.body);
  });

  test("the bound holds: concurrent large bodies, declared and chunked, are partly refused with the documented 503, never another 5xx", async (t) => {
    const budget = gw.app.bodyBudget;
    // A declared 18 MB body, barely begun, holds its reservation: 7 MB are left, one 6 MB body at a time.
    const holder = await RawConnection.open(gw.url);
    holder.write(head(key, { length: 18 * MB }));
    holder.write(Buffer.alloc(64 * 1024, 0x20));
    assert.ok(await eventually(() => budget.inUse >= 18 * MB, 5000), `reserved ${budget.inUse}`);
    const body = imageBody(6 * MB);
    const declared = Array.from({ length: 8 }, () =>
      RawConnection.exchange(gw.url, Buffer.concat([Buffer.from(head(key, { length: body.length })), body])).catch((err: Error) => ({ status: 0, headers: {}, body: err.message })),
    );
    const chunked = Array.from({ length: 8 }, () => chunkedUpload(gw.url, key, body, 40).catch((err: Error) => ({ status: 0, headers: {}, body: err.message })));
    const answers = await Promise.all([...declared, ...chunked]);
    holder.destroy();
    const statuses = answers.map((a) => a.status);
    t.diagnostic(`declared: ${statuses.slice(0, 8).join(",")}; chunked: ${statuses.slice(8).join(",")}; peak ${budget.peak} of ${budget.maxBytes}`);
    for (const a of answers) {
      // A chunked body refused part-way may lose its answer to the connection's reset (status 0).
      assert.ok(a.status === 202 || a.status === 503 || a.status === 0, `${a.status}: ${a.body}`);
      if (a.status === 503) assertRefused(a);
    }
    assert.ok(statuses.includes(503), `some refused: ${statuses.join(",")}`);
    assert.ok(statuses.includes(202), `some taken: ${statuses.join(",")}`);
    // The declared ones are refused before being read, so their answers always arrive.
    for (const a of answers.slice(0, 8)) assert.ok(a.status === 202 || a.status === 503, `${a.status}: ${a.body}`);
    assert.ok(budget.peak <= budget.maxBytes, `peak ${budget.peak} within ${budget.maxBytes}`);
    assert.ok(budget.peak > 18 * MB + body.length / 2, `the budget was used: peak ${budget.peak}`);
    assert.ok(await eventually(() => budget.inUse === 0, 5000), `all given back: ${budget.inUse}`);
  });
});

describe("a stalled body is abandoned and its budget given back", () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startGateway("sqlite", { BODY_BUDGET_MB: "25", BODY_IDLE_TIMEOUT_S: "1" });
    key = await uploader(gw);
  });
  after(() => gw?.close());

  test("a chunked upload that stops is answered 408 and closed; a large upload refused meanwhile succeeds afterwards", async () => {
    const budget = gw.app.bodyBudget;
    const conn = await RawConnection.open(gw.url);
    try {
      conn.write(head(key));
      conn.write(frame(Buffer.from(`{"model":"imgA-v4","prompt":"stalled","pad":"${"x".repeat(20 * MB)}`)));
      assert.ok(await eventually(() => budget.inUse >= 20 * MB, 5000), `reserved ${budget.inUse}`);
      // While it holds 20 MB, a declared 10 MB body does not fit.
      const big = imageBody(10 * MB);
      const request = Buffer.concat([Buffer.from(head(key, { length: big.length })), big]);
      assertRefused(await RawConnection.exchange(gw.url, request));

      const answer = await conn.read(10_000);
      assert.equal(answer.status, 408, answer.body);
      const json = JSON.parse(answer.body) as { error: { code: string; type: string } };
      assert.equal(json.error.code, "invalid_request");
      assert.equal(json.error.type, "invalid_request_error");
      assert.equal(answer.headers.connection, "close");
      assert.ok(await conn.closedByServer(5000), "the connection is closed");
      assert.ok(await eventually(() => budget.inUse === 0, 5000), `given back: ${budget.inUse}`);

      const later = await RawConnection.exchange(gw.url, request);
      assert.equal(later.status, 202, later.body);
    } finally {
      conn.destroy();
    }
  });

  test("a declared body that stops part-way is answered 408 and its reservation given back", async () => {
    const budget = gw.app.bodyBudget;
    const conn = await RawConnection.open(gw.url);
    try {
      const big = imageBody(20 * MB);
      conn.write(head(key, { length: big.length }));
      conn.write(big.subarray(0, MB));
      assert.ok(await eventually(() => budget.inUse >= 20 * MB, 5000), `reserved ${budget.inUse}`);
      const answer = await conn.read(10_000);
      assert.equal(answer.status, 408, answer.body);
      assert.ok(await conn.closedByServer(5000), "the connection is closed");
      assert.ok(await eventually(() => budget.inUse === 0, 5000), `given back: ${budget.inUse}`);
    } finally {
      conn.destroy();
    }
  });

  test("a multipart upload (read by the route itself) that stops is answered 408 and its bytes given back; a whole chunked one succeeds", async () => {
    const budget = gw.app.bodyBudget;
    const boundary = "----budgetboundary0123";
    const wav = Buffer.from(makeWav(12));
    const form = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nMine\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="ref.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
      wav,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const contentType = `multipart/form-data; boundary=${boundary}`;
    const conn = await RawConnection.open(gw.url);
    try {
      conn.write(head(key, { path: "/v1/audio/voice-clone", contentType }));
      conn.write(frame(form.subarray(0, form.length - 200)));
      const answer = await conn.read(10_000);
      assert.equal(answer.status, 408, answer.body);
      assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, "invalid_request");
      assert.ok(await conn.closedByServer(5000), "the connection is closed");
      assert.ok(await eventually(() => budget.inUse === 0, 5000), `given back: ${budget.inUse}`);
    } finally {
      conn.destroy();
    }

    const whole = await RawConnection.open(gw.url);
    try {
      whole.write(head(key, { path: "/v1/audio/voice-clone", contentType }));
      for (const piece of randomPieces(form, 8)) whole.write(frame(piece));
      whole.write(LAST_CHUNK);
      const answer = await whole.read(30_000);
      assert.equal(answer.status, 200, answer.body);
    } finally {
      whole.destroy();
    }
    assert.ok(await eventually(() => budget.inUse === 0, 5000), `given back: ${budget.inUse}`);
  });
});
