/**
 * Tracing (D40, issue 33 proof) on both databases: a real gateway with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing
 * at an in-process OTLP/HTTP receiver (JSON), alpha speech on two ElevenLabs fakes (the second a failover),
 * imgA images on a fal fake.
 * - a speech call: one SERVER span continuing the caller's `traceparent`, with the billing attributes, its
 *   `billing.hold` and `billing.capture` children and one CLIENT span with the GenAI attributes; the upstream
 *   received the CLIENT span's `traceparent`;
 * - a failover: two CLIENT spans (attempts 1 and 2, the first failed) under one hold and one capture;
 * - an image job with a `webhook_url`: the submit's SERVER span, the runner's `job.run` span, its upstream
 *   span (naming fal's endpoint id as the response model) and capture, and the webhook delivery in one trace;
 *   the webhook request carries `traceparent`;
 * - no key, password, session token, prompt or input text in any attribute;
 * - off (no endpoint, or `OTEL_SDK_DISABLED=true`): nothing exported, no `traceparent` sent anywhere;
 * - a job left pending and claimed later continues its submit's trace (the row's `traceparent`);
 * - content capture on: a chat attempt's span carries the messages; a streamed chat attempt's span lasts until the
 *   stream ends and carries its token usage; the `OTEL_*` settings as config.ts reads them.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type ElevenLabsFake, startElevenLabsFake } from "../../fakes/elevenlabs.ts";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { FAL_MODELS } from "../../src/upstreams/fal/models.ts";
import { loadConfig } from "../../src/config.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../helpers/otlp-receiver.ts";
import { type Receiver, startReceiver } from "../webhooks/receiver.ts";

const EL_KEY = "el-trace-key-7d1c0a9e3b52f8";
const FAL_KEY = "fal-trace-key-3c9e1b7a0d64f2";
const COLLECTOR_TOKEN = "collector-token-5e8a1f0c2d";
const PASSWORD = "correct horse battery";
const SPEECH_TEXT = "Sentinel speech text 31415 for tracing.";
const PROMPT = "Sentinel prompt 27182 a lighthouse at dusk";
const W3C = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

/** The spans of `traceId`. */
function traceOf(spans: ReceivedSpan[], traceId: string): ReceivedSpan[] {
  return spans.filter((s) => s.traceId === traceId);
}

function childrenOf(spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] {
  return spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
}

for (const backend of BACKENDS) {
  describe(`tracing on ${backend.name} (D40)`, { skip: backend.skip }, () => {
    let otlp: OtlpReceiver;
    let el: ElevenLabsFake;
    let elBackup: ElevenLabsFake;
    let fal: FalFake;
    let hooks: Receiver;
    let gw: TestGateway;
    let user: { user_id: string; org_id: string; api_key: string; session_token: string };
    const secrets: string[] = [EL_KEY, FAL_KEY, COLLECTOR_TOKEN, PASSWORD, ADMIN_TOKEN, SPEECH_TEXT, PROMPT];

    before(async () => {
      otlp = await startOtlpReceiver();
      el = await startElevenLabsFake({ apiKey: EL_KEY });
      elBackup = await startElevenLabsFake({ apiKey: EL_KEY });
      fal = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40 });
      hooks = await startReceiver();
      const upstreams = [
        { name: "el-main", protocol: "elevenlabs", base_url: el.url, api_key: "env:TRACE_EL_KEY", families: ["alpha"] },
        { name: "el-backup", protocol: "elevenlabs", base_url: elBackup.url, api_key: "env:TRACE_EL_KEY", families: ["alpha"] },
        { name: "fal-main", protocol: "fal", base_url: fal.url, api_key: "env:TRACE_FAL_KEY", families: ["imgA"] },
      ];
      gw = await startGateway(backend.name, {
        TRACE_EL_KEY: EL_KEY,
        TRACE_FAL_KEY: FAL_KEY,
        UPSTREAMS: JSON.stringify(upstreams),
        WEBHOOK_ALLOW_PRIVATE: "1",
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_HEADERS: `x-collector-token=${COLLECTOR_TOKEN}`,
        OTEL_SERVICE_NAME: "gw-under-test",
      });
      user = await gw.register();
      secrets.push(user.api_key, user.session_token);
      await gw.deposit(user.user_id, 20);
    });
    after(async () => {
      await gw?.close();
      await Promise.all([otlp?.close(), el?.close(), elBackup?.close(), fal?.close(), hooks?.close()]);
    });

    /** Sends the spans ended so far to the receiver. */
    async function flush(): Promise<void> {
      await gw.services.tracing!.flush();
    }

    /**
     * Flushes until a SERVER span `matches` arrived (at most 5 s): a SERVER span ends in `onResponse`, which
     * can run after the client has read the whole answer.
     */
    async function flushServer(matches: (s: ReceivedSpan) => boolean): Promise<void> {
      const deadline = Date.now() + 5000;
      do {
        await flush();
        if (otlp.spans.some((s) => s.kind === "server" && matches(s))) return;
        await new Promise((r) => setTimeout(r, 20));
      } while (Date.now() < deadline);
    }

    test("a speech call: SERVER span continuing the caller's trace, hold and capture, one CLIENT span with GenAI attributes", async () => {
      const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
      const callerSpan = "00f067aa0ba902b7";
      const voice = el.voiceIds()[0]!;
      el.reset();
      const r = await gw.request("POST", "/v1/audio/speech", {
        token: user.api_key,
        body: { model: "alpha-v3", input: SPEECH_TEXT, voice_id: voice },
        headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      await flushServer((s) => s.traceId === callerTrace);
      const spans = traceOf(otlp.spans, callerTrace);
      const server = spans.find((s) => s.kind === "server");
      assert.ok(server, `no SERVER span in ${JSON.stringify(spans.map((s) => s.name))}`);
      assert.equal(server.name, "POST /v1/audio/speech");
      assert.equal(server.parentSpanId, callerSpan);
      assert.equal(server.service, "gw-under-test");
      assert.equal(server.attributes["http.request.method"], "POST");
      assert.equal(server.attributes["http.route"], "/v1/audio/speech");
      assert.equal(server.attributes["http.response.status_code"], 200);
      assert.equal(server.attributes["gw.request.id"], r.headers.get("x-svc-request-id"));
      assert.equal(server.attributes["gw.account.id"], user.org_id);
      assert.match(String(server.attributes["gw.key.id"]), /^key_/);
      assert.equal(server.attributes["gw.test_mode"], false);
      assert.equal(server.attributes["gw.cost_usd"], Number(r.headers.get("x-svc-cost-usd")));
      assert.ok(Number(server.attributes["gw.hold_usd"]) >= Number(server.attributes["gw.cost_usd"]));
      // gen_ai.* attributes stay on the upstream spans (D40).
      assert.deepEqual(Object.keys(server.attributes).filter((k) => k.startsWith("gen_ai.")), []);

      const children = childrenOf(spans, server);
      assert.deepEqual(children.map((s) => s.name).sort(), ["billing.capture", "billing.hold", "text_to_speech alpha-v3"]);
      const client = children.find((s) => s.kind === "client")!;
      assert.equal(client.attributes["gen_ai.operation.name"], "text_to_speech");
      assert.equal(client.attributes["gen_ai.provider.name"], "elevenlabs");
      assert.equal(client.attributes["gen_ai.request.model"], "alpha-v3");
      assert.equal(typeof client.attributes["gen_ai.response.model"], "string");
      assert.equal(client.attributes["gen_ai.output.type"], "speech");
      assert.equal(client.attributes["server.address"], "127.0.0.1");
      assert.equal(client.attributes["gw.source"], "el-main");
      assert.equal(client.attributes["gw.attempt"], 1);
      assert.equal(client.attributes["gw.fallback_layer"], 0);
      assert.equal(client.statusCode, 0);
      // The upstream call carried the CLIENT span's traceparent.
      const sent = el.requests.find((q) => q.path.startsWith("/v1/text-to-speech/"));
      const m = W3C.exec(sent?.headers.traceparent ?? "");
      assert.ok(m, `traceparent sent upstream: ${sent?.headers.traceparent}`);
      assert.equal(m[1], callerTrace);
      assert.equal(m[2], client.spanId);
      // The exporter sent the collector's headers.
      assert.equal(otlp.exports.at(-1)?.["x-collector-token"], COLLECTOR_TOKEN);
    });

    test("a failover: two CLIENT spans (the first failed) under one hold and one capture", async () => {
      const voice = el.voiceIds()[1]!;
      el.setMarkers(["500"]);
      try {
        const r = await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { model: "alpha-flash-v2-5", input: SPEECH_TEXT, voice_id: voice } });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.headers.get("x-svc-fallback-layer"), "1");
        await flushServer((s) => s.attributes["gw.request.id"] === r.headers.get("x-svc-request-id"));
        const server = otlp.spans.find((s) => s.kind === "server" && s.attributes["gw.request.id"] === r.headers.get("x-svc-request-id"));
        assert.ok(server);
        const children = childrenOf(otlp.spans, server);
        assert.equal(children.filter((s) => s.name === "billing.hold").length, 1);
        assert.equal(children.filter((s) => s.name === "billing.capture").length, 1);
        assert.equal(children.filter((s) => s.name === "billing.release").length, 0);
        const attempts = children.filter((s) => s.kind === "client").sort((a, b) => Number(a.attributes["gw.attempt"]) - Number(b.attributes["gw.attempt"]));
        assert.equal(attempts.length, 2);
        assert.deepEqual(
          attempts.map((s) => [s.name, s.attributes["gw.source"], s.attributes["gw.attempt"], s.attributes["gw.fallback_layer"], s.statusCode]),
          [
            ["text_to_speech alpha-flash-v2-5", "el-main", 1, 0, 2],
            ["text_to_speech alpha-flash-v2-5", "el-backup", 2, 1, 0],
          ],
        );
        assert.equal(attempts[0]!.attributes["error.type"], "http_500");
        assert.equal(server.attributes["gw.cost_usd"], Number(r.headers.get("x-svc-cost-usd")));
      } finally {
        el.setMarkers([]);
      }
    });

    test("an image job: submit, runner, upstream, capture and webhook delivery in one trace", async () => {
      const submit = await gw.request("POST", "/v1/images/generations", {
        token: user.api_key,
        body: { model: "imgA-v4", prompt: PROMPT, webhook_url: `${hooks.url}/job` },
      });
      assert.equal(submit.status, 202, JSON.stringify(submit.json));
      const done = await gw.waitForJob(user.api_key, submit.json.id);
      assert.equal(done.json.status, "succeeded");
      await hooks.waitFor(() => hooks.on("/job").length >= 1, "the job's webhook");
      // The delivery's span ends after the receiver answered: wait for the export that holds it.
      const deadline = Date.now() + 5000;
      let delivery: ReceivedSpan | undefined;
      while (delivery === undefined && Date.now() < deadline) {
        await flush();
        delivery = otlp.spans.find((s) => s.name === "webhook.deliver" && s.attributes["gw.webhook.event_type"] === "job.succeeded");
        if (delivery === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(delivery, "no webhook.deliver span");
      const server = otlp.spans.find((s) => s.kind === "server" && s.attributes["gw.request.id"] === submit.headers.get("x-svc-request-id"));
      assert.ok(server);
      assert.equal(server.name, "POST /v1/images/generations");
      assert.equal(server.attributes["http.response.status_code"], 202);
      assert.ok(Number(server.attributes["gw.hold_usd"]) > 0);
      const trace = traceOf(otlp.spans, server.traceId);
      assert.ok(childrenOf(trace, server).some((s) => s.name === "billing.hold"));
      const run = trace.find((s) => s.name === "job.run");
      assert.ok(run, `no job.run span in ${JSON.stringify(trace.map((s) => s.name))}`);
      assert.equal(run.kind, "consumer");
      assert.equal(run.parentSpanId, server.spanId);
      assert.equal(run.attributes["gw.job.id"], submit.json.id);
      const runChildren = childrenOf(trace, run);
      const gen = runChildren.find((s) => s.kind === "client");
      assert.ok(gen);
      assert.equal(gen.name, "generate_image imgA-v4");
      assert.equal(gen.attributes["gen_ai.provider.name"], "fal");
      // fal names the model in the URL path: the adapter notes its endpoint id.
      assert.equal(gen.attributes["gen_ai.response.model"], FAL_MODELS["imgA-v4"]!.endpoints.text);
      assert.equal(gen.attributes["gen_ai.output.type"], "image");
      assert.ok(runChildren.some((s) => s.name === "billing.capture"));
      assert.ok(Number(run.attributes["gw.cost_usd"]) > 0);
      // The webhook delivery is in the submit's trace, and its request carried its traceparent.
      assert.equal(delivery.traceId, server.traceId);
      assert.equal(delivery.kind, "client");
      assert.equal(delivery.attributes["http.response.status_code"], 200);
      const m = W3C.exec(String(hooks.on("/job")[0]!.headers.traceparent ?? ""));
      assert.ok(m, "the webhook request has no traceparent");
      assert.equal(m[1], server.traceId);
      assert.equal(m[2], delivery.spanId);
    });

    test("no key, secret, password, session token, prompt or input text in any attribute", async () => {
      // A login (the password in its body) and a failed call too.
      const login = await gw.request("POST", "/v1/auth/login", { body: { email: (await gw.register()).email, password: PASSWORD } });
      assert.equal(login.status, 200);
      await gw.request("POST", "/v1/audio/speech", { token: user.api_key, body: { model: "alpha-v3", input: SPEECH_TEXT, voice_id: "nope" } });
      await flush();
      assert.ok(otlp.spans.length > 10);
      for (const span of otlp.spans) {
        for (const [key, value] of Object.entries(span.attributes)) {
          for (const secret of secrets) assert.ok(!String(value).includes(secret), `${span.name} ${key} holds a secret or user text`);
        }
        assert.ok(!secrets.some((x) => span.name.includes(x)), span.name);
      }
    });
  });
}

describe("tracing off (D40)", () => {
  let otlp: OtlpReceiver;
  let el: ElevenLabsFake;
  let hooks: Receiver;
  after(async () => {
    await Promise.all([otlp?.close(), el?.close(), hooks?.close()]);
  });
  before(async () => {
    otlp = await startOtlpReceiver();
    el = await startElevenLabsFake({ apiKey: EL_KEY });
    hooks = await startReceiver();
  });

  for (const [label, env] of [
    ["no endpoint", {}],
    ["OTEL_SDK_DISABLED=true with an endpoint", { OTEL_SDK_DISABLED: "true" }],
  ] as const) {
    test(`${label}: no tracer, nothing exported, no traceparent sent or stored`, async () => {
      const upstreams = [{ name: "el-main", protocol: "elevenlabs", base_url: el.url, api_key: "env:TRACE_EL_KEY", families: ["alpha"] }];
      const gw = await startGateway("sqlite", {
        TRACE_EL_KEY: EL_KEY,
        UPSTREAMS: JSON.stringify(upstreams),
        WEBHOOK_ALLOW_PRIVATE: "1",
        ...env,
        ...(label === "no endpoint" ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }),
      });
      try {
        assert.equal(gw.services.tracing, null);
        const u = await gw.register();
        await gw.deposit(u.user_id, 20);
        el.reset();
        const r = await gw.request("POST", "/v1/audio/speech", {
          token: u.api_key,
          body: { model: "alpha-v3", input: SPEECH_TEXT, voice_id: el.voiceIds()[0]! },
          headers: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
        });
        assert.equal(r.status, 200);
        assert.equal(el.requests.find((q) => q.path.startsWith("/v1/text-to-speech/"))?.headers.traceparent, undefined);
        const path = `/off-${gw.services.db.dialect}-${label.length}`;
        const submit = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: PROMPT, webhook_url: hooks.url + path } });
        assert.equal(submit.status, 202);
        await gw.waitForJob(u.api_key, submit.json.id);
        await hooks.waitFor(() => hooks.on(path).length >= 1, "the job's webhook");
        assert.equal(hooks.on(path)[0]!.headers.traceparent, undefined);
        const row = await gw.services.db.kysely.selectFrom("jobs").select("traceparent").where("id", "=", submit.json.id).executeTakeFirstOrThrow();
        assert.equal(row.traceparent, null);
      } finally {
        await gw.close();
      }
      // The batch processor would have exported within a second: nothing came.
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(otlp.spans.length, 0);
      assert.equal(otlp.exports.length, 0);
    });
  }
});

describe("tracing with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (D40)", () => {
  let otlp: OtlpReceiver;
  let gw: TestGateway;
  before(async () => {
    otlp = await startOtlpReceiver();
    gw = await startGateway("sqlite", { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" });
  });
  after(async () => {
    await gw?.close();
    await otlp?.close();
  });

  test("a chat call's CLIENT span carries the messages and the token usage", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: { model: "txtA-small", messages: [{ role: "user", content: PROMPT }] } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    await gw.services.tracing!.flush();
    const client = otlp.spans.find((s) => s.name === "chat txtA-small");
    assert.ok(client, JSON.stringify(otlp.spans.map((s) => s.name)));
    assert.equal(client.kind, "client");
    assert.equal(client.attributes["gen_ai.provider.name"], "simulator");
    assert.equal(client.attributes["gen_ai.output.type"], "text");
    assert.equal(client.attributes["gen_ai.usage.input_tokens"], r.json.usage.prompt_tokens);
    assert.equal(client.attributes["gen_ai.usage.output_tokens"], r.json.usage.completion_tokens);
    assert.ok(String(client.attributes["gen_ai.input.messages"]).includes(PROMPT));
    // The SERVER span still holds no user text.
    const server = otlp.spans.find((s) => s.kind === "server" && s.attributes["http.route"] === "/v1/chat/completions")!;
    assert.ok(!Object.values(server.attributes).some((v) => String(v).includes(PROMPT)));
  });
  test("a streamed chat call's CLIENT span lasts until the stream ends and carries its token usage", async () => {
    const u = await gw.register();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "txtA-small", messages: [{ role: "user", content: "Count to five." }], stream: true, stream_options: { include_usage: true } }),
    });
    assert.equal(res.status, 200);
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
    const usage = events.find((e) => e.usage)?.usage;
    assert.ok(usage, "a final usage chunk");
    const receivedAt = Date.now();
    // The SERVER span ends when the answer finished (just after the client read its end): wait for it.
    const isServer = (s: ReceivedSpan) => s.kind === "server" && s.attributes["http.route"] === "/v1/chat/completions" && s.attributes["gw.account.id"] === u.org_id;
    for (let i = 0; i < 100 && !otlp.spans.some(isServer); i++) {
      await gw.services.tracing!.flush();
      await new Promise((r) => setTimeout(r, 20));
    }
    const server = otlp.spans.find(isServer);
    assert.ok(server, "the stream's SERVER span");
    const client = otlp.spans.find((s) => s.kind === "client" && s.traceId === server.traceId);
    assert.ok(client, "its CLIENT span");
    assert.equal(client.name, "chat txtA-small");
    assert.equal(client.statusCode === 2, false, "not failed");
    assert.equal(client.attributes["gen_ai.usage.input_tokens"], usage.prompt_tokens);
    assert.equal(client.attributes["gen_ai.usage.output_tokens"], usage.completion_tokens);
    assert.ok(usage.completion_tokens > 0);
    // The span covers the whole stream: it ended after the capture began (the capture follows the last delta).
    const capture = otlp.spans.find((s) => s.name === "billing.capture" && s.traceId === server.traceId);
    assert.ok(capture, "the capture span");
    assert.ok(client.endMs <= capture.startMs + 1 && client.endMs <= receivedAt + 1, `${client.endMs} vs capture ${capture.startMs}`);
    assert.ok(client.endMs > client.startMs);
  });
});

for (const backend of BACKENDS) {
  describe(`a job claimed later by the runner continues its submit's trace on ${backend.name} (D40)`, { skip: backend.skip }, () => {
    let otlp: OtlpReceiver;
    let gw: TestGateway;
    before(async () => {
      otlp = await startOtlpReceiver();
      // No runner at submit: the job stays pending, and the runner started afterwards claims it from the row.
      gw = await startGateway(backend.name, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }, { runner: false });
    });
    after(async () => {
      await gw?.close();
      await otlp?.close();
    });

    test("the claimed job's job.run span is a child of the submit's SERVER span", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 20);
      const submit = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: PROMPT } });
      assert.equal(submit.status, 202);
      assert.equal(submit.json.status, "pending");
      const row = await gw.services.db.kysely.selectFrom("jobs").select("traceparent").where("id", "=", submit.json.id).executeTakeFirstOrThrow();
      assert.match(String(row.traceparent), W3C);
      gw.services.startRunner({ pollMs: 50, sweepMs: 500, heartbeatMs: 200 });
      const done = await gw.waitForJob(u.api_key, submit.json.id);
      assert.equal(done.json.status, "succeeded");
      await gw.services.tracing!.flush();
      const server = otlp.spans.find((s) => s.kind === "server" && s.attributes["gw.request.id"] === submit.headers.get("x-svc-request-id"));
      assert.ok(server);
      assert.equal(W3C.exec(String(row.traceparent))![1], server.traceId);
      const run = otlp.spans.find((s) => s.name === "job.run" && s.attributes["gw.job.id"] === submit.json.id);
      assert.ok(run);
      assert.equal(run.traceId, server.traceId);
      assert.equal(run.parentSpanId, server.spanId);
      assert.ok(childrenOf(otlp.spans, run).some((s) => s.name === "billing.capture"));
    });
  });
}

describe("tracing configuration (D40)", () => {
  test("the OTEL_* variables: endpoint, signal path, headers, resource, capture, disabled, protocol", () => {
    assert.equal(loadConfig({}).tracing, null);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "TRUE" }).tracing, null);
    const on = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "x-token=a%20b,other=1",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "other=2",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=prod",
    }).tracing;
    assert.deepEqual(on, {
      url: "http://collector:4318/v1/traces",
      headers: { "x-token": "a b", other: "2" },
      serviceName: "media-gateway",
      resourceAttributes: { "deployment.environment.name": "prod" },
      timeoutMs: 10_000,
      captureContent: false,
    });
    const traces = loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://c.example/custom/path", OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored", OTEL_SERVICE_NAME: "edge", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" }).tracing;
    assert.equal(traces?.url, "https://c.example/custom/path");
    assert.equal(traces?.serviceName, "edge");
    assert.equal(traces?.captureContent, true);
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }), /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/json/);
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }), /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/);
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "novalue" }), /OTEL_EXPORTER_OTLP_HEADERS must be a comma list/);
  });
});
