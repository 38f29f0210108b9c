/**
 * The audit log's views: `GET /v1/orgs/{org_id}/audit-log` (owners and admins of the organization, API
 * key or session token) and the operator's `GET /v1/admin/audit-log` (every organization), as JSON pages
 * or, with `format=csv`, CSV. Reads only: no route changes or deletes an entry.
 */
import { auditCsv, type AuditPage, operatorAuditLog, orgAuditLog } from "../../accounts/audit-log.ts";
import type { Services } from "../../services.ts";
import type { FastifyReply } from "fastify";
import type { App } from "../types.ts";
import { principalOf } from "../auth.ts";
import { adminAuditLogSchema, orgAuditLogSchema } from "../schemas/audit.ts";

/** The role is checked in the path's organization (accounts/audit-log.ts): every member passes the route class. */
const ANY_MEMBER = { minRole: "viewer" } as const;

/** A page as JSON, or as CSV (`format=csv`) with `X-Svc-Has-More` when more entries match. */
function answer(reply: FastifyReply, page: AuditPage, format: string | undefined, name: string) {
  if (format !== "csv") return page;
  return reply
    .type("text/csv; charset=utf-8")
    .header("content-disposition", `attachment; filename="${name}.csv"`)
    .header("x-svc-has-more", String(page.has_more))
    .send(auditCsv(page.data));
}

/** `GET /v1/orgs/{org_id}/audit-log`, in the scope of API keys and session tokens. */
export function orgAuditRoutes(app: App, services: Services): void {
  const db = services.db.kysely;
  app.get("/v1/orgs/:org_id/audit-log", { schema: orgAuditLogSchema, config: ANY_MEMBER }, async (req, reply) => {
    const page = await orgAuditLog(db, principalOf(req), req.params.org_id, req.query);
    return answer(reply, page, req.query.format, `audit-log-${req.params.org_id}`);
  });
}

/** `GET /v1/admin/audit-log`, in the operator API's scope. */
export function adminAuditRoutes(app: App, services: Services): void {
  const db = services.db.kysely;
  app.get("/v1/admin/audit-log", { schema: adminAuditLogSchema }, async (req, reply) => {
    const page = await operatorAuditLog(db, req.query);
    return answer(reply, page, req.query.format, "audit-log");
  });
}
