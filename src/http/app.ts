/**
 * The Fastify application (docs/architecture.md "http/"): built separately from `listen()` so tests drive it on
 * loopback. Routes are grouped by who may call them: public, API key (or session) and operator.
 */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify from "fastify";
import FindMyWay from "find-my-way";
import { errors } from "../errors.ts";
import { newTimeOrderedId } from "../ids.ts";
import { httpDuration, httpRequests } from "../metrics.ts";
import type { Services } from "../services.ts";
import { requireAdmin, requireAuth, settleDeferredWindows } from "./auth.ts";
import { errorHandler, SCHEMA_ERROR_KEYWORDS } from "./error-handler.ts";
import { idempotentCallRoutes } from "./idempotent-calls.ts";
import { registerOpenApi } from "./openapi.ts";
import { traceRequests } from "./tracing.ts";
import { boundedJsonParser, type StringBodyParser } from "./json-body.ts";
import { clientErrorHandler, expectationFailed, frameworkError, refuseWhileClosing } from "./router-errors.ts";
import { adminRoutes } from "./routes/admin.ts";
import { adminAuditRoutes, orgAuditRoutes } from "./routes/audit.ts";
import { requestIdHeader } from "./audit-context.ts";
import { accountRoutes, authPublicRoutes } from "./routes/auth.ts";
import { alertRoutes } from "./routes/alerts.ts";
import { billingRoutes } from "./routes/billing.ts";
import { BodyBudget } from "./body-budget.ts";
import { catalogRoutes } from "./routes/catalog.ts";
import { checkoutRoutes } from "./routes/checkout.ts";
import { generationRoutes } from "./routes/generation.ts";
import { audioTextRoutes } from "./routes/audio-text.ts";
import { chatRoutes } from "./routes/chat.ts";
import { consoleRoutes } from "./routes/console.ts";
import { elevenLabsRoutes } from "./dialects/elevenlabs/routes.ts";
import { openAIRoutes } from "./dialects/openai/routes.ts";
import { falRoutes } from "./dialects/fal/routes.ts";
import { agentRoutes } from "./dialects/mcp/routes.ts";
import { REPLICATE_PREFIX, replicateRoutes } from "./dialects/replicate/routes.ts";
import { jobReadRoutes, jobRoutes } from "./routes/jobs.ts";
import { messagesRoutes } from "./routes/messages.ts";
import { modelRoutes } from "./routes/models.ts";
import { opsRoutes } from "./routes/ops.ts";
import { galleryRoutes, outputPublicRoutes } from "./routes/outputs.ts";
import { speechRoutes } from "./routes/speech.ts";
import { usageRoutes } from "./routes/usage.ts";
import { voiceCloneRoutes, voicePublicRoutes, voiceRoutes } from "./routes/voices.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { orgRoutes } from "./routes/orgs.ts";
import { adminBudgetRoutes, budgetRoutes } from "./routes/budgets.ts";
import { budgetHeaderHook } from "./cost-headers.ts";
import { RealtimeSockets, registerWebSockets } from "./realtime/sockets.ts";
import { elevenLabsRealtimeRoutes, realtimeRoutes } from "./realtime/routes.ts";
import type { App } from "./types.ts";

export type { App } from "./types.ts";

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"] as const;

/** Query parameters that may carry a secret (D42's `authorization` for browsers; the key names clients use). */
const SECRET_QUERY = /([?&](?:authorization|xi_api_key|xi-api-key|api_key|token|key)=)[^&#]*/gi;

/** A URL as request logs show it: a secret in its query replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, "$1[redacted]");
}

/** The request fields of a log line (Fastify's default ones), with {@link redactUrl} applied to the URL. */
function logRequest(req: { method: string; url: string; headers?: Record<string, unknown>; socket?: { remoteAddress?: string; remotePort?: number } | null; hostname?: string; ip?: string }) {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.hostname ?? (typeof req.headers?.host === "string" ? req.headers.host : undefined),
    remoteAddress: req.ip ?? req.socket?.remoteAddress,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * Builds the gateway app on `services`. `logger` false silences request logs (tests); `logStream`
 * receives them (JSON lines) instead of stdout.
 */
export async function buildApp(services: Services, opts: { logger?: boolean; logStream?: NodeJS.WritableStream } = {}): Promise<App> {
  // Request log lines never carry a secret from a query string (a browser's WebSocket sends its key as
  // `authorization=Bearer ...`, D42): such values are replaced before the line is written.
  // @fastify/websocket logs an upgrade to a route without a socket as `{path: <url>}`: redacted the same way.
  const serializers = { req: logRequest };
  const redact = { paths: ["path"], censor: (v: unknown) => (typeof v === "string" ? redactUrl(v) : v) };
  const app = Fastify({
    logger: opts.logStream
      ? { level: services.config.logLevel, stream: opts.logStream, serializers, redact }
      : opts.logger === false
        ? false
        : { level: services.config.logLevel, serializers, redact },
    bodyLimit: services.config.bodyLimitBytes,
    // The longest a whole request (head and body) may take to arrive: a body that trickles in cannot
    // hold its share of the body budget for longer (body-budget.ts). Node answers 408 through
    // `clientErrorHandler` and closes the connection. Not the time to answer: handlers are not bounded here.
    requestTimeout: services.config.requestTimeoutMs,
    // `request.ip` (brute-force limits) is the TCP peer unless the peer is a trusted proxy (TRUST_PROXY).
    trustProxy: services.config.trustProxy ?? false,
    // Bodies are validated as sent: no type coercion ("5" is not 5), unknown fields are ignored.
    // `verbose` keeps the failing schema on each error: the error handler reads its `x-error-code`.
    ajv: {
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
        keywords: [...SCHEMA_ERROR_KEYWORDS],
      },
    },
    // While the gateway shuts down, requests on open connections answer the D1 503 (router-errors.ts)
    // instead of Fastify's own body; Fastify still adds `Connection: close` to them.
    return503OnClosing: false,
    forceCloseConnections: "idle",
    // Every request's id is made once, here: `req_<random>` (D29). Authenticated answers carry it as
    // `X-Svc-Request-Id`, usage records use it as their id, and request logs as `reqId`.
    genReqId: () => newTimeOrderedId("req"),
    // Errors raised before routing answer the D1 body too.
    frameworkErrors: frameworkError,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Node enforces `requestTimeout` only when `headersTimeout` (60 s) is not longer: `createServer` refuses
  // other options, but Fastify sets `requestTimeout` after creation, so a shorter one lowers the head's here.
  const { requestTimeoutMs } = services.config;
  if (requestTimeoutMs > 0 && app.server.headersTimeout > requestTimeoutMs) app.server.headersTimeout = requestTimeoutMs;

  app.decorateRequest("principal", null);
  // D40: a SERVER span per request when tracing is on (no hook at all when it is off).
  if (services.tracing !== null) traceRequests(app, services.tracing);
  // Request bodies count in a process-wide byte budget as they arrive, and a body that stops arriving
  // is abandoned (body-budget.ts): Fastify's parsers read them through this hook's metered stream.
  const bodyBudget = new BodyBudget(services.config.bodyBudgetBytes, services.config.bodyLimitBytes, services.config.bodyIdleTimeoutMs);
  app.decorate("bodyBudget", bodyBudget);
  app.addHook("preParsing", bodyBudget.preParsing);
  // A model call whose request windows waited for the key's allow-list and never reached its guard is
  // counted as it answers (auth.ts, D34 order of checks).
  app.addHook("onSend", settleDeferredWindows);
  app.addHook("onSend", budgetHeaderHook(services));
  // Before every other hook: a request arriving while the gateway shuts down answers 503, and an
  // `Expect` other than 100-continue answers 417, both in the D1 body.
  refuseWhileClosing(app);
  app.server.on("checkExpectation", expectationFailed);
  // Requests by route pattern and status, and their latency (GET /metrics).
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
  });
  app.setErrorHandler(errorHandler);
  // Response schemas document the answers; they never filter or coerce them (fast-json-stringify would
  // drop undeclared fields): answers are serialized as they are.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // Every JSON body goes through Fastify's JSON parser (prototype-poisoning checks) and is refused past
  // MAX_JSON_DEPTH levels of nesting before any route or recursive code sees it (json-body.ts). A JSON
  // body sent without (or with another) Content-Type, as `curl -d` does, is still read as JSON.
  const parseJson = app.getDefaultJsonParser(
    app.initialConfig.onProtoPoisoning ?? "error",
    app.initialConfig.onConstructorPoisoning ?? "error",
  ) as StringBodyParser;
  app.addContentTypeParser("application/json", { parseAs: "string" }, boundedJsonParser(parseJson));
  app.addContentTypeParser("*", { parseAs: "string" }, boundedJsonParser(parseJson, { emptyIsUndefined: true }));

  // 404 vs 405: a shadow router knows every registered path and its methods.
  const shadow = FindMyWay();
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) {
      const method = m.toUpperCase() as (typeof METHODS)[number];
      if (!METHODS.includes(method) || shadow.hasRoute(method, route.url)) continue;
      shadow.on(method, route.url, () => {});
    }
  });
  app.setNotFoundHandler((request) => {
    const path = request.url.split("?")[0];
    const allowed = METHODS.filter((m) => m !== request.method && shadow.find(m, path) !== null);
    if (allowed.length > 0) throw errors.methodNotAllowed(request.method, path);
    throw errors.notFound(`No route ${request.method} ${path}.`);
  });

  // Before any route (as @fastify/websocket requires): the realtime sockets' server (D42, D43), whose
  // shutdown settles every open socket and closes it with 1001 before the app closes.
  const realtimeSockets = new RealtimeSockets();
  await registerWebSockets(app, realtimeSockets);
  // Before any route: @fastify/swagger collects the routes registered after it.
  await registerOpenApi(app, { publicBaseUrl: services.config.publicBaseUrl, adminToken: services.config.adminToken });
  // Before the route scopes: `Idempotency-Key` on every synchronous model call (D37, idempotent-calls.ts).
  idempotentCallRoutes(app, services);
  await app.register(async (pub) => {
    authPublicRoutes(pub, services);
    catalogRoutes(pub);
    voicePublicRoutes(pub, services);
    outputPublicRoutes(pub, services);
    opsRoutes(pub, services);
  });
  // The web console's static files (issue 15), in their own scope: @fastify/static decorates its reply.
  // `GET /` (and its automatic `HEAD /`) sends a browser opening the gateway's address to the console
  // (issue 28): a 302, so the root may answer something else one day without browsers remembering it.
  await app.register(async (web) => {
    web.get("/", { schema: { hide: true } }, async (_req, reply) => reply.redirect("/console/", 302));
    await consoleRoutes(web);
  });
  await app.register(async (acc) => {
    acc.addHook("onRequest", requireAuth(services, { allowSession: true }));
    accountRoutes(acc, services);
    billingRoutes(acc, services);
    alertRoutes(acc, services);
    usageRoutes(acc, services);
    modelRoutes(acc, services.payments);
    galleryRoutes(acc, services);
    webhookRoutes(acc, services);
    jobReadRoutes(acc, services);
    orgRoutes(acc, services);
    orgAuditRoutes(acc, services);
    budgetRoutes(acc, services);
  });
  await app.register(async (keyed) => {
    keyed.addHook("onRequest", requireAuth(services, { allowSession: false }));
    speechRoutes(keyed, services);
    voiceRoutes(keyed, services);
    generationRoutes(keyed, services);
    jobRoutes(keyed, services);
    chatRoutes(keyed, services);
    messagesRoutes(keyed, services);
    await keyed.register(async (scope) => voiceCloneRoutes(scope, services));
    await keyed.register(async (scope) => audioTextRoutes(scope, services));
  });
  // The realtime sockets (D42, D43): natively, and under the ElevenLabs dialect's prefix with its error shape.
  await app.register(async (rt) => realtimeRoutes(rt, services, realtimeSockets));
  await app.register(async (rt) => elevenLabsRealtimeRoutes(rt, services, realtimeSockets), { prefix: "/elevenlabs" });
  // The ElevenLabs dialect (D36): its own auth (`xi-api-key`), error shapes and not-found handler.
  await app.register(async (el) => elevenLabsRoutes(el, services), { prefix: "/elevenlabs" });
  // The OpenAI dialect (D37): `/v1/videos` (OpenAI's Videos API) and the whole dialect under `/openai/v1`.
  await app.register(async (oa) => openAIRoutes(oa, services));
  // The fal dialect (D38): fal's proxy protocol at /fal/proxy, its own auth (`Authorization: Key`) and error shapes.
  await app.register(async (fal) => falRoutes(fal, services), { prefix: "/fal" });
  // The Replicate dialect (D47): Replicate's predictions API at /replicate/v1, its errors as problem+json.
  await app.register(async (rep) => replicateRoutes(rep, services), { prefix: REPLICATE_PREFIX });
  // The MCP server and the agents' guide (D39): `POST /mcp` behind the API-key hook, the public `GET /llms.txt`.
  await app.register(async (agents) => agentRoutes(agents, services));
  await app.register(async (admin) => {
    admin.addHook("onRequest", requestIdHeader);
    admin.addHook("onRequest", requireAdmin(services));
    adminRoutes(admin, services);
    adminAuditRoutes(admin, services);
    adminBudgetRoutes(admin, services);
  });
  // Stripe Checkout top-ups (D33): the checkout (key or session) and Stripe's webhook (public, signed),
  // in their own scope: both answer 404 while payments are off, and the webhook reads raw bytes.
  await app.register(async (pay) => checkoutRoutes(pay, services));
  if (services.payments !== null && !services.payments.webhookEnabled) {
    app.log.warn("STRIPE_SECRET_KEY is set but STRIPE_WEBHOOK_SECRET is not: POST /v1/billing/stripe/webhook answers 404, so paid top-ups are not credited");
  }
  return app;
}
