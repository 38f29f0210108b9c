/**
 * The realtime sockets (D42, D43) on real upstream protocols: the gateway configured with `UPSTREAMS` on the
 * loopback fakes of MiniMax's T2A socket (beta) and ElevenLabs' sockets (alpha, and Scribe for the transcribe
 * family), as `npm start` builds them. A chunk that fails before its first audio moves to the family's next
 * source under the same hold (fallback layer 1); one that fails after it ends the socket (`provider_error`,
 * 1011) without charging it; money exact after each; no key in an answer. A transcribe family whose sources
 * have no socket refuses the transcription socket rather than letting the simulator answer for them.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { type ElevenLabsFake, startElevenLabsFake } from "../../fakes/elevenlabs.ts";
import { type MiniMaxFake, startMiniMaxFake } from "../../fakes/minimax.ts";
import { type OpenAIAudioFake, startOpenAIAudioFake } from "../../fakes/openai-audio.ts";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { open, refused, type TestSocket, wsUrl } from "../helpers/realtime.ts";

const EL_KEY = "el-rt-key-5d1c8e3a9b72f0";
const MM_KEY = "mm-rt-key-0f6a2d9c4e81b7";
/** ElevenLabs' "George", a voice of the fake's account and of the gateway's alpha library. */
const GEORGE = "JBFqnCBsd6RMkjVDRZzb";

describe("realtime sockets on the upstream fakes", () => {
  let mmA: MiniMaxFake;
  let mmB: MiniMaxFake;
  let elA: ElevenLabsFake;
  let elB: ElevenLabsFake;
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let betaVoice: string;

  before(async () => {
    mmA = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 5, chunkGapMs: 2 });
    mmB = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 5, chunkGapMs: 2 });
    elA = await startElevenLabsFake({ apiKey: EL_KEY });
    elB = await startElevenLabsFake({ apiKey: EL_KEY });
    const upstreams = [
      { name: "el-a", protocol: "elevenlabs", base_url: elA.url, api_key: "env:RT_EL_KEY", families: ["alpha", "transcribe"] },
      { name: "el-b", protocol: "elevenlabs", base_url: elB.url, api_key: "env:RT_EL_KEY", families: ["alpha"] },
      { name: "mm-a", protocol: "minimax", base_url: mmA.url, api_key: "env:RT_MM_KEY", families: ["beta"] },
      { name: "mm-b", protocol: "minimax", base_url: mmB.url, api_key: "env:RT_MM_KEY", families: ["beta"] },
    ];
    gw = await startGateway("sqlite", { RT_EL_KEY: EL_KEY, RT_MM_KEY: MM_KEY, UPSTREAMS: JSON.stringify(upstreams) });
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000, per_model_rpm: 100_000 } });
    betaVoice = mmA.systemVoiceIds()[0];
  });
  after(async () => {
    await gw?.close();
    await Promise.all([mmA, mmB, elA, elB].map((f) => f?.close()));
  });

  async function exact(): Promise<number> {
    const db = gw.services.db.kysely;
    const balance = (await getBalance(db, user.org_id))!;
    assert.ok(balance >= 0);
    assert.equal(balance, await ledgerSum(db, user.org_id));
    return balance;
  }

  async function lastRecord() {
    return gw.services.db.kysely.selectFrom("usage_records").selectAll().where("account_id", "=", user.org_id).where("realtime", "=", 1).orderBy("created_at", "desc").executeTakeFirstOrThrow();
  }

  /** Speaks `lines` (each flushed) on a `stream-input` socket and waits for its close. */
  async function speak(voice: string, query: string, lines: string[], headers: Record<string, string> = {}): Promise<TestSocket> {
    const s = await open(wsUrl(gw.url, `/v1/audio/speech/${voice}/stream-input?${query}`), { "xi-api-key": user.api_key, ...headers });
    s.send({ text: " " });
    for (const l of lines) s.send({ text: `${l} `, flush: true });
    s.send({ text: "" });
    await s.waitClose();
    return s;
  }

  function assertNoKey(s: TestSocket): void {
    const all = JSON.stringify(s.messages) + (s.closed?.reason ?? "");
    assert.ok(!all.includes(EL_KEY) && !all.includes(MM_KEY), "no upstream key in what the client saw");
  }

  test("beta on MiniMax's socket: one valid stream (192 kbps MP3 made locally), estimated alignment, exact money", async () => {
    const before = await exact();
    const s = await speak(betaVoice, "model_id=beta-speech-turbo&output_format=mp3_44100_192", ["A beta voice speaks over MiniMax.", "Then a second chunk follows."]);
    assert.equal(s.closed?.code, 1000);
    const meta = await parseBuffer(s.audio(), { mimeType: "audio/mpeg" });
    assert.equal(meta.format.sampleRate, 44100);
    assert.equal(meta.format.bitrate, 192000);
    const chars = s.messages.flatMap((m) => ((m.alignment as { chars?: string[] } | null)?.chars ?? [])).join("");
    assert.equal(chars, "A beta voice speaks over MiniMax. Then a second chunk follows. ");
    const rec = await lastRecord();
    const price = Number(rec.characters) * 90;
    assert.deepEqual([rec.status, Number(rec.cost_micros), Number(rec.fallback_layer)], ["succeeded", price, 0]);
    assert.equal(await exact(), before - price);
    assertNoKey(s);
    assert.equal(mmA.sockets.length > 0, true, "served by the first MiniMax source");
  });

  test("failover before a chunk's first audio: the next source speaks it under the same hold (layer 1)", async () => {
    const before = await exact();
    mmA.setMarkers(["1002"]);
    try {
      const usedB = mmB.sockets.length;
      const s = await speak(betaVoice, "model_id=beta-speech-turbo&output_format=pcm_16000", ["The first source fails before any audio."]);
      assert.equal(s.closed?.code, 1000);
      assert.ok(s.audio().length > 0);
      assert.ok(mmB.sockets.length > usedB, "the second source served it");
      const rec = await lastRecord();
      assert.deepEqual([rec.status, Number(rec.fallback_layer)], ["succeeded", 1]);
      const entries = await gw.services.db.kysely.selectFrom("ledger_entries").select("kind").where("request_id", "=", rec.id).execute();
      assert.deepEqual(entries.map((e) => e.kind).sort(), ["charge", "hold", "hold_release"], "one hold, one charge: one generation paid");
      assert.equal(await exact(), before - Number(rec.cost_micros));
    } finally {
      mmA.setMarkers([]);
    }
  });

  test("a failure after a chunk's first audio: provider_error, 1011, the chunk not charged", async () => {
    const before = await exact();
    const s = await speak(betaVoice, "model_id=beta-speech-turbo&output_format=pcm_16000", ["This chunk breaks off [fake:ws-fail-after] after its first audio."]);
    assert.equal(s.closed?.code, 1011);
    assert.equal(s.messages.find((m) => typeof m.error === "string")?.error, "provider_error");
    const rec = await lastRecord();
    assert.deepEqual([rec.status, Number(rec.cost_micros), Number(rec.close_code)], ["failed", 0, 1011]);
    assert.equal(await exact(), before);
    assertNoKey(s);
  });

  test("alpha on ElevenLabs' socket with failover from a source that answers 429 at the upgrade", async () => {
    const before = await exact();
    elA.setMarkers(["429"]);
    try {
      const s = await speak(GEORGE, "model_id=eleven_flash_v2_5&output_format=pcm_22050", ["ElevenLabs speaks through the gateway."]);
      assert.equal(s.closed?.code, 1000);
      assert.ok(s.audio().length > 0);
      const chars = s.messages.flatMap((m) => ((m.alignment as { chars?: string[] } | null)?.chars ?? [])).join("");
      assert.ok(chars.includes("ElevenLabs speaks"), `alignment from the source: ${chars}`);
      const rec = await lastRecord();
      assert.deepEqual([rec.status, Number(rec.fallback_layer), Number(rec.cost_micros)], ["succeeded", 1, Number(rec.characters) * 200]);
      assert.equal(await exact(), before - Number(rec.cost_micros));
      assertNoKey(s);
    } finally {
      elA.setMarkers([]);
    }
  });

  test("transcription on ElevenLabs Scribe realtime: partials and a committed transcript, per started second", async () => {
    const before = await exact();
    const s = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime?audio_format=pcm_16000&include_timestamps=true"), { "xi-api-key": user.api_key });
    await s.waitFor((m) => m.message_type === "session_started");
    const tone = Buffer.alloc(16000 * 2 * 3);
    for (let i = 0; i < tone.length / 2; i++) tone.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / 16000)), i * 2);
    for (let i = 0; i < tone.length; i += 6400) s.send({ message_type: "input_audio_chunk", audio_base_64: tone.subarray(i, i + 6400).toString("base64"), commit: false, sample_rate: 16000 });
    s.send({ message_type: "input_audio_chunk", audio_base_64: "", commit: true, sample_rate: 16000 });
    const committed = await s.waitFor((m) => m.message_type === "committed_transcript_with_timestamps");
    assert.equal(typeof committed.text, "string");
    s.ws.close();
    await s.waitClose();
    let rec = await lastRecord();
    for (let i = 0; i < 100 && rec.status === "processing"; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rec = await lastRecord();
    }
    assert.deepEqual([rec.kind, Number(rec.cost_micros), Number(rec.duration_ms)], ["transcription", 3 * 15, 3000]);
    assert.equal(await exact(), before - 45);
    assertNoKey(s);
  });
});

describe("a transcribe family served only by sources without a socket", () => {
  let oa: OpenAIAudioFake;
  let gw: TestGateway;
  before(async () => {
    oa = await startOpenAIAudioFake({ apiKey: "sk-rt-oa-1f2e3d4c5b6a", latencyMs: 0 });
    const upstreams = [{ name: "oa", protocol: "openai", base_url: `${oa.url}/v1`, api_key: "sk-rt-oa-1f2e3d4c5b6a", families: ["transcribe"] }];
    gw = await startGateway("sqlite", { UPSTREAMS: JSON.stringify(upstreams) });
  });
  after(async () => {
    await gw?.close();
    await oa?.close();
  });

  test("its socket is refused (400 realtime_not_supported), never answered by the simulator in its place; a test key is", async () => {
    const u = await gw.register();
    const r = await refused(wsUrl(gw.url, "/v1/audio/transcriptions/realtime"), { "xi-api-key": u.api_key });
    assert.equal(r.status, 400);
    assert.equal((r.body as { error: { code: string } }).error.code, "realtime_not_supported");
    const key = await gw.request("POST", "/v1/auth/keys", { token: u.session_token, body: { name: "t", mode: "test" } });
    const s = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime"), { "xi-api-key": key.json.api_key as string });
    await s.waitFor((m) => m.message_type === "session_started");
    s.ws.close();
    await s.waitClose();
  });
});
