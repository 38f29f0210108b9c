/**
 * Text to speech (spec "POST /v1/audio/speech"; decisions D2, D7, D10, D16, D20).
 *
 * Validate (model, input, voice, format, settings) -> voice/model compatibility and ownership ->
 * quote (catalog) -> hold -> upstream -> capture. Any failure after the hold releases it, so the balance
 * is exactly as before (docs/architecture.md invariant 4); the caller gets 502 `provider_error`.
 */
import type { Executor } from "../billing/ledger.ts";
import { callUpstream, type PaidCalls } from "../billing/paid-call.ts";
import { formatUsd, type Micros } from "../money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import { DEFAULT_SPEECH_MODEL, getModelOf } from "../catalog/models.ts";
import { quoteSpeech } from "../catalog/quote.ts";
import type { SpeechModel } from "../catalog/types.ts";
import type { SpeechRequestBody } from "../contracts/audio.ts";
import { AppError, errors } from "../errors.ts";
import type { AudioFormat, AudioResult, SimulateMode, SpeechRequest, VoiceSettings } from "../upstreams/types.ts";
import { firstChunkThen } from "../upstreams/first-chunk.ts";
import type { Served } from "../upstreams/sync-failover.ts";
import { codePoints } from "./text-limits.ts";
import { findOwnedVoice } from "./voices.ts";
import { type CallGuard, NO_LIMITS } from "../limits/limiter.ts";
import { newId } from "../ids.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import type { RetentionWindows } from "../config.ts";
import { captureStoredAudio, type StoredJobHook, type StoredOutput } from "./generate.ts";

/** The speech request body as received (types already checked by the route schema): the contract's type. */
export type SpeechBody = SpeechRequestBody;

/** What the speech service needs. */
export interface SpeechDeps {
  db: Executor;
  paidCalls: PaidCalls;
  /**
   * Synthesizes on the sources of `family` with failover (upstreams/audio-router.ts, D27); `home` pins an
   * owned voice to the source that made it (a name, or null for the simulator), undefined for any other
   * voice. A stream comes back with its first chunk already arrived.
   */
  speak(family: "alpha" | "beta", req: SpeechRequest, home: string | null | undefined, signal?: AbortSignal): Promise<Served<AudioResult>>;
  /** Whether a voice id is an alpha library voice; null when the library cannot tell (D20). */
  isAlphaVoice(voiceId: string): Promise<boolean | null>;
  /**
   * Whether a voice id is in the beta library (its listed system voices); null when it cannot tell. Only
   * words the answer about a voice that is not an alpha voice (D20 makes any such id a beta voice).
   */
  isBetaVoice(voiceId: string): Promise<boolean | null>;
  /**
   * Where `provider`'s voices come from, as a phrase for messages ("the ElevenLabs source 'el-main'",
   * "the built-in simulator"): names and protocols only (audio/voice-library.ts `servedBy`).
   */
  servedBy(provider: "alpha" | "beta"): string;
  /** Where a stored output goes (`saveToBlob`); only needed by callers that store. */
  blobs?: BlobStore;
  /** The operator's retention windows (D46); needed with `blobs` (whether the stored request keeps its text). */
  retention?: RetentionWindows;
}

/** The options of one speech call: simulator control, abort signal, limits, call context, and whether to store the output. */
export interface SpeechCallOptions {
  simulate: SimulateMode | null;
  signal?: AbortSignal;
  guard?: CallGuard;
  call?: CallContext;
  /**
   * Keep the audio as a stored output (a succeeded `audio` job in the gallery, its MP3 in the blob store,
   * as `save_to_blob` does for music and sound effects): the call is not streamed and a non-MP3
   * `response_format` is served as `mp3_44100_128`. Needs `deps.blobs`. Used by the MCP server (D39).
   */
  saveToBlob?: boolean;
  /** With `saveToBlob`: written with the stored job, in its transaction (D47). */
  onStored?: StoredJobHook;
}

/** A finished speech call. Amounts in micro-USD. */
export interface SpeechOutcome {
  model: string;
  /** Characters billed: code points of the NFC-normalized input (D7). */
  charsBilled: number;
  costMicros: Micros;
  balanceMicros: Micros;
  contentType: string;
  /** 1 when a later source of the family served the call (`X-Svc-Fallback-Layer`, D27), else 0. */
  fallbackLayer: 0 | 1;
  /** Complete bytes, or a stream whose first chunk has already arrived. */
  audio: { kind: "bytes"; body: Uint8Array } | { kind: "stream"; chunks: AsyncIterable<Uint8Array> };
  /** The stored output (`saveToBlob`), else null. */
  stored: StoredOutput | null;
}

/** A validated request, ready to quote. */
interface ValidSpeech {
  model: SpeechModel;
  text: string;
  chars: number;
  voiceId: string;
  format: AudioFormat;
  settings: VoiceSettings;
  stream: boolean;
}

/**
 * Checks what the route schema cannot (src/http/schemas/audio.ts checks types, the model list, the
 * format list and the 0-1 settings): the aliases `text`/`voice`, the model's own character limit.
 * Throws AppError 400 `not_a_tts_model`, `invalid_request` (input missing/empty), `input_too_long`,
 * `voice_required`.
 */
export function validateSpeech(body: SpeechBody): ValidSpeech {
  const modelId = body.model ?? DEFAULT_SPEECH_MODEL;
  const model = getModelOf(modelId, "speech");
  if (!model?.enabled) throw errors.notATtsModel(modelId);

  const rawInput = body.input ?? body.text;
  if (typeof rawInput !== "string" || rawInput.trim().length === 0) {
    throw errors.invalidRequest("input (or text) is required and must be a non-empty string.", "input");
  }
  const text = rawInput.normalize("NFC");
  const chars = codePoints(text);
  if (chars > model.maxInputChars) throw errors.inputTooLong(chars, model.maxInputChars);

  const voiceId = body.voice_id ?? body.voice;
  if (typeof voiceId !== "string" || voiceId.length === 0) throw errors.voiceRequired();
  if (voiceId.length > 128)
    throw errors.invalidRequest("voice_id is too long (max 128 characters).", "voice_id");

  const format = (body.response_format ?? "mp3_44100_128") as AudioFormat;
  const settings = body.voice_settings ?? {};
  return {
    model,
    text,
    chars,
    voiceId,
    format,
    settings,
    stream: body.stream === true && model.supportsStreaming,
  };
}

/**
 * Generates speech for `accountId`: validates, checks the voice (D20: alpha library voices with alpha-*
 * models; owned and other voices are beta, usable only with beta-speech-* and, when owned, only by
 * their owner), holds the quote, calls the upstream and captures.
 *
 * @throws AppError 400 (see {@link validateSpeech}, `voice_model_mismatch`, worded by what the voice is:
 *   owned, of the other library, or listed by neither library), 402 `billing_error`, 403 `voice_not_owned`,
 *   410 `voice_unavailable` (an owned voice its source forgot, or a library or system voice the family's
 *   source does not know: the message names the source and how to list its voices), 502 `provider_error`
 *   (hold released).
 */
export async function createSpeech(
  deps: SpeechDeps,
  accountId: string,
  body: SpeechBody,
  opts: SpeechCallOptions,
): Promise<SpeechOutcome> {
  const valid = validateSpeech(body);
  // A stored output is one complete MP3 (as music and sound effects store theirs).
  const req = opts.saveToBlob === true ? { ...valid, stream: false, format: valid.format.startsWith("mp3_") ? valid.format : ("mp3_44100_128" as const) } : valid;
  const guard = opts.guard ?? NO_LIMITS;
  const { model } = req;

  const voice = await resolveVoice(deps, accountId, req.voiceId, model);
  const releaseSlot = await guard.admit(model.id, model.audioPool);
  let streaming = false;
  try {
    const out = await speakWithSlot(deps, accountId, req, voice, opts, releaseSlot);
    streaming = out.audio.kind === "stream";
    return out;
  } catch (err) {
    throw voiceUnknownToSource(deps, req.voiceId, model, voice.home, err);
  } finally {
    // A stream keeps its slot until its last chunk (released by the stream itself).
    if (!streaming) await releaseSlot();
  }
}

/** What the voice check of a speech call needs (a subset of {@link SpeechDeps}). */
export type VoiceDeps = Pick<SpeechDeps, "db" | "isAlphaVoice" | "isBetaVoice" | "servedBy">;

/**
 * Where a voice of a speech call is spoken (D20): an owned voice (designed or cloned) by its upstream id on
 * the source that made it (`home`: its name, null for the simulator); a library or system voice by its id
 * on any source of the family (`home` undefined). Used by the HTTP route and the realtime socket (D42).
 * @throws AppError 403 `voice_not_owned` (another account's voice), 400 `voice_model_mismatch` (a voice
 *   of the other provider, worded by what the voice is).
 */
export async function resolveVoice(
  deps: VoiceDeps,
  accountId: string,
  voiceId: string,
  model: SpeechModel,
): Promise<{ upstreamVoiceId: string; home: string | null | undefined }> {
  let voiceProvider: "alpha" | "beta" = "beta";
  let upstreamVoiceId = voiceId;
  // Undefined: a library or system voice (any source of the family); else the owned voice's source.
  let home: string | null | undefined;
  const owned = await findOwnedVoice(deps.db, voiceId);
  if (owned !== null) {
    if (owned.accountId !== accountId) throw errors.voiceNotOwned();
    upstreamVoiceId = owned.upstreamVoiceId;
    home = owned.upstreamSource;
  } else {
    // A library that cannot be read does not block speech: the requested model's provider is trusted.
    const alpha = await deps.isAlphaVoice(voiceId);
    voiceProvider = (alpha ?? model.voiceProvider === "alpha") ? "alpha" : "beta";
  }
  if (voiceProvider !== model.voiceProvider) throw await mismatch(deps, voiceId, model.id, voiceProvider, owned !== null);
  return { upstreamVoiceId, home };
}

/**
 * The error a speech call answers for `err`: a library or system voice (`home` undefined) that the
 * family's source answered it does not have becomes a 410 `voice_unavailable` saying so and where the
 * voices are listed (an owned voice keeps the D27 message: its source forgot it); anything else as it is.
 */
export function voiceUnknownToSource(deps: VoiceDeps, voiceId: string, model: SpeechModel, home: string | null | undefined, err: unknown): unknown {
  if (home === undefined && err instanceof AppError && err.code === "voice_unavailable") {
    const unknown = errors.voiceUnavailable(unknownToSourceMessage(deps, voiceId, model.id, model.voiceProvider));
    (unknown as Error).cause = err;
    return unknown;
  }
  return err;
}

/** How to list `provider`'s voices: the API call and the CLI command (packages/cli `voices`). */
function howToList(provider: "alpha" | "beta"): string {
  return `list them with GET /v1/audio/voices?provider=${provider} or \`npx gateway voices --provider ${provider}\``;
}

/**
 * The 400 `voice_model_mismatch` (D20) for a voice whose provider is not the model's, worded by what the
 * voice is: the caller's own (designed or cloned, a beta voice), a voice of the other library, or a voice
 * no library lists. D20 makes an id outside the alpha library a beta voice, so an unknown id with an
 * alpha model keeps this code; the message then says the id is unknown to the source(s) serving the
 * model, names them, and how to list their voices, instead of calling it a beta voice.
 */
async function mismatch(deps: VoiceDeps, voiceId: string, modelId: string, voiceProvider: "alpha" | "beta", owned: boolean): Promise<AppError> {
  const wanted = voiceProvider === "alpha" ? "beta" : "alpha";
  const pick = `Model '${modelId}' needs an ${wanted} voice: ${howToList(wanted)}. Nothing was charged.`;
  if (owned) {
    return errors.voiceModelMismatch(
      voiceProvider,
      modelId,
      `Voice '${voiceId}' is one of your designed or cloned voices, which are beta voices: they work only with beta-speech-* models, not with '${modelId}'. Nothing was charged.`,
    );
  }
  if (voiceProvider === "alpha") {
    return errors.voiceModelMismatch(
      voiceProvider,
      modelId,
      `Voice '${voiceId}' is an alpha voice (from ${deps.servedBy("alpha")}); alpha voices work only with alpha-* models, not with '${modelId}'. ${pick}`,
    );
  }
  // Not an alpha library voice: a voice of the beta library, or one neither library lists.
  const beta = await deps.isBetaVoice(voiceId);
  if (beta === true) {
    return errors.voiceModelMismatch(
      voiceProvider,
      modelId,
      `Voice '${voiceId}' is a beta voice (from ${deps.servedBy("beta")}); beta voices work only with beta-speech-* models, not with '${modelId}'. ${pick}`,
    );
  }
  const notBeta = beta === false ? `, nor in the beta voice library (from ${deps.servedBy("beta")})` : "";
  return errors.voiceModelMismatch(
    voiceProvider,
    modelId,
    `Voice '${voiceId}' is not known: it is not in the alpha voice library, whose voices come from ${deps.servedBy("alpha")}${notBeta}. ${pick}`,
  );
}

/**
 * The message of the 410 `voice_unavailable` for a library or system voice the family's source answered
 * it does not have (ElevenLabs `voice_not_found`, MiniMax 2042): the voice is unknown to the source(s)
 * serving the model; how to list theirs.
 */
function unknownToSourceMessage(deps: VoiceDeps, voiceId: string, modelId: string, family: "alpha" | "beta"): string {
  return `Voice '${voiceId}' is not known to ${deps.servedBy(family)}, which serves model '${modelId}' (${family} voices): ${howToList(family)}. Nothing was charged.`;
}

/**
 * Hold, upstream, capture ({@link PaidCalls.withHold}): the part of a speech call that runs inside an audio pool
 * slot. A stream is charged once its first chunk arrived (an upstream that fails early costs nothing)
 * and refunded if it breaks off later; it keeps the slot until its last chunk.
 */
async function speakWithSlot(
  deps: SpeechDeps,
  accountId: string,
  req: ValidSpeech,
  voice: { upstreamVoiceId: string; home: string | null | undefined },
  opts: SpeechCallOptions,
  releaseSlot: () => Promise<void>,
): Promise<SpeechOutcome> {
  const { model } = req;
  const cost = quoteSpeech(model, req.chars);
  const onInsufficient = () => errors.billing(`This request costs ${formatUsd(cost)} USD; the balance is too low.`);
  const usage = usageFor(opts.call, "speech", { characters: req.chars });
  const blobs = opts.saveToBlob === true ? deps.blobs : undefined;
  if (opts.saveToBlob === true && (blobs === undefined || deps.retention === undefined)) throw new Error("createSpeech: saveToBlob needs deps.blobs and deps.retention");
  const retention = deps.retention;
  // A stored output is a job: its ledger entries carry the job id from the hold on (D17).
  const jobId = blobs !== undefined ? newId("job") : null;
  return deps.paidCalls.withHold(deps.db, { accountId, amountMicros: cost, reference: model.id, jobId, usage }, { onInsufficient }, async (hold) => {
    const served = await callUpstream(model.id, () =>
      deps.speak(
        model.voiceProvider,
        {
          model: model.id,
          text: req.text,
          voiceId: voice.upstreamVoiceId,
          format: req.format,
          voiceSettings: req.settings,
          stream: req.stream,
          simulate: opts.simulate,
        },
        voice.home,
        opts.signal,
      ),
    );
    const result = served.value;
    // Wait for the first audio before charging.
    const rest = result.kind === "stream" ? await afterFirstChunk(result.chunks) : null;
    hold.note({ fallbackLayer: served.fallbackLayer });
    const common = { model: model.id, charsBilled: req.chars, costMicros: cost, contentType: result.contentType, fallbackLayer: served.fallbackLayer };
    if (jobId !== null && blobs !== undefined && retention !== undefined && result.kind === "bytes") {
      const request = { model: model.id, text: req.text, voice_id: req.voiceId, response_format: req.format };
      const kept = await captureStoredAudio(blobs, hold, {
        db: deps.db,
        retention,
        jobId,
        apiKeyId: opts.call?.keyId ?? null,
        model: model.id,
        priceMicros: cost,
        request,
        durationSec: result.durationSec,
        body: result.body,
        contentType: result.contentType,
        onStored: opts.onStored,
      });
      return { ...common, balanceMicros: kept.balanceMicros, stored: kept.stored, audio: { kind: "bytes", body: result.body } };
    }
    const settled = await hold.capture(cost);
    const base = { ...common, balanceMicros: settled.balanceAfterMicros, stored: null };
    if (result.kind === "bytes") return { ...base, audio: { kind: "bytes", body: result.body } };
    return { ...base, audio: { kind: "stream", chunks: keepSlot(hold.stream(rest ?? result.chunks), releaseSlot) } };
  });
}

/**
 * Waits for the first chunk of a stream ({@link firstChunkThen}) and returns every chunk, that one first;
 * closing the result closes the stream.
 * @throws AppError 502 `provider_error` when the stream fails (or ends) before its first chunk.
 */
async function afterFirstChunk(chunks: AsyncIterable<Uint8Array>): Promise<AsyncIterable<Uint8Array>> {
  try {
    return await firstChunkThen(chunks, () => {}, "speech");
  } catch {
    throw errors.provider();
  }
}

/** Yields `chunks`, then releases the audio pool slot the stream held until its end. */
async function* keepSlot(chunks: AsyncIterable<Uint8Array>, releaseSlot: () => Promise<void>): AsyncGenerator<Uint8Array> {
  try {
    yield* chunks;
  } finally {
    await releaseSlot();
  }
}
