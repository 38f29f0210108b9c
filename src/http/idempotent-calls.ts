/**
 * The `Idempotency-Key` header on the synchronous paid calls (D37), Stripe's way, once for every route: a
 * request that places a hold and answers directly (every {@link MODEL_CALL} route that does not declare
 * {@link OWN_IDEMPOTENCY}: speech, music, sound effects, voice design and cloning, chat, messages,
 * transcription, understanding, in every dialect) sent with the header runs once per `(API key, key)`
 * (a session's call: per user); a retry of the same request replays the first answer byte for byte with
 * `Idempotent-Replayed: true` and no new hold, charge or usage record. The state is the database's
 * (billing/idempotent-calls.ts), so every gateway process agrees.
 *
 * {@link idempotentCallRoutes} registers one `onRoute` hook on the app, before the routes: it gives each
 * such route a `preHandler` (the gate) and documents the header, the `409`s and `Idempotent-Replayed` in
 * the route's schema. The gate hashes the request (method, URL and the JSON body, or for a multipart form
 * its parts, read ahead: multipart.ts `readAheadParts`) and asks `IdempotentCalls.begin`:
 * - a replay is answered from the stored status, headers and body (blob store);
 * - 409 `idempotency_in_progress` (`Retry-After: 1`) while the first request runs, 409
 *   `idempotency_conflict` (D2) for another request under the key; both in the route's own dialect (its
 *   error handler renders them);
 * - a first request runs with its answer recorded as it is written to the socket (status, the kept headers,
 *   the body teed chunk by chunk into the blob store, streams and hijacked server-sent events included: never
 *   buffered before sending). Its last write waits for the store, so that a retry sent after the answer
 *   arrived finds it; a 4xx or 5xx (or a connection that closed first) releases the key instead.
 *
 * Job creates (images, videos, the fal proxy) keep their own idempotency (D5, http/idempotency.ts: the body's
 * `idempotency_key` or the header, per job); the MCP server (one `POST /mcp` for every tool call) is left out.
 */
import { createHash } from "node:crypto";
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { type CallClaim, IdempotentCalls } from "../billing/idempotent-calls.ts";
import type { Services } from "../services.ts";
import { principalOf } from "./auth.ts";
import { idempotencyHeaderOf } from "./idempotency.ts";
import { readAheadParts } from "./multipart.ts";
import { str } from "./schemas/common.ts";
import type { App } from "./types.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * The route honours `Idempotency-Key` itself (a job create: the key names the job, D5/D37), so the
     * synchronous-call gate of http/idempotent-calls.ts leaves it alone. See {@link OWN_IDEMPOTENCY}.
     */
    ownIdempotency?: boolean;
  }
}

/** Route `config` (with `MODEL_CALL`) of a model call whose `Idempotency-Key` is its own (job creates). */
export const OWN_IDEMPOTENCY = { ownIdempotency: true } as const;

/** The answer header that marks a replayed answer. */
export const REPLAYED_HEADER = "idempotent-replayed";

/** The headers of an answer kept for its replays besides every `x-svc-*` (lower case). */
const KEPT_HEADERS = new Set(["content-type", "content-encoding", "content-language", "cache-control", "request-id", "character-cost", "history-item-id"]);

/** Whether an answer header is kept for replays (never the rate-limit windows: those are the retry's own). */
function kept(name: string): boolean {
  return KEPT_HEADERS.has(name) || name.startsWith("x-svc-");
}

/** `headers` (as Node takes them) reduced to the kept ones, values as strings. */
function keptHeaders(...sources: (OutgoingHttpHeaders | readonly unknown[] | undefined)[]): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (name: unknown, value: unknown) => {
    if (typeof name !== "string" || value === undefined || value === null) return;
    const lower = name.toLowerCase();
    if (kept(lower)) out[lower] = Array.isArray(value) ? value.map(String).join(", ") : String(value as string | number);
  };
  for (const h of sources) {
    if (h === undefined || h === null) continue;
    if (Array.isArray(h)) {
      // Node's flat `[name, value, name, value, ...]` form (or `[[name, value], ...]`).
      for (let i = 0; i < h.length; i++) {
        const item: unknown = h[i];
        if (Array.isArray(item)) put(item[0], item[1]);
        else put(item, h[++i]);
      }
    } else for (const [name, value] of Object.entries(h)) put(name, value);
  }
  return out;
}

/** The bytes of a `write`/`end` chunk. */
function bytesOf(chunk: unknown, encoding: unknown): Uint8Array | null {
  if (chunk === undefined || chunk === null || typeof chunk === "function") return null;
  if (typeof chunk === "string") return Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  if (chunk instanceof Uint8Array) return chunk;
  return null;
}

/**
 * Records the answer written to `res` for `claim`: the status and kept headers at `writeHead`, every body
 * chunk as it is written (passed on unchanged), and on `end` the stored answer before the end reaches the
 * client (the end waits for the store). A response that closes before its end keeps the key until the call
 * ended (`CallClaim.abandoned`, at most `maxCallMs`, ms).
 */
function recordAnswer(res: ServerResponse, claim: CallClaim, maxCallMs: number): void {
  let status = 0;
  let headers: Record<string, string> | null = null;
  let ending = false;
  // Only a 2xx answer is kept: another one's body is not stored at all.
  let keep = false;
  const head = (code: number, given?: OutgoingHttpHeaders | readonly unknown[]) => {
    if (headers !== null) return;
    status = code;
    headers = keptHeaders(res.getHeaders(), given);
    keep = code >= 200 && code <= 299;
    if (keep) claim.startBody(headers["content-type"] ?? "application/octet-stream");
  };
  const tee = (chunk: unknown, encoding: unknown) => {
    const bytes = keep ? bytesOf(chunk, encoding) : null;
    if (bytes !== null && bytes.byteLength > 0) claim.push(bytes);
  };

  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const given = typeof args[1] === "string" ? args[2] : args[1];
    head(args[0] as number, given as OutgoingHttpHeaders | undefined);
    return Reflect.apply(writeHead, this, args) as ServerResponse;
  } as ServerResponse["writeHead"];

  const write = res.write;
  res.write = function (this: ServerResponse, ...args: unknown[]) {
    // A write before any writeHead sends the implicit head (status and headers set so far).
    head(res.statusCode);
    tee(args[0], args[1]);
    return Reflect.apply(write, this, args) as boolean;
  } as ServerResponse["write"];

  const end = res.end;
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    if (ending) return Reflect.apply(end, this, args) as ServerResponse;
    ending = true;
    head(res.statusCode);
    tee(args[0], args[1]);
    // The end (and with it the client's last bytes) goes out once the answer is stored or released.
    void claim.complete(status, headers ?? {}).finally(() => Reflect.apply(end, res, args));
    return this;
  } as ServerResponse["end"];

  // A client that hangs up first (an SDK's timeout) retries: the call keeps its key until it ends.
  res.once("close", () => {
    if (!ending) claim.abandoned(maxCallMs);
  });
}

/** JSON with object keys sorted at every level: the same body whatever order its fields were sent in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "";
}

/** Whether `req` carries a multipart form in a scope that reads them. */
function isMultipart(req: FastifyRequest): boolean {
  return typeof req.isMultipart === "function" && req.isMultipart();
}

/**
 * Hex SHA-256 of what makes two requests the same: method, URL (path and query) and the body: the JSON
 * body with its keys sorted, or a multipart form's parts in order (name, file name, media type and content;
 * the boundary, which every retry draws anew, is not part of it).
 * @throws as multipart.ts `readAheadParts` for a form that cannot be read.
 */
async function requestHashOf(req: FastifyRequest): Promise<string> {
  const h = createHash("sha256");
  h.update(`${req.method} ${req.url}\n`);
  if (isMultipart(req)) {
    for (const p of await readAheadParts(req)) {
      const content = p.bytes !== null ? createHash("sha256").update(p.bytes).digest("hex") : canonicalJson(p.value);
      h.update(`${JSON.stringify([p.type, p.fieldname, p.filename, p.mimetype, content])}\n`);
    }
  } else {
    h.update(canonicalJson(req.body));
  }
  return h.digest("hex");
}

/**
 * The gate of one route (its last `preHandler`): nothing without the header; else a replay, a 409, or the
 * request runs with its answer recorded (see the module comment).
 * @throws AppError 400 `invalid_request` for a bad header; 409 `idempotency_in_progress` or
 *   `idempotency_conflict`; a multipart body's read errors.
 */
function gateOf(calls: IdempotentCalls, maxCallMs: number) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const key = idempotencyHeaderOf(req);
    if (key === null) return undefined;
    const p = principalOf(req);
    const start = await calls.begin({
      scope: p.keyId ?? `account:${p.accountId}`,
      key,
      accountId: p.accountId,
      requestHash: await requestHashOf(req),
      requestId: req.id,
    });
    if (start.kind === "run") {
      recordAnswer(reply.raw, start.claim, maxCallMs);
      return undefined;
    }
    const a = start.answer;
    reply.code(a.status).headers(a.headers).header("content-length", String(a.size)).header(REPLAYED_HEADER, "true");
    return reply.send(a.body);
  };
}

/** The documented header (validated too: 1 to 128 characters). */
const IDEMPOTENT_CALL_HEADER = str(
  "Makes a retry safe: the first request with a key runs; a repeat of the same request (method, path, body) replays its stored answer for 24 h with `Idempotent-Replayed: true`, without a new hold, charge or usage record. While the first still runs: 409 `idempotency_in_progress` (`Retry-After: 1`); another request under the key: 409 `idempotency_conflict`. A failed first call frees the key. Scoped to the API key. 1 to 128 characters.",
  { minLength: 1, maxLength: 128, examples: ["retry-7f3a"], "x-error-message": "The Idempotency-Key header must be a string of 1 to 128 characters." },
);
const REPLAYED_DOC = str("`true` on an answer replayed for an `Idempotency-Key`: the stored answer of the first request, nothing charged again.");
const RETRY_AFTER_DOC = str("`1` on `idempotency_in_progress`: seconds to wait before retrying.");
const SHOULD_RETRY_DOC = str("`true` on `idempotency_in_progress`, `false` on `idempotency_conflict` (read by the `openai` SDK's retries).");
const CONFLICTS = "`idempotency_in_progress` (the first request with this `Idempotency-Key` still runs; `Retry-After: 1`), `idempotency_conflict` (the key was used with another request)";

interface ResponseDoc {
  description?: string;
  headers?: Record<string, unknown>;
  content?: unknown;
}

/**
 * `schema` with the header, `Idempotent-Replayed` on its 2xx answers and the 409s (in the shape of the route's
 * other client errors, so each dialect documents its own error body).
 */
function documented(schema: Record<string, unknown>): Record<string, unknown> {
  const headers = (schema.headers ?? { type: "object", properties: {} }) as { properties?: Record<string, unknown> };
  const response = { ...((schema.response ?? {}) as Record<string, ResponseDoc>) };
  for (const [status, doc] of Object.entries(response)) {
    if (/^2\d\d$/.test(status)) response[status] = { ...doc, headers: { ...(doc.headers ?? {}), "Idempotent-Replayed": REPLAYED_DOC } };
  }
  const own = response["409"];
  const like = response["400"] ?? response["402"] ?? Object.entries(response).find(([s]) => s.startsWith("4"))?.[1];
  if (own !== undefined) {
    response["409"] = { ...own, description: `${own.description ?? "Conflict"}; ${CONFLICTS}.` };
  } else if (like !== undefined) {
    response["409"] = { ...like, description: `Conflict: ${CONFLICTS}.` };
  }
  const conflict = response["409"];
  if (conflict !== undefined) {
    response["409"] = { ...conflict, headers: { ...(conflict.headers ?? {}), "Retry-After": RETRY_AFTER_DOC, "x-should-retry": SHOULD_RETRY_DOC } };
  }
  return { ...schema, headers: { ...headers, properties: { ...(headers.properties ?? {}), "idempotency-key": IDEMPOTENT_CALL_HEADER } }, response };
}

/**
 * Registers the gate on every synchronous model call of `app` (see the module comment). Call it on the root
 * app before any route scope is registered: the `onRoute` hook reaches the routes of scopes registered after it.
 */
export function idempotentCallRoutes(app: App, services: Services): void {
  const calls = new IdempotentCalls(services.db.kysely, services.blobs);
  // No synchronous call outlives the sweep's bound on its hold (services.ts): nor does a claim whose client left.
  const gate = gateOf(calls, services.sweep.sweepSyncHoldsAfterS * 1000);
  app.addHook("onRoute", (route: RouteOptions) => {
    const config = route.config as { modelCall?: boolean; ownIdempotency?: boolean } | undefined;
    if (config?.modelCall !== true || config.ownIdempotency === true) return;
    const before = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [...before, gate] as RouteOptions["preHandler"];
    if (route.schema !== undefined) route.schema = documented(route.schema as Record<string, unknown>);
  });
}
