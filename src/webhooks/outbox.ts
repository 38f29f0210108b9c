/**
 * The webhook outbox (D31): an event and one delivery row per destination are written in the caller's
 * transaction, so they exist exactly when the change that caused them committed (a job's terminal
 * transition; later a balance falling below its alert). The delivery loop (delivery.ts) sends them.
 */
import type { Transaction } from "kysely";
import { newId } from "../ids.ts";
import type { Database } from "../storage/schema.ts";
import type { BalanceLowData, BudgetThresholdData, JobEventType, PredictionEvent, WebhookEventType } from "./events.ts";
import { type Destination, enabledEndpoints, insertEvent, jobWebhook } from "./outbox.repository.ts";

/**
 * Writes event `type` of `accountId` and its deliveries: one per enabled endpoint subscribed to the type,
 * plus `extraUrl` (a job's `webhook_url`). Nothing is written when there is no destination. Returns the
 * event id, or null when nothing was written.
 */
async function enqueue(
  trx: Transaction<Database>,
  e: { accountId: string; type: WebhookEventType; jobId: string | null; dataJson: string | null; extraUrl: string | null },
): Promise<string | null> {
  const endpoints = await enabledEndpoints(trx, e.accountId);
  const destinations: Destination[] = endpoints
    .filter((ep) => (JSON.parse(ep.events_json) as string[]).includes(e.type))
    .map((ep) => ({ endpointId: ep.id, url: ep.url }));
  if (e.extraUrl !== null) destinations.push({ endpointId: null, url: e.extraUrl });
  if (destinations.length === 0) return null;
  const now = Date.now();
  const eventId = newId("evt");
  await insertEvent(trx, { id: eventId, accountId: e.accountId, type: e.type, jobId: e.jobId, dataJson: e.dataJson, now }, destinations);
  return eventId;
}

/**
 * Enqueues the event of a job's terminal transition (`job.succeeded`, `job.failed` (canceled jobs too),
 * `job.refunded`, `job.expired`) inside that transition's transaction `trx` (jobs/ended.ts). The job's
 * `webhook_url`, if any, is one more destination (`job.webhookUrl` when the caller has it, else read),
 * unless that URL takes the prediction format (D47): it then receives `prediction.output` (a success, when
 * its filter has `output`) and `prediction.completed` (when its filter has `completed`) instead, and the
 * account's endpoints the job event alone.
 * The event's `data`, the job object of D3 (or the prediction), is rendered by the delivery loop at the
 * first attempt (the job is terminal: it no longer changes) and then kept.
 * Returns the job event's id, or null when the account has no destination for it.
 */
export async function enqueueJobEvent(
  trx: Transaction<Database>,
  job: { id: string; accountId: string; type: JobEventType; webhookUrl?: string | null },
): Promise<string | null> {
  // The job's own webhook (undefined: unknown, read; null: none). A known URL is read again only for its
  // format, a column the runner's claim does not carry.
  const hook = job.webhookUrl === null ? null : await jobWebhook(trx, job.id);
  if (hook === null || hook.eventsJson === null) {
    return enqueue(trx, { accountId: job.accountId, type: job.type, jobId: job.id, dataJson: null, extraUrl: hook?.url ?? null });
  }
  const events = JSON.parse(hook.eventsJson) as PredictionEvent[];
  if (job.type === "job.succeeded" && events.includes("output")) await enqueuePredictionEvent(trx, { accountId: job.accountId, jobId: job.id, event: "output", url: hook.url });
  if (events.includes("completed")) await enqueuePredictionEvent(trx, { accountId: job.accountId, jobId: job.id, event: "completed", url: hook.url });
  return enqueue(trx, { accountId: job.accountId, type: job.type, jobId: job.id, dataJson: null, extraUrl: null });
}

/**
 * Enqueues event `prediction.<event>` of job `jobId` for its own webhook `url` alone (D47), inside the
 * transaction `trx` of the change it reports (a submit: `start`; a terminal transition: `output`,
 * `completed`). The body, the prediction, is rendered by the delivery loop at the first attempt (a `start`
 * as the prediction was created) and then kept. Returns the event id.
 */
export async function enqueuePredictionEvent(
  trx: Transaction<Database>,
  e: { accountId: string; jobId: string; event: Exclude<PredictionEvent, "logs">; url: string },
): Promise<string> {
  const eventId = newId("evt");
  await insertEvent(trx, { id: eventId, accountId: e.accountId, type: `prediction.${e.event}`, jobId: e.jobId, dataJson: null, now: Date.now() }, [{ endpointId: null, url: e.url }]);
  return eventId;
}

/**
 * Enqueues a `balance.low` event with `data` (D34) inside the transaction `trx` that moved the balance
 * below the account's alert threshold. Only the account's endpoints receive it. Nothing calls it yet: the
 * alert settings come with D34.
 */
export async function enqueueBalanceLow(trx: Transaction<Database>, accountId: string, data: BalanceLowData): Promise<string | null> {
  return enqueue(trx, { accountId, type: "balance.low", jobId: null, dataJson: JSON.stringify(data), extraUrl: null });
}

/**
 * Enqueues a `budget.threshold` event with `data` (D44) inside the transaction `trx` that moved the
 * budget's alert mark, so the event is written once per threshold and window.
 */
export async function enqueueBudgetThreshold(trx: Transaction<Database>, accountId: string, data: BudgetThresholdData): Promise<string | null> {
  return enqueue(trx, { accountId, type: "budget.threshold", jobId: null, dataJson: JSON.stringify(data), extraUrl: null });
}
