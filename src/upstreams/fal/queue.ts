/**
 * fal's queue protocol, and nothing else (docs/architecture.md, "How to add": "a queue client that only speaks the protocol"):
 * submit, status, result, cancel, as fal-ai/fal-js `libs/client/src/queue.ts` and `request.ts` do them.
 *
 * | call | request | answer |
 * |---|---|---|
 * | submit | `POST {base}/{endpoint_id}`, the input as JSON | `{status: "IN_QUEUE", request_id, status_url, response_url, cancel_url, queue_position}` |
 * | status | `GET {status_url}?logs=0` | 202 `IN_QUEUE` (+`queue_position`), 202 `IN_PROGRESS` (+`logs`), 200 `COMPLETED` (+`logs`, `metrics`, and `error`, `error_type` when the request failed) |
 * | result | `GET {response_url}` | the endpoint's output JSON; a failed request answers non-2xx with fal's error body |
 * | cancel | `PUT {cancel_url}` | 202 `{status: "CANCELLATION_REQUESTED"}`; 400 `{status: "ALREADY_COMPLETED"}` |
 *
 * The follow-up URLs are taken from the submit answer (they drop the endpoint's sub-path: a submit to
 * `fal-ai/flux-pro/v1.1-ultra` is followed at `fal-ai/flux-pro/requests/{id}`); only when fal leaves
 * one out is it built the way fal-js `buildUrl` does. Every URL passes the host check of api.ts before
 * the key is sent. The status codes 202/200 of the status call are those of fal-ai/fal
 * `projects/fal/src/fal/apps.py`; the `error`/`error_type` fields of a failed COMPLETED are fal-ai/fal
 * `projects/fal_client/src/fal_client/client.py` `Completed` (and its unit test). Retries are the
 * runner's business (D27): each function makes exactly one HTTP call.
 */
import { isRecord } from "../util.ts";
import type { FalAnswer, FalApi } from "./api.ts";

/** The follow-up URLs of one accepted fal request. */
export interface FalRequestRef {
  requestId: string;
  statusUrl: string;
  responseUrl: string;
  cancelUrl: string;
}

/** A status answer, decoded. */
export type FalStatus =
  | { status: "IN_QUEUE"; position: number | null }
  | { status: "IN_PROGRESS" }
  | { status: "COMPLETED"; error: string | null; errorType: string | null };

/** Endpoint-id namespaces whose app id has three parts (fal-js `utils.ts` `ENDPOINT_NAMESPACES`). */
const ENDPOINT_NAMESPACES = ["workflows", "comfy"];

/**
 * Submits `input` to `endpointId`. Resolves with the request's follow-up URLs, each checked against the
 * key's hosts. Throws {@link FalError} (via `api`) for non-2xx answers (a 404: `modelNotFound`, the
 * endpoint named, D35), a malformed answer or a refused follow-up URL (non-retryable: the request was
 * accepted but cannot be followed without leaking the key).
 */
export async function submitRequest(api: FalApi, endpointId: string, input: unknown, signal?: AbortSignal): Promise<FalRequestRef> {
  const what = `submit to ${endpointId}`;
  const answer = await api.send("POST", api.submitUrl(endpointId), input, signal);
  // A 404 to a submit can only mean the endpoint: fal does not serve that id (any more), D35.
  if (answer.status === 404) throw api.endpointNotFound(answer, endpointId);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, what);
  const body = answer.json;
  if (!isRecord(body) || typeof body.request_id !== "string" || body.request_id === "") {
    throw api.malformed(what, "no request_id");
  }
  const requestId = body.request_id;
  const fallback = followUpBase(api, endpointId, requestId);
  const pick = (field: string, built: string): string => {
    const value = body[field];
    const raw = typeof value === "string" && value !== "" ? value : built;
    return api.checkUrl(raw, field).href;
  };
  return {
    requestId,
    statusUrl: pick("status_url", `${fallback}/status`),
    responseUrl: pick("response_url", fallback),
    cancelUrl: pick("cancel_url", `${fallback}/cancel`),
  };
}

/**
 * Reads the request's status (`GET status_url?logs=0`, the query fal-js adds: no runner logs). Non-2xx
 * and malformed answers throw.
 */
export async function requestStatus(api: FalApi, ref: FalRequestRef, signal?: AbortSignal): Promise<FalStatus> {
  const url = api.checkUrl(ref.statusUrl, "status_url");
  if (!url.searchParams.has("logs")) url.searchParams.set("logs", "0");
  const answer = await api.send("GET", url, undefined, signal);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, "status");
  return decodeStatus(api, answer);
}

/** Reads the request's result (`GET response_url`), whatever the status: the caller classifies it. */
export async function requestResult(api: FalApi, ref: FalRequestRef, signal?: AbortSignal): Promise<FalAnswer> {
  const url = api.checkUrl(ref.responseUrl, "response_url");
  return api.send("GET", url, undefined, signal);
}

/**
 * Asks fal to cancel (`PUT cancel_url`). A request that already finished (400 `ALREADY_COMPLETED`) or
 * is unknown (404) is not an error: there is nothing left to cancel. Other failures throw.
 */
export async function cancelRequest(api: FalApi, ref: FalRequestRef, signal?: AbortSignal): Promise<void> {
  const url = api.checkUrl(ref.cancelUrl, "cancel_url");
  const answer = await api.send("PUT", url, undefined, signal);
  if (answer.status >= 200 && answer.status <= 299) return;
  if (answer.status === 400 || answer.status === 404) return;
  throw api.httpError(answer, "cancel");
}

/** Decodes a 2xx status answer. */
export function decodeStatus(api: FalApi, answer: FalAnswer): FalStatus {
  const body = answer.json;
  if (!isRecord(body) || typeof body.status !== "string") throw api.malformed("status", "no status field");
  switch (body.status) {
    case "IN_QUEUE": {
      const p = body.queue_position;
      return { status: "IN_QUEUE", position: typeof p === "number" && Number.isInteger(p) && p >= 0 ? p : null };
    }
    case "IN_PROGRESS":
      return { status: "IN_PROGRESS" };
    case "COMPLETED": {
      const error = body.error;
      const errorType = typeof body.error_type === "string" && body.error_type !== "" ? body.error_type : null;
      const hasError = error !== undefined && error !== null && error !== "";
      return {
        status: "COMPLETED",
        error: hasError ? (typeof error === "string" ? error : JSON.stringify(error)) : errorType,
        errorType,
      };
    }
    default:
      throw api.malformed("status", `unknown status ${JSON.stringify(body.status.slice(0, 40))}`);
  }
}

/**
 * `{base}/{owner}/{alias}/requests/{id}` as fal-js builds it (`queue.ts`: the app id without the
 * endpoint's sub-path; a `workflows/` or `comfy/` namespace keeps three parts).
 */
function followUpBase(api: FalApi, endpointId: string, requestId: string): string {
  const parts = endpointId.split("/");
  const appParts = ENDPOINT_NAMESPACES.includes(parts[0]) ? parts.slice(0, 3) : parts.slice(0, 2);
  const base = api.baseUrl.href.replace(/\/+$/, "");
  return `${base}/${appParts.join("/")}/requests/${encodeURIComponent(requestId)}`;
}
