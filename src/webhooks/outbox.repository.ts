/**
 * The SQL of the webhook outbox (D31, webhooks/outbox.ts): the account's enabled endpoints, a job's own
 * `webhook_url`, and the insert of an event with its deliveries. Every function runs in the caller's
 * transaction (the one that caused the event).
 */
import type { Transaction } from "kysely";
import { newId } from "../ids.ts";
import { prepare } from "../storage/prepared.ts";
import type { Database } from "../storage/schema.ts";
import type { PredictionEventType, WebhookEventType } from "./events.ts";

/** A destination of an event: an endpoint of the account, or a job's own `webhook_url` (endpoint null). */
export interface Destination {
  endpointId: string | null;
  url: string;
}

const enabledEndpointsStmt = prepare((db, p) =>
  db
    .selectFrom("webhook_endpoints")
    .select(["id", "url", "events_json"])
    .where("account_id", "=", p<string>(0))
    .where("disabled", "=", 0)
    .orderBy("created_at"),
);

/** The account's enabled endpoints, oldest first (compiled once: every job's end reads them); `events_json` the JSON list of their event types. */
export async function enabledEndpoints(trx: Transaction<Database>, accountId: string): Promise<{ id: string; url: string; events_json: string }[]> {
  return (await enabledEndpointsStmt(trx, accountId)).rows;
}

/**
 * The job's own `webhook_url` and, when it receives the prediction format (D47), the JSON list of its
 * events; null when the job has no webhook URL (or there is no such job).
 */
export async function jobWebhook(trx: Transaction<Database>, jobId: string): Promise<{ url: string; eventsJson: string | null } | null> {
  const r = await trx.selectFrom("jobs").select(["webhook_url", "webhook_events_json"]).where("id", "=", jobId).executeTakeFirst();
  return r?.webhook_url ? { url: r.webhook_url, eventsJson: r.webhook_events_json ?? null } : null;
}

/**
 * Inserts event `e` (made at `e.now`, epoch ms) and one pending delivery, due now, per destination
 * (at least one).
 */
export async function insertEvent(
  trx: Transaction<Database>,
  e: { id: string; accountId: string; type: WebhookEventType | PredictionEventType; jobId: string | null; dataJson: string | null; now: number },
  destinations: Destination[],
): Promise<void> {
  const eventId = e.id;
  const now = e.now;
  await trx
    .insertInto("webhook_events")
    .values({ id: eventId, account_id: e.accountId, type: e.type, job_id: e.jobId, data_json: e.dataJson, created_at: now })
    .execute();
  await trx
    .insertInto("webhook_deliveries")
    .values(
      destinations.map((d) => ({
        id: newId("whd"),
        event_id: eventId,
        event_type: e.type,
        account_id: e.accountId,
        endpoint_id: d.endpointId,
        url: d.url,
        status: "pending" as const,
        attempts_json: "[]",
        failures: 0,
        next_attempt_at: now,
        lease_until: null,
        lease_owner: null,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
}
