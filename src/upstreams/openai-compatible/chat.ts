/**
 * Chat completions at an OpenAI-compatible upstream (`POST {baseUrl}/chat/completions`), as a
 * {@link ChatAdapter}. The internal chat shapes are the OpenAI ones (src/upstreams/chat-types.ts), so requests are
 * forwarded almost verbatim; answers are validated field by field (parsed as `unknown`, never trusted).
 *
 * Leniencies, because "OpenAI-compatible" servers differ in small ways:
 * - `finish_reason` `function_call` counts as `tool_calls`; `content_filter`, null or unknown as `stop`;
 *   an answer that carries tool calls but says `stop` is reported as `tool_calls` (clients key on it);
 * - tool-call `arguments` sent as a JSON object instead of JSON text are serialised; a missing call id
 *   is replaced by `call_<index>`;
 * - in a stream, a tool-call delta without `index` is placed by its position in the chunk, and a repeated
 *   `id` or `name` is ignored (only `arguments` are concatenated);
 * - a stream that ends without `data: [DONE]` is accepted once a `finish_reason` was seen.
 *
 * Errors: see api.ts (every failure is an `UpstreamError`; the caller's abort rethrows its reason).
 */
import type { ChatAdapter, ChatDelta, ChatRequest, ChatResult, ChatUsage, ToolCall } from "../chat-types.ts";
import { createOpenAICompatibleApi, ENDPOINTS, errorMessageOf, OpenAICompatibleError, postForJson } from "./api.ts";
import { isRecord } from "../util.ts";
import type { OpenAICompatibleApi, OpenAICompatibleConfig, OkResponse } from "./api.ts";

/** A chat adapter for one OpenAI-compatible source; `close()` releases its pooled connections. */
export interface OpenAICompatibleChat extends ChatAdapter {
  /** The source's name from the config. */
  readonly name: string;
  close(): Promise<void>;
}

/**
 * Creates the chat adapter of one OpenAI-compatible upstream.
 *
 * - `chat` sends `stream: false` and resolves with the whole answer. `usage` is required in a
 *   non-streaming answer: one without it is a malformed answer (retryable `UpstreamError`), because the
 *   call could not be billed.
 * - `chatStream` sends `stream: true` with `stream_options: {include_usage: true}` and yields a delta per
 *   piece of content (empty pieces are skipped, so the first delta is real output). Tool calls are
 *   assembled from their fragments and yielded complete, together with `finishReason` and `usage`, in
 *   the last delta. If the upstream sent no usage chunk, that last delta has `usage: undefined` and
 *   THE CALLER MUST ESTIMATE the token counts. The request is only sent when iteration starts.
 *
 * `config.timeoutMs` bounds each whole call (for a stream: until its last chunk).
 *
 * @throws RangeError (synchronously) for a bad `timeoutMs` or `baseUrl`.
 */
export function createOpenAICompatibleChat(config: OpenAICompatibleConfig): OpenAICompatibleChat {
  const api = createOpenAICompatibleApi(config);
  return {
    name: config.name,
    chat: (req, signal) => chat(api, req, signal),
    chatStream: (req, signal) => chatStream(api, req, signal),
    close: () => api.close(),
  };
}

/** The JSON body of a chat-completions call. */
export function chatRequestBody(req: ChatRequest, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: req.upstreamModel,
    messages: req.messages,
  };
  if (req.tools.length > 0) body.tools = req.tools;
  if (req.toolChoice !== null && req.toolChoice !== undefined) body.tool_choice = req.toolChoice;
  body.max_tokens = req.maxTokens;
  if (req.temperature !== null) body.temperature = req.temperature;
  body.stream = stream;
  if (stream) body.stream_options = { include_usage: true };
  return body;
}

async function chat(api: OpenAICompatibleApi, req: ChatRequest, signal: AbortSignal | undefined): Promise<ChatResult> {
  const call = api.callSignal(signal);
  return parseCompletion(api, await postForJson(api, ENDPOINTS.chatCompletions, chatRequestBody(req, false), call));
}

/** Validates a non-streaming answer (`{"choices": [{"message", "finish_reason"}], "usage"}`). */
function parseCompletion(api: OpenAICompatibleApi, value: unknown): ChatResult {
  const upstreamError = errorMessageOf(value);
  if (upstreamError !== null) throw api.malformed(`error in a 2xx answer: ${upstreamError}`);
  if (!isRecord(value) || !Array.isArray(value.choices) || value.choices.length === 0) {
    throw api.malformed("no choices");
  }
  const choice: unknown = value.choices[0];
  if (!isRecord(choice) || !isRecord(choice.message)) throw api.malformed("choice without a message");
  const message = choice.message;
  const content = parseContent(api, message.content);
  let toolCalls: ToolCall[] = [];
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) throw api.malformed("tool_calls is not an array");
    toolCalls = message.tool_calls.map((raw: unknown, index) => parseToolCall(api, raw, index));
  }
  const usage = parseUsage(api, value.usage);
  if (usage === null) throw api.malformed("no usage");
  return { content, toolCalls, finishReason: mapFinishReason(choice.finish_reason, toolCalls.length > 0), usage };
}

function parseContent(api: OpenAICompatibleApi, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === "string") return value;
  // A few servers answer with content parts; only text parts exist on the text side.
  if (Array.isArray(value)) {
    let text = "";
    for (const part of value as unknown[]) {
      if (isRecord(part) && part.type === "text" && typeof part.text === "string") text += part.text;
      else throw api.malformed("content part that is not text");
    }
    return text;
  }
  throw api.malformed("content is not a string");
}

function parseToolCall(api: OpenAICompatibleApi, raw: unknown, index: number): ToolCall {
  if (!isRecord(raw) || !isRecord(raw.function) || typeof raw.function.name !== "string") {
    throw api.malformed("tool call without a function name");
  }
  if (raw.type !== undefined && raw.type !== "function") throw api.malformed("tool call of a type other than function");
  return {
    id: typeof raw.id === "string" && raw.id !== "" ? raw.id : `call_${index}`,
    type: "function",
    function: { name: raw.function.name, arguments: argumentsText(api, raw.function.arguments) },
  };
}

function argumentsText(api: OpenAICompatibleApi, value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (isRecord(value)) return JSON.stringify(value);
  throw api.malformed("tool call arguments are neither text nor an object");
}

/**
 * `usage` of an answer or of the last stream chunk, or null when absent. `prompt_tokens` includes the
 * cached tokens (`prompt_tokens_details.cached_tokens`, 0 when not reported).
 */
function parseUsage(api: OpenAICompatibleApi, value: unknown): ChatUsage | null {
  if (value === undefined || value === null) return null;
  if (!isRecord(value)) throw api.malformed("usage is not an object");
  const promptTokens = value.prompt_tokens;
  const completionTokens = value.completion_tokens;
  if (!isCount(promptTokens) || !isCount(completionTokens)) throw api.malformed("usage without token counts");
  let cachedTokens = 0;
  const details = value.prompt_tokens_details;
  if (isRecord(details) && details.cached_tokens !== undefined && details.cached_tokens !== null) {
    if (!isCount(details.cached_tokens)) throw api.malformed("cached_tokens is not a count");
    cachedTokens = Math.min(details.cached_tokens, promptTokens);
  }
  return { promptTokens, completionTokens, cachedTokens };
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function mapFinishReason(value: unknown, hasToolCalls: boolean): ChatResult["finishReason"] {
  if (value === "length") return "length";
  if (value === "tool_calls" || value === "function_call" || hasToolCalls) return "tool_calls";
  return "stop";
}

/** A tool call being assembled from stream fragments. */
interface PartialToolCall {
  id: string | null;
  name: string | null;
  arguments: string;
}

async function* chatStream(
  api: OpenAICompatibleApi,
  req: ChatRequest,
  signal: AbortSignal | undefined,
): AsyncGenerator<ChatDelta, void, undefined> {
  const call = api.callSignal(signal);
  const res = await api.post(ENDPOINTS.chatCompletions, chatRequestBody(req, true), call);
  const contentType = headerValue(res, "content-type") ?? "";
  if (contentType.includes("application/json")) {
    // A 2xx JSON answer to a stream request: an error object, or a server that ignores `stream`.
    dropBody(res);
    throw api.malformed("expected text/event-stream, got JSON");
  }

  const toolCalls = new Map<number, PartialToolCall>();
  let finishReason: unknown = undefined;
  let sawFinish = false;
  let usage: ChatUsage | null = null;
  let done = false;
  try {
    for await (const data of sseData(res.body)) {
      if (data === "[DONE]") {
        done = true;
        break;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw api.malformed("a stream chunk is not JSON");
      }
      const upstreamError = errorMessageOf(chunk);
      if (upstreamError !== null) throw api.malformed(`error in the stream: ${upstreamError}`);
      if (!isRecord(chunk)) throw api.malformed("a stream chunk is not an object");
      const chunkUsage = parseUsage(api, chunk.usage);
      if (chunkUsage !== null) usage = chunkUsage;
      if (chunk.choices === undefined || chunk.choices === null) continue;
      if (!Array.isArray(chunk.choices)) throw api.malformed("choices is not an array");
      const choice: unknown = chunk.choices[0];
      if (choice === undefined) continue; // the usage chunk has `choices: []`
      if (!isRecord(choice)) throw api.malformed("a choice is not an object");
      if (isRecord(choice.delta)) {
        const content = choice.delta.content;
        if (typeof content === "string") {
          if (content !== "") yield { content };
        } else if (content !== undefined && content !== null) {
          throw api.malformed("delta content is not a string");
        }
        if (choice.delta.tool_calls !== undefined && choice.delta.tool_calls !== null) {
          if (!Array.isArray(choice.delta.tool_calls)) throw api.malformed("delta tool_calls is not an array");
          addToolCallFragments(api, toolCalls, choice.delta.tool_calls);
        }
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
        finishReason = choice.finish_reason;
        sawFinish = true;
      }
    }
  } catch (err) {
    throw api.failure(err, call);
  }
  if (!done && !sawFinish) {
    throw new OpenAICompatibleError(`${api.name}: the stream ended before the answer was complete`, true, "network");
  }
  const calls = assembleToolCalls(api, toolCalls);
  const last: ChatDelta = { finishReason: mapFinishReason(finishReason, calls.length > 0) };
  if (calls.length > 0) last.toolCalls = calls;
  // Without a usage chunk the caller estimates the counts (documented on createOpenAICompatibleChat).
  if (usage !== null) last.usage = usage;
  yield last;
}

function addToolCallFragments(api: OpenAICompatibleApi, calls: Map<number, PartialToolCall>, fragments: unknown[]): void {
  fragments.forEach((fragment: unknown, position) => {
    if (!isRecord(fragment)) throw api.malformed("a tool call fragment is not an object");
    const index = isCount(fragment.index) ? fragment.index : position;
    let call = calls.get(index);
    if (call === undefined) {
      call = { id: null, name: null, arguments: "" };
      calls.set(index, call);
    }
    if (typeof fragment.id === "string" && fragment.id !== "" && call.id === null) call.id = fragment.id;
    const fn = fragment.function;
    if (fn === undefined || fn === null) return;
    if (!isRecord(fn)) throw api.malformed("a tool call fragment's function is not an object");
    if (typeof fn.name === "string" && fn.name !== "" && call.name === null) call.name = fn.name;
    if (typeof fn.arguments === "string") call.arguments += fn.arguments;
    else if (isRecord(fn.arguments)) call.arguments += JSON.stringify(fn.arguments);
  });
}

function assembleToolCalls(api: OpenAICompatibleApi, calls: Map<number, PartialToolCall>): ToolCall[] {
  return [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, call]) => {
      if (call.name === null) throw api.malformed("a streamed tool call has no function name");
      return {
        id: call.id ?? `call_${index}`,
        type: "function" as const,
        function: { name: call.name, arguments: call.arguments },
      };
    });
}

/**
 * The `data` of each server-sent event of `body` (WHATWG event-stream rules: lines end with CRLF, LF or
 * CR; `data:` lines of one event are joined with LF; comments and other fields are ignored; an event is
 * dispatched at a blank line, and an unterminated one at the end is dropped).
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const lf = buffer.indexOf("\n", start);
      const cr = buffer.indexOf("\r", start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
        if (cr === buffer.length - 1) break;
        end = cr;
        next = buffer[cr + 1] === "\n" ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      const line = buffer.slice(start, end);
      start = next;
      if (line === "") {
        if (data.length > 0) yield data.join("\n");
        data = [];
      } else if (line.startsWith("data:")) {
        data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
      }
    }
    buffer = buffer.slice(start);
  }
}

function headerValue(res: OkResponse, name: string): string | null {
  const value = res.headers[name];
  if (value === undefined) return null;
  return Array.isArray(value) ? (value[0] ?? null) : value;
}

function dropBody(res: OkResponse): void {
  res.body.on("error", () => {});
  res.body.destroy();
}
