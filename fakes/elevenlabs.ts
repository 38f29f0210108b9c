/**
 * A loopback fake of ElevenLabs' API (elevenlabs/elevenlabs-js `src/api/resources/*\/client/Client.ts`),
 * for contract tests and the `fake-upstreams` script: it answers in ElevenLabs' real shapes, serves real,
 * decodable audio, and misbehaves on request. The official `@elevenlabs/elevenlabs-js` client accepts it
 * (test/upstreams/elevenlabs/official-client.test.ts).
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/text-to-speech/{voice_id}[/stream]?output_format=` `{text, model_id?, voice_settings?}` | 200 audio, about 0.06 s per character (at least 0.3 s); headers `request-id`, `character-cost` |
 * | `POST /v1/music?output_format=` `{prompt, music_length_ms?, model_id?}` | 200 audio of exactly `music_length_ms` (default 10 000); 422 below 3000 or above 600 000 |
 * | `POST /v1/sound-generation?output_format=` `{text, duration_seconds?, prompt_influence?, model_id?}` | 200 audio of `duration_seconds` (0.5 to 30, else 422) or 2 s |
 * | `GET /v2/voices?page_size=&next_page_token=` | `{voices, has_more, total_count, next_page_token}` over the account's voices (`page_size` 1..100, default 10) |
 * | `GET /v1/voices` | `{voices}`: every account voice |
 * | `GET /v1/shared-voices?page_size=&page=` | `{voices, has_more, total_count, last_sort_id}` over the public library (`page_size` 1..100, default 30; `page` from 0) |
 * Audio is a sine tone in the requested `output_format` (any of the gateway's eight; `mp3_44100_128`
 * when none is given; another name: 422), whose pitch follows the voice or prompt; the content type is
 * `audio/mpeg`, `audio/pcm` or `audio/basic` (*unverified*: ElevenLabs' own types for raw formats).
 *
 * The catalog: 120 account voices (the first is `21m00Tcm4TlvDq8ikWAM` "Rachel" of the SDK's
 * `tests/wire/voices.test.ts`; premade voices have `description: null` as ElevenLabs sends it; every
 * tenth voice has no `labels`) and 2900 library voices (the first is `sB1b5zUrxQVAFl2PhZFp` "Alita" of
 * the same file), ids of 20 letters and digits, deterministic. Library voices 1 to 10 are also the
 * last account voices (the fake's choice, so a listing has duplicates to drop). Speech with a voice of
 * neither list: 400 `{detail: {status: "voice_not_found", message}}`.
 *
 * Every call needs `xi-api-key` (the configured `apiKey`, or any non-empty key when none is configured);
 * otherwise 401 `{detail: {status: "invalid_api_key", message: "Invalid API key"}}`. Validation
 * failures are FastAPI's 422 `{detail: [{type, loc, msg, input}]}`. `latencyMs` delays every answer.
 *
 * ## Misbehaviour markers
 * In the text or prompt as `[fake:NAME]`, or for every request (voice listings included) with the
 * `markers` option or `setMarkers`:
 * | marker | effect |
 * |---|---|
 * | `500` | 500 `Internal Server Error` as text (uvicorn's answer to an unhandled exception) |
 * | `429` | 429 `{detail: {status: "system_busy", message}}` (message as SubtitleEdit/subtitleedit#9246 quotes it) |
 * | `quota` | 401 `{detail: {status: "quota_exceeded", message}}` (home-assistant/core#160414) |
 * | `voice_gone` | 400 `{detail: {status: "voice_not_found", message}}` (elevenlabs/elevenlabs-docs#1317) |
 * | `422` | 422 `{detail: [{type: "string_too_long", loc: ["body", "text"], msg, input, ctx}]}` |
 * | `malformed` | 200 with an HTML page |
 * | `hang` | never answered (until `close()`) |
 * | `slow` | answered after 2 s |
 * | `echo-key` | 401 `invalid_api_key` with the caller's key echoed in `message` (redaction tests) |
 *
 * `requests` records every request in order: `method`, `path` (with query), `headers` (lower-case;
 * `xi-api-key` recorded as `[redacted]`) and the parsed JSON `body` (or null).
 */
import { createHash, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { audioFormatInfo } from "../src/upstreams/audio-convert.ts";
import { isJsonObject as isObject, markersOf, sendJson as json, startLoopbackFake } from "./loopback.ts";
import type { LoopbackFake, LoopbackFakeCall, LoopbackFakeRequest } from "./loopback.ts";
import { encodeAudio } from "../src/upstreams/simulator/encode.ts";
import { AUDIO_FORMATS, contentTypeOf } from "../src/upstreams/types.ts";
import type { AudioFormat } from "../src/upstreams/types.ts";

/** Options of {@link startElevenLabsFake}. */
export interface ElevenLabsFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty `xi-api-key`. */
  apiKey?: string;
  /**
   * Markers applied to every request, as if each text carried them (`["500"]`: an ElevenLabs that fails
   * everything). Replaced by {@link ElevenLabsFake.setMarkers}. Default none.
   */
  markers?: readonly string[];
  /** Delay before every answer, ms (default 0). */
  latencyMs?: number;
}

/** One recorded request (see the module comment). */
export type ElevenLabsFakeRequest = LoopbackFakeRequest;

/**
 * A running fake: `url` (use it as the source's base URL), `requests` (every request, in order),
 * `submits()` (the `POST`s), `setMarkers()` (replaces the markers applied to every request), `voiceIds()`
 * (every voice id of its catalog, account voices first), `reset()` (forgets the requests; the array
 * stays the same object) and `close()` (stops listening and drops every connection, held `hang` and
 * `slow` requests included).
 */
export interface ElevenLabsFake extends LoopbackFake {
  setMarkers(markers: readonly string[]): void;
  voiceIds(): string[];
}

/** Number of account voices of the catalog. */
export const FAKE_ACCOUNT_VOICES = 120;
/** Number of library voices of the catalog. */
export const FAKE_SHARED_VOICES = 2900;
/** Library voices that are also account voices (library voices 1..10 are the last account voices). */
export const FAKE_SHARED_IN_ACCOUNT = 10;

const SLOW_MS = 2000;
/** Misbehaviour markers in a text or prompt: `[fake:NAME]`. */
const TEXT_MARKER = /\[fake:([a-z0-9_-]+)\]/g;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A deterministic 20-character voice id (letters and digits, as ElevenLabs' ids are). */
function voiceIdOf(seed: string): string {
  const hash = createHash("sha256").update(`elevenlabs-fake:${seed}`).digest();
  let id = "";
  for (let i = 0; i < 20; i++) id += ALPHABET[hash[i]! % ALPHABET.length];
  return id;
}

const GENDERS = ["female", "male", "neutral"] as const;
const AGES = ["young", "middle_aged", "old"] as const;
const ACCENTS = ["american", "british", "australian", "indian", "irish"] as const;
const USE_CASES = ["narrative_story", "conversational", "characters_animation", "social_media", "informative_educational"] as const;
const CATEGORIES = ["premade", "cloned", "generated", "professional"] as const;
const NAMES = ["Aria", "Roger", "Sarah", "Laura", "Charlie", "George", "Callum", "River", "Liam", "Charlotte", "Alice", "Matilda"] as const;

const pick = <T>(list: readonly T[], i: number): T => list[i % list.length]!;

/** The account's voices (`Voice` of the SDK, with the fields a listing carries). */
function accountVoices(): Record<string, unknown>[] {
  const voices: Record<string, unknown>[] = [];
  for (let i = 0; i < FAKE_ACCOUNT_VOICES; i++) {
    const voiceId = i === 0 ? "21m00Tcm4TlvDq8ikWAM" : voiceIdOf(`account:${i}`);
    const category = pick(CATEGORIES, i);
    const voice: Record<string, unknown> = {
      voice_id: voiceId,
      name: i === 0 ? "Rachel" : `${pick(NAMES, i)} ${i}`,
      samples: null,
      category,
      fine_tuning: { is_allowed_to_fine_tune: category === "professional", state: {}, verification_failures: [], verification_attempts_count: 0, manual_verification_requested: false },
      labels: i % 10 === 9 ? {} : { accent: pick(ACCENTS, i), descriptive: "calm", age: pick(AGES, i), gender: pick(GENDERS, i), language: "en", use_case: pick(USE_CASES, i) },
      // ElevenLabs sends `description: null` for its premade voices.
      description: category === "premade" ? null : `A ${pick(GENDERS, i)} voice for ${pick(USE_CASES, i).replace(/_/g, " ")}.`,
      preview_url: `https://storage.googleapis.com/eleven-public-prod/premade/voices/${voiceId}/preview.mp3`,
      available_for_tiers: [],
      settings: null,
      sharing: null,
      high_quality_base_model_ids: ["eleven_v2_flash", "eleven_flash_v2", "eleven_turbo_v2_5", "eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2"],
      verified_languages: [],
      safety_control: null,
      collection_ids: [],
      voice_verification: { requires_verification: false, is_verified: false, verification_failures: [], verification_attempts_count: 0, language: null, verification_attempts: null },
      permission_on_resource: null,
      is_owner: category !== "premade",
      is_legacy: false,
      is_mixed: false,
      favorited_at_unix: null,
      created_at_unix: category === "premade" ? null : 1_714_000_000 + i,
    };
    voices.push(voice);
  }
  return voices;
}

/** The public library (`LibraryVoiceResponse` of the SDK: every required field present). */
function sharedVoices(account: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const voices: Record<string, unknown>[] = [];
  for (let i = 0; i < FAKE_SHARED_VOICES; i++) {
    const voiceId = i === 0 ? "sB1b5zUrxQVAFl2PhZFp" : i <= FAKE_SHARED_IN_ACCOUNT ? (account[FAKE_ACCOUNT_VOICES - 1 - FAKE_SHARED_IN_ACCOUNT + i]!.voice_id as string) : voiceIdOf(`shared:${i}`);
    voices.push({
      public_owner_id: createHash("sha256").update(`owner:${i % 700}`).digest("hex"),
      voice_id: voiceId,
      date_unix: 1_714_423_232 - i * 3600,
      name: i === 0 ? "Alita" : `${pick(NAMES, i + 3)} L${i}`,
      accent: pick(ACCENTS, i + 1),
      gender: i === 0 ? "Female" : pick(GENDERS, i + 1),
      age: pick(AGES, i + 1),
      descriptive: "calm",
      use_case: pick(USE_CASES, i + 2),
      category: i % 3 === 0 ? "professional" : "high_quality",
      language: "en",
      locale: "en-US",
      description: i === 0 ? "Perfectly calm, neutral and strong voice. Great for a young female protagonist." : `Library voice ${i}.`,
      preview_url: `https://storage.googleapis.com/eleven-public-prod/library/voices/${voiceId}/preview.mp3`,
      usage_character_count_1y: 12_852 + i,
      usage_character_count_7d: 100 + (i % 50),
      play_api_usage_character_count_1y: 12_852,
      cloned_by_count: i % 40,
      rate: 1,
      fiat_rate: null,
      free_users_allowed: true,
      live_moderation_enabled: false,
      featured: i % 100 === 0,
      verified_languages: [],
      notice_period: null,
      instagram_username: null,
      twitter_username: null,
      youtube_username: null,
      tiktok_username: null,
      image_url: null,
      is_added_by_user: i >= 1 && i <= FAKE_SHARED_IN_ACCOUNT,
    });
  }
  return voices;
}

/** A FastAPI validation error (422). */
function validation(res: ServerResponse, loc: (string | number)[], msg: string, type: string, input: unknown, ctx?: Record<string, unknown>): void {
  json(res, 422, { detail: [{ type, loc, msg, input, ...(ctx === undefined ? {} : { ctx }) }] });
}

/** Recently made tones: the same request answers the same bytes without encoding again (benchmarks). */
const TONES = new Map<string, Uint8Array>();

/** A sine tone of `seconds` in `format`, pitch from `seed` (memoized: the last 256 tones). */
function tone(seconds: number, format: AudioFormat, seed: string): Uint8Array {
  const key = `${seconds}|${format}|${seed}`;
  let bytes = TONES.get(key);
  if (bytes === undefined) {
    bytes = renderTone(seconds, format, seed);
    if (TONES.size >= 256) TONES.delete(TONES.keys().next().value!);
    TONES.set(key, bytes);
  }
  return bytes;
}

function renderTone(seconds: number, format: AudioFormat, seed: string): Uint8Array {
  const rate = audioFormatInfo(format).sampleRate;
  const n = Math.round(seconds * rate);
  const hz = 220 + (createHash("sha256").update(seed).digest().readUInt16BE(0) % 440);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = 0.3 * Math.sin((2 * Math.PI * hz * i) / rate);
  return encodeAudio(samples, rate, format);
}

/** Starts the fake on loopback. */
export async function startElevenLabsFake(options: ElevenLabsFakeOptions = {}): Promise<ElevenLabsFake> {
  const latencyMs = options.latencyMs ?? 0;
  let always: readonly string[] = [...(options.markers ?? [])];
  const account = accountVoices();
  const shared = sharedVoices(account);
  const known = new Set<string>([...account, ...shared].map((v) => v.voice_id as string));
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const audio = (res: ServerResponse, body: Uint8Array, format: AudioFormat, headers: Record<string, string> = {}): void => {
    res.writeHead(200, {
      "content-type": contentTypeOf(format),
      "content-length": String(body.byteLength),
      "request-id": randomBytes(10).toString("hex"),
      ...headers,
    });
    res.end(body);
  };

  /** The requested `output_format`, or null after answering 422. */
  const formatOf = (url: URL, res: ServerResponse): AudioFormat | null => {
    const raw = url.searchParams.get("output_format") ?? "mp3_44100_128";
    if ((AUDIO_FORMATS as readonly string[]).includes(raw)) return raw as AudioFormat;
    validation(res, ["query", "output_format"], `Input should be ${AUDIO_FORMATS.map((f) => `'${f}'`).join(", ")}`, "enum", raw);
    return null;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, { url, method, body }: LoopbackFakeCall): Promise<void> => {
    const key = typeof req.headers["xi-api-key"] === "string" ? req.headers["xi-api-key"] : "";
    const text = isObject(body) ? (typeof body.text === "string" ? body.text : typeof body.prompt === "string" ? body.prompt : "") : "";
    // Own pattern: loopback.ts's `[fake:NAME]` takes no `_`, which `voice_gone` has.
    const markers = markersOf("", always, Array.from(text.matchAll(TEXT_MARKER), (m) => m[1]!));

    if (markers.has("echo-key")) return json(res, 401, { detail: { status: "invalid_api_key", message: `Invalid API key: ${key}` } });
    if (key === "" || (options.apiKey !== undefined && key !== options.apiKey)) {
      return json(res, 401, { detail: { status: "invalid_api_key", message: "Invalid API key" } });
    }
    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (latencyMs > 0) await sleep(latencyMs);
    if (markers.has("slow")) await sleep(SLOW_MS);
    if (res.destroyed) return;

    if (markers.has("500")) {
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
      res.end("Internal Server Error");
      return;
    }
    if (markers.has("429")) {
      return json(res, 429, {
        detail: { status: "system_busy", message: "We are sorry, the system is experiencing heavy traffic, please try again. Higher subscriptions have higher priority." },
      });
    }
    if (markers.has("quota")) {
      const needed = Math.max(1, [...text].length);
      return json(res, 401, {
        detail: { status: "quota_exceeded", message: `This request exceeds your quota of 10000. You have 0 credits remaining, while ${needed} credits are required for this request.` },
      });
    }
    const segments = url.pathname.split("/").filter((s) => s !== "").map(safeDecode);
    if (markers.has("voice_gone")) {
      const voiceId = segments[1] === "text-to-speech" ? (segments[2] ?? "") : "";
      return json(res, 400, { detail: { status: "voice_not_found", message: `A voice with the voice_id ${voiceId} was not found.` } });
    }
    if (markers.has("422")) {
      return validation(res, ["body", "text"], "String should have at most 5000 characters", "string_too_long", text, { max_length: 5000 });
    }
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body><h1>Service temporarily unavailable</h1></body></html>");
      return;
    }

    const route = `${method} /${segments.slice(0, 2).join("/")}`;
    if (route === "POST /v1/text-to-speech" && (segments.length === 3 || (segments.length === 4 && segments[3] === "stream"))) {
      return speech(res, url, segments[2]!, body);
    }
    if (route === "POST /v1/music" && segments.length === 2) return music(res, url, body);
    if (route === "POST /v1/sound-generation" && segments.length === 2) return sfx(res, url, body);
    if (route === "GET /v2/voices" && segments.length === 2) return voicesV2(res, url);
    if (route === "GET /v1/voices" && segments.length === 2) return json(res, 200, { voices: account });
    if (route === "GET /v1/shared-voices" && segments.length === 2) return sharedPage(res, url);
    return json(res, 404, { detail: "Not Found" });
  };

  const speech = (res: ServerResponse, url: URL, voiceId: string, body: unknown): void => {
    const format = formatOf(url, res);
    if (format === null) return;
    if (!isObject(body)) return validation(res, ["body"], "Field required", "missing", null);
    if (typeof body.text !== "string") return validation(res, ["body", "text"], "Field required", "missing", body);
    if (!known.has(voiceId)) return json(res, 400, { detail: { status: "voice_not_found", message: `A voice with the voice_id ${voiceId} was not found.` } });
    const chars = [...body.text].length;
    const seconds = Math.max(0.3, 0.06 * chars);
    audio(res, tone(seconds, format, voiceId), format, { "character-cost": String(chars) });
  };

  const music = (res: ServerResponse, url: URL, body: unknown): void => {
    const format = formatOf(url, res);
    if (format === null) return;
    if (!isObject(body)) return validation(res, ["body"], "Field required", "missing", null);
    if (typeof body.prompt !== "string" && !isObject(body.composition_plan)) {
      return validation(res, ["body"], "Either prompt or composition_plan must be provided", "value_error", body);
    }
    const lengthMs = body.music_length_ms ?? 10_000;
    if (typeof lengthMs !== "number" || !Number.isInteger(lengthMs)) return validation(res, ["body", "music_length_ms"], "Input should be a valid integer", "int_type", lengthMs);
    if (lengthMs < 3000) return validation(res, ["body", "music_length_ms"], "Input should be greater than or equal to 3000", "greater_than_equal", lengthMs, { ge: 3000 });
    if (lengthMs > 600_000) return validation(res, ["body", "music_length_ms"], "Input should be less than or equal to 600000", "less_than_equal", lengthMs, { le: 600_000 });
    audio(res, tone(lengthMs / 1000, format, String(body.prompt ?? "plan")), format);
  };

  const sfx = (res: ServerResponse, url: URL, body: unknown): void => {
    const format = formatOf(url, res);
    if (format === null) return;
    if (!isObject(body)) return validation(res, ["body"], "Field required", "missing", null);
    if (typeof body.text !== "string") return validation(res, ["body", "text"], "Field required", "missing", body);
    const seconds = body.duration_seconds ?? null;
    if (seconds !== null && (typeof seconds !== "number" || seconds < 0.5 || seconds > 30)) {
      return validation(res, ["body", "duration_seconds"], "Duration must be between 0.5 and 30 seconds", "value_error", seconds);
    }
    const influence = body.prompt_influence ?? 0.3;
    if (typeof influence !== "number" || influence < 0 || influence > 1) {
      return validation(res, ["body", "prompt_influence"], "Input should be less than or equal to 1", "less_than_equal", influence);
    }
    audio(res, tone(seconds ?? 2, format, body.text), format);
  };

  /** `page_size` of a listing, or null after answering 422. */
  const pageSizeOf = (url: URL, res: ServerResponse, fallback: number): number | null => {
    const raw = url.searchParams.get("page_size");
    const size = raw === null ? fallback : Number(raw);
    if (!Number.isInteger(size) || size < 1 || size > 100) {
      validation(res, ["query", "page_size"], "Input should be less than or equal to 100", "less_than_equal", raw);
      return null;
    }
    return size;
  };

  const voicesV2 = (res: ServerResponse, url: URL): void => {
    const size = pageSizeOf(url, res, 10);
    if (size === null) return;
    const token = url.searchParams.get("next_page_token");
    const offset = token === null ? 0 : offsetOfToken(token);
    if (offset === null) return validation(res, ["query", "next_page_token"], "Invalid page token", "value_error", token);
    const voices = account.slice(offset, offset + size);
    const hasMore = offset + size < account.length;
    json(res, 200, { voices, has_more: hasMore, total_count: account.length, next_page_token: hasMore ? tokenOfOffset(offset + size) : null });
  };

  const sharedPage = (res: ServerResponse, url: URL): void => {
    const size = pageSizeOf(url, res, 30);
    if (size === null) return;
    const page = Number(url.searchParams.get("page") ?? "0");
    if (!Number.isInteger(page) || page < 0) return validation(res, ["query", "page"], "Input should be a valid integer", "int_type", url.searchParams.get("page"));
    const voices = shared.slice(page * size, (page + 1) * size);
    const hasMore = (page + 1) * size < shared.length;
    const last = voices.at(-1);
    json(res, 200, { voices, has_more: hasMore, total_count: shared.length, last_sort_id: last === undefined ? null : (last.voice_id as string) });
  };

  const fake = await startLoopbackFake(
    { port: options.port, host: options.host, recordHeader: (name, value) => (name === "xi-api-key" ? "[redacted]" : value) },
    handle,
  );
  const closeServer = fake.close;
  return {
    ...fake,
    setMarkers(markers) {
      always = [...markers];
    },
    voiceIds: () => [...known],
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await closeServer();
    },
  };
}

/** An opaque page token of the account listing (ElevenLabs' are opaque too). */
function tokenOfOffset(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString("base64url");
}

function offsetOfToken(token: string): number | null {
  const m = /^offset:(\d{1,6})$/.exec(Buffer.from(token, "base64url").toString("utf8"));
  return m === null ? null : Number(m[1]);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
