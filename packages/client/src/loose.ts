/**
 * Calls of routes the generated types (`schema.ts`) do not describe yet: the job list, cancel and
 * events stream (D30) and the usage log (D29) are built on other branches. They go through the same
 * openapi-fetch client (so its base URL, `Authorization` header and middleware apply) with the path
 * typed as a plain string. Once `npm run generate:client` has picked those routes up, callers can move to
 * the typed methods; the answer shapes in `jobs.ts` and `usage.ts` follow the decisions word for word.
 */
import type { GatewayClient } from "./index.ts";
import { gatewayError } from "./errors.ts";

/** What a loose call may carry. `query` values that are `undefined` are left out. */
export interface LooseInit {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** How to read a 2xx body (default `json`); `stream` hands back `response.body` unread. */
  parseAs?: "json" | "text" | "stream";
  signal?: AbortSignal;
}

type LooseMethod = (
  path: string,
  init?: { params?: { query?: Record<string, string | number | boolean> }; body?: unknown; headers?: Record<string, string>; parseAs?: string; signal?: AbortSignal },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/** The subset of openapi-fetch's client used with untyped paths (the same object, seen loosely). */
interface LooseClient {
  GET: LooseMethod;
  POST: LooseMethod;
}

/**
 * `method path` through `client` without compile-time path checking. Resolves with the parsed 2xx body
 * and the response; throws a {@link GatewayError} (D1 code and message) for any other status.
 */
export async function looseCall(client: GatewayClient, method: "GET" | "POST", path: string, init: LooseInit = {}): Promise<{ data: unknown; response: Response }> {
  const query = init.query
    ? (Object.fromEntries(Object.entries(init.query).filter(([, v]) => v !== undefined)) as Record<string, string | number | boolean>)
    : undefined;
  const loose = client as unknown as LooseClient;
  const { data, error, response } = await loose[method](path, {
    ...(query ? { params: { query } } : {}),
    ...(init.body !== undefined ? { body: init.body } : {}),
    ...(init.headers ? { headers: init.headers } : {}),
    ...(init.parseAs ? { parseAs: init.parseAs } : {}),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  if (!response.ok) throw gatewayError(response, error);
  return { data, response };
}
