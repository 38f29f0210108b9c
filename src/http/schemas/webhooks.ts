/**
 * Route schemas of webhooks (D31): endpoints, their secrets, the account's default secret and the
 * delivery log. Events are signed as Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`); the `standardwebhooks` package verifies them.
 */
import { CREATE_WEBHOOK_BODY, DELIVERY_EVENT_TYPE, DELIVERY_EVENT_TYPES, EVENTS } from "../../contracts/webhooks.ts";
import { arr, AUTH_ERR, bool, errors, int, isoTime, json, LIST, nullable, obj, ok, oneOf, PAGE_QUERY, route, str } from "./common.ts";

const SECRET = str("Signing secret, `whsec_` + base64 of the key (Standard Webhooks). Keep it secret.", {
  pattern: "^whsec_",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
});
const ENDPOINT_ID = obj({ id: str("Endpoint id.", { maxLength: 64, examples: ["we_3kTMd9fQk2aQ8xYvL1pZrW"] }) }, ["id"]);
const NOT_FOUND = { 404: "`webhook_not_found` (unknown or another account's endpoint)" };

/** The body every delivery POSTs, documented once. */
const EVENT_BODY_NOTE =
  'Each delivery POSTs `{"id": "evt_...", "type", "created_at", "data"}` (`data`: the job object of `GET /v1/jobs/{id}` for `job.*` events, `{balance_usd, threshold_usd}` for `balance.low`) with the headers `webhook-id` (the event id, the same on every retry), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256>`). Retries after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h, 12 h and 24 h; a 410 answer disables the endpoint.';

const ENDPOINT_ROW = obj(
  {
    id: str("Endpoint id.", { examples: ["we_3kTMd9fQk2aQ8xYvL1pZrW"] }),
    url: str("Where events are POSTed.", { examples: ["https://example.com/hooks/gateway"] }),
    events: EVENTS,
    disabled: bool("True once the endpoint answered 410 Gone: nothing more is sent to it."),
    created_at: isoTime("Creation time."),
  },
  ["id", "url", "events", "disabled", "created_at"],
);

/** `POST /v1/webhooks`. */
export const createWebhookSchema = route({
  operationId: "createWebhook",
  summary: "Create a webhook endpoint",
  description: `Registers a URL for the account's events (all types when \`events\` is omitted). The URL must be \`https://\` and resolve to public addresses. The signing \`secret\` is shown only here and by rotate-secret. ${EVENT_BODY_NOTE}`,
  tags: ["webhooks"],
  access: "keyOrSession",
  body: json(CREATE_WEBHOOK_BODY),
  responses: {
    201: ok(
      "The endpoint and its secret (shown only now).",
      obj({ id: str("Endpoint id."), url: str("The endpoint URL."), events: EVENTS, secret: SECRET, created_at: isoTime("Creation time.") }, ["id", "url", "events", "secret", "created_at"]),
    ),
    ...errors({ 400: "`invalid_webhook_url` (not https, or not a public address), `invalid_request` (events, too many endpoints)", ...AUTH_ERR }),
  },
});

/** `GET /v1/webhooks`. */
export const listWebhooksSchema = route({
  operationId: "listWebhooks",
  summary: "List webhook endpoints",
  description: "The account's endpoints, oldest first, without their secrets.",
  tags: ["webhooks"],
  access: "keyOrSession",
  responses: { 200: ok("The endpoints.", LIST(ENDPOINT_ROW)), ...errors(AUTH_ERR) },
});

/** `DELETE /v1/webhooks/:id`. */
export const deleteWebhookSchema = route({
  operationId: "deleteWebhook",
  summary: "Delete a webhook endpoint",
  description: "Deliveries still pending for it end `failed` (`endpoint_deleted`).",
  tags: ["webhooks"],
  access: "keyOrSession",
  params: ENDPOINT_ID,
  responses: {
    200: ok("Deleted.", obj({ id: str("Endpoint id."), deleted: bool("Always true.", { enum: [true] }) }, ["id", "deleted"])),
    ...errors({ ...AUTH_ERR, ...NOT_FOUND }),
  },
});

/** `POST /v1/webhooks/:id/rotate-secret`. */
export const rotateWebhookSecretSchema = route({
  operationId: "rotateWebhookSecret",
  summary: "Rotate an endpoint's secret",
  description: "A new secret replaces the old one at once: every later attempt, retries of earlier events included, is signed with the new one only.",
  tags: ["webhooks"],
  access: "keyOrSession",
  params: ENDPOINT_ID,
  responses: {
    200: ok("The new secret (shown only now).", obj({ id: str("Endpoint id."), secret: SECRET }, ["id", "secret"])),
    ...errors({ ...AUTH_ERR, ...NOT_FOUND }),
  },
});

/** `GET /v1/webhooks/secret`. */
export const getWebhookSecretSchema = route({
  operationId: "getWebhookSecret",
  summary: "The account's default webhook secret",
  description: "Signs the deliveries to a submit's `webhook_url`. Created on first use.",
  tags: ["webhooks"],
  access: "keyOrSession",
  responses: { 200: ok("The default secret.", obj({ secret: SECRET }, ["secret"])), ...errors(AUTH_ERR) },
});

const ATTEMPT = obj(
  {
    at: isoTime("When the attempt was made."),
    status_code: nullable(int("The receiver's HTTP status; null when none came (timeout, network, refused address).", { examples: [200] })),
    duration_ms: int("Time the attempt took, ms.", { examples: [42] }),
    error: nullable(str("Null for a 2xx; else `http_<status>`, `timeout after 10000 ms`, `network: ...`, `refused: ...`, `endpoint_deleted`, `endpoint_disabled`.", { examples: ["http_500"] })),
  },
  ["at", "status_code", "duration_ms", "error"],
);

const DELIVERY = obj(
  {
    id: str("Delivery id (the cursor for `after`).", { examples: ["whd_8sHc2LQmYv3PZk0aTq1wXe"] }),
    event_id: str("Event id: the `webhook-id` header of every attempt.", { examples: ["evt_Jd82kLmQ0pXv7sYt3RzA1c"] }),
    event_type: DELIVERY_EVENT_TYPE,
    endpoint_id: nullable(str("The endpoint, or null for a submit's `webhook_url`.")),
    url: str("Where it is sent."),
    status: oneOf(["pending", "succeeded", "failed"], "`pending` until a 2xx (`succeeded`) or the last retry or a 410 (`failed`)."),
    attempts: arr(ATTEMPT, "Every attempt, oldest first."),
    next_attempt_at: nullable(isoTime("When the next attempt is due (pending only).")),
    created_at: isoTime("When the event was enqueued."),
  },
  ["id", "event_id", "event_type", "endpoint_id", "url", "status", "attempts", "next_attempt_at", "created_at"],
);

/** `GET /v1/webhooks/deliveries`. */
export const listWebhookDeliveriesSchema = route({
  operationId: "listWebhookDeliveries",
  summary: "The webhook delivery log, newest first",
  description: "One row per event and destination, with every attempt.",
  tags: ["webhooks"],
  access: "keyOrSession",
  query: obj({
    ...PAGE_QUERY.properties,
    after: str("Cursor: the `id` of the last delivery of the previous page."),
    event_type: { ...DELIVERY_EVENT_TYPE, "x-error-message": `event_type must be one of ${DELIVERY_EVENT_TYPES.join(", ")}.` },
    status: oneOf(["pending", "succeeded", "failed"], "Only deliveries in this state.", { "x-error-message": "status must be pending, succeeded or failed." }),
  }),
  responses: {
    200: ok("One page.", LIST(DELIVERY, { has_more: bool("More deliveries follow.") })),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, unknown event_type or status)", ...AUTH_ERR }),
  },
});

/** `POST /v1/webhooks/deliveries/:id/replay`. */
export const replayWebhookDeliverySchema = route({
  operationId: "replayWebhookDelivery",
  summary: "Send a delivery again now",
  description: "Sends the same event (same `webhook-id` and body) to the same destination now, with a fresh retry schedule.",
  tags: ["webhooks"],
  access: "keyOrSession",
  params: obj({ id: str("Delivery id.", { maxLength: 64 }) }, ["id"]),
  responses: {
    202: ok("The delivery, due now.", DELIVERY),
    ...errors({ ...AUTH_ERR, 404: "`delivery_not_found` (unknown or another account's delivery)" }),
  },
});
