/**
 * Spans of the realtime sockets (D40, D42): the upgrade request's SERVER span continues the caller's trace and
 * ends when the socket closes (`101`, its close code), with the socket's hold, its extensions and its capture
 * as `billing.*` children and one CLIENT span per upstream stream opened; no text of the socket in any span.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../helpers/otlp-receiver.ts";
import { open, wsUrl } from "../helpers/realtime.ts";

const SECRET_TEXT = "Nobody outside should ever read this sentence in a span.";

describe("realtime sockets in traces (D40)", () => {
  let otlp: OtlpReceiver;
  let gw: TestGateway;
  before(async () => {
    otlp = await startOtlpReceiver();
    gw = await startGateway("sqlite", { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, REALTIME_HOLD_CHARS: "20" });
  });
  after(async () => {
    await gw?.close();
    await otlp?.close();
  });

  test("the socket's SERVER span, its billing steps and its upstream stream", async () => {
    const u = await gw.register();
    const trace = "5bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "10f067aa0ba902b7";
    const s = await open(wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5`), { "xi-api-key": u.api_key, traceparent: `00-${trace}-${parent}-01` });
    s.send({ text: " " });
    s.send({ text: `${SECRET_TEXT} `, flush: true });
    s.send({ text: "" });
    assert.equal((await s.waitClose()).code, 1000);
    let server;
    for (let i = 0; i < 100 && !server; i++) {
      await gw.services.tracing!.flush();
      server = otlp.spans.find((x) => x.traceId === trace && x.kind === "server");
      if (!server) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(server, "the SERVER span ended with the socket");
    assert.equal(server.name, "GET /v1/audio/speech/:voice_id/stream-input");
    assert.equal(server.parentSpanId, parent);
    assert.equal(server.attributes["http.response.status_code"], 101);
    assert.equal(server.attributes["gw.realtime.close_code"], 1000);
    assert.equal(server.attributes["gw.account.id"], u.org_id);
    const children = otlp.spans.filter((x) => x.traceId === trace && x.parentSpanId === server.spanId).map((x) => x.name);
    assert.ok(children.filter((n) => n === "billing.hold").length >= 2, `the hold and its extensions: ${children.join(", ")}`);
    assert.ok(children.includes("billing.capture"), children.join(", "));
    assert.ok(children.includes("text_to_speech alpha-flash-v2-5"), children.join(", "));
    assert.ok(!JSON.stringify(otlp.spans).includes("Nobody outside"), "no text of the socket in a span");
  });
});
