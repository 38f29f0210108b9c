/**
 * The audit context of a request (D45): who made a change through the API and with which request, for
 * accounts/audit.ts `recordAudit`. The request id is the request's own id, the `X-Svc-Request-Id` its
 * answer carries (D29), so an entry can be found from the answer of the change it records.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AuditActor, AuditContext, AuditRequest } from "../accounts/audit.ts";
import type { Principal } from "../accounts/auth-cache.ts";
import { principalOf } from "./auth.ts";

/** The actor id of the operator (the `GATEWAY_ADMIN_TOKEN` bearer, D9): there is one operator. */
export const OPERATOR_ACTOR_ID = "operator";

/** The request facts of an audit entry without its actor: request id, client address, user agent. */
export function auditRequestOf(request: FastifyRequest): AuditRequest {
  const ua = request.headers["user-agent"];
  return {
    requestId: request.id,
    ip: typeof request.ip === "string" && request.ip !== "" ? request.ip : null,
    userAgent: typeof ua === "string" && ua !== "" ? ua : null,
  };
}

/** The actor of a principal: a session's user (id and email) or an API key (its id). */
export function actorOf(principal: Principal): AuditActor {
  if (principal.keyId !== null) return { type: "key", id: principal.keyId };
  return { type: "user", id: principal.userId ?? "", email: principal.email ?? null };
}

/**
 * The audit context of a request: its actor is `who`, by default the request's authenticated principal
 * (`user` for a session with the user's id and email, `key` for an API key with the key's id); pass
 * `"operator"` on the operator API (actor `{type: "operator", id: "operator"}`). Request id, IP and user
 * agent come from the request.
 * @throws AppError 401 `auth_error` without `who` on a request that has no principal.
 */
export function auditContextOf(request: FastifyRequest, who?: Principal | "operator"): AuditContext {
  const actor: AuditActor = who === "operator" ? { type: "operator", id: OPERATOR_ACTOR_ID } : actorOf(who ?? principalOf(request));
  return { actor, ...auditRequestOf(request) };
}

/**
 * `onRequest` hook that puts the request's id on its answer as `X-Svc-Request-Id`, errors included (D29),
 * on audited routes outside the authenticated scopes (sign-in, registration, the operator API, Stripe's
 * webhook), so each audit entry can be found from the answer of its change (D45).
 */
export async function requestIdHeader(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header("x-svc-request-id", request.id);
}
