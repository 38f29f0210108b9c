/**
 * The transcription socket (D43) on a real gateway on loopback, served by the simulator, on both databases:
 * Scribe realtime's messages, speech the simulator made over the speech socket coming back as its text,
 * silence giving nothing, manual and VAD commits, timestamps and language detection, the money (per started
 * second of audio received, one hold in blocks of 60 s, `quota_exceeded` and 1008 when it runs out), the
 * error message types, and the official ElevenLabs SDK's realtime client unchanged.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ElevenLabsClient } from "@elevenlabs/elevenlabs-js";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { fundedOrg, open, refused, type TestSocket, wsUrl } from "../helpers/realtime.ts";

const SENTENCE = "The caller asks for the balance of the account.";

/** 0.0009 USD per minute: 15 micro-USD per started second. */
const PER_SECOND = 15;

for (const backend of BACKENDS) {
  describe(`transcription sockets on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

    async function exact(accountId: string): Promise<number> {
      const db = gw.services.db.kysely;
      const balance = (await getBalance(db, accountId))!;
      assert.ok(balance >= 0);
      assert.equal(balance, await ledgerSum(db, accountId));
      return balance;
    }

    async function lastRecord(accountId: string) {
      return gw.services.db.kysely.selectFrom("usage_records").selectAll().where("account_id", "=", accountId).where("kind", "=", "transcription").orderBy("created_at", "desc").executeTakeFirstOrThrow();
    }

    /** Speech of `text` from the speech socket, in `format`. */
    async function speak(key: string, text: string, format: string): Promise<Buffer> {
      const s = await open(wsUrl(gw.url, `/v1/audio/speech/${DEMO_ALPHA_VOICE_ID}/stream-input?model_id=alpha-flash-v2-5&output_format=${format}`), { "xi-api-key": key });
      s.send({ text: " " });
      s.send({ text: `${text} `, flush: true });
      s.send({ text: "" });
      assert.equal((await s.waitClose()).code, 1000);
      return s.audio();
    }

    /** Sends `audio` in chunks of about 100 ms of `rate` Hz 16-bit PCM (odd-sized slices are refused: whole samples). */
    function stream(s: TestSocket, audio: Buffer, bytesPer100ms: number, commitAtEnd: boolean): void {
      for (let i = 0; i < audio.length; i += bytesPer100ms) {
        const part = audio.subarray(i, Math.min(audio.length, i + bytesPer100ms));
        s.send({ message_type: "input_audio_chunk", audio_base_64: part.toString("base64"), commit: false, sample_rate: 16000 });
      }
      if (commitAtEnd) s.send({ message_type: "input_audio_chunk", audio_base_64: "", commit: true, sample_rate: 16000 });
    }

    test("manual commit: the simulator's own speech comes back as its text; per started second; one record", async () => {
      const u = await gw.register();
      const audio = await speak(u.api_key, SENTENCE, "pcm_16000");
      const before = await exact(u.org_id);
      const s = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime?model_id=scribe_v2_realtime&audio_format=pcm_16000&commit_strategy=manual"), { "xi-api-key": u.api_key });
      const started = await s.waitFor((m) => m.message_type === "session_started");
      assert.equal((started.config as { audio_format: string }).audio_format, "pcm_16000");
      stream(s, audio, 3200, true);
      const committed = await s.waitFor((m) => m.message_type === "committed_transcript");
      assert.equal(committed.text, SENTENCE);
      assert.ok(s.messages.some((m) => m.message_type === "partial_transcript"), "partials while the audio arrives");
      s.ws.close();
      await s.waitClose();
      const seconds = Math.ceil(audio.length / 32000);
      let rec = await lastRecord(u.org_id);
      for (let i = 0; i < 100 && rec.status === "processing"; i++) {
        await new Promise((r) => setTimeout(r, 20));
        rec = await lastRecord(u.org_id);
      }
      assert.deepEqual([rec.status, Number(rec.cost_micros), Number(rec.duration_ms), Number(rec.realtime)], ["succeeded", seconds * PER_SECOND, seconds * 1000, 1]);
      assert.equal(await exact(u.org_id), before - seconds * PER_SECOND);
    });

    test("vad: silence gives nothing, speech commits after the silence that follows it; timestamps and language", async () => {
      const u = await gw.register();
      const audio = await speak(u.api_key, SENTENCE, "pcm_16000");
      const silence = Buffer.alloc(16000 * 2 * 2);
      const s = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime?audio_format=pcm_16000&commit_strategy=vad&vad_silence_threshold_secs=0.5&include_timestamps=true&include_language_detection=true"), { "xi-api-key": u.api_key });
      await s.waitFor((m) => m.message_type === "session_started");
      stream(s, silence, 3200, false);
      stream(s, audio, 3200, false);
      stream(s, silence, 3200, false);
      const withTs = await s.waitFor((m) => m.message_type === "committed_transcript_with_timestamps");
      assert.equal(withTs.text, SENTENCE);
      assert.equal(withTs.language_code, "en");
      const words = (withTs.words as { text: string; start: number; end: number; type: string }[]).filter((w) => w.type === "word");
      assert.equal(words.map((w) => w.text).join(" "), SENTENCE);
      assert.ok(words[0].start >= 1.9, `the first word starts after the 2 s of silence (${words[0].start})`);
      assert.equal(s.messages.filter((m) => m.message_type === "committed_transcript").length, 1, "one segment: silence alone commits nothing");
      s.ws.close();
      await s.waitClose();
      await exact(u.org_id);
    });

    test("the official ElevenLabs SDK's realtime client, unchanged, through the dialect", async () => {
      const u = await gw.register();
      const audio = await speak(u.api_key, SENTENCE, "pcm_16000");
      const el = new ElevenLabsClient({ apiKey: u.api_key, baseUrl: `${gw.url}/elevenlabs` });
      const { AudioFormat, CommitStrategy, RealtimeEvents } = await import("@elevenlabs/elevenlabs-js");
      const conn = await el.speechToText.realtime.connect({ modelId: "scribe_v2_realtime", audioFormat: AudioFormat.PCM_16000, sampleRate: 16000, commitStrategy: CommitStrategy.MANUAL });
      const text = await new Promise<string>((resolve, reject) => {
        conn.on(RealtimeEvents.ERROR, (e) => reject(new Error(JSON.stringify(e))));
        conn.on(RealtimeEvents.COMMITTED_TRANSCRIPT, (m) => resolve(m.text));
        conn.on(RealtimeEvents.SESSION_STARTED, () => {
          for (let i = 0; i < audio.length; i += 3200) conn.send({ audioBase64: audio.subarray(i, i + 3200).toString("base64") });
          conn.commit();
        });
      });
      assert.equal(text, SENTENCE);
      conn.close();
      await exact(u.org_id);
    });

    test("out of funds: quota_exceeded and 1008; no audio transcribed unpaid", async () => {
      // 0.0001 USD: 6 seconds of audio.
      const u = await fundedOrg(gw, 0.0001);
      const rest = await exact(u.org_id);
      const s = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime"), { "xi-api-key": u.api_key });
      await s.waitFor((m) => m.message_type === "session_started");
      stream(s, Buffer.alloc(16000 * 2 * 120, 1), 32000, false);
      const close = await s.waitClose();
      assert.equal(close.code, 1008);
      assert.equal(s.messages.find((m) => typeof m.error === "string")?.message_type, "quota_exceeded");
      const rec = await lastRecord(u.org_id);
      assert.ok(Number(rec.cost_micros) <= rest);
      assert.equal(Number(rec.cost_micros), Number(rec.duration_ms) / 1000 * PER_SECOND);
      await exact(u.org_id);
    });

    test("errors: a bad chunk is input_error and 1008; a chunk over the limit chunk_size_exceeded; bad query 400", async () => {
      const u = await gw.register();
      const s = await open(wsUrl(gw.url, "/v1/audio/transcriptions/realtime"), { "xi-api-key": u.api_key });
      await s.waitFor((m) => m.message_type === "session_started");
      s.send({ message_type: "input_audio_chunk", audio_base_64: "not base64!!", commit: false });
      assert.equal((await s.waitClose()).code, 1008);
      assert.equal(s.messages.find((m) => typeof m.error === "string")?.message_type, "input_error");
      const big = await open(wsUrl(gw.url, "/elevenlabs/v1/speech-to-text/realtime?audio_format=pcm_48000"), { "xi-api-key": u.api_key });
      await big.waitFor((m) => m.message_type === "session_started");
      big.send({ message_type: "input_audio_chunk", audio_base_64: Buffer.alloc(2 * 1024 * 1024).toString("base64"), commit: false, sample_rate: 48000 });
      assert.equal((await big.waitClose()).code, 1008);
      assert.equal(big.messages.find((m) => typeof m.error === "string")?.message_type, "chunk_size_exceeded");
      const q = await refused(wsUrl(gw.url, "/v1/audio/transcriptions/realtime?audio_format=mp3"), { "xi-api-key": u.api_key });
      assert.equal(q.status, 400);
      const m = await refused(wsUrl(gw.url, "/elevenlabs/v1/speech-to-text/realtime?model_id=alpha-flash-v2-5"), { "xi-api-key": u.api_key });
      assert.equal(m.status, 400);
      assert.equal((m.body as { detail: { status: string } }).detail.status, "invalid_model");
      await exact(u.org_id);
    });
  });
}
