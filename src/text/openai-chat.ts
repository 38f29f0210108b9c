/**
 * The OpenAI chat-completions request format (D23): its body, as the route schema admitted it, read into
 * the chat service's input.
 */
import type { ChatCompletionRequest } from "../contracts/text.ts";
import { errors } from "../errors.ts";
import type { ChatMessage, ToolDefinition } from "../upstreams/chat-types.ts";
import type { ChatInput } from "./chat.ts";

function isContent(v: unknown): boolean {
  if (typeof v === "string") return true;
  return Array.isArray(v) && v.every((p) => p && typeof p === "object" && (p as { type?: unknown }).type === "text" && typeof (p as { text?: unknown }).text === "string");
}

/**
 * Converts an OpenAI chat body that passed the route schema (src/contracts/text.ts: types, roles,
 * content shapes, tools, ranges) and checks the rules that depend on the role.
 * @throws AppError 400 `invalid_request` naming the field.
 */
export function parseOpenAIChat(body: ChatCompletionRequest): ChatInput & { stream: boolean; includeUsage: boolean } {
  const bad = (msg: string, param: string) => errors.invalidRequest(msg, param);
  const messages: ChatMessage[] = (body.messages as Record<string, unknown>[]).map((msg, i: number) => {
    const content = msg.content ?? null;
    if (msg.role === "assistant") {
      return { role: "assistant", content, ...(msg.tool_calls ? { tool_calls: msg.tool_calls } : {}) } as ChatMessage;
    }
    if (!isContent(content)) throw bad(`messages[${i}].content must be a string or text parts.`, `messages[${i}].content`);
    if (msg.role === "tool") {
      if (typeof msg.tool_call_id !== "string") throw bad(`messages[${i}].tool_call_id is required.`, `messages[${i}].tool_call_id`);
      return { role: "tool", content, tool_call_id: msg.tool_call_id } as ChatMessage;
    }
    return { role: msg.role, content } as ChatMessage;
  });
  const tools = (body.tools ?? []) as ToolDefinition[];
  const rawMax = body.max_tokens ?? body.max_completion_tokens;
  const temperature = body.temperature ?? null;
  const so = body.stream_options as { include_usage?: unknown } | undefined;
  return {
    model: body.model as string,
    messages,
    tools,
    toolChoice: body.tool_choice ?? null,
    maxTokens: (rawMax as number | undefined) ?? null,
    temperature: temperature as number | null,
    stream: body.stream === true,
    includeUsage: so?.include_usage === true,
  };
}
