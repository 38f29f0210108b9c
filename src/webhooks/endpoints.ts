/**
 * Webhook endpoints of an account and the account's default secret (D31). A secret is `whsec_` followed
 * by the base64 of 24 random bytes (the key Standard Webhooks signs with is the decoded bytes). Secrets
 * are returned only by {@link createEndpoint}, {@link rotateEndpointSecret} and {@link defaultSecret};
 * listings never carry them. Creating, deleting an endpoint and rotating its secret each write one audit
 * entry (D45: `webhook.created`, `webhook.deleted`, `webhook.secret_rotated`) in the transaction of the
 * change, never with the secret.
 */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { type AuditContext, recordAudit } from "../accounts/audit.ts";
import { inTransaction } from "../billing/executor.ts";
import type { CreateWebhookBody } from "../contracts/webhooks.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Database } from "../storage/schema.ts";
import {
  accountSecret,
  countEndpoints,
  deleteEndpointRow,
  endpointsOfAccount,
  type EndpointView,
  insertAccountSecretIfAbsent,
  insertEndpoint,
  setEndpointSecret,
} from "./endpoints.repository.ts";
import { isWebhookEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "./events.ts";
import { checkWebhookUrl, type WebhookUrlPolicy } from "./urls.ts";

export type { EndpointView } from "./endpoints.repository.ts";

/** A new signing secret: `whsec_` + base64 of 24 random bytes (192 bits). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/** Most endpoints one account may have. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;

/**
 * `POST /v1/webhooks {url, events?}`: checks the URL (D31 rule) and the event list (omitted = every type,
 * duplicates dropped) and stores the endpoint with a new secret.
 * Writes `webhook.created` (the URL and events) as `audit`.
 * @returns the endpoint and its secret, which is shown only here.
 * @throws AppError 400 `invalid_webhook_url`; 400 `invalid_request` (unknown event type, empty list, too
 *   many endpoints).
 */
export async function createEndpoint(
  db: Kysely<Database>,
  policy: WebhookUrlPolicy,
  accountId: string,
  body: CreateWebhookBody,
  audit: AuditContext,
): Promise<{ id: string; url: string; events: WebhookEventType[]; secret: string; created_at: string }> {
  const url = await checkWebhookUrl(body.url, policy, "url");
  let events: WebhookEventType[] = [...WEBHOOK_EVENT_TYPES];
  if (body.events !== undefined && body.events !== null) {
    if (!Array.isArray(body.events) || body.events.length === 0 || !body.events.every(isWebhookEventType)) {
      throw errors.invalidRequest(`events must be a non-empty list of ${WEBHOOK_EVENT_TYPES.join(", ")}.`, "events");
    }
    events = WEBHOOK_EVENT_TYPES.filter((t) => (body.events as string[]).includes(t));
  }
  if ((await countEndpoints(db, accountId)) >= MAX_ENDPOINTS_PER_ACCOUNT) {
    throw errors.invalidRequest(`An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first.`, "url");
  }
  const row = { id: newId("we"), account_id: accountId, url, events_json: JSON.stringify(events), secret: newWebhookSecret(), disabled: 0, created_at: Date.now() };
  await inTransaction(db, async (trx) => {
    await insertEndpoint(trx, row);
    await recordAudit(trx, audit, { orgId: accountId, action: "webhook.created", target: { type: "webhook", id: row.id }, changes: { url: [null, url], events: [null, events] } });
  });
  return { id: row.id, url, events, secret: row.secret, created_at: new Date(row.created_at).toISOString() };
}

/** `GET /v1/webhooks`: the account's endpoints, oldest first, without secrets. */
export async function listEndpoints(db: Kysely<Database>, accountId: string): Promise<EndpointView[]> {
  return endpointsOfAccount(db, accountId);
}

/**
 * `DELETE /v1/webhooks/{id}`. Deliveries already queued for it end `failed` when their turn comes.
 * Writes `webhook.deleted` as `audit`.
 * @throws AppError 404 `webhook_not_found` (unknown or another account's).
 */
export async function deleteEndpoint(db: Kysely<Database>, accountId: string, id: string, audit: AuditContext): Promise<void> {
  await inTransaction(db, async (trx) => {
    if (!(await deleteEndpointRow(trx, accountId, id))) throw errors.webhookNotFound();
    await recordAudit(trx, audit, { orgId: accountId, action: "webhook.deleted", target: { type: "webhook", id } });
  });
}

/**
 * `POST /v1/webhooks/{id}/rotate-secret`: a new secret replaces the old at once; every later attempt,
 * retries of earlier events included, is signed with the new one. Writes `webhook.secret_rotated` as
 * `audit` (without either secret).
 * @throws AppError 404 `webhook_not_found`.
 */
export async function rotateEndpointSecret(db: Kysely<Database>, accountId: string, id: string, audit: AuditContext): Promise<{ id: string; secret: string }> {
  const secret = newWebhookSecret();
  await inTransaction(db, async (trx) => {
    if (!(await setEndpointSecret(trx, accountId, id, secret))) throw errors.webhookNotFound();
    await recordAudit(trx, audit, { orgId: accountId, action: "webhook.secret_rotated", target: { type: "webhook", id } });
  });
  return { id, secret };
}

/**
 * The account's default secret (`GET /v1/webhooks/secret`), which signs deliveries to a submit's
 * `webhook_url`; created on first use. Concurrent first uses agree on one secret (the insert of the
 * loser does nothing).
 */
export async function defaultSecret(db: Kysely<Database>, accountId: string): Promise<string> {
  const existing = await accountSecret(db, accountId);
  if (existing !== null) return existing;
  await insertAccountSecretIfAbsent(db, accountId, newWebhookSecret(), Date.now());
  const secret = await accountSecret(db, accountId);
  if (secret === null) throw new Error(`webhook secret of ${accountId} missing after its insert`);
  return secret;
}
