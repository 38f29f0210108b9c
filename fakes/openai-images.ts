/**
 * A loopback fake of OpenAI's image generation (`POST /v1/images/generations`), for contract tests and
 * development: it answers in OpenAI's real shapes (the `openai` npm package, `resources/images.ts`:
 * `ImagesResponse`, `Image`; errors `{"error": {message, type, param, code}}`), with real PNGs rendered by
 * the simulator at the requested size, and misbehaves on request. The official `openai` client accepts
 * it (test/upstreams/openai-images/official-client.test.ts).
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/images/generations` (JSON) | 200 `{created, data: [{b64_json} or {url}, + revised_prompt for dall-e-3]}`; gpt-image models add `background`, `output_format`, `quality`, `size`, `usage` |
 * | `GET /files/{id}.png` (no key: OpenAI's image URLs are signed, public links) | the PNG (the latest 100 are kept) |
 * Every generation needs `Authorization: Bearer <key>` (the configured `apiKey`, or any non-empty key when
 * none is configured); otherwise 401 (`invalid_api_key`, the key masked as OpenAI masks it). The answer
 * comes after `latencyMs`.
 *
 * Validation, like OpenAI's (the rules of openai/openai-openapi `openapi.yaml` `CreateImageRequest`; a 400
 * `invalid_request_error` whose exact wording is *unverified* unless a source is named):
 * - `prompt` must be a non-empty string (`missing_required_parameter`); `model` must be `dall-e-3` or a
 *   `gpt-image-*` model (`invalid_value`; OpenAI's default, dall-e-2, is not served);
 * - dall-e-3: `n` must be 1 ("For `dall-e-3`, only `n=1` is supported"); `size` one of
 *   `1024x1024`, `1792x1024`, `1024x1792` (`invalid_size`, "The size is not supported by this model.",
 *   quoted in redevrx/chat_gpt_sdk#93); `quality` `standard` or `hd`; `response_format` `url` (OpenAI's
 *   default) or `b64_json`; `output_format` refused (`unknown_parameter`);
 * - gpt-image: `n` 1 to 10; `size` `1024x1024`, `1536x1024`, `1024x1536` or `auto` (`invalid_value`);
 *   `quality` `low`, `medium`, `high` or `auto`; any `response_format` refused with `Unknown parameter:
 *   'response_format'.` (`unknown_parameter`, quoted in vercel/ai#6102); `output_format` `png` only (the
 *   fake renders PNG; OpenAI would also make `jpeg` and `webp`). `usage` token counts are illustrative.
 *
 * ## Misbehaviour markers
 * In the prompt as `[fake:NAME]`, or for every request with the `markers` option; unknown names are
 * ignored:
 * | marker | effect |
 * |---|---|
 * | `429` | 429 `rate_limit_exceeded` (`type: "requests"`) with `retry-after: 1` |
 * | `500` | 500 `server_error` ("The server had an error while processing your request...") |
 * | `400` | 400 `invalid_request_error` on `prompt` (`invalid_value`) |
 * | `401` | 401 `invalid_api_key`, as for a wrong key |
 * | `moderation` | the refusal of the model asked: dall-e-3 400 `content_policy_violation` (`invalid_request_error`; quoted in songquanpeng/one-api#737); gpt-image 400 `moderation_blocked` (`image_generation_user_error`; quoted in ucx0204/CarrotMangaTranslator#122) |
 * | `malformed` | 200 with an HTML page |
 * | `hang` | never answered (until `close()`) |
 * | `slow` | answered after `slowMs` instead of `latencyMs` |
 * | `echo-key` | 401 with the caller's whole key echoed in the message (redaction tests) |
 * Markers are applied after authentication (`echo-key` before it), before validation (`moderation` after).
 *
 * `requests` records every request in order: `method`, `path`, `headers` (lower-case; `authorization`
 * keeps only its scheme: `Bearer [redacted]`) and the parsed JSON `body` (or null).
 */
import { randomUUID } from "node:crypto";
import type http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { isJsonObject as isObject, markersOf, recordAuthorizationScheme, sendJson, startLoopbackFake } from "./loopback.ts";
import type { LoopbackFake, LoopbackFakeCall } from "./loopback.ts";
import { renderPngAsync } from "../src/upstreams/simulator/images/png.ts";
import { fitRenderSize } from "../src/upstreams/simulator/images/size.ts";

/**
 * Options of {@link startOpenAIImagesFake}: `apiKey` is a Bearer key; `slowMs` is the time before the
 * answer with `[fake:slow]`; `markers` apply to every generation request.
 */
export interface OpenAIImagesFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty Bearer key. */
  apiKey?: string;
  /** How long a `[fake:slow]` request takes, ms (default 10 000). */
  slowMs?: number;
  /** Markers applied to every generation request, as if each prompt carried them. Default none. */
  markers?: readonly string[];
  /** Time before each generation answer, ms (default 50). */
  latencyMs?: number;
}

/**
 * A running fake: `url` has no version (a source's `baseUrl` is `${url}/v1`); `submits()` are the
 * generation requests (`POST /v1/images/generations`); `reset()` also forgets the served files.
 */
export type OpenAIImagesFake = LoopbackFake;

const GENERATIONS_PATH = "/v1/images/generations";
const MAX_FILES = 100;
const DALL_E_SIZES = ["1024x1024", "1792x1024", "1024x1792"];
const GPT_IMAGE_SIZES = ["1024x1024", "1536x1024", "1024x1536", "auto"];
/** gpt-image output tokens per image by quality at 1024x1024 (illustrative; larger sizes take 1.5x). */
const OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160 };

/** OpenAI's error body. */
function errorBody(message: string, type: string, code: string | null, param: string | null = null): { error: Record<string, unknown> } {
  return { error: { message, type, param, code } };
}

/** Starts the fake on loopback. */
export async function startOpenAIImagesFake(options: OpenAIImagesFakeOptions = {}): Promise<OpenAIImagesFake> {
  const latencyMs = options.latencyMs ?? 50;
  const slowMs = options.slowMs ?? 10_000;
  const files = new Map<string, Uint8Array>();
  const closing = new AbortController();
  let base = "";

  const invalid = (res: http.ServerResponse, message: string, param: string | null, code: string | null): void =>
    sendJson(res, 400, errorBody(message, "invalid_request_error", code, param));

  const handle = async (req: LoopbackFakeCall & { headers: http.IncomingHttpHeaders }, res: http.ServerResponse): Promise<void> => {
    const { method, url, body } = req;
    const file = /^\/files\/([0-9a-f-]+)\.png$/.exec(url.pathname);
    if (method === "GET" && file !== null) {
      const bytes = files.get(file[1]);
      if (bytes === undefined) return sendJson(res, 404, errorBody("File not found", "invalid_request_error", null));
      res.writeHead(200, { "content-type": "image/png", "content-length": String(bytes.byteLength) });
      res.end(bytes);
      return;
    }
    if (method !== "POST" || url.pathname !== GENERATIONS_PATH) {
      return sendJson(res, 404, errorBody(`Invalid URL (${method} ${url.pathname})`, "invalid_request_error", null));
    }

    const auth = req.headers.authorization ?? "";
    const key = /^Bearer\s+(\S.*)$/i.exec(auth)?.[1] ?? "";
    const input = isObject(body) ? body : {};
    const prompt = typeof input.prompt === "string" ? input.prompt : "";
    const markers = markersOf(prompt, options.markers);
    const wrongKey = (shown: string): void =>
      sendJson(res, 401, errorBody(`Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`, "invalid_request_error", "invalid_api_key"));
    if (markers.has("echo-key")) return wrongKey(key === "" ? auth : key);
    if (key === "") {
      return sendJson(res, 401, errorBody("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", null));
    }
    if ((options.apiKey !== undefined && key !== options.apiKey) || markers.has("401")) return wrongKey(masked(key));
    if (body === undefined) {
      return invalid(res, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)", null, null);
    }

    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (markers.has("429")) {
      return sendJson(res, 429, errorBody("Rate limit reached for images per minute (fake). Limit: 5/1min. Please try again in 1s.", "requests", "rate_limit_exceeded"), { "retry-after": "1" });
    }
    if (markers.has("500")) {
      return sendJson(res, 500, errorBody("The server had an error while processing your request. Sorry about that!", "server_error", null));
    }
    if (markers.has("400")) return invalid(res, "Invalid 'prompt': the fake was asked to refuse it.", "prompt", "invalid_value");
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>maintenance</body></html>");
      return;
    }

    const checked = validate(input);
    if ("refuse" in checked) return invalid(res, checked.refuse.message, checked.refuse.param, checked.refuse.code);
    if (markers.has("moderation")) {
      if (checked.dialect === "dall-e") {
        return invalid(res, "Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.", null, "content_policy_violation");
      }
      return sendJson(res, 400, errorBody(`Your request was rejected by the safety system. If you believe this is an error, contact us at help.openai.com and include the request ID ${randomUUID()}. safety_violations=[violence].`, "image_generation_user_error", "moderation_blocked"));
    }

    try {
      await sleep(markers.has("slow") ? slowMs : latencyMs, undefined, { signal: closing.signal });
    } catch {
      return; // the fake is closing
    }
    const [w, h] = checked.size.split("x").map(Number);
    const { width, height } = fitRenderSize(w, h) ?? { width: 1024, height: 1024 };
    const data: Record<string, unknown>[] = [];
    for (let index = 0; index < checked.n; index++) {
      const png = await renderPngAsync({ prompt, width, height, seed: checked.model, index });
      const item: Record<string, unknown> = {};
      if (checked.asUrl) {
        const id = randomUUID();
        files.set(id, png);
        // A long-running fake keeps the latest files only (OpenAI's links expire too).
        for (const old of files.keys()) {
          if (files.size <= MAX_FILES) break;
          files.delete(old);
        }
        item.url = `${base}/files/${id}.png`;
      } else {
        item.b64_json = Buffer.from(png).toString("base64");
      }
      if (checked.dialect === "dall-e") item.revised_prompt = `A detailed image of: ${prompt}`;
      data.push(item);
    }
    const answer: Record<string, unknown> = { created: Math.floor(Date.now() / 1000), data };
    if (checked.dialect === "gpt-image") {
      const perImage = Math.round((OUTPUT_TOKENS[checked.quality] ?? OUTPUT_TOKENS.medium) * (checked.size === "1024x1024" ? 1 : 1.5));
      const textTokens = Math.max(1, Math.ceil(prompt.length / 4));
      Object.assign(answer, {
        background: "opaque",
        output_format: "png",
        quality: checked.quality,
        size: checked.size,
        usage: {
          input_tokens: textTokens,
          input_tokens_details: { image_tokens: 0, text_tokens: textTokens },
          output_tokens: perImage * checked.n,
          total_tokens: textTokens + perImage * checked.n,
        },
      });
    }
    sendJson(res, 200, answer);
  };

  const server = await startLoopbackFake({ port: options.port, host: options.host, recordHeader: recordAuthorizationScheme }, (req, res, call) =>
    handle({ ...call, headers: req.headers }, res),
  );
  base = server.url;
  return {
    url: base,
    requests: server.requests,
    submits: () => server.requests.filter((r) => r.method === "POST" && r.path === GENERATIONS_PATH),
    reset: () => {
      server.reset();
      files.clear();
    },
    close: async () => {
      closing.abort();
      await server.close();
    },
  };
}

/** A generation request the fake accepts. */
interface Accepted {
  model: string;
  dialect: "dall-e" | "gpt-image";
  n: number;
  size: string;
  quality: string;
  asUrl: boolean;
}

/** What OpenAI refuses, as its error fields. */
interface Refused {
  refuse: { message: string; param: string | null; code: string | null };
}

/** Checks a generation body the way OpenAI does (see the module comment). */
function validate(input: Record<string, unknown>): Accepted | Refused {
  const refuse = (message: string, param: string | null, code: string | null): Refused => ({ refuse: { message, param, code } });
  const unknown = (param: string): Refused => refuse(`Unknown parameter: '${param}'.`, param, "unknown_parameter");
  const oneOf = (param: string, value: unknown, allowed: readonly string[]): Refused =>
    refuse(`Invalid value: '${String(value)}'. Supported values are: ${allowed.map((a) => `'${a}'`).join(", ")}.`, param, "invalid_value");
  if (typeof input.prompt !== "string" || input.prompt === "") return refuse("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  const model = typeof input.model === "string" ? input.model : "dall-e-2";
  const n = input.n ?? 1;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 10) return refuse(`Invalid 'n': expected an integer from 1 to 10, got ${JSON.stringify(n)}.`, "n", "invalid_value");
  if (model === "dall-e-3") {
    if (n !== 1) return refuse("Invalid 'n': dall-e-3 only supports n=1.", "n", "invalid_value");
    const size = input.size ?? "1024x1024";
    if (typeof size !== "string" || !DALL_E_SIZES.includes(size)) return refuse("The size is not supported by this model.", null, "invalid_size");
    const quality = input.quality ?? "standard";
    if (quality !== "standard" && quality !== "hd") return oneOf("quality", quality, ["standard", "hd"]);
    const format = input.response_format ?? "url";
    if (format !== "url" && format !== "b64_json") return oneOf("response_format", format, ["url", "b64_json"]);
    if (input.output_format !== undefined) return unknown("output_format");
    return { model, dialect: "dall-e", n, size, quality, asUrl: format === "url" };
  }
  if (model.startsWith("gpt-image-")) {
    if (input.response_format !== undefined) return unknown("response_format");
    const size = input.size ?? "auto";
    if (typeof size !== "string" || !GPT_IMAGE_SIZES.includes(size)) return oneOf("size", size, GPT_IMAGE_SIZES);
    const quality = input.quality ?? "auto";
    if (quality !== "low" && quality !== "medium" && quality !== "high" && quality !== "auto") return oneOf("quality", quality, ["low", "medium", "high", "auto"]);
    const format = input.output_format ?? "png";
    if (format !== "png") return oneOf("output_format", format, ["png"]);
    return { model, dialect: "gpt-image", n, size: size === "auto" ? "1024x1024" : size, quality: quality === "auto" ? "high" : quality, asUrl: false };
  }
  return oneOf("model", model, ["dall-e-3", "gpt-image-1"]);
}

/** A key as OpenAI shows it in a 401: its start and its last four characters. */
function masked(key: string): string {
  return key.length <= 8 ? "*".repeat(key.length) : `${key.slice(0, 3)}${"*".repeat(key.length - 7)}${key.slice(-4)}`;
}

