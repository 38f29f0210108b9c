/**
 * The limits in force for one account: its tier row (deposits or operator override, spec tier ladder
 * and D12) with the operator's per-field overrides applied (D22). Pure functions of a tier row: the
 * account lookup that feeds them is `effectiveLimits` in accounts/limits.ts (accounts sit above limits).
 */
import { TIERS } from "../catalog/tiers.ts";
import type { AudioPool, TierRow } from "../catalog/types.ts";
import { formatUsd } from "../money.ts";

/** Effective limits of an account: the tier row after overrides. */
export type EffectiveLimits = TierRow;

const FIELD_MAP: Record<string, keyof TierRow> = {
  rpm: "rpm",
  per_model_rpm: "perModelRpm",
  tpm: "tpm",
  max_single_request: "maxSingleRequest",
  image_concurrent: "imageConcurrent",
  image_queue_depth_cap: "imageQueueDepthCap",
  video_concurrent: "videoConcurrent",
  video_queue_depth_cap: "videoQueueDepthCap",
};

/** Applies an override object (JSON of `accounts.limits_override`) to a tier row. */
export function applyOverrides(row: TierRow, overrideJson: string | null): EffectiveLimits {
  if (!overrideJson) return row;
  const o = JSON.parse(overrideJson) as Record<string, unknown>;
  const out: TierRow = { ...row, audioConcurrentPerProvider: { ...row.audioConcurrentPerProvider } };
  for (const [k, v] of Object.entries(o)) {
    const field = FIELD_MAP[k];
    if (field && typeof v === "number") (out as unknown as Record<string, number>)[field] = v;
    if (k === "audio_concurrent_per_provider" && v && typeof v === "object") {
      for (const [pool, cap] of Object.entries(v as Record<string, unknown>)) {
        if (typeof cap === "number") out.audioConcurrentPerProvider[pool as AudioPool] = cap;
      }
    }
  }
  return out;
}

/**
 * Concurrency and queue caps of a media kind for these limits (spec tier matrix, D12): on tier 4 image and
 * video share the combined pool.
 */
export function mediaCaps(limits: EffectiveLimits, kind: "image" | "video"): { pool: "image" | "video" | "combined"; concurrent: number; queue: number } {
  if (limits.combinedMediaConcurrent !== null) {
    return { pool: "combined", concurrent: limits.combinedMediaConcurrent, queue: limits.combinedQueueDepthCap ?? 0 };
  }
  return kind === "image"
    ? { pool: "image", concurrent: limits.imageConcurrent, queue: limits.imageQueueDepthCap }
    : { pool: "video", concurrent: limits.videoConcurrent, queue: limits.videoQueueDepthCap };
}

/**
 * The way past a limit that no wait can lift (D48), as a sentence for a 429's message: the first higher
 * tier whose row `allows` the call, with the deposits that reach it (a top-up on the console's Billing
 * page, or the operator); the operator when the limit is an override of theirs (D22) or no tier allows it.
 * `allows` sees a tier row as the tier ladder defines it (no overrides).
 */
export function wayUp(limits: EffectiveLimits, allows: (row: TierRow) => boolean): string {
  const own = TIERS[limits.tier];
  if (own !== undefined && allows(own)) {
    return "The gateway's operator set this limit for your organization: ask them to raise it.";
  }
  const next = TIERS.find((t) => t.tier > limits.tier && allows(t));
  if (next === undefined) return "No tier allows it: ask the gateway's operator.";
  return `${next.name} allows it, reached by deposits of ${formatUsd(next.minDepositMicros)} USD in all: top up on the console's Billing page, or ask the gateway's operator to raise your tier.`;
}
