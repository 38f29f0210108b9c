/**
 * ElevenLabs model ids in the dialect (D36): which catalog model an ElevenLabs `model_id` names, and which
 * ElevenLabs id the dialect shows for a catalog model. Read from the ElevenLabs adapter's own table
 * (`ELEVENLABS_MODELS`: catalog id -> the ElevenLabs model that serves it) read backwards, plus the older
 * ElevenLabs ids D36 also accepts; never a second copy of the adapter's table.
 */
import { ELEVENLABS_MODELS } from "../../../upstreams/elevenlabs/models.ts";

/**
 * ElevenLabs ids D36 names that the adapter no longer sends upstream (D35): the turbo model (served by
 * the flash model) and the music models other than the current one.
 */
const OLDER_IDS: Readonly<Record<string, string>> = { eleven_turbo_v2_5: "alpha-turbo-v2-5", music_v1: "alpha-music", music_v2_5: "alpha-music" };

/** The adapter's table backwards: the first catalog model each ElevenLabs id serves. */
function servedBy(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [catalogId, m] of Object.entries(ELEVENLABS_MODELS)) if (!Object.hasOwn(out, m.modelId)) out[m.modelId] = catalogId;
  return out;
}

/** ElevenLabs model ids and the catalog models they name (D36), frozen. Catalog ids are accepted as they are. */
export const ELEVENLABS_MODEL_IDS: Readonly<Record<string, string>> = Object.freeze({ ...servedBy(), ...OLDER_IDS });

/** The catalog id an ElevenLabs `model_id` names; anything else is passed on as a catalog id (the service refuses an unknown one). */
export function catalogModelOf(modelId: string): string {
  return Object.hasOwn(ELEVENLABS_MODEL_IDS, modelId) ? ELEVENLABS_MODEL_IDS[modelId] : modelId;
}

/** ElevenLabs' id of a catalog model in the dialect's answers (`GET /elevenlabs/v1/models`): the first id of {@link ELEVENLABS_MODEL_IDS} naming it. */
export function elevenLabsIdOf(catalogId: string): string {
  return Object.keys(ELEVENLABS_MODEL_IDS).find((k) => ELEVENLABS_MODEL_IDS[k] === catalogId) ?? catalogId;
}
