/**
 * The console's only way to the gateway: the generated typed client (openapi-fetch over
 * packages/client/src/schema.ts, the OpenAPI document's types) on the console's own origin, so there is no
 * CORS. Only browser-safe modules of packages/client are imported (not its index.ts, which re-exports the
 * Node-only download helper).
 *
 * Every call carries the session token (session.ts) as `Authorization: Bearer`, unless the call sets its own
 * header. A 401 to a call made with the session token ends the session, and the route guard sends the user
 * to the sign-in page.
 *
 * ```ts
 * const me = await unwrap(api.GET("/v1/auth/me"));
 * ```
 */
import createFetchClient from "openapi-fetch";
import { GatewayError, gatewayError } from "../../packages/client/src/errors.ts";
import type { components, paths } from "../../packages/client/src/schema.ts";
import { endSession, getSession } from "./session.ts";

export { GatewayError };
export type { components, paths };
/** The schemas of the OpenAPI document (`Schemas["MediaJob"]`...). */
export type Schemas = components["schemas"];

/** The typed client: `api.GET("/v1/auth/me")`, `api.POST("/v1/auth/keys", { body })`... */
export const api = createFetchClient<paths>({ baseUrl: window.location.origin });

/** Marks requests that went out with the session token, so only their 401 ends the session. */
const withSession = new WeakSet<Request>();

api.use({
  onRequest({ request }) {
    const token = getSession().token;
    if (token && !request.headers.has("authorization")) {
      request.headers.set("authorization", `Bearer ${token}`);
      withSession.add(request);
    }
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && withSession.has(request) && getSession().token !== null) endSession("expired");
    return undefined;
  },
});

/**
 * The `data` of an openapi-fetch answer, or throws a {@link GatewayError} (the D1 error body with status
 * and request id) for a non-2xx one; a network failure rejects with the fetch error. Every documented
 * 2xx answer of the API has a JSON body.
 */
export async function unwrap<R extends { data?: unknown; error?: unknown; response: Response }>(call: Promise<R>): Promise<NonNullable<R["data"]>> {
  const { data, error, response } = await call;
  if (!response.ok) throw gatewayError(response, error);
  return data as NonNullable<R["data"]>;
}

/** A readable sentence for any error a call can raise: the D1 message, or the network failure. */
export function errorMessage(err: unknown): string {
  if (err instanceof GatewayError) return err.message;
  if (err instanceof TypeError) return "The gateway could not be reached. Check your connection and try again.";
  return err instanceof Error ? err.message : String(err);
}
