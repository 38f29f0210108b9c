/**
 * Route schemas of speech, music, sound effects, transcription and audio understanding.
 */
import type { TNumber } from "typebox";
import {
  DEFAULT_AUDIO_UNDERSTANDING_MODEL,
  DEFAULT_MUSIC_MODEL,
  DEFAULT_SFX_MODEL,
  DEFAULT_SPEECH_MODEL,
  DEFAULT_TRANSCRIPTION_MODEL,
} from "../../catalog/models.ts";
import { AUDIO_CONTENT, AUDIO_FORMATS, binary, bool, coded, COST_HEADERS, errors, FALLBACK_HEADERS, H, HTTPS_URL, json, modelsWith, num, obj, ok, oneOf, priceText, ref, type ResponseDoc, route, type Schema, type SchemaOptions, SIMULATE, str } from "./common.ts";

const SPEECH_MODELS = modelsWith("speech");
const MUSIC_MODELS = modelsWith("music");
const SFX_MODELS = modelsWith("sfx");

const FORMAT_MESSAGE = `response_format must be one of ${AUDIO_FORMATS.join(", ")}.`;
/** A 0-1 voice setting. */
const unit = (what: string): TNumber => num(`${what}, 0 to 1.`, { minimum: 0, maximum: 1, "x-error-message": "{param} must be a number from 0 to 1." });

const SPEECH_BODY = obj(
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

const MUSIC_BODY = obj({
  model: coded(oneOf(MUSIC_MODELS, "Music model.", { default: DEFAULT_MUSIC_MODEL }), "not_a_music_model", "'{value}' is not a music model."),
  prompt: str("Description of the music; required for `alpha-music` (at most 2000 visible characters, `prompt_too_long`), at most 200 for beta models where it drives style and arrangement.", { examples: ["calm lo-fi piano"] }),
  lyrics: str("beta models only (at most 600 visible characters, `lyrics_too_long`): optional tags `[verse]`, `[chorus]`, `[bridge]`, `[Instrumental]`; `[Instrumental]` alone yields a vocal-less track. Ignored by `alpha-music`."),
  music_length_ms: lengthMs("Requested length (alias `duration_ms`); honoured by `alpha-music`, beta models derive the length from the lyrics.", { default: 30000 }),
  duration_ms: lengthMs("Alias of `music_length_ms`."),
  response_format: oneOf(AUDIO_FORMATS, "Audio format of the answer.", { default: "mp3_44100_128", "x-error-message": FORMAT_MESSAGE }),
});

const SFX_BODY = obj(
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


/** Error answers every paid audio call shares besides its 400 codes. */
const PAID_ERRORS = { 401: "`auth_error`", 402: "`billing_error`, `key_spend_limit` (the key's spend limit, D34)", 403: "`model_not_allowed` (not in the key's `models`, D34)", 429: "`rate_limited`", 502: "`provider_error`" };

const AUDIO_FILE = (limit: string) => ({ ...binary(`The audio file (${limit}); the duration is read from the audio.`), contentMediaType: "audio/*" });
const TRANSCRIPTION_FORMAT = oneOf(["json", "text", "verbose_json"], "Answer format.", { default: "json" });
const AUDIO_ANSWER = (what: string, extraHeaders: Record<string, Schema> = {}): ResponseDoc => ({
  description: `${what} as audio bytes in \`response_format\`; with \`?save_to_blob=1\` the JSON \`audio.generation\` instead.`,
  headers: { ...COST_HEADERS, ...FALLBACK_HEADERS, ...extraHeaders },
  content: { ...AUDIO_CONTENT, ...json(ref("AudioGeneration")) },
});
const SAVE_TO_BLOB = obj({ save_to_blob: oneOf(["1", "0", "true", "false"], "`1` stores the MP3 and answers the JSON form `audio.generation` (the output appears in the gallery).", { "x-error-message": "save_to_blob must be 1 or 0." }) });

/** `POST /v1/audio/speech`. */
export const createSpeechSchema = route({
  operationId: "createSpeech",
  summary: "Text to speech",
  description:
    "Synchronous. Priced per 1000 input characters by model (see `GET /v1/pricing`). A designed or cloned voice may only be used by its owner, and is served only by the upstream source that made it. With `stream: true` (beta models) the audio arrives chunk by chunk. `X-Svc-Fallback: true` and `X-Svc-Fallback-Layer: 1` when a later source of the family served the call.",
  tags: ["audio"],
  access: "key",
  headers: SIMULATE,
  body: json(SPEECH_BODY),
  responses: {
    200: {
      description: "The audio (`Content-Type` matches `response_format`).",
      headers: { ...COST_HEADERS, ...FALLBACK_HEADERS, "X-Svc-Chars-Billed": str("Input characters used for pricing.") },
      content: AUDIO_CONTENT,
    },
    ...errors({
      400: "`not_a_tts_model`, `voice_required`, `input_too_long`, `voice_model_mismatch`, `invalid_request`",
      ...PAID_ERRORS,
      403: "`voice_not_owned`, `model_not_allowed` (not in the key's `models`, D34)",
      410: "`voice_unavailable`: the designed or cloned voice is gone from the upstream source that made it (nothing charged)",
    }),
  },
});

/** `POST /v1/audio/music`. */
export const createMusicSchema = route({
  operationId: "createMusic",
  summary: "Generate music",
  description: `Synchronous. \`alpha-music\` ${priceText("alpha-music")} of requested length; \`beta-music\` ${priceText("beta-music")}, \`beta-music-pro\` ${priceText("beta-music-pro")}.`,
  tags: ["audio"],
  access: "key",
  query: SAVE_TO_BLOB,
  headers: SIMULATE,
  body: json(MUSIC_BODY),
  responses: {
    200: AUDIO_ANSWER("The music", { "X-Svc-Duration-Sec": H.duration }),
    ...errors({
      400: "`not_a_music_model`, `prompt_too_long`, `lyrics_too_long`, `invalid_duration`, `invalid_request`",
      ...PAID_ERRORS,
    }),
  },
});

/** `POST /v1/audio/sfx`. */
export const createSoundEffectSchema = route({
  operationId: "createSoundEffect",
  summary: "Generate a sound effect",
  description: `Synchronous. Flat ${priceText(DEFAULT_SFX_MODEL)} per generation.`,
  tags: ["audio"],
  access: "key",
  query: SAVE_TO_BLOB,
  headers: SIMULATE,
  body: json(SFX_BODY),
  responses: {
    200: AUDIO_ANSWER("The sound effect", { "X-Svc-Duration-Sec": H.duration }),
    ...errors({
      400: "`not_an_sfx_model`, `prompt_too_long`, `invalid_duration`, `invalid_request`",
      ...PAID_ERRORS,
    }),
  },
});

/** `POST /v1/audio/transcriptions`. */
export const createTranscriptionSchema = route({
  operationId: "createTranscription",
  summary: "Speech to text",
  description:
    `The audio as multipart part \`file\` (up to 25 MB) or as JSON \`audio_url\` (https, up to 100 MB). Billed per started minute, 1-minute minimum (${priceText(DEFAULT_TRANSCRIPTION_MODEL)}).`,
  tags: ["audio"],
  access: "key",
  headers: SIMULATE,
  body: {
    "multipart/form-data": {
      schema: obj(
        {
          file: AUDIO_FILE("up to 25 MB"),
          model: str("Transcription model or alias.", { default: "transcribe" }),
          response_format: TRANSCRIPTION_FORMAT,
        },
        ["file"],
      ),
    },
    ...json(
      obj(
        {
          audio_url: HTTPS_URL("Where to download the audio (up to 100 MB; private addresses are refused)."),
          model: str("Transcription model or alias.", { default: "transcribe" }),
          response_format: TRANSCRIPTION_FORMAT,
        },
        ["audio_url"],
      ),
    ),
  },
  responses: {
    200: {
      description: "The transcript: `{text}`; `response_format=text` answers plain text, `verbose_json` adds `duration` and `segments`.",
      headers: { ...COST_HEADERS, ...FALLBACK_HEADERS, "X-Svc-Duration-Sec": H.duration },
      content: { ...json(obj({ text: str("The transcript.") }, ["text"], { additionalProperties: true })), "text/plain": { schema: { type: "string" } } },
    },
    ...errors({
      400: "`invalid_request`, `invalid_model`, `audio_unreadable`, `invalid_audio_url`, `audio_url_unreachable`",
      ...PAID_ERRORS,
      413: "`invalid_request` (file over 25 MB or download over 100 MB)",
    }),
  },
});

/** `POST /v1/audio/understand`. */
export const understandAudioSchema = route({
  operationId: "understandAudio",
  summary: "Ask a question about audio",
  description: `Audio scene question answering. Billed per started minute, 1-minute minimum (${priceText(DEFAULT_AUDIO_UNDERSTANDING_MODEL)}).`,
  tags: ["audio"],
  access: "key",
  headers: SIMULATE,
  body: {
    "multipart/form-data": {
      schema: obj(
        {
          file: AUDIO_FILE("up to 25 MB"),
          prompt: str("The question about the audio."),
          model: str("Audio-understanding model or alias.", { default: "audio-understand" }),
        },
        ["file", "prompt"],
      ),
    },
  },
  responses: {
    200: ok(
      "The answer.",
      obj({ text: str("The answer."), model: str("Resolved model id."), duration_sec: num("Audio duration used for billing, seconds.") }, ["text", "model", "duration_sec"]),
      { ...COST_HEADERS, ...FALLBACK_HEADERS, "X-Svc-Duration-Sec": H.duration },
    ),
    ...errors({
      400: "`invalid_request` (file or prompt missing), `invalid_model`, `audio_unreadable`",
      ...PAID_ERRORS,
      413: "`invalid_request` (file over 25 MB)",
    }),
  },
});
