/**
 * `POST /v1/messages` in the Anthropic messages format (D23): `system`, content blocks (text, tool_use,
 * tool_result), tools with `input_schema`, `stream: true` with the format's event types (each `event:`
 * name equals its `data.type`), usage with `cache_read_input_tokens` (excluded from `input_tokens`).
 * The key may come as `Authorization: Bearer` or `x-api-key`.
 */
import { newId } from "../../ids.ts";
import type { Services } from "../../services.ts";
import { parseAnthropicMessages } from "../../text/anthropic-messages.ts";
import { runChat, startChatStream } from "../../text/chat.ts";
import type { ChatResult } from "../../upstreams/chat-types.ts";
import type { App } from "../types.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { setCostHeaders } from "../cost-headers.ts";
import { createMessageSchema } from "../schemas/text.ts";
import { chatDeps, chatOptions, openEventStream } from "./chat.ts";

const STOP: Record<ChatResult["finishReason"], string> = { stop: "end_turn", length: "max_tokens", tool_calls: "tool_use" };

function usageJson(u: ChatResult["usage"]) {
  return {
    input_tokens: u.promptTokens - u.cachedTokens,
    output_tokens: u.completionTokens,
    cache_read_input_tokens: u.cachedTokens,
    cache_creation_input_tokens: 0,
  };
}

function toolInput(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}

export function messagesRoutes(app: App, services: Services): void {
  app.post("/v1/messages", { schema: createMessageSchema, config: MODEL_CALL }, async (req, reply) => {
    const deps = chatDeps(services, req);
    const input = parseAnthropicMessages(req.body);
    const p = principalOf(req);
    const opts = chatOptions(services, req);
    const id = `msg_${newId("m").slice(2)}`;
    if (!input.stream) {
      const out = await runChat(deps, p.accountId, input, opts);
      const r = out.result;
      const content: unknown[] = [];
      if (r.content) content.push({ type: "text", text: r.content });
      for (const t of r.toolCalls) content.push({ type: "tool_use", id: t.id, name: t.function.name, input: toolInput(t.function.arguments) });
      return setCostHeaders(reply, out).send({ id, type: "message", role: "assistant", model: out.model, content, stop_reason: STOP[r.finishReason], stop_sequence: null, usage: usageJson(r.usage) });
    }

    const stream = await startChatStream(deps, p.accountId, input, opts);
    openEventStream(reply, stream.model, stream.fallbackLayer);
    const event = (data: { type: string } & Record<string, unknown>) => reply.raw.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
    event({
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: stream.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: stream.inputTokens, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      },
    });
    let index = -1;
    let textOpen = false;
    let finish: ChatResult["finishReason"] = "stop";
    let usage: ChatResult["usage"] | null = null;
    try {
      for await (const d of stream.deltas) {
        if (d.content) {
          if (!textOpen) {
            index++;
            textOpen = true;
            event({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
          }
          event({ type: "content_block_delta", index, delta: { type: "text_delta", text: d.content } });
        }
        for (const t of d.toolCalls ?? []) {
          if (textOpen) {
            event({ type: "content_block_stop", index });
            textOpen = false;
          }
          index++;
          event({ type: "content_block_start", index, content_block: { type: "tool_use", id: t.id, name: t.function.name, input: {} } });
          event({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: t.function.arguments } });
          event({ type: "content_block_stop", index });
        }
        if (d.finishReason) finish = d.finishReason;
        if (d.usage) usage = d.usage;
      }
      if (textOpen) event({ type: "content_block_stop", index });
      const u = usage ?? { promptTokens: stream.inputTokens, completionTokens: 0, cachedTokens: 0 };
      event({ type: "message_delta", delta: { stop_reason: STOP[finish], stop_sequence: null }, usage: usageJson(u) });
      event({ type: "message_stop" });
    } catch {
      event({ type: "error", error: { type: "api_error", message: "The upstream broke off; nothing was charged." } });
    }
    reply.raw.end();
    return reply;
  });
}
