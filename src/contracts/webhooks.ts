/**
 * Request contract of webhook endpoints (D31): the event types, and the TypeBox schema of the JSON body of
 * `POST /v1/webhooks` (validated and documented by `src/http/schemas/webhooks.ts`) with its `Static` type,
 * the input type of `src/webhooks/endpoints.ts`. The URL's policy (https, public address) and the event
 * list's rules keep their checks in the service.
 */
import type { Static } from "typebox";
import { arr, coded, obj, oneOf, str } from "./schema.ts";

/** Every event type, in the order `events` is echoed when omitted at creation (D31). */
export const WEBHOOK_EVENT_TYPES = ["job.succeeded", "job.failed", "job.refunded", "job.expired", "balance.low", "budget.threshold"] as const;

/** One event type of D31. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * The events of a prediction's own `webhook` (D47, the Replicate dialect's `webhook_events_filter`), as the
 * delivery log names them: sent only to that URL, with the prediction itself as the body.
 */
export const PREDICTION_EVENT_TYPES = ["prediction.start", "prediction.output", "prediction.completed"] as const;

/** One prediction event type (D47). */
export type PredictionEventType = (typeof PREDICTION_EVENT_TYPES)[number];

/** Every type a delivery can carry: D31's events and a prediction's own (D47). */
export const DELIVERY_EVENT_TYPES = [...WEBHOOK_EVENT_TYPES, ...PREDICTION_EVENT_TYPES] as const;

/** The type of a delivered event. */
export const DELIVERY_EVENT_TYPE = oneOf(DELIVERY_EVENT_TYPES, "The event type: a job or balance event, or a Replicate prediction's own webhook event (`prediction.start`, `prediction.output`, `prediction.completed`, sent only to that prediction's `webhook`).", { examples: ["job.succeeded"] });

/** An event type. */
export const EVENT_TYPE = oneOf(WEBHOOK_EVENT_TYPES, "An event type.", { examples: ["job.succeeded"] });
/** The event types an endpoint takes. */
export const EVENTS = arr(EVENT_TYPE, "Event types sent to the endpoint.", { examples: [["job.succeeded", "job.failed"]] });

/** The body of `POST /v1/webhooks`. */
export const CREATE_WEBHOOK_BODY = obj(
  {
    url: coded(str("The endpoint URL (`https://`, public address, at most 2048 characters).", { maxLength: 2048, examples: ["https://example.com/hooks/gateway"] }), "invalid_webhook_url", "url must be an https:// URL."),
    events: { ...EVENTS, minItems: 1, maxItems: 20, "x-error-message": `events must be a non-empty list of ${WEBHOOK_EVENT_TYPES.join(", ")}.` },
  },
  ["url"],
);

/** A webhook endpoint creation body as received (types already checked by the route schema). */
export type CreateWebhookBody = Static<typeof CREATE_WEBHOOK_BODY>;
