/**
 * Speech on MiniMax: `POST /v1/t2a_v2` (MiniMax-AI/cli `src/types/api.ts` `SpeechRequest`; MiniMax-AI/
 * MiniMax-MCP `minimax_mcp/server.py` `text_to_audio`; MiniMax's T2A HTTP reference,
 * platform.minimax.io/docs/api-reference/speech-t2a-http: `voice_setting.speed` 0.5-2, `vol` (0, 10],
 * `pitch` an integer -12..12; `audio_setting.channel` 1 or 2).
 *
 * Request: `{model, text, stream, voice_setting: {voice_id, speed: 1, vol: 1, pitch: 0}, audio_setting:
 * {format, sample_rate, bitrate?, channel: 1}, output_format: "hex"}`, plus `stream_options:
 * {exclude_aggregated_audio: true}` when streaming (the final event would otherwise repeat the whole
 * clip). The request's ElevenLabs-style `voiceSettings` (stability, similarity) have no MiniMax
 * counterpart and are ignored; speed, volume and pitch stay MiniMax's neutral values.
 *
 * Formats MiniMax lacks (`mp3_44100_192`, `ulaw_8000`) are asked as PCM and transcoded (models.ts, D26).
 * A voice MiniMax no longer has (2042, 20132) throws with `voiceUnavailable` (D27: 410); a 2013 naming
 * the model sent, with `modelNotFound` (D35).
 */
import { contentTypeOf } from "../types.ts";
import type { AudioResult, SpeechRequest } from "../types.ts";
import type { CallContext, MiniMaxApi } from "./api.ts";
import { fetchWholeAudio, openAudioStream } from "./audio.ts";
import { audioPlan, SPEECH_RATES } from "./models.ts";


/** The `t2a_v2` body of `req` for the upstream model `upstreamId` (exported for tests). */
export function speechBody(req: SpeechRequest, upstreamId: string): Record<string, unknown> {
  const plan = audioPlan(req.format, SPEECH_RATES);
  const body: Record<string, unknown> = {
    model: upstreamId,
    text: req.text,
    stream: req.stream,
    voice_setting: { voice_id: req.voiceId, speed: 1, vol: 1, pitch: 0 },
    audio_setting: { ...plan.setting, channel: 1 },
    output_format: "hex",
  };
  if (req.stream) body.stream_options = { exclude_aggregated_audio: true };
  return body;
}

/**
 * Synthesizes `req` with `upstreamId`: whole bytes, or (`req.stream`) a stream that resolves once
 * MiniMax's answer headers arrived. Throws api.ts `MiniMaxError`; honours `signal`.
 */
export async function synthesize(api: MiniMaxApi, req: SpeechRequest, upstreamId: string, signal?: AbortSignal): Promise<AudioResult> {
  const plan = audioPlan(req.format, SPEECH_RATES);
  const body = speechBody(req, upstreamId);
  const ctx: CallContext = { what: "t2a_v2", speech: true, model: upstreamId };
  const contentType = contentTypeOf(req.format);
  if (req.stream) {
    const chunks = await openAudioStream(api, "/v1/t2a_v2", body, req.format, plan, ctx, signal);
    return { kind: "stream", contentType, chunks };
  }
  const audio = await fetchWholeAudio(api, "/v1/t2a_v2", body, req.format, plan, ctx, signal);
  return { kind: "bytes", contentType, body: audio.body, durationSec: audio.durationSec };
}
