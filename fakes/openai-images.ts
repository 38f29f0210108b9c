/**
 * A loopback fake of OpenAI's image generation (`POST /v1/images/generations`), for contract tests and
 * development: it answers in OpenAI's real shapes (`ImagesResponse`, `Image`; errors `{"error": {message,
 * type, param, code}}`), with real PNGs rendered by the simulator at the requested size, validates a
 * request as strictly as OpenAI does, and misbehaves on request. The official `openai` client accepts it
 * (test/upstreams/openai-images/official-client.test.ts).
 *
 * Its rules follow the installed `openai` package (7.57.0), `node_modules/openai/resources/images.d.ts`:
 * the model ids of `ImageModel` and its "Deprecated values" note (`dall-e-2` and `dall-e-3` retired
 * 2026-05-12, `gpt-image-1` shut down 2026-10-23), the fields of `ImageGenerateParams` and each field's
 * documented values. The error bodies are OpenAI's as quoted in public issue threads (named below);
 * wordings marked *unverified* follow OpenAI's style without a quote.
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/images/generations` (JSON) | 200 `{created, background, data: [{b64_json}], output_format, quality, size, usage}` |
 * | anything else | 404 `Invalid URL (<METHOD> <path>)` |
 * Every generation needs `Authorization: Bearer <key>` (the configured `apiKey`, or any non-empty key when
 * none is configured); otherwise 401 (`invalid_api_key`, the key masked as OpenAI masks it). The answer
 * comes after `latencyMs`.
 *
 * ## Validation, in this order (400 `invalid_request_error` unless said otherwise)
 * 1. The body must be a JSON object ("We could not parse the JSON body of your request...").
 * 2. Every field must be one of `ImageGenerateParams` (`prompt`, `model`, `n`, `size`, `quality`,
 *    `background`, `moderation`, `output_format`, `output_compression`, `partial_images`, `stream`,
 *    `response_format`, `style`, `safety_identifier`, `user`, `complexity`, `frame_count`,
 *    `frame_duration_ms`, `svg`), else `Unknown parameter: 'x'.` (`unknown_parameter`, `param: "x"`; the
 *    wording quoted in vercel/ai#6102). `response_format` and `style` ("Unsupported for GPT image models")
 *    are refused the same way, since every model served is a GPT image model.
 * 3. `model` is required (the SDK: "Specify a model explicitly"; `missing_required_parameter`,
 *    *unverified*). A model of {@link RETIRED_IMAGE_MODELS} or of the `retired` option answers 404
 *    `model_not_found` "The model `x` has been deprecated, learn more here: ..." (the answer OpenAI gives
 *    for a retired model, quoted in openai/openai-quickstart-node#127); any other id not in
 *    {@link SERVED_IMAGE_MODELS} 404 `model_not_found` "The model `x` does not exist or you do not have
 *    access to it." (quoted in jdmnk/codex-imagegen-cli#18).
 * 4. Types: a field of the wrong JSON type is `invalid_type` ("Invalid type for 'n': expected an integer,
 *    but got a string instead."); fields typed `| null` in the SDK take `null` as "the default".
 * 5. Values: `prompt` 1 to 32 000 characters (`string_below_min_length` / `string_above_max_length`); `n`
 *    1 to 10 (`integer_below_min_value` / `integer_above_max_value`); `quality` `low`, `medium`, `high`,
 *    `auto`, and `xhigh`, `max` for the `gpt-image-2.5-*` models (`invalid_value`); `size` `auto` or a
 *    standard size (`1024x1024`, `1536x1024`, `1024x1536`), and for the models that take arbitrary
 *    resolutions (`gpt-image-2`, `gpt-image-2-2026-04-21`, the `gpt-image-2.5-*` models) any `WxH` with
 *    both sides multiples of 16, an aspect ratio from 1:3 to 3:1 and at most 3840x2160 (`invalid_value`);
 *    `background` `transparent`, `opaque`, `auto`; `moderation` `low`, `auto`; `complexity` `low`,
 *    `medium`, `high`; `output_compression` 0 to 100; `partial_images` 0 to 3. Wordings *unverified*.
 * Limits of the fake, not of OpenAI (400 `invalid_value` saying so): it renders PNG only (`output_format`
 * `png`; OpenAI also makes `jpeg`, `webp`, and with preview access `gif` and `svg`, to which `frame_count`,
 * `frame_duration_ms` and `svg` belong), and it does not stream (`stream: true`).
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
 * | `moderation` | 400 `moderation_blocked` (`image_generation_user_error`; quoted in ucx0204/CarrotMangaTranslator#122) |
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
 * answer with `[fake:slow]`; `markers` apply to every generation request; `retired` model ids answer 404
 * `model_not_found` as the ones OpenAI retired do.
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
  /** Model ids retired in addition to {@link RETIRED_IMAGE_MODELS}: they answer 404 `model_not_found`. */
  retired?: readonly string[];
}

/** A running fake: `url` has no version (a source's `baseUrl` is `${url}/v1`); `submits()` are the generation requests. */
export type OpenAIImagesFake = LoopbackFake;

/** The ids of `ImageModel` (`node_modules/openai/resources/images.d.ts`) that OpenAI still serves. */
export const SERVED_IMAGE_MODELS: readonly string[] = [
  "gpt-image-1.5",
  "gpt-image-2",
  "gpt-image-2-2026-04-21",
  "gpt-image-2.5-sunburst",
  "gpt-image-2.5-sunburst-2026-09-08",
  "gpt-image-2.5-flare",
  "gpt-image-2.5-flare-2026-09-08",
  "gpt-image-2.6-sunburst",
  "gpt-image-2.6-flare",
  "gpt-image-1-mini",
  "chatgpt-image-latest",
];

/** The ids of `ImageModel` that OpenAI retired ("Deprecated values": dall-e-2 and dall-e-3 2026-05-12, gpt-image-1 2026-10-23). */
export const RETIRED_IMAGE_MODELS: readonly string[] = ["dall-e-2", "dall-e-3", "gpt-image-1"];

/** Models that take any `WxH` size within the limits (`ImageGenerateParams.size`). */
const ARBITRARY_SIZE_MODELS = [
  "gpt-image-2",
  "gpt-image-2-2026-04-21",
  "gpt-image-2.5-sunburst",
  "gpt-image-2.5-sunburst-2026-09-08",
  "gpt-image-2.5-flare",
  "gpt-image-2.5-flare-2026-09-08",
];
/** Models that also take `quality` `xhigh` and `max` (`ImageGenerateParams.quality`). */
const XHIGH_MODELS = ["gpt-image-2.5-sunburst", "gpt-image-2.5-sunburst-2026-09-08", "gpt-image-2.5-flare", "gpt-image-2.5-flare-2026-09-08"];
const STANDARD_SIZES = ["1024x1024", "1536x1024", "1024x1536"];
const MAX_PROMPT_CHARS = 32_000;

/** What each field of `ImageGenerateParams` takes: its JSON type, whether `null` means the default, and its values. */
const FIELDS: Readonly<Record<string, { type: "string" | "integer" | "boolean" | "object"; nullable: boolean; values?: readonly string[]; min?: number; max?: number }>> = {
  prompt: { type: "string", nullable: false },
  model: { type: "string", nullable: true },
  n: { type: "integer", nullable: true, min: 1, max: 10 },
  size: { type: "string", nullable: true },
  quality: { type: "string", nullable: true },
  background: { type: "string", nullable: true, values: ["transparent", "opaque", "auto"] },
  moderation: { type: "string", nullable: true, values: ["low", "auto"] },
  output_format: { type: "string", nullable: true, values: ["png", "webp", "jpeg", "gif", "svg"] },
  output_compression: { type: "integer", nullable: true, min: 0, max: 100 },
  partial_images: { type: "integer", nullable: true, min: 0, max: 3 },
  stream: { type: "boolean", nullable: true },
  safety_identifier: { type: "string", nullable: true },
  user: { type: "string", nullable: false },
  complexity: { type: "string", nullable: true, values: ["low", "medium", "high"] },
  frame_count: { type: "integer", nullable: true, min: 2, max: 16 },
  frame_duration_ms: { type: "integer", nullable: true, min: 0 },
  svg: { type: "object", nullable: true },
};
/** Fields of `ImageGenerateParams` that only the retired DALL-E models took ("Unsupported for GPT image models"). */
const DALL_E_ONLY_FIELDS = ["response_format", "style"];

/** gpt-image output tokens per image by quality at 1024x1024 (illustrative; larger sizes take more). */
const OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160, xhigh: 6240, max: 8320 };

/** OpenAI's error body. */
function errorBody(message: string, type: string, code: string | null, param: string | null = null): { error: Record<string, unknown> } {
  return { error: { message, type, param, code } };
}

/** Starts the fake on loopback. */
export async function startOpenAIImagesFake(options: OpenAIImagesFakeOptions = {}): Promise<OpenAIImagesFake> {
  const latencyMs = options.latencyMs ?? 50;
  const slowMs = options.slowMs ?? 10_000;
  const retired = new Set([...RETIRED_IMAGE_MODELS, ...(options.retired ?? [])]);
  const closing = new AbortController();

  const handle = async (req: LoopbackFakeCall & { headers: http.IncomingHttpHeaders }, res: http.ServerResponse): Promise<void> => {
    const { method, url, body } = req;
    if (method !== "POST" || url.pathname !== "/v1/images/generations") {
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
    if (!isObject(body)) {
      return sendJson(res, 400, errorBody("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)", "invalid_request_error", null));
    }

    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (markers.has("429")) {
      return sendJson(res, 429, errorBody("Rate limit reached for images per minute (fake). Limit: 5/1min. Please try again in 1s.", "requests", "rate_limit_exceeded"), { "retry-after": "1" });
    }
    if (markers.has("500")) {
      return sendJson(res, 500, errorBody("The server had an error while processing your request. Sorry about that!", "server_error", null));
    }
    if (markers.has("400")) return sendJson(res, 400, errorBody("Invalid 'prompt': the fake was asked to refuse it.", "invalid_request_error", "invalid_value", "prompt"));
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>maintenance</body></html>");
      return;
    }

    const checked = validate(input, retired);
    if ("refuse" in checked) return sendJson(res, checked.status, errorBody(checked.refuse.message, "invalid_request_error", checked.refuse.code, checked.refuse.param));
    if (markers.has("moderation")) {
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
      data.push({ b64_json: Buffer.from(png).toString("base64") });
    }
    const perImage = Math.round((OUTPUT_TOKENS[checked.quality] ?? OUTPUT_TOKENS.medium) * Math.max(1, (w * h) / (1024 * 1024)));
    const textTokens = Math.max(1, Math.ceil(prompt.length / 4));
    sendJson(res, 200, {
      created: Math.floor(Date.now() / 1000),
      background: checked.background,
      data,
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
  };

  const server = await startLoopbackFake({ port: options.port, host: options.host, recordHeader: recordAuthorizationScheme }, (req, res, call) =>
    handle({ ...call, headers: req.headers }, res),
  );
  return {
    url: server.url,
    requests: server.requests,
    submits: () => server.requests.filter((r) => r.method === "POST" && r.path === "/v1/images/generations"),
    reset: () => server.reset(),
    close: async () => {
      closing.abort();
      await server.close();
    },
  };
}

/** A generation request the fake accepts. */
interface Accepted {
  model: string;
  n: number;
  size: string;
  quality: string;
  background: string;
}

/** What OpenAI refuses: the HTTP status and its error fields. */
interface Refused {
  status: 400 | 404;
  refuse: { message: string; param: string | null; code: string | null };
}

/** Checks a generation body the way OpenAI does (see the module comment). */
function validate(input: Record<string, unknown>, retired: ReadonlySet<string>): Accepted | Refused {
  const refuse = (message: string, param: string | null, code: string | null, status: 400 | 404 = 400): Refused => ({ status, refuse: { message, param, code } });
  const oneOf = (param: string, value: unknown, allowed: readonly string[]): Refused =>
    refuse(`Invalid value: '${String(value)}'. Supported values are: ${allowed.map((a) => `'${a}'`).join(", ")}.`, param, "invalid_value");

  for (const field of Object.keys(input)) {
    if (!Object.hasOwn(FIELDS, field) || DALL_E_ONLY_FIELDS.includes(field)) return refuse(`Unknown parameter: '${field}'.`, field, "unknown_parameter");
  }
  const model = input.model;
  if (model === undefined || model === null) return refuse("Missing required parameter: 'model'.", "model", "missing_required_parameter");
  if (typeof model === "string" && retired.has(model)) {
    return refuse(`The model \`${model}\` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations`, null, "model_not_found", 404);
  }
  if (typeof model === "string" && !SERVED_IMAGE_MODELS.includes(model)) {
    return refuse(`The model \`${model}\` does not exist or you do not have access to it.`, null, "model_not_found", 404);
  }

  // Types, then values. `null` means the default for a field the SDK types `| null`.
  for (const [field, rule] of Object.entries(FIELDS)) {
    const value = input[field];
    if (value === undefined || (value === null && rule.nullable)) continue;
    const got = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "number" && !Number.isInteger(value) ? "a decimal" : `a ${typeof value}`;
    const ok =
      rule.type === "integer" ? Number.isInteger(value) : rule.type === "object" ? isObject(value) : typeof value === rule.type;
    if (!ok) return refuse(`Invalid type for '${field}': expected ${rule.type === "integer" ? "an integer" : `a ${rule.type}`}, but got ${got} instead.`, field, "invalid_type");
    if (rule.values !== undefined && !rule.values.includes(value as string)) return oneOf(field, value, rule.values);
    if (typeof value === "number" && rule.min !== undefined && value < rule.min) {
      return refuse(`Invalid '${field}': integer below minimum value. Expected a value >= ${rule.min}, but got ${value} instead.`, field, "integer_below_min_value");
    }
    if (typeof value === "number" && rule.max !== undefined && value > rule.max) {
      return refuse(`Invalid '${field}': integer above maximum value. Expected a value <= ${rule.max}, but got ${value} instead.`, field, "integer_above_max_value");
    }
  }
  const id = model as string; // a string: the type checks passed
  const prompt = input.prompt;
  if (prompt === undefined) return refuse("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  if (typeof prompt === "string" && prompt.length === 0) {
    return refuse("Invalid 'prompt': string too short. Expected a string with minimum length 1, but got an empty string instead.", "prompt", "string_below_min_length");
  }
  if (typeof prompt === "string" && prompt.length > MAX_PROMPT_CHARS) {
    return refuse(`Invalid 'prompt': string too long. Expected a string with maximum length ${MAX_PROMPT_CHARS}, but got a string with length ${prompt.length} instead.`, "prompt", "string_above_max_length");
  }

  const qualities = ["low", "medium", "high", "auto", ...(XHIGH_MODELS.includes(id) ? ["xhigh", "max"] : [])];
  const quality = input.quality ?? "auto";
  if (!qualities.includes(quality as string)) return oneOf("quality", quality, qualities);
  const size = (input.size ?? "auto") as string;
  if (size !== "auto" && !STANDARD_SIZES.includes(size)) {
    const problem = ARBITRARY_SIZE_MODELS.includes(id) ? sizeProblem(size) : `${id} takes 'auto' or ${STANDARD_SIZES.map((s) => `'${s}'`).join(", ")}`;
    if (problem !== null) return refuse(`Invalid value: '${size}'. ${problem}.`, "size", "invalid_value");
  }
  // Limits of the fake (see the module comment).
  const format = input.output_format ?? "png";
  if (format !== "png") return refuse(`Invalid value: '${String(format)}'. The fake renders output_format 'png' only.`, "output_format", "invalid_value");
  for (const field of ["frame_count", "frame_duration_ms", "svg"]) {
    if (input[field] !== undefined && input[field] !== null) return refuse(`Invalid '${field}': only supported with output_format=${field === "svg" ? "svg" : "gif"}.`, field, "invalid_value");
  }
  if (input.stream === true) return refuse("Invalid value: true. The fake does not stream.", "stream", "invalid_value");

  return {
    model: id,
    n: (input.n ?? 1) as number,
    size: size === "auto" ? "1024x1024" : size,
    quality: quality === "auto" ? "high" : (quality as string),
    background: input.background === "transparent" ? "transparent" : "opaque",
  };
}

/**
 * What is wrong with an arbitrary `WxH` size (`ImageGenerateParams.size`: "Width and height must both be
 * divisible by 16 and the requested aspect ratio must be between 1:3 and 3:1 ... the maximum supported
 * resolution is `3840x2160`"), or null when it is fine.
 */
function sizeProblem(size: string): string | null {
  const match = /^([1-9][0-9]*)x([1-9][0-9]*)$/.exec(size);
  if (match === null) return "Expected 'auto' or a size 'WIDTHxHEIGHT'";
  const [w, h] = [Number(match[1]), Number(match[2])];
  if (w % 16 !== 0 || h % 16 !== 0) return "Width and height must both be divisible by 16";
  if (w > 3 * h || h > 3 * w) return "The aspect ratio must be between 1:3 and 3:1";
  if (Math.max(w, h) > 3840 || Math.min(w, h) > 2160) return "The maximum supported resolution is 3840x2160";
  return null;
}

/** A key as OpenAI shows it in a 401: its start and its last four characters. */
function masked(key: string): string {
  return key.length <= 8 ? "*".repeat(key.length) : `${key.slice(0, 3)}${"*".repeat(key.length - 7)}${key.slice(-4)}`;
}
