/**
 * The chat fallback plans of a gateway (D25, `buildFallbackPlan`): which sources serve each text model,
 * from the configured text sources (upstreams/sources.ts) and the simulator.
 */
import { isRetired } from "../catalog/lifecycle.ts";
import { getTextModel, type TextModel } from "../catalog/text-models.ts";
import type { ChatAdapter } from "../upstreams/chat-types.ts";
import type { TextSource } from "../upstreams/sources.ts";
import { buildFallbackPlan, type FallbackStep, type ModelSource } from "./fallback.ts";

/** The source name of the simulated chat upstream in fallback plans (parenthesized, unlike upstream names). */
export const SIMULATOR_SOURCE = "(simulator)";

/**
 * The fallback plan of a text model, as `Services.chatPlanFor` gives it: layer 0 its first source, 1 its
 * other sources, 2 and 3 its first two equivalent models (`buildFallbackPlan`). Sources are the
 * `textSources` configured for the model's family (in their order), else the simulator; with `testMode`
 * (a test-mode key, D32) always the simulator.
 */
export type ChatPlanner = (model: TextModel, opts?: { testMode?: boolean }) => FallbackStep[];

/** The {@link ChatPlanner} over `textSources` and the simulated chat upstream `simulator`. */
export function chatPlanner(textSources: readonly TextSource[], simulator: ChatAdapter): ChatPlanner {
  const adapters = new Map<string, ChatAdapter>([[SIMULATOR_SOURCE, simulator], ...textSources.map((u) => [u.source, u.adapter] as const)]);
  const sourcesOf = (m: TextModel, testMode: boolean): ModelSource[] => {
    const own = testMode ? [] : textSources.filter((u) => u.families.includes(m.family));
    if (own.length === 0) return [{ source: SIMULATOR_SOURCE, upstreamModel: m.upstreamModel }];
    return own.map((u) => ({ source: u.source, upstreamModel: u.models[m.id] ?? m.upstreamModel }));
  };
  return (model, opts = {}) =>
    buildFallbackPlan(
      {
        model: model.id,
        sources: sourcesOf(model, opts.testMode === true),
        equivalents: model.equivalents
          .map((id) => getTextModel(id))
          // A retired equivalent (D35) serves no fallback.
          .filter((m): m is TextModel => m !== undefined && !isRetired(m.id))
          .map((m) => ({ model: m.id, sources: sourcesOf(m, opts.testMode === true) })),
      },
      (source) => adapters.get(source),
    );
}
