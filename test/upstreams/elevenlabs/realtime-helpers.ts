/**
 * Shared pieces of the ElevenLabs realtime tests (D42, D43): request builders, reading a chunk's pieces,
 * test audio, and a raw `ws` client that drives the fake's sockets message by message.
 */
import assert from "node:assert/strict";
import { WebSocket } from "ws";
import type { RawData } from "ws";
import type { SpeechPiece, SpeechStream, SpeechStreamRequest, TranscriptionEvent, TranscriptionStreamRequest } from "../../../src/upstreams/realtime.ts";
import { RACHEL } from "./helpers.ts";

/** A realtime speech request (default alpha-flash-v2-5, Rachel, pcm_16000, no voice settings). */
export function speechStreamRequest(extra: Partial<SpeechStreamRequest> = {}): SpeechStreamRequest {
  return { model: "alpha-flash-v2-5", voiceId: RACHEL, format: "pcm_16000", voiceSettings: {}, simulate: null, ...extra };
}

/** A realtime transcription request (default manual commits, pcm_16000, nothing extra asked). */
export function transcriptionRequest(extra: Partial<TranscriptionStreamRequest> = {}): TranscriptionStreamRequest {
  return {
    model: "host1-transcribe-1",
    audioFormat: "pcm_16000",
    commitStrategy: "manual",
    vad: { silenceThresholdSecs: 1.5, threshold: 0.4, minSpeechDurationMs: 100, minSilenceDurationMs: 100 },
    languageCode: null,
    includeTimestamps: false,
    includeLanguageDetection: false,
    simulate: null,
    ...extra,
  };
}

/** Every piece of one chunk. */
export async function piecesOf(stream: SpeechStream, text: string, signal?: AbortSignal): Promise<SpeechPiece[]> {
  const out: SpeechPiece[] = [];
  for await (const piece of stream.synthesize(text, signal)) out.push(piece);
  return out;
}

/** The pieces' audio, concatenated. */
export function audioOf(pieces: readonly SpeechPiece[]): Buffer {
  return Buffer.concat(pieces.map((p) => p.audio));
}

/** 16-bit little-endian PCM: `seconds` of a loud tone at `rate` Hz (speech to the fake transcriber). */
export function pcmTone(seconds: number, rate = 16000): Buffer {
  const n = Math.round(seconds * rate);
  const out = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) out.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / rate)), i * 2);
  return out;
}

/** 16-bit PCM silence. */
export function pcmSilence(seconds: number, rate = 16000): Buffer {
  return Buffer.alloc(Math.round(seconds * rate) * 2);
}

/** Collects transcription events; `until(type)` waits for the first event of a type (at most 5 s). */
export function eventLog(): { events: TranscriptionEvent[]; on: (e: TranscriptionEvent) => void; until: (type: TranscriptionEvent["type"], count?: number) => Promise<TranscriptionEvent> } {
  const events: TranscriptionEvent[] = [];
  const waiters: (() => void)[] = [];
  return {
    events,
    on: (e) => {
      events.push(e);
      for (const w of waiters.splice(0)) w();
    },
    until: async (type, count = 1) => {
      const deadline = Date.now() + 5000;
      for (;;) {
        const found = events.filter((e) => e.type === type);
        if (found.length >= count) return found[count - 1]!;
        if (Date.now() > deadline) assert.fail(`no ${type} event (got ${JSON.stringify(events.map((e) => e.type))})`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
  };
}

/** A raw client of a fake socket: its messages (parsed) in order, and how it closed. */
export interface RawSocket {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  send(message: unknown): void;
  /** Waits for the `n`th message (1-based) satisfying `pick`, at most 5 s. */
  message(pick: (m: Record<string, unknown>) => boolean, n?: number): Promise<Record<string, unknown>>;
  /** Resolves with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
}

/**
 * Opens a raw socket to `url` (`http://` turned into `ws://`) with `headers`, resolved once open.
 * @throws the upgrade's refusal as `{status}` when the server answers HTTP instead.
 */
export async function rawSocket(url: string, headers: Record<string, string> = {}): Promise<RawSocket> {
  const ws = new WebSocket(url.replace(/^http/, "ws"), { headers });
  const messages: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  ws.on("message", (data: RawData) => {
    messages.push(JSON.parse(String(data)) as Record<string, unknown>);
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_req, res) => {
      reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
      res.resume();
      ws.terminate();
    });
    ws.once("error", reject);
  });
  ws.on("error", () => {});
  return {
    ws,
    messages,
    send: (message) => ws.send(typeof message === "string" ? message : JSON.stringify(message)),
    closed,
    message: async (pick, n = 1) => {
      const deadline = Date.now() + 5000;
      for (;;) {
        const found = messages.filter(pick);
        if (found.length >= n) return found[n - 1]!;
        if (Date.now() > deadline) assert.fail(`no such message (got ${JSON.stringify(messages.map((m) => Object.keys(m)))})`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
  };
}

/** The HTTP status of a refused upgrade to `url`. */
export async function refusedStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  try {
    const s = await rawSocket(url, headers);
    s.ws.terminate();
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (typeof status === "number") return status;
    throw err;
  }
  assert.fail(`the upgrade to ${url} was accepted`);
}
