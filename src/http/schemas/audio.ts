/**
 * Route schemas of speech, music, sound effects, transcription and audio understanding.
 */
import { DEFAULT_AUDIO_UNDERSTANDING_MODEL, DEFAULT_SFX_MODEL, DEFAULT_TRANSCRIPTION_MODEL } from "../../catalog/models.ts";
import { MUSIC_BODY, SFX_BODY, SPEECH_BODY } from "../../contracts/audio.ts";
import { AUDIO_CONTENT, binary, COST_HEADERS, errors, FALLBACK_HEADERS, H, HTTPS_URL, json, MODEL_RETIRED, num, obj, ok, oneOf, priceText, ref, type ResponseDoc, route, type Schema, SIMULATE, str } from "./common.ts";

/** Error answers every paid audio call shares besides its 400 codes. */
const PAID_ERRORS = { 401: "`auth_error`", 402: "`billing_error`, `key_spend_limit` (the key's spend limit)", 403: "`model_not_allowed` (not in the key's `models`)", 410: MODEL_RETIRED, 429: "`rate_limited`", 502: "`provider_error`" };

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
      403: "`voice_not_owned`, `model_not_allowed` (not in the key's `models`)",
      410: `${MODEL_RETIRED}; \`voice_unavailable\`: the designed or cloned voice is gone from the upstream source that made it (nothing charged)`,
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
