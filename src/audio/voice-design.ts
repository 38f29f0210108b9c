/**
 * Voice design (spec "POST /v1/audio/voice-design"; D2, D16): a flat 4.20 USD, charged once, in the same
 * transaction that records the caller as the voice's owner. If that write fails the charge is rolled
 * back with it, the hold is released and the caller gets 500 `ownership_write_failed`.
 */
import { callUpstream, type PaidCallDeps, type PaidHold } from "../billing/paid-call.ts";
import { formatUsd, type Micros } from "../money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import { DEFAULT_VOICE_DESIGN_MODEL, getModelOf } from "../catalog/models.ts";
import { quoteFlat } from "../catalog/quote.ts";
import type { VoiceCreationModel } from "../catalog/types.ts";
import { AGE_GROUPS, GENDERS, type VoiceDesignRequestBody } from "../contracts/voices.ts";
import { errors } from "../errors.ts";
import { type CallGuard, NO_LIMITS } from "../limits/limiter.ts";
import { newId } from "../ids.ts";
import type { SimulateMode, VoiceCloneRequest, VoiceDesignRequest } from "../upstreams/types.ts";
import type { Served } from "../upstreams/sync-failover.ts";
import { codePoints, optionalText } from "./text-limits.ts";
import { OWNED_VOICE_PREFIX } from "./voices.ts";
import { insertOwnedVoice } from "./voices.repository.ts";

/** The voice design request body as received (types already checked by the route schema): the contract's type. */
export type VoiceDesignBody = VoiceDesignRequestBody;

/** Voice genders and age groups of the design request (their home is the request contract). */
export { AGE_GROUPS, GENDERS };

/** A voice made for an account, designed or cloned ({@link createOwnedVoice}). Amounts in micro-USD. */
export interface CreatedVoice {
  voiceId: string;
  name: string | null;
  model: string;
  costMicros: Micros;
  balanceMicros: Micros;
  /** 1 when a later beta source made the voice (`X-Svc-Fallback-Layer`, D27), else 0. */
  fallbackLayer: 0 | 1;
}

/** A designed voice. */
export type DesignedVoice = CreatedVoice;

/**
 * Creates voices on the beta sources with failover (upstreams/audio-router.ts); the answer's `source` is
 * where the voice lives (null: the simulator).
 */
export interface VoiceCreator {
  designVoice(req: VoiceDesignRequest, signal?: AbortSignal): Promise<Served<{ upstreamVoiceId: string }>>;
  cloneVoice(req: VoiceCloneRequest, signal?: AbortSignal): Promise<Served<{ upstreamVoiceId: string }>>;
}

/** Checks the body; throws AppError 400 (`not_a_voice_design_model`, `description_too_long`, `invalid_request`). */
export function validateVoiceDesign(body: VoiceDesignBody): { model: string; req: Omit<VoiceDesignRequest, "simulate"> } {
  const modelId = body.model ?? DEFAULT_VOICE_DESIGN_MODEL;
  if (typeof modelId !== "string") throw errors.invalidRequest("model must be a string.", "model");
  const model = getModelOf(modelId, "voice_design");
  if (!model) throw errors.notAVoiceDesignModel(modelId);
  const description = optionalText(body.description ?? body.text, () =>
    errors.invalidRequest("description must be a string.", "description"),
  );
  if (description === null || description.trim() === "") {
    throw errors.invalidRequest("description (or text) is required.", "description");
  }
  const n = codePoints(description);
  if (n > 1000) throw errors.tooLong("description_too_long", model.id, "description", n, 1000);
  const name = optionalText(body.name, () => errors.invalidRequest("name must be a string.", "name"));
  if (name !== null && codePoints(name) > 64) throw errors.invalidRequest(`name is ${codePoints(name)} characters; the maximum is 64.`, "name");
  const previewText = optionalText(body.preview_text, () => errors.invalidRequest("preview_text must be a string.", "preview_text"));
  if (previewText !== null && codePoints(previewText) > 500) {
    throw errors.invalidRequest(`preview_text is ${codePoints(previewText)} characters; the maximum is 500.`, "preview_text");
  }
  // `gender` and `age_group` are enums of the route schema (GENDERS, AGE_GROUPS).
  const gender = body.gender ?? null;
  const age = body.age_group ?? null;
  return {
    model: model.id,
    req: {
      description,
      name,
      previewText,
      gender: gender as VoiceDesignRequest["gender"],
      ageGroup: age as VoiceDesignRequest["ageGroup"],
    },
  };
}

/**
 * Records a new owned voice and captures its hold in one transaction. When that transaction fails
 * nothing is written (the hold stays open for {@link PaidCalls.withHold} to release) and AppError 500
 * `ownership_write_failed` is thrown.
 */
async function recordOwnedVoice(
  hold: PaidHold,
  args: {
    priceMicros: Micros;
    accountId: string;
    name: string | null;
    source: "design" | "clone";
    upstreamVoiceId: string;
    /** The source the voice lives on (null: the simulator). */
    upstreamSource: string | null;
    description: string | null;
  },
): Promise<{ voiceId: string; balanceMicros: Micros }> {
  const voiceId = `${OWNED_VOICE_PREFIX}${newId("v").slice(2)}`;
  try {
    const settled = await hold.capture(args.priceMicros, async (trx) => {
      await insertOwnedVoice(trx, {
        id: voiceId,
        accountId: args.accountId,
        name: args.name,
        source: args.source,
        upstreamVoiceId: args.upstreamVoiceId,
        upstreamSource: args.upstreamSource,
        description: args.description,
        createdAt: Date.now(),
      });
    });
    return { voiceId, balanceMicros: settled.balanceAfterMicros };
  } catch {
    throw errors.ownershipWriteFailed();
  }
}

/**
 * Designs a voice for `accountId`.
 * @throws AppError 400 (validation), 402 `insufficient_credits` (balance below 4.20), 500
 *   `ownership_write_failed` (not charged), 502 `provider_error` (not charged).
 */
export async function designVoice(
  deps: PaidCallDeps & { adapter: VoiceCreator },
  accountId: string,
  body: VoiceDesignBody,
  opts: { simulate: SimulateMode | null; signal?: AbortSignal; guard?: CallGuard; call?: CallContext },
): Promise<DesignedVoice> {
  const { model: modelId, req } = validateVoiceDesign(body);
  const model = getModelOf(modelId, "voice_design")!;
  return createOwnedVoice(deps, accountId, model, {
    name: req.name,
    source: "design",
    description: req.description,
    guard: opts.guard,
    call: opts.call,
    create: () => deps.adapter.designVoice({ ...req, simulate: opts.simulate }, opts.signal),
  });
}

/**
 * The paid flow shared by voice design and cloning: the caller's per-model window and audio pool slot,
 * a hold of the flat price (402 `insufficient_credits` when the balance is below it), the upstream call
 * (502 `provider_error`, hold released), then {@link recordOwnedVoice} (500 `ownership_write_failed`,
 * hold released).
 */
export async function createOwnedVoice(
  deps: PaidCallDeps,
  accountId: string,
  model: VoiceCreationModel,
  args: {
    name: string | null;
    source: "design" | "clone";
    description: string | null;
    guard?: CallGuard;
    /** The request the usage record is written for (D29) and its mode (D32). */
    call?: CallContext;
    create: () => Promise<Served<{ upstreamVoiceId: string }>>;
  },
): Promise<CreatedVoice> {
  const guard = args.guard ?? NO_LIMITS;
  const release = await guard.admit(model.id, model.audioPool);
  try {
    const price = quoteFlat(model);
    const onInsufficient = () => errors.insufficientCredits(formatUsd(price));
    const usage = usageFor(args.call, args.source === "design" ? "voice_design" : "voice_clone");
    return await deps.paidCalls.withHold(deps.db, { accountId, amountMicros: price, reference: model.id, usage }, { onInsufficient }, async (hold) => {
      const served = await callUpstream(model.id, args.create);
      hold.note({ fallbackLayer: served.fallbackLayer });
      const owned = await recordOwnedVoice(hold, {
        priceMicros: price,
        accountId,
        name: args.name,
        source: args.source,
        upstreamVoiceId: served.value.upstreamVoiceId,
        upstreamSource: served.source,
        description: args.description,
      });
      return {
        voiceId: owned.voiceId,
        name: args.name,
        model: model.id,
        costMicros: price,
        balanceMicros: owned.balanceMicros,
        fallbackLayer: served.fallbackLayer,
      };
    });
  } finally {
    await release();
  }
}
