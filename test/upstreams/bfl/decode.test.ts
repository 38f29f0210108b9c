/**
 * The BFL decoders on BFL's real answer shapes (fixtures.ts names where each comes from): submit
 * answers, every result status, error bodies and the HTTP status -> retryable table; credits to USD;
 * and the hosts that may receive the key (D25).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { BFL_CREDIT_USD, BflError, createBflApi, isBflFollowUpHost } from "../../../src/upstreams/bfl/api.ts";
import type { BflApi } from "../../../src/upstreams/bfl/api.ts";
import { creditsToUsd, isInputError } from "../../../src/upstreams/bfl/source.ts";
import { decodeResult, decodeSubmit } from "../../../src/upstreams/bfl/tasks.ts";
import type { KeyedAnswer } from "../../../src/upstreams/keyed-http.ts";
import {
  AUTH_ERROR,
  RATE_LIMITED,
  RESULT_ANSWERS,
  SUBMIT_ANSWER,
  SUBMIT_ANSWER_FRACTIONAL,
  SUBMIT_ANSWER_MINIMAL,
  SUBMIT_ANSWER_NO_POLLING_URL,
  VALIDATION_ERROR,
} from "./fixtures.ts";
import { assertNoKey, BFL_KEY } from "./helpers.ts";

let api: BflApi;
before(() => {
  api = createBflApi({ name: "bfl-main", apiKey: BFL_KEY, trustedHosts: ["10.0.0.7:8080"] });
});
after(async () => {
  await api.close();
});

const answer = (status: number, json: unknown, headers: Record<string, string> = {}): KeyedAnswer => ({
  status,
  headers,
  json,
  text: json === undefined ? "" : JSON.stringify(json),
});

const isMalformed = (err: unknown): boolean => err instanceof BflError && err.kind === "malformed" && err.retryable;

describe("submit answers", () => {
  test("the API reference's answer: id, the regional polling URL as given, cost in credits, megapixels", () => {
    assert.deepEqual(decodeSubmit(api, answer(200, SUBMIT_ANSWER), "submit"), {
      id: SUBMIT_ANSWER.id,
      pollingUrl: SUBMIT_ANSWER.polling_url,
      costCredits: 3,
      outputMp: 0,
      inputMp: 0,
    });
    const fractional = decodeSubmit(api, answer(200, SUBMIT_ANSWER_FRACTIONAL), "submit");
    assert.equal(fractional.pollingUrl, SUBMIT_ANSWER_FRACTIONAL.polling_url);
    assert.equal(fractional.outputMp, 0.75);
    assert.equal(fractional.costCredits, 6);
  });

  test("an answer without the price fields: nulls", () => {
    assert.deepEqual(decodeSubmit(api, answer(200, SUBMIT_ANSWER_MINIMAL), "submit"), {
      id: "abc123",
      pollingUrl: SUBMIT_ANSWER_MINIMAL.polling_url,
      costCredits: null,
      outputMp: null,
      inputMp: null,
    });
    assert.equal(decodeSubmit(api, answer(200, { ...SUBMIT_ANSWER, cost: null, output_mp: -1 }), "submit").costCredits, null);
  });

  test("an answer without polling_url is polled where BFL's SDK polls: {base}/v1/get_result?id=", () => {
    assert.equal(decodeSubmit(api, answer(200, SUBMIT_ANSWER_NO_POLLING_URL), "submit").pollingUrl, "https://api.bfl.ai/v1/get_result?id=abc123");
  });

  test("no id, or not JSON: malformed (retryable)", () => {
    for (const json of [undefined, [], { polling_url: SUBMIT_ANSWER.polling_url }, { id: "" }]) {
      assert.throws(() => decodeSubmit(api, answer(200, json), "submit"), isMalformed);
    }
  });

  test("a polling URL on a foreign host is refused before any request: not retryable", () => {
    assert.throws(
      () => decodeSubmit(api, answer(200, { ...SUBMIT_ANSWER, polling_url: "https://foreign.example/v1/get_result?id=x" }), "submit"),
      (err: unknown) => err instanceof BflError && err.kind === "refused" && !err.retryable,
    );
  });
});

describe("result answers", () => {
  test("every status of BFL decodes", () => {
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.pending)), { status: "Pending", progress: null });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.pendingWithProgress)), { status: "Pending", progress: 0.42 });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.ready)), { status: "Ready", sample: RESULT_ANSWERS.ready.result.sample });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.error)), { status: "Error", message: "Error description", code: null });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.errorInput)), {
      status: "Error",
      message: "invalid_image: Input image could not be processed",
      code: "invalid_image",
    });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.errorTimeout)), {
      status: "Error",
      message: "generation_timeout: Generation took too long",
      code: "generation_timeout",
    });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.taskNotFound)), { status: "Task not found" });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.requestModerated)), { status: "Request Moderated", reasons: ["Derivative Works Filter"] });
    assert.deepEqual(decodeResult(api, answer(200, RESULT_ANSWERS.contentModerated)), { status: "Content Moderated", reasons: ["Sexual Content"] });
  });

  test("odd values inside a known status are dropped, not trusted", () => {
    assert.deepEqual(decodeResult(api, answer(200, { status: "Pending", progress: 42 })), { status: "Pending", progress: null });
    assert.deepEqual(decodeResult(api, answer(200, { status: "Ready", result: { sample: "data:image/png;base64,AAAA" } })), { status: "Ready", sample: null });
    assert.deepEqual(decodeResult(api, answer(200, { status: "Ready", result: null })), { status: "Ready", sample: null });
    assert.deepEqual(decodeResult(api, answer(200, { status: "Content Moderated" })), { status: "Content Moderated", reasons: [] });
    assert.deepEqual(decodeResult(api, answer(200, { status: "Error", details: { code: "E1" } })), { status: "Error", message: '{"code":"E1"}', code: "E1" });
    assert.deepEqual(decodeResult(api, answer(200, { status: "Error", error: { nested: true } })), { status: "Error", message: '{"nested":true}', code: null });
  });

  test("an unknown status or a non-object is malformed (retryable: poll again)", () => {
    for (const json of [RESULT_ANSWERS.unknown, undefined, [], { progress: 0.5 }]) {
      assert.throws(() => decodeResult(api, answer(200, json)), isMalformed);
    }
  });
});

describe("a task Error: the input's fault or BFL's (D35)", () => {
  test("BFL's input codes and texts naming the input are the input's fault; infrastructure failures are not", () => {
    const decoded = (json: unknown) => {
      const status = decodeResult(api, answer(200, json));
      assert.equal(status.status, "Error");
      return status as { code: string | null; message: string | null };
    };
    assert.equal(isInputError(decoded(RESULT_ANSWERS.errorInput)), true);
    assert.equal(isInputError(decoded(RESULT_ANSWERS.errorTimeout)), false);
    assert.equal(isInputError(decoded(RESULT_ANSWERS.error)), false);
    assert.equal(isInputError(decoded({ status: "Error", error: "internal_error" })), false);
    assert.equal(isInputError(decoded({ status: "Error", error: "Generation failed: worker lost" })), false);
    assert.equal(isInputError(decoded({ status: "Error" })), false);
    const inputTexts = [
      "Failed to download input_image: 403",
      "Could not decode the image prompt",
      "Invalid aspect ratio",
      "Unsupported image format",
      "input image too small",
    ];
    for (const text of inputTexts) assert.equal(isInputError(decoded({ status: "Error", error: text })), true, text);
    assert.equal(isInputError(decoded({ status: "Error", details: { error: "validation_error", field: "width" } })), true);
  });
});

describe("HTTP failures", () => {
  const cases: { status: number; retryable: boolean; json: unknown; text: RegExp }[] = [
    { status: 400, retryable: false, json: { detail: "Bad request" }, text: /HTTP 400: Bad request$/ },
    { status: 401, retryable: false, json: { detail: "Invalid API key" }, text: /HTTP 401: Invalid API key$/ },
    { status: 402, retryable: false, json: { detail: "Insufficient credits" }, text: /HTTP 402: Insufficient credits$/ },
    { status: 403, retryable: false, json: AUTH_ERROR, text: /HTTP 403: nope$/ },
    { status: 404, retryable: false, json: { detail: "Not Found" }, text: /HTTP 404: Not Found$/ },
    { status: 422, retryable: false, json: VALIDATION_ERROR, text: /HTTP 422: prompt: Field required \(missing\)$/ },
    { status: 408, retryable: true, json: undefined, text: /HTTP 408$/ },
    { status: 429, retryable: true, json: RATE_LIMITED, text: /HTTP 429: Too many concurrent requests$/ },
    { status: 500, retryable: true, json: { detail: "Internal Server Error" }, text: /HTTP 500: Internal Server Error$/ },
    { status: 502, retryable: true, json: undefined, text: /HTTP 502$/ },
    { status: 503, retryable: true, json: undefined, text: /HTTP 503$/ },
    { status: 504, retryable: true, json: undefined, text: /HTTP 504$/ },
  ];
  for (const c of cases) {
    test(`HTTP ${c.status}: retryable ${c.retryable}`, () => {
      const err = api.httpError(answer(c.status, c.json), "submit to flux-2-pro");
      assert.ok(err instanceof BflError);
      assert.equal(err.kind, "http");
      assert.equal(err.status, c.status);
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.contentRejected, false);
      assert.match(err.message, c.text);
      assert.match(err.message, /^bfl-main: submit to flux-2-pro: /);
    });
  }

  test("pydantic's echo of the input is never copied; an HTML error page is reduced to its text", () => {
    const err = api.httpError(answer(422, VALIDATION_ERROR), "submit");
    assert.ok(!err.message.includes("1024"));
    const html = api.httpError({ status: 502, headers: {}, json: undefined, text: "<html><h1>502 Bad Gateway</h1></html>" }, "get_result");
    assert.match(html.message, /HTTP 502: 502 Bad Gateway$/);
  });

  test("the key in an error body is redacted", () => {
    const err = api.httpError(answer(401, { detail: `Invalid API key: ${BFL_KEY}` }), "submit");
    assertNoKey(err.message);
    assert.match(err.message, /Invalid API key: \[redacted\]/);
  });
});

describe("credits", () => {
  test("one credit is one US cent, rounded to the micro-dollar", () => {
    assert.equal(BFL_CREDIT_USD, 0.01);
    assert.equal(creditsToUsd(3), 0.03);
    assert.equal(creditsToUsd(4.5), 0.045);
    assert.equal(creditsToUsd(6 * 3), 0.18);
    assert.equal(creditsToUsd(0), 0);
  });
});

describe("hosts that may receive the key (D25)", () => {
  test("the base host, *.bfl.ai over https on the default port, and trusted hosts; nothing else", () => {
    const ok = [
      "https://api.bfl.ai/v1/get_result?id=1",
      "https://api.eu2.bfl.ai/v1/get_result?id=1",
      "https://api.us1.bfl.ai/v1/get_result?id=1",
      "https://API.EU.BFL.AI/v1/get_result?id=1",
      "http://10.0.0.7:8080/v1/get_result?id=1",
    ];
    for (const url of ok) assert.equal(api.checkUrl(url, "polling_url").href, new URL(url).href, url);
    const refused = [
      "http://api.eu2.bfl.ai/v1/get_result?id=1",
      "https://api.eu2.bfl.ai:8443/v1/get_result?id=1",
      "https://bfl.ai.evil.example/v1/get_result?id=1",
      "https://evilbfl.ai/v1/get_result?id=1",
      "https://foreign.example/v1/get_result?id=1",
      "https://user:pw@api.eu2.bfl.ai/v1/get_result?id=1",
      "https://10.0.0.7/v1/get_result?id=1",
      "ftp://api.bfl.ai/x",
      "not a url",
    ];
    for (const url of refused) {
      assert.throws(
        () => api.checkUrl(url, "polling_url"),
        (err: unknown) => err instanceof BflError && err.kind === "refused" && !err.retryable && !err.message.includes("get_result"),
        url,
      );
    }
    assert.equal(isBflFollowUpHost(new URL("https://delivery-eu1.bfl.ai/x")), true);
  });

  test("only the base host and trusted hosts are direct downloads: BFL's delivery hosts are not", () => {
    assert.equal(api.isDirectDownloadHost("https://api.bfl.ai/files/a.png"), true);
    assert.equal(api.isDirectDownloadHost("http://10.0.0.7:8080/a.png"), true);
    assert.equal(api.isDirectDownloadHost(RESULT_ANSWERS.ready.result.sample), false);
    assert.equal(api.isDirectDownloadHost("https://api.eu2.bfl.ai/a.png"), false);
  });
});
