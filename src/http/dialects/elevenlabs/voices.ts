/**
 * Voices of the ElevenLabs dialect (D36): the gateway's alpha library and the caller's own designed and
 * cloned voices as ElevenLabs `Voice` objects, the v2 search (filters, sort, paging by an opaque
 * `next_page_token`) and the lookup of one voice. Reads the cached library (audio/voice-library.ts) and the
 * owner's voices (audio/voices.ts); nothing here is billed.
 */
import { listOwnedVoices, type OwnedVoiceSummary } from "../../../audio/voices.ts";
import { AppError, errors } from "../../../errors.ts";
import type { Services } from "../../../services.ts";
import type { SimulateMode, VoiceRecord } from "../../../upstreams/types.ts";

/** ElevenLabs' voice categories (`VoiceCategory` of the SDK). */
const CATEGORIES = new Set(["generated", "cloned", "premade", "professional", "famous", "high_quality"]);

/** ElevenLabs' default voice settings (`VoiceSettings`), answered when `with_settings` asks for them. */
export const DEFAULT_VOICE_SETTINGS = Object.freeze({ stability: 0.5, similarity_boost: 0.75, style: 0, use_speaker_boost: true, speed: 1 });

/** The ElevenLabs speech models an alpha library voice speaks with (its `high_quality_base_model_ids`). */
const ALPHA_MODEL_IDS = ["eleven_v3", "eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5"];

/** An ElevenLabs `Voice` as the dialect answers it (the fields the SDK reads; the rest are optional there). */
export interface ElevenLabsVoice {
  voice_id: string;
  name: string;
  category: string;
  labels: Record<string, string>;
  description: string | null;
  preview_url: string | null;
  available_for_tiers: string[];
  settings: typeof DEFAULT_VOICE_SETTINGS | null;
  high_quality_base_model_ids: string[];
  verified_languages: never[];
  is_owner: boolean;
  is_legacy: boolean;
  created_at_unix: number | null;
}

/** A library record as an ElevenLabs voice; labels that are empty are left out. */
function libraryVoice(r: VoiceRecord): ElevenLabsVoice {
  if (r.provider === "beta") {
    return {
      voice_id: r.voice_id,
      name: r.name,
      category: "premade",
      labels: { provider: "beta" },
      description: r.description.join(", ") || null,
      preview_url: null,
      available_for_tiers: [],
      settings: null,
      high_quality_base_model_ids: [],
      verified_languages: [],
      is_owner: false,
      is_legacy: false,
      created_at_unix: null,
    };
  }
  return {
    voice_id: r.voice_id,
    name: r.name,
    category: CATEGORIES.has(r.category) ? r.category : "premade",
    labels: Object.fromEntries(Object.entries(r.labels).filter(([, v]) => v !== "")),
    description: r.description || null,
    preview_url: r.preview_url || null,
    available_for_tiers: [],
    settings: null,
    high_quality_base_model_ids: ALPHA_MODEL_IDS,
    verified_languages: [],
    is_owner: false,
    is_legacy: false,
    created_at_unix: null,
  };
}

/**
 * An owned (designed or cloned) voice as an ElevenLabs voice: category `generated` or `cloned`, label
 * `provider: beta` (these voices speak with the beta models, D20).
 */
function ownedVoice(v: OwnedVoiceSummary): ElevenLabsVoice {
  return {
    voice_id: v.voiceId,
    name: v.name ?? v.voiceId,
    category: v.source === "design" ? "generated" : "cloned",
    labels: { provider: "beta" },
    description: v.description,
    preview_url: null,
    available_for_tiers: [],
    settings: null,
    high_quality_base_model_ids: [],
    verified_languages: [],
    is_owner: true,
    is_legacy: false,
    created_at_unix: Math.floor(v.createdAt / 1000),
  };
}

/**
 * Every voice the caller may list: their own voices (newest first), then the alpha library in its order.
 * @throws AppError 502 `provider_error` when the alpha catalog is unavailable.
 */
export async function voicesOf(services: Services, accountId: string, simulate: SimulateMode | null): Promise<ElevenLabsVoice[]> {
  const [owned, library] = await Promise.all([listOwnedVoices(services.db.kysely, accountId), services.voiceLibrary.records("alpha", simulate)]);
  return [...owned.reverse().map(ownedVoice), ...library.map(libraryVoice)];
}

/**
 * One voice the caller may use: an alpha library voice, one of their own voices or a beta system voice.
 * @throws AppError 404 `voice_not_found` for any other id (another account's voice too: its existence is not told).
 * @throws AppError 502 `provider_error` when the catalogs are unavailable.
 */
export async function voiceOf(services: Services, accountId: string, voiceId: string, simulate: SimulateMode | null): Promise<ElevenLabsVoice> {
  const owned = (await listOwnedVoices(services.db.kysely, accountId)).find((v) => v.voiceId === voiceId);
  if (owned) return ownedVoice(owned);
  const alpha = (await services.voiceLibrary.records("alpha", simulate)).find((r) => r.voice_id === voiceId);
  if (alpha) return libraryVoice(alpha);
  const beta = await services.voiceLibrary.records("beta", simulate).catch(() => []);
  const found = beta.find((r) => r.voice_id === voiceId);
  if (found) return libraryVoice(found);
  throw new AppError(404, "voice_not_found", `No voice '${voiceId}': see GET /elevenlabs/v2/voices.`);
}

/** The v2 search's query (ElevenLabs' `voices.search`): filters the dialect honours; others are ignored. */
export interface VoiceSearch {
  page_size?: string;
  next_page_token?: string;
  search?: string;
  sort?: "created_at_unix" | "name";
  sort_direction?: "asc" | "desc";
  voice_type?: string;
  category?: string;
  gender?: string;
  age?: string;
  accent?: string;
  use_cases?: string | string[];
  voice_ids?: string | string[];
  include_total_count?: string;
}

/** ElevenLabs' default and largest page (`page_size`). */
export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;

/** An opaque page token: the offset of the page's first voice, base64url. */
function tokenOf(offset: number): string {
  return Buffer.from(`o:${offset}`).toString("base64url");
}

/** The offset a token names. @throws AppError 400 `invalid_request` for a token the gateway did not give out. */
function offsetOf(token: string): number {
  const m = /^o:(\d{1,9})$/.exec(Buffer.from(token, "base64url").toString("utf8"));
  if (!m) throw errors.invalidRequest("next_page_token is not a token this gateway gave out.", "next_page_token");
  return Number(m[1]);
}

const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean));

/**
 * One page of the v2 search over {@link voicesOf}: `search` (case-insensitive, in name, description and
 * labels), `voice_type` (`personal`, `workspace`, `non-default` and `saved`: the caller's own voices;
 * `default`: the library; `community`: none), `category`, label filters, `voice_ids`, `sort`, and paging.
 * Answers ElevenLabs' `GetVoicesV2Response`.
 * @throws AppError 400 `invalid_request` for a foreign `next_page_token`; 502 as {@link voicesOf}.
 */
export async function searchVoices(services: Services, accountId: string, q: VoiceSearch, simulate: SimulateMode | null) {
  let voices = await voicesOf(services, accountId, simulate);
  const type = q.voice_type;
  if (type === "personal" || type === "workspace" || type === "non-default" || type === "saved") voices = voices.filter((v) => v.is_owner);
  else if (type === "default") voices = voices.filter((v) => !v.is_owner);
  else if (type === "community") voices = [];
  if (q.category) voices = voices.filter((v) => v.category === q.category);
  for (const key of ["gender", "age", "accent"] as const) {
    const want = q[key]?.toLowerCase();
    if (want) voices = voices.filter((v) => v.labels[key]?.toLowerCase() === want);
  }
  const useCases = asList(q.use_cases).map((s) => s.toLowerCase());
  if (useCases.length > 0) voices = voices.filter((v) => useCases.includes(v.labels.use_case?.toLowerCase() ?? ""));
  const ids = asList(q.voice_ids);
  if (ids.length > 0) voices = voices.filter((v) => ids.includes(v.voice_id));
  const needle = q.search?.trim().toLowerCase();
  if (needle) voices = voices.filter((v) => [v.name, v.description ?? "", ...Object.values(v.labels)].some((s) => s.toLowerCase().includes(needle)));
  if (q.sort) {
    const dir = q.sort_direction === "asc" ? 1 : -1;
    const key = q.sort;
    voices = [...voices].sort((a, b) => dir * (key === "name" ? a.name.localeCompare(b.name) : (a.created_at_unix ?? 0) - (b.created_at_unix ?? 0)));
  }
  const size = Math.min(MAX_PAGE_SIZE, Math.max(1, q.page_size === undefined ? DEFAULT_PAGE_SIZE : Number(q.page_size)));
  const start = q.next_page_token ? offsetOf(q.next_page_token) : 0;
  const page = voices.slice(start, start + size);
  const hasMore = start + size < voices.length;
  return { voices: page, has_more: hasMore, total_count: voices.length, next_page_token: hasMore ? tokenOf(start + size) : null };
}
