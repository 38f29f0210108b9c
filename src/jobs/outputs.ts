/**
 * Stored outputs of a caller's jobs: the gallery (D8, D19) and the public share page of one job.
 * Only succeeded jobs with a stored output are shown; another account's job is "not found" (invariant 5).
 */
import type { Executor } from "../billing/ledger.ts";
import { microsToUsd } from "../billing/money.ts";
import type { SelectQueryBuilder } from "kysely";
import { AppError } from "../errors.ts";
import type { Database } from "../storage/schema.ts";

/** The stored output of a job (`jobs.output_json`). */
export interface JobOutput {
  key: string;
  content_type: string;
  keys: string[];
}

/** A gallery item. Amounts in USD; duration in seconds. */
export interface GalleryItem {
  job_id: string;
  kind: string;
  model: string;
  url: string;
  urls: string[];
  content_type: string;
  duration_sec: number | null;
  cost_usd: number | null;
  created_at: string;
  share_url: string;
}

/** Public URL of a stored blob. */
export function blobUrl(publicBaseUrl: string, key: string): string {
  return `${publicBaseUrl}/v1/files/${key}`;
}

/** 404 `job_not_found` (D2: never reveal that another account's job exists). */
export const jobNotFound = () => new AppError(404, "job_not_found", "No such job.", "id");

function toItem(
  publicBaseUrl: string,
  r: { id: string; kind: string; model: string; output_json: string | null; duration_sec: number | null; cost_micros: number | null; created_at: number },
): GalleryItem {
  const out = JSON.parse(r.output_json ?? "{}") as JobOutput;
  return {
    job_id: r.id,
    kind: r.kind,
    model: r.model,
    url: blobUrl(publicBaseUrl, out.key),
    urls: (out.keys ?? [out.key]).map((k) => blobUrl(publicBaseUrl, k)),
    content_type: out.content_type,
    duration_sec: r.duration_sec === null ? null : Number(r.duration_sec),
    cost_usd: r.cost_micros === null ? null : microsToUsd(Number(r.cost_micros)),
    created_at: new Date(Number(r.created_at)).toISOString(),
    share_url: `${publicBaseUrl}/share/${r.id}`,
  };
}

const COLUMNS = ["id", "kind", "model", "output_json", "duration_sec", "cost_micros", "created_at"] as const;

/**
 * The caller's stored outputs, newest first: at most `limit` items after the job `after` (a job id from a
 * previous page), and whether more exist.
 */
export async function listGallery(
  db: Executor,
  publicBaseUrl: string,
  accountId: string,
  opts: { limit: number; after: string | null },
): Promise<{ items: GalleryItem[]; hasMore: boolean }> {
  let q = db
    .selectFrom("jobs")
    .select([...COLUMNS])
    .where("account_id", "=", accountId)
    .where("status", "=", "succeeded")
    .where("output_json", "is not", null)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(opts.limit + 1);
  q = await olderThanJob(db, q, accountId, opts.after);
  const rows = await q.execute();
  return { items: rows.slice(0, opts.limit).map((r) => toItem(publicBaseUrl, r)), hasMore: rows.length > opts.limit };
}

/** A succeeded job's output for its public share page. @throws AppError 404 `job_not_found`. */
export async function sharedOutput(db: Executor, publicBaseUrl: string, jobId: string): Promise<GalleryItem> {
  const r = await db
    .selectFrom("jobs")
    .select([...COLUMNS])
    .where("id", "=", jobId)
    .where("status", "=", "succeeded")
    .where("output_json", "is not", null)
    .executeTakeFirst();
  if (!r) throw jobNotFound();
  return toItem(publicBaseUrl, r);
}

/**
 * The keyset page after job `after` of `accountId` (newest first: `created_at desc, id desc`): `q`
 * narrowed to the jobs older than that one, or `q` as it is when `after` is null or not the account's job
 * (the listing then starts at the newest).
 */
export async function olderThanJob<O>(
  db: Executor,
  q: SelectQueryBuilder<Database, "jobs", O>,
  accountId: string,
  after: string | null,
): Promise<SelectQueryBuilder<Database, "jobs", O>> {
  if (after === null) return q;
  const anchor = await db.selectFrom("jobs").select(["created_at", "id"]).where("id", "=", after).where("account_id", "=", accountId).executeTakeFirst();
  if (!anchor) return q;
  const at = Number(anchor.created_at);
  return q.where((eb) => eb.or([eb("created_at", "<", at), eb.and([eb("created_at", "=", at), eb("id", "<", anchor.id)])]));
}
