/**
 * A fuzz test of every route (issue "Hardening" 9): fast-check drives each operation of the OpenAPI
 * document (the operator routes included) with generated bodies, queries, path parameters and headers, and
 * checks for every answer: never a 5xx; a 4xx always has the D1 body; a 4xx never moves money; at the
 * end the process still answers, a paid call still works, and every balance equals its ledger sum.
 *
 * About one body in three is sent chunked (`Transfer-Encoding: chunked`, issue 27 point 5), split at
 * random points and padded (JSON allows trailing blanks) to random sizes up to 3 MB, so the body budget and
 * every parser meet bodies without a declared length: they too must never answer a 5xx. Throughout the
 * run, three slow chunked uploads trickle a byte at a time: they must cost only what they sent.
 *
 * Seeded and bounded: `FUZZ_SEED` (default 20261123) and `FUZZ_RUNS` (runs per operation, default 60).
 * A failure prints the seed and the shrunk request.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { RawConnection } from "../helpers/raw-http.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

interface Operation {
  method: string;
  path: string;
}

/** Strings that have broken parsers before: huge, empty, control characters, odd numbers, unicode. */
const nastyString = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom("", " ", "\u0000", "\r\n", "-0", "1e309", "NaN", "Infinity", "null", "true", "[]", "{}", "__proto__", "constructor", "../..", "%00", "😀".repeat(50), "x".repeat(5000)),
);

/** JSON values, including deep nesting (a few thousand levels) and prototype keys. */
const jsonBody = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 2, arbitrary: fc.dictionary(fc.constantFrom("model", "input", "prompt", "voice_id", "text", "duration", "n", "parameters", "image_url", "messages", "email", "password", "name", "amount_usd", "tier", "response_format", "idempotency_key", "simulate_not", "__proto__"), fc.oneof(nastyString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }))) },
  { weight: 1, arbitrary: fc.integer({ min: 60, max: 3000 }).map((d) => JSON.parse(`${'{"parameters":'.repeat(1)}${'{"a":'.repeat(d)}1${"}".repeat(d)}}`) as unknown) },
);

/** A request: the body as text (JSON, or raw bytes that are not JSON), its content type, query, auth. */
const requestArb = fc.record({
  params: fc.array(
    fc.oneof(
      fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent),
      fc.constantFrom("job_x", "usr_x", "..", "%2F", "%E0%A4%A", "%", "a".repeat(600), "%00", "key_nope"),
    ),
    { minLength: 3, maxLength: 3 },
  ),
  query: fc.dictionary(fc.string({ maxLength: 12 }), fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("-1", "0", "1e9", "abc", "%zz")), { maxKeys: 4 }),
  body: fc.oneof(
    { weight: 5, arbitrary: jsonBody.map((v) => JSON.stringify(v) ?? "null") },
    { weight: 1, arbitrary: fc.oneof(nastyString, fc.constantFrom("{", '{"a":', "[1,2", "\u0000\u0001", "--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc")) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ),
  contentType: fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "multipart/form-data",
    "multipart/form-data; boundary=x",
    "multipart/form-data; boundary=other",
    "application/x-www-form-urlencoded",
    undefined,
  ),
  auth: fc.constantFrom("key", "session", "other-key", "garbage", "none", "admin"),
  // Sent chunked: where to cut the body, and how many blanks to add (random sizes, a few large ones).
  chunked: fc.option(
    fc.record({
      cuts: fc.array(fc.nat(), { maxLength: 12 }),
      pad: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.integer({ min: 1, max: 64 * 1024 }) }, { weight: 1, arbitrary: fc.integer({ min: 64 * 1024, max: 3 * 1024 * 1024 }) }),
    }),
    { nil: undefined, freq: 2 },
  ),
  idempotencyKey: fc.option(fc.string({ maxLength: 200 }).filter((s) => /^[\x20-\x7e]*$/.test(s)), { nil: undefined }),
});

/** `text` as a chunked request body: padded with `pad` blanks, cut at `cuts` (points modulo its length). */
function chunkedBody(text: string, cuts: number[], pad: number): ReadableStream<Uint8Array> {
  const bytes = Buffer.from(text + " ".repeat(pad));
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let at = 0;
  for (const p of [...points, bytes.length]) {
    if (p > at) pieces.push(bytes.subarray(at, p));
    at = Math.max(at, p);
  }
  return new ReadableStream({
    pull(controller) {
      const next = pieces.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(next);
    },
  });
}

describe(`fuzz of every route (seed ${SEED}, ${RUNS} runs per operation)`, () => {
  let gw: TestGateway;
  let operations: Operation[];
  let user: { user_id: string; org_id: string; api_key: string; session_token: string };
  let other: { user_id: string; org_id: string; api_key: string };
  const slow: RawConnection[] = [];
  let trickle: NodeJS.Timeout | undefined;

  before(async () => {
    gw = await startGateway("sqlite", { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN });
    // With the operator token the document lists the operator routes too (tag `operator`).
    const doc = (await (await fetch(`${gw.url}/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))
        .map((m) => ({ method: m.toUpperCase(), path })),
    );
    user = await gw.register();
    other = await gw.register();
    await gw.deposit(user.user_id, 20);
    // Generous request windows, so the fuzz reaches the handlers instead of the rate limiter.
    for (const id of [user.user_id, other.user_id]) await liftLimits(id);
    // Slow uploads in the background: a byte every 200 ms, never finished.
    for (let i = 0; i < 3; i++) {
      const conn = await RawConnection.open(gw.url);
      conn.write(`POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${other.api_key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n`);
      slow.push(conn);
    }
    trickle = setInterval(() => {
      for (const conn of slow) conn.write("1\r\n \r\n");
    }, 200);
  });

  async function liftLimits(id: string) {
    const r = await gw.request("PUT", `/v1/admin/users/${id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 1_000_000, per_model_rpm: 1_000_000 } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
  }
  after(() => {
    clearInterval(trickle);
    for (const conn of slow) conn.destroy();
    return gw?.close();
  });

  test("never a 5xx, always the D1 body on a 4xx, never a charge on a 4xx", async (t) => {
    const statuses = new Map<number, number>();
    let chunkedSent = 0;
    const db = gw.services.db.kysely;
    const tokens: Record<string, string | undefined> = {
      key: user.api_key,
      session: user.session_token,
      "other-key": other.api_key,
      garbage: "gw_garbage_0123456789",
      none: undefined,
      admin: ADMIN_TOKEN,
    };
    for (const op of operations) {
      await fc.assert(
        fc.asyncProperty(requestArb, async (r) => {
          let i = 0;
          // Path parameters: mostly generated; sometimes the caller's own id, so deeper code runs.
          const path = op.path.replace(/\{[^}]+\}/g, (name) => (name === "{user_id}" && r.auth === "admin" ? user.user_id : r.params[i++ % 3]));
          const qs = new URLSearchParams(r.query).toString();
          const headers: Record<string, string> = {};
          const token = tokens[r.auth];
          if (token) headers.authorization = `Bearer ${token}`;
          if (r.contentType && r.body !== undefined) headers["content-type"] = r.contentType;
          if (r.idempotencyKey !== undefined) headers["idempotency-key"] = r.idempotencyKey;
          const before = await getBalance(db, user.org_id);
          const withBody = op.method !== "GET" && op.method !== "DELETE" && r.body !== undefined;
          const chunked = withBody && r.chunked !== undefined;
          if (chunked) chunkedSent++;
          const res = await fetch(`${gw.url}${path}${qs ? `?${qs}` : ""}`, {
            method: op.method,
            headers,
            body: !withBody ? undefined : chunked ? chunkedBody(r.body ?? "", r.chunked?.cuts ?? [], r.chunked?.pad ?? 0) : r.body,
            duplex: "half",
          } as RequestInit);
          const text = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const where = `${op.method} ${path}${chunked ? " (chunked)" : ""} -> ${res.status}: ${text.slice(0, 300)}`;
          assert.ok(res.status < 500, where);
          if (res.status >= 400 && path.startsWith("/replicate/")) {
            // The Replicate dialect answers RFC 9457 problem details (D47), refusals before routing included.
            assert.match(res.headers.get("content-type") ?? "", /application\/problem\+json/, where);
            const p = JSON.parse(text) as { title?: unknown; detail?: unknown; status?: unknown };
            assert.ok(typeof p.title === "string" && typeof p.detail === "string" && p.status === res.status, where);
            assert.equal(await getBalance(db, user.org_id), before, `a 4xx moved money: ${where}`);
          } else if (res.status >= 400) {
            assert.match(res.headers.get("content-type") ?? "", /application\/json/, where);
            if (path.startsWith("/elevenlabs/")) {
              // The ElevenLabs dialect answers in ElevenLabs' shape (D36): {detail: {status, message}}, or
              // FastAPI's {detail: [{loc, msg, type}]} for a request failing the schema; refusals made before
              // routing (a path that is not a valid URL, a segment too long) included.
              const { detail } = JSON.parse(text) as { detail?: unknown };
              const elevenLabsShape = Array.isArray(detail)
                ? detail.length > 0 && detail.every((d: { loc?: unknown; msg?: unknown; type?: unknown }) => Array.isArray(d.loc) && typeof d.msg === "string" && typeof d.type === "string")
                : typeof detail === "object" && detail !== null && typeof (detail as { status?: unknown }).status === "string" && typeof (detail as { message?: unknown }).message === "string";
              assert.ok(elevenLabsShape, where);
            } else if (path.startsWith("/fal/")) {
              // The fal dialect answers in fal's shape (D38): {detail, error_type}, or FastAPI's list for an
              // input fal would refuse; refusals made before routing included.
              const { detail, error_type } = JSON.parse(text) as { detail?: unknown; error_type?: unknown };
              const falShape = Array.isArray(detail) ? detail.length > 0 : typeof detail === "string" && typeof error_type === "string";
              assert.ok(falShape, where);
            } else if (path === "/mcp") {
              // The MCP server (D39): a refusal before any JSON-RPC (key, rate limit, body size) is the D1
              // body; a protocol error (not JSON, not a JSON-RPC message, a batch) is a JSON-RPC error.
              const { jsonrpc, error } = JSON.parse(text) as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown; type?: unknown } };
              const ok = jsonrpc === "2.0" ? typeof error?.code === "number" && typeof error.message === "string" : typeof error?.code === "string" && typeof error.type === "string";
              assert.ok(ok, where);
            } else {
              const body = JSON.parse(text) as { error?: Record<string, unknown> };
              const e = body.error;
              assert.ok(e && typeof e.code === "string" && typeof e.message === "string" && typeof e.type === "string", where);
              assert.ok(e.param === null || typeof e.param === "string", where);
            }
            // A deposit by the operator is the one 4xx-free way money moves; a 4xx never moves it.
            assert.equal(await getBalance(db, user.org_id), before, `a 4xx moved money: ${where}`);
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
    t.diagnostic(`${operations.length} operations, ${chunkedSent} bodies sent chunked; answers by status: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    assert.ok(chunkedSent > 0, "some bodies were sent chunked");
  });

  test("afterwards the process answers, a paid call works, and balances equal their ledgers", async () => {
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    // The fuzzed operator calls may have changed the account's tier or limits: set them back.
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: null } });
    await liftLimits(user.user_id);
    const r = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { input: "still alive", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(r.status, 200);
    const db = gw.services.db.kysely;
    for (const id of [user.org_id, other.org_id]) {
      const balance = await getBalance(db, id);
      assert.ok(balance !== null && balance >= 0);
      assert.equal(balance, await ledgerSum(db, id));
    }
  });
});
