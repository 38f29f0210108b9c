/**
 * Webhooks (D31): `client.webhooks` registers endpoints for the account's events, rotates their
 * signing secrets and lists and replays deliveries.
 *
 * ```ts
 * const hook = await client.webhooks.create({ url: "https://example.com/hooks", events: ["job.succeeded"] });
 * for await (const d of client.webhooks.deliveries({ status: "failed" })) await client.webhooks.replay(d.id);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { PagePromise } from "../pagination.ts";
import { type Answer, type JsonBody, type ListQuery, listQuery, type Query } from "../types.ts";

/** `client.webhooks`. */
export class Webhooks {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/webhooks`: the account's endpoints. */
  list(options: RequestOptions = {}): Promise<Answer<"listWebhooks">> {
    return unwrap(this.client.raw.GET("/v1/webhooks", this.client.requestInit(options)));
  }

  /** `POST /v1/webhooks`: registers an `https://` URL (all event types when `events` is omitted); the signing `secret` is shown only here. Not retried. */
  create(body: JsonBody<"createWebhook">, options: RequestOptions = {}): Promise<Answer<"createWebhook">> {
    return unwrap(this.client.raw.POST("/v1/webhooks", { body, ...this.client.requestInit(options) }));
  }

  /** `DELETE /v1/webhooks/{id}`: removes an endpoint. */
  delete(id: string, options: RequestOptions = {}): Promise<Answer<"deleteWebhook">> {
    return unwrap(this.client.raw.DELETE("/v1/webhooks/{id}", { params: { path: { id } }, ...this.client.requestInit(options) }));
  }

  /** `POST /v1/webhooks/{id}/rotate-secret`: a new signing secret for the endpoint (shown only here). Not retried. */
  rotateSecret(id: string, options: RequestOptions = {}): Promise<Answer<"rotateWebhookSecret">> {
    return unwrap(this.client.raw.POST("/v1/webhooks/{id}/rotate-secret", { params: { path: { id } }, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/webhooks/secret`: the account's signing secret. */
  secret(options: RequestOptions = {}): Promise<Answer<"getWebhookSecret">> {
    return unwrap(this.client.raw.GET("/v1/webhooks/secret", this.client.requestInit(options)));
  }

  /** `GET /v1/webhooks/deliveries`: deliveries newest first, by `status` and `event_type` (cursor: the delivery `id`). */
  deliveries(query: ListQuery<"listWebhookDeliveries"> = {}, options: RequestOptions = {}): PagePromise<Answer<"listWebhookDeliveries">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) =>
        unwrap(this.client.raw.GET("/v1/webhooks/deliveries", { params: { query: listQuery<Query<"listWebhookDeliveries">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (delivery) => delivery.id,
      after,
    );
  }

  /** `POST /v1/webhooks/deliveries/{id}/replay`: sends the same event to the same destination now. Not retried. */
  replay(id: string, options: RequestOptions = {}): Promise<Answer<"replayWebhookDelivery">> {
    return unwrap(this.client.raw.POST("/v1/webhooks/deliveries/{id}/replay", { params: { path: { id } }, ...this.client.requestInit(options) }));
  }
}
