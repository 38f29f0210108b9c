/**
 * Organizations, members and invites (D41): `/v1/orgs...` and `POST /v1/invites/{token}/accept`, with an
 * API key or a session token. The roles are checked by accounts/orgs.ts against the organization in the
 * path (not the one `X-Svc-Org` names), so the routes' own class is `viewer`: any member reaches them.
 */
import {
  acceptInvite,
  changeRole,
  createInvite,
  createOrg,
  deleteOrg,
  getOrg,
  listInvites,
  listMembers,
  listOrgs,
  removeMember,
  revokeInvite,
} from "../../accounts/orgs.ts";
import { updateOrg, withRetention } from "../../accounts/retention.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { principalOf } from "../auth.ts";
import { auditContextOf } from "../audit-context.ts";
import {
  acceptInviteSchema,
  createInviteSchema,
  createOrgSchema,
  deleteOrgSchema,
  getOrgSchema,
  listInvitesSchema,
  listMembersSchema,
  listOrgsSchema,
  removeMemberSchema,
  revokeInviteSchema,
  updateMemberSchema,
  updateOrgSchema,
} from "../schemas/orgs.ts";

/** The services check the role in the path's organization: every member passes the route-class check. */
const ANY_MEMBER = { minRole: "viewer" } as const;

export function orgRoutes(app: App, services: Services): void {
  const db = services.db.kysely;
  // Every organization answer shows the windows that apply to it (D46).
  const operator = services.config.retention;
  const withWindows = async <V extends { id: string }>(view: V) => (await withRetention(db, operator, [view]))[0];
  app.post("/v1/orgs", { schema: createOrgSchema, config: ANY_MEMBER }, async (req, reply) =>
    reply.code(201).send(await withWindows(await createOrg(db, principalOf(req), req.body, auditContextOf(req)))),
  );
  app.get("/v1/orgs", { schema: listOrgsSchema }, async (req) => {
    const list = await listOrgs(db, principalOf(req));
    return { ...list, data: await withRetention(db, operator, list.data) };
  });
  app.get("/v1/orgs/:org_id", { schema: getOrgSchema }, async (req) => withWindows(await getOrg(db, principalOf(req), req.params.org_id)));
  app.patch("/v1/orgs/:org_id", { schema: updateOrgSchema, config: ANY_MEMBER }, async (req) =>
    updateOrg(db, operator, principalOf(req), req.params.org_id, req.body, auditContextOf(req)),
  );
  app.delete("/v1/orgs/:org_id", { schema: deleteOrgSchema, config: ANY_MEMBER }, async (req) =>
    deleteOrg(db, services.auth, principalOf(req), req.params.org_id, auditContextOf(req)),
  );
  app.get("/v1/orgs/:org_id/members", { schema: listMembersSchema }, async (req) => listMembers(db, principalOf(req), req.params.org_id));
  app.patch("/v1/orgs/:org_id/members/:user_id", { schema: updateMemberSchema, config: ANY_MEMBER }, async (req) =>
    changeRole(db, principalOf(req), req.params.org_id, req.params.user_id, req.body, auditContextOf(req)),
  );
  app.delete("/v1/orgs/:org_id/members/:user_id", { schema: removeMemberSchema, config: ANY_MEMBER }, async (req) =>
    removeMember(db, principalOf(req), req.params.org_id, req.params.user_id, auditContextOf(req)),
  );
  app.post("/v1/orgs/:org_id/invites", { schema: createInviteSchema, config: ANY_MEMBER }, async (req, reply) =>
    reply.code(201).send(await createInvite(db, principalOf(req), req.params.org_id, req.body, auditContextOf(req))),
  );
  app.get("/v1/orgs/:org_id/invites", { schema: listInvitesSchema }, async (req) => listInvites(db, principalOf(req), req.params.org_id));
  app.delete("/v1/orgs/:org_id/invites/:invite_id", { schema: revokeInviteSchema, config: ANY_MEMBER }, async (req) => {
    await revokeInvite(db, principalOf(req), req.params.org_id, req.params.invite_id, auditContextOf(req));
    return { id: req.params.invite_id, deleted: true as const };
  });
  app.post("/v1/invites/:token/accept", { schema: acceptInviteSchema, config: ANY_MEMBER }, async (req) =>
    acceptInvite(db, principalOf(req), req.params.token, auditContextOf(req)),
  );
}
