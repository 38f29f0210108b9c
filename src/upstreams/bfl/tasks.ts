/**
 * BFL's task protocol, and nothing else: submit a task, read its result. Each function makes exactly
 * one HTTP call; retries are the runner's business (D27).
 *
 * | call | request | answer |
 * |---|---|---|
 * | submit | `POST {base}/v1/{endpoint}`, the input as JSON | 200 `{id, polling_url, cost, input_mp, output_mp}` (the last three `number | null`) |
 * | result | `GET {polling_url}` (e.g. `https://api.eu2.bfl.ai/v1/get_result?id=...`) | 200 `{id, status, result, progress, details}` |
 *
 * Sources: docs.bfl.ai API reference (the submit answer `AsyncResponse`: `id`, `polling_url`, `cost`,
 * `input_mp`, `output_mp`; `GET /v1/get_result` answering `ResultResponse` `{id, status, result,
 * progress}`), BFL's SDK black-forest-labs/blackforest `src/bfl/_jobs.py` (the statuses: `Pending` is the
 * only unfinished one; `Ready` has `result.sample`; `Request Moderated` and `Content Moderated` are
 * moderation; `Error` and `Task not found` are failures; the task's `details` travel with them),
 * black-forest-labs/skills `skills/bfl-api/references/error-handling.md` ("Generation Failures": an
 * `Error` carries `error`, a code such as `invalid_image` or `generation_timeout`, and `message`) and
 * `src/bfl/_client.py` (a submit answer without `polling_url` is polled at `/v1/get_result?id={id}`),
 * and ComfyUI `comfy_api_nodes/apis/bfl_api.py` (`progress` 0.0 to 1.0). BFL has no cancel call: neither
 * its SDK nor its API reference has one.
 */
import { isRecord } from "../util.ts";
import { httpUrlOrNull } from "../keyed-http.ts";
import type { KeyedAnswer } from "../keyed-http.ts";
import type { BflApi } from "./api.ts";

/** One accepted task, as the submit answer describes it. Numbers are null when BFL left them out. */
export interface BflSubmitted {
  id: string;
  /** Already host-checked. */
  pollingUrl: string;
  /** The task's price in credits (see api.ts `BFL_CREDIT_USD`). */
  costCredits: number | null;
  /** Megapixels of the output image BFL will charge for. */
  outputMp: number | null;
  /** Megapixels of the reference images BFL will charge for. */
  inputMp: number | null;
}

/** The moderation statuses: the request (prompt, references) or the generated image was refused. */
export type BflModerationStatus = "Request Moderated" | "Content Moderated";

/** A result answer, decoded. */
export type BflTaskStatus =
  | { status: "Pending"; progress: number | null }
  /** `sample` is null when a Ready answer has no http(s) `result.sample`. */
  | { status: "Ready"; sample: string | null }
  | { status: BflModerationStatus; reasons: string[] }
  /**
   * `message`: what `details`, `error` and `message` say, at most 300 characters, or null; `code`: BFL's
   * machine-readable error (`error` when it is a bare token such as `invalid_image`, else
   * `details.error` or `details.code`), or null.
   */
  | { status: "Error"; message: string | null; code: string | null }
  | { status: "Task not found" };

/**
 * Submits `input` to `endpoint`. Resolves with the task's id, its host-checked polling URL and the
 * price facts of the answer. Throws a {@link BflError} (via `api`) for a non-2xx answer (a 404:
 * `modelNotFound`, the endpoint named, D35), a malformed answer, or a refused polling URL (non-retryable: the task was accepted but cannot be followed without
 * sending the key elsewhere).
 */
export async function submitTask(api: BflApi, endpoint: string, input: unknown, signal?: AbortSignal): Promise<BflSubmitted> {
  const what = `submit to ${endpoint}`;
  const answer = await api.send("POST", api.submitUrl(endpoint), input, signal);
  // A 404 to `POST /v1/{model}` can only mean the model: BFL has no (longer) such endpoint, D35.
  if (answer.status === 404) throw api.endpointNotFound(answer, endpoint);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, what);
  return decodeSubmit(api, answer, what);
}

/** Decodes a 2xx submit answer (see {@link submitTask}). */
export function decodeSubmit(api: BflApi, answer: KeyedAnswer, what: string): BflSubmitted {
  const body = answer.json;
  if (!isRecord(body) || typeof body.id !== "string" || body.id === "") throw api.malformed(what, "no task id");
  const raw = typeof body.polling_url === "string" && body.polling_url !== "" ? body.polling_url : fallbackPollingUrl(api, body.id);
  return {
    id: body.id,
    pollingUrl: api.checkUrl(raw, "polling_url").href,
    costCredits: nonNegative(body.cost),
    outputMp: nonNegative(body.output_mp),
    inputMp: nonNegative(body.input_mp),
  };
}

/**
 * Reads a task's result (`GET polling_url`, host-checked before the key is sent). Non-2xx answers
 * throw (retryable per api.ts: a 5xx or 429 means poll again; a 404 does not); a malformed answer
 * throws a retryable error.
 */
export async function getResult(api: BflApi, pollingUrl: string, signal?: AbortSignal): Promise<BflTaskStatus> {
  const url = api.checkUrl(pollingUrl, "polling_url");
  const answer = await api.send("GET", url, undefined, signal);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, "get_result");
  return decodeResult(api, answer);
}

/** Decodes a 2xx result answer. Throws a retryable malformed error for a shape or status it does not know. */
export function decodeResult(api: BflApi, answer: KeyedAnswer): BflTaskStatus {
  const body = answer.json;
  if (!isRecord(body) || typeof body.status !== "string") throw api.malformed("get_result", "no status field");
  switch (body.status) {
    case "Pending": {
      const p = body.progress;
      return { status: "Pending", progress: typeof p === "number" && Number.isFinite(p) && p >= 0 && p <= 1 ? p : null };
    }
    case "Ready": {
      const result = body.result;
      return { status: "Ready", sample: isRecord(result) ? httpUrlOrNull(result.sample) : null };
    }
    case "Request Moderated":
    case "Content Moderated":
      return { status: body.status, reasons: moderationReasons(body.details) };
    case "Error": {
      const details = isRecord(body.details) ? body.details : {};
      const code = errorCode(body.error) ?? errorCode(details.error) ?? errorCode(details.code);
      const texts = [errorText(body.error), errorText(body.message)].filter((t): t is string => t !== null);
      const message = errorText(body.details) ?? (texts.length === 0 ? null : texts.join(": ").slice(0, 300));
      return { status: "Error", message, code };
    }
    case "Task not found":
      return { status: "Task not found" };
    default:
      throw api.malformed("get_result", `unknown status ${JSON.stringify(body.status.slice(0, 40))}`);
  }
}

/** `{base}/v1/get_result?id={id}`: where BFL's SDK polls when a submit answer has no `polling_url`. */
function fallbackPollingUrl(api: BflApi, id: string): string {
  const url = new URL(`${api.baseUrl.pathname.replace(/\/+$/, "")}/v1/get_result`, api.baseUrl);
  url.searchParams.set("id", id);
  return url.href;
}

/** The reasons BFL lists in `details["Moderation Reasons"]` (at most 5, each at most 80 characters). */
function moderationReasons(details: unknown): string[] {
  const reasons = isRecord(details) ? details["Moderation Reasons"] : undefined;
  if (!Array.isArray(reasons)) return [];
  return reasons.filter((r): r is string => typeof r === "string" && r.trim() !== "").slice(0, 5).map((r) => r.trim().slice(0, 80));
}

/** An error field that is a bare machine-readable token (`invalid_image`, `E1`), else null. */
function errorCode(value: unknown): string | null {
  return typeof value === "string" && /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(value) ? value : null;
}

/** A one-line text of an error field: a string as it is, an object as JSON; at most 300 characters. */
function errorText(value: unknown): string | null {
  if (value === undefined || value === null || value === "") return null;
  const text = (typeof value === "string" ? value : JSON.stringify(value)).replace(/\s+/g, " ").trim();
  return text === "" || text === "{}" ? null : text.slice(0, 300);
}

function nonNegative(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : null;
}
