/**
 * Authentication hooks (spec "Authentication", D8, D9): bearer API keys, session tokens and the operator
 * token. Routes are grouped by who may call them; each group registers one of these as `onRequest`.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../accounts/auth-cache.ts";
import { requireRole, type Role } from "../accounts/roles.ts";
import type { CallContext } from "../billing/usage.ts";
import { AppError, errors } from "../errors.ts";
import { type CallGuard, type DeferredWindows, guardFor } from "../limits/limiter.ts";
import type { Services } from "../services.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the auth hooks for authenticated routes. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /**
     * The route calls a model through the call guard ({@link guardOf}), which counts the request's windows
     * after the key's model allow-list (D34 order), with the model's own windows in one round trip to the
     * limit store (issue 33). See {@link MODEL_CALL}.
     */
    modelCall?: boolean;
    /**
     * With `modelCall`: not every request of the route calls a model (the MCP server, one `POST` per
     * JSON-RPC message), so its request windows are counted as it arrives (any message over them meets
     * them), except for a key with a model allow-list (D34 order). See {@link MODEL_CALL_MIXED}.
     */
    windowsAtAuth?: boolean;
    /**
     * The least role (D41) a caller needs in the organization it acts for; without it, `viewer` for
     * reads (GET, HEAD) and `member` for everything else (calls, own keys). See {@link ADMIN_ONLY}.
     */
    minRole?: Role;
  }
}

/** Route options `config` of a route only admins and owners may use (webhooks, alerts, top-ups; D41). */
export const ADMIN_ONLY = { minRole: "admin" } as const;

/** The organization a request names in `X-Svc-Org` (D41), or null. */
export function orgHeaderOf(request: FastifyRequest): string | null {
  const h = request.headers["x-svc-org"];
  return typeof h === "string" && h.length > 0 ? h : null;
}

/**
 * The role check of the route class (D41): the route's `minRole`, else `viewer` for reads and `member`
 * for the rest. @throws AppError 403 `forbidden_role`.
 */
function checkRouteRole(request: FastifyRequest, principal: Principal): void {
  const read = request.method === "GET" || request.method === "HEAD";
  const need = request.routeOptions.config?.minRole ?? (read ? "viewer" : "member");
  requireRole(principal.role, need, `${request.method} ${request.routeOptions.url ?? request.url}`);
}

/**
 * Route options `config` of a route that calls a model through {@link guardOf} (D34 order of checks): its
 * request windows are counted by the guard with the model's, in one round trip (issue 33).
 */
export const MODEL_CALL = { modelCall: true } as const;

/**
 * Route options `config` of a route whose requests may call a model through {@link guardOf} or not (the
 * MCP server): its request windows are counted as the request arrives, as on any route, except for a key
 * with a model allow-list, whose guard counts them after the allow-list (D34 order).
 */
export const MODEL_CALL_MIXED = { modelCall: true, windowsAtAuth: true } as const;

/** The bearer secret of `Authorization: Bearer <secret>` (or `x-api-key`, D23), or null. */
export function bearerOf(request: FastifyRequest): string | null {
  const h = request.headers.authorization;
  if (typeof h === "string") {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (m) return m[1];
  }
  const x = request.headers["x-api-key"];
  if (typeof x === "string" && x.length > 0) return x;
  return null;
}

/**
 * The reader of a dialect's key: `Authorization: <scheme> <key>` (fal's `Key`, D38; Replicate's `Token`,
 * D47), else as {@link bearerOf}.
 */
export function schemeKeyOf(scheme: string): (request: FastifyRequest) => string | null {
  const pattern = new RegExp(`^${scheme}\\s+(\\S+)\\s*$`, "i");
  return (request) => {
    const h = request.headers.authorization;
    if (typeof h === "string") {
      const m = pattern.exec(h);
      if (m) return m[1];
    }
    return bearerOf(request);
  };
}

/** The key's own per-minute window of `principal` (D34), or null when its key has no `rpm` (or it is a session). */
function keyWindowOf(principal: Principal): { id: string; rpm: number } | null {
  const rpm = principal.key?.rpm ?? null;
  return rpm !== null && principal.keyId !== null ? { id: principal.keyId, rpm } : null;
}

/**
 * Counts one request of `principal` in its per-minute windows, in one round trip to the limit store: the
 * key's own `rpm` window (D34) first, then the account's (D13, D15), whose headers go on `reply`.
 * @throws AppError 429 `rate_limited` over either (with `Retry-After`; the account's with its headers too).
 */
async function countWindows(services: Services, principal: Principal, reply: FastifyReply): Promise<void> {
  try {
    reply.headers({ ...(await services.limiter.request(principal.accountId, principal.limits, keyWindowOf(principal))) });
  } catch (err) {
    if (err instanceof AppError) reply.headers(err.headers);
    throw err;
  }
}

/**
 * The request windows of a call to a model (a {@link MODEL_CALL} route): the auth hook leaves them to the
 * call guard, which counts them with the model's own windows in one round trip to the limit store once
 * the model is allowed (issue 33; D34 order: expiry, model allow-list, key rpm, account limits, ...) and
 * skips them when it is not, so a refused model never answers 429 and never takes a place in a window. A
 * request that ends before its guard ran (a body the route refuses, an idempotent replay, an MCP request
 * that calls no model) is counted by {@link settleDeferredWindows} as it answers, without refusing it.
 */
class PendingWindows implements DeferredWindows {
  #state: "pending" | "counted" | "skipped" = "pending";
  readonly #services: Services;
  readonly #principal: Principal;
  readonly #reply: FastifyReply;

  constructor(services: Services, principal: Principal, reply: FastifyReply) {
    this.#services = services;
    this.#principal = principal;
    this.#reply = reply;
  }

  take(): ReturnType<DeferredWindows["take"]> {
    if (this.#state !== "pending") return undefined;
    this.#state = "counted";
    return { key: keyWindowOf(this.#principal), headers: (h) => void this.#reply.headers({ ...h }) };
  }

  skip(): void {
    if (this.#state === "pending") this.#state = "skipped";
  }

  /**
   * As the answer goes out: counts a request still pending as {@link countWindows} would, without
   * refusing it (its answer was decided before the windows were reached), and puts the account window's
   * D13 headers on the answer (read without counting for a request the allow-list refused, or one over
   * its key's rpm, whose account window is not counted). Never throws.
   */
  async settle(): Promise<void> {
    const { limiter } = this.#services;
    const p = this.#principal;
    const rateHeaders = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).filter(([k]) => k.toLowerCase().startsWith("x-ratelimit-")));
    if (this.#state === "counted") return;
    try {
      const count = this.#state === "pending";
      this.#state = "counted";
      let headers: Record<string, string> | null = null;
      if (count) {
        // (A callback never returns the reply: it is a thenable that settles once this answer is sent.)
        headers = await limiter.request(p.accountId, p.limits, keyWindowOf(p)).then((h): Record<string, string> | null => ({ ...h }), (err: unknown) => {
          if (!(err instanceof AppError)) throw err;
          // Over the account's rpm: its headers; over the key's: the account window was not counted.
          const rate = rateHeaders(err.headers);
          return Object.keys(rate).length > 0 ? rate : null;
        });
      }
      this.#reply.headers({ ...(headers ?? (await limiter.requestHeaders(p.accountId, p.limits))) });
    } catch {
      // The limit store failed while the answer is already decided: it goes out without the headers.
    }
  }
}

const deferred = new WeakMap<FastifyRequest, PendingWindows>();

/**
 * `onSend` hook of the app: settles the request windows a model call left to its guard (see
 * {@link PendingWindows}); nothing for other requests.
 */
export async function settleDeferredWindows(request: FastifyRequest, _reply: FastifyReply, payload: unknown): Promise<unknown> {
  const pending = deferred.get(request);
  if (pending !== undefined) {
    deferred.delete(request);
    await pending.settle();
  }
  return payload;
}

/**
 * `onRequest` hook: an API key (or, with `allowSession`, a session token) is required; 401 `auth_error`
 * otherwise, and for a key past its `expires_at` (D34). A key with its own `rpm` (D34) counts in its own
 * window before the account's (429 `rate_limited` over either), both in one round trip to the limit
 * store; on a {@link MODEL_CALL} route (on a {@link MODEL_CALL_MIXED} one: for a key with a model
 * allow-list) both are counted by the call guard instead, after the key's model allow-list (D34 order)
 * and with the model's own windows (issue 33; see {@link PendingWindows}). Every
 * answer behind it, errors included, carries `X-Svc-Request-Id` (the request's id, `req_<random>`, made
 * once by the app's `genReqId`; D29), and every answer to a test-mode key
 * `X-Svc-Test-Mode: true` (D32). `secretOf` reads the secret (default {@link bearerOf}; the ElevenLabs
 * dialect also reads `xi-api-key`, D36). D41: the caller acts for an organization (a key's own; a
 * session's from `X-Svc-Org`, default its personal one: 404 `org_not_found` for one it is not a member
 * of) and its role there must allow the route's class (403 `forbidden_role`, see {@link checkRouteRole}).
 */
export function requireAuth(services: Services, opts: { allowSession: boolean; secretOf?: (request: FastifyRequest) => string | null }) {
  const secretOf = opts.secretOf ?? bearerOf;
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    reply.header("x-svc-request-id", request.id);
    const secret = secretOf(request);
    if (secret === null) throw errors.auth("Missing API key: send Authorization: Bearer <API_KEY>.");
    const principal = await services.auth.authenticate(services.db.kysely, secret, { ...opts, org: orgHeaderOf(request) });
    if (principal === null) throw errors.auth("Invalid API key.");
    // D34: an expired key answers 401 like a deleted one, saying why.
    const expiresAt = principal.key?.expiresAt ?? null;
    if (expiresAt !== null && expiresAt <= Date.now()) {
      throw errors.auth(`This API key expired at ${new Date(expiresAt).toISOString()}.`);
    }
    request.principal = principal;
    if (principal.mode === "test") reply.header("x-svc-test-mode", "true");
    checkRouteRole(request, principal);
    // D13/D15: every authenticated request counts in the account's per-minute window and carries its
    // headers; D34: a key with its own rpm counts in the key's window first, and the model allow-list
    // comes before both. A model call's windows are counted by its guard, with the model's own windows
    // in one round trip to the limit store (issue 33).
    const config = request.routeOptions.config;
    if (config?.modelCall === true && (config.windowsAtAuth !== true || (principal.key?.models ?? null) !== null)) {
      deferred.set(request, new PendingWindows(services, principal, reply));
      return;
    }
    await countWindows(services, principal, reply);
  };
}

/** The authenticated principal of a request behind {@link requireAuth}. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw errors.auth();
  return request.principal;
}

/**
 * The paid-call context of a request behind {@link requireAuth} (D29, D32): its request id, the key and
 * the key's mode, which services write on the usage record and route by.
 */
export function callOf(request: FastifyRequest): CallContext {
  const p = principalOf(request);
  const limit = p.key?.spendLimitMicros ?? null;
  const keySpend = limit !== null && p.keyId !== null && p.key ? { keyId: p.keyId, limitMicros: limit, period: p.key.spendLimitPeriod } : null;
  return { requestId: request.id, keyId: p.keyId, mode: p.mode, keySpend, userId: p.userId, budgets: p.budgets };
}

/**
 * The caller's limits for services: the key's model allow-list (D34), then the request's own windows with
 * the per-model (and token) windows in one round trip (issue 33), and audio pool slots (D12).
 * @throws Error (a programming error, 500) on a route registered without `config: MODEL_CALL`.
 */
export function guardOf(services: Services, request: FastifyRequest): CallGuard {
  // A route that calls a model without the MODEL_CALL flag would count a key's windows before its
  // allow-list (the old order): refuse to build its guard, so the route's first test says so.
  if (request.routeOptions.config.modelCall !== true) {
    throw new Error(`route ${request.routeOptions.url ?? "?"} takes a call guard without config: MODEL_CALL (http/auth.ts)`);
  }
  const p = principalOf(request);
  return guardFor(services.limiter, p.accountId, p.limits, p.key?.models ?? null, deferred.get(request) ?? null);
}

/**
 * `GET /metrics` on the API port (issue "Hardening" 4): needs `Authorization: Bearer $METRICS_TOKEN`.
 * @throws AppError 404 `not_found` when no token is configured (metrics are then not served on this
 *   port; `METRICS_PORT` serves them on their own listener), 401 `auth_error` for a missing or wrong token.
 */
export function requireMetricsToken(services: Services) {
  const token = services.config.metricsToken;
  const expected = token === null ? null : Buffer.from(token);
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    if (expected === null) throw errors.notFound("Metrics are not served on this port.");
    const given = Buffer.from(bearerOf(request) ?? "");
    const ok = given.length === expected.length && timingSafeEqual(given, expected);
    if (!ok) throw errors.auth("Invalid metrics token.");
  };
}

/**
 * Whether a request's bearer (`Authorization: Bearer`, or `x-api-key`) is the operator token `token`
 * (`GATEWAY_ADMIN_TOKEN`, D9), compared in constant time; always false when no token is configured.
 */
export function operatorTokenCheck(token: string | null): (request: FastifyRequest) => boolean {
  const expected = token === null ? null : Buffer.from(token);
  return (request) => {
    if (expected === null) return false;
    const given = Buffer.from(bearerOf(request) ?? "");
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

/**
 * `onRequest` hook of the operator API (D9): without `GATEWAY_ADMIN_TOKEN` the API does not exist (404);
 * with it, the bearer must equal the token (constant-time), else 401 `auth_error`.
 */
export function requireAdmin(services: Services) {
  const configured = services.config.adminToken !== null;
  const isOperator = operatorTokenCheck(services.config.adminToken);
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    if (!configured) throw errors.notFound();
    if (!isOperator(request)) throw errors.auth("Invalid operator token.");
  };
}
