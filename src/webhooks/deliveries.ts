/**
 * The delivery log of an account (D31): `GET /v1/webhooks/deliveries` and the replay of one delivery.
 */
import type { Kysely } from "kysely";
import { errors } from "../errors.ts";
import type { Database, WebhookDeliveryStatus } from "../storage/schema.ts";

/** One attempt of a delivery: when, the receiver's status (null when none came), time taken, why it failed. */
export interface DeliveryAttempt {
  /** ISO 8601. */
  at: string;
  status_code: number | null;
  duration_ms: number;
  /** Null for a 2xx; otherwise `http_<status>`, `timeout`, `network: ...`, `refused_address: ...`, ... */
  error: string | null;
}

/** A delivery as the log shows it (D31). */
export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  endpoint_id: string | null;
  url: string;
  status: WebhookDeliveryStatus;
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
}

const COLUMNS = ["seq", "id", "event_id", "event_type", "endpoint_id", "url", "status", "attempts_json", "next_attempt_at", "created_at"] as const;

type Row = Pick<Database["webhook_deliveries"], "id" | "event_id" | "event_type" | "endpoint_id" | "url" | "status" | "attempts_json" | "next_attempt_at" | "created_at">;

function deliveryView(r: Row): DeliveryView {
  return {
    id: r.id,
    event_id: r.event_id,
    event_type: r.event_type,
    endpoint_id: r.endpoint_id,
    url: r.url,
    status: r.status,
    attempts: JSON.parse(r.attempts_json) as DeliveryAttempt[],
    next_attempt_at: r.status === "pending" && r.next_attempt_at !== null ? new Date(Number(r.next_attempt_at)).toISOString() : null,
    created_at: new Date(Number(r.created_at)).toISOString(),
  };
}

/**
 * The account's deliveries, newest first: at most `limit` after the delivery `after` (the id of the
 * last one of the previous page; an unknown id gives an empty page), optionally of one event type and
 * one status.
 */
export async function listDeliveries(
  db: Kysely<Database>,
  accountId: string,
  opts: { limit: number; after: string | null; eventType: string | null; status: WebhookDeliveryStatus | null },
): Promise<{ data: DeliveryView[]; hasMore: boolean }> {
  let q = db.selectFrom("webhook_deliveries").select([...COLUMNS]).where("account_id", "=", accountId);
  if (opts.after !== null) {
    const cursor = await db.selectFrom("webhook_deliveries").select("seq").where("id", "=", opts.after).where("account_id", "=", accountId).executeTakeFirst();
    if (!cursor) return { data: [], hasMore: false };
    q = q.where("seq", "<", cursor.seq);
  }
  if (opts.eventType !== null) q = q.where("event_type", "=", opts.eventType);
  if (opts.status !== null) q = q.where("status", "=", opts.status);
  const rows = await q.orderBy("seq", "desc").limit(opts.limit + 1).execute();
  return { data: rows.slice(0, opts.limit).map(deliveryView), hasMore: rows.length > opts.limit };
}

/**
 * `POST /v1/webhooks/deliveries/{id}/replay`: the delivery is due again now, whatever its status, with
 * the same event (same `webhook-id`, same body) and a fresh retry schedule; earlier attempts stay in its
 * log. An attempt in flight at this moment is not recorded (its lease is taken away).
 * @throws AppError 404 `delivery_not_found` (unknown or another account's).
 */
export async function replayDelivery(db: Kysely<Database>, accountId: string, id: string): Promise<DeliveryView> {
  const now = Date.now();
  const res = await db
    .updateTable("webhook_deliveries")
    .set({ status: "pending", next_attempt_at: now, failures: 0, lease_until: null, lease_owner: null, updated_at: now })
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw errors.deliveryNotFound();
  const row = await db.selectFrom("webhook_deliveries").select([...COLUMNS]).where("id", "=", id).executeTakeFirstOrThrow();
  return deliveryView(row);
}
