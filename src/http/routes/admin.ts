/**
 * Operator API (D9, D21, D22): deposits, tier override and custom limits. Behind `GATEWAY_ADMIN_TOKEN`;
 * hidden from the OpenAPI document (D23).
 */
import { Type } from "typebox";
import { depositFunds, setLimitsOverride, setTierOverride } from "../../accounts/admin.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";

const UserParams = Type.Object({ user_id: Type.String({ maxLength: 200 }) });

export function adminRoutes(app: App, services: Services): void {
  app.post(
    "/v1/admin/users/:user_id/deposits",
    {
      schema: {
        hide: true,
        params: UserParams,
        body: Type.Object({ amount_usd: Type.Unknown(), reference: Type.Optional(Type.Unknown()) }),
      },
    },
    async (req) => depositFunds(services.db.kysely, req.params.user_id, req.body),
  );
  app.put(
    "/v1/admin/users/:user_id/tier",
    { schema: { hide: true, params: UserParams, body: Type.Object({ tier: Type.Unknown() }) } },
    async (req) => setTierOverride(services.db.kysely, req.params.user_id, req.body.tier),
  );
  app.put(
    "/v1/admin/users/:user_id/limits",
    { schema: { hide: true, params: UserParams, body: Type.Record(Type.String(), Type.Unknown()) } },
    async (req) => setLimitsOverride(services.db.kysely, req.params.user_id, req.body),
  );
}
