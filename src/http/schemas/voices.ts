/**
 * Route schemas of the voice library, voice design and voice cloning (D4, D5, D20).
 */
import { DEFAULT_VOICE_CLONE_MODEL, DEFAULT_VOICE_DESIGN_MODEL } from "../../catalog/models.ts";
import { VOICE_DESIGN_BODY } from "../../contracts/voices.ts";
import { arr, AUTH_ERR, binary, COST_HEADERS, errors, FALLBACK_HEADERS, json, MODEL_RETIRED, nullable, obj, ok, oneOf, priceText, ref, route, SIMULATE, str, usd } from "./common.ts";

const VOICE_CLONE_FORM = obj(
  {
    file: { ...binary("Reference recording: MP3, WAV or M4A, at most 10 MB, 10 seconds to 5 minutes."), contentMediaType: "audio/*" },
    name: str("Label for the voice, at most 64 characters.", { maxLength: 64 }),
    model: oneOf(["beta-voice-clone"], "Clone model.", { default: "beta-voice-clone" }),
  },
  ["file"],
);


/** `GET /v1/audio/voices`. */
export const listVoicesSchema = route({
  operationId: "listVoices",
  summary: "Voice library",
  description: "System voices of both providers (alpha about 3000, beta about 300), cached 5 minutes per provider. Use a voice's `voice_id` with the speech endpoint.",
  tags: ["voices"],
  access: "key",
  query: obj({ provider: oneOf(["alpha", "beta", "all"], "Which library.", { default: "alpha", "x-error-message": "provider must be 'alpha', 'beta' or 'all'." }) }),
  responses: {
    200: ok(
      "The voices.",
      obj({ object: oneOf(["list"], "Always `list`."), provider: oneOf(["alpha", "beta", "all"], "The library asked for."), data: arr(ref("Voice"), "Voice records.") }, ["object", "provider", "data"]),
      { "X-Svc-Cache": oneOf(["may-hit", "partial", "miss"], "`may-hit`: served from the cache; `partial`: with `provider=all` one provider answered; `miss`: fetched fresh.") },
    ),
    ...errors({ 400: "`invalid_request` (bad provider)", ...AUTH_ERR, 502: "`provider_error` (catalog unavailable; with `all` only when both fail)" }),
  },
});

/** `GET /v1/audio/voices/alpha/:voice_id/preview.mp3`. */
export const getVoicePreviewSchema = route({
  operationId: "getVoicePreview",
  summary: "Preview of an alpha library voice",
  description: "Public, so that `<audio>` tags can play it. Cached for a day.",
  tags: ["voices"],
  access: "public",
  params: obj({ voice_id: str("An alpha voice id.", { maxLength: 64 }) }, ["voice_id"]),
  responses: {
    200: { description: "MP3 sample.", content: { "audio/mpeg": { schema: binary("MP3 sample.") } } },
    ...errors({ 404: "`not_found`" }),
  },
});

/** `POST /v1/audio/voice-design`. */
export const designVoiceSchema = route({
  operationId: "designVoice",
  summary: "Design a voice from a description",
  description: `Flat ${priceText(DEFAULT_VOICE_DESIGN_MODEL)}, charged once; the voice belongs to the caller and works with \`beta-speech-*\` models.`,
  tags: ["voices"],
  access: "key",
  headers: SIMULATE,
  body: json(VOICE_DESIGN_BODY),
  responses: {
    200: ok(
      "The new voice.",
      obj({ voice_id: str("`svc_<random>`."), name: nullable(str("The label, or null.")), model: str("Model id."), cost_usd: usd("Charged amount"), balance_usd: usd("Remaining balance") }, ["voice_id", "name", "model", "cost_usd", "balance_usd"]),
      { ...COST_HEADERS, ...FALLBACK_HEADERS },
    ),
    ...errors({
      400: "`not_a_voice_design_model`, `description_too_long`, `invalid_request`",
      401: "`auth_error`",
      402: `\`insufficient_credits\` (balance below ${priceText(DEFAULT_VOICE_DESIGN_MODEL)}), \`key_spend_limit\` (the key's spend limit)`,
      403: "`model_not_allowed` (not in the key's `models`)",
      410: MODEL_RETIRED,
      429: "`rate_limited`",
      500: "`ownership_write_failed`",
      502: "`provider_error`",
    }),
  },
});

/** `POST /v1/audio/voice-clone`. */
export const cloneVoiceSchema = route({
  operationId: "cloneVoice",
  summary: "Clone a voice from a recording",
  description: `multipart/form-data. Flat ${priceText(DEFAULT_VOICE_CLONE_MODEL)}, charged once; the voice belongs to the caller and works with \`beta-speech-*\` models. Out-of-range files are rejected before any charge.`,
  tags: ["voices"],
  access: "key",
  headers: SIMULATE,
  body: { "multipart/form-data": { schema: VOICE_CLONE_FORM } },
  responses: {
    200: ok(
      "The new voice.",
      obj({ voice_id: str("`svc_<random>`."), name: nullable(str("The label, or null.")), cost_usd: usd(`Charged amount (${priceText(DEFAULT_VOICE_CLONE_MODEL)})`), balance_usd: usd("Remaining balance") }, ["voice_id", "name", "cost_usd", "balance_usd"]),
      { ...COST_HEADERS, ...FALLBACK_HEADERS },
    ),
    ...errors({
      400: "`not_a_voice_clone_model`, `invalid_request` (file missing or form invalid), `reference_too_short`, `reference_too_long`, `audio_unreadable`",
      401: "`auth_error`",
      402: `\`insufficient_credits\` (balance below ${priceText(DEFAULT_VOICE_CLONE_MODEL)}), \`key_spend_limit\` (the key's spend limit)`,
      403: "`model_not_allowed` (not in the key's `models`)",
      410: MODEL_RETIRED,
      413: "`invalid_request` (file over 10 MB)",
      415: "`invalid_request` (not MP3, WAV or M4A)",
      429: "`rate_limited`",
      500: "`ownership_write_failed` (no charge; safe to retry)",
      502: "`provider_error`",
    }),
  },
});
