/**
 * Chat billing and limits shared by `POST /v1/chat/completions` (OpenAI format) and `POST /v1/messages`
 * (Anthropic format): resolve the model (aliases), count input tokens, check the token limits of the
 * tier (TPM, `max_single_request`), hold `input + max_tokens` at the model's prices, call the upstream
 * (with fallback), then capture the actual usage (cached input at 10 %) and release the rest.
 * Any failure after the hold releases it (design.md invariant 4).
 */
import { captureHold, type Executor, InsufficientFundsError, placeHold, releaseHold } from "../billing/ledger.ts";
import { formatUsd, type Micros } from "../billing/money.ts";
import { getTextModel, quoteTextCall, type TextModel } from "../catalog/text-models.ts";
import { AppError, errors } from "../errors.ts";
import type { CallGuard } from "../limits/limiter.ts";
import { observeUpstream } from "../metrics.ts";
import type { SimulateMode } from "../upstreams/types.ts";
import { countMessageTokens } from "../upstreams/tokens.ts";
import type { ChatAdapter, ChatDelta, ChatMessage, ChatRequest, ChatResult, ToolDefinition } from "../upstreams/chat-types.ts";

/** Default output cap when the caller gives none (spec: 4096; no cap of ours otherwise). */
export const DEFAULT_MAX_TOKENS = 4096;

/** One way to serve a model: an adapter and the upstream's model name, with its fallback layer. */
export interface ChatRoute {
  model: TextModel;
  adapter: ChatAdapter;
  /** 0 = requested model at its primary source; 1 = same model elsewhere; 2, 3 = equivalent models. */
  layer: 0 | 1 | 2 | 3;
}

/** What the chat service needs. */
export interface ChatDeps {
  db: Executor;
  /** Ordered ways to serve `model` (fallback plan), the first being the primary. */
  routesFor(model: TextModel): ChatRoute[];
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

/** What a started call needs to finish: the hold and the resolved model. */
interface Prepared {
  model: TextModel;
  request: Omit<ChatRequest, "upstreamModel">;
  holdId: string;
  holdMicros: Micros;
  inputTokens: number;
}

async function prepare(
  deps: ChatDeps,
  accountId: string,
  input: ChatInput,
  opts: { guard: CallGuard; tokens(n: number): Promise<void>; simulate: SimulateMode | null; tier?: number },
): Promise<Prepared> {
  const model = getTextModel(input.model);
  if (!model) throw unknownModel(input.model);
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
  await opts.guard.model(model.id);
  await opts.tokens(inputTokens + maxTokens);
  const holdMicros = Math.max(1, quoteTextCall(model, { inputTokens, cachedTokens: 0, outputTokens: maxTokens }));
  let holdId: string;
  try {
    holdId = (await placeHold(deps.db, { accountId, amountMicros: holdMicros, reference: model.id })).id;
  } catch (err) {
    if (err instanceof InsufficientFundsError) {
      throw errors.billing(
        `This request may cost up to ${formatUsd(holdMicros)} USD (${inputTokens} input tokens + max_tokens ${maxTokens}); the balance is too low.`,
      );
    }
    throw err;
  }
  return {
    model,
    holdId,
    holdMicros,
    inputTokens,
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

/** The charge for the actual usage, never more than the hold, micro-USD. */
function finalAmount(p: Prepared, used: TextModel, usage: ChatResult["usage"]): Micros {
  const cost = quoteTextCall(used, {
    // quoteTextCall's inputTokens include the cached ones, like promptTokens.
    inputTokens: usage.promptTokens,
    cachedTokens: Math.min(usage.cachedTokens, usage.promptTokens),
    outputTokens: usage.completionTokens,
  });
  return Math.min(p.holdMicros, cost);
}

/** A finished (non-streamed) chat call. Amounts in micro-USD. */
export interface ChatOutcome {
  result: ChatResult;
  /** The concrete catalog id that answered. */
  model: string;
  fallbackLayer: 0 | 1 | 2 | 3;
  costMicros: Micros;
  balanceMicros: Micros;
}

function isRetryable(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { retryable?: unknown }).retryable === true;
}

/**
 * Runs a chat call.
 * @throws AppError 400 `invalid_model`, 402 `billing_error`, 403 `model_not_available` (below the model's
 *   tier), 429 `rate_limited`, 502 `provider_error`.
 */
export async function runChat(
  deps: ChatDeps,
  accountId: string,
  input: ChatInput,
  opts: { guard: CallGuard; tokens(n: number): Promise<void>; simulate: SimulateMode | null; signal?: AbortSignal; tier?: number },
): Promise<ChatOutcome> {
  const p = await prepare(deps, accountId, input, opts);
  const routes = deps.routesFor(p.model);
  for (const route of routes) {
    let result: ChatResult;
    try {
      result = await observeUpstream(route.model.id, () =>
        route.adapter.chat({ ...p.request, model: route.model.id, upstreamModel: route.model.upstreamModel }, opts.signal),
      );
    } catch (err) {
      // Only an upstream failure worth retrying moves on to the next source or equivalent model.
      if (isRetryable(err) && !opts.signal?.aborted) continue;
      break;
    }
    const cost = finalAmount(p, route.model, result.usage);
    const settled = await captureHold(deps.db, p.holdId, cost);
    return { result, model: route.model.id, fallbackLayer: route.layer, costMicros: cost, balanceMicros: settled.balanceAfterMicros };
  }
  await releaseHold(deps.db, p.holdId);
  throw errors.provider("The upstream failed (and every fallback); nothing was charged.");
}

/** A started stream: the model that answered, and the deltas (the first one already received). */
export interface ChatStream {
  model: string;
  /** Input tokens as counted before the call (the final usage may differ slightly). */
  inputTokens: number;
  fallbackLayer: 0 | 1 | 2 | 3;
  /** Yields every delta; settles the money when it ends (charge on success, release on failure). */
  deltas: AsyncIterable<ChatDelta>;
  /** After the stream ended: what was charged and the balance, micro-USD. */
  settlement(): { costMicros: Micros; balanceMicros: Micros } | null;
}

/**
 * Starts a streamed chat call: falls back between routes until one yields its first delta, then streams.
 * The hold is captured with the final usage when the stream ends, or released if it breaks off.
 * @throws AppError as {@link runChat} (before the first delta).
 */
export async function startChatStream(
  deps: ChatDeps,
  accountId: string,
  input: ChatInput,
  opts: { guard: CallGuard; tokens(n: number): Promise<void>; simulate: SimulateMode | null; signal?: AbortSignal; tier?: number },
): Promise<ChatStream> {
  const p = await prepare(deps, accountId, input, opts);
  for (const route of deps.routesFor(p.model)) {
    let it: AsyncIterator<ChatDelta>;
    let first: IteratorResult<ChatDelta>;
    try {
      const deltas = route.adapter.chatStream(
        { ...p.request, model: route.model.id, upstreamModel: route.model.upstreamModel },
        opts.signal,
      );
      it = deltas[Symbol.asyncIterator]();
      first = await it.next();
    } catch (err) {
      if (isRetryable(err) && !opts.signal?.aborted) continue;
      break;
    }
    let settled: { costMicros: Micros; balanceMicros: Micros } | null = null;
    const db = deps.db;
    const model = route.model;
    async function* deltas(): AsyncGenerator<ChatDelta> {
      let usage: ChatResult["usage"] | null = null;
      let done = false;
      try {
        let cur = first;
        while (!cur.done) {
          if (cur.value.usage) usage = cur.value.usage;
          yield cur.value;
          cur = await it.next();
        }
        done = true;
      } finally {
        if (done) {
          // An upstream that reports no usage is charged the estimate: input tokens plus nothing.
          const u = usage ?? { promptTokens: p.inputTokens, completionTokens: 0, cachedTokens: 0 };
          const cost = finalAmount(p, model, u);
          const s = await captureHold(db, p.holdId, cost);
          settled = { costMicros: cost, balanceMicros: s.balanceAfterMicros };
        } else {
          await releaseHold(db, p.holdId);
        }
      }
    }
    return {
      model: model.id,
      inputTokens: p.inputTokens,
      fallbackLayer: route.layer,
      deltas: deltas(),
      settlement: () => settled,
    };
  }
  await releaseHold(deps.db, p.holdId);
  throw errors.provider("The upstream failed (and every fallback); nothing was charged.");
}
