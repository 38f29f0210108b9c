/**
 * Operator API (D9, D21, D22, D25, D41; issue 15 point 3): find users and organizations and read one (its
 * ledger, requests and usage as the customer sees them), deposits, tier override, custom limits (by user:
 * the user's personal organization; or by organization), the state of the upstream
 * sources, and revenue against upstream cost. Behind `GATEWAY_ADMIN_TOKEN` (http/auth.ts `requireAdmin`);
 * listed in the OpenAPI document under the `operator` tag (schemas/admin.ts).
 */
import {
  depositFunds,
  getAccountForOperator,
  getOrgForOperator,
  listAccounts,
  listOrgs,
  personalOrgOrThrow,
  requireOrg,
  setLimitsOverride,
  setTierOverride,
} from "../../accounts/admin.ts";
import { microsToUsd } from "../../money.ts";
import { revenueReport, type RevenueRow } from "../../billing/revenue.ts";
import type { Services } from "../../services.ts";
import { ledgerPage, requestsPage, summaryOptions, usageSummary } from "../account-views.ts";
import type { App } from "../types.ts";
import { auditContextOf } from "../audit-context.ts";
import {
  accountLedgerSchema,
  accountRequestsSchema,
  accountUsageSchema,
  depositSchema,
  getAccountSchema,
  getOrgSchema,
  listAccountsSchema,
  listOrgsSchema,
  listUpstreamsSchema,
  orgDepositSchema,
  orgLedgerSchema,
  orgRequestsSchema,
  orgUsageSchema,
  revenueSchema,
  setLimitsSchema,
  setOrgLimitsSchema,
  setOrgTierSchema,
  setTierSchema,
} from "../schemas/admin.ts";

/** A revenue group as the API shows it (amounts in USD). */
function revenueRowJson(r: RevenueRow) {
  return {
    day: r.day,
    model: r.model,
    requests: r.requests,
    revenue_usd: microsToUsd(r.revenueMicros),
    upstream_cost_usd: r.upstreamCostMicros === null ? null : microsToUsd(r.upstreamCostMicros),
    margin_usd: r.marginMicros === null ? null : microsToUsd(r.marginMicros),
    uncosted_revenue_usd: microsToUsd(r.uncostedRevenueMicros),
    upstream_cost_by_basis: {
      reported_usd: microsToUsd(r.byBasis.reported),
      list_price_usd: microsToUsd(r.byBasis.listPrice),
      catalog_usd: microsToUsd(r.byBasis.catalog),
    },
  };
}

export function adminRoutes(app: App, services: Services): void {
  const db = services.db.kysely;

  app.get("/v1/admin/users", { schema: listAccountsSchema }, async (req) =>
    listAccounts(db, services.db.dialect, req.query),
  );
  app.get("/v1/admin/users/:user_id", { schema: getAccountSchema }, async (req) => getAccountForOperator(db, req.params.user_id));

  // One user's personal organization (D41) as its owner sees it: the customer endpoints' own code, after
  // a 404 for an unknown user.
  app.get("/v1/admin/users/:user_id/ledger", { schema: accountLedgerSchema }, async (req) =>
    ledgerPage(db, await personalOrgOrThrow(db, req.params.user_id), req.query),
  );
  app.get("/v1/admin/users/:user_id/requests", { schema: accountRequestsSchema }, async (req) =>
    requestsPage(db, await personalOrgOrThrow(db, req.params.user_id), req.query),
  );
  app.get("/v1/admin/users/:user_id/usage", { schema: accountUsageSchema }, async (req) =>
    usageSummary(db, await personalOrgOrThrow(db, req.params.user_id), req.query),
  );

  app.post("/v1/admin/users/:user_id/deposits", { schema: depositSchema }, async (req) => {
    const { user_id } = req.params;
    return { user_id, ...(await depositFunds(db, services.auth, await personalOrgOrThrow(db, user_id), req.body, auditContextOf(req, "operator"))) };
  });
  app.put("/v1/admin/users/:user_id/tier", { schema: setTierSchema }, async (req) => {
    const { user_id } = req.params;
    return { user_id, ...(await setTierOverride(db, services.auth, await personalOrgOrThrow(db, user_id), req.body.tier, auditContextOf(req, "operator"))) };
  });
  app.put("/v1/admin/users/:user_id/limits", { schema: setLimitsSchema }, async (req) => {
    const { user_id } = req.params;
    return { user_id, ...(await setLimitsOverride(db, services.auth, await personalOrgOrThrow(db, user_id), req.body, auditContextOf(req, "operator"))) };
  });

  // Organizations (D41): the same actions and views, addressed by organization.
  app.get("/v1/admin/orgs", { schema: listOrgsSchema }, async (req) => listOrgs(db, services.db.dialect, req.query));
  app.get("/v1/admin/orgs/:org_id", { schema: getOrgSchema }, async (req) => getOrgForOperator(db, req.params.org_id));
  app.get("/v1/admin/orgs/:org_id/ledger", { schema: orgLedgerSchema }, async (req) => {
    await requireOrg(db, req.params.org_id);
    return ledgerPage(db, req.params.org_id, req.query);
  });
  app.get("/v1/admin/orgs/:org_id/requests", { schema: orgRequestsSchema }, async (req) => {
    await requireOrg(db, req.params.org_id);
    return requestsPage(db, req.params.org_id, req.query);
  });
  app.get("/v1/admin/orgs/:org_id/usage", { schema: orgUsageSchema }, async (req) => {
    await requireOrg(db, req.params.org_id);
    return usageSummary(db, req.params.org_id, req.query);
  });
  app.post("/v1/admin/orgs/:org_id/deposits", { schema: orgDepositSchema }, async (req) =>
    depositFunds(db, services.auth, req.params.org_id, req.body, auditContextOf(req, "operator")),
  );
  app.put("/v1/admin/orgs/:org_id/tier", { schema: setOrgTierSchema }, async (req) =>
    setTierOverride(db, services.auth, req.params.org_id, req.body.tier, auditContextOf(req, "operator")),
  );
  app.put("/v1/admin/orgs/:org_id/limits", { schema: setOrgLimitsSchema }, async (req) =>
    setLimitsOverride(db, services.auth, req.params.org_id, req.body, auditContextOf(req, "operator")),
  );

  // D25's rows plus what a health page reads: the error rate and the window they cover.
  app.get("/v1/admin/upstreams", { schema: listUpstreamsSchema }, async () => ({
    object: "list" as const,
    data: services.upstreams.states.map((s) => {
      const row = s.snapshot();
      const calls = row.successes + row.failures;
      return { ...row, error_rate: calls === 0 ? null : row.failures / calls, window_s: Math.round(s.stats.windowMs / 1000) };
    }),
  }));

  app.get("/v1/admin/revenue", { schema: revenueSchema }, async (req) => {
    const q = req.query;
    const { from, to, tz } = summaryOptions({ from: q.from, to: q.to, tz: q.tz });
    const groupBy = q.group_by ?? "day";
    const out = await revenueReport(db, { from, to, tz, groupBy });
    return {
      object: "admin.revenue" as const,
      group_by: groupBy,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      data: out.rows.map(revenueRowJson),
      total: revenueRowJson(out.total),
    };
  });
}
