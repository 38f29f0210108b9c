/**
 * How the operator pages call the operator API (docs/operator-api.md, tag `operator` of the OpenAPI
 * document): the same typed client as the rest of the console, with the operator token
 * (`GATEWAY_ADMIN_TOKEN`, kept in sessionStorage by session.ts) as `Authorization: Bearer` instead of the
 * customer session. A 401 means the token is wrong or was changed on the server: it is forgotten, and the
 * route guard sends the operator to `/operator/sign-in`.
 *
 * Not a page (the registry globs `*.tsx` only).
 */
import { GatewayError, unwrap } from "../../api.ts";
import { getSession, setOperatorToken } from "../../session.ts";

/** The header options of an operator call: `api.GET("/v1/admin/upstreams", operatorAuth())`. */
export function operatorHeaders(token: string | null = getSession().operatorToken): { authorization: string } {
  return { authorization: `Bearer ${token ?? ""}` };
}

/**
 * {@link unwrap} for an operator call: the answer's `data`, or throws a {@link GatewayError}; a 401 also
 * forgets the operator token (the operator signs in again).
 */
export async function operatorUnwrap<R extends { data?: unknown; error?: unknown; response: Response }>(call: Promise<R>): Promise<NonNullable<R["data"]>> {
  try {
    return await unwrap(call);
  } catch (err) {
    if (err instanceof GatewayError && err.status === 401 && getSession().operatorToken !== null) setOperatorToken(null);
    throw err;
  }
}

/** The tiers an operator can set (D9: 0 to 4). */
export const TIERS = [0, 1, 2, 3, 4] as const;
