/**
 * What is written in the same transaction as a job's terminal transition (`succeeded`, `failed`,
 * `refunded`, `expired`): the one place later features hook into, so a job's end and everything that
 * follows from it (its usage record, D29; its webhook events in the outbox, D31) commit or roll back
 * together. Called by the runner's success path and by `endJobWithoutCharge` (sweep.ts), which the
 * runner's failures, the sweep and cancellation go through.
 */
import type { Transaction } from "kysely";
import type { Database, JobStatus } from "../storage/schema.ts";
import { finishEndedJobUsage } from "./job-usage.ts";
import { enqueueJobEvent } from "../webhooks/outbox.ts";

/** A job that just ended, as its terminal transition wrote it. */
export interface EndedJob {
  id: string;
  accountId: string;
  status: Exclude<JobStatus, "pending" | "processing">;
  /**
   * The transition finishes the usage record itself in this transaction: the runner's success path
   * finishes it with the capture (one statement on PostgreSQL), from `jobUsageEnd` (job-usage.ts) like
   * everyone else. Default false: it is finished here.
   */
  usageFinished?: boolean;
  /** The job's `webhook_url` when the caller has it (the runner does, from the claim); read otherwise. */
  webhookUrl?: string | null;
}

/**
 * Runs inside the terminal transition's transaction `trx`, after the job row was written (its ledger
 * entries may be written before or after, in the same transaction: the runner's success captures last,
 * so that its lock on the account row is held for the shortest time). Throwing rolls the whole transition
 * back (the job stays as it was).
 */
export async function onJobEnded(trx: Transaction<Database>, job: EndedJob): Promise<void> {
  // D29: the job's usage record takes its terminal status and cost.
  if (job.usageFinished !== true) await finishEndedJobUsage(trx, job);
  // Webhook events (D31): `job.succeeded`, `job.failed` (a canceled job too), `job.refunded`, `job.expired`.
  await enqueueJobEvent(trx, { id: job.id, accountId: job.accountId, type: `job.${job.status}`, webhookUrl: job.webhookUrl });
}
