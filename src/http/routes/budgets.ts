/**
 * Budgets (D44): `GET|POST /v1/budgets`, `GET|PATCH|DELETE /v1/budgets/{budget_id}` for the caller's
 * organization (owners and admins write; members and viewers read), and the operator's
 * `GET|POST /v1/admin/orgs/{org_id}/budgets`. Each change is audited (D45) as its caller's or the operator's.
 */
import { createBudget, deleteBudget, getBudget, listBudgets, patchBudget } from "../../accounts/budgets.ts";
import { requireOrg } from "../../accounts/admin.ts";
import type { Services } from "../../services.ts";
import { auditContextOf } from "../audit-context.ts";
import { ADMIN_ONLY, principalOf } from "../auth.ts";
import {
  adminCreateBudgetSchema,
  adminListBudgetsSchema,
  createBudgetSchema,
  deleteBudgetSchema,
  getBudgetSchema,
  listBudgetsSchema,
  patchBudgetSchema,
} from "../schemas/budgets.ts";
import type { App } from "../types.ts";

/** The organization's budget routes, behind the key-or-session hook. */
export function budgetRoutes(app: App, services: Services): void {
  const db = services.db.kysely;
  app.get("/v1/budgets", { schema: listBudgetsSchema }, async (req) => listBudgets(db, principalOf(req).accountId));
  app.post("/v1/budgets", { schema: createBudgetSchema, config: ADMIN_ONLY }, async (req, reply) => {
    const accountId = principalOf(req).accountId;
    const budget = await createBudget(db, services.auth, auditContextOf(req), accountId, req.body);
    services.budgetAlerts.budgetsChanged(accountId);
    return reply.code(201).send(budget);
  });
  app.get("/v1/budgets/:budget_id", { schema: getBudgetSchema }, async (req) => getBudget(db, principalOf(req).accountId, req.params.budget_id));
  app.patch("/v1/budgets/:budget_id", { schema: patchBudgetSchema, config: ADMIN_ONLY }, async (req) =>
    patchBudget(db, services.auth, auditContextOf(req), principalOf(req), req.params.budget_id, req.body),
  );
  app.delete("/v1/budgets/:budget_id", { schema: deleteBudgetSchema, config: ADMIN_ONLY }, async (req) =>
    deleteBudget(db, services.auth, auditContextOf(req), principalOf(req), req.params.budget_id),
  );
}

/** The operator's budget routes, behind the admin-token hook. */
export function adminBudgetRoutes(app: App, services: Services): void {
  const db = services.db.kysely;
  app.get("/v1/admin/orgs/:org_id/budgets", { schema: adminListBudgetsSchema }, async (req) => {
    await requireOrg(db, req.params.org_id);
    return listBudgets(db, req.params.org_id);
  });
  app.post("/v1/admin/orgs/:org_id/budgets", { schema: adminCreateBudgetSchema }, async (req, reply) => {
    await requireOrg(db, req.params.org_id);
    const budget = await createBudget(db, services.auth, auditContextOf(req, "operator"), req.params.org_id, req.body);
    services.budgetAlerts.budgetsChanged(req.params.org_id);
    return reply.code(201).send(budget);
  });
}
