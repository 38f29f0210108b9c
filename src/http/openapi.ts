/**
 * The OpenAPI 3.1 document of the gateway (D23: `GET /openapi.json` is public and lists every path of the
 * spec and D8) and readable reference docs at `GET /docs` (Swagger UI, served from the npm package: no
 * CDN, works offline), with the project's name and look (docs-theme.ts). The document's descriptions,
 * summaries and tags speak to the API's users: no internal decision or issue numbers (test/http/openapi.test.ts).
 *
 * @fastify/swagger (dynamic mode) reads each route's own schema (`schemas/*.ts`): the schema that
 * validates a request is the one documented, so a route that does not exist is never documented and a
 * documented rule is an enforced one. What is set here: the document's header, tags, security schemes
 * and the shared components.
 *
 * The public document is the public API: `GET /openapi.json` and the document behind `/docs` leave the
 * operator API out (D23 allows it; {@link publicDocument}). A caller sending the operator token
 * (`Authorization: Bearer <GATEWAY_ADMIN_TOKEN>`, D9) gets the whole document, the operator API under the
 * `operator` tag with its own security scheme; the typed client (packages/client, used by the console's
 * operator pages) is generated from that whole document (scripts/generate-client.ts).
 *
 * Must be called before any route is registered: @fastify/swagger collects routes from `onRoute`.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import pkg from "../../package.json" with { type: "json" };
import type { FastifyRequest } from "fastify";
import { operatorTokenCheck } from "./auth.ts";
import type { App } from "./types.ts";
import { SECURITY, TAGS } from "./schemas/common.ts";
import { openapiSchema } from "./schemas/ops.ts";
import { COMPONENTS } from "./schemas/components.ts";
import { DOCS_LOGO, DOCS_THEME } from "./docs-theme.ts";

const DESCRIPTION = `A paid gateway in front of generative-media upstreams: speech, music, sound effects, voices, images, video, transcription and chat, metered to the micro-dollar from a prepaid USD balance.

**Authentication.** Send \`Authorization: Bearer <API_KEY>\` (from \`POST /v1/auth/register\` or \`POST /v1/auth/keys\`). \`POST /v1/messages\` also accepts \`x-api-key\`. The account endpoints also accept the session token. A missing or invalid key answers 401 \`auth_error\`. Keys and balances belong to organizations (see the \`organizations\` tag): a key acts for its own, a session token for the one named by the \`X-Svc-Org\` header (default: the user's personal organization); a role that does not allow an action answers 403 \`forbidden_role\`.

**Errors.** Every error is JSON \`{"error": {"code", "message", "type", "param"}}\` (the \`Error\` schema); \`error.code\` is stable.

**Rate limits.** Every authenticated answer carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (seconds); a 429 that a wait can lift carries \`Retry-After\`; one that no wait lifts (video on Tier 0, a request over the tier's \`max_single_request\`) carries \`x-should-retry: false\` instead, and its message names the way up. Limits depend on the tier (\`GET /v1/limits/tiers\`).

**Billing.** Synchronous calls are charged when they succeed; their answers carry \`X-Svc-Cost-USD\` and \`X-Svc-Balance-USD\`. Image and video jobs place a hold at submit, charge only on success and release the hold otherwise.`;

/** An OpenAPI document as JSON (what `app.swagger()` returns, read loosely). */
export interface OpenApiDocument {
  paths?: Record<string, Record<string, unknown>>;
  tags?: { name: string }[];
  components?: { schemas?: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
  [key: string]: unknown;
}

/** The tag and the security scheme of the operator API (schemas/common.ts `TAGS`, `SECURITY.admin`). */
const OPERATOR_TAG = "operator";
const OPERATOR_SCHEME = "adminToken";
const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/** Whether an operation belongs to the operator API: its tag, or a security requirement of the operator token. */
function isOperatorOperation(op: unknown): boolean {
  const o = op as { tags?: unknown; security?: unknown };
  const tagged = Array.isArray(o.tags) && o.tags.includes(OPERATOR_TAG);
  const secured = Array.isArray(o.security) && o.security.some((req) => req !== null && typeof req === "object" && OPERATOR_SCHEME in req);
  return tagged || secured;
}

/** The component schema names referenced (`#/components/schemas/<name>`) anywhere in `value`. */
function schemaRefs(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) schemaRefs(v, into);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith("#/components/schemas/")) into.add(v.slice("#/components/schemas/".length));
      else schemaRefs(v, into);
    }
  }
  return into;
}

/** `names` and every component schema they reference, transitively. */
function refClosure(names: Set<string>, schemas: Record<string, unknown>): Set<string> {
  const seen = new Set<string>();
  const todo = [...names];
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (seen.has(name)) continue;
    seen.add(name);
    for (const next of schemaRefs(schemas[name])) if (!seen.has(next)) todo.push(next);
  }
  return seen;
}

/**
 * The public part of the OpenAPI document `doc` (D23 lets the operator API be left out): without the
 * operations of the operator API (tag `operator` or the `adminToken` security requirement) and the paths
 * left empty, the `operator` tag, the `adminToken` security scheme, and the component schemas that only
 * operator operations use. `doc` itself is not changed.
 */
export function publicDocument(doc: OpenApiDocument): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const operatorParts: unknown[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const kept: Record<string, unknown> = {};
    let operations = 0;
    for (const [key, value] of Object.entries(item)) {
      if (HTTP_METHODS.has(key) && isOperatorOperation(value)) operatorParts.push(value);
      else {
        kept[key] = value;
        if (HTTP_METHODS.has(key)) operations++;
      }
    }
    if (operations > 0) paths[path] = kept;
    else operatorParts.push(kept);
  }
  const { components = {}, tags, ...rest } = doc;
  const schemas = components.schemas ?? {};
  // Schemas reached from anything public stay; of the rest, those reached from the operator API go.
  const publicRefs = refClosure(schemaRefs({ ...rest, paths }), schemas);
  const operatorRefs = refClosure(schemaRefs(operatorParts), schemas);
  const keptSchemas = Object.fromEntries(Object.entries(schemas).filter(([name]) => publicRefs.has(name) || !operatorRefs.has(name)));
  const { [OPERATOR_SCHEME]: _operatorScheme, ...securitySchemes } = components.securitySchemes ?? {};
  return {
    ...rest,
    ...(tags ? { tags: tags.filter((t) => t.name !== OPERATOR_TAG) } : {}),
    paths,
    components: {
      ...components,
      ...(components.securitySchemes ? { securitySchemes } : {}),
      ...(components.schemas ? { schemas: keptSchemas } : {}),
    },
  };
}

/**
 * Registers @fastify/swagger (dynamic, OpenAPI 3.1), `GET /openapi.json` and Swagger UI at `GET /docs`,
 * all public: anyone gets {@link publicDocument}, a caller with the operator token `adminToken` the whole
 * document (see the file comment). Call it before any route is registered.
 */
export async function registerOpenApi(app: App, opts: { publicBaseUrl: string; adminToken: string | null }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "Media Gateway API", version: pkg.version, description: DESCRIPTION },
      servers: [{ url: opts.publicBaseUrl }],
      tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
      security: SECURITY.key,
      components: {
        securitySchemes: {
          apiKey: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <API_KEY>`." },
          sessionToken: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <SESSION_TOKEN>` (account endpoints and job reads: list, get, cancel, events)." },
          xApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The API key in `x-api-key` (`POST /v1/messages`)." },
          xiApiKey: { type: "apiKey", in: "header", name: "xi-api-key", description: "The API key in `xi-api-key` (the ElevenLabs dialect, `/elevenlabs/*`)." },
          falKey: { type: "apiKey", in: "header", name: "Authorization", description: "`Authorization: Key <API_KEY>` (the fal dialect, `/fal/proxy`, as `@fal-ai/client` sends it)." },
          replicateToken: { type: "apiKey", in: "header", name: "Authorization", description: "`Authorization: Token <API_KEY>` (the Replicate dialect, `/replicate/v1`; `Bearer`, what the `replicate` client sends, works too)." },
          adminToken: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <GATEWAY_ADMIN_TOKEN>` (the operator API only)." },
        },
        schemas: COMPONENTS,
      },
    },
    // Paths are documented as registered, whatever the path of PUBLIC_BASE_URL.
    stripBasePath: false,
  });

  const isOperator = operatorTokenCheck(opts.adminToken);
  /** The document `request` may read: the whole one for the operator token, else the public part. */
  const documentFor = (request: FastifyRequest, whole: OpenApiDocument): OpenApiDocument => (isOperator(request) ? whole : publicDocument(whole));
  let full: string | null = null;
  let open: string | null = null;
  app.get("/openapi.json", { schema: openapiSchema }, async (req, reply) => {
    // One URL, two documents: caches must keep them apart (Vary), and never share the operator's.
    reply.type("application/json; charset=utf-8").header("vary", "Authorization, x-api-key");
    if (isOperator(req)) {
      full ??= JSON.stringify(app.swagger());
      return reply.header("cache-control", "private, no-store").send(full);
    }
    open ??= JSON.stringify(publicDocument(app.swagger() as OpenApiDocument));
    return reply.header("cache-control", "public, max-age=300").header("access-control-allow-origin", "*").send(open);
  });

  // Swagger UI from the package's own files; the policy keeps the page from loading anything external.
  const api = new URL(opts.publicBaseUrl).origin;
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: [
      "default-src 'self'",
      "base-uri 'self'",
      `connect-src 'self' ${api}`,
      "font-src 'self' data:",
      "form-action 'self'",
      "frame-ancestors 'self'",
      "img-src 'self' data:",
      "object-src 'none'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
    ].join("; "),
    // `/docs/json` and `/docs/yaml` (what the page loads) follow the same rule as `/openapi.json`.
    transformSpecification: (spec, req) => documentFor(req, spec as OpenApiDocument) as typeof spec,
    // The project's name and look, not the plugin's (Fastify's logo): docs-theme.ts.
    logo: DOCS_LOGO,
    theme: DOCS_THEME,
    uiConfig: { deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0, displayRequestDuration: true, tryItOutEnabled: false },
  });
}
