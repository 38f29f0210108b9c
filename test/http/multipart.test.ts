/**
 * Broken multipart bodies on the multipart routes (issue 9 point 6): a truncated body, a missing closing
 * boundary, a boundary that differs from the body's and a Content-Type without a boundary each answer
 * 400 `invalid_request` with the D1 body, and nothing is charged.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const BOUNDARY = "----gwtestboundary7MA4YWxkTrZu0gW";

/** A multipart body with a text field `name` and a WAV `file`, built by hand so it can be broken. */
function body(opts: { close?: boolean; cutAt?: number } = {}): Buffer {
  const wav = Buffer.from(makeWav(12));
  const parts = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\nMe\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="ref.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
    wav,
    Buffer.from(opts.close === false ? "\r\n" : `\r\n--${BOUNDARY}--\r\n`),
  ]);
  return opts.cutAt === undefined ? parts : parts.subarray(0, opts.cutAt);
}

const CASES: { name: string; contentType: string; body: () => Buffer }[] = [
  { name: "a truncated body", contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: () => body({ cutAt: 400 }) },
  { name: "no closing boundary", contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: () => body({ close: false }) },
  { name: "a boundary that differs from the body", contentType: "multipart/form-data; boundary=something-else", body: () => body() },
  { name: "no boundary parameter", contentType: "multipart/form-data", body: () => body() },
  { name: "garbage after the headers", contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: () => Buffer.from(`--${BOUNDARY}\r\nnot a header line\r\n\r\n`) },
];

describe("broken multipart bodies", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite", {}, { runner: false });
  });
  after(async () => {
    await gw?.close();
  });

  for (const path of ["/v1/audio/voice-clone", "/v1/audio/transcriptions", "/v1/audio/understand"]) {
    for (const c of CASES) {
      test(`${path}: ${c.name} answers 400 invalid_request and charges nothing`, async () => {
        const u = await gw.register();
        await gw.deposit(u.user_id, 10);
        const res = await fetch(gw.url + path, {
          method: "POST",
          headers: { authorization: `Bearer ${u.api_key}`, "content-type": c.contentType },
          body: c.body(),
        });
        const json = (await res.json()) as { error?: Record<string, unknown> };
        assert.equal(res.status, 400, JSON.stringify(json));
        assert.deepEqual(Object.keys(json.error ?? {}).sort(), ["code", "message", "param", "type"]);
        assert.equal(json.error?.code, "invalid_request");
        assert.equal(json.error?.type, "invalid_request_error");
        const db = gw.services.db.kysely;
        assert.equal(await getBalance(db, u.org_id), 10_500_000, "nothing charged");
        assert.equal(await ledgerSum(db, u.org_id), 10_500_000);
      });
    }
  }
});
