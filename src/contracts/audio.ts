/**
 * Request contracts of speech, music and sound effects: the TypeBox schemas of their JSON bodies (the
 * route schemas of `src/http/schemas/audio.ts` validate and document them) and their `Static` types, the
 * input types of the services (`src/audio/speech.ts`, `music.ts`, `sfx.ts`). Field types, enums and
 * ranges are checked by the schema; the rules with their own error codes (model, lengths, voice) are the
 * services'.
 */
import type { Static, TNumber } from "typebox";
import { DEFAULT_MUSIC_MODEL, DEFAULT_SFX_MODEL, DEFAULT_SPEECH_MODEL } from "../catalog/models.ts";
import { AUDIO_FORMATS } from "../upstreams/types.ts";
import { modelsWith } from "./common.ts";
import { bool, coded, num, obj, oneOf, type SchemaOptions, str } from "./schema.ts";

const SPEECH_MODELS = modelsWith("speech");
const MUSIC_MODELS = modelsWith("music");
const SFX_MODELS = modelsWith("sfx");

const FORMAT_MESSAGE = `response_format must be one of ${AUDIO_FORMATS.join(", ")}.`;
/** A 0-1 voice setting. */
const unit = (what: string): TNumber => num(`${what}, 0 to 1.`, { minimum: 0, maximum: 1, "x-error-message": "{param} must be a number from 0 to 1." });

/** The body of `POST /v1/audio/speech`. */
export const SPEECH_BODY = obj(
  {
    model: coded(
      oneOf(SPEECH_MODELS, "Speech model. alpha voices work only with `alpha-*` models; beta voices and your own designed or cloned voices only with `beta-speech-*`.", { default: DEFAULT_SPEECH_MODEL, examples: [DEFAULT_SPEECH_MODEL] }),
      "not_a_tts_model",
      "'{value}' is not a speech model.",
    ),
    input: str("Text to speak (alias `text`); required. At most the model's limit (5000 for most models; Unicode code points after NFC, answered `input_too_long`).", { examples: ["Hello from the gateway."] }),
    text: str("Alias of `input`."),
    voice_id: str("Voice id from the voice library, or one of your designed or cloned voices (alias `voice`). Required (`voice_required`); there is no default voice."),
    voice: str("Alias of `voice_id`."),
    response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128", "x-error-message": FORMAT_MESSAGE }),
    voice_settings: obj(
      {
        stability: unit("Stability"),
        similarity_boost: unit("Similarity boost"),
        style: unit("Style"),
        use_speaker_boost: bool("Speaker boost."),
      },
      [],
      { description: "Voice tuning." },
    ),
    stream: bool("Deliver the audio progressively (beta speech models only; ignored by others). The answer is still one complete stream.", { default: false }),
  },
  [],
  { description: "`input` (or `text`) and `voice_id` (or `voice`) are required." },
);

/** A music length in ms: a whole number, `multipleOf: 1` so that 1500.5 is `invalid_duration` (the model's own range is checked by the service, `invalid_duration`). */
const lengthMs = (description: string, extra: SchemaOptions = {}): TNumber =>
  coded(
    num(description, { multipleOf: 1, minimum: 1000, maximum: 300000, ...extra }),
    { type: "invalid_request", "*": "invalid_duration" },
    { type: "{param} must be an integer number of ms.", "*": "{param} must be a whole number of ms from 1000 to 300000." },
  );

/** The body of `POST /v1/audio/music`. */
export const MUSIC_BODY = obj({
  model: coded(oneOf(MUSIC_MODELS, "Music model.", { default: DEFAULT_MUSIC_MODEL }), "not_a_music_model", "'{value}' is not a music model."),
  prompt: str("Description of the music; required for `alpha-music` (at most 2000 visible characters, `prompt_too_long`), at most 200 for beta models where it drives style and arrangement.", { examples: ["calm lo-fi piano"] }),
  lyrics: str("beta models only (at most 600 visible characters, `lyrics_too_long`): optional tags `[verse]`, `[chorus]`, `[bridge]`, `[Instrumental]`; `[Instrumental]` alone yields a vocal-less track. Ignored by `alpha-music`."),
  music_length_ms: lengthMs("Requested length (alias `duration_ms`); honoured by `alpha-music`, beta models derive the length from the lyrics.", { default: 30000 }),
  duration_ms: lengthMs("Alias of `music_length_ms`."),
  response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128", "x-error-message": FORMAT_MESSAGE }),
});

/** The body of `POST /v1/audio/sfx`. */
export const SFX_BODY = obj(
  {
    model: coded(oneOf(SFX_MODELS, "Sound-effect model.", { default: DEFAULT_SFX_MODEL }), "not_an_sfx_model", "'{value}' is not a sound-effect model."),
    prompt: str("Description of the sound (alias `text`); required, at most 500 characters (`prompt_too_long`).", { examples: ["a door creaking open"] }),
    text: str("Alias of `prompt`."),
    duration_seconds: coded(
      num("Length in seconds; the model picks one when omitted.", { minimum: 0.5, maximum: 22 }),
      { type: "invalid_request", "*": "invalid_duration" },
      { type: "duration_seconds must be a number.", "*": "duration_seconds must be from 0.5 to 22." },
    ),
    prompt_influence: num("0 (creative) to 1 (strict).", { minimum: 0, maximum: 1, default: 0.3, "x-error-message": "prompt_influence must be a number from 0 to 1." }),
    response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128", "x-error-message": FORMAT_MESSAGE }),
  },
  [],
  { description: "`prompt` (or `text`) is required." },
);

/** A speech request body as received (types already checked by the route schema). */
export type SpeechRequestBody = Static<typeof SPEECH_BODY>;
/** A music request body as received (types already checked by the route schema). */
export type MusicRequestBody = Static<typeof MUSIC_BODY>;
/** A sound-effect request body as received (types already checked by the route schema). */
export type SfxRequestBody = Static<typeof SFX_BODY>;
