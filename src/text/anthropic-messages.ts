/**
 * The Anthropic messages request format (D23): its body, as the route schema admitted it, read into the
 * chat service's input (`system`, content blocks: text, tool_use, tool_result; tools with `input_schema`).
 */
import type { MessagesRequest } from "../contracts/text.ts";
import { errors } from "../errors.ts";
import type { ChatMessage, TextPart, ToolCall, ToolDefinition } from "../upstreams/chat-types.ts";
import type { ChatInput } from "./chat.ts";

type Block = { type?: unknown; text?: unknown; id?: unknown; name?: unknown; input?: unknown; tool_use_id?: unknown; content?: unknown };

function textOf(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((b: Block) => {
        if (b?.type === "text" && typeof b.text === "string") return b.text;
        throw errors.invalidRequest(`${param} may only hold text blocks here.`, param);
      })
      .join("");
  }
  throw errors.invalidRequest(`${param} must be a string or an array of content blocks.`, param);
}

/**
 * Converts an Anthropic messages body that passed the route schema (src/contracts/text.ts: types,
 * roles, ranges) to the internal shape, checking the blocks each role may send.
 * @throws AppError 400 `invalid_request`.
 */
export function parseAnthropicMessages(body: MessagesRequest): ChatInput & { stream: boolean } {
  const bad = (msg: string, param: string) => errors.invalidRequest(msg, param);
  const messages: ChatMessage[] = [];
  if (body.system !== undefined && body.system !== null) messages.push({ role: "system", content: textOf(body.system, "system") });
  (body.messages as { role: "user" | "assistant"; content?: unknown }[]).forEach((msg, i: number) => {
    const param = `messages[${i}]`;
    if (typeof msg.content === "string") {
      messages.push({ role: msg.role, content: msg.content });
      return;
    }
    const texts: TextPart[] = [];
    const calls: ToolCall[] = [];
    for (const b of msg.content as Block[]) {
      if (b?.type === "text" && typeof b.text === "string") texts.push({ type: "text", text: b.text });
      else if (b?.type === "tool_use" && msg.role === "assistant" && typeof b.id === "string" && typeof b.name === "string") {
        calls.push({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
      } else if (b?.type === "tool_result" && msg.role === "user" && typeof b.tool_use_id === "string") {
        messages.push({ role: "tool", tool_call_id: b.tool_use_id, content: b.content === undefined ? "" : textOf(b.content, `${param}.content`) });
      } else {
        throw bad(`${param}.content has an unsupported block.`, `${param}.content`);
      }
    }
    if (msg.role === "assistant") messages.push({ role: "assistant", content: texts.length ? texts : null, ...(calls.length ? { tool_calls: calls } : {}) });
    else if (texts.length) messages.push({ role: "user", content: texts });
  });
  let tools: ToolDefinition[] = [];
  if (Array.isArray(body.tools)) {
    tools = body.tools.map((t: unknown) => {
      const tool = t as { name: string; description?: unknown; input_schema?: unknown };
      return {
        type: "function",
        function: {
          name: tool.name,
          ...(typeof tool.description === "string" ? { description: tool.description } : {}),
          ...(tool.input_schema && typeof tool.input_schema === "object" ? { parameters: tool.input_schema as Record<string, unknown> } : {}),
        },
      };
    });
  }
  const tc = body.tool_choice as { type?: unknown; name?: unknown } | undefined;
  let toolChoice: unknown = null;
  if (tc?.type === "any") toolChoice = "required";
  else if (tc?.type === "none") toolChoice = "none";
  else if (tc?.type === "tool" && typeof tc.name === "string") toolChoice = { type: "function", function: { name: tc.name } };
  else if (tc?.type === "auto") toolChoice = "auto";
  const max = body.max_tokens;
  const temperature = body.temperature ?? null;
  return {
    model: body.model as string,
    messages,
    tools,
    toolChoice,
    maxTokens: (max as number | undefined) ?? null,
    temperature: temperature as number | null,
    stream: body.stream === true,
  };
}
