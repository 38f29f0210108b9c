/**
 * Batch transcription on ElevenLabs (D43: Scribe serves the `transcribe` family, `POST /v1/speech-to-text`)
 * against the fake: the multipart request, the text of the answer, the model table and its override, and
 * failures mapped as every ElevenLabs HTTP call maps them.
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { AudioTextRequest } from "../../../src/upstreams/types.ts";
import { EL_KEY, elFailure } from "./helpers.ts";
import { pcmSilence, pcmTone } from "./realtime-helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-stt", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 5000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
});

/** A mono 16-bit WAV file of `pcm` at `rate` Hz. */
function wav(pcm: Buffer, rate = 16000): Uint8Array {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write("WAVEfmt ", 8, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(pcm.length, 40);
  return new Uint8Array(Buffer.concat([header, pcm]));
}

function request(audio: Uint8Array, extra: Partial<AudioTextRequest> = {}): AudioTextRequest {
  return { model: "host1-transcribe-1", audio, durationSec: 1, prompt: null, simulate: null, ...extra };
}

test("transcribe: multipart file and model_id scribe_v2, the answer's text", async () => {
  const audio = wav(Buffer.concat([pcmTone(0.8), pcmSilence(0.3), pcmTone(0.4)]));
  assert.deepEqual(await source.transcribe(request(audio)), { text: "hello world this" });
  const [r] = fake.requests;
  assert.equal(r.method, "POST");
  assert.equal(r.path, "/v1/speech-to-text");
  assert.equal(r.headers["xi-api-key"], "[redacted]");
  assert.match(r.headers["content-type"] ?? "", /^multipart\/form-data; boundary=/);
  assert.deepEqual(r.body, { model_id: "scribe_v2", file: { name: "audio", type: "application/octet-stream", bytes: audio.byteLength } });
  assert.equal("understand" in source, false, "ElevenLabs answers no questions about audio");
});

test("the models override of host1-transcribe-1 names the batch model", async () => {
  const src = createElevenLabsSource({ name: "el-stt", baseUrl: fake.url, apiKey: EL_KEY, models: { "host1-transcribe-1": "scribe_v1" } });
  await src.transcribe(request(wav(pcmTone(0.5))));
  assert.equal((fake.requests[0]!.body as { model_id: string }).model_id, "scribe_v1");
  await src.close();
});

test("a model ElevenLabs does not have: modelNotFound naming it, not retryable", async () => {
  const src = createElevenLabsSource({ name: "el-stt", baseUrl: fake.url, apiKey: EL_KEY, models: { "host1-transcribe-1": "scribe_v9" } });
  const err = await elFailure(src.transcribe(request(wav(pcmTone(0.5)))));
  assert.equal(err.modelNotFound, true);
  assert.equal(err.upstreamModel, "scribe_v9");
  assert.equal(err.retryable, false);
  await src.close();
});

test("a model of another family: unsupported, nothing sent", async () => {
  const err = await elFailure(source.transcribe(request(wav(pcmTone(0.5)), { model: "alpha-v3" })));
  assert.equal(err.kind, "unsupported");
  assert.equal(fake.requests.length, 0);
});

test("failures: 500 and 429 retryable, audio too short not", async () => {
  for (const [marker, status, retryable] of [["500", 500, true], ["429", 429, true]] as const) {
    fake.setMarkers([marker]);
    const err = await elFailure(source.transcribe(request(wav(pcmTone(0.5)))));
    assert.equal(err.status, status);
    assert.equal(err.retryable, retryable);
    assert.match(err.message, /^el-stt: speech-to-text: HTTP /);
  }
  fake.setMarkers([]);
  const short = await elFailure(source.transcribe(request(wav(pcmTone(0.05)))));
  assert.equal(short.status, 400);
  assert.equal(short.retryable, false);
});

test("a 200 answer without a text: malformed, retryable", async () => {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ language_code: "eng" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const src = createElevenLabsSource({ name: "el-stt", baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: EL_KEY });
  const err = await elFailure(src.transcribe(request(wav(pcmTone(0.5)))));
  assert.equal(err.kind, "malformed");
  assert.equal(err.retryable, true);
  await src.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
