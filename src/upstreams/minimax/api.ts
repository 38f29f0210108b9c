/**
 * The HTTP base of the MiniMax adapter (docs/architecture.md, "How to add": one folder per upstream; `api.ts` holds the base URL,
 * the key header and the failure mapping; `speech.ts`, `music.ts`, `voices.ts` and `video.ts` speak one
 * capability each; `source.ts` and `video-source.ts` put them together). The protocol-independent part
 * (pool, timeouts, host check, reading answers, redaction) is the shared keyed base of `../keyed-http.ts`.
 *
 * Facts used here come from MiniMax's own clients: MiniMax-AI/MiniMax-MCP `minimax_mcp/client.py` (base
 * `https://api.minimax.io`, `Authorization: Bearer <key>`, JSON bodies; every answer carries `base_resp:
 * {status_code, status_msg}` and a non-zero `status_code` is a failure even with HTTP 200; 1004 is an auth
 * failure) and MiniMax-AI/cli `src/types/api.ts` (`BaseResp`, the answer types of each endpoint). The
 * meaning of the other codes is MiniMax's published error-code table.
 *
 * ## Where the key goes (D25)
 * Only to the host of the base URL (MiniMax names no follow-up host: the video result is fetched from
 * the base host by `file_id`) and to `trustedHosts`. Video download URLs are on MiniMax's CDN: the runner
 * downloads them without the key, through the SSRF-safe fetch.
 *
 * ## Failures
 * | failure | `retryable` | flags |
 * |---|---|---|
 * | network error, timeout (connect, total, or the idle time of a stream) | true | |
 * | HTTP 429, 408, 5xx | true | |
 * | any other HTTP status outside 2xx | false | |
 * | `base_resp` 1000, 1001, 1002 (RPM), 1013, 1024, 1033, 1039 (TPM), 1041 | true | |
 * | `base_resp` 1026, 1027 (sensitive input or output) | false | `contentRejected` |
 * | `base_resp` 2042, 20132 on a speech call (the voice is gone) | false | `voiceUnavailable` |
 * | `base_resp` 2013 whose message names the model the call sent (no such model, D35) | false | `modelNotFound`, `upstreamModel` |
 * | `base_resp` 1004, 2049 (auth), 1008 (balance), 2013 (parameters), 2037, 2039, any other code | false | |
 * | malformed answer (not JSON, no `base_resp`, bad hex) | true: MiniMax misbehaved, another source may not | |
 * | URL refused by the host check | false | |
 * The caller's own abort is not an upstream failure: `signal.reason` is rethrown unchanged. Every
 * message has the key redacted; no raw undici error is attached as `cause`.
 *
 * MiniMax refuses a model it does not serve (or no longer serves) with its parameter code 2013 and a
 * message naming the model; 2013 also refuses any other bad parameter, so only a 2013 whose message
 * contains the `model` of the call (`CallContext.model`, as a whole token) is "no such model". The
 * failover then moves on to the family's next source (D27); the message names the model, never the key.
 */
import { createKeyedHttp, KeyedHttpError } from "../keyed-http.ts";
import type { KeyedErrorKind, KeyedHttp, KeyedSourceOptions } from "../keyed-http.ts";
import { isRecord } from "../util.ts";

/** MiniMax's international API, the default base URL. */
export const DEFAULT_MINIMAX_BASE_URL = "https://api.minimax.io";

/** `base_resp` codes that say MiniMax's side failed or was busy: another attempt (or source) may succeed. */
export const RETRYABLE_CODES: ReadonlySet<number> = new Set([1000, 1001, 1002, 1013, 1024, 1033, 1039, 1041]);

/** `base_resp` codes of a content refusal (sensitive input / sensitive output). */
export const CONTENT_CODES: ReadonlySet<number> = new Set([1026, 1027]);

/** `base_resp` codes a speech call answers when its voice no longer exists (D27: 410 `voice_unavailable`). */
export const VOICE_GONE_CODES: ReadonlySet<number> = new Set([2042, 20132]);

/** MiniMax's parameter error: with a message naming the model sent, "no such model" (D35). */
export const INVALID_PARAMS_CODE = 2013;

/** How one MiniMax source is reached: `baseUrl` defaults to {@link DEFAULT_MINIMAX_BASE_URL}. */
export type MiniMaxApiConfig = KeyedSourceOptions;

/**
 * An {@link UpstreamError} of the MiniMax adapter. `kind` says what failed, `status` is the HTTP status
 * (null when no answer came), `code` MiniMax's `base_resp.status_code` when the failure is one (else
 * null); `modelNotFound` with `upstreamModel` when MiniMax said the model sent does not exist (D35).
 */
export class MiniMaxError extends KeyedHttpError {
  readonly code: number | null;

  constructor(
    message: string,
    opts: {
      retryable: boolean;
      kind: KeyedErrorKind;
      status?: number | null;
      code?: number | null;
      contentRejected?: boolean;
      voiceUnavailable?: boolean;
      modelNotFound?: boolean;
      upstreamModel?: string | null;
    },
  ) {
    super(message, opts);
    this.name = "MiniMaxError";
    this.code = opts.code ?? null;
  }
}

/** What a call is, for the meaning of its codes: only a speech call turns 2042/20132 into `voiceUnavailable`. */
export interface CallContext {
  /** Names the call in messages, e.g. `t2a_v2`. */
  what: string;
  /** True for speech (`t2a_v2`): a missing voice is a gone voice (D27). */
  speech?: boolean;
  /** The upstream model id the call sent: a 2013 naming it is `modelNotFound` (D35). */
  model?: string;
}

/** The transport to one MiniMax source. Create once per timeout (it owns a connection pool); `close()` it. */
export interface MiniMaxApi extends KeyedHttp<MiniMaxError> {
  /** `{base}{path}` (`path` starts with `/v1/`), with `query` added. */
  url(path: string, query?: Record<string, string>): URL;
  /** The error of an answer whose HTTP status is not 2xx (see the failure table). */
  httpError(status: number, json: unknown, text: string, ctx: CallContext): MiniMaxError;
  /** The error of a non-zero `base_resp` (see the failure table). */
  baseRespError(code: number, message: string, ctx: CallContext): MiniMaxError;
  /**
   * Checks one whole answer: HTTP 2xx, a JSON object, `base_resp.status_code` 0. Returns the object;
   * throws the mapped {@link MiniMaxError} otherwise (a body without `base_resp` is malformed).
   */
  checked(status: number, json: unknown, text: string, ctx: CallContext): Record<string, unknown>;
  /** `POST`s `body` as JSON and returns the checked answer (see {@link checked}). */
  postJson(path: string, body: unknown, ctx: CallContext, signal?: AbortSignal): Promise<Record<string, unknown>>;
  /**
   * `GET`s `path?query` and returns the checked answer; the fields named in `exactKeys` (int64 ids) are
   * read as exact decimal strings ({@link parseJsonExact}).
   */
  getJson(path: string, query: Record<string, string>, ctx: CallContext, signal?: AbortSignal, exactKeys?: readonly string[]): Promise<Record<string, unknown>>;
}

/** A `JSON.parse` reviver with the third argument of Node 22+ (the source text of a primitive). */
type JsonReviver = (key: string, value: unknown, context?: { source?: string }) => unknown;

/**
 * Parses a JSON text whose integer fields named in `keys` may exceed 2^53 (MiniMax's `file_id` is an
 * int64): those fields come back as their exact decimal string, whether MiniMax wrote them as numbers
 * or strings. Returns undefined when the text is not JSON.
 */
export function parseJsonExact(text: string, keys: readonly string[] = []): unknown {
  if (text.trim() === "") return undefined;
  const reviver: JsonReviver = (key, value, context) => {
    if (!keys.includes(key)) return value;
    if (typeof value === "number") return context?.source ?? String(value);
    return value;
  };
  try {
    return JSON.parse(text, reviver as (this: unknown, key: string, value: unknown) => unknown) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Creates the transport of one MiniMax source with one total timeout per call.
 * @throws RangeError for a bad base URL, timeout or trusted host, or an empty key.
 */
export function createMiniMaxApi(config: MiniMaxApiConfig): MiniMaxApi {
  const http = createKeyedHttp<MiniMaxError>({
    ...config,
    baseUrl: config.baseUrl ?? DEFAULT_MINIMAX_BASE_URL,
    authHeaders: (key) => ({ authorization: `Bearer ${key}` }),
    // MiniMax names no follow-up host for its API calls.
    followUpHost: () => false,
    followUpLabel: "a MiniMax host",
    error: (message, opts) => new MiniMaxError(message, opts),
  });
  const { name } = config;
  const root = http.baseUrl.pathname.replace(/\/+$/, "");

  const api: MiniMaxApi = {
    ...http,
    url(path, query = {}) {
      const url = new URL(`${root}${path}`, http.baseUrl);
      for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
      return url;
    },
    httpError(status, json, text, ctx) {
      const base = baseRespOf(json);
      const modelNotFound = base !== null && isModelNotFound(base.code, base.message, ctx.model);
      const retryable = !modelNotFound && (status >= 500 || status === 429 || status === 408);
      const detail = describeMiniMaxError(json, text);
      return new MiniMaxError(http.redact(`${name}: ${head(ctx, modelNotFound)}: HTTP ${status}${detail === "" ? "" : `: ${detail}`}`), {
        retryable,
        kind: "http",
        status,
        code: base?.code ?? null,
        modelNotFound,
        upstreamModel: modelNotFound ? (ctx.model ?? null) : null,
      });
    },
    baseRespError(code, message, ctx) {
      const contentRejected = CONTENT_CODES.has(code);
      const voiceUnavailable = ctx.speech === true && VOICE_GONE_CODES.has(code);
      const modelNotFound = isModelNotFound(code, message, ctx.model);
      const text = oneLine(message);
      return new MiniMaxError(http.redact(`${name}: ${head(ctx, modelNotFound)}: MiniMax error ${code}${text === "" ? "" : `: ${text}`}`), {
        retryable: RETRYABLE_CODES.has(code),
        kind: "http",
        status: 200,
        code,
        contentRejected,
        voiceUnavailable,
        modelNotFound,
        upstreamModel: modelNotFound ? (ctx.model ?? null) : null,
      });
    },
    checked(status, json, text, ctx) {
      if (status < 200 || status > 299) throw api.httpError(status, json, text, ctx);
      if (!isRecord(json)) throw http.malformed(ctx.what, "not a JSON object");
      const base = baseRespOf(json);
      if (base === null) throw http.malformed(ctx.what, "no base_resp");
      if (base.code !== 0) throw api.baseRespError(base.code, base.message, ctx);
      return json;
    },
    async postJson(path, body, ctx, signal) {
      const answer = await http.send("POST", api.url(path), body, signal);
      return api.checked(answer.status, answer.json, answer.text, ctx);
    },
    async getJson(path, query, ctx, signal, exactKeys = []) {
      const answer = await http.send("GET", api.url(path, query), undefined, signal);
      const json = exactKeys.length === 0 ? answer.json : parseJsonExact(answer.text, exactKeys);
      return api.checked(answer.status, json, answer.text, ctx);
    },
  };
  return api;
}

/** `base_resp` of an answer as `{code, message}`, or null when it has none (or no numeric code). */
export function baseRespOf(json: unknown): { code: number; message: string } | null {
  if (!isRecord(json) || !isRecord(json.base_resp)) return null;
  const code = json.base_resp.status_code;
  if (typeof code !== "number" || !Number.isInteger(code)) return null;
  const message = json.base_resp.status_msg;
  return { code, message: typeof message === "string" ? message : "" };
}

/** The head of an error message: the call, and the model MiniMax does not have when that is the failure. */
function head(ctx: CallContext, modelNotFound: boolean): string {
  return modelNotFound ? `${ctx.what}: MiniMax has no model ${JSON.stringify(ctx.model ?? "")}` : ctx.what;
}

/**
 * True when `code` and `message` say the `model` sent does not exist (D35): code 2013 (invalid
 * parameters) with the model id in the message as a whole token (not inside a longer id: `music-2.5` is
 * not named by a message about `music-2.5+`). False without a model.
 */
export function isModelNotFound(code: number, message: string, model: string | undefined): boolean {
  if (code !== INVALID_PARAMS_CODE || model === undefined || model === "") return false;
  const lower = message.toLowerCase();
  const id = model.toLowerCase();
  for (let at = lower.indexOf(id); at !== -1; at = lower.indexOf(id, at + 1)) {
    const before = at === 0 ? "" : lower[at - 1]!;
    const rest = lower.slice(at + id.length, at + id.length + 2);
    // A full stop ends a sentence unless an id goes on after it (`music-2.5` is not `music-2.5.1`).
    const continues = /^[a-z0-9_+-]/.test(rest) || /^\.[a-z0-9]/.test(rest);
    if (!/[a-z0-9._+-]/.test(before) && !continues) return true;
  }
  return false;
}

/**
 * A short, single-line description of a MiniMax error body (callers redact): `status_msg (code)` of
 * `base_resp`, else `error.message`, else the raw text without tags. At most 300 characters.
 */
export function describeMiniMaxError(json: unknown, text: string): string {
  const base = baseRespOf(json);
  if (base !== null) return oneLine(`${base.message} (${base.code})`);
  if (isRecord(json) && isRecord(json.error) && typeof json.error.message === "string") return oneLine(json.error.message);
  return oneLine(text.replace(/<[^>]*>/g, " "));
}

function oneLine(text: string): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > 300 ? `${t.slice(0, 300)}...` : t;
}

