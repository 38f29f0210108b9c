/**
 * Text to speech (spec "POST /v1/audio/speech"; decisions D2, D7, D10, D16, D20).
 *
 * Validate (model, input, voice, format, settings) -> voice/model compatibility and ownership ->
 * quote (catalog) -> hold -> upstream -> capture. Any failure after the hold releases it, so the balance
 * is exactly as before (design.md invariant 4); the caller gets 502 `provider_error`.
 */
import {
  captureHold,
  credit,
  type Executor,
  InsufficientFundsError,
  placeHold,
  releaseHold,
} from "../billing/ledger.ts";
import { formatUsd, type Micros } from "../billing/money.ts";
import { DEFAULT_SPEECH_MODEL, getSpeechModel } from "../catalog/models.ts";
import { quoteSpeech } from "../catalog/quote.ts";
import type { SpeechModel } from "../catalog/types.ts";
import { errors } from "../errors.ts";
import {
  type AudioFormat,
  type SimulateMode,
  type SpeechAdapter,
  type VoiceLibraryAdapter,
  type VoiceSettings,
} from "../upstreams/types.ts";
import { observeUpstream } from "../metrics.ts";
import { codePoints } from "./text-limits.ts";
import { findOwnedVoice } from "./voices.ts";
import { type CallGuard, NO_LIMITS } from "../limits/limiter.ts";

/** The speech request body as received (types already checked by the route schema). */
export interface SpeechBody {
  model?: string;
  input?: string;
  /** Alias of `input`. */
  text?: string;
  voice_id?: string;
  /** Alias of `voice_id`. */
  voice?: string;
  response_format?: string;
  voice_settings?: VoiceSettings;
  stream?: boolean;
}

/** What the speech service needs. */
export interface SpeechDeps {
  db: Executor;
  /** The adapter that serves a model (by its family). */
  adapterFor(model: SpeechModel): SpeechAdapter;
  voices: VoiceLibraryAdapter;
}

/** A finished speech call. Amounts in micro-USD. */
export interface SpeechOutcome {
  model: string;
  /** Characters billed: code points of the NFC-normalized input (D7). */
  charsBilled: number;
  costMicros: Micros;
  balanceMicros: Micros;
  contentType: string;
  /** Complete bytes, or a stream whose first chunk has already arrived. */
  audio: { kind: "bytes"; body: Uint8Array } | { kind: "stream"; chunks: AsyncIterable<Uint8Array> };
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
  const model = getSpeechModel(modelId);
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
 * @throws AppError 400 (see {@link validateSpeech}, `voice_model_mismatch`), 402 `billing_error`,
 *   403 `voice_not_owned`, 502 `provider_error` (hold released).
 */
export async function createSpeech(
  deps: SpeechDeps,
  accountId: string,
  body: SpeechBody,
  opts: { simulate: SimulateMode | null; signal?: AbortSignal; guard?: CallGuard },
): Promise<SpeechOutcome> {
  const req = validateSpeech(body);
  const guard = opts.guard ?? NO_LIMITS;
  const { model } = req;

  let voiceProvider: "alpha" | "beta" = "beta";
  let upstreamVoiceId = req.voiceId;
  if (deps.voices.isAlphaVoice(req.voiceId)) {
    voiceProvider = "alpha";
  } else {
    const owned = await findOwnedVoice(deps.db, req.voiceId);
    if (owned !== null && owned.accountId !== accountId) throw errors.voiceNotOwned();
    if (owned !== null) upstreamVoiceId = owned.upstreamVoiceId;
  }
  if (voiceProvider !== model.voiceProvider) throw errors.voiceModelMismatch(voiceProvider, model.id);

  await guard.model(model.id);
  const releaseSlot = await guard.slot(model.audioPool);
  let streaming = false;
  try {
    const out = await speakWithSlot(deps, accountId, req, upstreamVoiceId, opts, releaseSlot);
    streaming = out.audio.kind === "stream";
    return out;
  } finally {
    // A stream keeps its slot until its last chunk (released by the stream itself).
    if (!streaming) await releaseSlot();
  }
}

/** Hold, upstream, capture: the part of a speech call that runs inside an audio pool slot. */
async function speakWithSlot(
  deps: SpeechDeps,
  accountId: string,
  req: ValidSpeech,
  upstreamVoiceId: string,
  opts: { simulate: SimulateMode | null; signal?: AbortSignal },
  releaseSlot: () => Promise<void>,
): Promise<SpeechOutcome> {
  const { model } = req;
  const cost = quoteSpeech(model, req.chars);
  let hold: Awaited<ReturnType<typeof placeHold>>;
  try {
    hold = await placeHold(deps.db, { accountId, amountMicros: cost, reference: model.id });
  } catch (err) {
    if (err instanceof InsufficientFundsError) {
      throw errors.billing(`This request costs ${formatUsd(cost)} USD; the balance is too low.`);
    }
    throw err;
  }

  const adapter = deps.adapterFor(model);
  let result: Awaited<ReturnType<SpeechAdapter["speech"]>>;
  let firstChunk: IteratorResult<Uint8Array> | null = null;
  let iterator: AsyncIterator<Uint8Array> | null = null;
  try {
    result = await observeUpstream(model.id, () => adapter.speech(
      {
        model: model.id,
        text: req.text,
        voiceId: upstreamVoiceId,
        format: req.format,
        voiceSettings: req.settings,
        stream: req.stream,
        simulate: opts.simulate,
      },
      opts.signal,
    ));
    if (result.kind === "stream") {
      // Wait for the first audio before charging: an upstream that fails early costs nothing.
      iterator = result.chunks[Symbol.asyncIterator]();
      firstChunk = await iterator.next();
    }
  } catch {
    await releaseHold(deps.db, hold.id);
    throw errors.provider();
  }

  const settled = await captureHold(deps.db, hold.id, cost);
  const base = {
    model: model.id,
    charsBilled: req.chars,
    costMicros: cost,
    balanceMicros: settled.balanceAfterMicros,
    contentType: result.contentType,
  };
  if (result.kind === "bytes") return { ...base, audio: { kind: "bytes", body: result.body } };

  const it = iterator!;
  const first = firstChunk!;
  const db = deps.db;
  async function* rest(): AsyncGenerator<Uint8Array> {
    try {
      if (!first.done) yield first.value;
      while (true) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
      }
    } catch (err) {
      // The upstream broke off after we charged: give the money back, then end the response.
      await credit(db, {
        accountId,
        kind: "refund",
        amountMicros: cost,
        holdId: hold.id,
        reference: model.id,
      });
      throw err;
    } finally {
      // The stream held its audio pool slot until now.
      await releaseSlot();
    }
  }
  return { ...base, audio: { kind: "stream", chunks: rest() } };
}
