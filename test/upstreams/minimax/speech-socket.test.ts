/**
 * Realtime speech on MiniMax's T2A WebSocket (D42) against the fake: every gateway format (the pieces of
 * several chunks, concatenated, are one valid stream of exactly that format: MP3 walked frame by frame and
 * read by music-metadata, PCM and mu-law by length), the exact `task_start`, chunk ends, failures mapped
 * to UpstreamError (before and after audio, upgrade refusals, timeouts, abort), the key going only to the
 * base URL's host, reconnection after MiniMax's inactivity close, and `close()`.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { parseBuffer } from "music-metadata";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { createMiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import type { MiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import { MAX_TEXT_CHARS, socketUrl, splitText } from "../../../src/upstreams/minimax/speech-socket.ts";
import { AUDIO_FORMATS, UpstreamError } from "../../../src/upstreams/types.ts";
import type { AudioFormat } from "../../../src/upstreams/types.ts";
import { closedPort } from "../../helpers/recorder.ts";
import { concat, fakeSpeechSec, MM_KEY, mmFailure, seenMessages } from "./helpers.ts";
import { piecesOf, streamRequest, walkMp3 } from "./socket-helpers.ts";

let fake: MiniMaxFake;
let source: MiniMaxSource;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 2, chunkGapMs: 2, taskStartMs: 2 });
  source = createMiniMaxSource({ name: "mm-rt", baseUrl: fake.url, apiKey: MM_KEY, timeoutMs: 3000 });
});

after(async () => {
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(MM_KEY));
});

beforeEach(() => fake.reset());

/** What MiniMax is asked for each gateway format: as the HTTP adapter asks (D26: PCM for 192 kbps MP3 and mu-law). */
const ASKED: Record<AudioFormat, Record<string, unknown>> = {
  mp3_44100_128: { format: "mp3", sample_rate: 44100, bitrate: 128000, channel: 1 },
  mp3_44100_192: { format: "pcm", sample_rate: 44100, channel: 1 },
  mp3_22050_32: { format: "mp3", sample_rate: 22050, bitrate: 32000, channel: 1 },
  pcm_16000: { format: "pcm", sample_rate: 16000, channel: 1 },
  pcm_22050: { format: "pcm", sample_rate: 22050, channel: 1 },
  pcm_24000: { format: "pcm", sample_rate: 24000, channel: 1 },
  pcm_44100: { format: "pcm", sample_rate: 44100, channel: 1 },
  ulaw_8000: { format: "pcm", sample_rate: 8000, channel: 1 },
};

const CHUNKS = ["Hello there, this is the first chunk. ", "A second one follows it. ", "And the third ends it."];

/** Asserts the concatenation `body` of chunks `texts` is one valid stream of `format` of the right length. */
async function assertStream(body: Uint8Array, format: AudioFormat, texts: readonly string[]): Promise<void> {
  const [codec, rate, kbps] = format.split("_");
  const seconds = texts.reduce((s, t) => s + fakeSpeechSec(t), 0);
  if (codec === "pcm") {
    const expected = texts.reduce((n, t) => n + Math.round(fakeSpeechSec(t) * Number(rate)) * 2, 0);
    assert.equal(body.length, expected, "16-bit samples of every chunk, none lost or added");
    return;
  }
  if (codec === "ulaw") {
    const expected = texts.reduce((n, t) => n + Math.round(fakeSpeechSec(t) * 8000), 0);
    assert.equal(body.length, expected, "one mu-law byte per 8 kHz sample of every chunk");
    assert.ok(new Set(body).size > 10, "a tone, not silence");
    return;
  }
  const { frames, end } = walkMp3(body);
  assert.equal(end, body.length, `frames and nothing else, no tag between chunks (the walk stopped at ${end} of ${body.length})`);
  for (const f of frames) {
    assert.equal(f.sampleRate, Number(rate));
    assert.equal(f.kbps, Number(kbps));
  }
  const walked = frames.reduce((s, f) => s + (f.version === "1" ? 1152 : 576) / f.sampleRate, 0);
  // An encoder adds up to about two frames at each end of each chunk's encoding.
  assert.ok(Math.abs(walked - seconds) < 0.12 * texts.length, `${walked} s of frames for ${seconds} s of speech`);
  const meta = await parseBuffer(body, { mimeType: "audio/mpeg" }, { duration: true });
  assert.equal(meta.format.container, "MPEG");
  assert.equal(meta.format.codec, Number(rate) === 44100 ? "MPEG 1 Layer 3" : "MPEG 2 Layer 3");
  assert.equal(meta.format.sampleRate, Number(rate));
  assert.equal(meta.format.numberOfChannels, 1);
  assert.ok(Math.abs((meta.format.duration ?? 0) - walked) < 0.05, `music-metadata reads ${meta.format.duration} s`);
}

describe("every gateway format: several chunks are one valid stream", () => {
  for (const format of AUDIO_FORMATS) {
    test(`${format}: task_start asks ${JSON.stringify(ASKED[format])}; three chunks concatenate into one ${format} stream`, async () => {
      const stream = await source.openSpeechStream(streamRequest({ format }));
      const all: Uint8Array[] = [];
      try {
        for (const text of CHUNKS) {
          const pieces = await piecesOf(stream, text);
          assert.ok(pieces.length >= 2, `${pieces.length} pieces for one chunk`);
          for (const p of pieces) {
            assert.equal(p.alignment, null);
            assert.equal(p.normalizedAlignment, null);
            assert.ok(p.audio.length > 0);
            if (format.startsWith("pcm")) assert.equal(p.audio.length % 2, 0, "whole samples although MiniMax's messages are cut at odd bytes");
          }
          all.push(...pieces.map((p) => p.audio));
        }
      } finally {
        await stream.close();
      }
      await assertStream(concat(all), format, CHUNKS);

      assert.equal(fake.sockets.length, 1, "one connection for the whole stream");
      const [sock] = fake.sockets;
      assert.equal(sock.path, "/ws/v1/t2a_v2");
      assert.equal(sock.headers.authorization, "Bearer [redacted]");
      assert.deepEqual(sock.received, [
        {
          event: "task_start",
          model: "speech-2.8-hd",
          voice_setting: { voice_id: "English_Graceful_Lady", speed: 1, vol: 1, pitch: 0 },
          audio_setting: ASKED[format],
        },
        ...CHUNKS.map((text) => ({ event: "task_continue", text })),
        { event: "task_finish" },
      ]);
      assert.equal(sock.sent.at(-1)?.event, "task_finished");
      for (let i = 0; i < 100 && sock.closeCode === null; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(sock.closeCode, 1000, "MiniMax closed after task_finished");
    });
  }

  test("MP3 sent as files (ID3v2, Info frame, ID3v1 per chunk): only audio frames pass, one stream", async () => {
    for (const format of ["mp3_44100_128", "mp3_22050_32"] as const) {
      const stream = await source.openSpeechStream(streamRequest({ format }));
      const texts = CHUNKS.map((t) => `${t}[fake:mp3-tags]`);
      const all: Uint8Array[] = [];
      try {
        for (const text of texts) all.push(...(await piecesOf(stream, text)).map((p) => p.audio));
      } finally {
        await stream.close();
      }
      const body = concat(all);
      assert.ok(!Buffer.from(body).includes("ID3") && !Buffer.from(body).includes("Info") && !Buffer.from(body).includes("TAG"));
      await assertStream(body, format, texts);
    }
  });

  test("a final message with data: null ends the chunk; its audio is all there", async () => {
    const stream = await source.openSpeechStream(streamRequest({ format: "pcm_24000" }));
    try {
      const text = "Null final [fake:final-null]";
      const body = concat((await piecesOf(stream, text)).map((p) => p.audio));
      await assertStream(body, "pcm_24000", [text]);
      assert.deepEqual(fake.sockets[0].sent.at(-1)?.data, null);
    } finally {
      await stream.close();
    }
  });
});

describe("task_start and chunks", () => {
  test("turbo maps to speech-2.8-turbo; a models override wins; speed is passed, ElevenLabs-only settings are not", async () => {
    const stream = await source.openSpeechStream(streamRequest({ model: "beta-speech-turbo", voiceSettings: { stability: 0.1, style: 0.9, speed: 1.15 } }));
    await stream.close();
    const over = createMiniMaxSource({ name: "mm-over", baseUrl: fake.url, apiKey: MM_KEY, models: { "beta-speech-hd": "speech-2.6-hd" } });
    try {
      await (await over.openSpeechStream(streamRequest())).close();
    } finally {
      await over.close();
    }
    const [turbo, hd] = fake.sockets.map((s) => s.received[0] as Record<string, unknown>);
    assert.equal(turbo.model, "speech-2.8-turbo");
    assert.deepEqual(turbo.voice_setting, { voice_id: "English_Graceful_Lady", speed: 1.15, vol: 1, pitch: 0 });
    assert.ok(!JSON.stringify(turbo).includes("stability") && !JSON.stringify(turbo).includes("style"));
    assert.equal(hd.model, "speech-2.6-hd");
  });

  test("a model that is not beta speech is unsupported and connects to nothing", async () => {
    for (const model of ["beta-music", "alpha-flash-v2-5"]) {
      const err = await mmFailure(source.openSpeechStream(streamRequest({ model })));
      assert.equal(err.unsupported, true);
      assert.equal(err.retryable, false);
    }
    assert.equal(fake.requests.length, 0);
  });

  test("a chunk ends at is_final: the next chunk is only sent after it, and each chunk's audio is its own", async () => {
    const stream = await source.openSpeechStream(streamRequest({ format: "pcm_16000" }));
    try {
      const a = concat((await piecesOf(stream, "Short.")).map((p) => p.audio));
      const received = fake.sockets[0].received.length;
      const finals = fake.sockets[0].sent.filter((m) => m.is_final === true).length;
      assert.equal(received, 2, "task_start and the first task_continue only");
      assert.equal(finals, 1);
      const b = concat((await piecesOf(stream, "A rather longer second chunk of text.")).map((p) => p.audio));
      assert.equal(a.length, Math.round(fakeSpeechSec("Short.") * 16000) * 2);
      assert.equal(b.length, Math.round(fakeSpeechSec("A rather longer second chunk of text.") * 16000) * 2);
    } finally {
      await stream.close();
    }
  });

  test("a text over MiniMax's 10,000 characters is sent in parts cut at white space, one after the other", async () => {
    assert.deepEqual(splitText("aaa bbb ccc", 5), ["aaa ", "bbb ", "ccc"]);
    assert.deepEqual(splitText("abcdefgh", 3), ["abc", "def", "gh"]);
    assert.deepEqual(splitText("short", 5), ["short"]);
    const text = "word ".repeat(2040);
    const stream = await source.openSpeechStream(streamRequest({ format: "ulaw_8000" }));
    try {
      const body = concat((await piecesOf(stream, text)).map((p) => p.audio));
      const sent = fake.sockets[0].received.slice(1).map((m) => (m as { text: string }).text);
      assert.equal(sent.length, 2);
      assert.ok(sent.every((t) => [...t].length <= MAX_TEXT_CHARS && [...t].length < 10_000));
      assert.equal(sent.join(""), text);
      await assertStream(body, "ulaw_8000", sent);
    } finally {
      await stream.close();
    }
  });

  test("an empty chunk yields nothing and sends nothing", async () => {
    const stream = await source.openSpeechStream(streamRequest());
    try {
      assert.deepEqual(await piecesOf(stream, "   "), []);
      assert.equal(fake.sockets[0].received.length, 1);
    } finally {
      await stream.close();
    }
  });

  test("close() during a chunk ends it with an error; close() is idempotent; a closed stream refuses chunks", async () => {
    const stream = await source.openSpeechStream(streamRequest());
    const it = stream.synthesize("Slow words [fake:slow]")[Symbol.asyncIterator]();
    const pending = it.next();
    setTimeout(() => void stream.close(), 100);
    const err = await mmFailure(pending);
    assert.equal(err.retryable, false);
    await stream.close();
    await mmFailure(piecesOf(stream, "more"));
  });

  test("a chunk abandoned part-way drops its connection; the next chunk opens a new task and works", async () => {
    const stream = await source.openSpeechStream(streamRequest({ format: "pcm_22050" }));
    try {
      for await (const piece of stream.synthesize("Abandoned after the first piece.")) {
        assert.ok(piece.audio.length > 0);
        break;
      }
      const text = "The next chunk.";
      const body = concat((await piecesOf(stream, text)).map((p) => p.audio));
      await assertStream(body, "pcm_22050", [text]);
      assert.equal(fake.sockets.length, 2);
      assert.equal((fake.sockets[1].received[0] as Record<string, unknown>).event, "task_start");
    } finally {
      await stream.close();
    }
  });
});

describe("failures", () => {
  test("task_failed before any audio (retryable code): retryable, nothing yielded", async () => {
    for (const marker of ["ws-fail-before", "1002"]) {
      const stream = await source.openSpeechStream(streamRequest());
      const got: unknown[] = [];
      const err = await mmFailure((async () => {
        for await (const p of stream.synthesize(`Fails [fake:${marker}]`)) got.push(p);
      })());
      assert.equal(got.length, 0);
      assert.equal(err.retryable, true);
      assert.equal(err.code, 1002);
      assert.match(err.message, /MiniMax error 1002: rate limit exceeded\(RPM\)$/);
      await stream.close();
    }
  });

  test("content refusal (1026) and bad parameters (2013): not retryable", async () => {
    const stream = await source.openSpeechStream(streamRequest());
    const err = await mmFailure(piecesOf(stream, "bad [fake:1026]"));
    assert.equal(err.contentRejected, true);
    assert.equal(err.retryable, false);
    await stream.close();
    const again = await source.openSpeechStream(streamRequest());
    const err2 = await mmFailure(piecesOf(again, "bad [fake:2013]"));
    assert.equal(err2.retryable, false);
    assert.equal(err2.modelNotFound, false);
    await again.close();
  });

  test("failure after the first audio message: some audio came, then a retryable error", async () => {
    for (const marker of ["ws-fail-after", "ws-drop"]) {
      const stream = await source.openSpeechStream(streamRequest({ format: "pcm_24000" }));
      const got: unknown[] = [];
      const err = await mmFailure((async () => {
        for await (const p of stream.synthesize(`Breaks midway [fake:${marker}]`)) got.push(p);
      })());
      assert.ok(got.length >= 1, `${marker}: audio before the failure`);
      assert.equal(err.retryable, true, marker);
      assert.equal(err.kind, marker === "ws-drop" ? "network" : "http");
      await stream.close();
    }
  });

  test("connection dropped before any audio: retryable network error", async () => {
    const stream = await source.openSpeechStream(streamRequest());
    const err = await mmFailure(piecesOf(stream, "Dropped [fake:ws-drop-before]"));
    assert.equal(err.retryable, true);
    assert.equal(err.kind, "network");
    await stream.close();
  });

  test("an unknown voice: voiceUnavailable (2042), at open", async () => {
    const err = await mmFailure(source.openSpeechStream(streamRequest({ voiceId: "svc_gone_voice_1" })));
    assert.equal(err.voiceUnavailable, true);
    assert.equal(err.retryable, false);
    assert.equal(err.code, 2042);
  });

  test("a model MiniMax no longer has: modelNotFound naming the upstream id (2013, D35)", async () => {
    fake.setRetired(["speech-2.8-hd"]);
    try {
      const err = await mmFailure(source.openSpeechStream(streamRequest()));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "speech-2.8-hd");
      assert.equal(err.retryable, false);
    } finally {
      fake.setRetired([]);
    }
  });

  test("a bad key: 1004, not retryable, the key in no message", async () => {
    const wrong = createMiniMaxSource({ name: "mm-wrong", baseUrl: fake.url, apiKey: `${MM_KEY}-wrong`, timeoutMs: 3000 });
    try {
      const err = await mmFailure(wrong.openSpeechStream(streamRequest()));
      assert.equal(err.code, 1004);
      assert.equal(err.retryable, false);
      assert.ok(!err.message.includes(`${MM_KEY}-wrong`));
    } finally {
      await wrong.close();
    }
    fake.setMarkers(["echo-key"]);
    const err = await mmFailure(source.openSpeechStream(streamRequest()));
    assert.match(err.message, /\[redacted\]/);
  });

  test("the upgrade refused: 429 and 500 retryable, 401 not", async () => {
    for (const [marker, status, retryable] of [["ws-429", 429, true], ["ws-500", 500, true], ["ws-401", 401, false]] as const) {
      fake.setMarkers([marker]);
      const err = await mmFailure(source.openSpeechStream(streamRequest()));
      assert.equal(err.status, status);
      assert.equal(err.retryable, retryable, marker);
      assert.equal(err.kind, "http");
    }
  });

  test("bad hex: a retryable malformed answer", async () => {
    const stream = await source.openSpeechStream(streamRequest());
    const err = await mmFailure(piecesOf(stream, "Bad [fake:bad-hex]"));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
    await stream.close();
  });

  test("no audio message within the timeout: retryable timeout", async () => {
    const quick = createMiniMaxSource({ name: "mm-quick", baseUrl: fake.url, apiKey: MM_KEY, timeoutMs: 300 });
    try {
      const stream = await quick.openSpeechStream(streamRequest());
      const started = Date.now();
      const err = await mmFailure(piecesOf(stream, "Never answered [fake:hang]"));
      assert.equal(err.kind, "timeout");
      assert.equal(err.retryable, true);
      assert.ok(Date.now() - started < 2000);
      await stream.close();
    } finally {
      await quick.close();
    }
  });

  test("connect timeout: a server that never answers the upgrade", async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => void sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", () => resolve()));
    const port = (silent.address() as AddressInfo).port;
    const slow = createMiniMaxSource({ name: "mm-silent", baseUrl: `http://127.0.0.1:${port}`, apiKey: MM_KEY, timeoutMs: 3000, connectTimeoutMs: 200 });
    try {
      const started = Date.now();
      const err = await mmFailure(slow.openSpeechStream(streamRequest()));
      assert.equal(err.kind, "timeout");
      assert.equal(err.retryable, true);
      assert.ok(Date.now() - started < 1500);
    } finally {
      await slow.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test("connection refused: retryable network error", async () => {
    const port = await closedPort();
    const dead = createMiniMaxSource({ name: "mm-dead", baseUrl: `http://127.0.0.1:${port}`, apiKey: MM_KEY });
    try {
      const err = await mmFailure(dead.openSpeechStream(streamRequest()));
      assert.equal(err.kind, "network");
      assert.equal(err.retryable, true);
    } finally {
      await dead.close();
    }
  });

  test("the caller's abort is rethrown as it is, at open and during a chunk", async () => {
    const reason = new Error("caller went away");
    const atOpen = new AbortController();
    atOpen.abort(reason);
    await assert.rejects(source.openSpeechStream(streamRequest(), atOpen.signal), (err) => err === reason);

    const stream = await source.openSpeechStream(streamRequest());
    const during = new AbortController();
    const pending = piecesOf(stream, "Hanging [fake:hang]", during.signal);
    setTimeout(() => during.abort(reason), 50);
    await assert.rejects(pending, (err) => err === reason);
    await stream.close();
  });

  test("errors are UpstreamErrors", async () => {
    fake.setMarkers(["ws-429"]);
    await assert.rejects(source.openSpeechStream(streamRequest()), (err) => err instanceof UpstreamError);
  });
});

describe("where the key goes, and the connection's life", () => {
  test("the socket URL is the base URL's host: ws for http, wss for https, a base path kept", () => {
    assert.equal(socketUrl(new URL("https://api.minimax.io")).href, "wss://api.minimax.io/ws/v1/t2a_v2");
    assert.equal(socketUrl(new URL("http://127.0.0.1:8080/proxy/")).href, "ws://127.0.0.1:8080/proxy/ws/v1/t2a_v2");
  });

  test("a redirect at the upgrade is not followed: the key reaches only the configured host", async () => {
    fake.setMarkers(["ws-redirect"]);
    const err = await mmFailure(source.openSpeechStream(streamRequest()));
    assert.equal(err.retryable, false);
    assert.equal(err.status, 307);
    const upgrades = fake.requests.filter((r) => r.path === "/ws/v1/t2a_v2");
    assert.equal(upgrades.length, 1, "the redirect's other host was never asked");
    assert.equal(upgrades[0].headers.host, new URL(fake.url).host);
    assert.equal(fake.sockets.length, 0);
  });

  test("MiniMax's inactivity close between chunks: the next chunk opens a new task and is spoken", async () => {
    const idleFake = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 2, chunkGapMs: 2, taskStartMs: 2, socketIdleTimeoutMs: 300 });
    const idleSource = createMiniMaxSource({ name: "mm-idle", baseUrl: idleFake.url, apiKey: MM_KEY, timeoutMs: 3000 });
    try {
      const stream = await idleSource.openSpeechStream(streamRequest({ format: "ulaw_8000" }));
      const first = concat((await piecesOf(stream, "Before the pause.")).map((p) => p.audio));
      await new Promise((resolve) => setTimeout(resolve, 800));
      assert.equal((idleFake.sockets[0].sent.at(-1)?.base_resp as { status_code: number }).status_code, 2201);
      const second = concat((await piecesOf(stream, "After the pause.")).map((p) => p.audio));
      await assertStream(concat([first, second]), "ulaw_8000", ["Before the pause.", "After the pause."]);
      assert.equal(idleFake.sockets.length, 2);
      await stream.close();
    } finally {
      await idleSource.close();
      await idleFake.close();
    }
  });
});
