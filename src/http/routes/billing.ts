/** `GET /v1/billing/ledger?limit=&after=` (D8, D17): the caller's ledger, newest first. */
import { Type } from "typebox";
import { listLedger } from "../../billing/ledger.ts";
import { microsToUsd } from "../../billing/money.ts";
import { errors } from "../../errors.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";
import { principalOf } from "../auth.ts";

const Query = Type.Object({
  limit: Type.Optional(Type.String({ maxLength: 10 })),
  after: Type.Optional(Type.String({ maxLength: 64 })),
});

export function billingRoutes(app: App, services: Services): void {
  app.get("/v1/billing/ledger", { schema: { querystring: Query } }, async (req) => {
    const limit = req.query.limit === undefined ? 20 : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw errors.invalidRequest("limit must be an integer from 1 to 100.", "limit");
    }
    const page = await listLedger(services.db.kysely, principalOf(req).accountId, {
      limit,
      after: req.query.after ?? null,
    });
    return {
      object: "list",
      data: page.entries.map((e) => ({
        id: e.id,
        kind: e.kind,
        amount_usd: microsToUsd(e.amountMicros),
        balance_usd: microsToUsd(e.balanceAfterMicros),
        job_id: e.jobId,
        created_at: new Date(e.createdAt).toISOString(),
      })),
      has_more: page.hasMore,
    };
  });
}
