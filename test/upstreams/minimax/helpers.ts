/**
 * Shared pieces of the MiniMax adapter tests: request builders, a poll loop, audio readers (MP3 frame
 * headers), a replay server for fixture answers, and an assertion that a failure is a
 * {@link MiniMaxError} without the key in its message.
 */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { MiniMaxError } from "../../../src/upstreams/minimax/api.ts";
import type {
  AudioFormat,
  AudioResult,
  MusicRequest,
  SpeechRequest,
  UpstreamHandle,
  UpstreamJobState,
  VideoRequest,
  VisualJobSource,
} from "../../../src/upstreams/types.ts";

/** The key every test source uses: distinctive, so a leak anywhere is found. No message may contain it. */
export const MM_KEY = "mm-test-key-8d3f1b27:e6a04c95f2b1";

/** Every error message a test looked at, checked once more at the end of a file. */
export const seenMessages: string[] = [];

export function assertNoKey(text: string): void {
  seenMessages.push(text);
  assert.ok(!text.includes(MM_KEY), `the key leaked: ${text}`);
  assert.ok(!text.includes(MM_KEY.slice(0, 12)), `part of the key leaked: ${text}`);
}

/** Awaits `promise`, asserts it rejects with a MiniMaxError whose message lacks the key, returns the error. */
export async function mmFailure(promise: Promise<unknown>): Promise<MiniMaxError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof MiniMaxError, `expected a MiniMaxError, got ${String(err)}`);
    assertNoKey(err.message);
    return err;
  }
  assert.fail("expected a rejection");
}

export function speechRequest(extra: Partial<SpeechRequest> = {}): SpeechRequest {
  return {
    model: "beta-speech-hd",
    text: "The quick brown fox jumps over the lazy dog.",
    voiceId: "English_Graceful_Lady",
    format: "mp3_44100_128",
    voiceSettings: { stability: 0.2, similarity_boost: 0.9 },
    stream: false,
    simulate: null,
    ...extra,
  };
}

export function musicRequest(extra: Partial<MusicRequest> = {}): MusicRequest {
  return {
    model: "beta-music",
    prompt: "Indie folk, melancholic, acoustic guitar",
    lyrics: "[Verse]\nWalking down the empty road\nCarrying a heavy load\n[Chorus]\nHome, home",
    lengthMs: 30_000,
    lengthFromLyrics: true,
    format: "mp3_44100_128",
    simulate: null,
    ...extra,
  };
}

export function videoRequest(extra: Partial<VideoRequest> = {}): VideoRequest {
  return { model: "vidC-02-768p", prompt: "a red fox running through snow", durationSec: 6, imageUrl: null, parameters: {}, simulate: null, ...extra };
}

/** Seconds of speech the fake makes for `text` (0.06 s per character, at least 0.3 s). */
export function fakeSpeechSec(text: string): number {
  return Math.max(0.3, 0.06 * [...text].length);
}

/** The body of a bytes result (fails on a stream). */
export function bytesOf(result: AudioResult): Uint8Array {
  assert.equal(result.kind, "bytes");
  return result.kind === "bytes" ? result.body : new Uint8Array(0);
}

/** Collects a stream result's chunks. */
export async function chunksOf(result: AudioResult): Promise<Uint8Array[]> {
  assert.equal(result.kind, "stream");
  const out: Uint8Array[] = [];
  if (result.kind === "stream") for await (const c of result.chunks) out.push(c);
  return out;
}

export { concatBytes as concat } from "../../../src/upstreams/util.ts";

/** One MP3 frame header. */
export interface Mp3Header {
  version: "1" | "2" | "2.5";
  bitrateIndex: number;
  kbps: number;
  sampleRate: number;
}

const V1_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const V2_KBPS = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];

/** Every MP3 frame header of `b`, walking frame by frame from the first sync word (after an ID3 tag). */
export function mp3Headers(b: Uint8Array): Mp3Header[] {
  let i = 0;
  if (b[0] === 0x49 && b[1] === 0x44 && b[2] === 0x33) i = 10 + (((b[6] & 0x7f) << 21) | ((b[7] & 0x7f) << 14) | ((b[8] & 0x7f) << 7) | (b[9] & 0x7f));
  while (i + 1 < b.length && !(b[i] === 0xff && (b[i + 1] & 0xe0) === 0xe0)) i++;
  const out: Mp3Header[] = [];
  while (i + 4 <= b.length && b[i] === 0xff && (b[i + 1] & 0xe0) === 0xe0) {
    const v = (b[i + 1] >> 3) & 3;
    const bitrateIndex = b[i + 2] >> 4;
    const rateIndex = (b[i + 2] >> 2) & 3;
    const padding = (b[i + 2] >> 1) & 1;
    const version = v === 3 ? "1" : v === 2 ? "2" : "2.5";
    const kbps = (v === 3 ? V1_KBPS : V2_KBPS)[bitrateIndex];
    const sampleRate = ({ 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] } as Record<number, number[]>)[v][rateIndex];
    out.push({ version, bitrateIndex, kbps, sampleRate });
    const samples = v === 3 ? 1152 : 576;
    i += Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
  }
  return out;
}

/** Seconds of audio in `body` of `format`, measured independently of the adapter. */
export function measuredSec(body: Uint8Array, format: AudioFormat): number {
  const [codec, rate] = format.split("_");
  if (codec === "pcm") return body.length / 2 / Number(rate);
  if (codec === "ulaw") return body.length / 8000;
  const frames = mp3Headers(body);
  return frames.reduce((s, f) => s + (f.version === "1" ? 1152 : 576) / f.sampleRate, 0);
}

/** Polls until the state is terminal (or `until` says stop). No deadline: the fake ends every task. */
export async function pollUntil(
  source: VisualJobSource,
  handle: UpstreamHandle,
  until: (s: UpstreamJobState) => boolean = (s) => s.state === "succeeded" || s.state === "failed",
): Promise<UpstreamJobState> {
  const seen: UpstreamJobState[] = [];
  for (;;) {
    const state = await source.poll(handle);
    seen.push(state);
    if (state.state === "failed") assertNoKey(state.message);
    if (until(state)) return state;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A server answering fixed JSON per `METHOD /path` (query ignored), recording the paths it was asked. */
export interface Replay {
  url: string;
  paths: string[];
  close(): Promise<void>;
}

export async function startReplay(routes: Record<string, unknown>): Promise<Replay> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://replay");
    paths.push(url.pathname + url.search);
    req.resume();
    req.on("end", () => {
      const body = routes[`${req.method} ${url.pathname}`];
      const text = typeof body === "string" ? body : JSON.stringify(body ?? { base_resp: { status_code: 404, status_msg: "no route" } });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
