/**
 * How the OpenAI audio source reads answers it did not get from the fake: fixtures in OpenAI's shapes
 * (fixtures.ts) served by a loopback recorder, and the unit decoders on odd answers. A usable answer gives
 * its text; anything else is a retryable malformed answer.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startRecorder } from "../../helpers/recorder.ts";
import { createOpenAIAudioSource, decodeTranscription, decodeUnderstanding } from "../../../src/upstreams/openai-compatible/audio.ts";
import {
  COMPLETION_PARTS,
  COMPLETION_REFUSAL,
  COMPLETION_STRING,
  ERROR_IN_200,
  TRANSCRIPTION_EMPTY,
  TRANSCRIPTION_TOKENS,
  TRANSCRIPTION_WHISPER,
} from "./fixtures.ts";
import { OPENAI_KEY, openAIFailure, transcribeRequest, understandRequest, wav } from "./helpers.ts";

/** Runs `fn` with a source whose base URL is a recorder answering `answer` (200 JSON) to everything. */
async function withAnswer(answer: unknown, fn: (s: ReturnType<typeof createOpenAIAudioSource>) => Promise<void>): Promise<void> {
  const recorder = await startRecorder("authorization", answer);
  const s = createOpenAIAudioSource({ name: "openai-fixture", baseUrl: `${recorder.url}/v1`, apiKey: OPENAI_KEY });
  try {
    await fn(s);
    assert.ok(recorder.hits.length >= 1);
  } finally {
    await s.close();
    await recorder.close();
  }
}

describe("transcription answers", () => {
  for (const [label, fixture] of [
    ["whisper-1 with duration usage", TRANSCRIPTION_WHISPER],
    ["a gpt-4o transcribe model with token usage", TRANSCRIPTION_TOKENS],
    ["silence (empty text)", TRANSCRIPTION_EMPTY],
  ] as const) {
    test(`${label}: the text`, async () => {
      await withAnswer(fixture, async (s) => {
        assert.deepEqual(await s.transcribe(transcribeRequest(wav(0.2))), { text: fixture.text });
      });
    });
  }

  for (const [label, answer] of [
    ["an error object", ERROR_IN_200],
    ["a chat completion", COMPLETION_STRING],
    ["text that is not a string", { text: 42 }],
    ["an array", [{ text: "x" }]],
  ] as const) {
    test(`${label} in a 200: retryable malformed`, async () => {
      await withAnswer(answer, async (s) => {
        const err = await openAIFailure(s.transcribe(transcribeRequest(wav(0.2))));
        assert.equal(err.kind, "malformed");
        assert.equal(err.retryable, true);
      });
    });
  }
});

describe("understanding answers", () => {
  test("string content", async () => {
    await withAnswer(COMPLETION_STRING, async (s) => {
      assert.deepEqual(await s.understand(understandRequest(wav(0.2), "What happens?")), { text: "A dog barks twice, then a door closes." });
    });
  });

  test("content as text parts, joined", async () => {
    await withAnswer(COMPLETION_PARTS, async (s) => {
      assert.deepEqual(await s.understand(understandRequest(wav(0.2), "What happens?")), { text: "A dog barks twice, then a door closes." });
    });
  });

  for (const [label, answer, pattern] of [
    ["a refusal", COMPLETION_REFUSAL, /refused: I can't help with that/],
    ["an error object", ERROR_IN_200, /error in a 2xx answer/],
    ["no choices", { ...COMPLETION_STRING, choices: [] }, /no choices/],
    ["a transcription", TRANSCRIPTION_WHISPER, /no choices/],
    ["a choice without a message", { ...COMPLETION_STRING, choices: [{ index: 0, finish_reason: "stop" }] }, /no message/],
    ["parts without text", { ...COMPLETION_STRING, choices: [{ index: 0, message: { role: "assistant", content: [{ type: "image_url" }] } }] }, /no text content/],
  ] as const) {
    test(`${label} in a 200: retryable malformed`, async () => {
      await withAnswer(answer, async (s) => {
        const err = await openAIFailure(s.understand(understandRequest(wav(0.2), "What happens?")));
        assert.equal(err.kind, "malformed");
        assert.equal(err.retryable, true);
        assert.match(err.message, pattern);
      });
    });
  }
});

describe("decoders", () => {
  test("decodeTranscription and decodeUnderstanding on the fixtures", () => {
    assert.equal(decodeTranscription(TRANSCRIPTION_WHISPER), TRANSCRIPTION_WHISPER.text);
    assert.deepEqual(decodeTranscription(null), { problem: "the answer is not a JSON object" });
    assert.equal(decodeUnderstanding(COMPLETION_STRING), "A dog barks twice, then a door closes.");
    assert.equal(decodeUnderstanding(COMPLETION_PARTS), "A dog barks twice, then a door closes.");
    assert.deepEqual(decodeUnderstanding("text"), { problem: "no choices" });
  });

  test("an answer that is not JSON: retryable malformed", async () => {
    const http = await import("node:http");
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>maintenance</html>");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const { port } = server.address() as { port: number };
    const s = createOpenAIAudioSource({ name: "openai-html", baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: OPENAI_KEY });
    try {
      for (const call of [() => s.transcribe(transcribeRequest(wav(0.2))), () => s.understand(understandRequest(wav(0.2), "?"))]) {
        const err = await openAIFailure(call());
        assert.equal(err.kind, "malformed");
        assert.equal(err.retryable, true);
        assert.match(err.message, /not JSON/);
      }
    } finally {
      await s.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
