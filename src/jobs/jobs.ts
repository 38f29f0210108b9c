/**
 * The media job lifecycle's front half (spec "Media job", D3): submit (validate, cap the queue, write the
 * job row and its hold in one transaction, idempotency), read and list (owner only, D30) and the public job
 * object with its `queue_position` and `progress` (D30). The SQL is jobs.repository.ts; the insert within
 * the caps storage/job-queue.ts.
 *
 * The account's effective limits are a fact of the request: the route has them from authentication (the
 * principal) and passes them down ({@link JobOwner}), so a submit, a read, a wait and a list each use them
 * without reading them again; only a caller without them (the webhook renderer) has them read.
 */
import { createHash } from "node:crypto";
import { type Executor, inTransaction } from "../billing/ledger.ts";
import { holdOrRefuse } from "../billing/paid-call.ts";
import { formatUsd, microsToUsd } from "../billing/money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import { TIERS } from "../catalog/tiers.ts";
import { AppError, errors } from "../errors.ts";
import { newTimeOrderedId } from "../ids.ts";
import { effectiveLimits } from "../accounts/accounts.ts";
import { mediaCaps } from "../limits/effective.ts";
import { isUniqueViolation } from "../storage/db.ts";
import { type ClaimedJob, insertJobWithinCaps, type NewJob } from "../storage/job-queue.ts";
import type { EffectiveLimits } from "../limits/effective.ts";
import type { JobsTable } from "../storage/schema.ts";
import type { SimulateMode } from "../upstreams/types.ts";
import {
  accountJobs,
  activeJobCounts,
  idempotencyKeyTaken,
  jobByIdempotencyKey,
  type JobViewRow,
  jobWithPlace,
  pendingMediaJobs,
} from "./jobs.repository.ts";
import { blobUrl, type JobOutput, jobNotFound } from "./outputs.ts";
import { encodeJobRequest, jobRequestOf } from "./request.ts";
import type { JobSpec } from "./validate.ts";

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
  output: { url: string; content_type: string; urls: string[]; duration_sec?: number } | null;
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
async function limitsOfOwner(db: Executor, owner: JobOwner): Promise<EffectiveLimits | null> {
  return owner.limits !== undefined ? owner.limits : effectiveLimits(db, owner.accountId);
}

/** Whether the owner's image and video jobs share one pool (tier 4) per its limits. */
function combinedPool(limits: EffectiveLimits | null): boolean {
  return limits !== null && mediaCaps(limits, "image").pool === "combined";
}

/** `owner` as a {@link JobOwner} (an account id alone carries no limits). */
function ownerOf(owner: string | JobOwner): JobOwner {
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
    if (r.kind === "video" && r.duration_sec !== null) output.duration_sec = Number(r.duration_sec);
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

/**
 * A job of the caller (`owner`: an account id, or the account with the limits its request carries). One
 * statement reads the job and, while it is pending, the jobs ahead of it (jobs.repository.ts).
 * @throws AppError 404 `job_not_found` (also for another account's job, D2).
 */
export async function getJob(db: Executor, publicBaseUrl: string, owner: string | JobOwner, jobId: string): Promise<JobView> {
  const o = ownerOf(owner);
  const r = await jobWithPlace(db, jobId, o.accountId);
  if (!r) throw jobNotFound();
  let position: number | null = null;
  if (r.status === "pending" && (r.kind === "image" || r.kind === "video")) {
    // The pool is the kind, or image and video together on a combined pool (tier 4), per the limits.
    const combined = combinedPool(await limitsOfOwner(db, o));
    position = Number((combined ? r.ahead_pool : r.ahead_kind) ?? 0) + 1;
  }
  return jobView(publicBaseUrl, r, position);
}

/** Filters and page of {@link listJobs}. */
export interface JobListQuery {
  /** Page size, 1..100. */
  limit: number;
  /** The `id` of the last job of the previous page, or null for the first page. */
  after: string | null;
  status: JobsTable["status"] | null;
  kind: JobsTable["kind"] | null;
  model: string | null;
}

/**
 * The caller's jobs, newest first (`created_at`, then `id`), with the filters of `GET /v1/jobs` (D30): at
 * most `limit` jobs older than the job `after`, and whether more exist. An `after` that names no job of
 * this account is ignored (the first page), as the ledger's and the gallery's cursors are. Another
 * account's jobs never appear.
 */
export async function listJobs(
  db: Executor,
  publicBaseUrl: string,
  owner: string | JobOwner,
  query: JobListQuery,
): Promise<{ jobs: JobView[]; hasMore: boolean }> {
  const o = ownerOf(owner);
  const rows = await accountJobs(db, o.accountId, query, query.limit + 1, query.after);
  const page = rows.slice(0, query.limit);
  const positions = page.some((r) => r.status === "pending") ? await queuePositions(db, o) : new Map<string, number>();
  return { jobs: page.map((r) => jobView(publicBaseUrl, r, positions.get(r.id) ?? null)), hasMore: rows.length > query.limit };
}

/** SHA-256 of a JSON value with object keys sorted: equal requests hash equal whatever their key order. */
export function canonicalHash(value: unknown): string {
  const canon = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canon);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.keys(v as Record<string, unknown>)
          .sort()
          .map((k) => [k, canon((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return createHash("sha256").update(JSON.stringify(canon(value))).digest("hex");
}

/**
 * This process's job runner as a submit sees it (runner.ts): a submit may start its job there at once,
 * in its own transaction, instead of leaving it `pending` for the runner's next claim (one transaction
 * and a round of claim queries less per job).
 */
export interface JobStarter {
  /** The runner's `worker_id`, written on a job it runs. */
  readonly workerId: string;
  /**
   * Takes a place for one job, synchronously; false when the runner is full or stopping, or may have
   * pending jobs to start first (it then claims them itself, oldest first).
   */
  reserve(): boolean;
  /** Gives back a place taken by {@link reserve} (the job was not started, or the submit failed). */
  unreserve(): void;
  /** Runs `job`, committed as `processing` by this runner, in the place taken by {@link reserve}. */
  adopt(job: ClaimedJob): void;
}

/** Thrown inside a submit's transaction when its idempotency key is already taken: roll back, then replay. */
class IdempotentReplay extends Error {}

/** Seconds a caller is told to wait when a queue is full (`Retry-After`). */
const QUEUE_RETRY_AFTER_S = { image: 5, video: 30 } as const;

/**
 * The job of an earlier submit with `(apiKeyId, key)`, or null when there is none. Its owner is the
 * submitting account (keys belong to one account), whose `limits` place it in its queue.
 * @throws AppError 409 `idempotency_conflict` when that submit's body hashed differently.
 */
async function replay(
  db: Executor,
  publicBaseUrl: string,
  limits: EffectiveLimits,
  apiKeyId: string,
  key: string,
  hash: string,
): Promise<{ job: JobView; replayed: true } | null> {
  const r = await jobByIdempotencyKey(db, apiKeyId, key);
  if (!r) return null;
  if (r.request_hash !== hash) {
    throw new AppError(409, "idempotency_conflict", "This idempotency_key was used with a different request body.", "idempotency_key");
  }
  const position = r.status === "pending" ? ((await queuePositions(db, { accountId: r.account_id, limits })).get(r.id) ?? null) : null;
  return { job: jobView(publicBaseUrl, r, position), replayed: true };
}

/** The job a submit starts at once on its runner, as the runner takes it (the inserted row's values). */
function claimedOf(row: NewJob): ClaimedJob {
  return {
    id: row.id,
    account_id: row.account_id,
    kind: row.kind,
    model: row.model,
    hold_id: row.hold_id,
    hold_micros: row.hold_micros,
    request_json: row.request_json,
    started_at: row.now,
    upstream_handle_json: null,
    fallback_layer: 0,
    mode: row.mode,
    webhook_url: row.webhook_url,
  };
}

/** The view row of a job as its submit committed it (the inserted row's values): no read after the insert. */
function committedViewRow(row: NewJob, started: boolean): JobViewRow {
  return {
    id: row.id,
    kind: row.kind,
    model: row.model,
    status: started ? "processing" : "pending",
    hold_micros: row.hold_micros,
    cost_micros: null,
    created_at: row.now,
    updated_at: row.now,
    output_json: null,
    error_code: null,
    error_message: null,
    idempotency_key: row.idempotency_key,
    duration_sec: row.duration_sec,
    fallback_layer: 0,
    progress: null,
  };
}

/**
 * Submits a job: a replay of `(api key, idempotency_key)` answers the existing job (same body) or 409;
 * otherwise the hold, the job's `pending` usage record (D29, the submit's request id) and the job row are
 * written in one transaction after the queue cap is checked. A test-mode call (`call.mode`, D32) places
 * no hold and is not gated by the balance; its job records the mode so the runner serves it with the
 * simulator.
 * @returns the job and whether it was a replay (200) or new (202).
 * @throws AppError 402 `insufficient_balance`, 409 `idempotency_conflict`, 429 `rate_limited`.
 */
export async function submitJob(
  deps: { db: Executor; publicBaseUrl: string; starter?: JobStarter | null },
  principal: { accountId: string; keyId: string | null; limits?: EffectiveLimits },
  spec: JobSpec,
  body: unknown,
  simulate: SimulateMode | null = null,
  call?: CallContext,
): Promise<{ job: JobView; replayed: boolean; started: boolean }> {
  const usage = usageFor(call ?? { requestId: newTimeOrderedId("req"), keyId: principal.keyId, mode: "live" }, spec.kind, spec.kind === "image" ? { images: spec.n } : { seconds: spec.durationSec });
  const hash = canonicalHash(body);
  const idemKey = spec.idempotencyKey;
  const keyId = principal.keyId;
  // The limits the request was authenticated with (read with the key; read here only for a caller without
  // them): the caps, the video gate and a replayed job's queue place all use them, read once.
  const limits = principal.limits ?? (await effectiveLimits(deps.db, principal.accountId));
  if (!limits) throw errors.auth();
  if (idemKey !== null && keyId !== null) {
    const existing = await replay(deps.db, deps.publicBaseUrl, limits, keyId, idemKey, hash);
    if (existing) return { ...existing, started: false };
  }
  if (spec.kind === "video" && limits.combinedMediaConcurrent === null && limits.videoConcurrent === 0) {
    const first = TIERS.find((t) => t.videoConcurrent > 0 || t.combinedMediaConcurrent !== null);
    throw errors.rateLimited(
      `Video generation is not available on ${limits.name}; it starts at ${first?.name ?? "a higher tier"} (deposits of ${formatUsd(first?.minDepositMicros ?? 0)} USD).`,
      60,
    );
  }
  const caps = mediaCaps(limits, spec.kind);
  // The job row as the submit writes it: inserted below, then the runner's job (when it starts at once)
  // and the answer's view, without reading it back.
  const row: NewJob = {
    id: newTimeOrderedId("job"),
    account_id: principal.accountId,
    api_key_id: keyId,
    kind: spec.kind,
    model: spec.model.id,
    hold_id: null,
    hold_micros: spec.holdMicros,
    mode: usage.mode,
    request_json: encodeJobRequest(jobRequestOf(spec, simulate)),
    request_hash: hash,
    idempotency_key: idemKey,
    duration_sec: spec.kind === "video" ? spec.durationSec : null,
    webhook_url: spec.webhookUrl,
    now: Date.now(),
  };
  // A place on this process's runner, taken before the transaction so that a job found startable in it
  // cannot then find the runner full; given back unless the job started (and adopted after the commit).
  const starter = deps.starter ?? null;
  const reserved = starter?.reserve() ?? false;
  let started = false;
  let queuePosition: number | null = null;
  try {
    await inTransaction(deps.db, async (trx) => {
      // The hold comes first: on PostgreSQL its UPDATE locks the account row, so the count below and
      // the insert are serialized per account and two submits cannot both take the last queue place.
      const hold = await holdOrRefuse(
        trx,
        { accountId: principal.accountId, amountMicros: spec.holdMicros, jobId: row.id, reference: spec.model.id, usage },
        () => errors.insufficientBalance(`The hold of ${formatUsd(spec.holdMicros)} USD could not be placed: balance too low.`),
      );
      row.hold_id = hold?.id ?? null;
      if (idemKey !== null && keyId !== null) {
        // A submit with the same key that committed while this one waited for the account row: answer
        // its job (rolling this hold back) instead of inserting. Inserting would make PostgreSQL's unique
        // check wait for any transaction updating that job row (the runner's success, a cancel), which in
        // turn waits for the account row this transaction holds: a deadlock.
        if (await idempotencyKeyTaken(trx, keyId, idemKey)) throw new IdempotentReplay();
      }
      // Within the pool's caps (D12): refused when its queue is full; started at once on this process's
      // runner when it holds a place, the account is below its concurrency cap and none of its jobs of the
      // pool waits (they start first: queue_position, D30); else pending. The hold above locked the
      // account row on PostgreSQL, which claims lock too before they count running jobs, so the caps hold
      // across processes (storage/job-queue.ts).
      const out = await insertJobWithinCaps(trx, row, {
        pool: caps.pool === "combined" ? "combined" : "kind",
        concurrent: caps.concurrent,
        queue: caps.queue,
        startOn: reserved && starter ? starter.workerId : null,
      });
      if (!out.inserted) {
        throw errors.rateLimited(
          `Too many ${caps.pool === "combined" ? "image and video" : spec.kind} jobs in flight (${out.active}; ${limits.name} allows ${caps.concurrent} running and ${caps.queue} queued).`,
          QUEUE_RETRY_AFTER_S[spec.kind],
        );
      }
      started = out.started;
      queuePosition = started ? null : out.ahead + 1;
    });
  } catch (err) {
    started = false;
    if ((err instanceof IdempotentReplay || isUniqueViolation(err)) && idemKey !== null && keyId !== null) {
      // A concurrent submit with the same key won the race: answer its job (or the conflict).
      const existing = await replay(deps.db, deps.publicBaseUrl, limits, keyId, idemKey, hash);
      if (existing) return { ...existing, started: false };
    }
    throw err;
  } finally {
    if (reserved && !started) starter?.unreserve();
  }
  if (started && starter) starter.adopt(claimedOf(row));
  // The job as committed: no second read (its queue place was counted in the transaction).
  return { job: jobView(deps.publicBaseUrl, committedViewRow(row, started), queuePosition), replayed: false, started };
}

/** Running and queued jobs of an account by kind (for `GET /v1/auth/limits`). */
export async function jobUsage(
  db: Executor,
  accountId: string,
): Promise<{ image_running: number; image_queued: number; video_running: number; video_queued: number }> {
  const rows = await activeJobCounts(db, accountId);
  const n = (kind: string, status: string) => rows.find((r) => r.kind === kind && r.status === status)?.n ?? 0;
  return {
    image_running: n("image", "processing"),
    image_queued: n("image", "pending"),
    video_running: n("video", "processing"),
    video_queued: n("video", "pending"),
  };
}
