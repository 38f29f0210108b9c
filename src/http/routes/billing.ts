/** `GET /v1/billing/ledger?limit=&after=` (D8, D17, D29): the caller's ledger, newest first. */
import { type LedgerEntry, listLedger } from "../../billing/ledger.ts";
import { microsToUsd } from "../../billing/money.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";
import { principalOf } from "../auth.ts";
import { listLedgerSchema } from "../schemas/billing.ts";

/** A ledger entry as the API shows it (D8, D17, D29). */
export function ledgerEntryJson(e: LedgerEntry) {
  return {
    id: e.id,
    kind: e.kind,
    amount_usd: microsToUsd(e.amountMicros),
    balance_usd: microsToUsd(e.balanceAfterMicros),
    job_id: e.jobId,
    request_id: e.requestId,
    reference: e.reference,
    created_at: new Date(e.createdAt).toISOString(),
  };
}

export function billingRoutes(app: App, services: Services): void {
  app.get("/v1/billing/ledger", { schema: listLedgerSchema }, async (req) => {
    const query = req.query as { limit?: string; after?: string };
    const page = await listLedger(services.db.kysely, principalOf(req).accountId, {
      limit: query.limit === undefined ? 20 : Number(query.limit),
      after: query.after ?? null,
    });
    return {
      object: "list",
      data: page.entries.map(ledgerEntryJson),
      has_more: page.hasMore,
    };
  });
}
