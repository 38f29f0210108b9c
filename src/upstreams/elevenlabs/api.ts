/**
 * The HTTP base of the ElevenLabs adapter (docs/architecture.md, "How to add": one folder per upstream; `api.ts` holds the base
 * URL, the key header and the failure mapping, `speech.ts`, `music.ts` and `voices.ts` speak one
 * capability each, `models.ts` maps our models, `source.ts` puts them together). The
 * protocol-independent part (pool, timeouts, host check, reading answers, redaction) is the shared keyed
 * base of `../keyed-http.ts`.
 *
 * Facts used here come from ElevenLabs' own client elevenlabs/elevenlabs-js (`src/api/resources/*
 * /client/Client.ts`: base `https://api.elevenlabs.io`, the `xi-api-key` header, JSON bodies, audio
 * answers read as a byte stream, 422 a FastAPI validation error) and from answers ElevenLabs sent as
 * users quote them (test/upstreams/elevenlabs/fixtures.ts names each): `{"detail": {"status", "message"}}`
 * for 400, 401 and 429, `{"detail": {"type", "code", "status", "message"}}` for newer errors.
 *
 * ## Where the key goes (D25)
 * The key is written only into the `xi-api-key` header of a request to the host of the base URL (or a
 * configured `trustedHosts` entry). ElevenLabs names no follow-up hosts: every URL the adapter calls is
 * built from the base URL, and `preview_url`s of voices are never fetched with the key. Redirects are
 * not followed (undici's default), so a 3xx cannot carry the key elsewhere: it is a failure.
 *
 * ## Failures
 * | failure | `retryable` |
 * |---|---|
 * | network error, timeout (connect or total, per call) | true |
 * | HTTP 5xx, 429 (`rate_limit_exceeded`, `concurrent_limit_exceeded`, `too_many_concurrent_requests`, `system_busy`), 408 | true |
 * | HTTP 401 `quota_exceeded`: the account's credits at ElevenLabs ran out | true (see below) |
 * | HTTP 401 otherwise (`invalid_api_key`, ...) | false |
 * | HTTP 400 or 404 `voice_not_found` / `voice_does_not_exist` on a speech call | false, `voiceUnavailable` |
 * | HTTP 400 or 404 `model_not_found`; HTTP 422 whose FastAPI error is an `enum` / `literal_error` at `["body", "model_id"]` | false, `modelNotFound` (D35) |
 * | HTTP 400, 402, 403, 404, 422 and every other status, 3xx included | false |
 * | a 2xx answer that is not audio (JSON, HTML, text, empty, an MP3 without a frame) | true: ElevenLabs misbehaved |
 * | URL refused by the host check | false |
 * The caller's own abort is not an upstream failure: `signal.reason` is rethrown unchanged.
 *
 * "No such model" (D35): a speech `model_id` is a free string at ElevenLabs, and an id it does not serve
 * (or no longer serves: the turbo models) is answered 400 `{"detail": {"status": "model_not_found",
 * "message": "A model with model ID ... does not exist ..."}}`; the `model_id` of music and sound effects
 * is an enum (elevenlabs-js `MusicModelId.ts`, `SfxModelId.ts`), so FastAPI refuses an unknown one with a
 * 422 `enum` / `literal_error` at `["body", "model_id"]`. Both set `modelNotFound` with `upstreamModel`
 * the id sent (the call's `HttpErrorContext.model`), and the message names that id: the failover moves
 * on to the family's next source (D27) and a caller left without one learns which model was refused.
 *
 * `quota_exceeded` is retryable although it is a 4xx: it says nothing about the request, only about the
 * account behind this source's key. Another source of the family (another account, D27) may well have
 * credits, so the gateway should move on rather than fail the caller; the circuit of this source then
 * opens after repeated failures, as it should for a source that cannot serve anything.
 *
 * Every message has the key redacted; no raw undici error is attached as `cause`.
 */
import { createKeyedHttp, describeErrorBody, KeyedHttpError } from "../keyed-http.ts";
import type { KeyedBytesAnswer, KeyedErrorKind, KeyedHttp, KeyedSourceOptions } from "../keyed-http.ts";
import { isRecord } from "../util.ts";

/** ElevenLabs' public API, the default base URL. */
export const DEFAULT_ELEVENLABS_BASE_URL = "https://api.elevenlabs.io";

/** `detail.status` values (or `detail.code`) meaning the speech call named a voice ElevenLabs does not have. */
export const VOICE_GONE_STATUSES: readonly string[] = ["voice_not_found", "voice_does_not_exist"];

/** `detail.status` (or `detail.code`) meaning the `model_id` sent does not exist at ElevenLabs (D35). */
export const MODEL_NOT_FOUND_STATUS = "model_not_found";

/** `detail.status` of a 401 meaning the account ran out of credits (retryable, see the module comment). */
export const QUOTA_EXCEEDED_STATUS = "quota_exceeded";

/** Most characters of ElevenLabs' own error text copied into ours. */
const MAX_DETAIL_CHARS = 300;

/**
 * How one ElevenLabs source is reached (keyed-http.ts `KeyedSourceOptions`): `baseUrl` defaults to
 * {@link DEFAULT_ELEVENLABS_BASE_URL}; the key is sent as `xi-api-key: <apiKey>`.
 */
export type ElevenLabsApiConfig = KeyedSourceOptions;

/**
 * An {@link UpstreamError} of the ElevenLabs adapter: `kind` says what failed, `status` is the HTTP
 * status (null when no answer came), `errorStatus` ElevenLabs' machine-readable `detail.status` (or
 * `detail.code`, or the first FastAPI `detail[].type`) when it gave one, `voiceUnavailable` true when a
 * speech call named a voice ElevenLabs does not have, `modelNotFound` true (with `upstreamModel` the id
 * sent) when ElevenLabs says the `model_id` does not exist (D35; see the module comment).
 */
export class ElevenLabsError extends KeyedHttpError {
  readonly errorStatus: string | null;

  constructor(
    message: string,
    opts: {
      retryable: boolean;
      kind: KeyedErrorKind;
      status?: number | null;
      errorStatus?: string | null;
      voiceUnavailable?: boolean;
      modelNotFound?: boolean;
      upstreamModel?: string | null;
    },
  ) {
    super(message, opts);
    this.name = "ElevenLabsError";
    this.errorStatus = opts.errorStatus ?? null;
  }
}

/**
 * What a non-2xx answer is mapped with: `speech` makes `voice_not_found` a `voiceUnavailable` error;
 * `model` is the `model_id` the call sent, named by a `modelNotFound` error (D35).
 */
export interface HttpErrorContext {
  speech?: boolean;
  model?: string;
}

/** The transport to one ElevenLabs source. Create once per source (it owns or shares a pool); `close()` it. */
export interface ElevenLabsApi extends KeyedHttp<ElevenLabsError> {
  /** `{base}{path}` with `query` (values already strings), the base URL's own path kept as a prefix. */
  url(path: string, query?: Readonly<Record<string, string>>): URL;
  /** The {@link ElevenLabsError} for a non-2xx answer (see the failure table). `what` names the call. */
  httpError(answer: KeyedBytesAnswer, what: string, context?: HttpErrorContext): ElevenLabsError;
}

/**
 * Creates the transport of one ElevenLabs source.
 * @throws RangeError for a bad base URL, timeout or trusted host, or an empty key.
 */
export function createElevenLabsApi(config: ElevenLabsApiConfig): ElevenLabsApi {
  const http = createKeyedHttp<ElevenLabsError>({
    ...config,
    baseUrl: config.baseUrl ?? DEFAULT_ELEVENLABS_BASE_URL,
    authHeaders: (key) => ({ "xi-api-key": key }),
    // ElevenLabs names no follow-up URLs: only the base URL's host and trusted hosts get the key.
    followUpHost: () => false,
    followUpLabel: "an ElevenLabs follow-up host (it names none)",
    error: (message, opts) => new ElevenLabsError(message, opts),
  });
  const { name } = config;
  return {
    ...http,
    url(path, query = {}) {
      const url = new URL(`${http.baseUrl.pathname.replace(/\/+$/, "")}${path}`, http.baseUrl);
      for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
      return url;
    },
    httpError(answer, what, context = {}) {
      const { status } = answer;
      const { json, text } = decodeErrorBody(answer.body);
      const errorStatus = elevenLabsErrorStatus(json);
      const voiceUnavailable =
        context.speech === true && (status === 400 || status === 404) && errorStatus !== null && VOICE_GONE_STATUSES.includes(errorStatus);
      const modelNotFound = isModelNotFound(status, json);
      const retryable = status >= 500 || status === 429 || status === 408 || (status === 401 && errorStatus === QUOTA_EXCEEDED_STATUS);
      const detail = describeElevenLabsError(json, text);
      const model = context.model ?? null;
      const head = modelNotFound ? `${what}: ElevenLabs has no model ${JSON.stringify(model ?? "(unknown)")}` : what;
      return new ElevenLabsError(http.redact(`${name}: ${head}: HTTP ${status}${detail === "" ? "" : `: ${detail}`}`), {
        retryable,
        kind: "http",
        status,
        errorStatus,
        voiceUnavailable,
        modelNotFound,
        upstreamModel: modelNotFound ? model : null,
      });
    },
  };
}

/**
 * ElevenLabs' machine-readable error of a JSON body, or null: `detail.status`, else `detail.code`
 * (`{"detail": {"type", "code", "status", "message"}}` carries both; `status` is the older, stabler
 * field), else the first FastAPI `detail[].type`.
 */
export function elevenLabsErrorStatus(json: unknown): string | null {
  if (!isRecord(json)) return null;
  const detail = json.detail;
  if (isRecord(detail)) {
    if (typeof detail.status === "string" && detail.status !== "") return detail.status;
    if (typeof detail.code === "string" && detail.code !== "") return detail.code;
    return null;
  }
  if (Array.isArray(detail)) {
    for (const item of detail) if (isRecord(item) && typeof item.type === "string" && item.type !== "") return item.type;
  }
  return null;
}

/**
 * True when an error answer says the `model_id` sent does not exist (D35): 400 or 404 with
 * `detail.status` (or `detail.code`) `model_not_found`, or a FastAPI 422 whose error at
 * `["body", "model_id"]` is an `enum` or `literal_error` (music and sound effects take an enum of ids).
 */
export function isModelNotFound(status: number, json: unknown): boolean {
  if (!isRecord(json)) return false;
  const detail = json.detail;
  if ((status === 400 || status === 404) && isRecord(detail)) {
    return detail.status === MODEL_NOT_FOUND_STATUS || detail.code === MODEL_NOT_FOUND_STATUS;
  }
  if (status === 422 && Array.isArray(detail)) {
    return detail.some(
      (item) =>
        isRecord(item) &&
        (item.type === "enum" || item.type === "literal_error") &&
        Array.isArray(item.loc) &&
        item.loc.length === 2 &&
        item.loc[0] === "body" &&
        item.loc[1] === "model_id",
    );
  }
  return false;
}

/**
 * A short, single-line description of ElevenLabs' error body (without the key: callers redact):
 * - `{detail: {status | code, message}}`: `message (status)`, or the status alone when there is no message;
 * - `{detail: [{loc, msg, type}]}` and anything else: keyed-http.ts `describeErrorBody` (FastAPI errors
 *   as `field: msg (type)`, raw text with tags collapsed).
 * At most 300 characters.
 */
export function describeElevenLabsError(json: unknown, text: string): string {
  if (isRecord(json) && isRecord(json.detail)) {
    const detail = json.detail;
    const message = typeof detail.message === "string" ? detail.message.replace(/\s+/g, " ").trim() : "";
    const status = elevenLabsErrorStatus(json);
    const out = message === "" ? (status ?? describeErrorBody(json, text)) : status === null ? message : `${message} (${status})`;
    return out.length > MAX_DETAIL_CHARS ? `${out.slice(0, MAX_DETAIL_CHARS)}...` : out;
  }
  return describeErrorBody(json, text);
}

/** An error body read as bytes: its text (at most 64 KiB looked at) and its JSON, or undefined. */
function decodeErrorBody(body: Uint8Array): { json: unknown; text: string } {
  const text = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, 64 * 1024)).toString("utf8");
  if (text.trim() === "") return { json: undefined, text };
  try {
    return { json: JSON.parse(text) as unknown, text };
  } catch {
    return { json: undefined, text };
  }
}
