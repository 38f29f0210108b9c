/**
 * ElevenLabs' answers as its SDK's tests and users quoting real answers show them, each naming where it
 * comes from. The fake (fakes/elevenlabs.ts) answers in these shapes; decode.test.ts feeds
 * them to the decoders. Where a value is ours rather than the source's, the comment says so.
 */

/**
 * elevenlabs/elevenlabs-js `tests/wire/voices.test.ts` test "search" (`GET /v2/voices`): one voice of
 * the answer, cut to the fields a listing record reads plus a few it ignores.
 */
export const V2_VOICE_RACHEL = {
  voice_id: "21m00Tcm4TlvDq8ikWAM",
  name: "Rachel",
  category: "professional",
  labels: { accent: "American", age: "middle-aged", description: "expressive", gender: "female", use_case: "social media" },
  description: "A warm, expressive voice with a touch of humor.",
  preview_url: "https://storage.googleapis.com/eleven-public-prod/premade/voices/9BWtsMINqrJLrRacOk9x/405766b8-1f4e-4d3c-aba1-6f25333823ec.mp3",
  available_for_tiers: ["creator", "enterprise"],
  settings: { stability: 1, use_speaker_boost: true, similarity_boost: 1, style: 0, speed: 1 },
  is_owner: false,
} as const;

/** The same file, test "search": the page around it (`GetVoicesV2Response`). */
export const V2_VOICES_PAGE = { voices: [V2_VOICE_RACHEL], has_more: true, total_count: 1, next_page_token: "next_page_token" } as const;

/**
 * elevenlabs/elevenlabs-js `tests/wire/voices.test.ts` test "get_shared" (`GET /v1/shared-voices`): a
 * library voice, which names gender, age, accent and use case at its top level (`LibraryVoiceResponse`).
 */
export const SHARED_VOICE_ALITA = {
  public_owner_id: "63e84100a6bf7874ba37a1bab9a31828a379ec94b891b401653b655c5110880f",
  voice_id: "sB1b5zUrxQVAFl2PhZFp",
  date_unix: 1714423232,
  name: "Alita",
  accent: "american",
  gender: "Female",
  age: "young",
  descriptive: "calm",
  use_case: "characters_animation",
  category: "professional",
  language: "en",
  locale: "locale",
  description: "Perfectly calm, neutral and strong voice. Great for a young female protagonist.",
  preview_url: "https://storage.googleapis.com/eleven-public-prod/wqkMCd9huxXHX1dy5mLJn4QEQHj1/voices/sB1b5zUrxQVAFl2PhZFp/55e71aac-5cb7-4b3d-8241-429388160509.mp3",
  usage_character_count_1y: 12852,
  usage_character_count_7d: 12852,
  play_api_usage_character_count_1y: 12852,
  cloned_by_count: 11,
  free_users_allowed: true,
  live_moderation_enabled: false,
  featured: false,
} as const;

/** The same file, test "get_shared": the page around it (`GetLibraryVoicesResponse`). */
export const SHARED_VOICES_PAGE = { voices: [SHARED_VOICE_ALITA], has_more: false, total_count: 0, last_sort_id: "last_sort_id" } as const;

/**
 * A premade voice as `GET /v1/voices` answers it with `description: null` and no `labels.use_case` (the
 * shape many users paste; e.g. dograh-hq/dograh#290 lists "Roger" `CwhRBWXzGAHq8TQ4Fs17`). The labels'
 * values are ours.
 */
export const PREMADE_VOICE_ROGER = {
  voice_id: "CwhRBWXzGAHq8TQ4Fs17",
  name: "Roger - Laid-Back, Casual, Resonant",
  category: "premade",
  labels: { accent: "american", age: "middle_aged", gender: "male" },
  description: null,
  preview_url: null,
} as const;

/** help.elevenlabs.io article 19572237925521 "API - Error Code 400 or 401": a 401 with a wrong key. */
export const ERROR_INVALID_KEY = { detail: { status: "invalid_api_key", message: "Invalid API key" } } as const;

/** home-assistant/core#160414: the 401 ElevenLabs answered when the account's credits ran out. */
export const ERROR_QUOTA = {
  detail: {
    status: "quota_exceeded",
    message: "This request exceeds your quota of 10000. You have 0 credits remaining, while 91 credits are required for this request.",
  },
} as const;

/** SubtitleEdit/subtitleedit#9246: ElevenLabs' 429 under load. */
export const ERROR_SYSTEM_BUSY = {
  detail: { status: "system_busy", message: "We are sorry, the system is experiencing heavy traffic, please try again. Higher subscriptions have higher priority." },
} as const;

/** elevenlabs/elevenlabs-docs#1317: the SDK's `ElevenLabsError` for an unknown voice (status 404 there). */
export const ERROR_VOICE_NOT_FOUND = { detail: { status: "voice_not_found", message: "A voice with the voice_id foo was not found." } } as const;

/** elevenlabs/elevenlabs-python#293: the older spelling of an unknown voice, 400. */
export const ERROR_VOICE_DOES_NOT_EXIST = {
  detail: { status: "voice_does_not_exist", message: "A voice with voice_id TqZ039H4XqpiGTowubpy does not exist." },
} as const;

/** dograh-hq/dograh#290: the newer error shape with `type`, `code` and `status` (402, a library voice on a free plan). */
export const ERROR_PAYMENT_REQUIRED = {
  detail: {
    type: "payment_required",
    code: "paid_plan_required",
    message: "Free users cannot use library voices via the API. Please upgrade your subscription to use this voice.",
    status: "payment_required",
    request_id: "0xxxxxxxx11c",
  },
} as const;

/** The help center article above: a 400 `max_character_limit_exceeded`. */
export const ERROR_CHARACTER_LIMIT = {
  detail: {
    status: "max_character_limit_exceeded",
    message: "This request's text has 627 characters and exceeds the character limit of 333 characters for non signed in accounts.",
  },
} as const;

/** A FastAPI validation error (elevenlabs-js throws `UnprocessableEntityError` for 422); values ours. */
export const ERROR_VALIDATION = {
  detail: [{ type: "less_than_equal", loc: ["body", "music_length_ms"], msg: "Input should be less than or equal to 600000", input: 700000, ctx: { le: 600000 } }],
} as const;
