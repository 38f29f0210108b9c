/**
 * Chat billing and limits shared by `POST /v1/chat/completions` (OpenAI format) and `POST /v1/messages`
 * (Anthropic format): resolve the model (aliases), count input tokens, check the token limits of the
 * tier (TPM, `max_single_request`), hold `input + max_tokens` at the model's prices, call the upstream
 * (with fallback), then capture the actual usage (cached input at 10 %) and release the rest.
 * Any failure after the hold releases it (docs/architecture.md invariant 4).
 */
import type { Executor } from "../billing/ledger.ts";
import type { HoldRequest, OnInsufficient, PaidCalls } from "../billing/paid-call.ts";
import { formatUsd, type Micros } from "../money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import { checkNotRetired } from "../catalog/lifecycle.ts";
import { getTextModel, quoteTextCall, type TextModel } from "../catalog/text-models.ts";
import { AppError, errors } from "../errors.ts";
import type { CallGuard } from "../limits/limiter.ts";
import { observeUpstream } from "../metrics.ts";
import { annotateSpan, type AttemptInfo, errorTypeOf, inAttemptSpan, inOpenAttemptSpan, tokenUsage, type TraceSpan } from "../observability/tracing.ts";
import { modelNotFoundMessage } from "../upstreams/sync-failover.ts";
import { type SimulateMode, UpstreamError } from "../upstreams/types.ts";
import { countMessageTokens } from "../upstreams/tokens.ts";
import { type FallbackLayer, type FallbackStep, runWithFallback, streamWithFallback } from "./fallback.ts";
import { SIMULATOR_SOURCE } from "./chat-plans.ts";
import type { ChatDelta, ChatMessage, ChatRequest, ChatResult, ChatUsage, ToolDefinition } from "../upstreams/chat-types.ts";

/** Default output cap when the caller gives none (spec: 4096; no cap of ours otherwise). */
export const DEFAULT_MAX_TOKENS = 4096;

/** What the chat service needs. */
export interface ChatDeps {
  db: Executor;
  paidCalls: PaidCalls;
  /** The fallback plan of `model` (src/text/fallback.ts `buildFallbackPlan`), the primary step first. */
  planFor(model: TextModel): FallbackStep[];
}

/** A request already converted to the internal shape (by the OpenAI or Anthropic route). */
export interface ChatInput {
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  toolChoice: unknown;
  maxTokens: number | null;
  temperature: number | null;
}

/** A model error of the text side (`invalid_model`). */
export function unknownModel(model: string): AppError {
  return new AppError(400, "invalid_model", `'${model}' is not a text model.`, "model");
}

/** A checked call, ready to hold: the resolved model, the hold and the request without its upstream name. */
interface Prepared {
  model: TextModel;
  request: Omit<ChatRequest, "upstreamModel">;
  hold: HoldRequest;
  onInsufficient: OnInsufficient;
  inputTokens: number;
}

const ALL_FAILED = "The upstream failed (and every fallback); nothing was charged.";

/**
 * The 502 when the plan ran out: names the model and the upstream id when the last source tried did not have
 * the upstream model (D35), else the generic {@link ALL_FAILED}.
 */
function allFailed(p: Prepared, err: unknown): AppError {
  if (err instanceof UpstreamError && err.modelNotFound) return errors.provider(`${modelNotFoundMessage(p.model.id, err)} Nothing was charged.`);
  return errors.provider(ALL_FAILED);
}

async function prepare(
  accountId: string,
  input: ChatInput,
  opts: { guard: CallGuard; simulate: SimulateMode | null; tier?: number; call?: CallContext },
): Promise<Prepared> {
  const model = getTextModel(input.model);
  if (!model) throw unknownModel(input.model);
  // D35: a model whose shutdown date has come answers 410 before any limit or hold.
  checkNotRetired(model.id);
  if (opts.tier !== undefined && model.tierMin > opts.tier) {
    throw new AppError(
      403,
      "model_not_available",
      `${model.id} is available from Tier ${model.tierMin}; this account is on Tier ${opts.tier}.`,
      "model",
    );
  }
  const maxTokens = input.maxTokens ?? DEFAULT_MAX_TOKENS;
  const inputTokens = countMessageTokens(input.messages, input.tools);
  // The allow-list, then the request, per-model and token windows (max_single_request first) in one
  // round trip to the limit store (issue 33).
  await opts.guard.model(model.id, { tokens: inputTokens + maxTokens });
  const holdMicros = Math.max(1, quoteTextCall(model, { inputTokens, cachedTokens: 0, outputTokens: maxTokens }));
  return {
    model,
    inputTokens,
    hold: { accountId, amountMicros: holdMicros, reference: model.id, usage: usageFor(opts.call, "chat") },
    onInsufficient: () =>
      errors.billing(
        `This request may cost up to ${formatUsd(holdMicros)} USD (${inputTokens} input tokens + max_tokens ${maxTokens}); the balance is too low.`,
      ),
    request: {
      model: model.id,
      messages: input.messages,
      tools: input.tools,
      toolChoice: input.toolChoice,
      maxTokens,
      temperature: input.temperature,
      cacheScope: accountId,
      simulate: opts.simulate,
    },
  };
}

/** The request of one fallback step: the step's model and its upstream name. */
function requestFor(p: Prepared, step: FallbackStep): ChatRequest {
  return { ...p.request, model: step.model, upstreamModel: step.upstreamModel };
}

/** The catalog model a step serves (an equivalent on layers 2 and 3). */
function modelOf(p: Prepared, step: FallbackStep): TextModel {
  return getTextModel(step.model) ?? p.model;
}

/** Each attempt of the plan in its CLIENT span (D40), when the call is traced. */
function attemptSpans(p: Prepared) {
  return <T>(step: FallbackStep, attempt: number, run: () => Promise<T>): Promise<T> => inAttemptSpan(() => chatAttempt(p, step, attempt), run);
}

/** The CLIENT span of one chat attempt (D40): the step's model at its source, and its place in the plan. */
function chatAttempt(p: Prepared, step: FallbackStep, attempt: number): AttemptInfo {
  return {
    operation: "chat",
    model: p.model.id,
    provider: step.source === SIMULATOR_SOURCE ? "simulator" : "openai",
    source: step.source === SIMULATOR_SOURCE ? null : step.source,
    attempt,
    fallbackLayer: step.layer,
    upstreamModel: step.upstreamModel,
    content: () => JSON.stringify(p.request.messages),
  };
}

/** The charge for the actual usage at the prices of the model that answered, micro-USD (capped at the hold by the capture). */
function usageCost(used: TextModel, usage: ChatUsage): Micros {
  return quoteTextCall(used, {
    // quoteTextCall's inputTokens include the cached ones, like promptTokens.
    inputTokens: usage.promptTokens,
    cachedTokens: Math.min(usage.cachedTokens, usage.promptTokens),
    outputTokens: usage.completionTokens,
  });
}

/** The usage units of a chat call (D29): the three token counts, input including the cached ones. */
function tokenUnits(usage: ChatUsage) {
  return { inputTokens: usage.promptTokens, outputTokens: usage.completionTokens, cachedTokens: Math.min(usage.cachedTokens, usage.promptTokens) };
}

/** A finished (non-streamed) chat call. Amounts in micro-USD. */
export interface ChatOutcome {
  result: ChatResult;
  /** The concrete catalog id that answered. */
  model: string;
  fallbackLayer: FallbackLayer;
  costMicros: Micros;
  balanceMicros: Micros;
}

/** The caller's limits, tier and signal (see {@link runChat}). */
export interface ChatOptions {
  /** The caller's limits: the model checks, with the tokens of the call (input + `max_tokens`). */
  guard: CallGuard;
  simulate: SimulateMode | null;
  signal?: AbortSignal;
  tier?: number;
  /** The request the usage record is written for (D29) and its mode (D32). */
  call?: CallContext;
}

/**
 * Runs a chat call under one hold, falling back across the plan's steps (D27: the ledger shows one hold,
 * then one charge or one release).
 * @throws AppError 400 `invalid_model`, 402 `billing_error`, 403 `model_not_available` (below the model's
 *   tier), 429 `rate_limited`, 502 `provider_error`.
 */
export async function runChat(deps: ChatDeps, accountId: string, input: ChatInput, opts: ChatOptions): Promise<ChatOutcome> {
  const p = await prepare(accountId, input, opts);
  return deps.paidCalls.withHold(deps.db, p.hold, { onInsufficient: p.onInsufficient }, async (hold) => {
    let won;
    try {
      won = await runWithFallback(
        deps.planFor(p.model),
        async (step) => {
          const result = await observeUpstream(step.model, () => step.adapter.chat(requestFor(p, step), opts.signal));
          annotateSpan(tokenUsage(result.usage));
          return result;
        },
        { signal: opts.signal, around: attemptSpans(p) },
      );
    } catch (err) {
      throw allFailed(p, err);
    }
    const used = modelOf(p, won.step);
    hold.note({ units: tokenUnits(won.result.usage), fallbackLayer: won.layer });
    const settled = await hold.capture(usageCost(used, won.result.usage));
    return {
      result: won.result,
      model: used.id,
      fallbackLayer: won.layer,
      costMicros: settled.chargedMicros,
      balanceMicros: settled.balanceAfterMicros,
    };
  });
}

/** A started stream: the model that answered, and the deltas (the first one already received). */
export interface ChatStream {
  model: string;
  /** Input tokens as counted before the call (the final usage may differ slightly). */
  inputTokens: number;
  fallbackLayer: FallbackLayer;
  /** Yields every delta; settles the money when it ends (charge on success, release on failure). */
  deltas: AsyncIterable<ChatDelta>;
  /** After the stream ended: what was charged and the balance, micro-USD. */
  settlement(): { costMicros: Micros; balanceMicros: Micros } | null;
}

/**
 * Starts a streamed chat call: falls back between the plan's steps until one yields its first delta,
 * then streams. The hold is captured with the final usage when the stream ends, or released if it
 * breaks off or the consumer stops early.
 * @throws AppError as {@link runChat} (before the first delta).
 */
export async function startChatStream(deps: ChatDeps, accountId: string, input: ChatInput, opts: ChatOptions): Promise<ChatStream> {
  const p = await prepare(accountId, input, opts);
  return deps.paidCalls.withHold(deps.db, p.hold, { onInsufficient: p.onInsufficient }, async (hold) => {
    let started;
    // A failed attempt's span ends with its failure; the one that yielded its first delta stays open until
    // its stream ends, and then carries the token usage the stream reported (D40).
    let streaming: TraceSpan | null = null;
    try {
      started = await streamWithFallback(deps.planFor(p.model), (step) => step.adapter.chatStream(requestFor(p, step), opts.signal), {
        signal: opts.signal,
        around: (step, attempt, run) => inOpenAttemptSpan(() => chatAttempt(p, step, attempt), run, (span) => (streaming = span)),
      });
    } catch (err) {
      throw allFailed(p, err);
    }
    const used = modelOf(p, started.step);
    let usage: ChatUsage | null = null;
    let settled: { costMicros: Micros; balanceMicros: Micros } | null = null;
    async function* noteUsage(deltas: AsyncIterable<ChatDelta>): AsyncGenerator<ChatDelta> {
      const span = streaming as TraceSpan | null;
      try {
        for await (const d of deltas) {
          if (d.usage) usage = d.usage;
          yield d;
        }
      } catch (err) {
        // The upstream broke off mid-stream: the attempt failed.
        span?.fail(errorTypeOf(err));
        throw err;
      } finally {
        if (usage !== null) span?.set(tokenUsage(usage));
        span?.end();
      }
    }
    const deltas = hold.stream(noteUsage(started.deltas), {
      // An upstream that reports no usage is charged the estimate: input tokens plus nothing.
      finalMicros: () => {
        const final = usage ?? { promptTokens: p.inputTokens, completionTokens: 0, cachedTokens: 0 };
        hold.note({ units: tokenUnits(final), fallbackLayer: started.layer });
        return usageCost(used, final);
      },
      onCaptured: (s) => {
        settled = { costMicros: s.chargedMicros, balanceMicros: s.balanceAfterMicros };
      },
    });
    return { model: used.id, inputTokens: p.inputTokens, fallbackLayer: started.layer, deltas, settlement: () => settled };
  });
}
