/**
 * Memory under large bodies (issue "Hardening" 7): a process-wide budget of request-body bytes being
 * received and processed at once. A request that announces a large body (at least
 * {@link LARGE_BODY_BYTES}; a chunked body counts as the body limit) reserves its size before anything
 * is read; when the budget is spent it is refused at once with 503 `service_unavailable` and
 * `Retry-After: 1` (Node discards the unread body as it arrives, holding none of it, so the client still
 * reads the answer), and the reservation is returned when the answer is done. Small bodies never wait or count: the budget costs nothing on the ordinary path.
 *
 * Each large body costs about two to three times its size while it is parsed (the received chunks, the
 * joined buffer or JSON text, the parsed value), so the default `maxBytes` of 64 MB (two 25 MB bodies
 * at once) keeps a process well under 512 MB with 25 MB uploads arriving in any number.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../errors.ts";

/** Bodies from this size on (bytes) take part in the budget. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** The budget of one process. */
export class BodyBudget {
  readonly maxBytes: number;
  readonly bodyLimitBytes: number;
  #inUse = 0;

  /**
   * @param maxBytes bytes of large bodies handled at once (`BODY_BUDGET_MB`).
   * @param bodyLimitBytes the largest body accepted (a chunked body of unknown size reserves this much).
   */
  constructor(maxBytes: number, bodyLimitBytes: number) {
    this.maxBytes = maxBytes;
    this.bodyLimitBytes = bodyLimitBytes;
  }

  /** Bytes reserved now. */
  get inUse(): number {
    return this.#inUse;
  }

  /**
   * A Fastify `onRequest` hook. A body over the body limit is left to Fastify's own 413.
   * @throws AppError 503 `service_unavailable` when the budget cannot take the body now.
   */
  readonly onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const need = this.#sizeOf(request);
    if (need < LARGE_BODY_BYTES || need > this.bodyLimitBytes) return;
    // One large body is always let through, whatever its size against the budget.
    if (this.#inUse > 0 && this.#inUse + need > this.maxBytes) {
      throw new AppError(503, "service_unavailable", "Too many large request bodies are being received right now; retry shortly.", null, {
        "Retry-After": "1",
      });
    }
    this.#inUse += need;
    let returned = false;
    reply.raw.once("close", () => {
      if (returned) return;
      returned = true;
      this.#inUse -= need;
    });
  };

  /** The bytes a request's body will take: its `Content-Length`, or the body limit for a chunked body. */
  #sizeOf(request: FastifyRequest): number {
    const raw = request.headers["content-length"];
    if (typeof raw === "string" && /^\d{1,15}$/.test(raw)) return Number(raw);
    return request.headers["transfer-encoding"] === undefined ? 0 : this.bodyLimitBytes;
  }
}
