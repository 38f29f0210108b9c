/**
 * Voice cloning (spec "POST /v1/audio/voice-clone"; D2, D5, D20): a reference recording (MP3, WAV or M4A,
 * at most 10 MB, 10 s to 5 min by its header) checked before any charge, then a flat 2.10 USD captured in
 * the same transaction that records the caller as the voice's owner.
 */
import type { PaidCallDeps } from "../billing/paid-call.ts";
import type { CallContext } from "../billing/usage.ts";
import { DEFAULT_VOICE_CLONE_MODEL, getModelOf } from "../catalog/models.ts";
import { errors } from "../errors.ts";
import type { CallGuard } from "../limits/limiter.ts";
import type { SimulateMode } from "../upstreams/types.ts";
import { inspectReferenceAudio } from "./reference-audio.ts";
import { codePoints } from "./text-limits.ts";
import { createOwnedVoice, type CreatedVoice, type VoiceCreator } from "./voice-design.ts";

/** Largest accepted reference file, bytes (spec: 10 MB). */
export const MAX_REFERENCE_BYTES = 10 * 1024 * 1024;

/** The parsed form: the `file` part's bytes (null when absent) and the text fields. */
export interface VoiceCloneForm {
  file: Uint8Array | null;
  name: string | null;
  model: string | null;
}

/** A cloned voice: the same record as a designed one. Amounts in micro-USD. */
export type ClonedVoice = CreatedVoice;

/**
 * Clones a voice for `accountId`.
 * @throws AppError 400 `not_a_voice_clone_model`, `invalid_request` (file missing, name too long),
 *   `reference_too_short`, `reference_too_long`, `audio_unreadable`; 415 (not MP3/WAV/M4A); 402
 *   `insufficient_credits`; 500 `ownership_write_failed`; 502 `provider_error`. Only a success charges.
 */
export async function cloneVoice(
  deps: PaidCallDeps & { adapter: VoiceCreator },
  accountId: string,
  form: VoiceCloneForm,
  opts: { simulate: SimulateMode | null; signal?: AbortSignal; guard?: CallGuard; call?: CallContext },
): Promise<ClonedVoice> {
  const modelId = form.model ?? DEFAULT_VOICE_CLONE_MODEL;
  const model = getModelOf(modelId, "voice_clone");
  if (!model) throw errors.notAVoiceCloneModel(modelId);
  const name = form.name === null ? null : form.name.normalize("NFC");
  if (name !== null && codePoints(name) > 64) {
    throw errors.invalidRequest(`name is ${codePoints(name)} characters; the maximum is 64.`, "name");
  }
  if (form.file === null || form.file.length === 0) {
    throw errors.invalidRequest("The reference audio is required as the multipart part 'file'.", "file");
  }
  const info = await inspectReferenceAudio(form.file);
  const file = form.file;
  return createOwnedVoice(deps, accountId, model, {
    name,
    source: "clone",
    description: null,
    guard: opts.guard,
    call: opts.call,
    create: () =>
      deps.adapter.cloneVoice(
        { audio: file, format: info.format, durationSec: info.durationSec, name, simulate: opts.simulate },
        opts.signal,
      ),
  });
}
