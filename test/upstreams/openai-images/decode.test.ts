/**
 * Decoding of OpenAI's image answers: the fixtures (OpenAI's real shapes) fed to the decoder, then
 * replayed over loopback HTTP to the source (b64_json -> PNG bytes with the size from the header; a `url`
 * image, which no GPT image model answers, is malformed), the answer size cap of images (above chat's),
 * and which output hosts are downloaded directly (D25).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { MAX_RESPONSE_BYTES } from "../../../src/upstreams/openai-compatible/api.ts";
import { createOpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { OpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import { decodeImagesAnswer, MAX_IMAGES_RESPONSE_BYTES } from "../../../src/upstreams/openai-compatible/images.ts";
import { pngDimensions } from "../../../src/upstreams/media-probe.ts";
import type { MediaOutput } from "../../../src/upstreams/types.ts";
import { startFakeOpenAI } from "../../../fakes/openai-chat.ts";
import type { FakeOpenAI } from "../../../fakes/openai-chat.ts";
import { GPT_IMAGE_ANSWER, SMALL_PNG, SMALL_PNG_B64, URL_ANSWER } from "./fixtures.ts";
import { imageRequest, OPENAI_KEY, openAIFailure } from "./helpers.ts";

function bytesOf(output: MediaOutput | undefined): Extract<MediaOutput, { kind: "bytes" }> {
  assert.ok(output !== undefined && output.kind === "bytes", `expected bytes, got ${JSON.stringify(output)}`);
  return output;
}

describe("decodeImagesAnswer on the fixtures", () => {
  test("b64_json: PNG bytes with the size read from the header", () => {
    const outputs = decodeImagesAnswer({ created: 1, data: [{ b64_json: SMALL_PNG_B64 }] }, 1);
    assert.ok(Array.isArray(outputs));
    const png = bytesOf(outputs[0]);
    assert.equal(png.contentType, "image/png");
    assert.deepEqual(new Uint8Array(png.body), SMALL_PNG);
    assert.deepEqual({ width: png.width, height: png.height }, { width: 8, height: 6 });
  });

  test("every image of data[], usage ignored", () => {
    const outputs = decodeImagesAnswer(GPT_IMAGE_ANSWER, 3);
    assert.ok(Array.isArray(outputs));
    assert.equal(outputs.length, 3);
    for (const output of outputs) assert.equal(bytesOf(output).contentType, "image/png");
  });

  test("a url image (DALL-E's answer; no GPT image model gives one) is refused", () => {
    assert.match(String(decodeImagesAnswer(URL_ANSWER, 1)), /no b64_json/);
  });

  test("what is refused: fewer images than asked, no data, an error, neither field, base64 that is not a PNG", () => {
    assert.match(String(decodeImagesAnswer(GPT_IMAGE_ANSWER, 4)), /3 images, 4 were asked for/);
    assert.match(String(decodeImagesAnswer({ created: 1, data: [] }, 1)), /no data/);
    assert.match(String(decodeImagesAnswer({ created: 1 }, 1)), /no data/);
    assert.match(String(decodeImagesAnswer({ error: { message: "boom" } }, 1)), /error in a 2xx answer: boom/);
    assert.match(String(decodeImagesAnswer({ data: [{ revised_prompt: "x" }] }, 1)), /no b64_json/);
    assert.match(String(decodeImagesAnswer({ data: [{ b64_json: Buffer.from("GIF89a not a png at all").toString("base64") }] }, 1)), /not a base64 PNG/);
    assert.match(String(decodeImagesAnswer({ data: [{ b64_json: "%%%" }] }, 1)), /not a base64 PNG/);
    assert.match(String(decodeImagesAnswer([], 1)), /not a JSON object/);
  });

  test("more images than asked are cut to the number asked", () => {
    const outputs = decodeImagesAnswer(GPT_IMAGE_ANSWER, 2);
    assert.ok(Array.isArray(outputs));
    assert.equal(outputs.length, 2);
  });

  test("pngDimensions reads the IHDR chunk and refuses anything else", () => {
    assert.deepEqual(pngDimensions(SMALL_PNG), { width: 8, height: 6 });
    assert.equal(pngDimensions(SMALL_PNG.subarray(0, 20)), null);
    assert.equal(pngDimensions(new TextEncoder().encode("\x89PNG\r\n\x1a\n....XXXX12345678")), null);
  });
});

describe("answers replayed over HTTP", () => {
  let replay: FakeOpenAI;
  let source: OpenAIImagesSource;

  before(async () => {
    replay = await startFakeOpenAI();
    source = createOpenAIImagesSource({ name: "openai-replay", baseUrl: replay.baseUrl, apiKey: OPENAI_KEY, timeoutMs: 30_000 });
  });
  after(async () => {
    await source.close();
    await replay.close();
  });
  beforeEach(() => replay.reset());

  async function generated(answer: unknown, n = 1): Promise<MediaOutput[]> {
    replay.enqueue({ kind: "json", body: answer });
    const handle = await source.submitImage(imageRequest({ model: "imgC-q1", n }));
    const state = await source.poll(handle);
    assert.equal(state.state, "succeeded");
    return state.outputs;
  }

  test("b64_json answers become the outputs the runner stores; a url answer is malformed: retryable", async () => {
    assert.deepEqual(new Uint8Array(bytesOf((await generated(GPT_IMAGE_ANSWER, 3))[2]).body), SMALL_PNG);
    assert.equal(replay.requests[0].headers.authorization, `Bearer ${OPENAI_KEY}`);
    assert.equal(replay.requests[0].path, "/v1/images/generations");
    replay.enqueue({ kind: "json", body: URL_ANSWER });
    const err = await openAIFailure(source.submitImage(imageRequest()));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
  });

  test("an answer larger than chat's cap is read whole (images have their own)", async () => {
    // Four images of 5 MB each: a PNG header, then filler the decoder does not look at.
    const big = Buffer.alloc(5 * 1024 * 1024);
    big.set(SMALL_PNG.subarray(0, 33));
    const b64 = big.toString("base64");
    const outputs = await generated({ created: 1, data: [1, 2, 3, 4].map(() => ({ b64_json: b64 })) }, 4);
    assert.ok(4 * b64.length > MAX_RESPONSE_BYTES);
    assert.equal(outputs.length, 4);
    assert.equal(bytesOf(outputs[3]).body.byteLength, big.byteLength);
  });

  test("an answer over the images cap, or not JSON, is a malformed answer: retryable", async () => {
    replay.enqueue({ kind: "raw", body: `{"created":1,"data":[{"b64_json":"${"A".repeat(MAX_IMAGES_RESPONSE_BYTES)}"}]}` });
    const large = await openAIFailure(source.submitImage(imageRequest()));
    assert.equal(large.kind, "malformed");
    assert.equal(large.retryable, true);
    assert.match(large.message, /larger than/);
    replay.enqueue({ kind: "raw", contentType: "text/html", body: "<html>maintenance</html>" });
    const html = await openAIFailure(source.submitImage(imageRequest()));
    assert.equal(html.kind, "malformed");
    assert.equal(html.retryable, true);
  });
});

describe("direct downloads (D25)", () => {
  test("the base URL's host and the trusted hosts, nothing else", async () => {
    const s = createOpenAIImagesSource({ name: "openai-x", baseUrl: "http://127.0.0.1:9001/v1", apiKey: OPENAI_KEY, trustedHosts: ["files.internal", "10.0.0.5:8443"] });
    assert.equal(s.isDirectDownloadHost("http://127.0.0.1:9001/files/a.png"), true);
    assert.equal(s.isDirectDownloadHost("http://127.0.0.1:9002/files/a.png"), false);
    assert.equal(s.isDirectDownloadHost("https://files.internal/a.png"), true);
    assert.equal(s.isDirectDownloadHost("https://10.0.0.5:8443/a.png"), true);
    assert.equal(s.isDirectDownloadHost(URL_ANSWER.data[0].url), false);
    assert.equal(s.isDirectDownloadHost("not a url"), false);
    const real = createOpenAIImagesSource({ name: "openai", apiKey: OPENAI_KEY });
    assert.equal(real.isDirectDownloadHost("https://api.openai.com/v1/files/x"), true);
    assert.equal(real.isDirectDownloadHost(URL_ANSWER.data[0].url), false, "another host goes through the SSRF-safe fetch");
    await Promise.all([s.close(), real.close()]);
  });
});
