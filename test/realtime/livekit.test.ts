/**
 * The clients voice-agent developers use (D42, D43), unchanged, against a real gateway on loopback: LiveKit's
 * ElevenLabs plugin for Node (`@livekit/agents-plugin-elevenlabs`, pinned) with its base URL pointed at the
 * gateway's ElevenLabs dialect, for text-to-speech (its `multi-stream-input` socket, one context per
 * stream, `flush`, `close_context`, `isFinal` with `contextId`) and for realtime transcription (its Scribe
 * realtime socket, with language detection on, so it waits for `committed_transcript_with_timestamps`).
 * The speech the TTS made, fed to the STT, comes back as its text (the simulator's watermark).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { initializeLogger, stt as sttTypes, tts as ttsTypes } from "@livekit/agents";
import * as elevenlabs from "@livekit/agents-plugin-elevenlabs";
import { AudioFrame } from "@livekit/rtc-node";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

initializeLogger({ pretty: false, level: "warn" });

const TEXT = "Thank you for calling. Your balance is twelve dollars and fifty cents. Is there anything else I can help with?";

describe("LiveKit's ElevenLabs plugin through the gateway", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  async function exact(accountId: string): Promise<number> {
    const db = gw.services.db.kysely;
    const balance = (await getBalance(db, accountId))!;
    assert.equal(balance, await ledgerSum(db, accountId));
    return balance;
  }

  /** The plugin's TTS streams `text` (pushed in pieces, as an LLM writes it) at `sampleRate`; returns the PCM. */
  async function synthesize(apiKey: string, text: string): Promise<{ pcm: Buffer; sampleRate: number; words: string[] }> {
    const tts = new elevenlabs.TTS({
      apiKey,
      baseURL: `${gw.url}/elevenlabs/v1`,
      voiceId: DEMO_ALPHA_VOICE_ID,
      model: "eleven_flash_v2_5",
      encoding: "pcm_16000",
    });
    const stream = tts.stream();
    for (const piece of text.match(/.{1,17}/g) ?? []) stream.pushText(piece);
    stream.flush();
    stream.endInput();
    const parts: Buffer[] = [];
    const words: string[] = [];
    for await (const ev of stream) {
      if (ev === ttsTypes.SynthesizeStream.END_OF_STREAM) break;
      const f = ev.frame;
      parts.push(Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength));
      for (const w of ev.timedTranscripts ?? []) words.push(w.text.trim());
      if (ev.final) break;
    }
    await tts.close();
    return { pcm: Buffer.concat(parts), sampleRate: 16000, words };
  }

  test("TTS: multi-stream-input through the dialect: audio, timed words, exact money", async () => {
    const u = await gw.register();
    const { pcm, words } = await synthesize(u.api_key, TEXT);
    assert.ok(pcm.length / 2 / 16000 > 4, `seconds of speech (${pcm.length} bytes)`);
    assert.ok(words.join(" ").includes("balance"), `timed words from the alignment: ${words.join("|").slice(0, 200)}`);
    // The plugin closes its context and then its socket: the record settles.
    let rec;
    for (let i = 0; i < 200; i++) {
      rec = await gw.services.db.kysely.selectFrom("usage_records").selectAll().where("account_id", "=", u.org_id).where("realtime", "=", 1).executeTakeFirst();
      if (rec && rec.status !== "processing") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(rec && rec.status === "succeeded", `settled: ${rec?.status}`);
    assert.equal(rec.model, "alpha-flash-v2-5", "eleven_flash_v2_5 names alpha-flash-v2-5 (D36)");
    assert.equal(Number(rec.cost_micros), Number(rec.characters) * 200);
    assert.equal(await exact(u.org_id), 500_000 - Number(rec.cost_micros));
  });

  test("STT: the Scribe realtime socket through the dialect hears the TTS's speech as its text", async () => {
    const u = await gw.register();
    const sentence = "Please transfer me to the billing department.";
    const { pcm } = await synthesize(u.api_key, sentence);
    const stt = new elevenlabs.STT({ apiKey: u.api_key, baseURL: `${gw.url}/elevenlabs/v1`, model: "scribe_v2_realtime", sampleRate: 16000 });
    const stream = stt.stream();
    const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.byteLength / 2);
    for (let i = 0; i < samples.length; i += 1600) {
      const part = samples.slice(i, Math.min(samples.length, i + 1600));
      stream.pushFrame(new AudioFrame(part, 16000, 1, part.length));
    }
    stream.flush();
    let finalText = "";
    for await (const ev of stream) {
      if (ev.type === sttTypes.SpeechEventType.FINAL_TRANSCRIPT) {
        finalText = ev.alternatives?.[0].text ?? "";
        break;
      }
    }
    stream.close();
    await stt.close();
    assert.equal(finalText, sentence);
    await exact(u.org_id);
  });
});
