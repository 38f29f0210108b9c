/**
 * The console's only way to the gateway: the generated typed client (openapi-fetch over
 * packages/client/src/schema.ts, the OpenAPI document's types) on the console's own origin, so there is no
 * CORS. Only browser-safe modules of packages/client are imported (not its index.ts, which re-exports the
 * Node-only download helper).
 *
 * Every call carries the session token (session.ts) as `Authorization: Bearer`, unless the call sets its own
 * header, and with it `X-Svc-Org: <org_id>`, the organization selected in the switcher (org.ts, D41), when
 * one is: every page then reads and acts for that organization, with no page passing it. A call made with
 * its own `Authorization` (an API key, the operator token) sends no `X-Svc-Org`: a key acts for its own
 * organization. A 401 to a call made with the session token ends the session, and the route guard sends
 * the user to the sign-in page; a 404 `org_not_found` to a call that named the selected organization (the
 * user left it, or was removed) forgets the selection, so the console falls back to the personal one.
 *
 * ```ts
 * const me = await unwrap(api.GET("/v1/auth/me"));
 * ```
 */
import createFetchClient from "openapi-fetch";
import { GatewayError, gatewayError } from "../../packages/client/src/errors.ts";
import type { components, paths } from "../../packages/client/src/schema.ts";
import { getSelectedOrg, selectOrg } from "./org.ts";
import { endSession, getSession } from "./session.ts";

export { GatewayError };
export type { components, paths };
/** The schemas of the OpenAPI document (`Schemas["MediaJob"]`...). */
export type Schemas = components["schemas"];

/** The typed client: `api.GET("/v1/auth/me")`, `api.POST("/v1/auth/keys", { body })`... */
export const api = createFetchClient<paths>({ baseUrl: window.location.origin });

/** Marks requests that went out with the session token, so only their 401 ends the session. */
const withSession = new WeakSet<Request>();
/** The organization id each session request named in `X-Svc-Org`. */
const withOrg = new WeakMap<Request, string>();

api.use({
  onRequest({ request }) {
    const token = getSession().token;
    if (token && !request.headers.has("authorization")) {
      request.headers.set("authorization", `Bearer ${token}`);
      withSession.add(request);
      const org = getSelectedOrg();
      if (org !== null && !request.headers.has("x-svc-org")) {
        request.headers.set("x-svc-org", org);
        withOrg.set(request, org);
      }
    }
    return request;
  },
  async onResponse({ request, response }) {
    if (response.status === 401 && withSession.has(request) && getSession().token !== null) endSession("expired");
    const org = withOrg.get(request);
    if (response.status === 404 && org !== undefined && org === getSelectedOrg()) {
      // Only the header's refusal, not a path's (`/v1/orgs/{other}` answers org_not_found too, param `org_id`).
      const body = (await response
        .clone()
        .json()
        .catch(() => null)) as { error?: { code?: string; param?: string | null } } | null;
      if (body?.error?.code === "org_not_found" && body.error.param !== "org_id") selectOrg(null);
    }
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
