/**
 * Our alpha models on ElevenLabs: which ElevenLabs `model_id` serves each (the one table,
 * {@link ELEVENLABS_MODELS}, the "Default upstream ids" of the alpha family) and the per-source
 * overrides (`models` of the `UPSTREAMS` entry, D25).
 *
 * The ids are the ones ElevenLabs serves as of D35 (late 2026), checked against elevenlabs/elevenlabs-js
 * 2.73.0:
 * - speech: `eleven_v3` (`src/api/types/ElevenV3Request.ts`), `eleven_multilingual_v2` (the example of
 *   `textToSpeech/client/requests/BodyTextToSpeechFull.ts`), `eleven_flash_v2_5`; the turbo models are
 *   dropped (`src/api/types/TtsConversationalModel.ts`: `eleven_turbo_v2_5` "Deprecated: Use
 *   eleven_flash_v2_5 instead"), so `alpha-turbo-v2-5` is served by `eleven_flash_v2_5` at the same price;
 * - music: `music_v2` (`src/api/types/MusicModelId.ts`: `music_v1` deprecated, `music_v2`, `music_v2_5`;
 *   the `model_id` of `music/client/requests/BodyComposeMusicV1MusicPost.ts` is a `MusicModelId`);
 * - sound effects: `eleven_text_to_sound_v2` (`src/api/types/SfxModelId.ts`, its only value).
 *
 * Transcription (D43: ElevenLabs Scribe serves the `transcribe` family when an ElevenLabs source serves
 * it) has its own table, {@link ELEVENLABS_TRANSCRIPTION_MODELS}, kept apart from the alpha table so the
 * ElevenLabs dialect (http/dialects/elevenlabs/models.ts reads {@link ELEVENLABS_MODELS} backwards) is
 * unchanged: `host1-transcribe-1` -> `scribe_v2` for the batch `POST /v1/speech-to-text` (the example
 * `modelId` of elevenlabs-js 2.73.0 `speechToText/client/requests/BodySpeechToTextV1SpeechToTextPost.ts`);
 * the realtime socket always uses {@link SCRIBE_REALTIME_MODEL} (`scribe_v2_realtime`, the id D43 and the
 * SDK's `ScribeRealtime.connect` examples name; an invalid realtime id is refused with "Supported models:
 * 'scribe_v2_realtime', 'scribe_v2_realtime_turbo', 'scribe_v2_realtime_lite'", elevenlabs/ui#82). The
 * `models` override of `host1-transcribe-1` changes the batch id only (`UPSTREAMS` `models` keys are
 * catalog ids, so the realtime id has no key of its own).
 *
 * Sockets: `eleven_v3` has no text-to-speech WebSocket at ElevenLabs (the upgrade is answered 403,
 * livekit/agents#3235 quoting ElevenLabs support; "Multi-context WebSockets are not available for the
 * eleven_v3 model", ElevenLabs' multi-context guide as livekit/agents#3904 quotes it):
 * {@link NO_SOCKET_MODELS}.
 */

/** What an alpha model does at ElevenLabs. */
export type AlphaCapability = "speech" | "music" | "sfx";

/** What a model does at ElevenLabs: an alpha capability, or transcription (Scribe, D43). */
export type ElevenLabsCapability = AlphaCapability | "transcribe";

/**
 * Transcription models ElevenLabs serves, by gateway model id: ElevenLabs' batch `model_id` (Scribe v2,
 * see the module comment). Frozen.
 */
export const ELEVENLABS_TRANSCRIPTION_MODELS: Readonly<Record<string, string>> = Object.freeze({ "host1-transcribe-1": "scribe_v2" });

/** ElevenLabs' realtime Scribe model, the only id of the transcription socket the adapter sends (D43). */
export const SCRIBE_REALTIME_MODEL = "scribe_v2_realtime";

/** ElevenLabs speech model ids without a text-to-speech WebSocket (see the module comment). */
export const NO_SOCKET_MODELS: readonly string[] = ["eleven_v3"];

/** One alpha model: ElevenLabs' default `model_id` and the call that serves it. */
export interface AlphaModel {
  modelId: string;
  capability: AlphaCapability;
}

/**
 * Every alpha model, by gateway model id (sources: the module comment). Frozen. D35 (late 2026):
 * `alpha-v3` `eleven_v3`, `alpha-multilingual-v2` `eleven_multilingual_v2`, `alpha-flash-v2-5` and
 * `alpha-turbo-v2-5` `eleven_flash_v2_5`, `alpha-music` `music_v2`, `alpha-sfx` `eleven_text_to_sound_v2`.
 */
export const ELEVENLABS_MODELS: Readonly<Record<string, Readonly<AlphaModel>>> = Object.freeze({
  "alpha-v3": Object.freeze({ modelId: "eleven_v3", capability: "speech" }),
  "alpha-multilingual-v2": Object.freeze({ modelId: "eleven_multilingual_v2", capability: "speech" }),
  "alpha-flash-v2-5": Object.freeze({ modelId: "eleven_flash_v2_5", capability: "speech" }),
  // ElevenLabs dropped eleven_turbo_v2_5 (D35): the flash model serves the turbo one, same price.
  "alpha-turbo-v2-5": Object.freeze({ modelId: "eleven_flash_v2_5", capability: "speech" }),
  // music_v1 is deprecated (MusicModelId.ts); music_v2 is the current model.
  "alpha-music": Object.freeze({ modelId: "music_v2", capability: "music" }),
  "alpha-sfx": Object.freeze({ modelId: "eleven_text_to_sound_v2", capability: "sfx" }),
} satisfies Record<string, AlphaModel>);

/** An ElevenLabs model id as an override may name it: letters, digits, `_`, `.`, `-`. */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/**
 * Checks a source's `models` overrides: every key an alpha model of {@link ELEVENLABS_MODELS} or a
 * transcription model of {@link ELEVENLABS_TRANSCRIPTION_MODELS}, every value a plausible ElevenLabs model
 * id. Returns a frozen copy.
 * @throws RangeError naming the bad entry.
 */
export function checkModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    if (!Object.hasOwn(ELEVENLABS_MODELS, key) && !Object.hasOwn(ELEVENLABS_TRANSCRIPTION_MODELS, key)) throw new RangeError(`models: ${JSON.stringify(key)} is not a model ElevenLabs serves`);
    if (typeof value !== "string" || !MODEL_ID.test(value)) {
      throw new RangeError(`models: the model id of ${JSON.stringify(key)} must look like "eleven_multilingual_v2"`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/**
 * ElevenLabs' `model_id` for `model` when it is an alpha model of `capability`, or a transcription model
 * for `transcribe` (the override first), or null when ElevenLabs does not serve it for that call.
 */
export function upstreamModelId(model: string, capability: ElevenLabsCapability, overrides: Readonly<Record<string, string>>): string | null {
  if (capability === "transcribe") {
    if (!Object.hasOwn(ELEVENLABS_TRANSCRIPTION_MODELS, model)) return null;
    return overrides[model] ?? ELEVENLABS_TRANSCRIPTION_MODELS[model];
  }
  const entry = Object.hasOwn(ELEVENLABS_MODELS, model) ? ELEVENLABS_MODELS[model] : undefined;
  if (entry === undefined || entry.capability !== capability) return null;
  return overrides[model] ?? entry.modelId;
}
