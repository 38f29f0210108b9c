/**
 * The SDK's job helpers (packages/client: submitAndWait, waitForJob and their namespaces
 * `client.images.generateAndWait`, `client.jobs.wait`; downloadOutput, the SSE reader, the error classes)
 * against a real gateway on loopback (SQLite and PostgreSQL), and their protocol handling of D30 (events
 * stream, `Retry-After`, a dropped stream) against a loopback stand-in that answers with D30's shapes.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  downloadOutput,
  Gateway,
  GatewayError,
  InsufficientBalanceError,
  type MediaJob,
  NotFoundError,
  outputPaths,
  sseEvents,
  submitAndWait,
  waitForJob,
} from "../../packages/client/src/index.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** A stream that delivers `chunks` one by one (to split lines and CRLFs across reads). */
function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(enc.encode(next));
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>) {
  const out = [];
  for await (const e of sseEvents(stream)) out.push(e);
  return out;
}

describe("sseEvents reads text/event-stream as the standard says", () => {
  test("events, names, multi-line data, ids, comments; CRLF split across chunks", async () => {
    const events = await collect(
      streamOf([": keep-alive\n\n", "event: job\r", "\ndata: {\"a\":1}\r\n\r\n", "id: 7\ndata: line one\ndata:line two\n\n", "event: ping\n\n", "data: last\r\rdata: cut off"]),
    );
    assert.deepEqual(events, [
      { event: "job", data: '{"a":1}', id: null },
      { event: "message", data: "line one\nline two", id: "7" },
      { event: "message", data: "last", id: "7" },
    ]);
  });

  test("an event cut off by the end of the stream is dropped", async () => {
    assert.deepEqual(await collect(streamOf(["event: job\ndata: {}"])), []);
    assert.deepEqual(await collect(streamOf(["event: job\ndata: {}\r"])), [], "a final CR ends the line, not the event");
  });
});

test("outputPaths numbers several outputs before the extension", () => {
  assert.deepEqual(outputPaths("out.png", 1), ["out.png"]);
  assert.deepEqual(outputPaths("out.png", 3), ["out-1.png", "out-2.png", "out-3.png"]);
  assert.deepEqual(outputPaths("dir.v2/out", 2), ["dir.v2/out-1", "dir.v2/out-2"]);
});

for (const backend of BACKENDS) {
  describe(`submitAndWait and downloadOutput on a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let dir: string;
    before(async () => {
      gw = await startGateway(backend.name);
      dir = mkdtempSync(join(tmpdir(), "gw-sdk-"));
    });
    after(async () => {
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("follows an image job to succeeded, reporting each change, and saves both images", async () => {
      const user = await gw.register();
      const api = new Gateway({ baseUrl: gw.url, apiKey: user.api_key });
      const seen: MediaJob[] = [];
      const job = await submitAndWait(api, "/v1/images/generations", { model: "imgA-v4", prompt: "two foxes", n: 2 }, { onUpdate: (j) => seen.push(j) });
      assert.equal(job.status, "succeeded");
      assert.equal(job.cost_usd, 0.108);
      assert.ok(["pending", "processing"].includes(seen[0].status), "the first update is the submitted job");
      assert.equal(seen[seen.length - 1].status, "succeeded");
      for (let i = 1; i < seen.length; i++) assert.notEqual(`${seen[i].status}|${seen[i].progress}|${seen[i].queue_position}`, `${seen[i - 1].status}|${seen[i - 1].progress}|${seen[i - 1].queue_position}`, "only changes are reported");

      const files = await downloadOutput(job, join(dir, "fox.png"));
      assert.deepEqual(files, [join(dir, "fox-1.png"), join(dir, "fox-2.png")]);
      for (const [i, f] of files.entries()) {
        const bytes = readFileSync(f);
        assert.equal(bytes.subarray(1, 4).toString("latin1"), "PNG");
        assert.deepEqual(new Uint8Array(bytes), (await gw.request("GET", new URL(job.output?.urls[i] ?? "").pathname)).bytes, "the stored output, byte for byte");
      }
    });

    test("a job the upstream fails resolves failed with its error; the hold comes back", async () => {
      const user = await gw.register();
      const api = new Gateway({ baseUrl: gw.url, apiKey: user.api_key });
      const job = await api.images.generateAndWait({ model: "imgA-v4", prompt: "x" }, { headers: { "x-svc-simulate": "fail" } });
      assert.equal(job.status, "failed");
      assert.equal(job.error?.code, "provider_error");
      assert.equal((await gw.request("GET", "/v1/auth/me", { token: user.api_key })).json.balance_usd, 0.5);
      await assert.rejects(downloadOutput(job, join(dir, "none.png")), (err: GatewayError) => err.code === "no_output");
    });

    test("a refused submit throws GatewayError with the D1 code, type and status; an unknown job is job_not_found", async () => {
      const user = await gw.register();
      const api = new Gateway({ baseUrl: gw.url, apiKey: user.api_key });
      await assert.rejects(submitAndWait(api, "/v1/images/generations", { model: "imgA-v4-pro", prompt: "x", n: 4 }), (err: unknown) => {
        assert.ok(err instanceof GatewayError);
        assert.ok(err instanceof InsufficientBalanceError);
        assert.equal(err.status, 402);
        assert.equal(err.code, "insufficient_balance");
        assert.equal(err.type, "billing_error");
        return true;
      });
      await assert.rejects(api.jobs.wait("job_unknown"), (err: GatewayError) => err instanceof NotFoundError && err.status === 404 && err.code === "job_not_found");
    });

    test("the namespaces answer as the gateway does: account, speech, transcription (multipart), keys, alert, ledger and usage log pages", async () => {
      const user = await gw.register();
      const client = new Gateway({ baseUrl: gw.url, apiKey: user.api_key });
      assert.equal((await client.auth.me()).balance_usd, 0.5);
      assert.ok((await client.voices.list({ provider: "alpha" })).data.some((v) => v.voice_id === DEMO_ALPHA_VOICE_ID));

      const speech = await client.audio.speech({ input: "Hello.", voice_id: DEMO_ALPHA_VOICE_ID });
      assert.equal(speech.headers.get("content-type"), "audio/mpeg");
      assert.ok((await speech.arrayBuffer()).byteLength > 0);
      assert.equal(speech.headers.get("x-svc-cost-usd"), "0.00243");

      const form = new FormData();
      form.set("file", new Blob([Buffer.from(makeWav(2))]), "a.wav");
      const transcript = await client.audio.transcribe(form);
      assert.equal(typeof transcript === "string" ? transcript : typeof transcript.text, "string");

      const key = await client.keys.create({ name: "sdk", spend_limit_usd: 1 });
      assert.match(key.api_key, /^gw_/);
      assert.equal((await client.keys.update(key.key_id, { rpm: 5 })).rpm, 5);
      assert.ok((await client.keys.list()).data.some((k) => k.key_id === key.key_id));
      assert.equal((await client.keys.delete(key.key_id)).deleted, true);
      await assert.rejects(client.keys.delete(key.key_id), (err: unknown) => err instanceof NotFoundError && err.code === "key_not_found");

      assert.equal((await client.billing.setAlert({ low_balance_usd: 0.25 })).low_balance_usd, 0.25);
      assert.equal((await client.billing.getAlert()).low_balance_usd, 0.25);

      // One entry per page: iterating follows the cursor through every page.
      const entries = [];
      for await (const entry of client.billing.ledger({ limit: 1 })) entries.push(entry);
      const all = await client.billing.ledger({ limit: 100 });
      assert.ok(entries.length >= 2, `${entries.length} entries`);
      assert.deepEqual(entries.map((e) => e.id), all.data.map((e) => e.id));
      const records = [];
      for await (const record of client.requests.list({ limit: 1 })) records.push(record);
      assert.deepEqual(records.map((r) => r.kind).sort(), ["speech", "transcription"].sort());
      assert.equal((await client.requests.get(records[0].id)).id, records[0].id);
      const summary = await client.usage.summary({ group_by: "model" });
      assert.equal(summary.total.requests, 2);
      assert.match(await client.usage.csv({ group_by: "model" }), /^group,requests,cost_usd/);
      const focus = (await client.usage.focus()).split("\r\n");
      assert.match(focus[0], /^BilledCost,BillingAccountId,/);
      assert.ok(focus.filter((l) => l.includes(",Usage,")).length >= 2, "a FOCUS row per model and day");
    });

    test("an aborted wait rejects with the signal's reason and leaves the job running", async () => {
      const user = await gw.register();
      const api = new Gateway({ baseUrl: gw.url, apiKey: user.api_key });
      const controller = new AbortController();
      let id = "";
      await assert.rejects(
        submitAndWait(api, "/v1/images/generations", { model: "imgA-v4", prompt: "x" }, {
          headers: { "x-svc-simulate": "slow" },
          signal: controller.signal,
          onUpdate: (j) => {
            id = j.id;
            controller.abort(new Error("stop watching"));
          },
        }),
        /stop watching/,
      );
      assert.match(id, /^job_/);
      const done = await gw.waitForJob(user.api_key, id);
      assert.equal(done.json.status, "succeeded", "the job itself was not cancelled");
    });
  });
}

describe("D30 protocol handling, against a loopback stand-in with D30's shapes", () => {
  let server: Server;
  let base: string;
  const hits: { path: string; at: number }[] = [];
  const base0 = { object: "media.job", kind: "image", model: "imgA-v4", hold_usd: 0.054, created_at: "2026-01-01T00:00:00.000Z", updated_at: "2026-01-01T00:00:00.000Z", idempotency_key: null, fallback_layer: 0, error: null };
  const state = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
    ...base0,
    id,
    status,
    cost_usd: status === "succeeded" ? 0.054 : null,
    output: status === "succeeded" ? { url: "http://x/1.png", content_type: "image/png", urls: ["http://x/1.png"] } : null,
    ...extra,
  });
  let pollCount = 0;

  before(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? "";
      hits.push({ path, at: Date.now() });
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      };
      const sse = () => res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const event = (job: unknown) => res.write(`event: job\ndata: ${JSON.stringify(job)}\n\n`);
      if (path === "/v1/jobs/job_sse/events") {
        sse();
        event(state("job_sse", "pending", { queue_position: 2 }));
        event(state("job_sse", "pending", { queue_position: 1 }));
        res.write(": heartbeat\n\n");
        event(state("job_sse", "processing", { progress: 0.5 }));
        event(state("job_sse", "succeeded"));
        res.end();
      } else if (path === "/v1/jobs/job_drop/events") {
        sse();
        event(state("job_drop", "processing", { progress: 0.2 }));
        res.end(); // closes before a terminal status
      } else if (path === "/v1/jobs/job_drop") {
        send(200, state("job_drop", "succeeded"));
      } else if (path === "/v1/jobs/job_poll/events") {
        send(404, { error: { code: "not_found", message: "No route GET /v1/jobs/job_poll/events.", type: "invalid_request_error", param: null } });
      } else if (path === "/v1/jobs/job_poll") {
        pollCount++;
        if (pollCount === 1) send(429, { error: { code: "rate_limited", message: "slow down", type: "rate_limit_error", param: null } }, { "retry-after": "1" });
        else if (pollCount === 2) send(200, state("job_poll", "processing", { progress: 0.9 }), { "retry-after": "1" });
        else send(200, state("job_poll", "succeeded"));
      } else {
        send(404, { error: { code: "not_found", message: "no", type: "invalid_request_error", param: null } });
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test("the events stream reports every change and needs no poll", async () => {
    const seen: string[] = [];
    const job = await waitForJob(new Gateway({ baseUrl: base, apiKey: "gw_test" }), state("job_sse", "pending") as MediaJob, {
      onUpdate: (j) => seen.push(`${j.status}:${j.queue_position ?? j.progress ?? "-"}`),
    });
    assert.equal(job.status, "succeeded");
    assert.deepEqual(seen, ["pending:-", "pending:2", "pending:1", "processing:0.5", "succeeded:-"]);
    assert.ok(!hits.some((h) => h.path === "/v1/jobs/job_sse"), "no polling while the stream serves");
  });

  test("a stream that closes before the end is followed by a poll", async () => {
    const job = await waitForJob(new Gateway({ baseUrl: base, apiKey: "gw_test" }), state("job_drop", "pending") as MediaJob, { pollIntervalMs: 5000 });
    assert.equal(job.status, "succeeded");
    assert.ok(hits.some((h) => h.path === "/v1/jobs/job_drop"));
  });

  test("without the events route it polls, waiting Retry-After (429 and 200) rather than its own interval", async () => {
    const job = await waitForJob(new Gateway({ baseUrl: base, apiKey: "gw_test" }), state("job_poll", "processing") as MediaJob, { pollIntervalMs: 10 });
    assert.equal(job.status, "succeeded");
    const polls = hits.filter((h) => h.path === "/v1/jobs/job_poll").map((h) => h.at);
    assert.equal(polls.length, 3);
    // Each poll after an answer with Retry-After: 1 waits at least that second, not the 10 ms interval.
    assert.ok(polls[1] - polls[0] >= 950, `after the 429: ${polls[1] - polls[0]} ms`);
    assert.ok(polls[2] - polls[1] >= 950, `after Retry-After on a 200: ${polls[2] - polls[1]} ms`);
  });
});
