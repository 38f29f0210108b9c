/**
 * The public job object (D3) and what renders it: the view of a job row, its `queue_position` among the
 * owner's pending jobs (D30), and the owner of the jobs a call reads ({@link JobOwner}: an account with,
 * when the caller has them, its effective limits).
 */
import type { Executor } from "../billing/ledger.ts";
import { microsToUsd } from "../money.ts";
import { effectiveLimits } from "../accounts/limits.ts";
import { type EffectiveLimits, mediaCaps } from "../limits/effective.ts";
import type { JobsTable, KeyMode } from "../storage/schema.ts";
import { type JobViewRow, pendingMediaJobs } from "./jobs.repository.ts";
import { blobUrl, type JobOutput, promptOf } from "./outputs.ts";

/** The job object of D3. Amounts in USD. */
export interface JobView {
  id: string;
  object: "media.job";
  kind: "image" | "video" | "audio";
  model: string;
  status: JobsTable["status"];
  hold_usd: number;
  cost_usd: number | null;
  created_at: string;
  updated_at: string;
  /**
   * The stored outputs, described by the (first) file itself: its type, and where the file says them
   * its pixel size and, for a video, its length (seconds; also what the charge used, D26) and frames per
   * second. A fact the file does not say is absent, never filled in from the request.
   */
  output: { url: string; content_type: string; urls: string[]; width?: number; height?: number; duration_sec?: number; fps?: number } | null;
  error: { code: string; message: string } | null;
  idempotency_key: string | null;
  /** The upstream source layer that serves the job: 0 the first of its family, 1 the next (D27). */
  fallback_layer: number;
  /**
   * A `pending` job's place among the caller's pending jobs of its pool (image, video, or the combined
   * pool of tier 4), in the order the runner starts them: 1 starts next. Null for any other status. D30.
   */
  queue_position: number | null;
  /** A `processing` job's fraction done, 0..1, when the upstream says; null otherwise. D30. */
  progress: number | null;
  /** The mode of the key that submitted the job (D32): `test` jobs are priced but move no money. */
  mode: KeyMode;
  /** The job's prompt (a stored speech output: its text), or null when the request had none. */
  prompt: string | null;
}

/**
 * The owner of the jobs a call reads or submits: its account and, when the caller has them (the request's
 * principal, authenticated with them), the account's effective limits, which place a pending job in its
 * pool's queue (D30) and cap a submit (D12). Without `limits` they are read when needed.
 */
export interface JobOwner {
  accountId: string;
  limits?: EffectiveLimits | null;
}

/** The owner's limits: the ones it carries, else read (null: no such account). */
export async function limitsOfOwner(db: Executor, owner: JobOwner): Promise<EffectiveLimits | null> {
  return owner.limits !== undefined ? owner.limits : effectiveLimits(db, owner.accountId);
}

/** Whether the owner's image and video jobs share one pool (tier 4) per its limits. */
export function combinedPool(limits: EffectiveLimits | null): boolean {
  return limits !== null && mediaCaps(limits, "image").pool === "combined";
}

/** `owner` as a {@link JobOwner} (an account id alone carries no limits). */
export function ownerOf(owner: string | JobOwner): JobOwner {
  return typeof owner === "string" ? { accountId: owner } : owner;
}

/** Job statuses after which nothing changes (spec "States and transitions" 3). */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["succeeded", "failed", "refunded", "expired"]);

/**
 * Renders a job row as the D3 object. `queuePosition` is the job's place when it is `pending` (see
 * {@link queuePositions}); `progress` shows only while the job is `processing`.
 */
export function jobView(publicBaseUrl: string, r: JobViewRow, queuePosition: number | null = null): JobView {
  let output: JobView["output"] = null;
  if (r.status === "succeeded" && r.output_json) {
    const o = JSON.parse(r.output_json) as JobOutput;
    const keys = o.keys?.length ? o.keys : [o.key];
    output = { url: blobUrl(publicBaseUrl, o.key), content_type: o.content_type, urls: keys.map((k) => blobUrl(publicBaseUrl, k)) };
    const facts = o.media?.[0] ?? null;
    if (r.kind !== "audio" && facts?.width !== undefined && facts.height !== undefined) {
      output.width = facts.width;
      output.height = facts.height;
    }
    if (r.kind === "video" && r.duration_sec !== null) output.duration_sec = Number(r.duration_sec);
    if (r.kind === "video" && facts?.fps !== undefined) output.fps = facts.fps;
  }
  return {
    id: r.id,
    object: "media.job",
    kind: r.kind,
    model: r.model,
    status: r.status,
    hold_usd: microsToUsd(Number(r.hold_micros)),
    cost_usd: r.cost_micros === null ? null : microsToUsd(Number(r.cost_micros)),
    created_at: new Date(Number(r.created_at)).toISOString(),
    updated_at: new Date(Number(r.updated_at)).toISOString(),
    output,
    error: r.error_code ? { code: r.error_code, message: r.error_message ?? "" } : null,
    idempotency_key: r.idempotency_key,
    fallback_layer: Number(r.fallback_layer),
    queue_position: r.status === "pending" ? queuePosition : null,
    progress: r.status === "processing" && r.progress !== null && r.progress !== undefined ? Number(r.progress) : null,
    mode: r.mode === "test" ? "test" : "live",
    prompt: promptOf(r.request_json),
  };
}

/**
 * The place of each of the account's `pending` image and video jobs in its pool, by job id (1 = starts
 * next; D30). The runner starts an account's pending jobs oldest first (`created_at`, then `id`: the
 * order of `claimJobs`) whenever its pool has a free slot, so a job's place is one more than the number of
 * the account's pending jobs of the same pool ahead of it. The pool is the kind, or image and video
 * together on a combined pool (tier 4), per the owner's limits (passed, else read). One indexed read of
 * the account's pending jobs, which its queue caps keep few.
 */
export async function queuePositions(db: Executor, owner: string | JobOwner): Promise<Map<string, number>> {
  const o = ownerOf(owner);
  const rows = await pendingMediaJobs(db, o.accountId);
  const out = new Map<string, number>();
  if (rows.length === 0) return out;
  const combined = combinedPool(await limitsOfOwner(db, o));
  const ahead = { image: 0, video: 0, combined: 0 };
  for (const r of rows) {
    const pool = combined ? "combined" : (r.kind as "image" | "video");
    ahead[pool] += 1;
    out.set(r.id, ahead[pool]);
  }
  return out;
}
