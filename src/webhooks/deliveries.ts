/**
 * The delivery log of an account (D31): `GET /v1/webhooks/deliveries` and the replay of one delivery.
 */
import type { Kysely } from "kysely";
import { errors } from "../errors.ts";
import type { Database, WebhookDeliveryStatus } from "../storage/schema.ts";
import { deliveriesPage, deliveryById, type DeliveryView, makeDeliveryDue } from "./deliveries.repository.ts";

export type { DeliveryAttempt, DeliveryView } from "./deliveries.repository.ts";

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
  const rows = await deliveriesPage(db, accountId, opts);
  if (rows === null) return { data: [], hasMore: false };
  return { data: rows.slice(0, opts.limit), hasMore: rows.length > opts.limit };
}

/**
 * `POST /v1/webhooks/deliveries/{id}/replay`: the delivery is due again now, whatever its status, with
 * the same event (same `webhook-id`, same body) and a fresh retry schedule; earlier attempts stay in its
 * log. An attempt in flight at this moment is not recorded (its lease is taken away).
 * @throws AppError 404 `delivery_not_found` (unknown or another account's).
 */
export async function replayDelivery(db: Kysely<Database>, accountId: string, id: string): Promise<DeliveryView> {
  if (!(await makeDeliveryDue(db, accountId, id, Date.now()))) throw errors.deliveryNotFound();
  const view = await deliveryById(db, id);
  if (view === null) throw errors.deliveryNotFound();
  return view;
}
