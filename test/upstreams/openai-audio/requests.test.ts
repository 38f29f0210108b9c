/**
 * What the OpenAI audio source sends, as the loopback fake records it: the multipart transcription
 * (file name and type from the sniffed format, the upstream model, `response_format: "json"`), the
 * chat-completions body of an understanding request (question, `input_audio` data and format), the
 * `models` overrides, and the formats refused before anything is sent.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startOpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import type { OpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import {
  createOpenAIAudioSource,
  DEFAULT_UNDERSTAND_PROMPT,
  MAX_TRANSCRIPTION_UPLOAD_BYTES,
  sniffUploadFormat,
} from "../../../src/upstreams/openai-compatible/audio.ts";
import type { OpenAIAudioSource } from "../../../src/upstreams/openai-compatible/audio.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import {
  m4aLike,
  mp3,
  mp3WithId3,
  OPENAI_KEY,
  transcribeRequest,
  understandRequest,
  upstreamFailure,
  wav,
  withSignature,
} from "./helpers.ts";

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

/** The one request the fake recorded. */
function only(): (typeof fake.requests)[number] {
  assert.equal(fake.requests.length, 1, JSON.stringify(fake.requests.map((r) => r.path)));
  return fake.requests[0];
}

describe("sniffing the container", () => {
  test("each signature names its format; anything else is null", () => {
    assert.equal(sniffUploadFormat(wav()), "wav");
    assert.equal(sniffUploadFormat(mp3()), "mp3");
    assert.equal(sniffUploadFormat(mp3WithId3()), "mp3");
    assert.equal(sniffUploadFormat(m4aLike()), "m4a");
    assert.equal(sniffUploadFormat(withSignature("OggS")), "ogg");
    assert.equal(sniffUploadFormat(withSignature("fLaC")), "flac");
    assert.equal(sniffUploadFormat(withSignature([0x1a, 0x45, 0xdf, 0xa3])), "webm");
    // AAC in ADTS (layer bits 00) is not an MPEG audio frame; nor is text or a short file.
    assert.equal(sniffUploadFormat(withSignature([0xff, 0xf1, 0x50, 0x80])), null);
    assert.equal(sniffUploadFormat(withSignature("hello world")), null);
    assert.equal(sniffUploadFormat(new Uint8Array([0x52, 0x49])), null);
  });
  test("the simulator's MP3 really starts with a frame sync (the frame path is exercised, not ID3)", () => {
    const bytes = mp3();
    assert.equal(bytes[0], 0xff);
    assert.equal(bytes[1] & 0xe0, 0xe0);
  });
});

describe("transcription", () => {
  const cases: { label: string; audio: () => Uint8Array; name: string; type: string }[] = [
    { label: "WAV", audio: () => wav(1.5), name: "audio.wav", type: "audio/wav" },
    { label: "MP3 (frame sync)", audio: () => mp3(2), name: "audio.mp3", type: "audio/mpeg" },
    { label: "MP3 (ID3 tag)", audio: () => mp3WithId3(2), name: "audio.mp3", type: "audio/mpeg" },
    { label: "M4A-like", audio: m4aLike, name: "audio.m4a", type: "audio/mp4" },
    { label: "Ogg", audio: () => withSignature("OggS"), name: "audio.ogg", type: "audio/ogg" },
    { label: "FLAC", audio: () => withSignature("fLaC"), name: "audio.flac", type: "audio/flac" },
    { label: "WebM", audio: () => withSignature([0x1a, 0x45, 0xdf, 0xa3]), name: "audio.webm", type: "audio/webm" },
  ];
  for (const c of cases) {
    test(`${c.label}: multipart with ${c.name}, gpt-4o-mini-transcribe, response_format json; the transcript comes back`, async () => {
      const audio = c.audio();
      const ext = c.name.split(".")[1];
      const { text } = await source.transcribe(transcribeRequest(audio));
      assert.equal(text, `Fake transcript of a ${audio.byteLength}-byte .${ext} file.`);
      const r = only();
      assert.equal(r.method, "POST");
      assert.equal(r.path, "/v1/audio/transcriptions");
      assert.equal(r.headers.authorization, "Bearer [redacted]");
      assert.match(r.headers["content-type"], /^multipart\/form-data; boundary=/);
      assert.deepEqual(r.body, {
        file: { name: c.name, size: audio.byteLength, type: c.type },
        model: "gpt-4o-mini-transcribe",
        response_format: "json",
      });
    });
  }

  test("audio in no known container is refused as unsupported, and nothing is sent", async () => {
    const err = await upstreamFailure(source.transcribe(transcribeRequest(withSignature("#!AMR\n"))));
    assert.equal(err.unsupported, true);
    assert.equal(err.retryable, false);
    assert.equal(fake.requests.length, 0);
  });

  test("a file over OpenAI's 25 MB upload limit is refused as unsupported, and nothing is sent", async () => {
    const big = new Uint8Array(MAX_TRANSCRIPTION_UPLOAD_BYTES + 1);
    big.set(wav(0.1));
    const err = await upstreamFailure(source.transcribe(transcribeRequest(big)));
    assert.equal(err.unsupported, true);
    assert.match(err.message, /25 MB/);
    assert.equal(fake.requests.length, 0);
  });
});

describe("understanding", () => {
  test("WAV with a question: the question, then the audio as base64 input_audio, format wav", async () => {
    const audio = wav(1);
    const { text } = await source.understand(understandRequest(audio, "How many speakers are there?"));
    assert.equal(text, `Fake answer to "How many speakers are there?" about ${audio.byteLength} bytes of wav audio.`);
    const r = only();
    assert.equal(r.path, "/v1/chat/completions");
    assert.equal(r.headers.authorization, "Bearer [redacted]");
    assert.equal(r.headers["content-type"], "application/json");
    assert.deepEqual(r.body, {
      model: "gpt-4o-audio-preview",
      modalities: ["text"],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "How many speakers are there?" },
            { type: "input_audio", input_audio: { data: Buffer.from(audio).toString("base64").length, format: "wav" } },
          ],
        },
      ],
    });
  });

  test("MP3: format mp3, and the fake decoded exactly the bytes sent", async () => {
    const audio = mp3(1);
    const { text } = await source.understand(understandRequest(audio, "What instrument is this?"));
    assert.equal(text, `Fake answer to "What instrument is this?" about ${audio.byteLength} bytes of mp3 audio.`);
    const body = only().body as { messages: { content: { input_audio?: { data: number; format: string } }[] }[] };
    assert.deepEqual(body.messages[0].content[1].input_audio, { data: Math.ceil(audio.byteLength / 3) * 4, format: "mp3" });
  });

  for (const prompt of [null, "", "   "]) {
    test(`no question (${JSON.stringify(prompt)}): the default question is asked`, async () => {
      const audio = wav(0.5);
      const { text } = await source.understand(understandRequest(audio, prompt));
      assert.equal(text, `Fake answer to ${JSON.stringify(DEFAULT_UNDERSTAND_PROMPT)} about ${audio.byteLength} bytes of wav audio.`);
      const body = only().body as { messages: { content: { text?: string }[] }[] };
      assert.equal(body.messages[0].content[0].text, DEFAULT_UNDERSTAND_PROMPT);
    });
  }

  for (const [label, audio] of [
    ["M4A", m4aLike()],
    ["Ogg", withSignature("OggS")],
    ["FLAC", withSignature("fLaC")],
    ["an unknown format", withSignature("not audio at all")],
  ] as const) {
    test(`${label} is refused as unsupported before anything is sent`, async () => {
      const err = await upstreamFailure(source.understand(understandRequest(audio, "What is this?")));
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.unsupported, true);
      assert.equal(err.retryable, false);
      assert.equal(err.contentRejected, false);
      assert.match(err.message, /WAV or MP3/);
      assert.equal(fake.requests.length, 0);
    });
  }
});

describe("models", () => {
  test("overrides replace the upstream id per gateway model; other keys are ignored", async () => {
    const s = createOpenAIAudioSource({
      name: "openai-audio",
      baseUrl: `${fake.url}/v1`,
      apiKey: OPENAI_KEY,
      models: { "host1-transcribe-1": "whisper-1", "host2-audio-understand-1": "gpt-4o-mini-audio-preview", "imgC-v3": "dall-e-3", "text-model": "some model with spaces" },
    });
    try {
      await s.transcribe(transcribeRequest(wav(0.5)));
      await s.understand(understandRequest(mp3(0.5), "Hi?"));
      const [t, u] = fake.requests;
      assert.equal((t.body as { model: string }).model, "whisper-1");
      assert.equal((u.body as { model: string }).model, "gpt-4o-mini-audio-preview");
    } finally {
      await s.close();
    }
  });

  test("a gateway model the table lacks gets the capability's default id", async () => {
    await source.transcribe(transcribeRequest(wav(0.5), { model: "host1-transcribe-2" }));
    await source.understand(understandRequest(wav(0.5), "Hi?", { model: "host2-audio-understand-2" }));
    const [t, u] = fake.requests;
    assert.equal((t.body as { model: string }).model, "gpt-4o-mini-transcribe");
    assert.equal((u.body as { model: string }).model, "gpt-4o-audio-preview");
  });

  test("a bad override value of an audio key stops the start", () => {
    assert.throws(
      () => createOpenAIAudioSource({ name: "x", apiKey: OPENAI_KEY, models: { "host1-transcribe-1": "white space" } }),
      (err: unknown) => err instanceof RangeError && /host1-transcribe-1/.test(err.message),
    );
  });
});

describe("signals", () => {
  test("an already aborted signal rejects with its reason and sends nothing", async () => {
    const controller = new AbortController();
    const reason = new Error("caller went away");
    controller.abort(reason);
    await assert.rejects(source.transcribe(transcribeRequest(wav()), controller.signal), (err) => err === reason);
    await assert.rejects(source.understand(understandRequest(wav(), "?"), controller.signal), (err) => err === reason);
    assert.equal(fake.requests.length, 0);
  });
});
