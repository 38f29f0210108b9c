/**
 * The `Idempotency-Key` request header (D37): every request that creates a job honours it exactly like
 * the body's `idempotency_key` (spec "States and transitions" 6), so a client that can set a header but
 * not a body field (an SDK given the header in its request options, a CLI, a retrying proxy) retries a
 * create without making a second job or hold. The body field wins when both are given.
 */
import type { FastifyRequest } from "fastify";
import { errors } from "../errors.ts";
import { IDEMPOTENCY_KEY_MAX } from "../jobs/validate.ts";

/** The header's name as Node hands it over (lower case). */
export const IDEMPOTENCY_HEADER = "idempotency-key";

/**
 * The `Idempotency-Key` header of `req`, or null when absent. A repeated header is refused rather than
 * joined (two keys name no one request).
 * @throws AppError 400 `invalid_request` (param `Idempotency-Key`) when it is empty, repeated or over
 *   {@link IDEMPOTENCY_KEY_MAX} characters.
 */
export function idempotencyHeaderOf(req: FastifyRequest): string | null {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return null;
  const value = Array.isArray(raw) ? null : raw;
  if (value === null || value.length === 0 || value.length > IDEMPOTENCY_KEY_MAX || req.raw.headersDistinct[IDEMPOTENCY_HEADER]?.length !== 1) {
    throw errors.invalidRequest(`The Idempotency-Key header must be one string of 1 to ${IDEMPOTENCY_KEY_MAX} characters.`, "Idempotency-Key");
  }
  return value;
}

/**
 * `body` with the request's idempotency key in `idempotency_key`: the body's own when it has one (it wins,
 * D37), else the header's, else `body` unchanged. The key is written into the body so that a replay hashes
 * the same whichever way the key came (the submit compares body hashes, D2 `idempotency_conflict`).
 * @throws AppError 400 `invalid_request` for a bad header (see {@link idempotencyHeaderOf}).
 */
export function withIdempotencyKey<B extends { idempotency_key?: string | null }>(body: B, req: FastifyRequest): B {
  const header = idempotencyHeaderOf(req);
  if (body.idempotency_key !== undefined && body.idempotency_key !== null) return body;
  return header === null ? body : { ...body, idempotency_key: header };
}
