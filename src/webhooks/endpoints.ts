/**
 * Webhook endpoints of an account and the account's default secret (D31). A secret is `whsec_` followed
 * by the base64 of 24 random bytes (the key Standard Webhooks signs with is the decoded bytes). Secrets
 * are returned only by {@link createEndpoint}, {@link rotateEndpointSecret} and {@link defaultSecret};
 * listings never carry them.
 */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Database } from "../storage/schema.ts";
import { isWebhookEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "./events.ts";
import { checkWebhookUrl, type WebhookUrlPolicy } from "./urls.ts";

/** A new signing secret: `whsec_` + base64 of 24 random bytes (192 bits). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

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

/** Most endpoints one account may have. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;

/**
 * `POST /v1/webhooks {url, events?}`: checks the URL (D31 rule) and the event list (omitted = every type,
 * duplicates dropped) and stores the endpoint with a new secret.
 * @returns the endpoint and its secret, which is shown only here.
 * @throws AppError 400 `invalid_webhook_url`; 400 `invalid_request` (unknown event type, empty list, too
 *   many endpoints).
 */
export async function createEndpoint(
  db: Kysely<Database>,
  policy: WebhookUrlPolicy,
  accountId: string,
  body: { url?: unknown; events?: unknown },
): Promise<{ id: string; url: string; events: WebhookEventType[]; secret: string; created_at: string }> {
  const url = await checkWebhookUrl(body.url, policy, "url");
  let events: WebhookEventType[] = [...WEBHOOK_EVENT_TYPES];
  if (body.events !== undefined && body.events !== null) {
    if (!Array.isArray(body.events) || body.events.length === 0 || !body.events.every(isWebhookEventType)) {
      throw errors.invalidRequest(`events must be a non-empty list of ${WEBHOOK_EVENT_TYPES.join(", ")}.`, "events");
    }
    events = WEBHOOK_EVENT_TYPES.filter((t) => (body.events as string[]).includes(t));
  }
  const count = await db
    .selectFrom("webhook_endpoints")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("account_id", "=", accountId)
    .executeTakeFirstOrThrow();
  if (Number(count.n) >= MAX_ENDPOINTS_PER_ACCOUNT) {
    throw errors.invalidRequest(`An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first.`, "url");
  }
  const row = { id: newId("we"), account_id: accountId, url, events_json: JSON.stringify(events), secret: newWebhookSecret(), disabled: 0, created_at: Date.now() };
  await db.insertInto("webhook_endpoints").values(row).execute();
  return { id: row.id, url, events, secret: row.secret, created_at: new Date(row.created_at).toISOString() };
}

/** `GET /v1/webhooks`: the account's endpoints, oldest first, without secrets. */
export async function listEndpoints(db: Kysely<Database>, accountId: string): Promise<EndpointView[]> {
  const rows = await db
    .selectFrom("webhook_endpoints")
    .select(["id", "url", "events_json", "disabled", "created_at"])
    .where("account_id", "=", accountId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(endpointView);
}

/**
 * `DELETE /v1/webhooks/{id}`. Deliveries already queued for it end `failed` when their turn comes.
 * @throws AppError 404 `webhook_not_found` (unknown or another account's).
 */
export async function deleteEndpoint(db: Kysely<Database>, accountId: string, id: string): Promise<void> {
  const res = await db.deleteFrom("webhook_endpoints").where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
  if (Number(res.numDeletedRows) !== 1) throw errors.webhookNotFound();
}

/**
 * `POST /v1/webhooks/{id}/rotate-secret`: a new secret replaces the old at once; every later attempt,
 * retries of earlier events included, is signed with the new one.
 * @throws AppError 404 `webhook_not_found`.
 */
export async function rotateEndpointSecret(db: Kysely<Database>, accountId: string, id: string): Promise<{ id: string; secret: string }> {
  const secret = newWebhookSecret();
  const res = await db.updateTable("webhook_endpoints").set({ secret }).where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw errors.webhookNotFound();
  return { id, secret };
}

/**
 * The account's default secret (`GET /v1/webhooks/secret`), which signs deliveries to a submit's
 * `webhook_url`; created on first use. Concurrent first uses agree on one secret (the insert of the
 * loser does nothing).
 */
export async function defaultSecret(db: Kysely<Database>, accountId: string): Promise<string> {
  const existing = await db.selectFrom("webhook_secrets").select("secret").where("account_id", "=", accountId).executeTakeFirst();
  if (existing) return existing.secret;
  await db
    .insertInto("webhook_secrets")
    .values({ account_id: accountId, secret: newWebhookSecret(), created_at: Date.now() })
    .onConflict((oc) => oc.column("account_id").doNothing())
    .execute();
  const row = await db.selectFrom("webhook_secrets").select("secret").where("account_id", "=", accountId).executeTakeFirstOrThrow();
  return row.secret;
}
