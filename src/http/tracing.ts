/**
 * The SERVER span of every request (D40), registered by app.ts only when tracing is on: started when the
 * request arrives (continuing an incoming `traceparent`), entered before the handler runs (so the paid-call
 * flow and the upstream calls find it), ended with the route, the status and the caller's ids when the
 * answer is sent. Off, no hook is registered: a request pays nothing.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import { runInScope, serverSpanName, type TraceScope, type Tracing } from "../observability/tracing.ts";
import type { App } from "./types.ts";

const scopes = new WeakMap<FastifyRequest, TraceScope>();

/** One header's value (the first, when repeated). */
function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Registers the request span hooks of `tracing` on `app` (before any route). */
export function traceRequests(app: App, tracing: Tracing): void {
  app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    scopes.set(
      request,
      tracing.startRequest({ method: request.method, traceparent: header(request.headers.traceparent), tracestate: header(request.headers.tracestate) }),
    );
    done();
  });
  // After the body was read (its stream events run outside any async context) and the caller authenticated:
  // the handler, and everything it starts, runs inside the request's scope. Callback style, so that `done`
  // (which runs the next hook, then the handler) is called synchronously inside the scope.
  app.addHook("preHandler", (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const scope = scopes.get(request);
    if (scope === undefined) done();
    else runInScope(scope, done);
  });
  app.addHook("onResponse", (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    endRequestSpan(request, reply.statusCode, {}, reply.statusCode >= 500);
    done();
  });
}

/**
 * Ends the SERVER span of `request` once (nothing when tracing is off or it already ended): renamed after
 * its route, with the status, the caller's ids and `extra` attributes; `failed` marks it failed.
 */
function endRequestSpan(request: FastifyRequest, status: number, extra: Record<string, number>, failed: boolean): void {
  const scope = scopes.get(request);
  if (scope === undefined) return;
  scopes.delete(request);
  const route = request.routeOptions.url;
  const principal = request.principal;
  scope.span.rename(serverSpanName(request.method, route));
  scope.span.set({
    "http.route": route,
    "http.response.status_code": status,
    "gw.request.id": request.id,
    "gw.account.id": principal?.accountId,
    "gw.key.id": principal?.keyId ?? undefined,
    "gw.test_mode": principal ? principal.mode === "test" : undefined,
    ...extra,
  });
  if (failed) scope.span.fail(String(status === 101 ? extra["gw.realtime.close_code"] : status));
  scope.span.end();
}

/**
 * Ends the SERVER span of a request upgraded to a WebSocket (D40, D42, D43): `onResponse` never runs for a
 * socket, so its span ends when the socket closes, as `101` with the socket's close code
 * (`gw.realtime.close_code`); an upstream failure (1011) marks it failed. Nothing when tracing is off or the
 * span already ended.
 */
export function endSocketSpan(request: FastifyRequest, closeCode: number): void {
  endRequestSpan(request, 101, { "gw.realtime.close_code": closeCode }, closeCode === 1011);
}
