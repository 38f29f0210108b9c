/**
 * Webhooks (D31): endpoints (create, list, delete, rotate the secret), the account's default secret and
 * the delivery log with replay. API key or session token.
 */
import type { Services } from "../../services.ts";
import { listDeliveries, replayDelivery } from "../../webhooks/deliveries.ts";
import { createEndpoint, defaultSecret, deleteEndpoint, listEndpoints, rotateEndpointSecret } from "../../webhooks/endpoints.ts";
import type { App } from "../types.ts";
import { ADMIN_ONLY, principalOf } from "../auth.ts";
import { auditContextOf } from "../audit-context.ts";
import {
  createWebhookSchema,
  deleteWebhookSchema,
  getWebhookSecretSchema,
  listWebhookDeliveriesSchema,
  listWebhooksSchema,
  replayWebhookDeliverySchema,
  rotateWebhookSecretSchema,
} from "../schemas/webhooks.ts";

export function webhookRoutes(app: App, services: Services): void {
  const db = services.db.kysely;
  app.post("/v1/webhooks", { schema: createWebhookSchema, config: ADMIN_ONLY }, async (req, reply) => {
    return reply.code(201).send(await createEndpoint(db, services.webhookUrlPolicy, principalOf(req).accountId, req.body, auditContextOf(req)));
  });
  app.get("/v1/webhooks", { schema: listWebhooksSchema }, async (req) => ({ object: "list", data: await listEndpoints(db, principalOf(req).accountId) }));
  app.get("/v1/webhooks/secret", { schema: getWebhookSecretSchema, config: ADMIN_ONLY }, async (req) => ({ secret: await defaultSecret(db, principalOf(req).accountId) }));
  app.delete("/v1/webhooks/:id", { schema: deleteWebhookSchema, config: ADMIN_ONLY }, async (req) => {
    const { id } = req.params;
    await deleteEndpoint(db, principalOf(req).accountId, id, auditContextOf(req));
    return { id, deleted: true };
  });
  app.post("/v1/webhooks/:id/rotate-secret", { schema: rotateWebhookSecretSchema, config: ADMIN_ONLY }, async (req) =>
    rotateEndpointSecret(db, principalOf(req).accountId, req.params.id, auditContextOf(req)),
  );
  app.get("/v1/webhooks/deliveries", { schema: listWebhookDeliveriesSchema }, async (req) => {
    const q = req.query;
    const page = await listDeliveries(db, principalOf(req).accountId, {
      limit: q.limit === undefined ? 20 : Number(q.limit),
      after: q.after ?? null,
      eventType: q.event_type ?? null,
      status: q.status ?? null,
    });
    return { object: "list", data: page.data, has_more: page.hasMore };
  });
  app.post("/v1/webhooks/deliveries/:id/replay", { schema: replayWebhookDeliverySchema, config: ADMIN_ONLY }, async (req, reply) => {
    const view = await replayDelivery(db, principalOf(req).accountId, req.params.id);
    services.nudgeWebhooks();
    return reply.code(202).send(view);
  });
}
