/**
 * The SQL of the delivery log (D31, webhooks/deliveries.ts): a page of an account's deliveries and the
 * replay of one, mapped to the log's shape.
 */
import type { Kysely } from "kysely";
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
 * Up to `opts.limit + 1` of the account's deliveries, newest first, after the delivery `after` (the extra
 * one tells the caller more follow), optionally of one event type and one status; null when `after` names
 * no delivery of the account.
 */
export async function deliveriesPage(
  db: Kysely<Database>,
  accountId: string,
  opts: { limit: number; after: string | null; eventType: string | null; status: WebhookDeliveryStatus | null },
): Promise<DeliveryView[] | null> {
  let q = db.selectFrom("webhook_deliveries").select([...COLUMNS]).where("account_id", "=", accountId);
  if (opts.after !== null) {
    const cursor = await db.selectFrom("webhook_deliveries").select("seq").where("id", "=", opts.after).where("account_id", "=", accountId).executeTakeFirst();
    if (!cursor) return null;
    q = q.where("seq", "<", cursor.seq);
  }
  if (opts.eventType !== null) q = q.where("event_type", "=", opts.eventType);
  if (opts.status !== null) q = q.where("status", "=", opts.status);
  const rows = await q.orderBy("seq", "desc").limit(opts.limit + 1).execute();
  return rows.map(deliveryView);
}

/**
 * Makes the account's delivery `id` due at `now` (epoch ms) with a fresh retry schedule, taking away any
 * lease (an attempt in flight is then not recorded). False when there is no such delivery.
 */
export async function makeDeliveryDue(db: Kysely<Database>, accountId: string, id: string, now: number): Promise<boolean> {
  const res = await db
    .updateTable("webhook_deliveries")
    .set({ status: "pending", next_attempt_at: now, failures: 0, lease_until: null, lease_owner: null, updated_at: now })
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** The delivery `id` as the log shows it, or null. */
export async function deliveryById(db: Kysely<Database>, id: string): Promise<DeliveryView | null> {
  const row = await db.selectFrom("webhook_deliveries").select([...COLUMNS]).where("id", "=", id).executeTakeFirst();
  return row ? deliveryView(row) : null;
}
