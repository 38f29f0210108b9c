/**
 * The fake against MiniMax's own answer types (fixtures.ts: MiniMax-AI/cli `src/types/api.ts`, the
 * fields MiniMax-AI/MiniMax-MCP `minimax_mcp/server.py` reads), and the adapter against the CLI's
 * recorded answers (`test/fixtures/*.json`) served as they are.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { parseJsonExact } from "../../../src/upstreams/minimax/api.ts";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { createMiniMaxVideoSource } from "../../../src/upstreams/minimax/video-source.ts";
import {
  ERROR_QUOTA,
  FILE_RETRIEVE_ANSWER,
  FILE_RETRIEVE_RESPONSE,
  FILE_UPLOAD_RESPONSE,
  MUSIC_RESPONSE,
  shapeMismatch,
  SPEECH_EVENT,
  SPEECH_RESPONSE,
  VIDEO_RESPONSE,
  VIDEO_TASK_PENDING,
  VIDEO_TASK_RESPONSE,
  VIDEO_TASK_SUCCESS,
  VOICE_CLONE_RESPONSE,
  VOICE_DESIGN_RESPONSE,
  VOICE_LIST_RESPONSE,
} from "./fixtures.ts";
import type { Shape } from "./fixtures.ts";
import { MM_KEY, mmFailure, startReplay, videoRequest } from "./helpers.ts";

let fake: MiniMaxFake;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY, videoRunMs: 50, firstChunkMs: 1, chunkGapMs: 1 });
});

after(async () => {
  await fake.close();
});

const auth = { authorization: `Bearer ${MM_KEY}` };

/** Calls the fake as a plain client would and returns the answer read with exact int64 ids. */
async function call(method: "GET" | "POST", path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: body === undefined ? auth : { ...auth, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.equal(res.status, 200);
  return parseJsonExact(await res.text(), ["file_id", "task_id"]) as Record<string, unknown>;
}

function assertShape(value: unknown, shape: Shape): void {
  assert.equal(shapeMismatch(value, shape), null, JSON.stringify(value).slice(0, 300));
}

describe("the fake answers in MiniMax's shapes", () => {
  test("t2a_v2 (cli SpeechResponse) and music_generation (cli MusicResponse)", async () => {
    const speech = await call("POST", "/v1/t2a_v2", {
      model: "speech-02-hd",
      text: "Hello",
      voice_setting: { voice_id: "Wise_Woman", speed: 1, vol: 1, pitch: 0 },
      audio_setting: { format: "mp3", sample_rate: 32000, bitrate: 128000, channel: 1 },
      output_format: "hex",
    });
    assertShape(speech, SPEECH_RESPONSE);
    assert.equal((speech.base_resp as { status_code: number }).status_code, 0);
    const music = await call("POST", "/v1/music_generation", { model: "music-2.5", prompt: "jazz", lyrics: "[Verse]\nla", audio_setting: { format: "mp3", sample_rate: 44100, bitrate: 256000 }, output_format: "hex" });
    assertShape(music, MUSIC_RESPONSE);
  });

  test("streamed t2a_v2: every event has the shape the CLI's stream reader parses", async () => {
    const res = await fetch(`${fake.url}/v1/t2a_v2`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ model: "speech-02-turbo", text: "Hello there", stream: true, voice_setting: { voice_id: "Wise_Woman" }, audio_setting: { format: "pcm", sample_rate: 16000 } }),
    });
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => JSON.parse(e.slice(6)) as Record<string, unknown>);
    assert.ok(events.length >= 3);
    for (const e of events) assertShape(e, SPEECH_EVENT);
    const statuses = events.map((e) => (e.data as { status: number }).status);
    assert.deepEqual(statuses.slice(-1), [2]);
    assert.ok(statuses.slice(0, -1).every((s) => s === 1));
    // Not excluded: the final event repeats the whole clip (what the adapter must not append twice).
    const chunks = events.slice(0, -1).map((e) => (e.data as { audio: string }).audio).join("");
    assert.equal((events.at(-1)?.data as { audio: string }).audio, chunks);
  });

  test("get_voice (cli VoiceListResponse), voice_design (MCP), files/upload (cli FileUploadResponse), voice_clone (MCP)", async () => {
    assertShape(await call("POST", "/v1/get_voice", { voice_type: "system" }), VOICE_LIST_RESPONSE);
    assertShape(await call("POST", "/v1/voice_design", { prompt: "a deep calm voice", preview_text: "Hello." }), VOICE_DESIGN_RESPONSE);
    const form = new FormData();
    form.append("purpose", "voice_clone");
    form.append("file", new Blob([new Uint8Array(64)], { type: "audio/mpeg" }), "ref.mp3");
    const res = await fetch(`${fake.url}/v1/files/upload`, { method: "POST", headers: auth, body: form });
    const text = await res.text();
    assert.match(text, /"file_id":\d{16,}/, "file_id is a bare int64 number");
    const upload = parseJsonExact(text, ["file_id"]) as { file: { file_id: string } };
    assertShape(upload, FILE_UPLOAD_RESPONSE);
    assert.ok(BigInt(upload.file.file_id) > 2n ** 53n);
    const clone = await fetch(`${fake.url}/v1/voice_clone`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: `{"file_id":${upload.file.file_id},"voice_id":"MyVoice_0001"}`,
    });
    assertShape(await clone.json(), VOICE_CLONE_RESPONSE);
    assert.ok(fake.clonedVoiceIds().includes("MyVoice_0001"));
  });

  test("video_generation, query (cli VideoTaskResponse) and files/retrieve (cli FileRetrieveResponse)", async () => {
    const submit = await call("POST", "/v1/video_generation", { model: "MiniMax-Hailuo-02", prompt: "waves", duration: 6, resolution: "768P" });
    assertShape(submit, VIDEO_RESPONSE);
    let query: Record<string, unknown>;
    for (;;) {
      query = await call("GET", `/v1/query/video_generation?task_id=${String(submit.task_id)}`);
      assertShape(query, VIDEO_TASK_RESPONSE);
      if (query.status === "Success") break;
      assert.ok(["Preparing", "Queueing", "Processing"].includes(String(query.status)));
      await new Promise((r) => setTimeout(r, 10));
    }
    const file = await call("GET", `/v1/files/retrieve?file_id=${String(query.file_id)}`);
    assertShape(file, FILE_RETRIEVE_RESPONSE);
  });

  test("a wrong key: HTTP 200 with base_resp 1004 (MCP client.py's auth failure)", async () => {
    const res = await fetch(`${fake.url}/v1/get_voice`, { method: "POST", headers: { authorization: "Bearer nope", "content-type": "application/json" }, body: "{}" });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { base_resp: { status_code: number } }).base_resp.status_code, 1004);
  });

  test("the recorded fixtures have the shapes too", () => {
    assertShape(VIDEO_TASK_PENDING, VIDEO_TASK_RESPONSE);
    assertShape(VIDEO_TASK_SUCCESS, VIDEO_TASK_RESPONSE);
    assertShape(FILE_RETRIEVE_ANSWER, FILE_RETRIEVE_RESPONSE);
  });
});

describe("the adapter on the CLI's recorded answers", () => {
  test("video-task-pending.json is running; video-task-success.json + a retrieve answer succeed with its URL", async () => {
    const pending = await startReplay({ "GET /v1/query/video_generation": VIDEO_TASK_PENDING });
    const done = await startReplay({ "GET /v1/query/video_generation": VIDEO_TASK_SUCCESS, "GET /v1/files/retrieve": FILE_RETRIEVE_ANSWER });
    const a = createMiniMaxVideoSource({ name: "mm-a", baseUrl: pending.url, apiKey: MM_KEY });
    const b = createMiniMaxVideoSource({ name: "mm-b", baseUrl: done.url, apiKey: MM_KEY });
    try {
      assert.deepEqual(await a.poll({ source: "mm-a", requestId: VIDEO_TASK_PENDING.task_id, urls: {} }), { state: "running", progress: null });
      assert.deepEqual(pending.paths, ["/v1/query/video_generation?task_id=106916112212032"]);
      const state = await b.poll({ source: "mm-b", requestId: VIDEO_TASK_SUCCESS.task_id, urls: {} });
      assert.deepEqual(state, {
        state: "succeeded",
        outputs: [{ kind: "url", url: FILE_RETRIEVE_ANSWER.file.download_url, contentType: "video/mp4" }],
        durationSec: null,
        megapixels: null,
        upstreamCostUsd: null,
      });
      assert.equal(done.paths[1], "/v1/files/retrieve?file_id=176844028768320");
      assert.equal(b.isDirectDownloadHost(FILE_RETRIEVE_ANSWER.file.download_url), false);
    } finally {
      await a.close();
      await b.close();
      await pending.close();
      await done.close();
    }
  });

  test("error-rate-limit.json (1028, quota) on a submit: not retryable, code kept", async () => {
    const replay = await startReplay({ "POST /v1/video_generation": ERROR_QUOTA });
    const s = createMiniMaxVideoSource({ name: "mm-q", baseUrl: replay.url, apiKey: MM_KEY });
    try {
      const err = await mmFailure(s.submitVideo(videoRequest()));
      assert.equal(err.code, 1028);
      assert.equal(err.retryable, false);
      assert.match(err.message, /Daily quota exhausted for image-01/);
    } finally {
      await s.close();
      await replay.close();
    }
  });
});
