/**
 * The HTTP base of the Black Forest Labs adapter (docs/architecture.md, "How to add": one folder per upstream; `api.ts` holds the
 * base URL, the key header, the hosts and the failure mapping, `tasks.ts` speaks the task protocol,
 * `models.ts` maps our models, `source.ts` puts them together). The protocol-independent part is the
 * shared keyed base of `../keyed-http.ts`.
 *
 * Facts used here: BFL's own SDK black-forest-labs/blackforest `src/bfl/_transport.py` (base
 * `https://api.bfl.ai`, the `x-key` header, JSON bodies, `Accept: application/json`; 401/403 auth, 402
 * insufficient credits, 404 not found, 429 rate limit with `Retry-After`, 5xx server errors; error text
 * in `detail`, `message` or `error`), black-forest-labs/skills `skills/bfl-api/references/rate-limiting.md`
 * (429 when more than 24 tasks are active), and docs.bfl.ai "Integration guidelines" (the polling URL
 * returned by a submit points at the regional cluster that took the task, e.g. `api.eu2.bfl.ai`: always
 * poll that exact URL; delivery URLs are on `delivery.*.bfl.ai`, which "can change").
 *
 * ## Where the key goes (D25)
 * The key is written only into the `x-key` header of a request whose URL passes `checkUrl`:
 * - the host (host and port) of the base URL, with the base URL's scheme;
 * - hosts under `*.bfl.ai` over `https:` on the default port ({@link isBflFollowUpHost}): BFL's regional
 *   polling hosts, whose names change as clusters come and go, so no fixed list would do;
 * - the configured `trustedHosts`.
 * Any other URL (a `polling_url` on a foreign host, a tampered stored handle) is refused with a
 * non-retryable {@link BflError} of kind `refused`, and no request is made. Result images (`result.sample`,
 * signed delivery URLs) are downloaded by the runner without any key.
 *
 * ## Failures
 * | failure | `retryable` |
 * |---|---|
 * | network error, timeout (connect or total, per call) | true |
 * | HTTP 429 (too many active tasks), 408, 5xx | true |
 * | HTTP 400, 401, 402 (no credits), 403, 404, 422 (validation) and every other 4xx | false |
 * | HTTP 404 on a submit: BFL has no such model endpoint (`POST /v1/{model}`, D35) | false, `modelNotFound`, `upstreamModel` = the endpoint |
 * | malformed answer (not JSON, wrong shape) | true: BFL misbehaved, another source may not |
 * | URL refused by the host check | false |
 * Moderation is not an HTTP failure at BFL: a moderated task is accepted and its polling answer says
 * `Request Moderated` or `Content Moderated` (source.ts maps both to `contentRejected`).
 */
import { createKeyedHttp, describeErrorBody, KeyedHttpError } from "../keyed-http.ts";
import type { KeyedAnswer, KeyedErrorKind, KeyedHttp, KeyedSourceOptions } from "../keyed-http.ts";

/** BFL's global endpoint, the default base URL. */
export const DEFAULT_BFL_BASE_URL = "https://api.bfl.ai";

/** The domain under which BFL names its regional API hosts (`api.eu2.bfl.ai`, `api.us1.bfl.ai`, ...). */
export const BFL_DOMAIN = "bfl.ai";

/**
 * What one BFL credit is worth, in USD. BFL reports a task's price as `cost` in credits (blackforest
 * `src/bfl/_client.py`: "`cost` (credits)"; ComfyUI `comfy_api_nodes/apis/bfl_api.py`: "Price in
 * cents"), and black-forest-labs/skills `skills/bfl-api/SKILL.md` states "1 credit = $0.01 USD".
 */
export const BFL_CREDIT_USD = 0.01;

/**
 * How one BFL source is reached (keyed-http.ts `KeyedSourceOptions`): `baseUrl` defaults to
 * {@link DEFAULT_BFL_BASE_URL}; the key is sent as `x-key: <apiKey>`.
 */
export type BflApiConfig = KeyedSourceOptions;

/**
 * An {@link UpstreamError} of the BFL adapter: `kind` says what failed, `status` is BFL's HTTP status
 * (null when no answer came), `contentRejected` true for a moderation refusal, `modelNotFound` true
 * (with `upstreamModel`) when BFL has no such model endpoint (D35).
 */
export class BflError extends KeyedHttpError {
  constructor(
    message: string,
    opts: {
      retryable: boolean;
      kind: KeyedErrorKind;
      status?: number | null;
      contentRejected?: boolean;
      /** BFL has no such model endpoint (a 404 on submit, D35); `upstreamModel` names it. */
      modelNotFound?: boolean;
      upstreamModel?: string | null;
    },
  ) {
    super(message, opts);
    this.name = "BflError";
  }
}

/** The transport to one BFL source. Create once per source (it owns a connection pool); `close()` it. */
export interface BflApi extends KeyedHttp<BflError> {
  /** `POST {base}/v1/{endpoint}`: the submit URL of a BFL model endpoint (checked by models.ts). */
  submitUrl(endpoint: string): URL;
  /** The {@link BflError} for a non-2xx answer (see the failure table). `what` names the call. */
  httpError(answer: KeyedAnswer, what: string): BflError;
  /**
   * The {@link BflError} for a 404 answer to a submit: BFL has no model endpoint `endpoint` (D35). Not
   * retryable, `modelNotFound`, `upstreamModel` = `endpoint`; the message names it.
   */
  endpointNotFound(answer: KeyedAnswer, endpoint: string): BflError;
}

/**
 * True for a host BFL names for its own follow-up calls: a name under `*.bfl.ai` on the default port
 * (the caller has already required `https:`). `bfl.ai.evil.example` and `evilbfl.ai` are not.
 */
export function isBflFollowUpHost(url: URL): boolean {
  return url.port === "" && url.hostname.endsWith(`.${BFL_DOMAIN}`);
}

/**
 * Creates the transport of one BFL source.
 * @throws RangeError for a bad base URL, timeout or trusted host, or an empty key.
 */
export function createBflApi(config: BflApiConfig): BflApi {
  const http = createKeyedHttp<BflError>({
    ...config,
    baseUrl: config.baseUrl ?? DEFAULT_BFL_BASE_URL,
    authHeaders: (key) => ({ "x-key": key }),
    followUpHost: isBflFollowUpHost,
    followUpLabel: "a *.bfl.ai host",
    error: (message, opts) => new BflError(message, opts),
  });
  const { name } = config;
  return {
    ...http,
    submitUrl(endpoint) {
      return new URL(`${http.baseUrl.pathname.replace(/\/+$/, "")}/v1/${endpoint}`, http.baseUrl);
    },
    httpError(answer, what) {
      const { status } = answer;
      const retryable = status >= 500 || status === 429 || status === 408;
      const detail = describeErrorBody(answer.json, answer.text);
      return new BflError(http.redact(`${name}: ${what}: HTTP ${status}${detail === "" ? "" : `: ${detail}`}`), {
        retryable,
        kind: "http",
        status,
      });
    },
    endpointNotFound(answer, endpoint) {
      const detail = describeErrorBody(answer.json, answer.text);
      const message = `${name}: BFL has no model endpoint ${endpoint} (submit: HTTP ${answer.status}${detail === "" ? "" : `: ${detail}`})`;
      return new BflError(http.redact(message), { retryable: false, kind: "http", status: answer.status, modelNotFound: true, upstreamModel: endpoint });
    },
  };
}
