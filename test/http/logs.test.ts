/**
 * Logs tell the truth (issue "Hardening" 6): expected outcomes (an upstream failure answered 502, a
 * client that went away) are `info`/`warn` lines without a stack; a bug (an unexpected exception, 500)
 * is an `error` line with its stack. No secret appears in any line.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

interface LogLine {
  level: number;
  msg?: string;
  code?: string;
  status?: number;
  err?: { stack?: string; message?: string };
  [k: string]: unknown;
}

describe("log levels", () => {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  let gw: TestGateway;
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n").filter(Boolean)) {
        raw.push(l);
        lines.push(JSON.parse(l) as LogLine);
      }
      done();
    },
  });
  before(async () => {
    gw = await startGateway("sqlite", { LOG_LEVEL: "info" }, { logStream: stream });
  });
  after(() => gw?.close());

  test("an upstream failure answered 502 is a warn line with its code, without a stack", async () => {
    const u = await gw.register();
    const from = lines.length;
    const r = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      headers: { "x-svc-simulate": "fail" },
      body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID },
    });
    assert.equal(r.status, 502);
    const mine = lines.slice(from);
    const warn = mine.find((l) => l.code === "provider_error");
    assert.ok(warn, JSON.stringify(mine));
    assert.equal(warn.level, 40);
    assert.equal(warn.status, 502);
    assert.match(String(warn.upstream), /simulated upstream failure/);
    assert.ok(mine.every((l) => l.level < 50), "no error line");
    assert.ok(raw.slice(from).every((l) => !l.includes('"stack"')), "no stack");
    assert.ok(raw.every((l) => !l.includes(u.api_key)), "no key in the log");
  });

  test("a client that goes away mid-call logs no error and no stack", async () => {
    const u = await gw.register();
    const from = lines.length;
    const ac = new AbortController();
    const pending = fetch(`${gw.url}/v1/audio/speech`, {
      method: "POST",
      signal: ac.signal,
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json", "x-svc-simulate": "hang" },
      body: JSON.stringify({ input: "wait for me", voice_id: DEMO_ALPHA_VOICE_ID }),
    });
    await new Promise((r) => setTimeout(r, 200));
    ac.abort();
    await pending.catch(() => undefined);
    // Let the gateway notice and finish the request.
    await new Promise((r) => setTimeout(r, 1500));
    const mine = lines.slice(from);
    assert.ok(mine.every((l) => l.level < 50), JSON.stringify(mine.filter((l) => l.level >= 50)));
    assert.ok(raw.slice(from).every((l) => !l.includes('"stack"')), "no stack");
  });

  test("a bug (the database losing a table) is an error line with its stack", async () => {
    const u = await gw.register();
    const from = lines.length;
    await gw.services.db.kysely.schema.dropTable("sessions").execute();
    const r = await gw.request("GET", "/v1/auth/me", { token: u.session_token });
    assert.equal(r.status, 500);
    assert.equal(r.json.error.code, "api_error");
    const errLine = lines.slice(from).find((l) => l.level === 50);
    assert.ok(errLine, "an error line");
    assert.match(String(errLine.err?.stack), /sessions/);
    assert.ok(!JSON.stringify(r.json).includes("sessions"), "the answer says nothing of it");
  });
});
