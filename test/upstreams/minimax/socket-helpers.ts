/**
 * Shared pieces of the T2A WebSocket tests (speech-socket.test.ts, socket-fake.test.ts): a speech stream
 * request, collecting a chunk's pieces, an independent MP3 frame walk, and a raw WebSocket client that
 * waits for server messages.
 */
import assert from "node:assert/strict";
import { WebSocket } from "ws";
import type { RawData } from "ws";
import type { SpeechPiece, SpeechStream, SpeechStreamRequest } from "../../../src/upstreams/realtime.ts";
import { MM_KEY } from "./helpers.ts";

/** A realtime speech request on the fake's first voice. */
export function streamRequest(extra: Partial<SpeechStreamRequest> = {}): SpeechStreamRequest {
  return {
    model: "beta-speech-hd",
    voiceId: "English_Graceful_Lady",
    format: "mp3_44100_128",
    voiceSettings: { stability: 0.4, similarity_boost: 0.8 },
    simulate: null,
    ...extra,
  };
}

/** Every piece of one chunk, in order. */
export async function piecesOf(stream: SpeechStream, text: string, signal?: AbortSignal): Promise<SpeechPiece[]> {
  const out: SpeechPiece[] = [];
  for await (const p of stream.synthesize(text, signal)) out.push(p);
  return out;
}

/** One MP3 frame as the test reads it (independently of the adapter's parser). */
export interface WalkedFrame {
  version: "1" | "2" | "2.5";
  kbps: number;
  sampleRate: number;
  length: number;
}

const V1_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const V2_KBPS = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const RATES: Record<number, number[]> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };

/**
 * Walks `b` frame by frame from byte 0 (no tag, no junk skipped): the frames, and where the walk stopped
 * (`b.length` when the bytes are frames and nothing else).
 */
export function walkMp3(b: Uint8Array): { frames: WalkedFrame[]; end: number } {
  const frames: WalkedFrame[] = [];
  let i = 0;
  while (i + 4 <= b.length && b[i] === 0xff && (b[i + 1]! & 0xe0) === 0xe0) {
    const v = (b[i + 1]! >> 3) & 3;
    const layer = (b[i + 1]! >> 1) & 3;
    const bitrateIndex = b[i + 2]! >> 4;
    const rateIndex = (b[i + 2]! >> 2) & 3;
    if (v === 1 || layer !== 1 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) break;
    const kbps = (v === 3 ? V1_KBPS : V2_KBPS)[bitrateIndex]!;
    const sampleRate = RATES[v]![rateIndex]!;
    const samples = v === 3 ? 1152 : 576;
    const length = Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + ((b[i + 2]! >> 1) & 1);
    if (i + length > b.length) break;
    frames.push({ version: v === 3 ? "1" : v === 2 ? "2" : "2.5", kbps, sampleRate, length });
    i += length;
  }
  return { frames, end: i };
}

/** A raw client of the fake's T2A socket: every server message, and waiting for one. */
export interface RawT2a {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  /** Waits for the first message (from the start) that `pred` accepts; fails after `ms`. */
  waitFor(pred: (m: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  /** Waits for the close; its code. */
  closed(ms?: number): Promise<number>;
  send(msg: unknown): void;
}

/** Connects to `${base}/ws/v1/t2a_v2` with `key` (default the test key; null: no header). */
export async function rawT2a(base: string, key: string | null = MM_KEY, path = "/ws/v1/t2a_v2"): Promise<RawT2a> {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}${path}`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  const messages: Record<string, unknown>[] = [];
  const listeners = new Set<() => void>();
  let closeCode: number | null = null;
  ws.on("message", (data: RawData) => {
    messages.push(JSON.parse(String(data)) as Record<string, unknown>);
    for (const l of listeners) l();
  });
  ws.on("close", (code: number) => {
    closeCode = code;
    for (const l of listeners) l();
  });
  ws.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  const until = <T>(check: () => T | undefined, ms: number, what: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const tick = (): void => {
        const v = check();
        if (v !== undefined) {
          listeners.delete(tick);
          clearTimeout(timer);
          resolve(v);
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(tick);
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages.map((m) => m.event))}`));
      }, ms);
      listeners.add(tick);
      tick();
    });
  return {
    ws,
    messages,
    waitFor: (pred, ms = 3000) => until(() => messages.find(pred), ms, "a message"),
    closed: (ms = 3000) => until(() => (closeCode === null ? undefined : closeCode), ms, "the close"),
    send: (msg) => ws.send(typeof msg === "string" ? msg : JSON.stringify(msg)),
  };
}

/** The `task_start` the adapter sends for the fake's first voice, mp3 at 32 kHz. */
export function taskStart(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    event: "task_start",
    model: "speech-2.8-hd",
    voice_setting: { voice_id: "English_Graceful_Lady", speed: 1, vol: 1, pitch: 0 },
    audio_setting: { format: "mp3", sample_rate: 32000, bitrate: 128000, channel: 1 },
    ...extra,
  };
}

/** Asserts `m` is a `task_failed` with `code` (and a message matching `msg`). */
export function assertFailed(m: Record<string, unknown>, code: number, msg?: RegExp): void {
  assert.equal(m.event, "task_failed");
  const base = m.base_resp as { status_code: number; status_msg: string };
  assert.equal(base.status_code, code, base.status_msg);
  if (msg !== undefined) assert.match(base.status_msg, msg);
}
