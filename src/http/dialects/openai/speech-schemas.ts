/**
 * Route schemas of the OpenAI dialect's speech and model list with OpenAI's names (D48), documented under
 * the tag `openai` (the `/openai` scope renames their operation ids, routes.ts). Errors are the D1 body,
 * OpenAI's own error shape.
 */
import type { Static } from "typebox";
import { DEFAULT_SPEECH_MODEL } from "../../../catalog/models.ts";
import { SPEECH_BODY } from "../../../contracts/audio.ts";
import { AUDIO_FORMATS } from "../../../upstreams/types.ts";
import { AUDIO_CONTENT, binary, COST_HEADERS, errors, FALLBACK_HEADERS, json, MODEL_RETIRED, num, obj, oneOf, route, SIMULATE, str, typed } from "../../schemas/common.ts";
import { listModelsSchema } from "../../schemas/models.ts";
import { HD_SPEECH_MODEL } from "./models.ts";

/** OpenAI's `response_format` values the gateway serves; `opus`, `aac` and `flac` are not among them. */
const OPENAI_SPEECH_FORMATS = ["mp3", "wav", "pcm"] as const;
const SPEECH_FORMATS = [...OPENAI_SPEECH_FORMATS, ...AUDIO_FORMATS];
const SPEECH_FORMAT_MESSAGE = `response_format must be mp3, wav or pcm (or one of ${AUDIO_FORMATS.join(", ")}); opus, aac and flac are not available.`;

/** The body of `POST /openai/v1/audio/speech`: OpenAI's fields, and the native ones (speech.ts). */
const OPENAI_SPEECH_BODY = obj(
  {
    ...SPEECH_BODY.properties,
    model: str(
      `\`tts-1\` and \`gpt-4o-mini-tts\` name \`${DEFAULT_SPEECH_MODEL}\`, \`tts-1-hd\` names \`${HD_SPEECH_MODEL}\`; a speech model id of the catalog works as it is (\`GET /openai/v1/models\`). Default \`${DEFAULT_SPEECH_MODEL}\`.`,
      { maxLength: 200, examples: ["tts-1"] },
    ),
    voice: typed<string | { id: string }>({
      anyOf: [str("An OpenAI voice name (`alloy`, `ash`, `ballad`, `coral`, `echo`, `fable`, `nova`, `onyx`, `sage`, `shimmer`, `verse`, `marin`, `cedar`: fixed alpha library voices), or a voice id of the library or of your own voices.", { maxLength: 128 }), obj({ id: str("A voice id.", { maxLength: 128 }) }, ["id"])],
      description: "The voice (alias `voice_id`, which wins): a name, an id, or `{id}`.",
      "x-error-message": "voice must be a voice name or id, or {id: <voice id>}.",
    }),
    instructions: str("Accepted and not used: the gateway's speech models take no speaking instructions."),
    response_format: oneOf(SPEECH_FORMATS, "`mp3` (default), `wav` or `pcm` (raw 24 kHz 16-bit little-endian mono), or a gateway format name.", { default: "mp3", "x-error-message": SPEECH_FORMAT_MESSAGE }),
    speed: num("0.25 to 4.0; only 1.0 (the default) is served, another value answers 400 `invalid_request`.", { minimum: 0.25, maximum: 4, default: 1, "x-error-message": "speed must be a number from 0.25 to 4.0." }),
    stream_format: oneOf(["audio"], "`audio` only: the answer is the audio itself.", { default: "audio", "x-error-message": "stream_format must be 'audio': server-sent audio events are not available." }),
  },
  [],
  { description: "`input` (or `text`) and `voice` (or `voice_id`) are required." },
);

/** A `POST /openai/v1/audio/speech` body as its schema types it. */
export type OpenAISpeechBody = Static<typeof OPENAI_SPEECH_BODY>;

/** `POST /openai/v1/audio/speech`: `client.audio.speech.create` (speech.ts). */
export const openAISpeechSchema = route({
  operationId: "createSpeech",
  summary: "Text to speech (OpenAI Speech API)",
  description:
    "`openai.audio.speech.create` with `baseURL: <gateway>/openai/v1`: `POST /v1/audio/speech` with OpenAI's model and voice names. `X-Svc-Model` is the catalog model that spoke; priced per 1000 input characters by that model (`GET /v1/pricing`). A model the OpenAI API of the gateway does not serve answers 404 `model_not_found`; nothing is charged for a refusal.",
  tags: ["openai"],
  access: "key",
  headers: SIMULATE,
  body: json(OPENAI_SPEECH_BODY),
  responses: {
    200: {
      description: "The audio (`Content-Type` matches `response_format`: `audio/mpeg`, `audio/wav`, `audio/pcm`).",
      headers: { ...COST_HEADERS, ...FALLBACK_HEADERS, "X-Svc-Chars-Billed": str("Input characters used for pricing.") },
      content: { ...AUDIO_CONTENT, "audio/wav": { schema: binary("WAV (`wav`): 24 kHz 16-bit mono PCM.") } },
    },
    ...errors({
      400: "`not_a_tts_model` (a model of another kind), `voice_required`, `input_too_long`, `voice_model_mismatch`, `invalid_request` (`speed` other than 1, `response_format` `opus`, `aac` or `flac`, `stream_format` `sse`)",
      401: "`auth_error`",
      402: "`billing_error`, `key_spend_limit`",
      403: "`voice_not_owned`, `model_not_allowed`",
      404: "`model_not_found` (a model the OpenAI API of the gateway does not serve: `GET /openai/v1/models` lists them)",
      410: `${MODEL_RETIRED}; \`voice_unavailable\`: a designed or cloned voice gone from the source that made it, or a voice the serving source does not know (nothing charged)`,
      429: "`rate_limited`",
      502: "`provider_error`",
    }),
  },
});

/** `GET /openai/v1/models`: `client.models.list` (models.ts `openAIModels`). */
export const openAIListModelsSchema = {
  ...listModelsSchema,
  summary: "Models of the OpenAI API (OpenAI Models API)",
  description:
    "`openai.models.list` with `baseURL: <gateway>/openai/v1`: the enabled models its routes serve (text, speech, transcription, audio understanding, image, video) as `GET /v1/models` shows them, with OpenAI's names (`tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`, `gpt-image-2`) in their `aliases`, and one entry per OpenAI name whose `alias_of` is the catalog model it names. A model outside this list answers 404 `model_not_found` on the OpenAI routes.",
} satisfies typeof listModelsSchema;
