/**
 * Route schemas of the ElevenLabs dialect (D36): ElevenLabs' own request fields (as `@elevenlabs/elevenlabs-js`
 * sends them) and answers, documented under the tag `elevenlabs`. These routes answer errors in ElevenLabs'
 * shape (`ElevenLabsError`, a 422 `ElevenLabsValidationError` for a body failing its schema), never the D1
 * body, so they are built here rather than with `route()` of `common.ts`, whose error answers are D1's.
 */
import { AUDIO_FORMATS } from "../../../upstreams/types.ts";
import { arr, AUDIO_CONTENT, bool, COST_HEADERS, int, nullable, num, obj, oneOf, queryInt, type Schema, SECURITY, str } from "../../schemas/common.ts";

/** The `security` of every dialect route: `xi-api-key` or `Authorization: Bearer` with a gateway API key. */
const DIALECT_SECURITY = [{ xiApiKey: [] }, ...SECURITY.key];

/** `{"detail": {"status", "message"}}`: `status` is the native `error.code` (D36). */
const ERROR_BODY = obj(
  {
    detail: obj(
      {
        status: str("The gateway's error code (`auth_error`, `billing_error`, `not_a_tts_model`, ...)."),
        message: str("What went wrong."),
      },
      ["status", "message"],
    ),
  },
  ["detail"],
  { description: "An error in ElevenLabs' shape." },
);

/** FastAPI's 422 body: one item per field that failed the schema. */
const VALIDATION_BODY = obj(
  {
    detail: arr(
      obj(
        {
          loc: arr(str("`body`, `query` or `path`, then the field."), "Where the failing value is."),
          msg: str("What is wrong."),
          type: str("The kind of failure (`missing`, `string_type`, ...)."),
        },
        ["loc", "msg", "type"],
      ),
      "The failures.",
    ),
  },
  ["detail"],
  { description: "A request that fails the schema (FastAPI's shape)." },
);

const errorAnswer = (description: string) => ({ description, content: { "application/json": { schema: ERROR_BODY } } });

/** The error answers every dialect route may give. */
const COMMON_ERRORS = {
  401: errorAnswer("`auth_error`: missing, unknown or expired key."),
  404: errorAnswer("`not_found`, `endpoint_not_supported`."),
  429: errorAnswer("`rate_limited`."),
  503: errorAnswer("`limits_unavailable`, `service_unavailable`."),
};

/** The error answers of a paid dialect route. */
const PAID_ERRORS = {
  ...COMMON_ERRORS,
  400: errorAnswer("The native codes: `not_a_tts_model`, `input_too_long`, `voice_model_mismatch`, `invalid_request`, ..."),
  402: errorAnswer("`billing_error`, `key_spend_limit`: nothing charged."),
  403: errorAnswer("`model_not_allowed`, `voice_not_owned`."),
  410: errorAnswer("`model_retired`, `voice_unavailable`."),
  413: errorAnswer("`invalid_request`: body over the limit."),
  422: { description: "The body or query fails the schema.", content: { "application/json": { schema: VALIDATION_BODY } } },
  502: errorAnswer("`provider_error`: the upstream failed, nothing charged."),
};

/** Headers of an audio answer of the dialect. */
const AUDIO_HEADERS = {
  ...COST_HEADERS,
  "request-id": str("The request id (as `X-Svc-Request-Id`)."),
};

const OUTPUT_FORMAT = obj({
  output_format: oneOf(AUDIO_FORMATS, "Audio format of the answer (ElevenLabs' names).", { default: "mp3_44100_128" }),
});

const VOICE_PARAMS = obj({ voice_id: str("A voice of the alpha library (`GET /elevenlabs/v1/voices`).", { maxLength: 128 }) }, ["voice_id"]);

/** The body of `POST /elevenlabs/v1/text-to-speech/{voice_id}` (ElevenLabs' `BodyTextToSpeechFull`); other fields are ignored. */
export const EL_SPEECH_BODY = obj(
  {
    text: str("Text to speak (at most the model's limit, 5000 characters).", { minLength: 1 }),
    model_id: str("An ElevenLabs model id (`eleven_multilingual_v2`, `eleven_v3`, `eleven_flash_v2_5`, `eleven_turbo_v2_5`) or a catalog speech model id.", { default: "eleven_multilingual_v2" }),
    voice_settings: obj(
      {
        stability: num("0 to 1.", { minimum: 0, maximum: 1 }),
        similarity_boost: num("0 to 1.", { minimum: 0, maximum: 1 }),
        style: num("0 to 1.", { minimum: 0, maximum: 1 }),
        use_speaker_boost: bool("Speaker boost."),
        speed: num("Accepted and ignored."),
      },
      [],
      { description: "Voice tuning." },
    ),
  },
  ["text"],
);

const speechDoc = (operationId: string, summary: string, streamed: boolean) => ({
  operationId,
  summary,
  description: `ElevenLabs' text to speech${streamed ? ", streamed" : ""}, billed as \`POST /v1/audio/speech\` with the mapped model.`,
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  querystring: OUTPUT_FORMAT,
  params: VOICE_PARAMS,
  body: EL_SPEECH_BODY,
  response: {
    200: {
      description: "The audio.",
      headers: { ...AUDIO_HEADERS, "character-cost": str("Characters billed."), "X-Svc-Chars-Billed": str("Characters billed.") },
      content: AUDIO_CONTENT,
    },
    ...PAID_ERRORS,
  },
});

/** `POST /elevenlabs/v1/text-to-speech/{voice_id}`. */
export const elSpeechSchema = speechDoc("elevenLabsTextToSpeech", "ElevenLabs: text to speech", false);
/** `POST /elevenlabs/v1/text-to-speech/{voice_id}/stream`. */
export const elSpeechStreamSchema = speechDoc("elevenLabsTextToSpeechStream", "ElevenLabs: text to speech, streamed", true);

const LANGUAGE = obj({ language_id: str("Language code."), name: str("Language name.") }, ["language_id", "name"]);

/** An ElevenLabs `Model` object. */
const EL_MODEL = obj(
  {
    model_id: str("ElevenLabs' id of the model."),
    name: str("The catalog model's name."),
    can_be_finetuned: bool("Always false."),
    can_do_text_to_speech: bool("True."),
    can_do_voice_conversion: bool("Always false."),
    can_use_style: bool("True."),
    can_use_speaker_boost: bool("True."),
    serves_pro_voices: bool("Always false."),
    token_cost_factor: num("1."),
    description: str("The catalog id and price."),
    requires_alpha_access: bool("Always false."),
    max_characters_request_free_user: int("Character limit of one request."),
    max_characters_request_subscribed_user: int("Character limit of one request."),
    maximum_text_length_per_request: int("Character limit of one request."),
    languages: arr(LANGUAGE, "Languages."),
    concurrency_group: str("`standard`."),
  },
  ["model_id", "name", "can_do_text_to_speech", "languages"],
);

/** `GET /elevenlabs/v1/models`. */
export const elModelsSchema = {
  operationId: "elevenLabsListModels",
  summary: "ElevenLabs: models",
  description: "The alpha speech models as ElevenLabs `Model` objects.",
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  response: { 200: { description: "The models.", content: { "application/json": { schema: arr(EL_MODEL, "Models.") } } }, ...COMMON_ERRORS },
};

const count = (what: string) => int(what, { minimum: 0 });

/** The fields of ElevenLabs' `SubscriptionResponse` the SDK requires. */
const SUBSCRIPTION_FIELDS = {
  tier: str("The gateway tier's name (`tier_name` of `GET /v1/auth/me`)."),
  character_count: count("Speech characters billed this calendar month (UTC)."),
  character_limit: count("Characters the balance buys at the default speech model's price."),
  max_credit_limit_extension: int("0."),
  can_extend_character_limit: bool("false."),
  allowed_to_extend_character_limit: bool("false."),
  voice_slots_used: count("0."),
  professional_voice_slots_used: count("0."),
  professional_voice_slots_used_in_workspace: count("0."),
  voice_limit: count("0."),
  voice_add_edit_counter: count("0."),
  professional_voice_limit: count("0."),
  can_extend_voice_limit: bool("false."),
  can_use_instant_voice_cloning: bool("false."),
  can_use_professional_voice_cloning: bool("false."),
  current_overage: obj({ amount: str("`0`."), currency: str("`usd`.") }, ["amount", "currency"]),
  status: str("`active`."),
  open_invoices: arr(obj({}), "Empty."),
  has_open_invoices: bool("false."),
};
const SUBSCRIPTION = obj(SUBSCRIPTION_FIELDS, Object.keys(SUBSCRIPTION_FIELDS) as (keyof typeof SUBSCRIPTION_FIELDS)[]);

/** `GET /elevenlabs/v1/user/subscription`. */
export const elSubscriptionSchema = {
  operationId: "elevenLabsGetSubscription",
  summary: "ElevenLabs: subscription",
  description: "The account as an ElevenLabs `Subscription`.",
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  response: { 200: { description: "The subscription.", content: { "application/json": { schema: SUBSCRIPTION } } }, ...COMMON_ERRORS },
};

const USER_FIELDS = {
  user_id: str("The member behind the key (its creator)."),
  workspace_id: str("The organization the key acts for."),
  subscription: SUBSCRIPTION,
  is_new_user: bool("false."),
  can_use_delayed_payment_methods: bool("false."),
  is_onboarding_completed: bool("true."),
  is_onboarding_checklist_completed: bool("true."),
  created_at: int("When the account was made, Unix seconds."),
  seat_type: str("`workspace_admin`."),
};

/** `GET /elevenlabs/v1/user`. */
export const elUserSchema = {
  operationId: "elevenLabsGetUser",
  summary: "ElevenLabs: user",
  description: "The account as an ElevenLabs `User`.",
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  response: {
    200: { description: "The user.", content: { "application/json": { schema: obj(USER_FIELDS, Object.keys(USER_FIELDS) as (keyof typeof USER_FIELDS)[]) } } },
    ...COMMON_ERRORS,
  },
};

const generatedDoc = <B extends Schema>(operationId: string, summary: string, native: string, body: B) => ({
  operationId,
  summary,
  description: `ElevenLabs' ${summary.replace("ElevenLabs: ", "")}, billed as \`${native}\` with the mapped model.`,
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  querystring: OUTPUT_FORMAT,
  body,
  response: {
    200: { description: "The audio.", headers: { ...AUDIO_HEADERS, "X-Svc-Duration-Sec": str("Duration billed, seconds.") }, content: AUDIO_CONTENT },
    ...PAID_ERRORS,
  },
});

/** `POST /elevenlabs/v1/sound-generation` (ElevenLabs' `CreateSoundEffectRequest`); other fields are ignored. */
export const elSoundSchema = generatedDoc(
  "elevenLabsSoundGeneration",
  "ElevenLabs: sound effect",
  "POST /v1/audio/sfx",
  obj(
    {
      text: str("Description of the sound (at most 500 characters).", { minLength: 1 }),
      duration_seconds: num("Length in seconds, 0.5 to 22; the model picks one when omitted.", { minimum: 0.5, maximum: 22 }),
      prompt_influence: num("0 (creative) to 1 (strict).", { minimum: 0, maximum: 1 }),
      model_id: str("`eleven_text_to_sound_v2` or a catalog sound-effect model id.", { default: "eleven_text_to_sound_v2" }),
    },
    ["text"],
  ),
);

/** `POST /elevenlabs/v1/music` (ElevenLabs' `BodyComposeMusicV1MusicPost`, prompt form); other fields are ignored. */
export const elMusicSchema = generatedDoc(
  "elevenLabsComposeMusic",
  "ElevenLabs: music",
  "POST /v1/audio/music",
  obj(
    {
      prompt: str("Description of the music.", { minLength: 1 }),
      music_length_ms: int("Requested length, ms (the model's range is checked: `invalid_duration`)."),
      model_id: str("`music_v1`, `music_v2`, `music_v2_5` or a catalog music model id.", { default: "music_v2" }),
    },
    ["prompt"],
  ),
);

/** A boolean in a query string: `true` or `false`. */
const QUERY_BOOL = (description: string) => oneOf(["true", "false"], description);

/** An ElevenLabs `Voice` as the dialect answers it (src/http/dialects/elevenlabs/voices.ts). */
const EL_VOICE = obj(
  {
    voice_id: str("The voice id: an alpha library voice, or one of the caller's designed or cloned voices (`svc_...`)."),
    name: str("The voice's name."),
    category: str("`premade`, `professional`, `generated` (designed), `cloned`, ..."),
    labels: obj({}, [], { description: "`gender`, `age`, `accent`, `use_case`; `provider: beta` for voices that speak with the beta models.", additionalProperties: str("A label.") }),
    description: nullable(str("What the voice sounds like.")),
    preview_url: nullable(str("A short MP3 sample, or null.")),
    available_for_tiers: arr(str("A tier."), "Empty."),
    settings: nullable(
      obj(
        { stability: num("0 to 1."), similarity_boost: num("0 to 1."), style: num("0 to 1."), use_speaker_boost: bool("Speaker boost."), speed: num("Speed.") },
        [],
        { description: "ElevenLabs' default settings when `with_settings=true`, else null." },
      ),
    ),
    high_quality_base_model_ids: arr(str("An ElevenLabs model id."), "The models the voice speaks with (empty for beta voices)."),
    verified_languages: arr(obj({}), "Empty."),
    is_owner: bool("True for the caller's own voices."),
    is_legacy: bool("false."),
    created_at_unix: nullable(int("When the caller made the voice, Unix seconds; null for library voices.")),
  },
  ["voice_id", "name", "category", "labels"],
);

/** `GET /elevenlabs/v1/voices`. */
export const elListVoicesSchema = {
  operationId: "elevenLabsListVoices",
  summary: "ElevenLabs: voices",
  description: "Every voice the caller can list: their designed and cloned voices, newest first, then the alpha library. Not billed.",
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  querystring: obj({ show_legacy: QUERY_BOOL("Accepted and ignored.") }),
  response: {
    200: { description: "The voices.", content: { "application/json": { schema: obj({ voices: arr(EL_VOICE, "The voices.") }, ["voices"]) } } },
    ...COMMON_ERRORS,
    422: PAID_ERRORS[422],
    502: PAID_ERRORS[502],
  },
};

const stringOrList = (description: string) => ({ anyOf: [str(description), arr(str(description), description)] });

/** `GET /elevenlabs/v2/voices`. */
export const elSearchVoicesSchema = {
  operationId: "elevenLabsSearchVoices",
  summary: "ElevenLabs: search voices",
  description:
    "ElevenLabs' v2 voice search over the caller's voices and the alpha library: `search` in name, description and labels; filters; `sort`; pages of `page_size` with an opaque `next_page_token`. Other filters are accepted and ignored. Not billed.",
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  querystring: obj({
    page_size: queryInt("Voices per page, 1 to 100 (default 10).", "^(100|[1-9][0-9]?)$", "page_size must be an integer from 1 to 100."),
    next_page_token: str("The token of the previous page's answer.", { maxLength: 64 }),
    search: str("Case-insensitive text in the name, description or labels.", { maxLength: 200 }),
    sort: oneOf(["created_at_unix", "name"], "Sort field; without it, the caller's voices then the library's order."),
    sort_direction: oneOf(["asc", "desc"], "Sort direction.", { default: "desc" }),
    voice_type: str("`personal`, `workspace`, `non-default`, `saved`: the caller's voices; `default`: the library; `community`: none.", { maxLength: 32 }),
    category: str("`premade`, `professional`, `generated`, `cloned`.", { maxLength: 32 }),
    gender: str("A gender label.", { maxLength: 32 }),
    age: str("An age label.", { maxLength: 32 }),
    accent: str("An accent label.", { maxLength: 64 }),
    use_cases: stringOrList("A use-case label (repeated or comma-separated)."),
    voice_ids: stringOrList("Voice ids to look up (repeated or comma-separated)."),
    include_total_count: QUERY_BOOL("Accepted; `total_count` is always given."),
  }),
  response: {
    200: {
      description: "One page of voices.",
      content: {
        "application/json": {
          schema: obj(
            {
              voices: arr(EL_VOICE, "The page's voices."),
              has_more: bool("Whether another page follows."),
              total_count: int("Voices matching the filters.", { minimum: 0 }),
              next_page_token: nullable(str("The next page's token, or null.")),
            },
            ["voices", "has_more", "total_count", "next_page_token"],
          ),
        },
      },
    },
    ...COMMON_ERRORS,
    400: errorAnswer("`invalid_request`: a `next_page_token` this gateway did not give out."),
    422: PAID_ERRORS[422],
    502: PAID_ERRORS[502],
  },
};

/** `GET /elevenlabs/v1/voices/{voice_id}`. */
export const elGetVoiceSchema = {
  operationId: "elevenLabsGetVoice",
  summary: "ElevenLabs: one voice",
  description: "A voice the caller can use: an alpha library voice, one of their own, or a beta system voice. Not billed.",
  tags: ["elevenlabs"],
  security: DIALECT_SECURITY,
  params: VOICE_PARAMS,
  querystring: obj({ with_settings: QUERY_BOOL("Include ElevenLabs' default `settings`.") }),
  response: {
    200: { description: "The voice.", content: { "application/json": { schema: EL_VOICE } } },
    ...COMMON_ERRORS,
    404: errorAnswer("`voice_not_found`, `not_found`, `endpoint_not_supported`."),
    422: PAID_ERRORS[422],
    502: PAID_ERRORS[502],
  },
};
