/**
 * The rate-limit tier ladder (spec "Limits": tier matrix fields, tier-0 values and the text ladder; D12
 * for tiers 1 to 4). One row per tier, 0 to 4; `GET /v1/limits/tiers` and the limiters read these rows.
 */
import { MICROS_PER_USD, type Micros } from "../money.ts";
import type { TierRow } from "./types.ts";

/** Audio sub-pool caps in the spec's key order `host_1, host_2, alpha, beta, host_3` (D12). */
function pools(
  host1: number,
  host2: number,
  alpha: number,
  beta: number,
  host3: number,
): TierRow["audioConcurrentPerProvider"] {
  return { host_1: host1, host_2: host2, alpha, beta, host_3: host3 };
}

/**
 * Tiers 0 to 4, index = tier number. Frozen. RPM, per-model RPM, TPM and minimum deposits come from the
 * spec's ladder (200K = 200_000, 2M = 2_000_000, ...); tier 0 concurrency from the spec; tiers 1 to 4
 * concurrency, queues and `max_single_request` from D12. `audioConcurrent` is the legacy aggregate, the
 * maximum over the sub-pools.
 */
export const TIERS: readonly TierRow[] = freezeRows([
  {
    tier: 0,
    name: "Tier 0",
    minDepositMicros: 0,
    rpm: 30,
    perModelRpm: 25,
    tpm: 200_000,
    maxSingleRequest: 200_000,
    imageConcurrent: 2,
    imageQueueDepthCap: 6,
    // Video is blocked on tier 0 (D2: 429 naming the tier that allows video).
    videoConcurrent: 0,
    videoQueueDepthCap: 0,
    audioConcurrent: 2,
    audioConcurrentPerProvider: pools(1, 2, 1, 1, 1),
    combinedMediaConcurrent: null,
    combinedQueueDepthCap: null,
  },
  {
    tier: 1,
    name: "Tier 1",
    minDepositMicros: 10 * MICROS_PER_USD,
    rpm: 60,
    perModelRpm: 40,
    tpm: 500_000,
    maxSingleRequest: 500_000,
    imageConcurrent: 4,
    imageQueueDepthCap: 12,
    videoConcurrent: 2,
    videoQueueDepthCap: 6,
    audioConcurrent: 4,
    audioConcurrentPerProvider: pools(2, 4, 2, 2, 2),
    combinedMediaConcurrent: null,
    combinedQueueDepthCap: null,
  },
  {
    tier: 2,
    name: "Tier 2",
    minDepositMicros: 50 * MICROS_PER_USD,
    rpm: 120,
    perModelRpm: 80,
    tpm: 2_000_000,
    maxSingleRequest: 1_000_000,
    imageConcurrent: 8,
    imageQueueDepthCap: 24,
    videoConcurrent: 4,
    videoQueueDepthCap: 12,
    audioConcurrent: 8,
    audioConcurrentPerProvider: pools(4, 8, 4, 4, 4),
    combinedMediaConcurrent: null,
    combinedQueueDepthCap: null,
  },
  {
    tier: 3,
    name: "Tier 3",
    minDepositMicros: 250 * MICROS_PER_USD,
    rpm: 200,
    perModelRpm: 150,
    tpm: 5_000_000,
    maxSingleRequest: 1_000_000,
    imageConcurrent: 16,
    imageQueueDepthCap: 48,
    videoConcurrent: 8,
    videoQueueDepthCap: 24,
    audioConcurrent: 16,
    audioConcurrentPerProvider: pools(8, 16, 8, 8, 8),
    combinedMediaConcurrent: null,
    combinedQueueDepthCap: null,
  },
  {
    tier: 4,
    name: "Tier 4",
    minDepositMicros: 1000 * MICROS_PER_USD,
    rpm: 300,
    perModelRpm: 200,
    tpm: 10_000_000,
    maxSingleRequest: 1_000_000,
    // Tier 4: image and video share the combined pool (38 running, 114 queued); the per-kind queue
    // caps are 0 because the combined queue replaces them (spec tier matrix fields, D12).
    imageConcurrent: 38,
    imageQueueDepthCap: 0,
    videoConcurrent: 38,
    videoQueueDepthCap: 0,
    audioConcurrent: 20,
    // 5 pools x 20 = the spec's "100 total audio slots".
    audioConcurrentPerProvider: pools(20, 20, 20, 20, 20),
    combinedMediaConcurrent: 38,
    combinedQueueDepthCap: 114,
  },
]);

/** Freezes the rows and their pool objects so no caller can change a limit at run time. */
function freezeRows(rows: TierRow[]): readonly TierRow[] {
  for (const row of rows) {
    Object.freeze(row.audioConcurrentPerProvider);
    Object.freeze(row);
  }
  return Object.freeze(rows);
}

/** The highest tier number (4). */
export const MAX_TIER = TIERS.length - 1;

/**
 * The tier earned by cumulative deposits (micro-USD): the highest tier whose minimum deposit is reached
 * (spec "Tiers rise automatically with total credits purchased"). 9.999999 USD -> 0, 10 USD -> 1.
 */
export function tierForDeposits(totalDepositsMicros: Micros): number {
  for (let t = MAX_TIER; t > 0; t--) {
    if (totalDepositsMicros >= TIERS[t].minDepositMicros) return t;
  }
  return 0;
}

/**
 * The tier in force: the operator override (0 to 4, D9) when set, else {@link tierForDeposits}.
 * Throws RangeError for an override outside 0 to 4 (the admin API validates it before storing).
 */
export function effectiveTier(totalDepositsMicros: Micros, override: number | null): number {
  if (override === null) return tierForDeposits(totalDepositsMicros);
  return tierRow(override).tier;
}

/** The row of tier `tier` (0 to 4). Throws RangeError for any other value (a programming error). */
export function tierRow(tier: number): TierRow {
  if (!Number.isInteger(tier) || tier < 0 || tier > MAX_TIER) {
    throw new RangeError(`no such tier: ${tier}`);
  }
  return TIERS[tier];
}
