/**
 * Webhook event types and the event body (D31, Standard Webhooks). Shared by the outbox, the delivery
 * loop and the routes.
 */

/** Every event type, in the order `events` is echoed when omitted at creation (D31). */
export const WEBHOOK_EVENT_TYPES = ["job.succeeded", "job.failed", "job.refunded", "job.expired", "balance.low"] as const;

/** One event type of D31. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The event types of a job's terminal transition (a canceled job ends `failed`: `job.failed`). */
export type JobEventType = Extract<WebhookEventType, `job.${string}`>;

/** Whether `v` names an event type of D31. */
export function isWebhookEventType(v: unknown): v is WebhookEventType {
  return typeof v === "string" && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(v);
}

/** The `data` of a `balance.low` event (D34): amounts in USD. */
export interface BalanceLowData {
  balance_usd: number;
  threshold_usd: number;
}

/**
 * The JSON body every delivery of an event sends, byte for byte the same on each retry and replay:
 * `{"id": "evt_...", "type", "created_at": ISO 8601, "data"}`. `data` is the job object (D3) for job
 * events, {@link BalanceLowData} for `balance.low`.
 */
export function eventBody(e: { id: string; type: string; createdAt: number; dataJson: string }): string {
  return `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"created_at":${JSON.stringify(new Date(e.createdAt).toISOString())},"data":${e.dataJson}}`;
}
