/**
 * Request contracts of chat (D23): the TypeBox schemas of the JSON bodies of `POST /v1/chat/completions`
 * (OpenAI format) and `POST /v1/messages` (Anthropic format), validated and documented by
 * `src/http/schemas/text.ts`, and their `Static` types, the input types of the format parsers
 * (`src/text/openai-chat.ts`, `src/text/anthropic-messages.ts`). The schema checks types, roles, content
 * shapes, tools and ranges; the parsers check the rules that depend on the role.
 */
import type { Static } from "typebox";
import { TEXT_ALIASES, TEXT_MODELS } from "../catalog/text-models.ts";
import { arr, bool, int, num, obj, oneOf, str } from "./schema.ts";

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

/** The body of `POST /v1/chat/completions` (OpenAI chat-completions format). */
export const CHAT_BODY = obj(
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

/** An Anthropic content block (the route schema checks its `type`; the parser the rest). */
export const BLOCK = obj({ type: oneOf(["text", "tool_use", "tool_result"], "Block type.") }, ["type"], { additionalProperties: true, description: "A content block: `text` {text}, `tool_use` {id, name, input} (assistant), `tool_result` {tool_use_id, content} (user)." });

/** The body of `POST /v1/messages` (Anthropic messages format). */
export const MESSAGES_BODY = obj(
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

/** A chat-completions request body as received (types already checked by the route schema). */
export type ChatCompletionRequest = Static<typeof CHAT_BODY>;
/** A messages request body as received (types already checked by the route schema). */
export type MessagesRequest = Static<typeof MESSAGES_BODY>;
