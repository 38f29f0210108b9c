/**
 * Building blocks of the route schemas (issue 9: the route schemas are the single source of request
 * validation and of the OpenAPI document). Each route declares one {@link OperationDoc}; {@link route}
 * turns it into the Fastify route schema that Ajv validates requests with and @fastify/swagger documents.
 * The schema is the type: `route()` keeps the TypeBox types of the body, query string, path parameters
 * and headers, so a handler's `req.body`, `req.query`, `req.params` and `req.headers` are their `Static`
 * types (the TypeBox type provider of `../types.ts`) and no route casts its request. The request bodies a
 * service reads are declared in `src/contracts/` (with their `Static` types, the services' input types).
 *
 * Schema failures become D1 errors in one place (`error-handler.ts`): a field's schema may carry
 * `x-error-code` (the spec's per-endpoint code, for example `not_a_tts_model`) and `x-error-message`
 * (`{value}` is replaced by the offending value); without them the answer is 400 `invalid_request` naming
 * the field.
 */
import type { FastifySchema } from "fastify";
import { formatUsd } from "../../money.ts";
import { getModel } from "../../catalog/models.ts";
import { HTTPS_URL, IDEMPOTENCY, modelsWith, PARAMETERS } from "../../contracts/common.ts";
import { arr, binary, bool, coded, int, isoTime, nullable, num, obj, type ObjProperties, oneOf, queryInt, ref, type Schema, type SchemaOptions, str, typed, usd } from "../../contracts/schema.ts";
import { AUDIO_FORMATS } from "../../upstreams/types.ts";

export { AUDIO_FORMATS, HTTPS_URL, IDEMPOTENCY, modelsWith, PARAMETERS };


/** One documented response: a description, optional headers and the body by media type. */
export interface ResponseDoc {
  description: string;
  headers?: Record<string, Schema>;
  content?: Record<string, { schema: Schema }>;
}

/** Who may call an operation; mapped to OpenAPI `security` requirements. */
export type Access = "public" | "key" | "keyOrSession" | "keyOrXApiKey" | "admin";

/** Tags in display order, with their descriptions. */
export const TAGS = {
  auth: "Accounts, sessions and API keys.",
  organizations: "Organizations: a shared balance with members in roles (`owner`, `admin`, `member`, `viewer`), invites, and keys that belong to the organization. A session token acts for the organization named by `X-Svc-Org` (default: the user's personal one).",
  billing: "The balance ledger, and balance top-ups through Stripe Checkout.",
  catalog: "Public pricing and rate-limit tiers.",
  audio: "Synchronous speech, music, sound effects, transcription and audio understanding.",
  voices: "Voice library, voice design and voice cloning.",
  "media jobs": "Asynchronous image and video generation.",
  webhooks: "Signed event deliveries (Standard Webhooks): endpoints, secrets and the delivery log.",
  outputs: "Stored outputs: gallery, share pages and files.",
  text: "Chat in the OpenAI and Anthropic formats.",
  models: "The live model list.",
  elevenlabs: "The ElevenLabs dialect: `new ElevenLabsClient({ baseUrl: \"<gateway>/elevenlabs\", apiKey: \"<API key>\" })` works unchanged; the key goes in `xi-api-key`, errors come in ElevenLabs' shape.",
  openai: "The OpenAI dialect: `new OpenAI({ baseURL: \"<gateway>/v1\", apiKey: \"<API key>\" })` drives video jobs through `client.videos.*` (OpenAI's Videos API at `/v1/videos`); with `baseURL: \"<gateway>/openai/v1\"` chat, speech, transcription, models and videos answer there too, and `client.images.generate` / `client.images.edit` answer synchronously. Send `Idempotency-Key` to retry a create safely.",
  fal: "The fal dialect: `createFalClient({ credentials: \"<API key>\", proxyUrl: { url: \"<gateway>/fal/proxy\", when: \"always\" } })` of `@fal-ai/client` generates through the gateway with fal's endpoint ids and inputs; answers and errors come in fal's queue shapes, request ids are job ids.",
  replicate: "The Replicate dialect: `new Replicate({ auth: \"<API key>\", baseUrl: \"<gateway>/replicate/v1\" })` of the `replicate` client runs every catalog model as `gateway/<catalog id>` (and the providers' Replicate names the catalog serves): `run`, predictions, models with their input schemas, files and webhooks, in Replicate's shapes; prediction ids are job ids.",
  agents: "For AI agents: the MCP server at `POST /mcp` (Streamable HTTP, stateless; the gateway's tools, billed as the native calls) and the guide `GET /llms.txt`.",
  operations: "Health, readiness, metrics and this document.",
  operator: "The operator API (`Authorization: Bearer $GATEWAY_ADMIN_TOKEN`): accounts, deposits, tiers, limits, upstream health and revenue. Without `GATEWAY_ADMIN_TOKEN` these routes answer 404.",
} as const;
/** An operation's tag. */
export type Tag = keyof typeof TAGS;

/** OpenAPI `security` requirements by access. */
export const SECURITY: Record<Access, { [scheme: string]: string[] }[]> = {
  public: [],
  key: [{ apiKey: [] }],
  keyOrSession: [{ apiKey: [] }, { sessionToken: [] }],
  keyOrXApiKey: [{ apiKey: [] }, { xApiKey: [] }],
  admin: [{ adminToken: [] }],
};

/** A request body by media type. */
export type BodyDoc = Record<string, { schema: Schema }>;

/**
 * The documentation and validation of one operation; the type parameters are the TypeBox types of its
 * request body (by media type), query string, path parameters and headers (`undefined`: none).
 */
export interface OperationDoc<
  B extends BodyDoc | undefined = BodyDoc | undefined,
  Q extends Schema | undefined = Schema | undefined,
  P extends Schema | undefined = Schema | undefined,
  H extends Schema | undefined = Schema | undefined,
> {
  operationId: string;
  summary: string;
  description?: string;
  tags: [Tag];
  access: Access;
  /** Request body by media type; an `application/json` body is validated, a multipart form is read by the route. */
  body?: B;
  query?: Q;
  params?: P;
  headers?: H;
  responses: Record<string, ResponseDoc>;
  /** Hidden from the document. */
  hide?: boolean;
}

/** `{ [key]: T }`, or no property when `T` is undefined (the operation declares no such part). */
type Part<K extends string, T> = [T] extends [undefined] ? Record<never, never> : { [k in K]: Exclude<T, undefined> };
/**
 * The validated body of a body map: the schema of a lone `application/json` body; several media types
 * stay a `content` map, which the TypeBox type provider types as `unknown` (the route reads the form).
 */
type BodySchema<B> = [B] extends [undefined]
  ? undefined
  : B extends { "application/json": { schema: infer S } }
    ? [Exclude<keyof B, "application/json">] extends [never]
      ? S
      : { content: B }
    : { content: B };

/**
 * The Fastify route schema of an operation: `body`, `querystring`, `params` and `headers` keep their
 * TypeBox types, so a handler registered with it receives their `Static<>` types; the responses stay
 * untyped (they document the answers and never serialize them, `app.ts`).
 */
export type RouteSchema<B extends BodyDoc | undefined, Q extends Schema | undefined, P extends Schema | undefined, H extends Schema | undefined> = Omit<
  FastifySchema,
  "body" | "querystring" | "params" | "headers"
> &
  Part<"body", BodySchema<B>> &
  Part<"querystring", Q> &
  Part<"params", P> &
  Part<"headers", H>;

/**
 * The Fastify route schema of an operation. A body with only `application/json` becomes the validated
 * `body`; several media types stay a `content` map (Fastify validates each media type it names).
 */
export function route<
  B extends BodyDoc | undefined = undefined,
  Q extends Schema | undefined = undefined,
  P extends Schema | undefined = undefined,
  H extends Schema | undefined = undefined,
>(doc: OperationDoc<B, Q, P, H>): RouteSchema<B, Q, P, H> {
  const media = doc.body ? Object.keys(doc.body) : [];
  const body = doc.body === undefined ? undefined : media.length === 1 && media[0] === "application/json" ? doc.body["application/json"].schema : { content: doc.body };
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: doc.tags,
    security: SECURITY[doc.access],
    ...(doc.hide ? { hide: true } : {}),
    ...(body ? { body } : {}),
    ...(doc.query ? { querystring: doc.query } : {}),
    ...(doc.params ? { params: doc.params } : {}),
    ...(doc.headers ? { headers: doc.headers } : {}),
    // Operator answers carry no request id or test-mode mark: the operator token is not a paid caller.
    response:
      doc.access === "public" || doc.access === "admin"
        ? { ...frameworkResponses(doc), ...doc.responses }
        : withCallHeaders(withOrgErrors({ ...frameworkResponses(doc), ...doc.responses })),
  } as unknown as RouteSchema<B, Q, P, H>;
}

/**
 * The headers of every answer to an authenticated operation, errors included (built on use: `str` is
 * declared further down): the request id (D29) and
 * the test-mode mark (D32).
 */
function callHeaders(): Record<string, Schema> {
  return {
    "X-Svc-Request-Id": str("`req_<random>`: this call's id, the id of its usage record (`GET /v1/requests/{id}`).", { examples: ["req_3fK9qLm2Xv8TzR1wY6pN0a"] }),
    "X-Svc-Test-Mode": str("`true` when the call was made with a test-mode key (`gw_test_...`): priced, but no money moved."),
  };
}

/** What every authenticated operation may answer for organizations and roles (D41), by status. */
const ORG_ERRORS: Record<number, string> = {
  403: "`forbidden_role` (the caller's role in the organization does not allow this)",
  404: "`org_not_found` (`X-Svc-Org` names an organization the caller is not a member of)",
};

/** `responses` with the D41 errors added: a status the operation documents gets their codes appended. */
function withOrgErrors(responses: Record<string, ResponseDoc>): Record<string, ResponseDoc> {
  const out = { ...responses };
  for (const [status, codes] of Object.entries(ORG_ERRORS)) {
    const own = out[status];
    out[status] = own ? { ...own, description: `${own.description.replace(/\.$/, "")}; ${codes}.` } : error(Number(status), codes);
  }
  return out;
}

/** `responses` with {@link callHeaders} added to each. */
function withCallHeaders(responses: Record<string, ResponseDoc>): Record<string, ResponseDoc> {
  const common = callHeaders();
  return Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, { ...r, headers: { ...common, ...(r.headers ?? {}) } }]));
}

/**
 * The errors any operation can answer, in the D1 body: 500 for an internal failure, 503 while the gateway
 * shuts down or cannot reach its limit store, 413 for a body over the limit, 400 and 414 for a path
 * parameter that does not decode or is too long. An operation's own table wins for a status it lists.
 */
function frameworkResponses(doc: OperationDoc): Record<string, ResponseDoc> {
  const table: Record<number, string> = {
    500: "`api_error` (an internal failure; nothing is charged)",
    503:
      doc.access === "public" || doc.access === "admin"
        ? "`service_unavailable` (the gateway is shutting down)"
        : "`limits_unavailable` (the rate-limit store is unreachable) or `service_unavailable` (the gateway is shutting down)",
  };
  if (doc.params) {
    table[400] = "`invalid_request` (a path parameter that does not decode)";
    table[414] = "`invalid_request` (a path segment too long)";
  }
  if (doc.body) table[413] = "`invalid_request` (body over the limit)";
  return errors(table);
}

// ------------------------------------------------------------------------------------- schema helpers
// In src/contracts/schema.ts (below the services, which read the request bodies they describe); the
// route schemas import them from here.
export { arr, binary, bool, coded, int, isoTime, nullable, num, obj, type ObjProperties, oneOf, queryInt, ref, type Schema, type SchemaOptions, str, typed, usd };

export const json = <S extends Schema>(schema: S): { "application/json": { schema: S } } => ({ "application/json": { schema } });
export const ok = (description: string, schema: Schema, headers?: Record<string, Schema>): ResponseDoc => ({
  description,
  ...(headers ? { headers } : {}),
  content: json(schema),
});
export const html = (description: string): ResponseDoc => ({ description, content: { "text/html": { schema: { type: "string" } } } });

/** The D1 error response for `status`, listing the `error.code` values the operation answers with. */
function error(status: number, codes: string): ResponseDoc {
  return { description: `${STATUS_TEXT[status] ?? "Error"}: ${codes}.`, content: json(ref("Error")) };
}
const STATUS_TEXT: Record<number, string> = {
  400: "Invalid request",
  401: "Missing or invalid key",
  402: "Balance too low",
  403: "Forbidden",
  404: "Not found",
  409: "Conflict",
  410: "Gone",
  413: "Body too large",
  415: "Unsupported media type",
  414: "Path too long",
  416: "Range not satisfiable",
  426: "Upgrade required",
  429: "Rate limited (see `Retry-After`)",
  500: "Internal failure",
  502: "Upstream provider failure",
  503: "Not ready",
};
/** Error responses by status, from a compact table `{status: "code, code"}`. */
export function errors(table: Record<number, string>): Record<string, ResponseDoc> {
  return Object.fromEntries(Object.entries(table).map(([status, codes]) => [status, error(Number(status), codes)]));
}
export const AUTH_ERR = { 401: "`auth_error`", 429: "`rate_limited`" };
/** The 410 of a paid route naming a model (D35): the model's shutdown date has come. */
export const MODEL_RETIRED = "`model_retired`: the model's shutdown date (`shutdown_date` in `GET /v1/models`) has come; nothing was charged";

// ------------------------------------------------------------------------------------ shared headers

export const H = {
  model: str("Resolved model id."),
  cost: str("Amount charged for this call, USD."),
  balance: str("Balance after the charge, USD."),
  duration: str("Duration used for billing, seconds."),
};
export const COST_HEADERS = { "X-Svc-Model": H.model, "X-Svc-Cost-USD": H.cost, "X-Svc-Balance-USD": H.balance };
export const FALLBACK_HEADERS = {
  "X-Svc-Fallback": str("`true` when a substitute served the request."),
  "X-Svc-Fallback-Layer": str("1 = same model from another source, 2, 3 = a different model of equivalent quality."),
};
/** `X-Svc-Simulate` (D10): asks the built-in simulator to fail, hang or be slow. */
export const SIMULATE = obj({
  // Listed as examples, not an enum: other values are ignored (D10), not refused.
  "x-svc-simulate": str(
    "Simulator control, ignored for models served by a real upstream: `fail` makes the upstream fail, `hang` stops a job's worker (the sweep refunds it), `slow` adds latency. Other values are ignored.",
    { examples: ["fail", "hang", "slow"] },
  ),
});

/** Audio bytes in the requested `response_format` (D20). */
export const AUDIO_CONTENT = {
  "audio/mpeg": { schema: binary("MP3 (`mp3_*` formats).") },
  "audio/pcm": { schema: binary("Raw 16-bit little-endian samples (`pcm_*` formats).") },
  "audio/basic": { schema: binary("Raw mu-law bytes (`ulaw_8000`).") },
};

// ------------------------------------------------------------------------------------ shared shapes

export const JOB_STATUSES = ["pending", "processing", "succeeded", "failed", "refunded", "expired"] as const;
export const LIST = (item: Schema, extra: Record<string, Schema> = {}): Schema =>
  obj({ object: oneOf(["list"], "Always `list`."), data: arr(item, "The items."), ...extra }, ["object", "data", ...Object.keys(extra)]);
export const PAGE_QUERY = obj({
  limit: queryInt("Page size, 1 to 100 (default 20).", "^0*(100|[1-9][0-9]?)$", "limit must be an integer from 1 to 100.", { examples: ["20"] }),
  after: str("Cursor: the `id` (ledger) or `job_id` (gallery) of the last item of the previous page."),
});


/**
 * The route-level validator compiler of the multipart routes: their forms are streamed and checked by the
 * route's own reader (size limits apply while reading), so the documented form schema validates nothing.
 */
export const formReadByRoute = (): ((data: unknown) => boolean) => () => true;

/**
 * The catalog price of model `id` as the document states it (`"0.027 USD"`, `"0.135 USD per second"`,
 * `"0.045 USD per song"`, `"0.0009 USD per minute"`): read from the model record, so a description never
 * restates a price by hand. Throws an Error at startup for an unknown id or a mode it does not phrase.
 */
export function priceText(id: string): string {
  const model = getModel(id);
  if (!model) throw new Error(`priceText: unknown model ${id}`);
  const p = model.pricing;
  switch (p.mode) {
    case "per-call":
      return `${formatUsd(p.microsPerCall)} USD`;
    case "per-song":
      return `${formatUsd(p.microsPerSong)} USD per song`;
    case "per-second":
      return `${formatUsd(p.microsPerSecond)} USD per second`;
    case "per-minute":
      return `${formatUsd(p.microsPerMinute)} USD per minute`;
    default:
      throw new Error(`priceText: ${id} is priced ${p.mode}`);
  }
}
