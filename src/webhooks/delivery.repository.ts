/**
 * The SQL of the webhook delivery loop (D31, webhooks/delivery.ts): claiming due deliveries under a lease,
 * reading what an attempt signs and sends, and recording the attempt while the claim still holds the
 * lease. The module comment of delivery.ts says how several processes share the outbox.
 */
import type { Kysely } from "kysely";
import type { Database, WebhookDeliveriesTable, WebhookDeliveryStatus } from "../storage/schema.ts";

/** A claimed delivery. */
export type Claimed = Pick<WebhookDeliveriesTable, "id" | "event_id" | "account_id" | "endpoint_id" | "url" | "attempts_json" | "failures">;

/**
 * Claims up to `limit` deliveries due at `now` (epoch ms) whose lease is free or lapsed: each gets the lease
 * until `now + leaseMs` under `token`. With `skipLocked` (PostgreSQL) the candidates are locked `FOR
 * UPDATE SKIP LOCKED`, so claimers never wait on or take the same rows; SQLite has one writer.
 */
export async function claimDueDeliveries(
  db: Kysely<Database>,
  o: { now: number; leaseMs: number; token: string; limit: number; skipLocked: boolean },
): Promise<Claimed[]> {
  const now = o.now;
  const due = (db: Kysely<Database>) =>
    db
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("status", "=", "pending")
      .where("next_attempt_at", "<=", now)
      .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)]))
      .orderBy("next_attempt_at");
  // A plain read first: an idle outbox costs one indexed query, not a write transaction (on SQLite a
  // transaction takes the file's write lock at once) every poll.
  if ((await due(db).limit(1).execute()).length === 0) return [];
  return db.transaction().execute(async (trx) => {
    let q = due(trx).limit(o.limit);
    if (o.skipLocked) q = q.forUpdate().skipLocked();
    const ids = (await q.execute()).map((r) => r.id);
    if (ids.length === 0) return [];
    return trx
      .updateTable("webhook_deliveries")
      .set({ lease_until: now + o.leaseMs, lease_owner: o.token })
      .where("id", "in", ids)
      .where("status", "=", "pending")
      .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)]))
      .returning(["id", "event_id", "account_id", "endpoint_id", "url", "attempts_json", "failures"])
      .execute();
  });
}

/** The secret of endpoint `id` and whether it is disabled, or null when it was deleted. */
export async function endpointSigning(db: Kysely<Database>, id: string): Promise<{ secret: string; disabled: boolean } | null> {
  const ep = await db.selectFrom("webhook_endpoints").select(["secret", "disabled"]).where("id", "=", id).executeTakeFirst();
  return ep ? { secret: ep.secret, disabled: Number(ep.disabled) === 1 } : null;
}

/** An event as an attempt sends it; `dataJson` null until a job event's data was rendered. */
export interface OutboxEvent {
  id: string;
  /** The event type (events.ts). */
  type: string;
  jobId: string | null;
  dataJson: string | null;
  /** Epoch ms. */
  createdAt: number;
  /** The job's W3C `traceparent` (D40): its deliveries continue the submit's trace; null otherwise. */
  traceparent: string | null;
}

/**
 * The event `id` of a delivery.
 * @throws Error (Kysely's NoResultError) when there is none (an event is deleted only with its deliveries).
 */
export async function eventOfDelivery(db: Kysely<Database>, id: string): Promise<OutboxEvent> {
  const e = await db
    .selectFrom("webhook_events")
    .leftJoin("jobs", "jobs.id", "webhook_events.job_id")
    .select(["webhook_events.id", "webhook_events.type", "webhook_events.job_id", "webhook_events.data_json", "webhook_events.created_at", "jobs.traceparent"])
    .where("webhook_events.id", "=", id)
    .executeTakeFirstOrThrow();
  return { id: e.id, type: e.type, jobId: e.job_id, dataJson: e.data_json, createdAt: Number(e.created_at), traceparent: e.traceparent ?? null };
}

/** Keeps the rendered `dataJson` of event `id` unless it has some already. */
export async function keepEventData(db: Kysely<Database>, id: string, dataJson: string): Promise<void> {
  await db.updateTable("webhook_events").set({ data_json: dataJson }).where("id", "=", id).where("data_json", "is", null).execute();
}

/**
 * Writes an attempt's result on delivery `id` and frees its lease, in one transaction, only while the
 * claim `token` still holds the lease (a replay in between takes it away); then, if it was written and
 * `disableEndpointId` is set, disables that endpoint.
 */
export async function recordAttempt(
  db: Kysely<Database>,
  id: string,
  token: string,
  r: { status: WebhookDeliveryStatus; attemptsJson: string; failures: number; nextAttemptAt: number | null; now: number; disableEndpointId: string | null },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable("webhook_deliveries")
      .set({
        status: r.status,
        attempts_json: r.attemptsJson,
        failures: r.failures,
        next_attempt_at: r.nextAttemptAt,
        lease_until: null,
        lease_owner: null,
        updated_at: r.now,
      })
      .where("id", "=", id)
      .where("lease_owner", "=", token)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1 && r.disableEndpointId !== null) {
      await trx.updateTable("webhook_endpoints").set({ disabled: 1 }).where("id", "=", r.disableEndpointId).execute();
    }
  });
}
