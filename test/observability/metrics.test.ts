/**
 * The latency-tail metrics of issue 33 on `GET /metrics`, on both databases: the duration histogram of each
 * billing step (a successful paid call adds one hold and one capture, a failed one a hold and a release) and
 * the event-loop delay histogram, which samples on its own.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const METRICS_TOKEN = "metrics-token-0123456789";

/** The value of the sample `name` (with its labels, as written) in a Prometheus text, or 0 when absent. */
function sample(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

for (const backend of BACKENDS) {
  describe(`latency-tail metrics on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, { METRICS_TOKEN });
    });
    after(async () => {
      await gw?.close();
    });

    async function metrics(): Promise<string> {
      const r = await gw.request("GET", "/metrics", { token: METRICS_TOKEN });
      assert.equal(r.status, 200);
      return Buffer.from(r.bytes).toString();
    }

    test("billing step and event-loop delay histograms appear and count", async () => {
      const u = await gw.register();
      const before = await metrics();
      const ok = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "metrics", voice_id: DEMO_ALPHA_VOICE_ID } });
      assert.equal(ok.status, 200);
      const failed = await gw.request("POST", "/v1/audio/speech", {
        token: u.api_key,
        headers: { "x-svc-simulate": "fail" },
        body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID },
      });
      assert.equal(failed.status, 502);
      // The sampler runs every 20 ms.
      await new Promise((r) => setTimeout(r, 100));
      const text = await metrics();
      for (const step of ["hold", "capture", "release"]) {
        assert.match(text, new RegExp(`^gateway_billing_duration_seconds_bucket\\{le="0.005",step="${step}"\\} \\d+$`, "m"), step);
        assert.match(text, new RegExp(`^gateway_billing_duration_seconds_sum\\{step="${step}"\\} [0-9.e-]+$`, "m"), step);
      }
      const count = (t: string, step: string) => sample(t, `gateway_billing_duration_seconds_count{step="${step}"}`);
      assert.equal(count(text, "hold") - count(before, "hold"), 2);
      assert.equal(count(text, "capture") - count(before, "capture"), 1);
      assert.equal(count(text, "release") - count(before, "release"), 1);
      assert.match(text, /^gateway_event_loop_delay_seconds_bucket\{le="0.001"\} \d+$/m);
      assert.match(text, /^gateway_event_loop_delay_seconds_bucket\{le="\+Inf"\} \d+$/m);
      assert.ok(sample(text, "gateway_event_loop_delay_seconds_count") > sample(before, "gateway_event_loop_delay_seconds_count"));
    });
  });
}
