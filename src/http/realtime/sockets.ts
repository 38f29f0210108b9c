/**
 * What every realtime socket route shares (D42, D43): the WebSocket server (`@fastify/websocket`, on `ws`),
 * authentication before the upgrade (or in the first message), the registry of open sockets that a graceful
 * shutdown settles and closes with 1001, and the close of a socket with a short reason.
 *
 * An upgrade request goes through the app's routing and hooks like any request: a refusal before the
 * socket opens (auth, a bad query, the model, the voice, the balance, the limits) is a plain HTTP answer in
 * the route's error shape (D1, or D36's under `/elevenlabs`). A request without `Upgrade: websocket` gets
 * 426 `upgrade_required`.
 */
import type { IncomingMessage } from "node:http";
import websocket from "@fastify/websocket";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import type { Principal } from "../../accounts/auth-cache.ts";
import type { CallContext } from "../../billing/usage.ts";
import { AppError, errors } from "../../errors.ts";
import { type CallGuard, type DeferredWindows, guardFor } from "../../limits/limiter.ts";
import type { Services } from "../../services.ts";
import { bearerOf, callOf, guardOf, requireAuth } from "../auth.ts";
import { endSocketSpan } from "../tracing.ts";
import type { App } from "../types.ts";

/** Largest message a socket accepts, bytes (a transcription chunk of a few seconds of 48 kHz audio in base64). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** How long a socket authenticated by its first message may wait for that message, ms. */
export const FIRST_MESSAGE_TIMEOUT_MS = 20_000;

/** How long a shutdown lets the chunks in flight finish before stopping them, ms. */
export const SHUTDOWN_GRACE_MS = 5_000;

/** An open socket as the registry knows it: settled and closed (1001) by a shutdown. */
export interface OpenSocket {
  shutdown(graceMs: number): Promise<void>;
}

/** The open realtime sockets of one app (one per gateway): a shutdown settles each before the database closes. */
export class RealtimeSockets {
  readonly #open = new Set<OpenSocket>();

  add(s: OpenSocket): void {
    this.#open.add(s);
  }

  delete(s: OpenSocket): void {
    this.#open.delete(s);
  }

  /** Open sockets now. */
  get size(): number {
    return this.#open.size;
  }

  /** Settles every open socket (each closes with 1001 once its money is settled, D42). */
  async shutdown(graceMs: number): Promise<void> {
    await Promise.all([...this.#open].map((s) => s.shutdown(graceMs).catch(() => {})));
  }
}

/** The request id of each upgrade request (D29), for the `101 Switching Protocols` answer's `X-Svc-Request-Id`. */
const requestIds = new WeakMap<IncomingMessage, string>();

/**
 * Registers the WebSocket server on `app` (before any route, as `@fastify/websocket` requires) with a
 * shutdown that settles every socket of `sockets` first, then closes what is left with 1001. The `101`
 * answer of an accepted socket carries `X-Svc-Request-Id`, the id of its usage record (D29).
 */
export async function registerWebSockets(app: App, sockets: RealtimeSockets): Promise<void> {
  await app.register(websocket, {
    options: { maxPayload: MAX_MESSAGE_BYTES },
    // An error on an established socket (a client that vanished mid-frame): drop it; its close settles it.
    errorHandler: (_err, socket) => socket.terminate(),
    preClose: async function (this: App) {
      await sockets.shutdown(SHUTDOWN_GRACE_MS);
      const server = this.websocketServer;
      for (const client of server.clients) client.close(1001, "server shutting down");
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  app.websocketServer.on("headers", (headers: string[], req: IncomingMessage) => {
    const id = requestIds.get(req);
    if (id !== undefined) headers.push(`X-Svc-Request-Id: ${id}`);
  });
}

/** The key of an upgrade request: `xi-api-key`, `Authorization: Bearer`, `x-api-key`, or the query `authorization=Bearer <key>` (browsers). */
export function socketKeyOf(request: FastifyRequest): string | null {
  const xi = request.headers["xi-api-key"];
  if (typeof xi === "string" && xi.length > 0) return xi;
  const bearer = bearerOf(request);
  if (bearer !== null) return bearer;
  const q = (request.query as Record<string, unknown> | undefined)?.authorization;
  if (typeof q === "string" && q.length > 0) return /^Bearer\s+(\S+)\s*$/i.exec(q)?.[1] ?? q;
  return null;
}

/**
 * `onRequest` hook of a socket route: an upgrade request with a key is authenticated as any API call
 * (401 `auth_error`, 403, the request id header; its rpm windows are counted when the session opens, D42);
 * an upgrade request without one goes on to be authenticated by its first message (D42: `xi_api_key`); a
 * plain request without one is refused (401).
 */
export function socketAuth(services: Services) {
  const auth = requireAuth(services, { allowSession: false, secretOf: socketKeyOf });
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    requestIds.set(request.raw, request.id);
    if (socketKeyOf(request) === null && request.ws) {
      reply.header("x-svc-request-id", request.id);
      return;
    }
    await auth(request, reply);
  };
}

/** The windows of a socket authenticated by its first message: counted once, with the session's first model check. */
function firstMessageWindows(principal: Principal): DeferredWindows {
  let taken = false;
  return {
    take: () => {
      if (taken) return undefined;
      taken = true;
      const rpm = principal.key?.rpm ?? null;
      return { key: rpm !== null && principal.keyId !== null ? { id: principal.keyId, rpm } : null, headers: () => {} };
    },
    skip: () => {
      taken = true;
    },
  };
}

/** Who opens a session, and how its limits and money are counted. */
export interface SocketCaller {
  principal: Principal;
  guard: CallGuard;
  call: CallContext;
}

/** The caller of an upgrade request authenticated before the upgrade, or null (first-message auth). */
export function callerOfRequest(services: Services, request: FastifyRequest): SocketCaller | null {
  if (request.principal === null) return null;
  return { principal: request.principal, guard: guardOf(services, request), call: callOf(request) };
}

/**
 * The caller of a socket authenticated by its first message's key (D42: `xi_api_key`): as the auth hook
 * would resolve it (expiry, API keys only), its request windows counted with the session's model check.
 * Returns null for a key that is not valid (the socket then closes with 1008).
 */
export async function callerOfKey(services: Services, request: FastifyRequest, key: string): Promise<SocketCaller | null> {
  const principal = await services.auth.authenticate(services.db.kysely, key, { allowSession: false });
  if (principal === null) return null;
  const expiresAt = principal.key?.expiresAt ?? null;
  if (expiresAt !== null && expiresAt <= Date.now()) return null;
  const limit = principal.key?.spendLimitMicros ?? null;
  const keySpend = limit !== null && principal.keyId !== null && principal.key ? { keyId: principal.keyId, limitMicros: limit, period: principal.key.spendLimitPeriod } : null;
  return {
    principal,
    guard: guardFor(services.limiter, principal.accountId, principal.limits, principal.key?.models ?? null, firstMessageWindows(principal)),
    call: { requestId: request.id, keyId: principal.keyId, mode: principal.mode, keySpend, userId: principal.userId, budgets: principal.budgets },
  };
}

/** The 426 of a socket route asked without `Upgrade: websocket`. */
export function upgradeRequired(request: FastifyRequest): never {
  throw errors.upgradeRequired(request.url.split("?")[0] ?? "");
}

/** Closes `ws` with `code` and a reason cut to the 123 bytes a close frame allows; nothing when already closing. */
export function closeSocket(ws: WebSocket, code: number, reason: string): void {
  if (ws.readyState !== ws.OPEN && ws.readyState !== ws.CONNECTING) return;
  let r = reason;
  while (Buffer.byteLength(r) > 123) r = r.slice(0, -1);
  ws.close(code, r);
}

/** Sends `text` when `ws` is open (a client gone meanwhile misses it, as it would the audio). */
export function sendText(ws: WebSocket | null, text: string): void {
  if (ws !== null && ws.readyState === ws.OPEN) ws.send(text);
}

/** A socket kind's side of {@link serveSocket}: parsing, authentication, the session's calls. */
export interface SocketHandlers<M> {
  /** Whether the socket still has to be authenticated by its first message (no key at the upgrade). */
  needsKey: boolean;
  /** Parses a frame. @throws a refusal the socket answers (`refuse` is called with its code). */
  parse(data: Buffer, isBinary: boolean): M;
  /** The refusal code of a frame `parse` threw on (`invalid_request`, `input_error`, ...), or null to rethrow. */
  refusalOf(err: unknown): string | null;
  /** The key a message carries (`xi_api_key`), for the first message. */
  keyOf(m: M): string | null;
  /** First-message authentication with the message's key; false when refused (the socket then ends). */
  authenticate(key: string | null): Promise<boolean>;
  /** Handles a message once authenticated. */
  handle(m: M): Promise<void> | void;
  /** Ends the socket with an error message (`code`, `message`). */
  refuse(code: string, message: string): void;
  /** The code a message that could not be handled ends the socket with (`internal_error`, `error`). */
  crashCode: string;
  /** The client closed the socket (or it broke): settles; resolves once settled. */
  closed(code: number): Promise<void>;
}

/**
 * Serves an accepted socket: its messages handled one at a time in order (a frame that cannot be used
 * refused; the first one authenticating the socket when no key came with the upgrade, within
 * {@link FIRST_MESSAGE_TIMEOUT_MS}), and its close settled before the request's span ends (D40). Attached
 * synchronously, so no message is missed.
 */
export function serveSocket<M>(ws: WebSocket, request: FastifyRequest, h: SocketHandlers<M>): void {
  let needsKey = h.needsKey;
  let closed = false;
  const waiting = needsKey ? setTimeout(() => h.refuse("auth_error", "No key was sent: send xi-api-key (or Authorization) with the upgrade, or xi_api_key in the first message."), FIRST_MESSAGE_TIMEOUT_MS) : null;
  waiting?.unref();
  let chain: Promise<void> = Promise.resolve();
  ws.on("message", (data, isBinary) => {
    chain = chain
      .then(async () => {
        if (closed) return;
        let m: M;
        try {
          m = h.parse(data as Buffer, isBinary);
        } catch (err) {
          const code = h.refusalOf(err);
          if (code === null) throw err;
          return h.refuse(code, err instanceof Error ? err.message : String(err));
        }
        if (needsKey) {
          if (waiting !== null) clearTimeout(waiting);
          needsKey = false;
          if (!(await h.authenticate(h.keyOf(m)))) return;
          // The client left while the session opened: it is settled now (its close found none to settle).
          if (closed) return void (await h.closed(1006));
        }
        await h.handle(m);
      })
      .catch((err: unknown) => {
        request.log.error({ err }, "realtime socket message");
        h.refuse(h.crashCode, "The message could not be handled.");
      });
  });
  ws.on("close", (code) => {
    closed = true;
    if (waiting !== null) clearTimeout(waiting);
    // The request's span (D40) ends once the socket's money is settled (its capture is a child span).
    void h.closed(code).finally(() => endSocketSpan(request, code));
  });
}

/**
 * First-message authentication (D42, D43): the key's caller, then `open` with it. Returns false, after
 * `refuse` (`auth_error` for a bad or missing key; `codeOf` the opening's AppError otherwise), when refused.
 */
export async function authenticateByMessage(
  services: Services,
  request: FastifyRequest,
  key: string | null,
  open: (caller: SocketCaller) => Promise<void>,
  refuse: (code: string, message: string) => void,
  codeOf: (err: AppError) => string,
): Promise<boolean> {
  const caller = key === null ? null : await callerOfKey(services, request, key);
  if (caller === null) {
    refuse("auth_error", key === null ? "No key was sent: send xi-api-key with the upgrade or xi_api_key in the first message." : "Invalid API key.");
    return false;
  }
  try {
    await open(caller);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    refuse(codeOf(err), err.message);
    return false;
  }
  return true;
}
