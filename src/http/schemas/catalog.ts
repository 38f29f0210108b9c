/**
 * Route schemas of the public catalog documents (spec "GET /v1/pricing", "GET /v1/limits/tiers").
 */
import { arr, bool, errors, int, nullable, num, obj, ok, oneOf, ref, route, str } from "./common.ts";

/** `GET /v1/pricing`. */
export const getPricingSchema = route({
  operationId: "getPricing",
  summary: "Pricing catalog",
  description: "Every model's price as charged. Public; `Cache-Control: public, max-age=60`.",
  tags: ["catalog"],
  access: "public",
  responses: {
    200: ok(
      "The catalog.",
      obj(
        {
          object: oneOf(["pricing.catalog"], "Always `pricing.catalog`."),
          text_count: int("Number of text rows."),
          media_count: int("Number of media rows."),
          text: arr(ref("TextPriceRow"), "Token-priced models, sorted by `id`."),
          media: arr(
            obj(
              {
                id: str("Model id."),
                name: str("Display name."),
                modality: oneOf(["image", "video", "audio"], "Modality."),
                pricing_mode: oneOf(["per-image", "per-second", "per-minute", "per-quality", "per-mp", "per-char", "per-song", "per-call"], "How the model is priced."),
                usd_per_call: num("Representative cost of one typical call, USD."),
                detail: obj({}, [], { description: "Shape by `pricing_mode` (for example `provider_cost`, `markup` for per-image).", additionalProperties: true }),
                deprecated: bool("Deprecated: a legacy model, or one with a shutdown date."),
                shutdown_date: nullable(str("The day (`YYYY-MM-DD`, UTC) from which the model answers 410 `model_retired`; null when none is scheduled.", { format: "date" })),
              },
              ["id", "name", "modality", "pricing_mode", "usd_per_call", "detail", "deprecated", "shutdown_date"],
            ),
            "Image, video and audio models, sorted by `id`.",
          ),
        },
        ["object", "text_count", "media_count", "text", "media"],
      ),
    ),
    ...errors({ 500: "`api_error`" }),
  },
});

/** `GET /v1/limits/tiers`. */
export const getTiersSchema = route({
  operationId: "getTiers",
  summary: "Rate-limit tier matrix",
  description: "Tiers rise automatically with total deposits. Public; `Cache-Control: public, max-age=300`.",
  tags: ["catalog"],
  access: "public",
  responses: {
    200: ok("Tiers 0 to 4 in order.", obj({ object: oneOf(["tier.matrix"], "Always `tier.matrix`."), tiers: arr(ref("TierRow"), "Five tiers.", { minItems: 5, maxItems: 5 }) }, ["object", "tiers"])),
    ...errors({ 500: "`api_error`" }),
  },
});

/** `GET /v1/credits/pricing`. */
export const getLegacyPricingSchema = route({
  operationId: "getLegacyPricing",
  summary: "Legacy text-only pricing",
  description: "Kept for backward compatibility; `GET /v1/pricing` replaces it. Public.",
  tags: ["catalog"],
  access: "public",
  responses: {
    200: ok("The text rows.", obj({ object: oneOf(["list"], "Always `list`."), data: arr(ref("TextPriceRow"), "Text models."), deprecated: bool("Always true."), replaced_by: str("`/v1/pricing`.") }, ["object", "data"])),
  },
});
