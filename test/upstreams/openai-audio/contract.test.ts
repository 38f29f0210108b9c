/**
 * Contract of OpenAI's transcription and audio-input chat against the strict fake (fakes/openai-audio.ts),
 * called directly and through the adapter: a wrong field name is refused as OpenAI refuses it, a retired or
 * unknown model answers 404 `model_not_found` and the adapter raises `modelNotFound` naming the id (D35),
 * an unknown endpoint answers 404, and every request the adapter sends is accepted.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { AUDIO_CHAT_MODELS, startOpenAIAudioFake, TRANSCRIPTION_MODELS } from "../../../fakes/openai-audio.ts";
import type { OpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import { createOpenAIAudioSource, DEFAULT_TRANSCRIPTION_UPSTREAM, DEFAULT_UNDERSTANDING_UPSTREAM } from "../../../src/upstreams/openai-compatible/audio.ts";
import type { OpenAIAudioSource } from "../../../src/upstreams/openai-compatible/audio.ts";
import { m4aLike, mp3, OPENAI_KEY, openAIFailure, transcribeRequest, understandRequest, wav, withSignature } from "./helpers.ts";

let fake: OpenAIAudioFake;
let source: OpenAIAudioSource;

before(async () => {
  fake = await startOpenAIAudioFake({ apiKey: OPENAI_KEY, latencyMs: 0 });
  source = createOpenAIAudioSource({ name: "openai-audio", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, timeoutMs: 5000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

interface Answer {
  status: number;
  error: { message: string; type: string; param: string | null; code: string | null } | undefined;
}

async function answerOf(res: Response): Promise<Answer> {
  const json = (await res.json()) as { error?: Answer["error"] };
  return { status: res.status, error: json.error };
}

function transcriptionForm(fields: Record<string, string>): FormData {
  const form = new FormData();
  form.append("file", new Blob([wav(0.2)], { type: "audio/wav" }), "a.wav");
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return form;
}

async function transcribe(fields: Record<string, string>, url = fake.url): Promise<Answer> {
  return answerOf(await fetch(`${url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${OPENAI_KEY}` }, body: transcriptionForm(fields) }));
}

async function chat(body: Record<string, unknown>, url = fake.url): Promise<Answer> {
  return answerOf(
    await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
}

const audioMessages = [{ role: "user", content: [{ type: "input_audio", input_audio: { data: Buffer.from(wav(0.2)).toString("base64"), format: "wav" } }] }];

describe("the fake, called directly", () => {
  test("a wrong field name: chat answers OpenAI's 'Unrecognized request argument supplied', transcription 'Unknown parameter'", async () => {
    assert.deepEqual(await chat({ model: "gpt-4o-audio-preview", messages: audioMessages, max_output_tokens: 10 }), {
      status: 400,
      error: { message: "Unrecognized request argument supplied: max_output_tokens", type: "invalid_request_error", param: null, code: null },
    });
    assert.deepEqual(await transcribe({ model: "whisper-1", num_speakers: "2" }), {
      status: 400,
      error: { message: "Unknown parameter: 'num_speakers'.", type: "invalid_request_error", param: "num_speakers", code: "unknown_parameter" },
    });
    // A multipart array field counts by its stem, as the SDK writes it (`include[]`).
    assert.equal((await transcribe({ model: "gpt-4o-mini-transcribe", "include[]": "logprobs" })).status, 200);
  });

  test("every model the SDK names is served; a retired or unknown one answers 404 model_not_found", async () => {
    for (const model of TRANSCRIPTION_MODELS) assert.equal((await transcribe({ model })).status, 200, model);
    for (const model of AUDIO_CHAT_MODELS) assert.equal((await chat({ model, messages: audioMessages })).status, 200, model);
    assert.deepEqual(await chat({ model: "gpt-4o-audio-preview-2024-10-01", messages: audioMessages }), {
      status: 404,
      error: {
        message: "The model `gpt-4o-audio-preview-2024-10-01` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations",
        type: "invalid_request_error",
        param: null,
        code: "model_not_found",
      },
    });
    assert.deepEqual(await transcribe({ model: "whisper-2" }), {
      status: 404,
      error: { message: "The model `whisper-2` does not exist or you do not have access to it.", type: "invalid_request_error", param: null, code: "model_not_found" },
    });
    assert.equal((await chat({ model: "gpt-4o-mini-transcribe", messages: audioMessages })).error?.code, "model_not_found");
  });

  test("the retired option retires a served model", async () => {
    const retiring = await startOpenAIAudioFake({ apiKey: OPENAI_KEY, latencyMs: 0, retired: ["gpt-4o-mini-transcribe"] });
    try {
      const answer = await transcribe({ model: "gpt-4o-mini-transcribe" }, retiring.url);
      assert.equal(answer.status, 404);
      assert.match(answer.error?.message ?? "", /`gpt-4o-mini-transcribe` has been deprecated/);
      assert.equal((await transcribe({ model: "whisper-1" }, retiring.url)).status, 200);
    } finally {
      await retiring.close();
    }
  });

  test("the gpt-4o transcribe models answer json only", async () => {
    const answer = await transcribe({ model: "gpt-4o-mini-transcribe", response_format: "text" });
    assert.equal(answer.status, 400);
    assert.equal(answer.error?.param, "response_format");
  });

  test("an unknown endpoint or method: 404 Invalid URL", async () => {
    for (const [path, method] of [
      ["/v1/audio/transcription", "POST"],
      ["/v1/audio/translations", "POST"],
      ["/v1/audio/transcriptions", "GET"],
    ] as const) {
      const res = await fetch(`${fake.url}${path}`, { method, headers: { authorization: `Bearer ${OPENAI_KEY}` } });
      assert.equal(res.status, 404, path);
      assert.equal((await answerOf(res)).error?.message, `Invalid URL (${method} ${path})`);
    }
  });
});

describe("through the adapter", () => {
  test("the defaults are gpt-4o-mini-transcribe and gpt-4o-audio-preview (upstreams.md)", async () => {
    assert.equal(DEFAULT_TRANSCRIPTION_UPSTREAM, "gpt-4o-mini-transcribe");
    assert.equal(DEFAULT_UNDERSTANDING_UPSTREAM, "gpt-4o-audio-preview");
    await source.transcribe(transcribeRequest(wav(0.3)));
    await source.understand(understandRequest(wav(0.3), "What?"));
    assert.deepEqual(
      fake.requests.map((r) => (r.body as { model: string }).model),
      ["gpt-4o-mini-transcribe", "gpt-4o-audio-preview"],
    );
  });

  test("every request the adapter sends is accepted by the strict fake", async () => {
    for (const audio of [wav(0.3), mp3(0.3), m4aLike(), withSignature("OggS"), withSignature("fLaC"), withSignature([0x1a, 0x45, 0xdf, 0xa3])]) {
      await source.transcribe(transcribeRequest(audio));
    }
    for (const audio of [wav(0.3), mp3(0.3)]) await source.understand(understandRequest(audio, null));
    assert.equal(fake.requests.length, 8);
  });

  test("a retired model: modelNotFound naming it, not retryable, for transcription and understanding", async () => {
    const retiring = await startOpenAIAudioFake({ apiKey: OPENAI_KEY, latencyMs: 0, retired: ["gpt-4o-mini-transcribe", "gpt-4o-audio-preview"] });
    const s = createOpenAIAudioSource({ name: "openai-old", baseUrl: `${retiring.url}/v1`, apiKey: OPENAI_KEY });
    try {
      for (const [model, pending] of [
        ["gpt-4o-mini-transcribe", () => s.transcribe(transcribeRequest(wav(0.2)))],
        ["gpt-4o-audio-preview", () => s.understand(understandRequest(wav(0.2), "What?"))],
      ] as const) {
        const err = await openAIFailure(pending());
        assert.equal(err.status, 404);
        assert.equal(err.code, "model_not_found");
        assert.equal(err.modelNotFound, true);
        assert.equal(err.upstreamModel, model);
        assert.equal(err.retryable, false);
        assert.ok(err.message.startsWith(`openai-old: the upstream model "${model}" does not exist at this source (HTTP 404: The model \`${model}\` has been deprecated`), err.message);
      }
    } finally {
      await s.close();
      await retiring.close();
    }
  });

  test("an override to an id OpenAI does not serve: modelNotFound naming it", async () => {
    const s = createOpenAIAudioSource({ name: "openai-typo", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, models: { "host1-transcribe-1": "gpt-4o-mini-transcribe-9" } });
    try {
      const err = await openAIFailure(s.transcribe(transcribeRequest(wav(0.2))));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "gpt-4o-mini-transcribe-9");
    } finally {
      await s.close();
    }
  });
});
