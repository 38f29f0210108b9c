/**
 * The OpenAPI 3.1 document of the gateway (D23: `GET /openapi.json` is public and lists every path of the
 * spec and D8) and readable reference docs at `GET /docs` (Swagger UI, served from the npm package: no
 * CDN, works offline).
 *
 * @fastify/swagger (dynamic mode) reads each route's own schema (`schemas/*.ts`): the schema that
 * validates a request is the one documented, so a route that does not exist is never documented and a
 * documented rule is an enforced one. What is set here: the document's header, tags, security schemes
 * and the shared components. The operator API is listed too (D23 allows leaving it out), under the
 * `operator` tag with its own security scheme, so the console calls it through the typed client.
 *
 * Must be called before any route is registered: @fastify/swagger collects routes from `onRoute`.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import pkg from "../../package.json" with { type: "json" };
import type { App } from "./types.ts";
import { SECURITY, TAGS } from "./schemas/common.ts";
import { openapiSchema } from "./schemas/ops.ts";
import { COMPONENTS } from "./schemas/components.ts";

const DESCRIPTION = `A paid gateway in front of generative-media upstreams: speech, music, sound effects, voices, images, video, transcription and chat, metered to the micro-dollar from a prepaid USD balance.

**Authentication.** Send \`Authorization: Bearer <API_KEY>\` (from \`POST /v1/auth/register\` or \`POST /v1/auth/keys\`). \`POST /v1/messages\` also accepts \`x-api-key\`. The account endpoints also accept the session token. A missing or invalid key answers 401 \`auth_error\`.

**Errors.** Every error is JSON \`{"error": {"code", "message", "type", "param"}}\` (the \`Error\` schema); \`error.code\` is stable.

**Rate limits.** Every authenticated answer carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (seconds); every 429 carries \`Retry-After\`. Limits depend on the tier (\`GET /v1/limits/tiers\`).

**Billing.** Synchronous calls are charged when they succeed; their answers carry \`X-Svc-Cost-USD\` and \`X-Svc-Balance-USD\`. Image and video jobs place a hold at submit, charge only on success and release the hold otherwise.`;

/**
 * Registers @fastify/swagger (dynamic, OpenAPI 3.1), `GET /openapi.json` and Swagger UI at `GET /docs`,
 * all public. Call it before any route is registered.
 */
export async function registerOpenApi(app: App, opts: { publicBaseUrl: string }): Promise<void> {
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
          adminToken: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <GATEWAY_ADMIN_TOKEN>` (the operator API only)." },
        },
        schemas: COMPONENTS,
      },
    },
    // Paths are documented as registered, whatever the path of PUBLIC_BASE_URL.
    stripBasePath: false,
  });

  let document: string | null = null;
  app.get("/openapi.json", { schema: openapiSchema }, async (_req, reply) => {
    document ??= JSON.stringify(app.swagger());
    return reply
      .type("application/json; charset=utf-8")
      .header("cache-control", "public, max-age=300")
      .header("access-control-allow-origin", "*")
      .send(document);
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
    theme: { title: "Media Gateway API reference" },
    uiConfig: { deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0, displayRequestDuration: true, tryItOutEnabled: false },
  });
}
