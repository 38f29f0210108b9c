/**
 * The chat adapter interface and the gateway's internal chat representation (issue "Text and audio
 * understanding"): the OpenAI chat-completions shape, which the OpenAI-compatible upstreams speak natively
 * and which `/v1/messages` (Anthropic format) is converted to and from. It lives with the other adapter
 * interfaces (docs/architecture.md "upstreams/"), so adapters never import the text services. Adapters know nothing
 * about money.
 */
import type { SimulateMode } from "./types.ts";

/** A text part of a message (images and audio parts are not supported by the text side yet). */
export interface TextPart {
  type: "text";
  text: string;
}

/** A function call the assistant asks for. `arguments` is JSON text. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** One chat message. */
export type ChatMessage =
  | { role: "system" | "developer"; content: string | TextPart[] }
  | { role: "user"; content: string | TextPart[] }
  | { role: "assistant"; content: string | TextPart[] | null; tool_calls?: ToolCall[] }
  | { role: "tool"; content: string | TextPart[]; tool_call_id: string };

/** A function the model may call. `parameters` is a JSON schema. */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** A validated chat request as an adapter sees it. */
export interface ChatRequest {
  /** The upstream's model name (the catalog maps our id to it). */
  upstreamModel: string;
  /** Our catalog id (for simulators and logs). */
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  /** `auto`, `none`, `required` or a named function; null when not given. */
  toolChoice: unknown;
  /** Output cap forwarded unchanged (default 4096). */
  maxTokens: number;
  temperature: number | null;
  /** Identifies the caller for prompt caching (cache entries never cross accounts). */
  cacheScope: string;
  simulate: SimulateMode | null;
}

/** Token usage of one call. `promptTokens` includes `cachedTokens`. */
export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

/** A complete answer. */
export interface ChatResult {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: "stop" | "length" | "tool_calls";
  usage: ChatUsage;
}

/** A piece of a streamed answer; the last piece carries `usage` and `finishReason`. */
export interface ChatDelta {
  content?: string;
  toolCalls?: ToolCall[];
  finishReason?: ChatResult["finishReason"];
  usage?: ChatUsage;
}

/** Chat by one upstream. Throws `UpstreamError` on failure; honours `signal`. */
export interface ChatAdapter {
  chat(req: ChatRequest, signal?: AbortSignal): Promise<ChatResult>;
  /** Streams the answer; the returned iterable ends after the piece with `usage`. */
  chatStream(req: ChatRequest, signal?: AbortSignal): AsyncIterable<ChatDelta>;
}
