/**
 * Text to speech at ElevenLabs: `POST /v1/text-to-speech/{voice_id}?output_format=<format>` with
 * `{text, model_id, voice_settings}` (elevenlabs/elevenlabs-js `src/api/resources/textToSpeech/client/
 * Client.ts` `convert`; `BodyTextToSpeechFull` and `VoiceSettings` name the fields), answered by the
 * audio bytes. The gateway's voice settings (`stability`, `similarity_boost`, `style`,
 * `use_speaker_boost`) are ElevenLabs' own names (elevenlabs-js `src/api/types/VoiceSettings.ts`; its
 * docs give the numbers 0 to 1, which the gateway's contract checks too, so ElevenLabs' 400
 * `invalid_voice_settings` is not expected; `speed` is not offered): only those the request has are
 * sent, and `voice_settings` is left out when it has none (ElevenLabs then uses the voice's stored settings).
 */
import { audioDurationSec } from "../audio-convert.ts";
import { contentTypeOf } from "../types.ts";
import type { AudioBytes, SpeechRequest, VoiceSettings } from "../types.ts";
import type { ElevenLabsApi } from "./api.ts";
import { postForAudio } from "./audio.ts";

/** The JSON body of a speech call for `req` with ElevenLabs' `modelId`. */
export function speechBody(req: SpeechRequest, modelId: string): Record<string, unknown> {
  const body: Record<string, unknown> = { text: req.text, model_id: modelId };
  const settings = voiceSettingsOf(req.voiceSettings);
  if (settings !== null) body.voice_settings = settings;
  return body;
}

/** The fields of `settings` that are set, or null when none is. */
export function voiceSettingsOf(settings: VoiceSettings): Record<string, number | boolean> | null {
  const out: Record<string, number | boolean> = {};
  if (typeof settings.stability === "number") out.stability = settings.stability;
  if (typeof settings.similarity_boost === "number") out.similarity_boost = settings.similarity_boost;
  if (typeof settings.style === "number") out.style = settings.style;
  if (typeof settings.use_speaker_boost === "boolean") out.use_speaker_boost = settings.use_speaker_boost;
  return Object.keys(out).length === 0 ? null : out;
}

/**
 * Synthesizes `req` with `modelId`. `req.stream` is ignored: the alpha family is delivered whole (the
 * spec streams beta models only). Returns the bytes with their length in seconds.
 * @throws ElevenLabsError (api.ts table; `voiceUnavailable` for `voice_not_found`, `modelNotFound` naming
 *   `modelId` for `model_not_found`).
 */
export async function synthesize(api: ElevenLabsApi, req: SpeechRequest, modelId: string, signal: AbortSignal | undefined): Promise<AudioBytes> {
  const path = `/v1/text-to-speech/${encodeURIComponent(req.voiceId)}`;
  const body = await postForAudio(api, path, req.format, speechBody(req, modelId), "text-to-speech", { speech: true, model: modelId }, signal);
  return { kind: "bytes", contentType: contentTypeOf(req.format), body, durationSec: audioDurationSec(body, req.format) };
}
