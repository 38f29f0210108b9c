/**
 * Music on MiniMax: `POST /v1/music_generation` (MiniMax-AI/cli `src/types/api.ts` `MusicRequest`,
 * `MusicResponse`, `src/commands/music/generate.ts`; MiniMax's music generation reference,
 * platform.minimax.io/docs/api-reference/music-generation).
 *
 * Request: `{model, prompt, lyrics?, is_instrumental?, audio_setting: {format, sample_rate, bitrate?},
 * output_format: "hex"}` (`audio_setting`: `mp3`/`pcm`, 16000/24000/32000/44100 Hz, MP3 at
 * 32000/64000/128000/256000 bit/s; models.ts). Lyrics that are `[Instrumental]` alone (any case, white
 * space around) become `is_instrumental: true` without lyrics where the model has the flag
 * (`music-2.6`, beta-music-pro by default, `music-2.5+`, later ids: models.ts `hasInstrumentalFlag`);
 * `music-2.5` (beta-music) gets the lyrics as written (upstreams.md). Empty lyrics are left out (MiniMax
 * then refuses: lyrics are required). MiniMax decides the length from the lyrics; `lengthMs` is not
 * sent. A 2013 naming the model is `modelNotFound` (api.ts, D35).
 */
import { contentTypeOf } from "../types.ts";
import type { AudioBytes, MusicRequest } from "../types.ts";
import type { CallContext, MiniMaxApi } from "./api.ts";
import { fetchWholeAudio } from "./audio.ts";
import { audioPlan, hasInstrumentalFlag, isInstrumentalOnly, MUSIC_RATES } from "./models.ts";


/** The `music_generation` body of `req` for the upstream model `upstreamId` (exported for tests). */
export function musicBody(req: MusicRequest, upstreamId: string): Record<string, unknown> {
  const body: Record<string, unknown> = { model: upstreamId, prompt: req.prompt };
  if (hasInstrumentalFlag(upstreamId) && isInstrumentalOnly(req.lyrics)) {
    body.is_instrumental = true;
  } else if (req.lyrics !== null && req.lyrics.trim() !== "") {
    body.lyrics = req.lyrics;
  }
  body.audio_setting = audioPlan(req.format, MUSIC_RATES).setting;
  body.output_format = "hex";
  return body;
}

/** Generates `req` with `upstreamId` in exactly `req.format`. Throws api.ts `MiniMaxError`; honours `signal`. */
export async function generateMusic(api: MiniMaxApi, req: MusicRequest, upstreamId: string, signal?: AbortSignal): Promise<AudioBytes> {
  const plan = audioPlan(req.format, MUSIC_RATES);
  const ctx: CallContext = { what: "music_generation", model: upstreamId };
  const audio = await fetchWholeAudio(api, "/v1/music_generation", musicBody(req, upstreamId), req.format, plan, ctx, signal);
  return { kind: "bytes", contentType: contentTypeOf(req.format), body: audio.body, durationSec: audio.durationSec };
}
