/**
 * Route schemas of the MCP server and the agents' guide (D39), under the tag `agents`. `POST /mcp` answers
 * JSON-RPC 2.0: a protocol error (a body that is not JSON, an unknown method or tool, a batch) is a JSON-RPC
 * error, while a refusal made before any JSON-RPC (a missing or invalid key, the rate limit) is the D1 body.
 */
import { COST_HEADERS, errors, FALLBACK_HEADERS, H, int, json, obj, oneOf, route, str, typed } from "../../schemas/common.ts";
import { TOOL_NAMES } from "./tools.ts";

/** A JSON-RPC 2.0 error answer. */
const JSON_RPC_ERROR = obj(
  {
    jsonrpc: oneOf(["2.0"], "Always `2.0`."),
    id: typed({ type: ["string", "integer", "null"], description: "The request's id; null when the body could not be read." }),
    error: obj(
      {
        code: int("`-32700` parse error, `-32600` invalid request (also a batch: send one message per request), `-32601` unknown method, `-32602` invalid params (an unknown tool), `-32603` internal error, `-32000` a transport refusal (`Accept` or `Content-Type`)."),
        message: str("What went wrong."),
        data: typed({ description: "More about the error, when any." }),
      },
      ["code", "message"],
    ),
  },
  ["jsonrpc", "error"],
  { description: "A JSON-RPC 2.0 error." },
);

/** A JSON-RPC 2.0 answer: a result, or an error. */
const JSON_RPC_ANSWER = obj(
  {
    jsonrpc: oneOf(["2.0"], "Always `2.0`."),
    id: typed({ type: ["string", "integer", "null"], description: "The request's id." }),
    result: obj({}, [], {
      additionalProperties: true,
      description: `The method's result. \`tools/call\` answers a tool result: \`content\` (text, \`audio\` and \`image\` items in base64, \`resource_link\` items to stored files), \`structuredContent\` (always \`cost_usd\`, \`balance_usd\` and \`request_id\` or \`job_id\`) and \`isError: true\` for a refusal (the native \`error\` object; nothing charged). Tools: ${TOOL_NAMES.map((n) => `\`${n}\``).join(", ")}.`,
    }),
    error: JSON_RPC_ERROR.properties.error,
  },
  ["jsonrpc"],
  { description: "A JSON-RPC 2.0 answer." },
);

/** `POST /mcp`. */
export const mcpSchema = route({
  operationId: "mcp",
  summary: "MCP server (Streamable HTTP, stateless)",
  description:
    "The Model Context Protocol server of the gateway, for AI agents: connect an MCP client (for example the official SDK's `StreamableHTTPClientTransport`) to `<gateway>/mcp` with `Authorization: Bearer <API key>`. Stateless: every request stands alone (no `Mcp-Session-Id`), answers are JSON (no event stream), and `GET /mcp` is not served (405). Tools list models, quote a call (`estimate_cost`), read the balance, list voices, generate speech, music, sound effects and images, and submit, follow and cancel video jobs (two resources, `gateway://llms.txt` and `gateway://dialects`, give the agents' guide and the vendor dialects as Markdown); each call is billed, limited and logged exactly as the native endpoint it uses, and a test-mode key (`gw_test_...`) moves no money. Send one JSON-RPC message per request (no batches).",
  tags: ["agents"],
  access: "key",
  body: json(
    typed({
      anyOf: [{ type: "object" }, { type: "array" }],
      description: "One JSON-RPC 2.0 message of the MCP protocol (`initialize`, `notifications/initialized`, `tools/list`, `tools/call`, `resources/list`, `resources/read`, `ping`, ...). Its shape is checked by the protocol: a malformed message answers a JSON-RPC error.",
      examples: [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_balance", arguments: {} } }],
    }),
  ),
  responses: {
    200: {
      description: "The JSON-RPC answer. The answer to a paid synchronous tool call (speech, music, sound effect) also carries the native cost headers.",
      headers: { ...COST_HEADERS, "X-Svc-Chars-Billed": str("Characters billed (speech)."), "X-Svc-Duration-Sec": H.duration, ...FALLBACK_HEADERS },
      content: json(JSON_RPC_ANSWER),
    },
    202: { description: "A notification or response was accepted (no body)." },
    400: { description: "A JSON-RPC error: the body is not JSON (`-32700`), not a JSON-RPC message, or a batch (`-32600`).", content: json(JSON_RPC_ERROR) },
    406: { description: "A JSON-RPC error: `Accept` must list both `application/json` and `text/event-stream`.", content: json(JSON_RPC_ERROR) },
    415: { description: "A JSON-RPC error: `Content-Type` must be `application/json`.", content: json(JSON_RPC_ERROR) },
    ...errors({ 401: "`auth_error` (missing, unknown or expired key), before any JSON-RPC", 429: "`rate_limited` (the key's or the account's requests per minute), for a message other than `tools/call`: a tool call over the limit answers 200 with a tool result `isError: true` and the same error" }),
  },
});

/** `GET /llms.txt`. */
export const llmsTxtSchema = route({
  operationId: "llmsTxt",
  summary: "Guide for AI agents (llms.txt)",
  description: "A short Markdown guide for agents, generated from the catalog: what the gateway is, how to authenticate, the main endpoints with an example each and their prices, the dialects, the MCP endpoint, and links to `/openapi.json` and `/docs`.",
  tags: ["agents"],
  access: "public",
  responses: {
    200: { description: "The guide.", content: { "text/markdown": { schema: str("Markdown.") } } },
  },
});

