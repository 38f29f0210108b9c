/**
 * The fal decoders on fal's real answer shapes (fixtures.ts names where each comes from): status
 * answers, outputs, error bodies and the HTTP status -> retryable table; plus the D26 duration rule,
 * trusted-host parsing, and the follow-up URLs built when a submit answer leaves them out.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createFalApi, describeFalError, FalError, falErrorType, normalizeHost } from "../../../src/upstreams/fal/api.ts";
import type { FalAnswer, FalApi } from "../../../src/upstreams/fal/api.ts";
import { decodeOutput, FAL_MODELS, pickDuration } from "../../../src/upstreams/fal/models.ts";
import { decodeStatus, submitRequest } from "../../../src/upstreams/fal/queue.ts";
import {
  CONTENT_POLICY_ERROR,
  FLUX_OUTPUT,
  RECRAFT_VECTOR_OUTPUT,
  REQUEST_ERROR,
  STATUS_ANSWERS,
  SUBMIT_ANSWER,
  VALIDATION_ERROR,
  VIDEO_OUTPUT,
  VIDEO_OUTPUT_WITH_DURATION,
} from "./fixtures.ts";
import { FAL_KEY } from "./helpers.ts";

let api: FalApi;
before(() => {
  api = createFalApi({ name: "fal-main", apiKey: FAL_KEY });
});
after(async () => {
  await api.close();
});

const answer = (status: number, json: unknown, headers: Record<string, string> = {}): FalAnswer => ({
  status,
  headers,
  json,
  text: json === undefined ? "" : JSON.stringify(json),
});

describe("status answers", () => {
  test("each shape of fal's Python client test decodes", () => {
    assert.deepEqual(decodeStatus(api, answer(202, STATUS_ANSWERS.inQueue)), { status: "IN_QUEUE", position: 123 });
    assert.deepEqual(decodeStatus(api, answer(202, STATUS_ANSWERS.inProgress)), { status: "IN_PROGRESS" });
    assert.deepEqual(decodeStatus(api, answer(200, STATUS_ANSWERS.completed)), { status: "COMPLETED", error: null, errorType: null });
    assert.deepEqual(decodeStatus(api, answer(200, STATUS_ANSWERS.runnerDisconnected)), {
      status: "COMPLETED",
      error: "Runner disconnected",
      errorType: "runner_disconnected",
    });
    assert.deepEqual(decodeStatus(api, answer(200, STATUS_ANSWERS.requestTimeout)), {
      status: "COMPLETED",
      error: "Request timed out",
      errorType: "request_timeout",
    });
  });

  test("an unknown status or a non-object is malformed (retryable)", () => {
    for (const json of [STATUS_ANSWERS.unknown, undefined, [], { queue_position: 1 }]) {
      assert.throws(
        () => decodeStatus(api, answer(200, json)),
        (err: unknown) => err instanceof FalError && err.kind === "malformed" && err.retryable,
      );
    }
  });

  test("a queue position that is not a whole number is dropped", () => {
    assert.deepEqual(decodeStatus(api, answer(202, { status: "IN_QUEUE" })), { status: "IN_QUEUE", position: null });
    assert.deepEqual(decodeStatus(api, answer(202, { status: "IN_QUEUE", queue_position: -1 })), { status: "IN_QUEUE", position: null });
  });
});

describe("outputs", () => {
  test("a video File: one url output, no duration", () => {
    assert.deepEqual(decodeOutput(VIDEO_OUTPUT), {
      outputs: [{ kind: "url", url: VIDEO_OUTPUT.video.url, contentType: "video/mp4" }],
      durationSec: null,
      megapixels: null,
      nsfw: false,
    });
  });

  test("a VideoFile with duration: durationSec is what fal reports", () => {
    const decoded = decodeOutput(VIDEO_OUTPUT_WITH_DURATION);
    assert.ok(typeof decoded !== "string");
    assert.equal(decoded.durationSec, 6.04);
  });

  test("FLUX images: every image, the first one's megapixels, the NSFW flags", () => {
    const decoded = decodeOutput(FLUX_OUTPUT);
    assert.ok(typeof decoded !== "string");
    assert.deepEqual(decoded.outputs, [
      { kind: "url", url: FLUX_OUTPUT.images[0].url, contentType: "image/png" },
      { kind: "url", url: FLUX_OUTPUT.images[1].url, contentType: "image/png" },
    ]);
    assert.equal(decoded.megapixels, (2752 * 1536) / 1_000_000);
    assert.equal(decoded.nsfw, false);
    const flagged = decodeOutput({ ...FLUX_OUTPUT, has_nsfw_concepts: [false, true] });
    assert.ok(typeof flagged !== "string" && flagged.nsfw);
  });

  test("Recraft vector: SVG content type, no size reported", () => {
    const decoded = decodeOutput(RECRAFT_VECTOR_OUTPUT);
    assert.ok(typeof decoded !== "string");
    assert.deepEqual(decoded.outputs, [{ kind: "url", url: RECRAFT_VECTOR_OUTPUT.images[0].url, contentType: "image/svg+xml" }]);
    assert.equal(decoded.megapixels, null);
  });

  test("shapes that fit neither are described, not thrown", () => {
    for (const body of [
      null,
      {},
      { images: [] },
      { images: [{ url: "data:image/png;base64,AAAA" }] },
      { images: ["https://x.example/a.png"] },
      { video: { url: 3 } },
      { video: "https://x.example/a.mp4" },
    ]) {
      assert.equal(typeof decodeOutput(body), "string", JSON.stringify(body));
    }
  });
});

describe("error bodies", () => {
  test("a model error: loc without body, msg, type; nothing else", () => {
    assert.equal(
      describeFalError(VALIDATION_ERROR, ""),
      "image_url: Image dimensions are too large. Maximum allowed is 1024x1024. (image_too_large)",
    );
  });

  test("a content-policy error never copies the flagged input", () => {
    const text = describeFalError(CONTENT_POLICY_ERROR, "");
    assert.equal(text, "prompt: The content was flagged by a content checker. (content_policy_violation)");
    assert.equal(falErrorType(answer(422, CONTENT_POLICY_ERROR)), "content_policy_violation");
  });

  test("a request error: detail (error_type)", () => {
    assert.equal(describeFalError(REQUEST_ERROR, ""), "Request timed out (request_timeout)");
    assert.equal(falErrorType(answer(504, REQUEST_ERROR)), "request_timeout");
    assert.equal(falErrorType(answer(503, undefined, { "x-fal-error-type": "runner_scheduling_failure" })), "runner_scheduling_failure");
    assert.equal(falErrorType(answer(500, { detail: "boom" })), null);
  });

  test("other bodies: the text without tags, at most 300 characters", () => {
    assert.equal(describeFalError(undefined, "<html><body><h1>502 Bad Gateway</h1> nginx</body></html>"), "502 Bad Gateway nginx");
    assert.equal(describeFalError({ detail: { message: "m" } }, ""), "m");
    const long = describeFalError({ detail: "x".repeat(1000) }, "");
    assert.equal(long.length, 303);
    assert.ok(long.endsWith("..."));
  });

  test("HTTP status -> retryable", () => {
    const table: [number, Record<string, string>, unknown, boolean][] = [
      [400, {}, { detail: "bad" }, false],
      [401, {}, { detail: "no" }, false],
      [403, {}, { detail: "no" }, false],
      [404, {}, { detail: "Not Found" }, false],
      [408, {}, undefined, true],
      [409, { "x-fal-retryable": "true" }, { detail: "busy" }, true],
      [422, {}, VALIDATION_ERROR, false],
      [422, { "x-fal-retryable": "false" }, CONTENT_POLICY_ERROR, false],
      [429, {}, { detail: "slow down" }, true],
      [500, {}, { detail: "Internal server error", error_type: "internal_error" }, true],
      [502, {}, undefined, true],
      [503, {}, REQUEST_ERROR, true],
      [504, {}, REQUEST_ERROR, true],
      [500, {}, CONTENT_POLICY_ERROR, false],
    ];
    for (const [status, headers, json, retryable] of table) {
      const err = api.httpError(answer(status, json, headers), "submit");
      assert.equal(err.retryable, retryable, `HTTP ${status} ${JSON.stringify(json)}`);
      assert.equal(err.status, status);
      assert.equal(err.contentRejected, json === CONTENT_POLICY_ERROR);
      assert.match(err.message, new RegExp(`^fal-main: submit: HTTP ${status}`));
    }
  });
});

describe("rules", () => {
  test("D26: the shortest offered clip at least as long as requested, else the longest", () => {
    assert.equal(pickDuration([5, 10], 1), 5);
    assert.equal(pickDuration([5, 10], 5), 5);
    assert.equal(pickDuration([5, 10], 6), 10);
    assert.equal(pickDuration([5, 10], 11), 10);
    assert.equal(pickDuration([4, 6, 8], 7), 8);
    assert.equal(pickDuration([4, 6, 8], 10), 8);
    assert.equal(pickDuration([6], 10), 6);
  });

  test("every model's offered lengths are ascending and every endpoint id is well formed", () => {
    for (const [id, model] of Object.entries(FAL_MODELS)) {
      for (const endpoint of [model.endpoints.text, model.endpoints.image]) {
        if (endpoint !== null) assert.match(endpoint, /^[a-z0-9-]+\/[a-z0-9./-]+$/, id);
      }
      if (model.kind === "video") {
        assert.deepEqual([...model.durations].sort((a, b) => a - b), [...model.durations], id);
        assert.ok(model.durations.length > 0, id);
      }
    }
  });

  test("trusted hosts are written the way URL.host writes them", () => {
    assert.equal(normalizeHost("Example.COM"), "example.com");
    assert.equal(normalizeHost("127.0.0.1:9001"), "127.0.0.1:9001");
    assert.equal(normalizeHost("[::1]:9000"), "[::1]:9000");
    assert.equal(normalizeHost("proxy.internal:80"), "proxy.internal:80");
    for (const bad of ["", "http://x", "x/y", "user@x", "x?y"]) assert.throws(() => normalizeHost(bad), RangeError, bad);
  });
});

describe("submit answers without follow-up URLs", () => {
  test("they are built as fal-js builds them: the app id without the sub-path", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ request_id: SUBMIT_ANSWER.request_id }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const local = createFalApi({ name: "fal-local", baseUrl: base, apiKey: FAL_KEY });
    try {
      const ref = await submitRequest(local, "fal-ai/flux-pro/v1.1-ultra", { prompt: "p" });
      const root = `${base}/fal-ai/flux-pro/requests/${SUBMIT_ANSWER.request_id}`;
      assert.deepEqual(ref, { requestId: SUBMIT_ANSWER.request_id, statusUrl: `${root}/status`, responseUrl: root, cancelUrl: `${root}/cancel` });
      const wf = await submitRequest(local, "workflows/me/my-flow/run", { prompt: "p" });
      assert.equal(wf.responseUrl, `${base}/workflows/me/my-flow/requests/${SUBMIT_ANSWER.request_id}`);
    } finally {
      await local.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
