/**
 * Shared pieces of the OpenAI audio adapter tests: real, decodable audio in each container the adapter
 * sniffs (a WAV header around `pcm_16000` samples, an MP3 from the simulator's encoder, an M4A-like
 * `ftyp` file, Ogg/FLAC/WebM signatures), request builders, and assertions that a failure is an
 * `UpstreamError` without the key in its message.
 */
import assert from "node:assert/strict";
import { OpenAICompatibleError } from "../../../src/upstreams/openai-compatible/api.ts";
import { encodeAudio } from "../../../src/upstreams/simulator/encode.ts";
import type { AudioTextRequest } from "../../../src/upstreams/types.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";

/** The key every test source uses; no message may ever contain it. */
export const OPENAI_KEY = "sk-test-audio-7d2e4f6a8b0c1e3f5a79";

/** A sine tone of `seconds` at `rate`, amplitude 0.3. */
export function tone(seconds: number, rate: number): Float32Array {
  return Float32Array.from({ length: Math.round(seconds * rate) }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * i) / rate));
}

/** A 16 kHz mono 16-bit WAV of `seconds`: a 44-byte RIFF header around `pcm_16000` bytes. */
export function wav(seconds = 1.5): Uint8Array {
  const pcm = encodeAudio(tone(seconds, 16_000), 16_000, "pcm_16000");
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + pcm.byteLength, 4);
  header.write("WAVE", 8, "ascii");
  header.write("fmt ", 12, "ascii");
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(16_000, 24); // sample rate
  header.writeUInt32LE(32_000, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write("data", 36, "ascii");
  header.writeUInt32LE(pcm.byteLength, 40);
  return new Uint8Array(Buffer.concat([header, pcm]));
}

/** An MP3 (44.1 kHz, 128 kbps) of `seconds`, from the simulator's encoder: starts with a frame sync. */
export function mp3(seconds = 2): Uint8Array {
  return encodeAudio(tone(seconds, 44_100), 44_100, "mp3_44100_128");
}

/** The same MP3 behind a minimal ID3v2.4 tag (10-byte header, no frames): what most MP3 files look like. */
export function mp3WithId3(seconds = 2): Uint8Array {
  const tag = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]);
  return new Uint8Array(Buffer.concat([tag, mp3(seconds)]));
}

/** An M4A-like file: an `ftyp` box of brand `M4A ` followed by an empty `mdat` box and filler. */
export function m4aLike(): Uint8Array {
  const ftyp = Buffer.alloc(24);
  ftyp.writeUInt32BE(24, 0);
  ftyp.write("ftypM4A ", 4, "ascii");
  ftyp.writeUInt32BE(0, 12);
  ftyp.write("M4A isom", 16, "ascii");
  const mdat = Buffer.alloc(1000, 7);
  mdat.writeUInt32BE(1000, 0);
  mdat.write("mdat", 4, "ascii");
  return new Uint8Array(Buffer.concat([ftyp, mdat]));
}

/** A file that starts with `signature` (Ogg, FLAC, WebM headers) followed by `size` filler bytes. */
export function withSignature(signature: readonly number[] | string, size = 600): Uint8Array {
  const head = typeof signature === "string" ? Buffer.from(signature, "ascii") : Buffer.from(signature);
  return new Uint8Array(Buffer.concat([head, Buffer.alloc(size, 3)]));
}

/** A transcription request (gateway model `host1-transcribe-1`). */
export function transcribeRequest(audio: Uint8Array, extra: Partial<AudioTextRequest> = {}): AudioTextRequest {
  return { model: "host1-transcribe-1", audio, durationSec: 1.5, prompt: null, simulate: null, ...extra };
}

/** An understanding request (gateway model `host2-audio-understand-1`). */
export function understandRequest(audio: Uint8Array, prompt: string | null, extra: Partial<AudioTextRequest> = {}): AudioTextRequest {
  return { model: "host2-audio-understand-1", audio, durationSec: 2, prompt, simulate: null, ...extra };
}

/** Every error message a test looked at. */
export const seenMessages: string[] = [];

/** Asserts `text` holds neither the key nor its tail. */
export function assertNoKey(text: string): void {
  seenMessages.push(text);
  assert.ok(!text.includes(OPENAI_KEY), `the key leaked: ${text}`);
  assert.ok(!text.includes(OPENAI_KEY.slice(-12)), `part of the key leaked: ${text}`);
}

/** Awaits `promise`, asserts it rejects with an UpstreamError whose message lacks the key, returns it. */
export async function upstreamFailure(promise: Promise<unknown>): Promise<UpstreamError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, `expected an UpstreamError, got ${String(err)}`);
    assertNoKey(err.message);
    assertNoKey(err.stack ?? "");
    return err;
  }
  assert.fail("expected a rejection");
}

/** Like {@link upstreamFailure}, and asserts the error is an OpenAICompatibleError. */
export async function openAIFailure(promise: Promise<unknown>): Promise<OpenAICompatibleError> {
  const err = await upstreamFailure(promise);
  assert.ok(err instanceof OpenAICompatibleError, `expected an OpenAICompatibleError, got ${err.name}: ${err.message}`);
  return err;
}
