/** `GET|PUT /v1/billing/alerts` (D34): the caller's low-balance alert. */
import type { Services } from "../../services.ts";
import { getLowBalanceAlert, parseThreshold, setLowBalanceAlert } from "../../webhooks/balance-alerts.ts";
import type { App } from "../types.ts";
import { ADMIN_ONLY, principalOf } from "../auth.ts";
import { auditContextOf } from "../audit-context.ts";
import { getAlertsSchema, putAlertsSchema } from "../schemas/billing.ts";

export function alertRoutes(app: App, services: Services): void {
  app.get("/v1/billing/alerts", { schema: getAlertsSchema }, async (req) => getLowBalanceAlert(services.db.kysely, principalOf(req).accountId));
  app.put("/v1/billing/alerts", { schema: putAlertsSchema, config: ADMIN_ONLY }, async (req) => {
    const threshold = parseThreshold(req.body);
    return setLowBalanceAlert(services.db.kysely, services.alerts, principalOf(req).accountId, threshold, auditContextOf(req));
  });
}
