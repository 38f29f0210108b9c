/**
 * The voice catalog of one ElevenLabs source: the account's voices, then ElevenLabs' public library.
 *
 * - Account: `GET /v2/voices?page_size=100[&next_page_token=...]` -> `{voices, has_more, total_count,
 *   next_page_token}` (elevenlabs/elevenlabs-js `voices/client/Client.ts` `search`, `GetVoicesV2Response`);
 *   each voice `{voice_id, name, category, labels: {accent, age, gender, use_case, ...}, description,
 *   preview_url, ...}` (`Voice`).
 * - Library: `GET /v1/shared-voices?page_size=100&page=N` (N from 0) -> `{voices, has_more, total_count,
 *   last_sort_id}` (`getShared`, `GetLibraryVoicesResponse`); a library voice names `gender`, `age`,
 *   `accent` and `use_case` at its top level, not in `labels` (`LibraryVoiceResponse`).
 * Each listing is read page after page until `has_more` is false, at most {@link MAX_PAGES_PER_LISTING}
 * pages (a runaway upstream cannot keep the source busy forever: past the cap the listing ends with what
 * was read). Voices are de-duplicated by `voice_id`, the account's record first; a voice without a
 * `voice_id` is skipped. An account page with `has_more` but no `next_page_token` is a malformed answer.
 */
import { isRecord } from "../util.ts";
import type { VoiceRecord } from "../types.ts";
import type { ElevenLabsApi } from "./api.ts";

/** Voices asked per page (ElevenLabs' largest page for both listings). */
export const VOICE_PAGE_SIZE = 100;

/** Most pages read of one listing (5000 voices at 100 a page). */
export const MAX_PAGES_PER_LISTING = 50;

/** An alpha {@link VoiceRecord}. */
export type AlphaVoiceRecord = Extract<VoiceRecord, { provider: "alpha" }>;

/** A string field of `obj`, or "" when absent or not a string. */
function str(obj: Record<string, unknown>, key: string): string {
  const value = obj[key];
  return typeof value === "string" ? value : "";
}

/**
 * One voice of either listing as a library record, or null when it has no `voice_id`. Labels come from
 * `labels` (account voices) or, when absent there, from the voice's top level (library voices).
 */
export function voiceRecordOf(raw: unknown): AlphaVoiceRecord | null {
  if (!isRecord(raw)) return null;
  const voiceId = str(raw, "voice_id");
  if (voiceId === "") return null;
  const labels = isRecord(raw.labels) ? raw.labels : {};
  const label = (key: string): string => str(labels, key) || str(raw, key);
  return {
    provider: "alpha",
    voice_id: voiceId,
    name: str(raw, "name"),
    category: str(raw, "category"),
    labels: { gender: label("gender"), age: label("age"), accent: label("accent"), use_case: label("use_case") },
    preview_url: str(raw, "preview_url"),
    description: str(raw, "description"),
  };
}

/** One page of a listing as read: its voices and whether (and how) another page follows. */
interface Page {
  voices: unknown[];
  hasMore: boolean;
  nextPageToken: string | null;
}

/** Reads one listing page; a non-2xx answer or a body without a `voices` array throws. */
async function readPage(api: ElevenLabsApi, url: URL, what: string, signal: AbortSignal | undefined): Promise<Page> {
  const answer = await api.sendForBytes("GET", url, undefined, {}, signal);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, what);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength).toString("utf8")) as unknown;
  } catch {
    throw api.malformed(what, "the answer is not JSON");
  }
  if (!isRecord(json) || !Array.isArray(json.voices)) throw api.malformed(what, "no voices array");
  const token = json.next_page_token;
  return { voices: json.voices, hasMore: json.has_more === true, nextPageToken: typeof token === "string" && token !== "" ? token : null };
}

/**
 * The account's voices and the public library, as library records (see the module comment).
 * @throws ElevenLabsError when a page fails (api.ts table) or is malformed.
 */
export async function listAllVoices(api: ElevenLabsApi, signal: AbortSignal | undefined): Promise<AlphaVoiceRecord[]> {
  const records = new Map<string, AlphaVoiceRecord>();
  const add = (voices: unknown[]): void => {
    for (const raw of voices) {
      const record = voiceRecordOf(raw);
      if (record !== null && !records.has(record.voice_id)) records.set(record.voice_id, record);
    }
  };

  let token: string | null = null;
  for (let page = 0; page < MAX_PAGES_PER_LISTING; page++) {
    const query: Record<string, string> = { page_size: String(VOICE_PAGE_SIZE) };
    if (token !== null) query.next_page_token = token;
    const result = await readPage(api, api.url("/v2/voices", query), "voices", signal);
    add(result.voices);
    if (!result.hasMore) break;
    if (result.nextPageToken === null) throw api.malformed("voices", "has_more without a next_page_token");
    token = result.nextPageToken;
  }

  for (let page = 0; page < MAX_PAGES_PER_LISTING; page++) {
    const url = api.url("/v1/shared-voices", { page_size: String(VOICE_PAGE_SIZE), page: String(page) });
    const result = await readPage(api, url, "shared-voices", signal);
    add(result.voices);
    // An empty page ends the listing too, whatever has_more says: asking on would only repeat it.
    if (!result.hasMore || result.voices.length === 0) break;
  }
  return [...records.values()];
}
