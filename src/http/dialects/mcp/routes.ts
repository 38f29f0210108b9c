/**
 * The MCP server and the agents' guide (D39): `POST /mcp`, a Model Context Protocol server on the Streamable
 * HTTP transport of the official `@modelcontextprotocol/sdk`, stateless (a new server and transport per
 * request, no session id, JSON answers), behind the API-key hook of the native paid routes; and the public
 * `GET /llms.txt`. Besides the tools, the server publishes two read-only resources (text/markdown), the same
 * text for every key: `gateway://llms.txt` (the guide `GET /llms.txt` answers) and `gateway://dialects` (the
 * vendor dialects, vendor-dialects.ts, the list llms.txt shows too).
 *
 * The SDK's transport is its web-standard one (`WebStandardStreamableHTTPServerTransport`, which its Node
 * transport wraps): it takes the request as a `Request` with the body Fastify already parsed and gives back
 * a `Response`, which Fastify sends like any other answer. So the hooks of the app apply to MCP answers as
 * to native ones (the request id and test-mode headers, the rate-limit headers, a key's deferred request
 * windows, metrics), and nothing writes to the socket behind Fastify's back.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../../../errors.ts";
import pkg from "../../../../package.json" with { type: "json" };
import type { Services } from "../../../services.ts";
import { MODEL_CALL_MIXED, requireAuth } from "../../auth.ts";
import { OWN_IDEMPOTENCY } from "../../idempotent-calls.ts";
import { errorHandler } from "../../error-handler.ts";
import { jobWaits } from "../../job-waits.ts";
import type { App } from "../../types.ts";
import { callTool, type ToolCallContext, UnknownToolError } from "./calls.ts";
import { buildLlmsTxt } from "./llms-txt.ts";
import { buildDialectsGuide } from "./vendor-dialects.ts";
import { llmsTxtSchema, mcpSchema } from "./schemas.ts";
import { publishedSchema, TOOLS } from "./tools.ts";

/** What `initialize` tells the client about the server (shown to the model by many clients). */
const INSTRUCTIONS =
  "Generative media on a prepaid USD balance: speech, music, sound effects, images and video. Every call that costs money says so in its description; estimate_cost quotes a call without making it, get_balance reads the balance. Results carry cost_usd and balance_usd. A refused call (isError) charged nothing. Images come back within a minute; videos are jobs to follow with get_job. The resources gateway://llms.txt (the guide) and gateway://dialects (the vendors' own clients that work against this gateway) are free to read.";

/** The tools as `tools/list` answers them (built once: the catalog is static). */
const LISTED: Tool[] = TOOLS.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: publishedSchema(t.inputSchema), annotations: t.annotations }));

/** A JSON-RPC error answer with no request id (the body could not be read as one message). */
function jsonRpcError(code: number, message: string) {
  return { jsonrpc: "2.0" as const, id: null, error: { code, message } };
}

/**
 * Error handler of the `/mcp` scope: a body that is not JSON is the JSON-RPC parse error (400, `-32700`);
 * every other error (a missing key, a rate limit, a body too large) is the native D1 answer.
 */
function mcpErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const code = (err as { code?: unknown }).code;
  if (!reply.sent && (err instanceof SyntaxError || code === "FST_ERR_CTP_INVALID_JSON_BODY" || code === "FST_ERR_CTP_EMPTY_JSON_BODY")) {
    void reply.code(400).header("content-type", "application/json; charset=utf-8").send(jsonRpcError(ErrorCode.ParseError, "Parse error: the body is not JSON."));
    return;
  }
  errorHandler(err, request, reply);
}

/** The texts of the MCP resources (built once at startup: the catalog and the public address are fixed). */
export interface AgentGuides {
  /** `gateway://llms.txt`: the text of `GET /llms.txt` (llms-txt.ts). */
  llmsTxt: string;
  /** `gateway://dialects`: the vendor dialects (vendor-dialects.ts `buildDialectsGuide`). */
  dialects: string;
}

/** The URIs of the MCP resources. */
export const RESOURCE_URIS = { llmsTxt: "gateway://llms.txt", dialects: "gateway://dialects" } as const;

/** A resource read's answer: one Markdown text at `uri`. */
function markdownAt(uri: URL, text: string) {
  return { contents: [{ uri: uri.href, mimeType: "text/markdown", text }] };
}

/**
 * One stateless MCP server for the request of `ctx`: the tools of D39 with their JSON Schemas, and the
 * resources of `guides` (registered with the SDK's `registerResource`: `resources/list` and
 * `resources/read`; an unknown URI is the SDK's JSON-RPC error). Reading a resource is free.
 */
function serverFor(ctx: ToolCallContext, guides: AgentGuides): McpServer {
  const mcp = new McpServer({ name: "media-gateway", title: "Media Gateway", version: pkg.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  mcp.registerResource(
    "llms-txt",
    RESOURCE_URIS.llmsTxt,
    { title: "Agents' guide (llms.txt)", description: "How to use the gateway: authentication, the main endpoints with an example and the prices of each, the realtime sockets, the vendor dialects, the MCP tools. The text of GET /llms.txt.", mimeType: "text/markdown" },
    (uri) => markdownAt(uri, guides.llmsTxt),
  );
  mcp.registerResource(
    "dialects",
    RESOURCE_URIS.dialects,
    { title: "Vendor dialects", description: "The vendors' official clients that run through the gateway unchanged (ElevenLabs, OpenAI, fal, Replicate): each one's base URL on this gateway, its setup and what it serves.", mimeType: "text/markdown" },
    (uri) => markdownAt(uri, guides.dialects),
  );
  // The low-level handlers publish the route schemas' JSON Schema as they are (McpServer.registerTool takes zod).
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: LISTED }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async (req) => {
    try {
      return await callTool(ctx, req.params.name, req.params.arguments);
    } catch (err) {
      if (err instanceof UnknownToolError) throw new McpError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
  });
  return mcp;
}

/** The request headers the SDK's transport reads (content negotiation and the protocol's own). */
const TRANSPORT_HEADERS = ["accept", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"] as const;

/**
 * The `Request` the SDK's transport reads: the method and path of `request` and the headers it looks at
 * ({@link TRANSPORT_HEADERS}); its body goes separately, already parsed. The origin is fixed: the
 * transport's host checks are off, and a `Host` header that is no valid URL must not fail the request.
 */
function webRequestOf(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (typeof value !== "string") continue;
    try {
      headers.set(name, value);
    } catch {
      // A value Headers refuses is left out: the transport then answers as if it were missing.
    }
  }
  return new Request(`http://gateway${request.url}`, { method: request.method, headers });
}

/** Whether a parsed body is one JSON-RPC `tools/call` request. */
function isToolCall(body: unknown): boolean {
  return body !== null && typeof body === "object" && (body as { method?: unknown }).method === "tools/call";
}

/**
 * The native API-key hook (`requireAuth`: the key, its expiry, its request windows), with one difference:
 * a request over its requests-per-minute window (429 `rate_limited`, refused after the key was
 * authenticated) is let through to be answered inside the protocol when it is a tool call (a refusal is a
 * tool result, D39), and with the native 429 otherwise (see the route). Every other refusal, a missing or
 * invalid key above all, answers before any JSON-RPC.
 */
function mcpAuth(services: Services, limited: WeakMap<FastifyRequest, AppError>) {
  const auth = requireAuth(services, { allowSession: false });
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      await auth(request, reply);
    } catch (err) {
      if (err instanceof AppError && err.status === 429 && request.principal !== null) {
        limited.set(request, err);
        return;
      }
      throw err;
    }
  };
}

/**
 * `POST /mcp` in its own scope: the API-key hook ({@link mcpAuth}), the JSON-RPC parse error (see
 * {@link mcpErrorHandler}); `guides` are the resources' texts.
 */
async function mcpRoutes(app: App, services: Services, guides: AgentGuides): Promise<void> {
  app.setErrorHandler(mcpErrorHandler);
  const limited = new WeakMap<FastifyRequest, AppError>();
  app.addHook("onRequest", mcpAuth(services, limited));
  const waits = jobWaits(app, services);

  // MODEL_CALL_MIXED: tools call models through the call guard (a key's allow-list before its request
  // windows, D34); the windows of any other key are counted as the message arrives (see mcpAuth).
  // OWN_IDEMPOTENCY: every tool call is one POST /mcp; the synchronous-call gate (idempotent-calls.ts) leaves it out.
  app.post("/mcp", { schema: mcpSchema, config: { ...MODEL_CALL_MIXED, ...OWN_IDEMPOTENCY } }, async (request, reply) => {
    // One message per request: the usage record of a paid tool call is this request's id (D29, D39).
    if (Array.isArray(request.body)) {
      return reply.code(400).send(jsonRpcError(ErrorCode.InvalidRequest, "Batches are not supported: send one JSON-RPC message per request."));
    }
    const refused = limited.get(request);
    // Over the rate limit: a tool call gets a refusal as its result, any other message the native 429.
    if (refused !== undefined && !isToolCall(request.body)) throw refused;
    const mcp = serverFor({ services, request, reply, waits, refused: refused ?? null }, guides);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await mcp.connect(transport);
      const answer = await transport.handleRequest(webRequestOf(request), { parsedBody: request.body });
      reply.code(answer.status);
      answer.headers.forEach((value, name) => {
        reply.header(name, value);
      });
      const text = await answer.text();
      return await reply.send(text === "" ? undefined : text);
    } finally {
      await transport.close();
      await mcp.close();
    }
  });
}

/**
 * The agents' routes (D39): the public `GET /llms.txt` and, in a scope of its own, `POST /mcp` (behind the
 * API key: its resources too). Registered as one scope of the app.
 */
export async function agentRoutes(app: App, services: Services): Promise<void> {
  const guide = buildLlmsTxt(services.config.publicBaseUrl);
  const guides: AgentGuides = { llmsTxt: guide, dialects: buildDialectsGuide(services.config.publicBaseUrl) };
  app.get("/llms.txt", { schema: llmsTxtSchema }, async (_req, reply) =>
    reply.type("text/markdown; charset=utf-8").header("cache-control", "public, max-age=300").send(guide),
  );
  await app.register(async (scope) => mcpRoutes(scope, services, guides));
}
