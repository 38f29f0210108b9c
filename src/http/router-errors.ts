/**
 * Errors raised before a route runs, in the D1 body like every other error (D1, D16):
 * - {@link frameworkError}: the router's own failures (Fastify's `frameworkErrors` option): a path
 *   parameter over the router's length limit (414), a path that does not decode (400);
 * - {@link clientErrorHandler}: requests Node's HTTP parser rejects before Fastify sees them (Fastify's
 *   `clientErrorHandler` option): headers over the size limit (431), a request that took too long to
 *   arrive (408), a malformed request line or header (400).
 *
 * Messages are short and fixed: they never repeat the path or a header, which may hold a secret.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, errors } from "../errors.ts";
import { errorHandler } from "./error-handler.ts";

/** The D1 error for a router failure (Fastify error code `code`), or null when it is not one of them. */
function routerError(code: string | undefined): AppError | null {
  switch (code) {
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new AppError(414, "invalid_request", "A path segment is too long.");
    case "FST_ERR_BAD_URL":
      return errors.invalidRequest("The request path is not a valid URL.");
    default:
      return null;
  }
}

/**
 * Fastify's `frameworkErrors` hook: renders the router's errors through the one error handler.
 * Errors it does not know (an async constraint failing) leave as a 500 `api_error`.
 */
export function frameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  errorHandler(routerError(err.code) ?? err, request, reply);
}

/** The D1 error for a Node `clientError` code (`HPE_*` parser codes, request timeout). */
function connectionError(code: string | undefined): AppError {
  if (code === "HPE_HEADER_OVERFLOW") return new AppError(431, "invalid_request", "The request headers are too large.");
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return new AppError(408, "invalid_request", "The request took too long to arrive.");
  return errors.invalidRequest("The request is not valid HTTP.");
}

/**
 * Fastify's `clientErrorHandler` (Node's `clientError` event): answers a request the HTTP parser
 * rejected with the D1 body, then closes the connection (the stream cannot be trusted after a parse
 * error), as Node's and Fastify's default handlers do. A connection already reset or destroyed gets
 * nothing.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) {
    const appErr = connectionError(err.code);
    const body = JSON.stringify(appErr.toBody());
    socket.write(
      `HTTP/1.1 ${appErr.status} ${STATUS_CODES[appErr.status]}\r\n` +
        "Content-Type: application/json; charset=utf-8\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        "Connection: close\r\n\r\n" +
        body,
    );
  }
  socket.destroy(err);
}
