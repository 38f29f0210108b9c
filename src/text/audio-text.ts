/**
 * Transcription and audio understanding (spec "Other endpoints": `POST /v1/audio/transcriptions`,
 * `POST /v1/audio/understand`; D23): the audio comes as an upload (25 MB) or, for transcription, as an
 * `audio_url` fetched with the private-address protection (100 MB); the duration is read from the audio;
 * the price is per started minute with a one-minute minimum (0.0009 and 0.0006 USD per minute). Hold,
 * call, capture; a failure after the hold releases it.
 */
import type { Executor } from "../billing/ledger.ts";
import { callUpstream, type PaidCalls } from "../billing/paid-call.ts";
import { formatUsd, type Micros } from "../money.ts";
import { type CallContext, usageFor } from "../billing/usage.ts";
import {
  DEFAULT_AUDIO_UNDERSTANDING_MODEL,
  DEFAULT_TRANSCRIPTION_MODEL,
  getModelOf,
} from "../catalog/models.ts";
import { billedMinutes, quotePerMinute } from "../catalog/quote.ts";
import type { AudioTextModel } from "../catalog/types.ts";
import { AppError, errors } from "../errors.ts";
import { NO_LIMITS, type CallGuard } from "../limits/limiter.ts";
import { FetchTooLargeError, safeFetch, UnsafeUrlError, validateUrlSyntax } from "../upstreams/safe-fetch.ts";
import type { AudioTextRequest, SimulateMode } from "../upstreams/types.ts";
import type { Served } from "../upstreams/sync-failover.ts";
import { inspectReferenceAudio, sniffAudioFormat } from "../audio/reference-audio.ts";

/** Largest upload, bytes (spec: 25 MB multipart). */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
/** Largest `audio_url` download, bytes (spec: 100 MB by URL). */
export const MAX_URL_BYTES = 100 * 1024 * 1024;
const URL_TIMEOUT_MS = 60_000;

const unreadable = (why: string) => new AppError(400, "audio_unreadable", `The audio could not be read: ${why}.`, "file");

/**
 * The duration of `bytes` in seconds, read from the audio (MP3, WAV and M4A by their headers; other
 * formats such as FLAC, Ogg or WebM through music-metadata).
 * @throws AppError 400 `audio_unreadable`.
 */
export async function audioDurationSec(bytes: Uint8Array): Promise<number> {
  if (bytes.length === 0) throw unreadable("the file is empty");
  if (sniffAudioFormat(bytes.subarray(0, 4096)) !== null) {
    const info = await inspectReferenceAudio(bytes, { minSec: 0, maxSec: Number.MAX_SAFE_INTEGER });
    return info.durationSec;
  }
  try {
    // Loaded on first use, not at boot (idle memory).
    const { parseBuffer } = await import("music-metadata");
    const meta = await parseBuffer(bytes, undefined, { duration: true, skipCovers: true });
    const d = meta.format.duration;
    if (typeof d === "number" && Number.isFinite(d) && d > 0) return d;
  } catch {
    // fall through
  }
  throw unreadable("no audio with a duration was found");
}

/** Where the audio comes from. */
export type AudioSource = { kind: "bytes"; bytes: Uint8Array } | { kind: "url"; url: string };

/** A finished call. Amounts in micro-USD, duration in seconds. */
export interface AudioTextOutcome {
  text: string;
  model: string;
  durationSec: number;
  costMicros: Micros;
  balanceMicros: Micros;
  /** 1 when a later source of the family served the call (`X-Svc-Fallback-Layer`, D27), else 0. */
  fallbackLayer: 0 | 1;
}

/** Transcription and understanding on their families' sources with failover (upstreams/audio-router.ts). */
export interface AudioTextRouter {
  transcribe(req: AudioTextRequest, signal?: AbortSignal): Promise<Served<{ text: string }>>;
  understand(req: AudioTextRequest, signal?: AbortSignal): Promise<Served<{ text: string }>>;
}

async function load(source: AudioSource, fetchAudio: typeof safeFetch): Promise<Uint8Array> {
  if (source.kind === "bytes") return source.bytes;
  if (validateUrlSyntax(source.url, {}) === null) throw new AppError(400, "invalid_audio_url", "audio_url must be an https:// URL.", "audio_url");
  try {
    return (await fetchAudio(source.url, { maxBytes: MAX_URL_BYTES, timeoutMs: URL_TIMEOUT_MS })).bytes;
  } catch (err) {
    if (err instanceof UnsafeUrlError) throw new AppError(400, "invalid_audio_url", "audio_url points at an address that is not allowed.", "audio_url");
    if (err instanceof FetchTooLargeError) throw errors.payloadTooLarge("The audio at audio_url is over 100 MB.");
    throw new AppError(400, "audio_url_unreachable", "The audio at audio_url could not be downloaded.", "audio_url");
  }
}

/**
 * Transcribes (`task: "transcribe"`) or answers a question about (`task: "understand"`) an audio file.
 * @throws AppError 400 `invalid_model`, `audio_unreadable`, `invalid_audio_url`; 402 `billing_error`;
 *   413; 429 `rate_limited`; 502 `provider_error` (hold released).
 */
export async function runAudioText(
  deps: { db: Executor; paidCalls: PaidCalls; adapter: AudioTextRouter; fetchAudio?: typeof safeFetch },
  accountId: string,
  args: { task: "transcribe" | "understand"; model: string | null; prompt: string | null; source: AudioSource },
  opts: { simulate: SimulateMode | null; signal?: AbortSignal; guard?: CallGuard; call?: CallContext },
): Promise<AudioTextOutcome> {
  const modelId = args.model ?? (args.task === "transcribe" ? DEFAULT_TRANSCRIPTION_MODEL : DEFAULT_AUDIO_UNDERSTANDING_MODEL);
  const model: AudioTextModel | undefined =
    args.task === "transcribe" ? getModelOf(modelId, "transcription") : getModelOf(modelId, "audio_understanding");
  if (!model) throw new AppError(400, "invalid_model", `'${modelId}' is not a ${args.task === "transcribe" ? "transcription" : "audio understanding"} model.`, "model");
  const guard = opts.guard ?? NO_LIMITS;
  await guard.model(model.id);
  const audio = await load(args.source, deps.fetchAudio ?? safeFetch);
  const durationSec = await audioDurationSec(audio);
  const price = quotePerMinute(model, durationSec);
  const release = await guard.slot(model.audioPool);
  try {
    const onInsufficient = () => errors.billing(`This request costs ${formatUsd(price)} USD; the balance is too low.`);
    const usage = usageFor(opts.call, args.task === "transcribe" ? "transcription" : "audio_understanding", { minutes: billedMinutes(durationSec) });
    return await deps.paidCalls.withHold(deps.db, { accountId, amountMicros: price, reference: model.id, usage }, { onInsufficient }, async (hold) => {
      const req = { model: model.id, audio, durationSec, prompt: args.prompt, simulate: opts.simulate };
      const served = await callUpstream(model.id, () =>
        args.task === "transcribe" ? deps.adapter.transcribe(req, opts.signal) : deps.adapter.understand(req, opts.signal),
      );
      hold.note({ fallbackLayer: served.fallbackLayer });
      const settled = await hold.capture(price);
      return {
        text: served.value.text,
        model: model.id,
        durationSec,
        costMicros: price,
        balanceMicros: settled.balanceAfterMicros,
        fallbackLayer: served.fallbackLayer,
      };
    });
  } finally {
    await release();
  }
}
