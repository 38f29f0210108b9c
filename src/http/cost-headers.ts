/**
 * The `X-Svc-*` headers of a paid answer (spec "Rate limiting and credits", "POST /v1/audio/speech"):
 * set in this one place for every paid route. Values: USD amounts as `formatUsd` text (D16), durations in
 * seconds rounded to milliseconds, the fallback pair only when a substitute served the call.
 */
import type { FastifyReply, onSendHookHandler } from "fastify";
import { budgetRemaining } from "../accounts/budgets.ts";
import { formatUsd, type Micros } from "../money.ts";
import type { Services } from "../services.ts";
import { callOf } from "./auth.ts";

/** What a paid call reports in headers. Amounts in micro-USD; omitted fields set no header. */
export interface CostHeaderFields {
  /** `X-Svc-Model`: the catalog id that answered. */
  model: string;
  /** `X-Svc-Cost-Usd`. Omitted on a stream, whose cost is known only at its end. */
  costMicros?: Micros;
  /** `X-Svc-Balance-Usd`: the balance after the charge. */
  balanceMicros?: Micros;
  /** `X-Svc-Chars-Billed` (speech, D7). */
  charsBilled?: number;
  /** `X-Svc-Duration-Sec` (music, sound effects, transcription, understanding), seconds. */
  durationSec?: number;
  /** `X-Svc-Fallback: true` and `X-Svc-Fallback-Layer` when > 0 (text fallback). */
  fallbackLayer?: number;
}

/** A duration in seconds as the headers and bodies show it: rounded to milliseconds. */
export function roundedSeconds(sec: number): number {
  return Math.round(sec * 1000) / 1000;
}

/** Sets the `X-Svc-*` headers of `fields` on `reply` and returns it. */
export function setCostHeaders(reply: FastifyReply, fields: CostHeaderFields): FastifyReply {
  if (fields.fallbackLayer !== undefined && fields.fallbackLayer > 0) {
    reply.header("x-svc-fallback", "true").header("x-svc-fallback-layer", String(fields.fallbackLayer));
  }
  reply.header("x-svc-model", fields.model);
  if (fields.charsBilled !== undefined) reply.header("x-svc-chars-billed", String(fields.charsBilled));
  if (fields.durationSec !== undefined) reply.header("x-svc-duration-sec", String(roundedSeconds(fields.durationSec)));
  if (fields.costMicros !== undefined) reply.header("x-svc-cost-usd", formatUsd(fields.costMicros));
  if (fields.balanceMicros !== undefined) reply.header("x-svc-balance-usd", formatUsd(fields.balanceMicros));
  return reply;
}

/**
 * The `onSend` hook that adds `X-Svc-Budget-Remaining-USD` (D44) to a successful answer of a model call:
 * the smallest remaining of the `block` budgets that apply to the call (the organization's, the member's,
 * the key's, and the key's spend limit), read after the call's capture. Nothing when none applies, for a
 * test-mode key, or for organizations without budgets or key limits (no read then).
 */
export function budgetHeaderHook(services: Services): onSendHookHandler {
  return async (request, reply, payload) => {
    const principal = request.principal;
    if (principal === null || principal === undefined || principal.mode === "test") return payload;
    if (request.routeOptions.config?.modelCall !== true || reply.statusCode >= 300) return payload;
    if (!principal.budgets && (principal.key?.spendLimitMicros ?? null) === null) return payload;
    const left = await budgetRemaining(services.db.kysely, principal.accountId, callOf(request));
    if (left !== null) reply.header("x-svc-budget-remaining-usd", formatUsd(left));
    return payload;
  };
}
