/** `GET /v1/billing/ledger?limit=&after=` (D8, D17, D29): the caller's ledger, newest first. */
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { ledgerPage } from "../account-views.ts";
import { principalOf } from "../auth.ts";
import { listLedgerSchema } from "../schemas/billing.ts";

export function billingRoutes(app: App, services: Services): void {
  app.get("/v1/billing/ledger", { schema: listLedgerSchema }, async (req) =>
    ledgerPage(services.db.kysely, principalOf(req).accountId, req.query),
  );
}
