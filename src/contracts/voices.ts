/**
 * Request contract of voice design (D2, D20): the TypeBox schema of the JSON body of
 * `POST /v1/audio/voice-design` (validated and documented by `src/http/schemas/voices.ts`) and its
 * `Static` type, the input type of `src/audio/voice-design.ts`. Voice cloning takes a multipart form,
 * read by its route, and has no JSON contract.
 */
import type { Static } from "typebox";
import { coded, obj, oneOf, str } from "./schema.ts";

/** Voice genders of the design request. */
export const GENDERS = ["male", "female"] as const;
/** Age groups of the design request. */
export const AGE_GROUPS = ["child", "young", "middle-aged", "elderly"] as const;

/** The body of `POST /v1/audio/voice-design`. */
export const VOICE_DESIGN_BODY = obj(
  {
    description: str("What the voice sounds like (alias `text`); required, at most 1000 characters (`description_too_long`).", { examples: ["a warm, slightly husky narrator"] }),
    text: str("Alias of `description`."),
    model: coded(oneOf(["beta-voice-design"], "Design model.", { default: "beta-voice-design" }), "not_a_voice_design_model", "'{value}' is not a voice design model."),
    name: str("Label for the voice, at most 64 characters."),
    preview_text: str("Text for an internal preview (audio is not returned), at most 500 characters."),
    gender: oneOf(GENDERS, "Gender of the voice.", { "x-error-message": "gender must be 'male' or 'female'." }),
    age_group: oneOf(AGE_GROUPS, "Age group of the voice.", { "x-error-message": `age_group must be one of ${AGE_GROUPS.join(", ")}.` }),
  },
  [],
  { description: "`description` (or `text`) is required." },
);

/** A voice design request body as received (types already checked by the route schema). */
export type VoiceDesignRequestBody = Static<typeof VOICE_DESIGN_BODY>;
