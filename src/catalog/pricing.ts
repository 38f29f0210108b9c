/**
 * Builders of the public catalog documents: `GET /v1/pricing` (spec "GET /v1/pricing"; D6, D18),
 * `GET /v1/limits/tiers` (spec "Tier matrix fields"; D12) and the legacy `GET /v1/credits/pricing`
 * (spec Versioning 5).
 *
 * Pure functions over the catalog records; callers build each document once and cache the serialized
 * JSON. Amounts are computed in micro-USD and turned into JSON numbers of USD only here, at the output.
 */
import { divRoundHalfUp, type Micros, microsToUsd } from "../money.ts";
import { lifecycleOf } from "./lifecycle.ts";
import { MODELS } from "./models.ts";
import { quoteRepresentative } from "./quote.ts";
import { TIERS } from "./tiers.ts";
import type { AudioPool, ModelRecord, PricingMode, TextModelPrice, TierRow } from "./types.ts";

/** A text row of `/v1/pricing`: USD per one million tokens (spec "Text row"). */
export interface TextRow {
  id: string;
  name: string;
  /** USD per 1M input tokens. */
  input_per_1m: number;
  /** USD per 1M output tokens. */
  output_per_1m: number;
  /** USD per 1M cached input tokens (10% of input unless the model says otherwise). */
  cached_input_per_1m: number;
}

/** `detail` of a media row, one shape per pricing mode (spec "GET /v1/pricing" detail table). USD. */
export type MediaDetail =
  | { provider_cost: number; markup: number }
  | { tiers: { low: number; medium: number; high: number } }
  | { base_usd: number; extra_per_mp_usd: number; markup: number }
  | {
      /** The charged rate per second (D18). */
      provider_cost_per_sec: number;
      min_duration_sec: number;
      max_duration_sec: number;
      allowed_durations: number[] | null;
    }
  | { provider_cost_per_minute: number; markup: number }
  | { provider_cost_per_kchar: number; markup: number }
  | { usd_per_song: number }
  | { usd_per_call: number };

/**
 * A media row of `/v1/pricing` (spec "Media row"; D18). `usd_per_call` is USD for one typical call;
 * `deprecated` and `shutdown_date` are the model's lifecycle (D35, added fields).
 */
export interface MediaRow {
  id: string;
  name: string;
  modality: "image" | "video" | "audio";
  pricing_mode: PricingMode;
  usd_per_call: number;
  detail: MediaDetail;
  /** Legacy (spec Versioning 3), or scheduled to shut down. */
  deprecated: boolean;
  /** `YYYY-MM-DD` (UTC) from which the model answers 410 `model_retired`, or null. */
  shutdown_date: string | null;
}

/** The `/v1/pricing` body (spec "GET /v1/pricing"; count field names from D6). */
export interface PricingCatalog {
  object: "pricing.catalog";
  text_count: number;
  media_count: number;
  text: TextRow[];
  media: MediaRow[];
}

/** One tier of `/v1/limits/tiers` and of `/v1/auth/limits` (spec "Tier matrix fields"; D12). */
export interface TierRowJson {
  tier: number;
  name: string;
  /** Minimum cumulative deposit, USD. */
  min_deposit: number;
  rpm: number;
  per_model_rpm: number;
  tpm: number;
  max_single_request: number;
  image_concurrent: number;
  image_queue_depth_cap: number;
  video_concurrent: number;
  video_queue_depth_cap: number;
  audio_concurrent: number;
  audio_concurrent_per_provider: Record<AudioPool, number>;
  /** Tier 4 only. */
  combined_media_concurrent?: number;
  /** Tier 4 only. */
  combined_queue_depth_cap?: number;
}

/** The `/v1/limits/tiers` body: five tiers, 0 to 4 (spec "GET /v1/limits/tiers"). */
export interface TierMatrix {
  object: "tier.matrix";
  tiers: TierRowJson[];
}

/** The legacy text-only catalog of `GET /v1/credits/pricing` (spec Versioning 5), an OpenAI-style list. */
export interface LegacyCreditsPricing {
  object: "list";
  data: TextRow[];
  deprecated: true;
  replaced_by: "/v1/pricing";
}

/** Code-unit order of ids (D18): plain `<`, not `localeCompare`, so the order is locale-independent. */
function byId(a: { id: string }, b: { id: string }): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * A markup in basis points as a display number (13_500 -> 1.35). A ratio, not an amount: dividing two
 * small integers gives the nearest double, whose shortest text is the exact 4-decimal value.
 */
function markupOf(markupBp: number): number {
  return markupBp / 10_000;
}

/**
 * The provider cost behind a charged price: `charged / markup`, in USD rounded half-up to 6 decimals.
 * Exact for every audio row (markup 1) and every image row but one: imgA-v4-pro charges 0.338, and
 * 0.338 / 1.35 = 0.25037037... has no 6-decimal form, so the row shows 0.25037 (0.25037 x 1.35 =
 * 0.3379995, within 1e-6 of the charged price; D18). The charged price stays authoritative.
 */
function providerCostUsd(chargedMicros: Micros, markupBp: number): number {
  return microsToUsd(Number(divRoundHalfUp(BigInt(chargedMicros) * 10_000n, BigInt(markupBp))));
}

/** The `detail` object of a model's row, keys exactly as the spec's table for its mode. */
function detailOf(model: ModelRecord): MediaDetail {
  const p = model.pricing;
  switch (p.mode) {
    case "per-image":
      return { provider_cost: providerCostUsd(p.microsPerImage, p.markupBp), markup: markupOf(p.markupBp) };
    case "per-quality":
      return {
        tiers: {
          low: microsToUsd(p.tiers.low),
          medium: microsToUsd(p.tiers.medium),
          high: microsToUsd(p.tiers.high),
        },
      };
    case "per-mp":
      return {
        base_usd: microsToUsd(p.baseMicros),
        extra_per_mp_usd: microsToUsd(p.extraPerMpMicros),
        markup: markupOf(p.markupBp),
      };
    case "per-second":
      return {
        provider_cost_per_sec: microsToUsd(p.microsPerSecond),
        min_duration_sec: p.minDurationSec,
        max_duration_sec: p.maxDurationSec,
        allowed_durations: p.allowedDurations === null ? null : [...p.allowedDurations],
      };
    case "per-minute":
      return {
        provider_cost_per_minute: providerCostUsd(p.microsPerMinute, p.markupBp),
        markup: markupOf(p.markupBp),
      };
    case "per-char":
      return {
        provider_cost_per_kchar: providerCostUsd(p.microsPerKchar, p.markupBp),
        markup: markupOf(p.markupBp),
      };
    case "per-song":
      return { usd_per_song: microsToUsd(p.microsPerSong) };
    case "per-call":
      return { usd_per_call: microsToUsd(p.microsPerCall) };
  }
}

/**
 * The `/v1/pricing` media row of one model (D18), with its lifecycle as configured now (D35). Text-modality
 * records are not media rows.
 */
export function mediaRow(model: ModelRecord): MediaRow {
  if (model.modality === "text") throw new Error(`pricing: ${model.id} is a text model, not a media row`);
  return {
    id: model.id,
    name: model.name,
    modality: model.modality,
    pricing_mode: model.pricing.mode,
    usd_per_call: microsToUsd(quoteRepresentative(model)),
    detail: detailOf(model),
    ...lifecycleOf(model.id, model.legacy),
  };
}

/** The `/v1/pricing` text row of one token-priced model: USD per 1M tokens; cached defaults to 10%. */
export function textRow(model: TextModelPrice): TextRow {
  const cached = model.cachedInputMicrosPer1M ?? Number(divRoundHalfUp(BigInt(model.inputMicrosPer1M), 10n));
  return {
    id: model.id,
    name: model.name,
    input_per_1m: microsToUsd(model.inputMicrosPer1M),
    output_per_1m: microsToUsd(model.outputMicrosPer1M),
    cached_input_per_1m: microsToUsd(cached),
  };
}

/** Enabled text rows sorted by id in code-unit order. */
function textRows(textModels: readonly TextModelPrice[]): TextRow[] {
  return textModels
    .filter((m) => m.enabled !== false)
    .map(textRow)
    .sort(byId);
}

/**
 * The `/v1/pricing` body (spec "GET /v1/pricing"; D6, D18): one media row per enabled media model of the
 * catalog and one text row per enabled model of `textModels` (empty until the text side passes its
 * list), each array sorted by id in code-unit order.
 */
export function buildPricingCatalog(textModels: readonly TextModelPrice[] = []): PricingCatalog {
  const text = textRows(textModels);
  const media = MODELS.filter((m) => m.enabled && m.modality !== "text")
    .map(mediaRow)
    .sort(byId);
  return { object: "pricing.catalog", text_count: text.length, media_count: media.length, text, media };
}

/**
 * One tier as JSON (spec "Tier matrix fields"): snake_case fields, `min_deposit` in USD, the audio pools
 * in the order host_1, host_2, alpha, beta, host_3, and `combined_*` present only where set (tier 4).
 * Used by `/v1/limits/tiers` and `/v1/auth/limits`.
 */
export function tierRowJson(row: TierRow): TierRowJson {
  const pools = row.audioConcurrentPerProvider;
  const json: TierRowJson = {
    tier: row.tier,
    name: row.name,
    min_deposit: microsToUsd(row.minDepositMicros),
    rpm: row.rpm,
    per_model_rpm: row.perModelRpm,
    tpm: row.tpm,
    max_single_request: row.maxSingleRequest,
    image_concurrent: row.imageConcurrent,
    image_queue_depth_cap: row.imageQueueDepthCap,
    video_concurrent: row.videoConcurrent,
    video_queue_depth_cap: row.videoQueueDepthCap,
    audio_concurrent: row.audioConcurrent,
    audio_concurrent_per_provider: {
      host_1: pools.host_1,
      host_2: pools.host_2,
      alpha: pools.alpha,
      beta: pools.beta,
      host_3: pools.host_3,
    },
  };
  if (row.combinedMediaConcurrent !== null) json.combined_media_concurrent = row.combinedMediaConcurrent;
  if (row.combinedQueueDepthCap !== null) json.combined_queue_depth_cap = row.combinedQueueDepthCap;
  return json;
}

/** The `/v1/limits/tiers` body: `tier.matrix` with tiers 0 to 4 in order (spec "GET /v1/limits/tiers"). */
export function buildTierMatrix(): TierMatrix {
  return { object: "tier.matrix", tiers: TIERS.map(tierRowJson) };
}

/**
 * The legacy `GET /v1/credits/pricing` body (spec Versioning 5): the text rows of `/v1/pricing` as an
 * OpenAI-style list, flagged deprecated and pointing at its replacement.
 */
export function buildLegacyCreditsPricing(textModels: readonly TextModelPrice[] = []): LegacyCreditsPricing {
  return { object: "list", data: textRows(textModels), deprecated: true, replaced_by: "/v1/pricing" };
}
