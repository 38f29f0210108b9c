/**
 * The gateway's job (D3) as a Replicate prediction (D47). Every prediction is a job row: an image or video
 * job, or a synchronous speech, music or sound-effect call stored as an already succeeded `audio` job; its
 * id is the job id. How the caller named it (model, version, input as sent) and its webhook filter are the
 * job's dialect facts (jobs/dialect-facts.ts); a job made elsewhere (native routes, another dialect) renders
 * as `gateway/<catalog id>`.
 *
 * | job | prediction `status` |
 * |---|---|
 * | `pending` | `starting` |
 * | `processing` | `processing` |
 * | `succeeded` | `succeeded` (`output`: the stored file's URL; an image job's list of URLs) |
 * | `failed` with `error.code` `canceled` | `canceled` |
 * | `failed` with `error.code` `aborted` (its `Cancel-After` passed before it started) | `aborted` |
 * | `failed` otherwise, `refunded`, `expired` | `failed` (`error`: the job's message) |
 *
 * Rendering plus one read; no HTTP. It sits beside the job's own view (view.ts) rather than in the
 * dialect's folder because a prediction webhook's body (webhooks/delivery.ts, wired by services.ts) is
 * rendered by whichever process delivers it, a `worker` without the HTTP app included.
 */
import type { Executor } from "../billing/ledger.ts";
import { dialectViews, type JobDialectView } from "./dialect-facts.ts";
import { getJob, type JobOwner, type JobView } from "./jobs.ts";
import { AppError } from "../errors.ts";

/** A prediction's status (Replicate's). */
export type PredictionStatus = "starting" | "processing" | "succeeded" | "failed" | "canceled" | "aborted";

/** What the dialect keeps of a prediction's request (the job's `dialect_json`). */
export interface PredictionNames {
  /** `owner/name` as the caller named the model. */
  model: string;
  /** The version id the prediction ran (the model's current one). */
  version: string;
  /** The input as sent (long strings cut, see the routes). */
  input: Record<string, unknown>;
  /** The output's shape: one URL, or a list (models.ts `ReplicateModel.output`); absent: a list for images. */
  output?: "uri" | "uris";
}

/** Replicate's prediction object. Times ISO 8601; `metrics` seconds. */
export interface Prediction {
  id: string;
  model: string;
  version: string;
  input: Record<string, unknown>;
  output: string | string[] | null;
  error: string | null;
  logs: string;
  status: PredictionStatus;
  source: "api";
  data_removed: boolean;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  metrics: { predict_time?: number; total_time?: number };
  urls: { get: string; cancel: string; web?: string };
  webhook?: string;
  webhook_events_filter?: string[];
}

/** The prediction status of a job. */
export function predictionStatus(job: Pick<JobView, "status" | "error">): PredictionStatus {
  switch (job.status) {
    case "pending":
      return "starting";
    case "processing":
      return "processing";
    case "succeeded":
      return "succeeded";
    case "failed":
      if (job.error?.code === "canceled") return "canceled";
      if (job.error?.code === "aborted") return "aborted";
      return "failed";
    default:
      return "failed";
  }
}

/** Whether a prediction status is final (the client stops polling at `succeeded`, `failed`, `canceled`). */
export function isFinal(status: PredictionStatus): boolean {
  return status !== "starting" && status !== "processing";
}

/** The names a job was made with, or `gateway/<catalog id>` for a job made elsewhere. */
function namesOf(job: JobView, view: JobDialectView | undefined): PredictionNames {
  if (view?.dialectJson) {
    try {
      return JSON.parse(view.dialectJson) as PredictionNames;
    } catch {
      // A row not written by this dialect: rendered by its catalog id.
    }
  }
  return { model: `gateway/${job.model}`, version: "hidden", input: job.prompt === null ? {} : { prompt: job.prompt } };
}

/** Seconds between two ISO times or epoch ms, to the millisecond. */
function secondsBetween(from: number, to: number): number {
  return Math.max(0, Math.round(to - from)) / 1000;
}

/**
 * Renders `job` (with its dialect facts `view`) as a prediction; `asStarted` renders it as it was created
 * (a `start` webhook's body: `starting`, no output). `publicBaseUrl` makes its `urls`.
 */
export function predictionOf(publicBaseUrl: string, job: JobView, view: JobDialectView | undefined, asStarted = false): Prediction {
  const names = namesOf(job, view);
  const status: PredictionStatus = asStarted ? "starting" : predictionStatus(job);
  const created = Date.parse(job.created_at);
  const ended = isFinal(status) ? Date.parse(job.updated_at) : null;
  const started = asStarted ? null : (view?.startedAt ?? (job.status === "processing" || job.status === "succeeded" ? created : null));
  let output: Prediction["output"] = null;
  const list = names.output !== undefined ? names.output === "uris" : job.kind === "image";
  if (status === "succeeded" && job.output !== null) output = list ? job.output.urls : job.output.url;
  const base = `${publicBaseUrl}/replicate/v1/predictions/${encodeURIComponent(job.id)}`;
  const metrics: Prediction["metrics"] = {};
  if (status === "succeeded" && ended !== null) {
    metrics.predict_time = secondsBetween(started ?? created, ended);
    metrics.total_time = secondsBetween(created, ended);
  }
  return {
    id: job.id,
    model: names.model,
    version: names.version,
    input: names.input,
    output,
    error: status === "failed" ? (job.error?.message ?? `The prediction ended ${job.status}.`) : null,
    logs: "",
    status,
    source: "api",
    data_removed: status === "succeeded" && job.output === null,
    created_at: job.created_at,
    started_at: started === null ? null : new Date(started).toISOString(),
    completed_at: ended === null ? null : new Date(ended).toISOString(),
    metrics,
    urls: { get: base, cancel: `${base}/cancel` },
    ...(view?.webhookUrl && view.webhookEvents !== null ? { webhook: view.webhookUrl, webhook_events_filter: [...view.webhookEvents] } : {}),
  };
}

/** The dialect facts of `jobs` (one read), rendered as predictions in the same order. */
export async function predictionsOf(db: Executor, publicBaseUrl: string, accountId: string, jobs: readonly JobView[]): Promise<Prediction[]> {
  const views = await dialectViews(db, accountId, jobs.map((j) => j.id));
  return jobs.map((j) => predictionOf(publicBaseUrl, j, views.get(j.id)));
}

/**
 * Prediction `id` of `owner` as it is now (or, `asStarted`, as it was created).
 * @throws AppError 404 `job_not_found` (unknown, or another account's).
 */
export async function loadPrediction(db: Executor, publicBaseUrl: string, owner: string | JobOwner, id: string, asStarted = false): Promise<Prediction> {
  const job = await getJob(db, publicBaseUrl, owner, id);
  const accountId = typeof owner === "string" ? owner : owner.accountId;
  const views = await dialectViews(db, accountId, [job.id]);
  return predictionOf(publicBaseUrl, job, views.get(job.id), asStarted);
}

/**
 * The body of a `prediction.<event>` webhook delivery (webhooks/delivery.ts): the prediction as created
 * (`start`) or as it ended; null when the job is gone.
 */
export async function webhookPrediction(db: Executor, publicBaseUrl: string, accountId: string, jobId: string, event: "start" | "output" | "completed"): Promise<Prediction | null> {
  try {
    return await loadPrediction(db, publicBaseUrl, accountId, jobId, event === "start");
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return null;
    throw err;
  }
}
