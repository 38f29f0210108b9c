/**
 * `POST /v1/chat/completions` in the OpenAI chat-completions format (D23): messages, tools and function
 * calls, `max_tokens` forwarded unchanged (default 4096), `stream: true` as server-sent events with a
 * final usage chunk (`stream_options.include_usage`), `usage.prompt_tokens_details.cached_tokens`.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { newId } from "../../ids.ts";
import type { TextModel } from "../../catalog/text-models.ts";
import type { Services } from "../../services.ts";
import { runChat, startChatStream } from "../../text/chat.ts";
import { parseOpenAIChat } from "../../text/openai-chat.ts";
import type { ChatResult } from "../../upstreams/chat-types.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { paidCallOf } from "../call-context.ts";
import { setCostHeaders } from "../cost-headers.ts";
import { createChatCompletionSchema } from "../schemas/text.ts";
import type { App } from "../types.ts";

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
  setCostHeaders(reply, { model, fallbackLayer });
  reply.hijack();
  reply.raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    ...(reply.getHeaders() as Record<string, string>),
  });
}

/**
 * The caller's limits (the call guard, which also counts the tokens), tier and paid-call context as the
 * chat service needs them (shared with `/v1/messages`).
 */
export function chatOptions(services: Services, req: FastifyRequest) {
  return { ...paidCallOf(services, req), tier: principalOf(req).limits.tier };
}

/** The chat service's dependencies for the caller: a test-mode key's plans use the simulator only (D32). */
export function chatDeps(services: Services, req: FastifyRequest) {
  const testMode = principalOf(req).mode === "test";
  return { db: services.db.kysely, paidCalls: services.paidCalls, planFor: (m: TextModel) => services.chatPlanFor(m, { testMode }) };
}

export function chatRoutes(app: App, services: Services): void {
  app.post("/v1/chat/completions", { schema: createChatCompletionSchema, config: MODEL_CALL }, async (req, reply) => {
    const deps = chatDeps(services, req);
    const input = parseOpenAIChat(req.body);
    const p = principalOf(req);
    const opts = chatOptions(services, req);
    const id = `chatcmpl-${newId("c").slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    if (!input.stream) {
      const out = await runChat(deps, p.accountId, input, opts);
      const r = out.result;
      return setCostHeaders(reply, out).send({
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
