/**
 * Route schemas of the model list, recommendation and capabilities.
 */
import { arr, AUTH_ERR, bool, errors, int, LIST, nullable, num, obj, ok, oneOf, route, str, queryInt } from "./common.ts";

/** The kinds of agent `GET /v1/models/recommend` knows (its route holds the recommendations). */
export const AGENTS = ["coding", "chat", "research", "agent", "cheap"];

/** `GET /v1/models`. */
export const listModelsSchema = route({
  operationId: "listModels",
  summary: "Live model list",
  description:
    "Enabled models of every modality, sorted by id; disabled models are omitted. Each carries its lifecycle: `deprecated` and `shutdown_date`; from its shutdown date a model answers 410 `model_retired` (it stays listed).",
  tags: ["models"],
  access: "keyOrSession",
  query: obj({ tier: queryInt("Only models usable on this tier, 0 to 4.", "^[0-4]$", "tier must be 0 to 4."), capability: str("Only models with this capability (for example `chat`, `tools`, `speech`, `image`, `video`).") }),
  responses: {
    200: ok(
      "The models.",
      LIST(
        obj(
          {
            id: str("Model id."),
            object: oneOf(["model"], "Always `model`."),
            created: int("Unix time."),
            owned_by: str("Model family."),
            modality: oneOf(["text", "audio", "image", "video"], "Modality."),
            capabilities: arr(str("Capability."), "What the model can do."),
            tier_min: int("Lowest tier that may use it."),
            legacy: bool("Legacy model."),
            deprecated: bool("Deprecated: a legacy model, or one with a shutdown date; newer models are preferred for new projects."),
            shutdown_date: nullable(str("The day (`YYYY-MM-DD`, UTC) from which the model answers 410 `model_retired`; null when none is scheduled.", { format: "date" })),
            aliases: arr(str("Alias."), "Aliases resolving to it."),
            realtime: bool("Speech models only: served on the realtime socket `GET /v1/audio/speech/{voice_id}/stream-input` (and `multi-stream-input`)."),
          },
          ["id", "object", "owned_by", "capabilities", "deprecated", "shutdown_date"],
        ),
      ),
    ),
    ...errors({ 400: "`invalid_request` (tier outside 0-4)", ...AUTH_ERR }),
  },
});

/** `GET /v1/models/recommend`. */
export const recommendModelSchema = route({
  operationId: "recommendModel",
  summary: "Recommended model for a kind of agent",
  tags: ["models"],
  access: "keyOrSession",
  query: obj({ agent: oneOf(AGENTS, "Kind of agent.", { default: "chat", "x-error-message": `agent must be one of ${AGENTS.join(", ")}.` }) }),
  responses: {
    200: ok(
      "The recommendation.",
      obj({ object: oneOf(["model.recommendation"], "Always `model.recommendation`."), agent: str("Kind of agent."), model: str("Concrete model id."), alias: str("Alias that follows the recommendation."), reason: str("Why.") }, ["object", "agent", "model", "alias", "reason"]),
    ),
    ...errors({ 400: "`invalid_request` (unknown agent)", ...AUTH_ERR }),
  },
});

/** `GET /v1/capabilities`. */
export const getCapabilitiesSchema = route({
  operationId: "getCapabilities",
  summary: "Gateway capabilities",
  tags: ["models"],
  access: "keyOrSession",
  responses: {
    200: ok(
      "Capabilities, endpoints, aliases, streaming and fallback support, and whether card top-ups are on.",
      obj(
        {
          object: oneOf(["capabilities"], "Always `capabilities`."),
          capabilities: arr(str("Capability."), "Every capability of the enabled models."),
          endpoints: arr(str("`METHOD /path`."), "Main endpoints."),
          aliases: obj({}, [], { description: "Text alias -> model id.", additionalProperties: { type: "string" } }),
          streaming: obj({}, [], { additionalProperties: true, description: "Streaming support." }),
          fallback: obj({}, [], { additionalProperties: true, description: "Fallback headers and layers." }),
          payments: obj(
            {
              card_top_ups: bool("Whether card top-ups are on: `POST /v1/billing/checkout` opens a payment page (when off, it answers 404 and deposits come from the operator)."),
              min_usd: nullable(num("The smallest top-up in USD (allowed); null when card top-ups are off.")),
              max_usd: nullable(num("The largest top-up in USD (allowed); null when card top-ups are off.")),
            },
            ["card_top_ups", "min_usd", "max_usd"],
            { description: "How this gateway takes payments, so a client offers a top-up only when it can work." },
          ),
        },
        ["object", "capabilities", "endpoints", "payments"],
      ),
    ),
    ...errors(AUTH_ERR),
  },
});
