/**
 * The voice library (spec "GET /v1/audio/voices"; D4, D20): both providers' catalogs behind a cache of
 * 5 minutes per provider. Answers are pre-serialized JSON so a cached alpha list (about 3000 voices) is
 * sent without re-encoding. Concurrent misses for one provider share a single upstream fetch.
 */
import { promisify } from "node:util";
import { gzip as gzipCb } from "node:zlib";
import { errors } from "../errors.ts";
import type { SimulateMode, VoiceLibraryAdapter, VoiceRecord } from "../upstreams/types.ts";

export type VoiceProvider = "alpha" | "beta";
export type LibraryQuery = VoiceProvider | "all";

/**
 * A configured source a provider's voices come from: its `UPSTREAMS` name and protocol (never a key or a
 * URL). What an answer about an unknown voice names.
 */
export interface VoiceSourceName {
  name: string;
  protocol: string;
}

/**
 * What the library reads: the catalogs ({@link VoiceLibraryAdapter}) and, optionally, which configured
 * sources each provider's catalog comes from (none: the built-in simulator's).
 */
export type VoiceCatalogSource = VoiceLibraryAdapter & {
  sourcesOf?(provider: VoiceProvider): readonly VoiceSourceName[];
};

/** How a protocol's company writes its name, for messages. */
const PROTOCOL_NAMES: Readonly<Record<string, string>> = { elevenlabs: "ElevenLabs", minimax: "MiniMax", openai: "OpenAI", fal: "fal", bfl: "Black Forest Labs" };

/** Cache lifetime per provider, ms (spec: 5 minutes). */
export const VOICE_CACHE_TTL_MS = 5 * 60_000;

/** `X-Svc-Cache` values (spec "GET /v1/audio/voices"). */
export type CacheState = "may-hit" | "partial" | "miss";

const gzip = promisify(gzipCb);

/**
 * A library answer: the JSON body (already serialized), the same body gzip-compressed (the alpha list is
 * about 1 MB as JSON and about 120 KB compressed), and its cache header.
 */
export interface LibraryAnswer {
  body: Buffer;
  gzip: Buffer;
  cache: CacheState;
}

interface Entry {
  /** The provider's records as listed (read by the ElevenLabs dialect, D36). */
  records: readonly VoiceRecord[];
  /** The provider's records serialized as a JSON array without its brackets ("{...},{...}"). */
  items: string;
  /** The voice ids of the records (the speech endpoint's membership test, D20). */
  ids: ReadonlySet<string>;
  expiresAt: number;
  /** Serial number of this fill: composite answers are memoized by the fills they were built from. */
  serial: number;
}

interface Body {
  body: Buffer;
  gzip: Buffer;
}

/** Voice library with a per-provider cache. `now` is injectable for tests (ms). */
export class VoiceLibrary {
  readonly #adapter: VoiceCatalogSource;
  readonly #now: () => number;
  readonly #cache = new Map<VoiceProvider, Entry>();
  readonly #inflight = new Map<VoiceProvider, Promise<Entry>>();
  /** Serialized answers by query and the fills they came from. */
  readonly #bodies = new Map<string, { tag: string; body: Promise<Body> }>();
  #serial = 0;

  constructor(adapter: VoiceCatalogSource, now: () => number = Date.now) {
    this.#adapter = adapter;
    this.#now = now;
  }

  /** A provider's entry and whether it came from the cache; throws when the upstream fails. */
  async #get(provider: VoiceProvider, simulate: SimulateMode | null): Promise<{ entry: Entry; cached: boolean }> {
    const hit = this.#cache.get(provider);
    if (hit && hit.expiresAt > this.#now()) return { entry: hit, cached: true };
    let pending = this.#inflight.get(provider);
    if (!pending) {
      pending = this.#adapter
        .listVoices(provider, simulate)
        .then((records) => {
          const entry = {
            records,
            items: JSON.stringify(records).slice(1, -1),
            ids: new Set(records.map((r) => r.voice_id)),
            expiresAt: this.#now() + VOICE_CACHE_TTL_MS,
            serial: ++this.#serial,
          };
          this.#cache.set(provider, entry);
          return entry;
        })
        .finally(() => this.#inflight.delete(provider));
      this.#inflight.set(provider, pending);
    }
    return { entry: await pending, cached: false };
  }

  /**
   * Whether `voiceId` is a voice of the alpha library (D20). The adapter answers when it can without the
   * catalog (the simulator); otherwise the cached alpha list decides: fetched when the cache is empty;
   * when it is stale it still answers and is refreshed in the background. Null when the catalog is
   * unavailable (the caller then trusts the requested model).
   */
  async isAlphaVoice(voiceId: string): Promise<boolean | null> {
    const known = this.#adapter.isAlphaVoice(voiceId);
    if (known !== null) return known;
    // A stale list still answers (a speech call never waits for the paged re-fetch of a real catalog,
    // about 30 upstream pages); the refresh runs behind it.
    const stale = this.#cache.get("alpha");
    if (stale !== undefined) {
      if (stale.expiresAt <= this.#now()) this.#get("alpha", null).catch(() => {});
      return stale.ids.has(voiceId);
    }
    try {
      return (await this.#get("alpha", null)).entry.ids.has(voiceId);
    } catch {
      return null;
    }
  }

  /**
   * Whether `voiceId` is a voice of the beta library (the system voices its catalog lists): used only to
   * word an answer about a voice that is not an alpha voice (D20 still makes any such id a beta voice).
   * Reads the cached beta list (fetched when the cache is empty, refreshed behind a stale one); null when
   * the catalog is unavailable.
   */
  async isBetaVoice(voiceId: string): Promise<boolean | null> {
    const stale = this.#cache.get("beta");
    if (stale !== undefined) {
      if (stale.expiresAt <= this.#now()) this.#get("beta", null).catch(() => {});
      return stale.ids.has(voiceId);
    }
    try {
      return (await this.#get("beta", null)).entry.ids.has(voiceId);
    } catch {
      return null;
    }
  }

  /**
   * Where `provider`'s voices come from, as a phrase for messages: "the ElevenLabs source 'el-main'",
   * "the ElevenLabs sources 'el-main' and 'el-backup'", or "the built-in simulator" when no configured
   * source lists that provider's voices (D10). Names and protocols only, never keys or URLs.
   */
  servedBy(provider: VoiceProvider): string {
    const sources = this.#adapter.sourcesOf?.(provider) ?? [];
    if (sources.length === 0) return "the built-in simulator";
    const protocols = [...new Set(sources.map((s) => PROTOCOL_NAMES[s.protocol] ?? s.protocol))];
    const names = sources.map((s) => `'${s.name}'`);
    const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
    return `the ${protocols.join("/")} source${sources.length === 1 ? "" : "s"} ${list}`;
  }

  /**
   * The records of `provider`'s voices (from the cache, fetched on a miss), in the catalog's order: what
   * the ElevenLabs dialect pages and searches (D36).
   * @throws AppError 502 `provider_error` when the catalog is unavailable.
   */
  async records(provider: VoiceProvider, simulate: SimulateMode | null): Promise<readonly VoiceRecord[]> {
    try {
      return (await this.#get(provider, simulate)).entry.records;
    } catch {
      throw errors.provider("The voice catalog is unavailable.");
    }
  }

  /**
   * Lists `query`'s voices. `all` answers `partial` when one provider fails, and 502 only when both do.
   * @throws AppError 502 `provider_error` when every asked provider fails.
   */
  async list(query: LibraryQuery, simulate: SimulateMode | null): Promise<LibraryAnswer> {
    const providers: VoiceProvider[] = query === "all" ? ["alpha", "beta"] : [query];
    const results = await Promise.allSettled(providers.map((p) => this.#get(p, simulate)));
    const ok = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    if (ok.length === 0) throw errors.provider("The voice catalog is unavailable.");
    let cache: CacheState;
    if (ok.length < providers.length) cache = "partial";
    else cache = ok.every((r) => r.cached) ? "may-hit" : "miss";
    const tag = ok.map((r) => r.entry.serial).join(":");
    let memo = this.#bodies.get(query);
    if (!memo || memo.tag !== tag) {
      const items = ok.map((r) => r.entry.items).filter((s) => s.length > 0);
      const body = Buffer.from(`{"object":"list","provider":"${query}","data":[${items.join(",")}]}`);
      memo = { tag, body: gzip(body).then((z) => ({ body, gzip: z })) };
      this.#bodies.set(query, memo);
    }
    const { body, gzip: zipped } = await memo.body;
    return { body, gzip: zipped, cache };
  }
}
