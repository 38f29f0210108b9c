/**
 * The paid flow shared by music and sound effects: hold the quote, call the upstream, optionally store
 * the output as a job (`save_to_blob`), capture. Any failure after the hold releases it (docs/architecture.md
 * invariant 4): upstream errors answer 502 `provider_error`, storage errors 500 `storage_error`.
 */
import type { Executor } from "../billing/ledger.ts";
import { callUpstream, type PaidCalls, type PaidHold } from "../billing/paid-call.ts";
import { formatUsd, type Micros } from "../money.ts";
import { type CallContext, type UsageKind, usageFor } from "../billing/usage.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import type { AudioPool } from "../catalog/types.ts";
import { type CallGuard, NO_LIMITS } from "../limits/limiter.ts";
import type { AudioBytes } from "../upstreams/types.ts";
import type { Served } from "../upstreams/sync-failover.ts";
import { insertSucceededAudioJob } from "./generate.repository.ts";
import type { Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";
import type { RetentionWindows } from "../config.ts";
import { promptsKept } from "../accounts/retention.ts";
import { withoutTexts } from "../contracts/texts.ts";

/**
 * Runs in the transaction that inserts a stored output's succeeded job (`jobId`), after the insert: what a
 * caller writes with the job (a dialect's facts and webhook events, D47). Throwing rolls the capture back.
 * `textsKept` is false when the organization keeps no request texts (D46 zero retention): the hook must not
 * write them either.
 */
export type StoredJobHook = (trx: Transaction<Database>, jobId: string, textsKept: boolean) => Promise<void>;

/** Where a stored output lives. */
export interface StoredOutput {
  jobId: string;
  /** Blob key, e.g. `audio/job_x.mp3`. */
  key: string;
  contentType: string;
}

/** A finished paid audio call. Amounts in micro-USD; durations in seconds. */
export interface AudioOutcome {
  model: string;
  costMicros: Micros;
  balanceMicros: Micros;
  durationSec: number;
  contentType: string;
  body: Uint8Array;
  /** 1 when a later source of the family served the call (`X-Svc-Fallback-Layer`, D27), else 0. */
  fallbackLayer: 0 | 1;
  /** Set with `save_to_blob`. */
  stored: StoredOutput | null;
}

/** Dependencies of {@link generatePaidAudio}. */
export interface GenerateDeps {
  db: Executor;
  paidCalls: PaidCalls;
  blobs: BlobStore;
  /** The operator's retention windows (D46): whether a stored output's request keeps its texts. */
  retention: RetentionWindows;
}

/** One paid audio generation. Amounts in micro-USD, durations in seconds. */
export interface GenerateArgs {
  accountId: string;
  apiKeyId: string | null;
  model: string;
  priceMicros: Micros;
  /** The validated request, recorded on the job of a stored output. */
  request: unknown;
  saveToBlob: boolean;
  /** With `saveToBlob`: written with the stored job (see {@link StoredJobHook}). */
  onStored?: StoredJobHook;
  /** The duration reported for billing (`X-Svc-Duration-Sec`); defaults to the output's duration. */
  billedDurationSec?: number;
  /** The upstream call (the family's sources with failover, D27), given the abort signal. */
  call: (signal?: AbortSignal) => Promise<Served<AudioBytes>>;
  signal?: AbortSignal;
  /** The request and key the call's usage record is written for (D29), and its mode (D32). */
  context?: CallContext;
  /** The usage record's kind (`music` or `sfx`). */
  kind: Extract<UsageKind, "music" | "sfx">;
}

/**
 * Runs one paid audio generation for `accountId`.
 * @throws AppError 402 `billing_error`, 502 `provider_error`, 500 `storage_error` (hold released each time).
 */
export async function generatePaidAudio(
  deps: GenerateDeps,
  args: GenerateArgs & {
    /** The caller's limits and the audio pool the call draws from (D12). */
    guard?: CallGuard;
    pool: AudioPool;
  },
): Promise<AudioOutcome> {
  const guard = args.guard ?? NO_LIMITS;
  const release = await guard.admit(args.model, args.pool);
  try {
    return await generateInSlot(deps, args);
  } finally {
    await release();
  }
}

async function generateInSlot(deps: GenerateDeps, args: GenerateArgs): Promise<AudioOutcome> {
  // A stored output is a job: its ledger entries carry the job id from the hold on (D17).
  const jobId = args.saveToBlob ? newId("job") : null;
  const onInsufficient = () =>
    errors.billing(`This request costs ${formatUsd(args.priceMicros)} USD; the balance is too low.`);
  const usage = usageFor(args.context, args.kind, args.billedDurationSec === undefined ? {} : { seconds: args.billedDurationSec });
  const held = { accountId: args.accountId, amountMicros: args.priceMicros, jobId, reference: args.model, usage };
  return deps.paidCalls.withHold(deps.db, held, { onInsufficient }, async (hold) => {
    const served = await callUpstream(args.model, () => args.call(args.signal));
    const result = served.value;
    const durationSec = args.billedDurationSec ?? result.durationSec;
    hold.note({ units: { seconds: durationSec }, fallbackLayer: served.fallbackLayer });
    const outcome = {
      model: args.model,
      fallbackLayer: served.fallbackLayer,
      costMicros: args.priceMicros,
      durationSec,
      contentType: result.contentType,
      body: result.body,
    };
    if (jobId === null) {
      const settled = await hold.capture(args.priceMicros);
      return { ...outcome, balanceMicros: settled.balanceAfterMicros, stored: null };
    }

    const stored = await captureStoredAudio(deps.blobs, hold, {
      db: deps.db,
      retention: deps.retention,
      jobId,
      apiKeyId: args.apiKeyId,
      model: args.model,
      priceMicros: args.priceMicros,
      request: args.request,
      durationSec,
      body: result.body,
      contentType: result.contentType,
      onStored: args.onStored,
    });
    return { ...outcome, ...stored };
  });
}

/** A paid audio call's output to keep as a stored job (`save_to_blob`; D8, D17). Amounts in micro-USD, durations in seconds. */
export interface AudioToStore {
  /** Where the organization's prompts window is read (D46). */
  db: Executor;
  /** The operator's retention windows (D46). */
  retention: RetentionWindows;
  /** The job id the hold was placed with (its ledger entries carry it). */
  jobId: string;
  apiKeyId: string | null;
  model: string;
  priceMicros: Micros;
  /** The validated request, recorded on the job. */
  request: unknown;
  durationSec: number;
  body: Uint8Array;
  contentType: string;
  /** Written with the job, in its transaction. */
  onStored?: StoredJobHook;
}

/**
 * Stores an audio output (MP3, key `audio/<job id>.mp3`) and captures `priceMicros` in the transaction that
 * inserts its succeeded `audio` job, so the job row and the charge commit together. Shared by music and
 * sound effects ({@link generatePaidAudio}) and speech (`speech.ts`). The job's request is written without its
 * texts (contracts/texts.ts) when the organization keeps none (D46 `prompts_days: 0`).
 * @throws AppError 500 `storage_error` when the blob or the capture fails (the blob is removed; the caller's
 *   `withHold` releases the hold).
 */
export async function captureStoredAudio(
  blobs: BlobStore,
  hold: PaidHold,
  a: AudioToStore,
): Promise<{ balanceMicros: Micros; stored: StoredOutput }> {
  const key = `audio/${a.jobId}.mp3`;
  try {
    await blobs.put(key, a.body, { contentType: a.contentType });
  } catch {
    throw errors.storageFailed();
  }
  let kept: boolean;
  try {
    // Read before the capture: its transaction holds the organization's balance row.
    kept = await promptsKept(a.db, a.retention, hold.accountId);
  } catch {
    await blobs.delete(key).catch(() => {});
    throw errors.storageFailed();
  }
  try {
    const now = Date.now();
    const settled = await hold.capture(a.priceMicros, async (trx) => {
      await insertSucceededAudioJob(trx, {
        id: a.jobId,
        accountId: hold.accountId,
        apiKeyId: a.apiKeyId,
        model: a.model,
        holdId: hold.id,
        costMicros: a.priceMicros,
        requestJson: JSON.stringify(kept ? a.request : withoutTexts(a.request)),
        outputJson: JSON.stringify({ key, content_type: a.contentType, keys: [key] }),
        durationSec: a.durationSec,
        now,
        textsClearedAt: kept ? null : now,
      });
      if (a.onStored !== undefined) await a.onStored(trx, a.jobId, kept);
    });
    return { balanceMicros: settled.balanceAfterMicros, stored: { jobId: a.jobId, key, contentType: a.contentType } };
  } catch {
    await blobs.delete(key).catch(() => {});
    throw errors.storageFailed();
  }
}
