/** `GET /v1/billing/ledger?limit=&after=` (D8, D17, D29): the caller's ledger, newest first. */
import { type Executor, type LedgerEntry, listLedger } from "../../billing/ledger.ts";
import { microsToUsd } from "../../billing/money.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
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

/**
 * One page of `accountId`'s ledger as `GET /v1/billing/ledger` answers it (also the operator's view of an
 * account, `GET /v1/admin/users/{user_id}/ledger`); `query` as validated by the route schema.
 */
export async function ledgerPage(db: Executor, accountId: string, query: { limit?: string; after?: string }) {
  const page = await listLedger(db, accountId, {
    limit: query.limit === undefined ? 20 : Number(query.limit),
    after: query.after ?? null,
  });
  return {
    object: "list" as const,
    data: page.entries.map(ledgerEntryJson),
    has_more: page.hasMore,
  };
}

export function billingRoutes(app: App, services: Services): void {
  app.get("/v1/billing/ledger", { schema: listLedgerSchema }, async (req) =>
    ledgerPage(services.db.kysely, principalOf(req).accountId, req.query),
  );
}
