/**
 * The live model list (spec "Other endpoints", Versioning 6; D23): `GET /v1/models` (filters `tier` and
 * `capability`; disabled models omitted), `GET /v1/models/recommend?agent=` and `GET /v1/capabilities`.
 * Everything is read from the catalog; each model carries its lifecycle (D35: `deprecated`, `shutdown_date`).
 * `GET /v1/capabilities` also says whether card top-ups are on (D33; issue 42: a client such as the console
 * learns it there, without a `GET /v1/billing/checkout` that answers 404 when they are off).
 */
import { lifecycleOf } from "../../catalog/lifecycle.ts";
import { enabledModels } from "../../catalog/models.ts";
import { TEXT_ALIASES, TEXT_MODELS } from "../../catalog/text-models.ts";
import type { Topups } from "../../accounts/topups.ts";
import type { App } from "../types.ts";
import { getCapabilitiesSchema, listModelsSchema, recommendModelSchema } from "../schemas/models.ts";

/** One entry of `GET /v1/models`. */
export interface ModelEntry {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
  modality: string;
  capabilities: string[];
  tier_min: number;
  legacy: boolean;
  /** D35: legacy, or scheduled to shut down. */
  deprecated: boolean;
  /** D35: `YYYY-MM-DD` (UTC) from which the model answers 410 `model_retired`, or null. */
  shutdown_date: string | null;
  aliases: string[];
  /** Speech models (D42): served on the realtime socket (`/v1/audio/speech/{voice_id}/stream-input`). Absent for other models. */
  realtime?: boolean;
}

/** A fixed creation time: the catalog has no per-model dates. */
const CREATED = 1_767_225_600;

/** Every enabled model (text and media) as `GET /v1/models` lists it, sorted by id; also the MCP tool `list_models` (D39). */
export function allModels(): ModelEntry[] {
  const aliasesOf = (id: string) =>
    Object.entries(TEXT_ALIASES)
      .filter(([, target]) => target === id)
      .map(([a]) => a);
  const media: ModelEntry[] = enabledModels().map((m) => ({
    id: m.id,
    object: "model",
    created: CREATED,
    owned_by: m.family,
    modality: m.modality,
    capabilities: [m.capability],
    // Video needs tier 1 (tier 0 has no video concurrency).
    tier_min: m.capability === "video" ? 1 : 0,
    legacy: m.legacy,
    ...lifecycleOf(m.id, m.legacy),
    aliases: "aliases" in m ? m.aliases : [],
    ...(m.capability === "speech" ? { realtime: m.supportsRealtime } : {}),
  }));
  const text: ModelEntry[] = TEXT_MODELS.filter((m) => m.enabled).map((m) => ({
    id: m.id,
    object: "model",
    created: CREATED,
    owned_by: m.family,
    modality: "text",
    capabilities: [...m.capabilities],
    tier_min: m.tierMin,
    legacy: false,
    ...lifecycleOf(m.id, false),
    aliases: aliasesOf(m.id),
  }));
  return [...text, ...media].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** What an agent of each kind is best served by (`GET /v1/models/recommend?agent=`). */
const RECOMMEND: Record<string, { alias: string; why: string }> = {
  coding: { alias: "code", why: "tuned for code and tool use" },
  chat: { alias: "fast", why: "quick conversational answers at low cost" },
  research: { alias: "best", why: "the strongest reasoning in the catalog" },
  agent: { alias: "agent", why: "reliable multi-step tool calling" },
  cheap: { alias: "cheap", why: "the lowest price per token" },
};

/** The `payments` of `GET /v1/capabilities`: whether card top-ups (D33) are on, and their bounds in USD (null when off). */
export function paymentsCapability(payments: Topups | null): { card_top_ups: boolean; min_usd: number | null; max_usd: number | null } {
  if (payments === null) return { card_top_ups: false, min_usd: null, max_usd: null };
  const { min_usd, max_usd } = payments.settings();
  return { card_top_ups: true, min_usd, max_usd };
}

/**
 * Registers `GET /v1/models`, `/v1/models/recommend` and `/v1/capabilities` on `app`; `payments` is null
 * when card top-ups are off. `list` gives the entries and the schema of the model list (default: every
 * enabled model, {@link allModels}; the OpenAI dialect lists its own, D48); the `tier` and `capability`
 * filters apply to either.
 */
export function modelRoutes(
  app: App,
  payments: Topups | null,
  list: { models: () => ModelEntry[]; schema: typeof listModelsSchema } = { models: allModels, schema: listModelsSchema },
): void {
  app.get("/v1/models", { schema: list.schema }, async (req) => {
    const query = req.query;
    let data = list.models();
    if (query.tier !== undefined) data = data.filter((m) => m.tier_min <= Number(query.tier));
    if (query.capability !== undefined) data = data.filter((m) => m.capabilities.includes(query.capability ?? ""));
    return { object: "list", data };
  });

  app.get(
    "/v1/models/recommend",
    { schema: recommendModelSchema },
    async (req) => {
      const agent = req.query.agent ?? "chat";
      const rec = RECOMMEND[agent];
      const model = TEXT_ALIASES[rec.alias] ?? rec.alias;
      return { object: "model.recommendation", agent, model, alias: rec.alias, reason: rec.why };
    },
  );

  app.get("/v1/capabilities", { schema: getCapabilitiesSchema }, async () => {
    const caps = new Set<string>();
    for (const m of allModels()) for (const c of m.capabilities) caps.add(c);
    return {
      object: "capabilities",
      capabilities: [...caps].sort(),
      endpoints: [
        "POST /v1/chat/completions",
        "POST /v1/messages",
        "POST /v1/audio/speech",
        "POST /v1/audio/music",
        "POST /v1/audio/sfx",
        "POST /v1/audio/voice-design",
        "POST /v1/audio/voice-clone",
        "GET /v1/audio/voices",
        "POST /v1/images/generations",
        "POST /v1/videos/generations",
        "POST /v1/genmedia/jobs",
        "GET /v1/jobs/{id}",
      ],
      aliases: { ...TEXT_ALIASES },
      streaming: { chat: true, messages: true, speech: ["beta-speech-hd", "beta-speech-turbo"] },
      fallback: { header: "X-Svc-Fallback", layers: [1, 2, 3] },
      payments: paymentsCapability(payments),
    };
  });
}
