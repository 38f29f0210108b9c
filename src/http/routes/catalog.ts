/**
 * Public catalog documents (spec "GET /v1/pricing", "GET /v1/limits/tiers", Versioning 5). They are
 * built once from the catalog and served as pre-serialized JSON.
 */
import { buildLegacyCreditsPricing, buildPricingCatalog, buildTierMatrix } from "../../catalog/pricing.ts";
import { TEXT_MODELS } from "../../catalog/text-models.ts";
import type { App } from "../types.ts";
import { getLegacyPricingSchema, getPricingSchema, getTiersSchema } from "../schemas/catalog.ts";

export function catalogRoutes(app: App): void {
  const pricing = JSON.stringify(buildPricingCatalog(TEXT_MODELS));
  const tiers = JSON.stringify(buildTierMatrix());
  const legacy = JSON.stringify(buildLegacyCreditsPricing(TEXT_MODELS));
  const json = "application/json; charset=utf-8";
  app.get("/v1/pricing", { schema: getPricingSchema }, async (_req, reply) =>
    reply.header("cache-control", "public, max-age=60").type(json).send(pricing),
  );
  app.get("/v1/limits/tiers", { schema: getTiersSchema }, async (_req, reply) =>
    reply.header("cache-control", "public, max-age=300").type(json).send(tiers),
  );
  app.get("/v1/credits/pricing", { schema: getLegacyPricingSchema }, async (_req, reply) =>
    reply.header("cache-control", "public, max-age=60").type(json).send(legacy),
  );
}
