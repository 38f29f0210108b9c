/**
 * Sound effects (spec "POST /v1/audio/sfx"; D16): prompt (alias `text`) up to 500 characters,
 * `duration_seconds` 0.5-22 or chosen by the model, `prompt_influence` 0-1 (default 0.3), flat price.
 */
import type { CallContext } from "../billing/usage.ts";
import { DEFAULT_SFX_MODEL, getModelOf } from "../catalog/models.ts";
import { quoteSfx } from "../catalog/quote.ts";
import type { SfxModel } from "../catalog/types.ts";
import type { SfxRequestBody } from "../contracts/audio.ts";
import { errors } from "../errors.ts";
import type { CallGuard } from "../limits/limiter.ts";
import type { AudioBytes, SfxRequest, SimulateMode } from "../upstreams/types.ts";
import type { Served } from "../upstreams/sync-failover.ts";
import { type AudioOutcome, type GenerateDeps, generatePaidAudio, type StoredJobHook } from "./generate.ts";
import { parseAudioFormat } from "./music.ts";
import { codePoints, optionalText } from "./text-limits.ts";

/** The sound-effect request body as received (types already checked by the route schema): the contract's type. */
export type SfxBody = SfxRequestBody;

/** Checks the body in the order of the spec's error table. Throws AppError 400. */
export function validateSfx(body: SfxBody, saveToBlob: boolean): { model: SfxModel; req: Omit<SfxRequest, "simulate"> } {
  const modelId = body.model ?? DEFAULT_SFX_MODEL;
  if (typeof modelId !== "string") throw errors.invalidRequest("model must be a string.", "model");
  const model = getModelOf(modelId, "sfx");
  if (!model) throw errors.notAnSfxModel(modelId);
  const prompt = optionalText(body.prompt ?? body.text, () => errors.invalidRequest("prompt must be a string.", "prompt"));
  if (prompt === null || prompt.trim() === "") throw errors.invalidRequest("prompt (or text) is required.", "prompt");
  const n = codePoints(prompt);
  if (n > model.promptMaxChars) throw errors.tooLong("prompt_too_long", model.id, "prompt", n, model.promptMaxChars);

  let durationSec: number | null = null;
  const d = body.duration_seconds;
  if (d !== undefined && d !== null) {
    if (typeof d !== "number") throw errors.invalidRequest("duration_seconds must be a number.", "duration_seconds");
    if (!Number.isFinite(d) || d < model.minDurationSec || d > model.maxDurationSec) {
      throw errors.invalidDuration(
        `duration_seconds must be from ${model.minDurationSec} to ${model.maxDurationSec}.`,
        "duration_seconds",
      );
    }
    durationSec = d;
  }
  // Its type and 0-1 range are checked by the route schema.
  const influence = typeof body.prompt_influence === "number" ? body.prompt_influence : model.defaultPromptInfluence;
  const format = parseAudioFormat(body.response_format, saveToBlob);
  return { model, req: { model: model.id, prompt, durationSec, promptInfluence: influence, format } };
}

/**
 * Generates a sound effect for `accountId` at the flat price.
 * @throws AppError 400 (validation), 402 `billing_error`, 502 `provider_error`, 500 `storage_error`.
 */
export async function createSfx(
  deps: GenerateDeps & {
    /** Sound effects on the alpha sources with failover (upstreams/audio-router.ts). */
    sfx(family: "alpha", req: SfxRequest, signal?: AbortSignal): Promise<Served<AudioBytes>>;
  },
  principal: { accountId: string; keyId: string | null },
  body: SfxBody,
  opts: { simulate: SimulateMode | null; saveToBlob: boolean; signal?: AbortSignal; guard?: CallGuard; call?: CallContext; onStored?: StoredJobHook },
): Promise<AudioOutcome> {
  const { model, req } = validateSfx(body, opts.saveToBlob);
  return generatePaidAudio(deps, {
    accountId: principal.accountId,
    apiKeyId: principal.keyId,
    model: model.id,
    priceMicros: quoteSfx(model),
    request: { ...req },
    saveToBlob: opts.saveToBlob,
    onStored: opts.onStored,
    call: (signal) => deps.sfx("alpha", { ...req, simulate: opts.simulate }, signal),
    signal: opts.signal,
    guard: opts.guard,
    pool: model.audioPool,
    context: opts.call,
    kind: "sfx",
  });
}
