/**
 * The text (chat) models of the catalog, with neutral ids (`txtA-large`, ...), their token prices and the
 * aliases `best`, `fast`, `code`, `cheap` and `agent` (spec Versioning 4). `buildPricingCatalog(TEXT_MODELS)`
 * and `buildLegacyCreditsPricing(TEXT_MODELS)` (pricing.ts) turn them into the text rows of `/v1/pricing`.
 *
 * Prices are integer micro-USD per one million tokens (a per-token price is a fraction of a micro-USD).
 * A call is charged `(uncached input x input price + cached x cached price + output x output price) / 1e6`,
 * computed exactly with BigInt and rounded half-up once, at the end (D7). Cached input costs exactly 10% of
 * the input price (spec "Billing rules" 4).
 */
import { divRoundHalfUp, type Micros, usdToMicros } from "../money.ts";

/** What a text model can do; `/v1/models?capability=` filters on these. */
export type TextCapability = "chat" | "tools" | "streaming" | "code" | "reasoning";

/** One text model. Satisfies `TextModelPrice` (types.ts), so the pricing catalog can list it. */
export interface TextModel {
  /** Catalog id, also the `/v1/pricing` text row id and the answer's `model`. */
  id: string;
  /** Human-readable name. */
  name: string;
  /** Charged micro-USD per 1M uncached input tokens. */
  inputMicrosPer1M: Micros;
  /** Charged micro-USD per 1M output tokens. */
  outputMicrosPer1M: Micros;
  /** Charged micro-USD per 1M cached input tokens: exactly 10% of {@link TextModel.inputMicrosPer1M}. */
  cachedInputMicrosPer1M: Micros;
  /** Context window in tokens (prompt plus output). */
  contextWindow: number;
  capabilities: readonly TextCapability[];
  /** Lowest account tier allowed to call the model (0: everyone). */
  tierMin: number;
  /** Disabled models are refused and left out of lists and the pricing catalog (spec Versioning 6). */
  enabled: boolean;
  /** The model name sent to the OpenAI-compatible upstream. */
  upstreamModel: string;
  /** Upstream family (`txtA`, `txtB`, ...): picks the adapter. */
  family: string;
  /** Ids of models of equivalent quality, in order of preference, for fallback layers 2-3. */
  equivalents: readonly string[];
}

/** Exact micro-USD per 1M tokens of a decimal USD literal written in this file; a typo fails at load. */
function usdPer1M(text: string): Micros {
  const micros = usdToMicros(text);
  if (micros === null || micros < 0) throw new Error(`text catalog: bad USD literal ${text}`);
  return micros;
}

/** A text model record; the cached price is 10% of the input price, which must divide exactly. */
function textModel(
  fields: Omit<TextModel, "inputMicrosPer1M" | "outputMicrosPer1M" | "cachedInputMicrosPer1M" | "enabled"> & {
    /** USD per 1M input tokens, as decimal text. */
    input: string;
    /** USD per 1M output tokens, as decimal text. */
    output: string;
    enabled?: boolean;
  },
): TextModel {
  const { input, output, enabled = true, ...rest } = fields;
  const inputMicrosPer1M = usdPer1M(input);
  if (inputMicrosPer1M % 10 !== 0) throw new Error(`text catalog: ${rest.id} input price has no exact 10%`);
  return {
    ...rest,
    inputMicrosPer1M,
    outputMicrosPer1M: usdPer1M(output),
    cachedInputMicrosPer1M: inputMicrosPer1M / 10,
    enabled,
  };
}

const FULL: readonly TextCapability[] = ["chat", "tools", "streaming", "code", "reasoning"];
const LIGHT: readonly TextCapability[] = ["chat", "tools", "streaming"];

/** Every text model, sorted by id. */
export const TEXT_MODELS: readonly TextModel[] = [
  textModel({
    id: "txtA-large",
    name: "Text A Large",
    input: "3.00",
    output: "15.00",
    contextWindow: 200_000,
    capabilities: FULL,
    tierMin: 0,
    upstreamModel: "txta-large-2026-05",
    family: "txtA",
    equivalents: ["txtB-pro", "txtD-agent"],
  }),
  textModel({
    id: "txtA-small",
    name: "Text A Small",
    input: "0.15",
    output: "0.60",
    contextWindow: 128_000,
    capabilities: LIGHT,
    tierMin: 0,
    upstreamModel: "txta-small-2026-05",
    family: "txtA",
    equivalents: ["txtB-flash", "txtD-lite"],
  }),
  textModel({
    id: "txtB-flash",
    name: "Text B Flash",
    input: "0.30",
    output: "2.50",
    contextWindow: 1_000_000,
    capabilities: LIGHT,
    tierMin: 0,
    upstreamModel: "txtb-flash-2.5",
    family: "txtB",
    equivalents: ["txtA-small", "txtD-lite"],
  }),
  textModel({
    id: "txtB-pro",
    name: "Text B Pro",
    input: "1.25",
    output: "10.00",
    contextWindow: 1_000_000,
    capabilities: FULL,
    // The one restricted model: long-context pro calls start at tier 1.
    tierMin: 1,
    upstreamModel: "txtb-pro-2.5",
    family: "txtB",
    equivalents: ["txtA-large", "txtD-agent"],
  }),
  textModel({
    id: "txtC-coder",
    name: "Text C Coder",
    input: "2.00",
    output: "8.00",
    contextWindow: 256_000,
    capabilities: ["chat", "tools", "streaming", "code"],
    tierMin: 0,
    upstreamModel: "txtc-coder-v3",
    family: "txtC",
    equivalents: ["txtA-large", "txtD-agent"],
  }),
  textModel({
    id: "txtC-mini",
    name: "Text C Mini",
    input: "0.10",
    output: "0.40",
    contextWindow: 128_000,
    capabilities: ["chat", "streaming", "code"],
    tierMin: 0,
    upstreamModel: "txtc-mini-v3",
    family: "txtC",
    equivalents: ["txtA-small", "txtB-flash"],
  }),
  textModel({
    id: "txtD-agent",
    name: "Text D Agent",
    input: "2.50",
    output: "10.00",
    contextWindow: 400_000,
    capabilities: FULL,
    tierMin: 0,
    upstreamModel: "txtd-agent-1",
    family: "txtD",
    equivalents: ["txtA-large", "txtC-coder"],
  }),
  textModel({
    id: "txtD-lite",
    name: "Text D Lite",
    input: "0.40",
    output: "1.60",
    contextWindow: 128_000,
    capabilities: LIGHT,
    tierMin: 0,
    upstreamModel: "txtd-lite-1",
    family: "txtD",
    equivalents: ["txtA-small", "txtB-flash"],
  }),
];

/**
 * Alias -> current text model id (spec Versioning 4). An alias follows its model: repointing it here is the
 * whole change.
 */
export const TEXT_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  best: "txtA-large",
  fast: "txtB-flash",
  code: "txtC-coder",
  cheap: "txtC-mini",
  agent: "txtD-agent",
});

/** Id -> record, enabled or not. Built once; duplicates, alias clashes and dangling references fail at load. */
const BY_ID: ReadonlyMap<string, TextModel> = (() => {
  const map = new Map<string, TextModel>();
  for (const model of TEXT_MODELS) {
    if (map.has(model.id)) throw new Error(`text catalog: duplicate id ${model.id}`);
    map.set(model.id, model);
  }
  for (const [alias, id] of Object.entries(TEXT_ALIASES)) {
    if (map.has(alias)) throw new Error(`text catalog: alias ${alias} shadows a model id`);
    if (!map.has(id)) throw new Error(`text catalog: alias ${alias} points at unknown ${id}`);
  }
  for (const model of TEXT_MODELS) {
    for (const eq of model.equivalents) {
      if (!map.has(eq) || eq === model.id) throw new Error(`text catalog: bad equivalent ${eq} of ${model.id}`);
    }
  }
  return map;
})();

/** The concrete id of `idOrAlias` (an alias resolves; an id is returned as given), known or not. */
export function resolveTextModelId(idOrAlias: string): string {
  return Object.hasOwn(TEXT_ALIASES, idOrAlias) ? TEXT_ALIASES[idOrAlias] : idOrAlias;
}

/**
 * The enabled text model named by `idOrAlias` (aliases resolve: `best` -> `txtA-large`); undefined when
 * unknown or disabled (spec Versioning 6). Does not check tiers: compare `tierMin` with the caller's tier.
 */
export function getTextModel(idOrAlias: string): TextModel | undefined {
  const model = BY_ID.get(resolveTextModelId(idOrAlias));
  return model?.enabled ? model : undefined;
}

/**
 * The fallback chain of a model: the model itself, then its enabled equivalents in order (fallback
 * layers 2-3). A disabled `model` still lists its enabled equivalents after itself.
 */
export function textFallbackChain(model: TextModel): TextModel[] {
  const chain = [model];
  for (const id of model.equivalents) {
    const eq = BY_ID.get(id);
    if (eq?.enabled) chain.push(eq);
  }
  return chain;
}

/** The token counts of one text call. */
export interface TextCallTokens {
  /** All prompt tokens, cached ones included (like `ChatUsage.promptTokens`). */
  inputTokens: number;
  /** The part of `inputTokens` served from the prompt cache (at most `inputTokens`). */
  cachedTokens: number;
  /** Completion tokens. */
  outputTokens: number;
}

/** Checks a token count: a non-negative safe integer. */
function tokenCount(name: string, value: number): bigint {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer`);
  return BigInt(value);
}

/**
 * The charge of one text call in micro-USD: `((inputTokens - cachedTokens) x input + cachedTokens x
 * cached + outputTokens x output) / 1e6` with prices in micro-USD per 1M tokens, computed exactly and
 * rounded half-up once (D7). Used both for the hold (see `estimateHold` in upstreams/tokens.ts: all input
 * uncached, `max_tokens` of output) and the final charge. Throws RangeError on negative or fractional
 * counts, or `cachedTokens > inputTokens`.
 */
export function quoteTextCall(model: TextModel, tokens: TextCallTokens): Micros {
  const input = tokenCount("inputTokens", tokens.inputTokens);
  const cached = tokenCount("cachedTokens", tokens.cachedTokens);
  const output = tokenCount("outputTokens", tokens.outputTokens);
  if (cached > input) throw new RangeError("cachedTokens must not exceed inputTokens");
  const numerator =
    (input - cached) * BigInt(model.inputMicrosPer1M) +
    cached * BigInt(model.cachedInputMicrosPer1M) +
    output * BigInt(model.outputMicrosPer1M);
  return Number(divRoundHalfUp(numerator, 1_000_000n));
}
