/**
 * The targets of fal's proxy protocol (D38): what `@fal-ai/client` in proxy mode puts in
 * `x-fal-target-url`, read into one of the five calls the gateway serves, or refused.
 *
 * The client (fal-ai/fal-js `libs/client/src/queue.ts`, `request.ts` `buildUrl`, `middleware.ts`
 * `withProxy`) sends every request to the proxy URL with the address it would have called in that header:
 * | call | method | target |
 * |---|---|---|
 * | submit | POST | `https://queue.fal.run/<endpoint id>` (`?fal_webhook=<url>` with `webhookUrl`) |
 * | status | GET | `https://queue.fal.run/<owner>/<alias>/requests/<id>/status?logs=0|1` |
 * | result | GET | `https://queue.fal.run/<owner>/<alias>/requests/<id>` |
 * | cancel | PUT | `https://queue.fal.run/<owner>/<alias>/requests/<id>/cancel` |
 * | run | POST | `https://fal.run/<endpoint id>` (`fal.run`: submit and wait) |
 * The follow-up calls name only the endpoint's owner and alias (the client drops the endpoint's sub-path;
 * a `workflows/` or `comfy/` namespace keeps three parts, fal-js `utils.ts` `parseEndpointId`).
 *
 * Anything else (another host or scheme, credentials or a port in the URL, a path that is not one of
 * these, a method that does not fit, the status stream, fal's storage upload, a missing header) is
 * refused with a reason: the route answers 400 `invalid_request` and sends nothing anywhere.
 */

/** A call the proxy serves. `app` is `<owner>/<alias>` (or `<namespace>/<owner>/<alias>`). */
export type FalTarget =
  | { call: "submit" | "run"; endpointId: string; webhookUrl: string | null }
  | { call: "status" | "result" | "cancel"; app: string; requestId: string };

/** The hosts of fal's queue and of its synchronous runs. */
export const FAL_QUEUE_HOST = "queue.fal.run";
export const FAL_RUN_HOST = "fal.run";

/** One plain path segment of an endpoint id or request id: no dots alone, no escapes. */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Namespaces whose app ids have three parts (fal-js `utils.ts` `ENDPOINT_NAMESPACES`). */
const NAMESPACES = ["workflows", "comfy"];

/** Longest target URL read, characters (fal's longest endpoint ids are under 100). */
const MAX_TARGET_LENGTH = 2048;

/**
 * Reads the target of a proxied request. Returns the call, or a string saying why it is refused.
 * `method` is the HTTP method of the request to the proxy (the method the client would have used).
 */
export function readTarget(method: string, header: string | string[] | undefined): FalTarget | string {
  if (header === undefined || header === "") return "the x-fal-target-url header is missing";
  if (Array.isArray(header)) return "x-fal-target-url is sent more than once";
  if (header.length > MAX_TARGET_LENGTH) return "x-fal-target-url is too long";
  let url: URL;
  try {
    url = new URL(header);
  } catch {
    return "x-fal-target-url is not a URL";
  }
  if (url.protocol !== "https:" || url.username !== "" || url.password !== "" || url.port !== "") {
    return `the target ${describe(url)} is not a fal queue or run address`;
  }
  const raw = url.pathname.replace(/^\/+/, "").replace(/\/+$/, "");
  const segments = raw === "" ? [] : raw.split("/");
  if (segments.length < 2 || !segments.every((s) => SEGMENT.test(s))) return `the target ${describe(url)} names no fal endpoint`;
  if (url.hostname === FAL_RUN_HOST) {
    if (method !== "POST") return `${method} is not a call of fal.run (POST runs an endpoint)`;
    if (segments.includes("requests")) return `the target ${describe(url)} is not an endpoint id`;
    return { call: "run", endpointId: segments.join("/"), webhookUrl: null };
  }
  if (url.hostname !== FAL_QUEUE_HOST) return `the target ${describe(url)} is not a fal queue or run address`;
  const appParts = NAMESPACES.includes(segments[0]) ? 3 : 2;
  if (segments[appParts] === "requests") {
    const app = segments.slice(0, appParts).join("/");
    const requestId = segments[appParts + 1];
    const rest = segments.slice(appParts + 2).join("/");
    if (requestId === undefined) return `the target ${describe(url)} names no request`;
    if (method === "GET" && rest === "status") return { call: "status", app, requestId };
    if (method === "GET" && rest === "") return { call: "result", app, requestId };
    if (method === "PUT" && rest === "cancel") return { call: "cancel", app, requestId };
    return `${method} ${describe(url)} is not a queue call the gateway serves (status, result, cancel)`;
  }
  if (segments.includes("requests")) return `the target ${describe(url)} is not an endpoint id`;
  if (method !== "POST") return `${method} ${describe(url)} is not a queue call the gateway serves (POST submits)`;
  const webhook = url.searchParams.get("fal_webhook");
  return { call: "submit", endpointId: segments.join("/"), webhookUrl: webhook === null || webhook === "" ? null : webhook };
}

/** `host/path` of a target for a message, without its query, at most 120 characters. */
function describe(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`.slice(0, 120);
}
