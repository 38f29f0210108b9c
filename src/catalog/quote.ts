/**
 * The price of one call in integer micro-USD, read only from the model's catalog record (docs/architecture.md; D7).
 *
 * Every function does exact integer (BigInt) arithmetic and rounds half-up once, at the end (D7). Inputs
 * are assumed validated by the caller (lengths, ranges, allowed durations); these functions throw a plain
 * Error only for programmer misuse: a model of the wrong pricing mode, or a non-integer / negative count.
 */
import { divRoundHalfUp, type Micros } from "../money.ts";
import type {
  AudioTextModel,
  ImageModel,
  ModelRecord,
  MusicModel,
  Pricing,
  SfxModel,
  SpeechModel,
  VideoModel,
} from "./types.ts";

/** Basis points of x1.00 (markups are stored in basis points, types.ts). */
const BP_ONE = 10_000n;

/** An image quality tier of a `per-quality` model (D14). */
export type ImageQuality = "low" | "medium" | "high";

/** What an image quote needs: `n` images (1 to 4), the quality tier, and the size in pixels (per-mp). */
export interface ImageQuoteInput {
  /** Number of images; ignored (treated as 1) by `singleImage` models such as imgB-2-pro. */
  n: number;
  /** Quality tier for `per-quality` models; defaults to the model's default tier. */
  quality?: ImageQuality;
  /** Width in pixels (per-mp models). With `height` omitted the quote is for 1 MP ("auto", D19). */
  width?: number;
  /** Height in pixels (per-mp models). */
  height?: number;
}

function fail(model: { id: string; pricing: Pricing }, what: string): never {
  throw new Error(`quote: ${what} does not apply to ${model.id} (pricing mode ${model.pricing.mode})`);
}

function requireCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new Error(`quote: ${name} must be an integer >= ${min}, got ${value}`);
  }
}

/** `amount x count / divisor`, rounded half-up to the micro-USD. */
function mulDiv(amount: Micros, count: number, divisor: bigint): Micros {
  return Number(divRoundHalfUp(BigInt(amount) * BigInt(count), divisor));
}

/**
 * Speech: `chars x price per 1000 characters / 1000`, half-up to the micro-USD (spec speech prices; D7).
 * `chars` counts code points after NFC (the caller measures). Returns micro-USD.
 */
export function quoteSpeech(model: SpeechModel, chars: number): Micros {
  requireCount("chars", chars, 0);
  return mulDiv(model.pricing.microsPerKchar, chars, 1000n);
}

/**
 * Music in micro-USD. `per-second` models (alpha-music) charge the per-second rate for the requested
 * length, counted in milliseconds (`lengthMs x rate / 1000`, half-up); `per-song` models (beta-*) charge
 * their flat price whatever the length (spec music prices).
 */
export function quoteMusic(model: MusicModel, lengthMs: number): Micros {
  const p = model.pricing;
  if (p.mode === "per-song") return p.microsPerSong;
  if (p.mode !== "per-second") fail(model, "a music quote");
  requireCount("lengthMs", lengthMs, 0);
  return mulDiv(p.microsPerSecond, lengthMs, 1000n);
}

/** Sound effects: the flat price per generation, whatever the duration (spec "POST /v1/audio/sfx"). */
export function quoteSfx(model: SfxModel): Micros {
  return quoteFlat(model);
}

/**
 * A flat-priced call in micro-USD: `per-call` (sfx, voice design, voice clone, vidC clips) or `per-song`
 * (beta music). Throws for any other pricing mode.
 */
export function quoteFlat(model: ModelRecord): Micros {
  const p = model.pricing;
  if (p.mode === "per-call") return p.microsPerCall;
  if (p.mode === "per-song") return p.microsPerSong;
  return fail(model, "a flat quote");
}

/**
 * Transcription and audio understanding: per started minute with a 1-minute minimum (spec "Other
 * endpoints that exist"). `durationSec` is the audio duration in seconds (fractional allowed, >= 0):
 * 1 s -> 1 minute, 60 s -> 1 minute, 61 s -> 2 minutes. Returns micro-USD.
 */
export function quotePerMinute(model: AudioTextModel, durationSec: number): Micros {
  const p = model.pricing;
  if (p.mode !== "per-minute") return fail(model, "a per-minute quote");
  if (!Number.isFinite(durationSec) || durationSec < 0) {
    throw new Error(`quote: durationSec must be a finite number >= 0, got ${durationSec}`);
  }
  return p.microsPerMinute * billedMinutes(durationSec);
}

/**
 * Realtime transcription (D43): the per-minute price charged per started second of audio, `seconds`
 * whole seconds (>= 0) at `microsPerMinute / 60` each, rounded half-up once (0.0009 USD per minute is 15
 * micro-USD per second). Returns micro-USD.
 */
export function quoteRealtimeSeconds(model: AudioTextModel, seconds: number): Micros {
  const p = model.pricing;
  if (p.mode !== "per-minute") return fail(model, "a per-second quote");
  requireCount("seconds", seconds, 0);
  return mulDiv(p.microsPerMinute, seconds, 60n);
}

/** Started minutes of `durationSec` seconds, at least 1 (spec: "billed per minute, rounded up"). */
export function billedMinutes(durationSec: number): number {
  return Math.max(1, Math.ceil(durationSec / 60));
}

/**
 * Whole megapixels of a `width x height` image: `w x h / 1_000_000` rounded half-up, at least 1 (D19).
 * 1024x1024 -> 1, 1448x1448 -> 2, 2048x2048 -> 4. Width and height are positive integers (pixels).
 */
export function megapixelsOf(width: number, height: number): number {
  requireCount("width", width, 1);
  requireCount("height", height, 1);
  const mp = Number(divRoundHalfUp(BigInt(width) * BigInt(height), 1_000_000n));
  return Math.max(1, mp);
}

/**
 * An image request in micro-USD (spec image prices; D14; D19):
 * - `per-image`: price per image x `n`;
 * - `per-quality`: the chosen (or default) tier x `n`;
 * - `per-mp`: `(base + extra x (mp - 1)) x markup` rounded half-up to the model's step (0.001 USD) in one
 *   rounding, with `mp` from {@link megapixelsOf} (1 MP when no size is given):
 *   1024x1024 -> 41_000, 1448x1448 -> 61_000, 2048x2048 -> 101_000.
 * `singleImage` models always make (and charge) one image.
 */
export function quoteImage(model: ImageModel, input: ImageQuoteInput): Micros {
  requireCount("n", input.n, 1);
  const n = model.singleImage ? 1 : input.n;
  const p = model.pricing;
  switch (p.mode) {
    case "per-image":
      return p.microsPerImage * n;
    case "per-quality":
      return p.tiers[input.quality ?? p.defaultQuality] * n;
    case "per-mp": {
      const hasSize = input.width !== undefined && input.height !== undefined;
      const mp = hasSize ? megapixelsOf(input.width ?? 0, input.height ?? 0) : 1;
      return quotePerMp(p, mp) * n;
    }
    default:
      return fail(model, "an image quote");
  }
}

/**
 * A `per-mp` image at `megapixels` as a source reported delivering it (D26, imgB-2-pro final charge):
 * rounded half-up to whole megapixels, at least 1, priced as {@link quoteImage}. micro-USD.
 * @throws Error when the model is not priced per megapixel or `megapixels` is not a positive number.
 */
export function quoteImageAtMegapixels(model: ImageModel, megapixels: number): Micros {
  const p = model.pricing;
  if (p.mode !== "per-mp") return fail(model, "a per-megapixel quote");
  if (!Number.isFinite(megapixels) || megapixels <= 0) throw new Error(`megapixels must be a positive number, got ${megapixels}`);
  return quotePerMp(p, Math.max(1, Math.round(megapixels)));
}

/** `(base + extra x (mp - 1)) x markup`, rounded half-up once to `roundStepMicros` (D7). micro-USD. */
function quotePerMp(p: Extract<Pricing, { mode: "per-mp" }>, mp: number): Micros {
  const raw = (BigInt(p.baseMicros) + BigInt(p.extraPerMpMicros) * BigInt(mp - 1)) * BigInt(p.markupBp);
  const step = BigInt(p.roundStepMicros);
  return Number(divRoundHalfUp(raw, BP_ONE * step) * step);
}

/**
 * A video request in micro-USD: `per-second` models charge rate x `durationSec` (whole seconds, 1 to 10,
 * spec video prices and D24); `per-call` models (vidC-02-*) charge their flat clip price.
 */
export function quoteVideo(model: VideoModel, durationSec: number): Micros {
  const p = model.pricing;
  if (p.mode === "per-call") return p.microsPerCall;
  if (p.mode !== "per-second") return fail(model, "a video quote");
  requireCount("durationSec", durationSec, 0);
  return p.microsPerSecond * durationSec;
}

/**
 * The representative price of one typical call of `model`, in micro-USD: the `/v1/pricing` row's
 * `usd_per_call` (D18). One item for `per-image`, `per-song` and `per-call`; the default duration for
 * `per-second`; 1000 characters for `per-char`; one minute for `per-minute`; the default tier for
 * `per-quality`; 1 MP for `per-mp`.
 */
export function quoteRepresentative(model: ModelRecord): Micros {
  const p = model.pricing;
  switch (p.mode) {
    case "per-image":
      return p.microsPerImage;
    case "per-song":
      return p.microsPerSong;
    case "per-call":
      return p.microsPerCall;
    case "per-second":
      return p.microsPerSecond * p.defaultDurationSec;
    case "per-char":
      return p.microsPerKchar;
    case "per-minute":
      return p.microsPerMinute;
    case "per-quality":
      return p.tiers[p.defaultQuality];
    case "per-mp":
      return quotePerMp(p, 1);
  }
}

/**
 * Markup of the gateway's image and video prices over the providers' public list prices, in basis points:
 * x1.35 (spec image prices; the video prices are the providers' per-second and per-clip prices x 1.35).
 */
export const MEDIA_LIST_MARKUP_BP = 13_500n;

/**
 * What the provider's public list says a delivered image or video job costs, in micro-USD: the upstream
 * cost recorded on a job when the source does not report what it charged (issue "Real upstreams, part 1"
 * point 6). `chargedMicros` is the job's final charge; for `per-mp` models (imgB-2-pro) the list price is
 * `base + extra x (megapixels - 1)` of the delivered whole megapixels (at least 1), before markup and
 * rounding; for every other model the final charge divided by {@link MEDIA_LIST_MARKUP_BP}, rounded
 * half-up to the micro-USD.
 * @throws Error when `chargedMicros` is negative or not an integer.
 */
export function upstreamListPrice(model: ImageModel | VideoModel, chargedMicros: Micros, megapixels: number | null = null): Micros {
  requireCount("chargedMicros", chargedMicros, 0);
  const p = model.pricing;
  if (p.mode === "per-mp" && megapixels !== null && Number.isFinite(megapixels) && megapixels > 0) {
    return p.baseMicros + p.extraPerMpMicros * (Math.max(1, Math.round(megapixels)) - 1);
  }
  return Number(divRoundHalfUp(BigInt(chargedMicros) * BP_ONE, MEDIA_LIST_MARKUP_BP));
}
