/**
 * OpenAI's own Node client (the `openai` package, a development dependency) pointed at the loopback fake:
 * when the vendor's client accepts the fake's answers and maps its errors to its own error classes, the
 * fake speaks OpenAI's transcription and audio-input chat protocol (upstreams.md, "Testing without the
 * internet"). The client's requests, as the fake records them, also show what a real client sends.
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { AuthenticationError, BadRequestError, InternalServerError, NotFoundError, RateLimitError, toFile } from "openai";
import { startOpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import type { OpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import { m4aLike, mp3, OPENAI_KEY, wav } from "./helpers.ts";

let fake: OpenAIAudioFake;
let client: OpenAI;

before(async () => {
  fake = await startOpenAIAudioFake({ apiKey: OPENAI_KEY, latencyMs: 0 });
  // No retries: each call is exactly one request, so the recorded requests can be asserted.
  client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0 });
});

after(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

test("audio.transcriptions.create with toFile: the transcript and whisper-1's duration usage", async () => {
  const audio = wav(2.5);
  const answer = await client.audio.transcriptions.create({ file: await toFile(audio, "speech.wav", { type: "audio/wav" }), model: "whisper-1" });
  assert.equal(answer.text, `Fake transcript of a ${audio.byteLength}-byte .wav file.`);
  assert.deepEqual(answer.usage, { type: "duration", seconds: 3 });
  const [r] = fake.requests;
  assert.equal(r.path, "/v1/audio/transcriptions");
  assert.equal(r.headers.authorization, "Bearer [redacted]");
  assert.deepEqual(r.body, { file: { name: "speech.wav", size: audio.byteLength, type: "audio/wav" }, model: "whisper-1" });
});

test("an MP3 transcription with response_format json (token usage, as the gpt-4o transcribe models bill); an M4A one without usage (the fake cannot time it)", async () => {
  const song = mp3(1);
  const a = await client.audio.transcriptions.create({ file: await toFile(song, "song.mp3"), model: "gpt-4o-mini-transcribe", response_format: "json" });
  assert.equal(a.text, `Fake transcript of a ${song.byteLength}-byte .mp3 file.`);
  assert.ok(a.usage?.type === "tokens");
  assert.equal(a.usage.total_tokens, a.usage.input_tokens + a.usage.output_tokens);
  const m4a = m4aLike();
  const b = await client.audio.transcriptions.create({ file: await toFile(m4a, "memo.m4a"), model: "whisper-1" });
  assert.equal(b.text, `Fake transcript of a ${m4a.byteLength}-byte .m4a file.`);
  assert.equal(b.usage, undefined);
});

test("response_format text: the client returns the text itself", async () => {
  const audio = wav(0.5);
  const text = await client.audio.transcriptions.create({ file: await toFile(audio, "a.wav"), model: "whisper-1", response_format: "text" });
  assert.equal(text.trim(), `Fake transcript of a ${audio.byteLength}-byte .wav file.`);
});

test("chat.completions.create with an input_audio part: a complete chat completion", async () => {
  const audio = mp3(1);
  const completion = await client.chat.completions.create({
    model: "gpt-4o-audio-preview",
    modalities: ["text"],
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "What do you hear?" },
          { type: "input_audio", input_audio: { data: Buffer.from(audio).toString("base64"), format: "mp3" } },
        ],
      },
    ],
  });
  assert.equal(completion.object, "chat.completion");
  assert.match(completion.id, /^chatcmpl-/);
  assert.equal(typeof completion.created, "number");
  assert.equal(completion.model, "gpt-4o-audio-preview");
  assert.equal(completion.choices.length, 1);
  const [choice] = completion.choices;
  assert.equal(choice.index, 0);
  assert.equal(choice.finish_reason, "stop");
  assert.equal(choice.message.role, "assistant");
  assert.equal(choice.message.content, `Fake answer to "What do you hear?" about ${audio.byteLength} bytes of mp3 audio.`);
  assert.ok((completion.usage?.prompt_tokens_details?.audio_tokens ?? 0) > 0);
  assert.equal(completion.usage?.total_tokens, (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0));
});

test("the client's error classes: 400 (no audio part, bad format), 401, 429, 500", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-audio-preview", messages: [{ role: "user", content: "no audio" }] }),
    (err: unknown) => err instanceof BadRequestError && err.status === 400,
  );
  await assert.rejects(
    client.chat.completions.create({
      model: "gpt-4o-audio-preview",
      messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "!!not base64!!", format: "wav" } }] }],
    }),
    (err: unknown) => err instanceof BadRequestError && err.param === "messages[0].content[0].input_audio.data",
  );
  await assert.rejects(
    client.audio.transcriptions.create({ file: await toFile(new Uint8Array(0), "empty.wav"), model: "whisper-1" }),
    (err: unknown) => err instanceof BadRequestError && err.param === "file",
  );
  const wrong = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-wrong-key-0000", maxRetries: 0 });
  await assert.rejects(
    wrong.audio.transcriptions.create({ file: await toFile(wav(0.2), "a.wav"), model: "whisper-1" }),
    (err: unknown) => err instanceof AuthenticationError && err.code === "invalid_api_key",
  );
  fake.setMarkers(["429"]);
  await assert.rejects(
    client.audio.transcriptions.create({ file: await toFile(wav(0.2), "a.wav"), model: "whisper-1" }),
    (err: unknown) => err instanceof RateLimitError && err.headers.get("retry-after") === "1" && err.code === "rate_limit_exceeded",
  );
  fake.setMarkers(["500"]);
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-audio-preview", messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: Buffer.from(wav(0.2)).toString("base64"), format: "wav" } }] }] }),
    (err: unknown) => err instanceof InternalServerError && err.status === 500,
  );
});

test("a retired or unknown model is the client's NotFoundError with model_not_found; an unknown field its BadRequestError", async () => {
  const retiring = await startOpenAIAudioFake({ apiKey: OPENAI_KEY, latencyMs: 0, retired: ["gpt-4o-mini-transcribe", "gpt-4o-audio-preview"] });
  const old = new OpenAI({ baseURL: `${retiring.url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0 });
  const audioPart = { type: "input_audio" as const, input_audio: { data: Buffer.from(wav(0.2)).toString("base64"), format: "wav" as const } };
  try {
    await assert.rejects(old.audio.transcriptions.create({ file: await toFile(wav(0.2), "a.wav"), model: "gpt-4o-mini-transcribe" }), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.equal(err.code, "model_not_found");
      assert.match(err.message, /The model `gpt-4o-mini-transcribe` has been deprecated/);
      return true;
    });
    await assert.rejects(
      old.chat.completions.create({ model: "gpt-4o-audio-preview", messages: [{ role: "user", content: [audioPart] }] }),
      (err: unknown) => err instanceof NotFoundError && err.code === "model_not_found",
    );
    // The retired option leaves the other models served.
    assert.equal((await old.audio.transcriptions.create({ file: await toFile(wav(0.2), "a.wav"), model: "whisper-1" })).text.startsWith("Fake transcript"), true);
  } finally {
    await retiring.close();
  }
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-audio-preview-2024-10-01", messages: [{ role: "user", content: [audioPart] }] }),
    (err: unknown) => err instanceof NotFoundError && /has been deprecated/.test(err.message),
  );
  await assert.rejects(client.audio.transcriptions.create({ file: await toFile(wav(0.2), "a.wav"), model: "whisper-2" }), (err: unknown) => {
    assert.ok(err instanceof NotFoundError);
    assert.match(err.message, /The model `whisper-2` does not exist or you do not have access to it\./);
    return true;
  });
  const wrongName = { model: "gpt-4o-audio-preview", messages: [{ role: "user", content: [audioPart] }], max_output_tokens: 5 } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
  await assert.rejects(client.chat.completions.create(wrongName), (err: unknown) => {
    assert.ok(err instanceof BadRequestError);
    assert.match(err.message, /Unrecognized request argument supplied: max_output_tokens/);
    assert.equal(err.code, null);
    return true;
  });
});
