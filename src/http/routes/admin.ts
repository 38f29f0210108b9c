/**
 * Operator API (D9, D21, D22, D25): deposits, tier override, custom limits and the state of the real
 * upstream sources. Behind `GATEWAY_ADMIN_TOKEN`; hidden from the OpenAPI document (D23).
 */
import { Type } from "typebox";
import { depositFunds, setLimitsOverride, setTierOverride } from "../../accounts/admin.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";

const UserParams = Type.Object({ user_id: Type.String({ maxLength: 200 }) });

/**
 * `GET /v1/admin/upstreams` (D25): one row per configured source. The serializer writes only these
 * fields, so a key or URL could not slip into the answer.
 */
const UpstreamsList = Type.Object(
  {
    object: Type.Literal("list"),
    data: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          protocol: Type.String(),
          families: Type.Array(Type.String()),
          circuit: Type.Union([Type.Literal("closed"), Type.Literal("open"), Type.Literal("half_open")]),
          in_flight: Type.Integer(),
          successes: Type.Integer(),
          failures: Type.Integer(),
          p50_ms: Type.Union([Type.Integer(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

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
  app.get("/v1/admin/upstreams", { schema: { hide: true, response: { 200: UpstreamsList } } }, async () => ({
    object: "list" as const,
    data: services.upstreams.snapshot(),
  }));
}
