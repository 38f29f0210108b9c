/**
 * The typed client's realtime sockets (packages/client/src/realtime.ts: `client.realtime.speech`,
 * `client.realtime.transcription`, D42, D43) against a real gateway on loopback (SQLite and PostgreSQL),
 * served by the simulator: audio events with their alignment, contexts, the end; refusals before the
 * upgrade thrown as the error classes of an HTTP call; errors after it as `RealtimeError` with the close
 * code; the browser mode (the global WebSocket, the key in the query); transcripts of the simulator's own
 * speech; and the money: each socket's usage record says what its events cost.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  Gateway,
  InsufficientBalanceError,
  RateLimitError,
  RealtimeError,
  type SpeechEvent,
  type TranscriptionEvent,
} from "../../packages/client/src/index.ts";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { fundedOrg } from "../helpers/realtime.ts";

const TEXT = "The typed client speaks through the socket. Every word is paid for before it is spoken.";

/** Every event of a socket until it closed normally. */
async function drain<E>(socket: AsyncIterable<E>): Promise<E[]> {
  const out: E[] = [];
  for await (const ev of socket) out.push(ev);
  return out;
}

/** The audio of `events` (of `contextId` when given), concatenated. */
function audioOf(events: SpeechEvent[], contextId?: string): Buffer {
  return Buffer.concat(events.flatMap((e) => (e.type === "audio" && (contextId === undefined || e.contextId === contextId) ? [e.audio] : [])));
}

for (const backend of BACKENDS) {
  describe(`client.realtime against a gateway on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, { REALTIME_HOLD_CHARS: "40" });
    });
    after(async () => {
      await gw?.close();
    });

    const client = (apiKey: string) => new Gateway({ baseUrl: gw.url, apiKey });

    /** The balance equals the ledger; returns it. */
    async function exact(accountId: string): Promise<number> {
      const db = gw.services.db.kysely;
      const balance = (await getBalance(db, accountId))!;
      assert.equal(balance, await ledgerSum(db, accountId));
      return balance;
    }

    /** The newest realtime record of the key's account, through the client. */
    async function lastRecord(c: Gateway, kind: "speech" | "transcription") {
      for (let i = 0; i < 100; i++) {
        const rec = (await c.requests.list({ limit: 5 })).data.find((r) => r.realtime === true && r.kind === kind);
        if (rec && rec.status !== "processing") return rec;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.fail("no settled realtime record");
    }

    test("speech (stream-input): words in, audio events with alignment, final, close 1000; the record's cost", async () => {
      const u = await gw.register();
      const c = client(u.api_key);
      const speech = await c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-flash-v2-5", outputFormat: "pcm_16000", chunkLengthSchedule: [50], voiceSettings: { stability: 0.5 } });
      const words = TEXT.split(" ");
      for (const w of words.slice(0, 7)) speech.send(`${w} `);
      // A flush on stream-input: what is buffered is spoken now, the flush itself costs nothing.
      speech.flush();
      for (const w of words.slice(7)) speech.send(`${w} `);
      speech.keepAlive();
      speech.end();
      const events = await drain(speech);
      assert.deepEqual(await speech.closed, { code: 1000, reason: "", error: null });
      assert.equal(events.at(-1)?.type, "final");
      const pcm = audioOf(events);
      assert.ok(pcm.length / 2 / 16000 > 3, `seconds of speech (${pcm.length} bytes)`);
      const spelled = events.flatMap((e) => (e.type === "audio" ? (e.alignment?.chars ?? []) : [])).join("");
      assert.equal(spelled.trim(), TEXT, "the alignment spells the text");
      const rec = await lastRecord(c, "speech");
      assert.equal(speech.requestId, rec.id, "the 101's X-Svc-Request-Id names the socket's usage record");
      assert.deepEqual([rec.units?.characters, rec.cost_usd, rec.close_code], [Array.from(TEXT).length + 1, ((Array.from(TEXT).length + 1) * 200) / 1e6, 1000]);
      assert.equal(await exact(u.org_id), 500_000 - (Array.from(TEXT).length + 1) * 200);
    });

    test("speech (multi): contexts side by side, closeContext gives each its final, listeners instead of iteration", async () => {
      const u = await gw.register();
      const speech = await client(u.api_key).realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-flash-v2-5", outputFormat: "ulaw_8000", multi: true });
      const finals: (string | null)[] = [];
      const bytes = new Map<string | null, number>();
      speech.on("final", (e) => finals.push(e.contextId));
      speech.on("audio", (e) => bytes.set(e.contextId, (bytes.get(e.contextId) ?? 0) + e.audio.length));
      speech.send("Context a speaks first. ", { contextId: "a", flush: true });
      speech.send("Context b speaks too. ", { contextId: "b" });
      speech.flush("b");
      speech.closeContext("a");
      speech.send("And b goes on. ", { contextId: "b" });
      speech.end();
      const events = await drain(speech);
      assert.deepEqual(events, [], "every event went to a listener");
      assert.equal((await speech.closed).code, 1000);
      assert.deepEqual([...finals].sort(), ["a", "b"]);
      assert.ok((bytes.get("a") ?? 0) > 0 && (bytes.get("b") ?? 0) > 0);
      // Contexts belong to multi-stream-input.
      const one = await client(u.api_key).realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID });
      assert.throws(() => one.send("x", { contextId: "a" }), TypeError);
      assert.throws(() => one.closeContext("a"), TypeError);
      one.close();
      assert.equal((await one.closed).code, 1000);
      await exact(u.org_id);
    });

    test("refusals before the socket opens throw the error classes of an HTTP call", async () => {
      const u = await gw.register();
      const c = client(u.api_key);
      await assert.rejects(c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-v3" }), (e: unknown) => e instanceof BadRequestError && e.code === "realtime_not_supported" && e.status === 400 && e.requestId !== null);
      await assert.rejects(client("gw_not_a_key_000000000000").realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID }), (e: unknown) => e instanceof AuthenticationError && e.code === "auth_error");
      await assert.rejects(c.realtime.transcription({ modelId: "imgA-v4" }), (e: unknown) => e instanceof BadRequestError);
      const poor = await fundedOrg(gw, 0.0001);
      await assert.rejects(client(poor.api_key).realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID }), (e: unknown) => e instanceof InsufficientBalanceError && e.code === "billing_error");
      // Tier 0: one alpha socket at a time (the audio pool, for the socket's life).
      const first = await c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID });
      await assert.rejects(c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID }), (e: unknown) => e instanceof RateLimitError && e.status === 429);
      first.close();
      assert.equal((await first.closed).code, 1000);
      // Nothing listens there: a connection error.
      await assert.rejects(new Gateway({ baseUrl: "http://127.0.0.1:9", apiKey: u.api_key }).realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID }), APIConnectionError);
      await exact(u.org_id);
    });

    test("errors once open: out of funds is a RealtimeError (insufficient_balance, 1008) after the paid audio; an upstream failure 1011", async () => {
      const poor = await fundedOrg(gw, 0.01);
      const c = client(poor.api_key);
      const speech = await c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-flash-v2-5", outputFormat: "pcm_16000" });
      const errors: RealtimeError[] = [];
      speech.on("error", (e) => errors.push(e));
      // 0.01 USD: 50 characters of flash; each sentence is 14 or 15.
      for (let i = 0; i < 20; i++) speech.send(`Sentence ${i + 10} here. `, { flush: true });
      const events: SpeechEvent[] = [];
      await assert.rejects(
        (async () => {
          for await (const ev of speech) events.push(ev);
        })(),
        (e: unknown) => e instanceof RealtimeError && e.code === "insufficient_balance" && e.closeCode === 1008 && e.type === "billing_error" && e.status === 0 && e.requestId === speech.requestId,
      );
      assert.ok(audioOf(events).length > 0, "what was paid for was spoken");
      assert.equal(errors.length, 1);
      assert.equal(errors[0].closeCode, null, "the error event comes before the close");
      const close = await speech.closed;
      assert.equal(close.code, 1008);
      assert.equal(close.error?.code, "insufficient_balance");
      const rec = await lastRecord(c, "speech");
      assert.ok((rec.cost_usd ?? 0) > 0 && (rec.cost_usd ?? 0) <= 0.01);
      await exact(poor.org_id);

      const u = await gw.register();
      const failing = await client(u.api_key).realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID }, { headers: { "x-svc-simulate": "fail" } });
      failing.send("This fails upstream. ", { flush: true });
      await assert.rejects(drain(failing), (e: unknown) => e instanceof RealtimeError && e.code === "provider_error" && e.closeCode === 1011);
      assert.equal(await exact(u.org_id), 500_000, "nothing charged");
    });

    test("browser mode: a browser-style WebSocket class, the key in the query", async () => {
      const u = await gw.register();
      const c = client(u.api_key);
      const speech = await c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-flash-v2-5", outputFormat: "pcm_16000" }, { WebSocket: globalThis.WebSocket });
      speech.send("Hello from a browser-style socket.", { flush: true });
      speech.end();
      const events = await drain(speech);
      assert.ok(audioOf(events).length > 0);
      assert.equal((await speech.closed).code, 1000);
      assert.equal(speech.requestId, (await lastRecord(c, "speech")).id, "a browser learns the record's id from the final message");
      // A refusal is only a failed connection in a browser.
      await assert.rejects(c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-v3" }, { WebSocket: globalThis.WebSocket }), (e: unknown) => e instanceof APIConnectionError && !(e instanceof BadRequestError));
      const stt = await c.realtime.transcription({}, { WebSocket: globalThis.WebSocket });
      assert.match(stt.sessionId, /^req_/);
      stt.close();
      assert.equal((await stt.closed).code, 1000);
      await exact(u.org_id);
    });

    test("transcription: the simulator's speech comes back as its text; odd slices; timestamps; per started second", async () => {
      const u = await gw.register();
      const c = client(u.api_key);
      const speech = await c.realtime.speech({ voiceId: DEMO_ALPHA_VOICE_ID, modelId: "alpha-flash-v2-5", outputFormat: "pcm_16000" });
      const sentence = "The caller asks for the balance of the account.";
      speech.send(sentence, { flush: true });
      speech.end();
      const pcm = audioOf(await drain(speech));
      const before = await exact(u.org_id);

      const stt = await c.realtime.transcription({ audioFormat: "pcm_16000", commitStrategy: "manual", includeTimestamps: true, includeLanguageDetection: true });
      assert.equal(stt.config.audio_format, "pcm_16000");
      assert.equal(stt.sampleRate, 16000);
      // Slices of an odd number of bytes: the client keeps whole 16-bit samples.
      for (let i = 0; i < pcm.length; i += 3333) stt.sendAudio(pcm.subarray(i, i + 3333));
      stt.commit();
      const seen: TranscriptionEvent[] = [];
      for await (const ev of stt) {
        seen.push(ev);
        if (ev.type === "committed_transcript_with_timestamps") stt.close();
      }
      const committed = seen.find((e) => e.type === "committed_transcript");
      assert.equal(committed?.text, sentence);
      assert.ok(seen.some((e) => e.type === "partial_transcript"));
      const withTs = seen.find((e) => e.type === "committed_transcript_with_timestamps");
      assert.ok(withTs && withTs.type === "committed_transcript_with_timestamps");
      assert.equal(withTs.languageCode, "en");
      assert.equal(
        withTs.words
          .filter((w) => w.type === "word")
          .map((w) => w.text)
          .join(" "),
        sentence,
      );
      const seconds = Math.ceil(pcm.length / 32000);
      const rec = await lastRecord(c, "transcription");
      assert.equal(rec.id, stt.sessionId, "session_started names the socket's usage record");
      assert.deepEqual([rec.cost_usd, rec.units?.seconds], [(seconds * 15) / 1e6, seconds]);
      assert.equal(await exact(u.org_id), before - seconds * 15);
    });

    test("transcription out of funds: quota_exceeded and 1008 as a RealtimeError", async () => {
      const poor = await fundedOrg(gw, 0.0001);
      const stt = await client(poor.api_key).realtime.transcription();
      const committed: string[] = [];
      stt.on("committed_transcript", (e) => committed.push(e.text));
      for (let i = 0; i < 20; i++) stt.sendAudio(new Uint8Array(32000).fill(1));
      await assert.rejects(drain(stt), (e: unknown) => e instanceof RealtimeError && e.code === "quota_exceeded" && e.closeCode === 1008);
      await exact(poor.org_id);
    });
  });
}
