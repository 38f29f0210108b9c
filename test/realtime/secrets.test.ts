/**
 * No secret of a realtime socket in a log line (invariant 8, D42): a browser sends its key in the query
 * (`authorization=Bearer <key>`); the gateway's request log lines show that value as `[redacted]`, and
 * neither the key nor the text spoken appears anywhere in the log.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { redactUrl } from "../../src/http/app.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway } from "../helpers/gateway.ts";
import { connect, open, wsUrl } from "../helpers/realtime.ts";

test("redactUrl replaces the values of secret query parameters only", () => {
  assert.equal(redactUrl("/v1/x?model_id=a&authorization=Bearer%20gw_abc&output_format=pcm"), "/v1/x?model_id=a&authorization=[redacted]&output_format=pcm");
  assert.equal(redactUrl("/v1/x?xi_api_key=gw_abc"), "/v1/x?xi_api_key=[redacted]");
  assert.equal(redactUrl("/v1/x?authorization_hint=keep"), "/v1/x?authorization_hint=keep");
});

test("a key in the socket's query never reaches the log", async () => {
  const lines: string[] = [];
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const gw = await startGateway("sqlite", { LOG_LEVEL: "info" }, { logStream });
  try {
    const u = await gw.register();
    const s = await open(wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5&authorization=${encodeURIComponent(`Bearer ${u.api_key}`)}`));
    s.send({ text: " " });
    s.send({ text: "A private sentence of the caller. ", flush: true });
    s.send({ text: "" });
    assert.equal((await s.waitClose()).code, 1000);
    // An upgrade to a route that has no socket is logged by @fastify/websocket with its path: redacted too.
    const stray = await connect(wsUrl(gw.url, `/v1/auth/me?authorization=${encodeURIComponent(`Bearer ${u.api_key}`)}`));
    if (!("status" in stray)) await stray.waitClose();
    await new Promise((r) => setTimeout(r, 100));
    const log = lines.join("");
    assert.ok(log.includes("authorization=[redacted]"), "the request was logged, its key redacted");
    assert.ok(!log.includes(u.api_key), "no key in the log");
    assert.ok(!log.includes("private sentence"), "no text of the socket in the log");
  } finally {
    await gw.close();
  }
});
