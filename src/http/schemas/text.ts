/**
 * Route schemas of chat in the OpenAI and Anthropic formats (D23).
 */
import { BLOCK, CHAT_BODY, MESSAGES_BODY } from "../../contracts/text.ts";
import { arr, COST_HEADERS, errors, FALLBACK_HEADERS, int, json, MODEL_RETIRED, nullable, obj, oneOf, route, SIMULATE, str } from "./common.ts";

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
    ...errors({ 400: "`invalid_request`, `invalid_model`", 401: "`auth_error`", 402: "`billing_error`, `key_spend_limit` (the key's spend limit)", 403: "`model_not_available` (above the caller's tier), `model_not_allowed` (not in the key's `models`)", 410: MODEL_RETIRED, 429: "`rate_limited`", 502: "`provider_error`" }),
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
    ...errors({ 400: "`invalid_request`, `invalid_model`", 401: "`auth_error`", 402: "`billing_error`, `key_spend_limit` (the key's spend limit)", 403: "`model_not_available` (above the caller's tier), `model_not_allowed` (not in the key's `models`)", 410: MODEL_RETIRED, 429: "`rate_limited`", 502: "`provider_error`" }),
  },
});
