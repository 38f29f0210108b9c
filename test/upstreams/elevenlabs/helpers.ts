/**
 * Shared pieces of the ElevenLabs adapter tests: request builders, the key every test source uses, and
 * an assertion that a failure is an {@link ElevenLabsError} without the key in its message.
 */
import assert from "node:assert/strict";
import { ElevenLabsError } from "../../../src/upstreams/elevenlabs/api.ts";
import type { MusicRequest, SfxRequest, SpeechRequest } from "../../../src/upstreams/types.ts";

/** The key every test source uses: distinctive, so a leak anywhere is found. No message may contain it. */
export const EL_KEY = "sk_el-test-7c41e9a2d05b-f38a61c4";

/** A voice of the fake's account catalog (ElevenLabs' premade "Rachel", as in the SDK's wire tests). */
export const RACHEL = "21m00Tcm4TlvDq8ikWAM";

/** Every error message a test looked at, checked once more at the end of a file. */
export const seenMessages: string[] = [];

export function assertNoKey(text: string): void {
  seenMessages.push(text);
  assert.ok(!text.includes(EL_KEY), `the key leaked: ${text}`);
  assert.ok(!text.includes(EL_KEY.slice(0, 14)), `part of the key leaked: ${text}`);
}

/** Awaits `promise`, asserts it rejects with an ElevenLabsError whose message lacks the key, returns the error. */
export async function elFailure(promise: Promise<unknown>): Promise<ElevenLabsError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ElevenLabsError, `expected an ElevenLabsError, got ${String(err)}`);
    assertNoKey(err.message);
    return err;
  }
  assert.fail("expected a rejection");
}

/** A speech request (default alpha-multilingual-v2, Rachel, mp3_44100_128, no voice settings). */
export function speechRequest(extra: Partial<SpeechRequest> = {}): SpeechRequest {
  return {
    model: "alpha-multilingual-v2",
    text: "The quick brown fox jumps over the lazy dog.",
    voiceId: RACHEL,
    format: "mp3_44100_128",
    voiceSettings: {},
    stream: false,
    simulate: null,
    ...extra,
  };
}

/** A music request (default alpha-music, 5000 ms, mp3_44100_128). */
export function musicRequest(extra: Partial<MusicRequest> = {}): MusicRequest {
  return { model: "alpha-music", prompt: "calm lo-fi piano", lyrics: null, lengthMs: 5000, lengthFromLyrics: false, format: "mp3_44100_128", simulate: null, ...extra };
}

/** A sound-effect request (default alpha-sfx, 1.5 s, influence 0.4, pcm_16000). */
export function sfxRequest(extra: Partial<SfxRequest> = {}): SfxRequest {
  return { model: "alpha-sfx", prompt: "a door creaks open", durationSec: 1.5, promptInfluence: 0.4, format: "pcm_16000", simulate: null, ...extra };
}

/** Length of one MP3 frame of `format`, seconds (1152 samples at 44.1 kHz, 576 at 22.05 kHz). */
export function mp3FrameSec(format: string): number {
  return format === "mp3_22050_32" ? 576 / 22050 : 1152 / 44100;
}
