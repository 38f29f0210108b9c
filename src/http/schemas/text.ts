/**
 * Route schemas of chat in the OpenAI and Anthropic formats (D23).
 */
import { TEXT_ALIASES, TEXT_MODELS } from "../../catalog/text-models.ts";
import { arr, bool, COST_HEADERS, errors, FALLBACK_HEADERS, int, json, nullable, num, obj, oneOf, route, SIMULATE, str } from "./common.ts";

const TEXT_IDS = TEXT_MODELS.filter((m) => m.enabled).map((m) => m.id);
const TEXT_MODEL_DOC = `Text model id (${TEXT_IDS.map((id) => `\`${id}\``).join(", ")}) or alias (${Object.keys(TEXT_ALIASES)
  .map((a) => `\`${a}\``)
  .join(", ")}); the answer names the concrete id.`;
const MODEL = str(TEXT_MODEL_DOC, { minLength: 1, examples: ["fast"], "x-error-message": "model is required." });
const MESSAGES_MESSAGE = "messages must be a non-empty array.";
const MAX_TOKENS_MESSAGE = "max_tokens must be a positive integer.";
const STREAM_MESSAGE = "stream must be a boolean.";

const CHAT_MESSAGE = obj(
  {
    role: oneOf(["system", "developer", "user", "assistant", "tool"], "Author of the message.", { "x-error-message": "{param} must be one of system, developer, user, assistant, tool." }),
    content: {
      "x-error-message": "{param} must be a string or text parts.",
      description: "Text, or an array of text parts `{type: \"text\", text}`; may be null for an assistant message with tool calls.",
      oneOf: [{ type: "string" }, { type: "array", items: obj({ type: oneOf(["text"], "Part type."), text: str("Text.") }, ["type", "text"]) }, { type: "null" }],
    },
    tool_calls: arr(obj({ id: str("Call id."), type: oneOf(["function"], "Always `function`."), function: obj({ name: str("Function name."), arguments: str("JSON arguments.") }) }), "Assistant tool calls."),
    tool_call_id: str("The call this `tool` message answers (required for role `tool`)."),
  },
  ["role"],
);

const CHAT_BODY = obj(
  {
    model: MODEL,
    messages: arr(CHAT_MESSAGE, "The conversation.", { minItems: 1, "x-error-message": MESSAGES_MESSAGE }),
    max_tokens: int("Output token limit, forwarded unchanged; the service imposes no cap.", { minimum: 1, default: 4096, "x-error-message": MAX_TOKENS_MESSAGE }),
    max_completion_tokens: int("Alias of `max_tokens`.", { minimum: 1, "x-error-message": MAX_TOKENS_MESSAGE }),
    temperature: num("Sampling temperature.", { minimum: 0, maximum: 2, "x-error-message": "temperature must be a number from 0 to 2." }),
    tools: arr(
      obj({ type: oneOf(["function"], "Always `function`."), function: obj({ name: str("Function name."), description: str("What it does."), parameters: obj({}, [], { description: "JSON Schema of the arguments.", additionalProperties: true }) }, ["name"]) }, ["type", "function"]),
      "Functions the model may call.",
    ),
    tool_choice: { description: "`auto`, `none`, `required` or `{type: \"function\", function: {name}}`.", oneOf: [{ type: "string" }, { type: "object" }] },
    stream: bool("Answer as server-sent events (`chat.completion.chunk`, then `data: [DONE]`).", { default: false, "x-error-message": STREAM_MESSAGE }),
    stream_options: obj({ include_usage: bool("Send a last chunk with `usage` and `choices: []` before `[DONE]`.") }),
  },
  ["model", "messages"],
);

const CHAT_USAGE = obj({
  prompt_tokens: int("Input tokens, cached ones included."),
  completion_tokens: int("Output tokens."),
  total_tokens: int("Sum of both."),
  prompt_tokens_details: obj({ cached_tokens: int("Input tokens served from the prompt cache (billed at 10%).") }),
});

const CHAT_COMPLETION = obj(
  {
    id: str("Completion id, `chatcmpl-...`."),
    object: oneOf(["chat.completion"], "Always `chat.completion`."),
    created: int("Unix time."),
    model: str("Concrete model id (an alias resolves)."),
    choices: arr(
      obj({
        index: int("Always 0."),
        message: obj({ role: oneOf(["assistant"], "Always `assistant`."), content: nullable(str("Answer text.")), tool_calls: arr(obj({}, [], { additionalProperties: true }), "Tool calls."), refusal: { type: "null" } }),
        logprobs: { type: "null" },
        finish_reason: oneOf(["stop", "length", "tool_calls"], "Why the model stopped."),
      }),
      "One choice.",
    ),
    usage: CHAT_USAGE,
  },
  ["id", "object", "created", "model", "choices", "usage"],
);

const BLOCK = obj({ type: oneOf(["text", "tool_use", "tool_result"], "Block type.") }, ["type"], { additionalProperties: true, description: "A content block: `text` {text}, `tool_use` {id, name, input} (assistant), `tool_result` {tool_use_id, content} (user)." });

const MESSAGES_BODY = obj(
  {
    model: MODEL,
    messages: arr(
      obj({ role: oneOf(["user", "assistant"], "Author.", { "x-error-message": "{param} must be user or assistant." }), content: { description: "Text or content blocks.", "x-error-message": "{param} must be a string or an array of blocks.", oneOf: [{ type: "string" }, { type: "array", items: BLOCK }] } }, ["role", "content"]),
      "The conversation.",
      { minItems: 1, "x-error-message": MESSAGES_MESSAGE },
    ),
    system: { description: "System prompt: text or text blocks.", oneOf: [{ type: "string" }, { type: "array", items: BLOCK }] },
    max_tokens: int("Output token limit.", { minimum: 1, "x-error-message": MAX_TOKENS_MESSAGE }),
    temperature: num("Sampling temperature.", { minimum: 0, maximum: 1, "x-error-message": "temperature must be a number from 0 to 1." }),
    tools: arr(obj({ name: str("Tool name."), description: str("What it does."), input_schema: obj({}, [], { description: "JSON Schema of the input.", additionalProperties: true }) }, ["name"]), "Tools the model may use."),
    tool_choice: obj({ type: oneOf(["auto", "any", "none", "tool"], "Choice."), name: str("Tool name, with `type: tool`.") }, ["type"]),
    stream: bool("Answer as server-sent events (`message_start`, `content_block_*`, `message_delta`, `message_stop`; each `event:` name equals its `data.type`).", { default: false, "x-error-message": STREAM_MESSAGE }),
  },
  ["model", "messages"],
);

const MESSAGE = obj(
  {
    id: str("Message id, `msg_...`."),
    type: oneOf(["message"], "Always `message`."),
    role: oneOf(["assistant"], "Always `assistant`."),
    model: str("Concrete model id (an alias resolves)."),
    content: arr(BLOCK, "`text` and `tool_use` blocks."),
    stop_reason: oneOf(["end_turn", "max_tokens", "tool_use"], "Why the model stopped."),
    stop_sequence: { type: "null" },
    usage: obj({
      input_tokens: int("Input tokens, cached ones excluded."),
      output_tokens: int("Output tokens."),
      cache_read_input_tokens: int("Input tokens served from the prompt cache (billed at 10%)."),
      cache_creation_input_tokens: int("Always 0."),
    }),
  },
  ["id", "type", "role", "model", "content", "stop_reason", "usage"],
);


/** `POST /v1/chat/completions`. */
export const createChatCompletionSchema = route({
  operationId: "createChatCompletion",
  summary: "Chat (OpenAI chat-completions format)",
  description:
    "Every text model answers here. Priced per token (cached input at 10%; an identical prompt prefix of at least 1024 tokens within 5 minutes is cached). With `stream: true` the answer is `text/event-stream`.",
  tags: ["text"],
  access: "key",
  headers: SIMULATE,
  body: json(CHAT_BODY),
  responses: {
    200: {
      description: "The completion, or server-sent events when `stream` is true.",
      headers: { ...COST_HEADERS, ...FALLBACK_HEADERS },
      content: { ...json(CHAT_COMPLETION), "text/event-stream": { schema: str("`data: {chat.completion.chunk}` lines, then `data: [DONE]`.") } },
    },
    ...errors({ 400: "`invalid_request`, `invalid_model`", 401: "`auth_error`", 402: "`billing_error`, `key_spend_limit` (the key's spend limit, D34)", 403: "`model_not_available` (above the caller's tier), `model_not_allowed` (not in the key's `models`, D34)", 429: "`rate_limited`", 502: "`provider_error`" }),
  },
});

/** `POST /v1/messages`. */
export const createMessageSchema = route({
  operationId: "createMessage",
  summary: "Chat (Anthropic messages format)",
  description: "Every text model answers here. The key may be sent as `Authorization: Bearer` or `x-api-key`.",
  tags: ["text"],
  access: "keyOrXApiKey",
  headers: SIMULATE,
  body: json(MESSAGES_BODY),
  responses: {
    200: {
      description: "The message, or server-sent events when `stream` is true.",
      headers: { ...COST_HEADERS, ...FALLBACK_HEADERS },
      content: { ...json(MESSAGE), "text/event-stream": { schema: str("`event: <type>` / `data: {...}` pairs.") } },
    },
    ...errors({ 400: "`invalid_request`, `invalid_model`", 401: "`auth_error`", 402: "`billing_error`, `key_spend_limit` (the key's spend limit, D34)", 403: "`model_not_available` (above the caller's tier), `model_not_allowed` (not in the key's `models`, D34)", 429: "`rate_limited`", 502: "`provider_error`" }),
  },
});
