/**
 * A media job's submit (spec "Media job", D3, D12, D29, D30, D32): idempotency, the queue caps, the hold
 * and the job row in one transaction, and the job started at once on this process's runner when it has
 * room ({@link JobStarter}). Reads nothing it already has: the limits come with the request's principal,
 * and the inserted row's values make the runner's job and the answer.
 */
import { createHash } from "node:crypto";
import { type Executor, inTransaction } from "../billing/ledger.ts";
import type { BalanceEvents } from "../billing/balance-events.ts";
import { holdOrRefuse } from "../billing/paid-call.ts";
import { formatUsd } from "../money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import { AppError, errors } from "../errors.ts";
import { newTimeOrderedId } from "../ids.ts";
import { currentTraceparent } from "../observability/tracing.ts";
import { effectiveLimits } from "../accounts/limits.ts";
import { type EffectiveLimits, mediaCaps, wayUp } from "../limits/effective.ts";
import { isUniqueViolation } from "../storage/db.ts";
import { type ClaimedJob, insertJobWithinCaps, type NewJob } from "../storage/job-queue.ts";
import type { SimulateMode } from "../upstreams/types.ts";
import type { RetentionWindows } from "../config.ts";
import { promptsKept } from "../accounts/retention.ts";
import { idempotencyKeyTaken, jobByIdempotencyKey, type JobViewRow, markTextsWithheld } from "./jobs.repository.ts";
import { encodeJobRequest, jobRequestOf, textsOf, withoutJobTexts } from "./request.ts";
import type { WithheldTexts } from "./texts.ts";
import type { JobSpec } from "./validate.ts";
import { type JobDialectFacts, recordDialectFacts } from "./dialect-facts.ts";
import { jobView, type JobView, queuePositions } from "./view.ts";

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
    traceparent: row.traceparent,
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
    request_json: row.request_json,
    mode: row.mode,
  };
}

/**
 * Test-mode videos running at once per organization on a tier whose video pool has size 0 (D48). Live
 * video is refused there at submit, so the runner's claim (runner.ts `capsOf`) gives such a pool this
 * size: every video job of such an account is a test-mode one.
 */
export const TEST_VIDEO_CONCURRENT = 1;

/**
 * The caps of the job's pool (D12), with D48's two rules for a tier whose video pool has size 0 (Tier 0):
 * a test-mode submit (D32: simulated, no money) runs one video at a time per organization; a live one is
 * refused at once with a 429 that no wait lifts, naming the way up.
 * @throws AppError 429 `rate_limited` with `x-should-retry: false` (live video on a tier without video).
 */
function jobCaps(limits: EffectiveLimits, kind: "image" | "video", mode: "live" | "test"): ReturnType<typeof mediaCaps> {
  const caps = mediaCaps(limits, kind);
  if (kind !== "video" || caps.pool !== "video" || caps.concurrent > 0) return caps;
  if (mode === "test") return { pool: "video", concurrent: TEST_VIDEO_CONCURRENT, queue: 0 };
  const way = wayUp(limits, (t) => t.videoConcurrent > 0 || t.combinedMediaConcurrent !== null);
  throw errors.neverAllowed(`Video generation is not available on ${limits.name}. ${way} A test-mode key (gw_test_...) runs simulated video here now, one at a time.`);
}

/**
 * Submits a job: a replay of `(api key, idempotency_key)` answers the existing job (same body) or 409;
 * otherwise the hold, the job's `pending` usage record (D29, the submit's request id) and the job row are
 * written in one transaction after the queue cap is checked. A test-mode call (`call.mode`, D32) places
 * no hold and is not gated by the balance; its job records the mode so the runner serves it with the
 * simulator. `deps.events`, when given, hears of the hold once it committed (D34 low-balance alerts).
 * `dialect` (D47) is written on the job in the same transaction, with its webhook's `start` event.
 * With `deps.retention` (D46), an organization whose prompts window is 0 gets its job written without its
 * texts (prompt, parameters' strings; the dialect's echo of the input too), held in `withheld` for this
 * process's runner instead and named on the row (texts.ts); without `deps.retention` the texts are stored.
 * @returns the job and whether it was a replay (200) or new (202).
 * @throws AppError 402 `insufficient_balance`, 409 `idempotency_conflict`, 429 `rate_limited` (a full
 *   queue with `Retry-After`; a tier without video with `x-should-retry: false`, D48).
 */
export async function submitJob(
  deps: {
    db: Executor;
    publicBaseUrl: string;
    starter?: JobStarter | null;
    events?: BalanceEvents | null;
    /** The operator's windows and this process's store of withheld texts (D46 zero retention). */
    retention?: { windows: RetentionWindows; withheld: WithheldTexts } | null;
  },
  principal: { accountId: string; keyId: string | null; limits?: EffectiveLimits },
  spec: JobSpec,
  body: unknown,
  simulate: SimulateMode | null = null,
  call?: CallContext,
  dialect?: JobDialectFacts,
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
  const caps = jobCaps(limits, spec.kind, usage.mode);
  // Zero retention (D46): the texts never reach the database; this process holds them for its runner.
  const withheld = deps.retention && !(await promptsKept(deps.db, deps.retention.windows, principal.accountId)) ? deps.retention.withheld : null;
  const request = jobRequestOf(spec, simulate);
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
    request_json: encodeJobRequest(withheld === null ? request : withoutJobTexts(request)),
    request_hash: hash,
    idempotency_key: idemKey,
    duration_sec: spec.kind === "video" ? spec.durationSec : null,
    webhook_url: spec.webhookUrl,
    // D40: the runner and the webhook deliveries continue the submit's trace.
    traceparent: currentTraceparent(),
    now: Date.now(),
  };
  // A place on this process's runner, taken before the transaction so that a job found startable in it
  // cannot then find the runner full; given back unless the job started (and adopted after the commit).
  const starter = deps.starter ?? null;
  withheld?.put(row.id, textsOf(request), row.now);
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
      // Before the commit, so no other runner can claim it meanwhile: only this process has its texts.
      if (withheld !== null) await markTextsWithheld(trx, row.id, withheld.holderId, row.now);
      // A dialect's facts (D47: deadline, webhook format, names) and its `start` event, with the job.
      if (dialect !== undefined) {
        await recordDialectFacts(trx, { jobId: row.id, accountId: principal.accountId, webhookUrl: row.webhook_url, facts: dialect, textsKept: withheld === null });
      }
    });
  } catch (err) {
    started = false;
    withheld?.drop(row.id);
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
  // The hold was written in the submit's transaction, which balance listeners do not hear: tell them now
  // that it committed, so a low-balance alert (D34) fires on this fall, not at the next sweep.
  if (row.hold_id !== null) deps.events?.changed(deps.db, principal.accountId);
  // The job as committed: no second read (its queue place was counted in the transaction).
  return { job: jobView(deps.publicBaseUrl, committedViewRow(row, started), queuePosition), replayed: false, started };
}
