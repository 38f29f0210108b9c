/**
 * What a dialect keeps on a job besides the native request (D47, the Replicate dialect): a deadline
 * (`Cancel-After`), the format and events of the job's own webhook, and how the caller named the job.
 * Written in the submit's transaction (submit.ts), read back to render the job in the dialect's shape.
 * Native jobs have none of them.
 */
import type { Transaction } from "kysely";
import { TEXT_FIELDS, withoutStrings } from "../contracts/texts.ts";
import type { Executor } from "../billing/ledger.ts";
import type { Database } from "../storage/schema.ts";
import type { PredictionEvent } from "../webhooks/events.ts";
import { enqueuePredictionEvent } from "../webhooks/outbox.ts";
import { jobDialectRows, writeJobDialectFacts } from "./jobs.repository.ts";

/** A dialect's facts of a new job. */
export interface JobDialectFacts {
  /** Epoch ms after which the job is canceled (`Cancel-After`): `aborted` if it has not started, else `canceled`. Null: none. */
  deadlineAt: number | null;
  /**
   * The events the job's `webhook_url` receives, in the prediction format (the prediction is the body);
   * null: the URL receives the native job events (D31). An empty list sends nothing to it.
   */
  webhookEvents: readonly PredictionEvent[] | null;
  /** The dialect's own rendering data (JSON text, at most a few KB), or null. */
  dialectJson: string | null;
}

/** What a dialect reads back of a job to render it. Times in epoch ms. */
export interface JobDialectView {
  startedAt: number | null;
  deadlineAt: number | null;
  webhookUrl: string | null;
  webhookEvents: PredictionEvent[] | null;
  dialectJson: string | null;
}

/**
 * A dialect's rendering data (`dialect_json`) without the request's texts (D46): each top-level text field
 * (the echoed `input` of a prediction, ...) keeps its shape but loses every string; names, versions and
 * formats stay. Null, or text that is not a JSON object, gives null (nothing of it can be told safe).
 */
export function dialectJsonWithoutTexts(json: string | null): string | null {
  if (json === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  return JSON.stringify(Object.fromEntries(Object.entries(value).map(([k, v]) => [k, TEXT_FIELDS.has(k) ? withoutStrings(v) : v])));
}

/**
 * Writes `facts` on the new job `jobId` inside the transaction `trx` that wrote the job, and enqueues what
 * its webhook (`webhookUrl`, in the prediction format) is owed already: `start`, and for a job written as
 * already succeeded (`succeeded`: a stored audio call, D47) `output` and `completed`, each when the filter
 * has it. `webhookUrl` is also written on the job when given (a stored audio call's row has none yet).
 * `textsKept: false` (D46 zero retention) writes `dialectJson` without the request's texts.
 */
export async function recordDialectFacts(
  trx: Transaction<Database>,
  j: { jobId: string; accountId: string; webhookUrl: string | null; facts: JobDialectFacts; succeeded?: boolean; textsKept?: boolean },
): Promise<void> {
  const { facts } = j;
  await writeJobDialectFacts(trx, j.jobId, {
    deadline_at: facts.deadlineAt,
    webhook_events_json: facts.webhookEvents === null ? null : JSON.stringify(facts.webhookEvents),
    // Zero retention (D46): the echo of the input is written without its texts.
    dialect_json: j.textsKept === false ? dialectJsonWithoutTexts(facts.dialectJson) : facts.dialectJson,
    ...(j.webhookUrl !== null ? { webhook_url: j.webhookUrl } : {}),
  });
  if (j.webhookUrl === null || facts.webhookEvents === null) return;
  const owed: ("start" | "output" | "completed")[] = j.succeeded === true ? ["start", "output", "completed"] : ["start"];
  for (const event of owed) {
    if (facts.webhookEvents.includes(event)) await enqueuePredictionEvent(trx, { accountId: j.accountId, jobId: j.jobId, event, url: j.webhookUrl });
  }
}

/** The dialect view of each of `accountId`'s jobs among `ids`, by job id (another account's jobs are absent). One read. */
export async function dialectViews(db: Executor, accountId: string, ids: readonly string[]): Promise<Map<string, JobDialectView>> {
  const rows = await jobDialectRows(db, accountId, ids);
  return new Map(
    rows.map((r) => [
      r.id,
      {
        startedAt: r.started_at === null ? null : Number(r.started_at),
        deadlineAt: r.deadline_at === null ? null : Number(r.deadline_at),
        webhookUrl: r.webhook_url,
        webhookEvents: r.webhook_events_json === null ? null : (JSON.parse(r.webhook_events_json) as PredictionEvent[]),
        dialectJson: r.dialect_json,
      },
    ]),
  );
}
