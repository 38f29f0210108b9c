/**
 * `POST /v1/chat/completions` in the OpenAI chat-completions format (D23): messages, tools and function
 * calls, `max_tokens` forwarded unchanged (default 4096), `stream: true` as server-sent events with a
 * final usage chunk (`stream_options.include_usage`), `usage.prompt_tokens_details.cached_tokens`.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { formatUsd } from "../../billing/money.ts";
import { errors } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { Services } from "../../services.ts";
import { type ChatInput, runChat, startChatStream } from "../../text/chat.ts";
import type { ChatMessage, ChatResult, ToolDefinition } from "../../text/types.ts";
import type { App } from "../app.ts";
import { guardOf, principalOf } from "../auth.ts";
import { createChatCompletionSchema } from "../schemas/text.ts";
import { simulateHeader } from "./speech.ts";

const ROLES = ["system", "developer", "user", "assistant", "tool"];

function isContent(v: unknown): boolean {
  if (typeof v === "string") return true;
  return Array.isArray(v) && v.every((p) => p && typeof p === "object" && (p as { type?: unknown }).type === "text" && typeof (p as { text?: unknown }).text === "string");
}

/** Checks and converts an OpenAI chat body. @throws AppError 400 `invalid_request` naming the field. */
export function parseOpenAIChat(body: Record<string, unknown>): ChatInput & { stream: boolean; includeUsage: boolean } {
  const bad = (msg: string, param: string) => errors.invalidRequest(msg, param);
  if (typeof body.model !== "string" || body.model === "") throw bad("model is required.", "model");
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw bad("messages must be a non-empty array.", "messages");
  const messages: ChatMessage[] = body.messages.map((m: unknown, i: number) => {
    const msg = m as Record<string, unknown>;
    if (!msg || typeof msg !== "object" || !ROLES.includes(msg.role as string)) {
      throw bad(`messages[${i}].role must be one of ${ROLES.join(", ")}.`, `messages[${i}].role`);
    }
    const content = msg.content ?? null;
    if (msg.role === "assistant") {
      if (content !== null && !isContent(content)) throw bad(`messages[${i}].content must be a string or text parts.`, `messages[${i}].content`);
      if (msg.tool_calls !== undefined && !Array.isArray(msg.tool_calls)) throw bad(`messages[${i}].tool_calls must be an array.`, `messages[${i}].tool_calls`);
      return { role: "assistant", content, ...(msg.tool_calls ? { tool_calls: msg.tool_calls } : {}) } as ChatMessage;
    }
    if (!isContent(content)) throw bad(`messages[${i}].content must be a string or text parts.`, `messages[${i}].content`);
    if (msg.role === "tool") {
      if (typeof msg.tool_call_id !== "string") throw bad(`messages[${i}].tool_call_id is required.`, `messages[${i}].tool_call_id`);
      return { role: "tool", content, tool_call_id: msg.tool_call_id } as ChatMessage;
    }
    return { role: msg.role, content } as ChatMessage;
  });
  let tools: ToolDefinition[] = [];
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw bad("tools must be an array.", "tools");
    tools = body.tools.map((t: unknown, i: number) => {
      const tool = t as { type?: unknown; function?: { name?: unknown } };
      if (!tool || tool.type !== "function" || typeof tool.function?.name !== "string") {
        throw bad(`tools[${i}] must be {type: "function", function: {name, ...}}.`, `tools[${i}]`);
      }
      return t as ToolDefinition;
    });
  }
  const rawMax = body.max_tokens ?? body.max_completion_tokens;
  if (rawMax !== undefined && rawMax !== null && (typeof rawMax !== "number" || !Number.isInteger(rawMax) || rawMax < 1)) {
    throw bad("max_tokens must be a positive integer.", "max_tokens");
  }
  const temperature = body.temperature ?? null;
  if (temperature !== null && (typeof temperature !== "number" || temperature < 0 || temperature > 2)) {
    throw bad("temperature must be a number from 0 to 2.", "temperature");
  }
  if (body.stream !== undefined && typeof body.stream !== "boolean") throw bad("stream must be a boolean.", "stream");
  const so = body.stream_options as { include_usage?: unknown } | undefined;
  return {
    model: body.model,
    messages,
    tools,
    toolChoice: body.tool_choice ?? null,
    maxTokens: (rawMax as number | undefined) ?? null,
    temperature: temperature as number | null,
    stream: body.stream === true,
    includeUsage: so?.include_usage === true,
  };
}

function usageJson(u: ChatResult["usage"]) {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
  };
}

/**
 * Takes the answer over from Fastify and starts a server-sent-events stream (200), carrying the headers
 * already set on `reply` (rate limits, fallback) and `X-Svc-Model`. The caller writes and ends it.
 */
export function openEventStream(reply: FastifyReply, model: string, fallbackLayer: number): void {
  fallbackHeaders(reply, fallbackLayer);
  reply.hijack();
  reply.raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-svc-model": model,
    ...(reply.getHeaders() as Record<string, string>),
  });
}

/** Sets the fallback headers (spec "Rate limiting and credits": fallback). */
export function fallbackHeaders(reply: FastifyReply, layer: number): void {
  if (layer > 0) reply.header("x-svc-fallback", "true").header("x-svc-fallback-layer", String(layer));
}

/** The caller's limits and tier as the chat service needs them (shared with `/v1/messages`). */
export function chatOptions(services: Services, req: FastifyRequest) {
  const p = principalOf(req);
  return {
    guard: guardOf(services, req),
    tokens: (n: number) => services.limiter.tokens(p.accountId, p.limits, n),
    simulate: simulateHeader(req.headers["x-svc-simulate"]),
    tier: p.limits.tier,
  };
}

export function chatRoutes(app: App, services: Services): void {
  const deps = { db: services.db.kysely, routesFor: services.chatRoutesFor };
  app.post("/v1/chat/completions", { schema: createChatCompletionSchema }, async (req, reply) => {
    const input = parseOpenAIChat((req.body ?? {}) as Record<string, unknown>);
    const p = principalOf(req);
    const opts = chatOptions(services, req);
    const id = `chatcmpl-${newId("c").slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    if (!input.stream) {
      const out = await runChat(deps, p.accountId, input, opts);
      fallbackHeaders(reply, out.fallbackLayer);
      const r = out.result;
      return reply
        .header("x-svc-model", out.model)
        .header("x-svc-cost-usd", formatUsd(out.costMicros))
        .header("x-svc-balance-usd", formatUsd(out.balanceMicros))
        .send({
          id,
          object: "chat.completion",
          created,
          model: out.model,
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: r.content,
                ...(r.toolCalls.length > 0 ? { tool_calls: r.toolCalls } : {}),
                refusal: null,
              },
              logprobs: null,
              finish_reason: r.finishReason,
            },
          ],
          usage: usageJson(r.usage),
        });
    }

    const stream = await startChatStream(deps, p.accountId, input, opts);
    // From here the answer is written by hand as server-sent events.
    openEventStream(reply, stream.model, stream.fallbackLayer);
    const send = (obj: unknown) => reply.raw.write(`data: ${JSON.stringify(obj)}\n\n`);
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      send({ id, object: "chat.completion.chunk", created, model: stream.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    chunk({ role: "assistant", content: "" }, null);
    let usage: ChatResult["usage"] | null = null;
    try {
      for await (const d of stream.deltas) {
        if (d.content) chunk({ content: d.content }, null);
        if (d.toolCalls?.length) {
          chunk({ tool_calls: d.toolCalls.map((t, index) => ({ index, id: t.id, type: "function", function: t.function })) }, null);
        }
        if (d.usage) usage = d.usage;
        if (d.finishReason) chunk({}, d.finishReason);
      }
      if (input.includeUsage && usage) {
        send({ id, object: "chat.completion.chunk", created, model: stream.model, choices: [], usage: usageJson(usage) });
      }
      reply.raw.write("data: [DONE]\n\n");
    } catch {
      send({ error: { code: "provider_error", message: "The upstream broke off; nothing was charged.", type: "provider_error", param: null } });
    }
    reply.raw.end();
    return reply;
  });
}
