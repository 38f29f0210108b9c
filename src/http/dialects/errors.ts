/**
 * What every dialect's error handler shares (D36, D38): an answer already on its way is cut, a 5xx is
 * logged (an AppError as a warning, anything else as an error), and the error is sent with its native
 * status and headers in the body the dialect's vendor uses.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../../errors.ts";
import { toAppError } from "../error-handler.ts";

/**
 * Sends `err` (any thrown value, read as the native AppError) with its status and headers and the body
 * `bodyOf` builds for the dialect; after the headers left, the connection is closed instead. `opts` may
 * answer another status than the native one (Replicate's 422 for a native 400 naming an input field) and
 * another media type (`application/problem+json`).
 */
export function sendDialectError(
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  bodyOf: (e: AppError) => unknown,
  opts: { status?: number; contentType?: string } = {},
): void {
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.destroy();
    return;
  }
  const appErr = toAppError(err);
  if (appErr.status >= 500) {
    if (err instanceof AppError) request.log.warn({ status: appErr.status, code: appErr.code }, appErr.message);
    else request.log.error({ err }, "request failed");
  }
  void reply
    .code(opts.status ?? appErr.status)
    .headers(appErr.headers)
    .header("content-type", opts.contentType ?? "application/json; charset=utf-8")
    .send(bodyOf(appErr));
}
