/**
 * Webhook event types and the event body (D31, Standard Webhooks). Shared by the outbox, the delivery
 * loop and the routes.
 */
import { PREDICTION_EVENT_TYPES, type PredictionEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../contracts/webhooks.ts";

// The event types are declared with the request contract of endpoints (`src/contracts/webhooks.ts`).
export { PREDICTION_EVENT_TYPES, type PredictionEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType };

/** The events a prediction's `webhook_events_filter` names (D47), without the `prediction.` prefix. */
export const PREDICTION_EVENTS = ["start", "output", "logs", "completed"] as const;

/** One event of a `webhook_events_filter` (D47). `logs` is accepted; the gateway's jobs have no logs to send. */
export type PredictionEvent = (typeof PREDICTION_EVENTS)[number];

/** Whether an event type is a prediction's own (D47): its body is the prediction, not the D31 envelope. */
export function isPredictionEventType(type: string): type is PredictionEventType {
  return (PREDICTION_EVENT_TYPES as readonly string[]).includes(type);
}

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

/** The `data` of a `budget.threshold` event (D44): the budget, the threshold crossed, USD amounts. */
export interface BudgetThresholdData {
  budget_id: string;
  scope: { type: string; id: string };
  /** The threshold crossed, a percentage of `amount_usd`. */
  percent: number;
  spent_usd: number;
  amount_usd: number;
  /** The window's start in the budget's time zone (ISO 8601 with offset). */
  window_start: string;
}

/**
 * The JSON body every delivery of an event sends, byte for byte the same on each retry and replay:
 * `{"id": "evt_...", "type", "created_at": ISO 8601, "data"}`. `data` is the job object (D3) for job
 * events, {@link BalanceLowData} for `balance.low`, {@link BudgetThresholdData} for `budget.threshold`.
 */
export function eventBody(e: { id: string; type: string; createdAt: number; dataJson: string }): string {
  return `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"created_at":${JSON.stringify(new Date(e.createdAt).toISOString())},"data":${e.dataJson}}`;
}
