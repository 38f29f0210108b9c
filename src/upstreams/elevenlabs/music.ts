/**
 * Music and sound effects at ElevenLabs.
 *
 * - Music: `POST /v1/music?output_format=<format>` with `{prompt, music_length_ms, model_id}`
 *   (elevenlabs/elevenlabs-js `src/api/resources/music/client/Client.ts` `compose`,
 *   `BodyComposeMusicV1MusicPost`: `prompt` string, `music_length_ms` integer 3000-600000, `model_id` a
 *   `MusicModelId`; `output_format` is the query parameter `MusicComposeRequestOutputFormat`, which
 *   has every gateway format). ElevenLabs takes 3000 to 600000 ms; a request below 3000 ms is
 *   generated at 3000 ms and trimmed to the requested length (D26: MP3 after the last whole frame that
 *   starts before it, so up to one frame longer; PCM and mu-law to the sample). Lyrics are not sent
 *   (alpha-music takes a prompt only).
 * - Sound effects: `POST /v1/sound-generation?output_format=<format>` with `{text, duration_seconds?,
 *   prompt_influence, model_id}` (`textToSoundEffects/client/Client.ts` `convert`,
 *   `CreateSoundEffectRequest`: `text` string, `duration_seconds` 0.5-30, `prompt_influence` 0-1,
 *   `model_id` a `SfxModelId`); `duration_seconds` only when the request names one (ElevenLabs picks
 *   the length otherwise).
 * `durationSec` of a result is the delivered length, measured on the bytes.
 */
import { audioDurationSec, trimAudio } from "../audio-convert.ts";
import { contentTypeOf } from "../types.ts";
import type { AudioBytes, MusicRequest, SfxRequest } from "../types.ts";
import type { ElevenLabsApi } from "./api.ts";
import { postForAudio } from "./audio.ts";

/** ElevenLabs' shortest music, ms (D26: shorter requests are generated at this length and trimmed). */
export const MIN_MUSIC_LENGTH_MS = 3000;

/** ElevenLabs' longest music, ms. */
export const MAX_MUSIC_LENGTH_MS = 600_000;

/** The length asked of ElevenLabs for a request of `lengthMs`: whole ms within its range. */
export function musicLengthToAsk(lengthMs: number): number {
  return Math.min(MAX_MUSIC_LENGTH_MS, Math.max(MIN_MUSIC_LENGTH_MS, Math.round(lengthMs)));
}

/** The JSON body of a music call for `req` with ElevenLabs' `modelId`. */
export function musicBody(req: MusicRequest, modelId: string): Record<string, unknown> {
  return { prompt: req.prompt, music_length_ms: musicLengthToAsk(req.lengthMs), model_id: modelId };
}

/** The JSON body of a sound-effect call for `req` with ElevenLabs' `modelId`. */
export function sfxBody(req: SfxRequest, modelId: string): Record<string, unknown> {
  const body: Record<string, unknown> = { text: req.prompt };
  if (req.durationSec !== null) body.duration_seconds = req.durationSec;
  body.prompt_influence = req.promptInfluence;
  body.model_id = modelId;
  return body;
}

/**
 * Composes `req` with `modelId`, trimmed to `req.lengthMs` when it was generated longer (D26).
 * @throws ElevenLabsError (api.ts table; `modelNotFound` naming `modelId` when ElevenLabs has no such model).
 */
export async function composeMusic(api: ElevenLabsApi, req: MusicRequest, modelId: string, signal: AbortSignal | undefined): Promise<AudioBytes> {
  const body = musicBody(req, modelId);
  let audio = await postForAudio(api, "/v1/music", req.format, body, "music", { model: modelId }, signal);
  if (req.lengthMs < (body.music_length_ms as number)) audio = trimAudio(audio, req.format, req.lengthMs / 1000);
  return { kind: "bytes", contentType: contentTypeOf(req.format), body: audio, durationSec: audioDurationSec(audio, req.format) };
}

/**
 * Generates the sound effect of `req` with `modelId`.
 * @throws ElevenLabsError (api.ts table; `modelNotFound` naming `modelId` when ElevenLabs has no such model).
 */
export async function generateSfx(api: ElevenLabsApi, req: SfxRequest, modelId: string, signal: AbortSignal | undefined): Promise<AudioBytes> {
  const audio = await postForAudio(api, "/v1/sound-generation", req.format, sfxBody(req, modelId), "sound-generation", { model: modelId }, signal);
  return { kind: "bytes", contentType: contentTypeOf(req.format), body: audio, durationSec: audioDurationSec(audio, req.format) };
}
