/**
 * The media job lifecycle's front half (spec "Media job", D3): submit (validate, cap the queue, write the
 * job row and its hold in one transaction, idempotency), read (owner only) and the public job object.
 */
import { createHash } from "node:crypto";
import { type Executor, inTransaction } from "../billing/ledger.ts";
import { holdOrRefuse } from "../billing/paid-call.ts";
import { formatUsd, microsToUsd } from "../billing/money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import { TIERS } from "../catalog/tiers.ts";
import { AppError, errors } from "../errors.ts";
import { newId } from "../ids.ts";
import { effectiveLimits } from "../accounts/accounts.ts";
import { mediaCaps } from "../limits/effective.ts";
import { isUniqueViolation } from "../storage/db.ts";
import type { JobsTable } from "../storage/schema.ts";
import type { SimulateMode } from "../upstreams/types.ts";
import { blobUrl, type JobOutput, jobNotFound } from "./outputs.ts";
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
}

type JobRow = Pick<
  JobsTable,
  | "id"
  | "kind"
  | "model"
  | "status"
  | "hold_micros"
  | "cost_micros"
  | "created_at"
  | "updated_at"
  | "output_json"
  | "error_code"
  | "error_message"
  | "idempotency_key"
  | "duration_sec"
> & { fallback_layer: number };

const VIEW_COLUMNS = [
  "id",
  "kind",
  "model",
  "status",
  "hold_micros",
  "cost_micros",
  "created_at",
  "updated_at",
  "output_json",
  "error_code",
  "error_message",
  "idempotency_key",
  "duration_sec",
  "fallback_layer",
] as const;

/** Renders a job row as the D3 object. */
export function jobView(publicBaseUrl: string, r: JobRow): JobView {
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
  };
}

/** A job of the caller. @throws AppError 404 `job_not_found` (also for another account's job, D2). */
export async function getJob(db: Executor, publicBaseUrl: string, accountId: string, jobId: string): Promise<JobView> {
  const r = await db
    .selectFrom("jobs")
    .select([...VIEW_COLUMNS])
    .where("id", "=", jobId)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  if (!r) throw jobNotFound();
  return jobView(publicBaseUrl, r);
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

/** The serializable request the runner gives the adapter. */
export function specToRequest(spec: JobSpec): Record<string, unknown> {
  if (spec.kind === "image") {
    return {
      model: spec.model.id,
      prompt: spec.prompt,
      n: spec.n,
      aspect: spec.aspect,
      width: spec.width,
      height: spec.height,
      quality: spec.quality,
      output: spec.model.output,
      imageUrls: spec.imageUrls,
      parameters: spec.parameters,
    };
  }
  return {
    model: spec.model.id,
    prompt: spec.prompt,
    durationSec: spec.durationSec,
    imageUrl: spec.imageUrl,
    parameters: spec.parameters,
  };
}

/** Seconds a caller is told to wait when a queue is full (`Retry-After`). */
const QUEUE_RETRY_AFTER_S = { image: 5, video: 30 } as const;

/** Statuses that occupy a concurrency slot or a queue place. */
const ACTIVE = ["pending", "processing"] as const;

async function replay(
  db: Executor,
  publicBaseUrl: string,
  apiKeyId: string,
  key: string,
  hash: string,
): Promise<{ job: JobView; replayed: true } | null> {
  const r = await db
    .selectFrom("jobs")
    .select([...VIEW_COLUMNS, "request_hash"])
    .where("api_key_id", "=", apiKeyId)
    .where("idempotency_key", "=", key)
    .executeTakeFirst();
  if (!r) return null;
  if (r.request_hash !== hash) {
    throw new AppError(409, "idempotency_conflict", "This idempotency_key was used with a different request body.", "idempotency_key");
  }
  return { job: jobView(publicBaseUrl, r), replayed: true };
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
  deps: { db: Executor; publicBaseUrl: string },
  principal: { accountId: string; keyId: string | null },
  spec: JobSpec,
  body: unknown,
  simulate: SimulateMode | null = null,
  call?: CallContext,
): Promise<{ job: JobView; replayed: boolean }> {
  const usage = usageFor(call ?? { requestId: newId("req"), keyId: principal.keyId, mode: "live" }, spec.kind, spec.kind === "image" ? { images: spec.n } : { seconds: spec.durationSec });
  const hash = canonicalHash(body);
  const idemKey = spec.idempotencyKey;
  const keyId = principal.keyId;
  if (idemKey !== null && keyId !== null) {
    const existing = await replay(deps.db, deps.publicBaseUrl, keyId, idemKey, hash);
    if (existing) return existing;
  }
  const limits = await effectiveLimits(deps.db, principal.accountId);
  if (!limits) throw errors.auth();
  if (spec.kind === "video" && limits.combinedMediaConcurrent === null && limits.videoConcurrent === 0) {
    const first = TIERS.find((t) => t.videoConcurrent > 0 || t.combinedMediaConcurrent !== null);
    throw errors.rateLimited(
      `Video generation is not available on ${limits.name}; it starts at ${first?.name ?? "a higher tier"} (deposits of ${formatUsd(first?.minDepositMicros ?? 0)} USD).`,
      60,
    );
  }
  const caps = mediaCaps(limits, spec.kind);
  const jobId = newId("job");
  const now = Date.now();
  try {
    await inTransaction(deps.db, async (trx) => {
      // The hold comes first: on PostgreSQL its UPDATE locks the account row, so the count below and
      // the insert are serialized per account and two submits cannot both take the last queue place.
      const hold = await holdOrRefuse(
        trx,
        { accountId: principal.accountId, amountMicros: spec.holdMicros, jobId, reference: spec.model.id, usage },
        () => errors.insufficientBalance(`The hold of ${formatUsd(spec.holdMicros)} USD could not be placed: balance too low.`),
      );
      let q = trx
        .selectFrom("jobs")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("account_id", "=", principal.accountId)
        .where("status", "in", [...ACTIVE]);
      q = caps.pool === "combined" ? q.where("kind", "in", ["image", "video"]) : q.where("kind", "=", spec.kind);
      const active = Number((await q.executeTakeFirstOrThrow()).n);
      if (active >= caps.concurrent + caps.queue) {
        throw errors.rateLimited(
          `Too many ${caps.pool === "combined" ? "image and video" : spec.kind} jobs in flight (${active}; ${limits.name} allows ${caps.concurrent} running and ${caps.queue} queued).`,
          QUEUE_RETRY_AFTER_S[spec.kind],
        );
      }
      await trx
        .insertInto("jobs")
        .values({
          id: jobId,
          account_id: principal.accountId,
          api_key_id: keyId,
          kind: spec.kind,
          model: spec.model.id,
          status: "pending",
          hold_id: hold?.id ?? null,
          hold_micros: spec.holdMicros,
          mode: usage.mode,
          cost_micros: null,
          request_json: JSON.stringify({ ...specToRequest(spec), simulate }),
          request_hash: hash,
          idempotency_key: idemKey,
          output_json: null,
          duration_sec: spec.kind === "video" ? spec.durationSec : null,
          error_code: null,
          error_message: null,
          created_at: now,
          updated_at: now,
          started_at: null,
          heartbeat_at: null,
          worker_id: null,
        })
        .execute();
    });
  } catch (err) {
    if (isUniqueViolation(err) && idemKey !== null && keyId !== null) {
      // A concurrent submit with the same key won the race: answer its job (or the conflict).
      const existing = await replay(deps.db, deps.publicBaseUrl, keyId, idemKey, hash);
      if (existing) return existing;
    }
    throw err;
  }
  const job = await getJob(deps.db, deps.publicBaseUrl, principal.accountId, jobId);
  return { job, replayed: false };
}

/** Running and queued jobs of an account by kind (for `GET /v1/auth/limits`). */
export async function jobUsage(
  db: Executor,
  accountId: string,
): Promise<{ image_running: number; image_queued: number; video_running: number; video_queued: number }> {
  const rows = await db
    .selectFrom("jobs")
    .select(["kind", "status", (eb) => eb.fn.countAll<number>().as("n")])
    .where("account_id", "=", accountId)
    .where("status", "in", [...ACTIVE])
    .groupBy(["kind", "status"])
    .execute();
  const n = (kind: string, status: string) => Number(rows.find((r) => r.kind === kind && r.status === status)?.n ?? 0);
  return {
    image_running: n("image", "processing"),
    image_queued: n("image", "pending"),
    video_running: n("video", "processing"),
    video_queued: n("video", "pending"),
  };
}
