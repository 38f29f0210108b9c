/**
 * The MiniMax fake's T2A WebSocket is strict (fakes/minimax-realtime.ts): it refuses what MiniMax's socket
 * reference says MiniMax refuses, in MiniMax's shapes (`task_failed` with a `base_resp` code, then a close),
 * answers in the documented event shapes with real hex audio, and records what it was sent without the key.
 * Driven by a raw `ws` client, not by the adapter.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { MM_KEY } from "./helpers.ts";
import { assertFailed, rawT2a, taskStart, walkMp3 } from "./socket-helpers.ts";

let fake: MiniMaxFake;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 2, chunkGapMs: 2, taskStartMs: 30 });
});

after(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

/** Opens a socket, sends `task_start` and waits for `task_started`. */
async function started(start: Record<string, unknown> = taskStart()) {
  const c = await rawT2a(fake.url);
  await c.waitFor((m) => m.event === "connected_success");
  c.send(start);
  await c.waitFor((m) => m.event === "task_started");
  return c;
}

describe("the exchange in MiniMax's shapes", () => {
  test("connected_success, task_started, several task_continued with hex audio (the last is_final), task_finished, close", async () => {
    const c = await started();
    c.send({ event: "task_continue", text: "Hello from the socket fake." });
    const final = await c.waitFor((m) => m.event === "task_continued" && m.is_final === true);
    c.send({ event: "task_finish" });
    await c.waitFor((m) => m.event === "task_finished");
    assert.equal(await c.closed(), 1000);

    const [hello, startedMsg] = c.messages;
    assert.equal(hello.event, "connected_success");
    assert.equal(startedMsg.event, "task_started");
    for (const m of c.messages) {
      assert.deepEqual(Object.keys(m).sort().filter((k) => ["base_resp", "session_id", "trace_id"].includes(k)), ["base_resp", "session_id", "trace_id"]);
      assert.deepEqual(m.base_resp, { status_code: 0, status_msg: "success" });
      assert.equal(m.session_id, hello.session_id, "one session id for the connection");
      assert.match(String(m.trace_id), /^[0-9a-f]{32}$/);
    }
    const audio = c.messages.filter((m) => m.event === "task_continued");
    assert.ok(audio.length >= 3, `${audio.length} audio messages`);
    assert.ok(audio.slice(0, -1).every((m) => m.is_final === false));
    const bytes = Buffer.concat(audio.map((m) => Buffer.from((m.data as { audio: string }).audio, "hex")));
    assert.ok(audio.every((m) => /^[0-9a-f]+$/.test((m.data as { audio: string }).audio)), "hex, not base64");
    const { frames, end } = walkMp3(bytes);
    assert.equal(end, bytes.length, "decodable MP3: frames only");
    assert.ok(frames.every((f) => f.sampleRate === 32000 && f.kbps === 128));
    const extra = final.extra_info as Record<string, unknown>;
    assert.equal(extra.audio_format, "mp3");
    assert.equal(extra.audio_sample_rate, 32000);
    assert.equal(extra.usage_characters, [..."Hello from the socket fake."].length);
  });

  test("texts queue: two task_continue sent back to back are answered in order, each ending with is_final", async () => {
    const c = await started(taskStart({ audio_setting: { format: "pcm", sample_rate: 16000 } }));
    c.send({ event: "task_continue", text: "First." });
    c.send({ event: "task_continue", text: "The second text is longer." });
    c.send({ event: "task_finish" });
    await c.waitFor((m) => m.event === "task_finished");
    const audio = c.messages.filter((m) => m.event === "task_continued");
    const cut = audio.findIndex((m) => m.is_final === true);
    const lens = [audio.slice(0, cut + 1), audio.slice(cut + 1)].map((ms) => ms.reduce((n, m) => n + (m.data as { audio: string }).audio.length / 2, 0));
    assert.deepEqual(lens, [Math.round(0.36 * 16000) * 2, Math.round(0.06 * 26 * 16000) * 2]);
    assert.equal(audio.at(-1)?.is_final, true);
  });

  test("pcmu_raw is G.711 mu-law at 8 kHz (one byte per sample)", async () => {
    const c = await started(taskStart({ audio_setting: { format: "pcmu_raw", sample_rate: 8000 } }));
    c.send({ event: "task_continue", text: "Mu-law." });
    await c.waitFor((m) => m.is_final === true);
    const bytes = c.messages.filter((m) => m.event === "task_continued").reduce((n, m) => n + (m.data as { audio: string }).audio.length / 2, 0);
    assert.equal(bytes, Math.round(0.42 * 8000));
    c.ws.close();
  });

  test("what it was sent is recorded, the key cut out; the upgrade is a GET in requests", async () => {
    const c = await started();
    c.send({ event: "task_continue", text: "Recorded." });
    await c.waitFor((m) => m.is_final === true);
    c.send({ event: "task_finish" });
    await c.closed();
    const [sock] = fake.sockets;
    assert.equal(sock.headers.authorization, "Bearer [redacted]");
    assert.deepEqual(sock.received.map((m) => (m as { event: string }).event), ["task_start", "task_continue", "task_finish"]);
    assert.ok(!JSON.stringify(fake.sockets).includes(MM_KEY));
    assert.ok(sock.sent.some((m) => /^<\d+ hex digits>$/.test(String((m.data as { audio?: string } | null)?.audio))), "audio recorded by length");
    assert.deepEqual(fake.requests.map((r) => [r.method, r.path, r.headers.authorization]), [["GET", "/ws/v1/t2a_v2", "Bearer [redacted]"]]);
  });
});

describe("what MiniMax refuses, the fake refuses", () => {
  const refusals: [string, Record<string, unknown>, number, RegExp][] = [
    ["an unknown model (2013 naming it)", taskStart({ model: "speech-9.9-hd" }), 2013, /model speech-9\.9-hd is not supported/],
    ["no model", taskStart({ model: undefined }), 2013, /model is required/],
    ["no voice_setting", taskStart({ voice_setting: undefined }), 2013, /voice_setting is required/],
    ["no voice_id", taskStart({ voice_setting: { speed: 1 } }), 2013, /voice_id is required/],
    ["speed 3", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", speed: 3 } }), 2013, /speed/],
    ["speed 0.4", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", speed: 0.4 } }), 2013, /speed/],
    ["vol 0", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", vol: 0 } }), 2013, /vol/],
    ["vol 11", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", vol: 11 } }), 2013, /vol/],
    ["pitch 13", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", pitch: 13 } }), 2013, /pitch/],
    ["pitch 1.5", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", pitch: 1.5 } }), 2013, /pitch/],
    ["emotion bored", taskStart({ voice_setting: { voice_id: "English_Graceful_Lady", emotion: "bored" } }), 2013, /emotion/],
    ["sample_rate 48000", taskStart({ audio_setting: { format: "mp3", sample_rate: 48000 } }), 2013, /sample_rate/],
    ["bitrate 192000", taskStart({ audio_setting: { format: "mp3", sample_rate: 44100, bitrate: 192000 } }), 2013, /bitrate/],
    ["format ogg", taskStart({ audio_setting: { format: "ogg" } }), 2013, /format should be one of/],
    ["channel 3", taskStart({ audio_setting: { format: "pcm", channel: 3 } }), 2013, /channel/],
    ["an unknown voice (2042)", taskStart({ voice_setting: { voice_id: "No_Such_Voice" } }), 2042, /voice id not exist/],
  ];
  for (const [label, start, code, message] of refusals) {
    test(`task_start with ${label}: task_failed ${code}, then close`, async () => {
      const c = await rawT2a(fake.url);
      await c.waitFor((m) => m.event === "connected_success");
      c.send(JSON.parse(JSON.stringify(start)));
      assertFailed(await c.waitFor((m) => m.event === "task_failed"), code, message);
      await c.closed();
      assert.ok(!c.messages.some((m) => m.event === "task_started"));
    });
  }

  test("a retired model answers 2013 naming it", async () => {
    fake.setRetired(["speech-2.6-hd"]);
    try {
      const c = await rawT2a(fake.url);
      c.send(taskStart({ model: "speech-2.6-hd" }));
      assertFailed(await c.waitFor((m) => m.event === "task_failed"), 2013, /model speech-2\.6-hd is not supported/);
    } finally {
      fake.setRetired([]);
    }
  });

  test("the first message must be task_start (2202)", async () => {
    for (const first of [{ event: "task_continue", text: "Too early." }, { event: "task_finish" }, { event: "hello" }]) {
      const c = await rawT2a(fake.url);
      c.send(first);
      assertFailed(await c.waitFor((m) => m.event === "task_failed"), 2202, /illegal event/);
      await c.closed();
    }
  });

  test("task_continue before task_started (2202), even right after task_start", async () => {
    const c = await rawT2a(fake.url);
    c.send(taskStart());
    c.send({ event: "task_continue", text: "Did not wait." });
    assertFailed(await c.waitFor((m) => m.event === "task_failed"), 2202, /before task_started/);
    assert.ok(!c.messages.some((m) => m.event === "task_started" || m.event === "task_continued"));
  });

  test("a second task_start (2202); a message that is not JSON (2013); text empty (2203) or of 10,000 characters (2204)", async () => {
    const cases: [unknown, number][] = [[taskStart(), 2202], ["not json", 2013], [{ event: "task_continue", text: "  " }, 2203], [{ event: "task_continue", text: "a".repeat(10_000) }, 2204], [{ event: "task_continue", text: 42 }, 2013]];
    for (const [msg, code] of cases) {
      const c = await started();
      c.send(msg);
      assertFailed(await c.waitFor((m) => m.event === "task_failed"), code);
      await c.closed();
    }
  });

  test("a bad or missing key: task_failed 1004 first, then close", async () => {
    for (const key of [`${MM_KEY}-x`, null]) {
      const c = await rawT2a(fake.url, key);
      assertFailed(await c.waitFor((m) => m.event === "task_failed"), 1004, /login fail/);
      await c.closed();
      assert.ok(!c.messages.some((m) => m.event === "connected_success"));
    }
  });

  test("no event for the inactivity limit after the last result: task_failed 2201 and close", async () => {
    const idle = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 2, chunkGapMs: 2, taskStartMs: 2, socketIdleTimeoutMs: 300 });
    try {
      const c = await rawT2a(idle.url);
      c.send(taskStart());
      await c.waitFor((m) => m.event === "task_started");
      c.send({ event: "task_continue", text: "Then silence." });
      await c.waitFor((m) => m.is_final === true);
      const finalAt = Date.now();
      assertFailed(await c.waitFor((m) => m.event === "task_failed", 2000), 2201, /timeout/);
      assert.ok(Date.now() - finalAt >= 250, "counted from the last result");
      await c.closed();
    } finally {
      await idle.close();
    }
  });

  test("another path: HTTP 404 at the upgrade", async () => {
    await assert.rejects(rawT2a(fake.url, MM_KEY, "/ws/v1/other"), /Unexpected server response: 404/);
  });
});

describe("socket markers", () => {
  test("ws-429 for every socket: the upgrade answers HTTP 429 with MiniMax's JSON and Retry-After", async () => {
    fake.setMarkers(["ws-429"]);
    const url = new URL(fake.url);
    const answer = await new Promise<{ status: number; retry: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request({
        host: url.hostname,
        port: url.port,
        path: "/ws/v1/t2a_v2",
        headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", authorization: `Bearer ${MM_KEY}` },
      });
      req.on("response", (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, retry: res.headers["retry-after"], body }));
      });
      req.on("upgrade", () => reject(new Error("upgraded")));
      req.on("error", reject);
      req.end();
    });
    assert.equal(answer.status, 429);
    assert.equal(answer.retry, "1");
    assert.deepEqual(JSON.parse(answer.body), { base_resp: { status_code: 1002, status_msg: "rate limit exceeded(RPM)" } });
  });

  test("ws-fail-before: task_failed 1002 before any audio; ws-fail-after: one audio message, then task_failed 1000", async () => {
    const a = await started();
    a.send({ event: "task_continue", text: "x [fake:ws-fail-before]" });
    assertFailed(await a.waitFor((m) => m.event === "task_failed"), 1002);
    assert.equal(a.messages.filter((m) => m.event === "task_continued").length, 0);

    const b = await started();
    b.send({ event: "task_continue", text: "x [fake:ws-fail-after]" });
    assertFailed(await b.waitFor((m) => m.event === "task_failed"), 1000);
    assert.equal(b.messages.filter((m) => m.event === "task_continued").length, 1);
  });

  test("ws-drop: one audio message, then the connection is destroyed without a close frame", async () => {
    const c = await started();
    c.send({ event: "task_continue", text: "x [fake:ws-drop]" });
    assert.equal(await c.closed(), 1006);
    assert.equal(c.messages.filter((m) => m.event === "task_continued").length, 1);
  });

  test("a marker given for every socket applies to every text", async () => {
    fake.setMarkers(["ws-fail-before"]);
    const c = await started();
    c.send({ event: "task_continue", text: "No marker in the text." });
    assertFailed(await c.waitFor((m) => m.event === "task_failed"), 1002);
  });
});
