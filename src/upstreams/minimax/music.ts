/**
 * Music on MiniMax: `POST /v1/music_generation` (MiniMax-AI/cli `src/types/api.ts` `MusicRequest`,
 * `MusicResponse`; MiniMax-AI/MiniMax-MCP `minimax_mcp/server.py` `music_generation`).
 *
 * Request: `{model, prompt, lyrics?, is_instrumental?, audio_setting: {format, sample_rate, bitrate?},
 * output_format: "hex"}`. Lyrics that are `[Instrumental]` alone (any case, white space around) become
 * `is_instrumental: true` without lyrics on the music-2 generation (`music-2.5`, beta-music-pro, or an
 * override id starting `music-2`); older models (`music-1.5`) get the lyrics as written. Empty lyrics
 * are left out. MiniMax decides the length from the lyrics; `lengthMs` is not sent.
 */
import { contentTypeOf } from "../types.ts";
import type { AudioBytes, MusicRequest } from "../types.ts";
import type { CallContext, MiniMaxApi } from "./api.ts";
import { fetchWholeAudio } from "./audio.ts";
import { audioPlan, hasInstrumentalFlag, isInstrumentalOnly, MUSIC_RATES } from "./models.ts";

const CTX: CallContext = { what: "music_generation" };

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
  const audio = await fetchWholeAudio(api, "/v1/music_generation", musicBody(req, upstreamId), req.format, plan, CTX, signal);
  return { kind: "bytes", contentType: contentTypeOf(req.format), body: audio.body, durationSec: audio.durationSec };
}
