/**
 * The SQL of webhook endpoints and of the accounts' default secrets (D31, webhooks/endpoints.ts): rows of
 * `webhook_endpoints` and `webhook_secrets`, mapped to the API's shapes. Which checks come first and
 * which errors are raised is endpoints.ts's.
 */
import type { Kysely } from "kysely";
import type { Database } from "../storage/schema.ts";
import type { WebhookEventType } from "./events.ts";

/** An endpoint as `GET /v1/webhooks` shows it (no secret). */
export interface EndpointView {
  id: string;
  url: string;
  events: WebhookEventType[];
  disabled: boolean;
  created_at: string;
}

type EndpointRow = Pick<Database["webhook_endpoints"], "id" | "url" | "events_json" | "disabled" | "created_at">;

function endpointView(r: EndpointRow): EndpointView {
  return {
    id: r.id,
    url: r.url,
    events: JSON.parse(r.events_json) as WebhookEventType[],
    disabled: Number(r.disabled) === 1,
    created_at: new Date(Number(r.created_at)).toISOString(),
  };
}

/** How many endpoints the account has. */
export async function countEndpoints(db: Kysely<Database>, accountId: string): Promise<number> {
  const count = await db
    .selectFrom("webhook_endpoints")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("account_id", "=", accountId)
    .executeTakeFirstOrThrow();
  return Number(count.n);
}

/** Inserts an endpoint (`events_json` the JSON list of its event types, `disabled` 0 or 1, `created_at` epoch ms). */
export async function insertEndpoint(
  db: Kysely<Database>,
  row: { id: string; account_id: string; url: string; events_json: string; secret: string; disabled: number; created_at: number },
): Promise<void> {
  await db.insertInto("webhook_endpoints").values(row).execute();
}

/** The account's endpoints, oldest first, without secrets. */
export async function endpointsOfAccount(db: Kysely<Database>, accountId: string): Promise<EndpointView[]> {
  const rows = await db
    .selectFrom("webhook_endpoints")
    .select(["id", "url", "events_json", "disabled", "created_at"])
    .where("account_id", "=", accountId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(endpointView);
}

/** Deletes the account's endpoint `id`; false when there is none (unknown or another account's). */
export async function deleteEndpointRow(db: Kysely<Database>, accountId: string, id: string): Promise<boolean> {
  const res = await db.deleteFrom("webhook_endpoints").where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
  return Number(res.numDeletedRows) === 1;
}

/** Sets the secret of the account's endpoint `id`; false when there is none. */
export async function setEndpointSecret(db: Kysely<Database>, accountId: string, id: string, secret: string): Promise<boolean> {
  const res = await db.updateTable("webhook_endpoints").set({ secret }).where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** The account's default secret, or null when it has none yet. */
export async function accountSecret(db: Kysely<Database>, accountId: string): Promise<string | null> {
  const row = await db.selectFrom("webhook_secrets").select("secret").where("account_id", "=", accountId).executeTakeFirst();
  return row?.secret ?? null;
}

/** Stores `secret` as the account's default secret unless it has one (the insert of a concurrent loser does nothing). */
export async function insertAccountSecretIfAbsent(db: Kysely<Database>, accountId: string, secret: string, now: number): Promise<void> {
  await db
    .insertInto("webhook_secrets")
    .values({ account_id: accountId, secret, created_at: now })
    .onConflict((oc) => oc.column("account_id").doNothing())
    .execute();
}
