/**
 * Errors raised before a route runs, in the D1 body like every other error (D1, D16; issue 10 point 2):
 * - {@link frameworkError}: the router's own failures (Fastify's `frameworkErrors` option): a path
 *   parameter over the router's length limit (414), a path that does not decode (400);
 * - {@link clientErrorHandler}: requests Node's HTTP parser rejects before Fastify sees them (Fastify's
 *   `clientErrorHandler` option): a request head over the size limit (431), a request that took too
 *   long to arrive (408), a malformed request line, header, chunk size or length (400);
 * - {@link expectationFailed}: an `Expect` other than `100-continue` (417; Node's `checkExpectation`);
 * - {@link refuseWhileClosing}: a request arriving on an open connection while the gateway shuts down
 *   (503 `service_unavailable`, replacing Fastify's `return503OnClosing` body).
 *
 * Whenever the gateway closes the connection after one of these answers, the answer says
 * `Connection: close`. Messages are short and fixed: they never repeat the path or a header, which may
 * hold a secret.
 *
 * Why 431 and not 414 for a request line (a query string) over the limit: Node's parser has one limit,
 * `maxHeaderSize` (16 KiB), for the whole request head — the request line and the header fields
 * counted together — and reports one error (`HPE_HEADER_OVERFLOW`) without saying which part ran it
 * out. Once the head arrives in several reads, the gateway cannot tell a long query from a long
 * header, and one request must not get a different status depending on how TCP cut it. The limit
 * exceeded is the head's size, which is what 431 names (RFC 6585 section 5); the message says
 * "request line and headers". 414 stays the answer to the gateway's own URI limit: a path parameter
 * over the router's `maxParamLength`.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, errors } from "../errors.ts";
import type { App } from "./types.ts";
import { elevenLabsErrorHandler } from "./dialects/elevenlabs/errors.ts";
import { falErrorHandler } from "./dialects/fal/routes.ts";
import { sendProblem } from "./dialects/replicate/errors.ts";
import { errorHandler } from "./error-handler.ts";

/**
 * The error handlers of the dialects that answer errors in their vendor's shape, by path prefix: a router
 * failure under that prefix answers in the dialect's shape (D36, D38, D47), like the dialect's own errors.
 */
const DIALECT_ERROR_HANDLERS: readonly { prefix: string; handler: typeof errorHandler }[] = [
  { prefix: "/elevenlabs/", handler: elevenLabsErrorHandler },
  { prefix: "/fal/", handler: falErrorHandler },
  { prefix: "/replicate/", handler: sendProblem },
];

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
 * Errors it does not know (an async constraint failing) leave as a 500 `api_error`. The request was
 * read whole, so the connection stays open. Under a dialect's prefix the dialect's handler renders them.
 */
export function frameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const dialect = DIALECT_ERROR_HANDLERS.find((d) => request.url.startsWith(d.prefix));
  (dialect?.handler ?? errorHandler)(routerError(err.code) ?? err, request, reply);
}

/** The D1 error for a Node `clientError` code (`HPE_*` parser codes, request timeout). */
function connectionError(code: string | undefined): AppError {
  if (code === "HPE_HEADER_OVERFLOW") {
    return new AppError(431, "invalid_request", "The request line and headers are too large.");
  }
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return new AppError(408, "invalid_request", "The request took too long to arrive.");
  return errors.invalidRequest("The request is not valid HTTP.");
}

/** The bytes of a whole HTTP/1.1 answer carrying `err`'s D1 body, closing the connection. */
function rawAnswer(err: AppError): string {
  const body = JSON.stringify(err.toBody());
  return (
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\n` +
    "Content-Type: application/json; charset=utf-8\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    "Connection: close\r\n\r\n" +
    body
  );
}

/**
 * Fastify's `clientErrorHandler` (Node's `clientError` event): answers a request the HTTP parser
 * rejected with the D1 body, then closes the connection (the stream cannot be trusted after a parse
 * error), as Node's and Fastify's default handlers do. A connection already reset or destroyed gets
 * nothing; nor does one whose previous answer has started to leave (pipelining): bytes written now
 * would land inside that answer, so the connection is only closed, as Node does.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) socket.write(rawAnswer(connectionError(err.code)));
  socket.destroy(err);
}

/**
 * Node's `checkExpectation` event: a request whose `Expect` is not `100-continue` (Node answers that one
 * itself). 417 with the D1 body instead of Node's empty one; the connection is closed because the client
 * may or may not send the body it announced.
 */
export function expectationFailed(_req: IncomingMessage, res: ServerResponse): void {
  const err = new AppError(417, "invalid_request", "The Expect header is not supported; only 100-continue is.");
  const body = JSON.stringify(err.toBody());
  res.writeHead(err.status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    Connection: "close",
  });
  res.end(body);
}

/**
 * Replaces Fastify's `return503OnClosing` (its body is not D1): from the start of `app.close()`, every
 * request (first hook of the root scope, before authentication, rate limits or any charge) answers
 * 503 `service_unavailable` with `Connection: close`. Logged at info, not as a failure.
 */
export function refuseWhileClosing(app: App): void {
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  // A callback hook (no promise per request): it answers by sending and not calling `done`.
  app.addHook("onRequest", (request, reply, done) => {
    if (!closing) return done();
    request.log.info("request refused: the gateway is shutting down");
    const err = errors.serviceUnavailable();
    void reply
      .code(err.status)
      .headers(err.headers)
      .header("content-type", "application/json; charset=utf-8")
      .send(err.toBody());
  });
}
