/**
 * The price of an image or video job in integer micro-USD (spec image and video prices; D7, D19, D26):
 * one function for the quote a submit holds and for the amount the runner captures when the job
 * succeeds, so the two cannot drift apart.
 */
import type { Micros } from "../money.ts";
import { type ImageQuality, quoteImage, quoteImageAtMegapixels, quoteVideo } from "./quote.ts";
import type { ImageModel, VideoModel } from "./types.ts";

/** What an image job asks for, as priced: `n` images of `width x height` pixels, at a quality tier (per-quality models). */
export interface ImageJobOrder {
  n: number;
  quality: ImageQuality | null;
  /** Pixels. */
  width: number;
  /** Pixels. */
  height: number;
}

/** What a video job asks for, as priced: its length in whole seconds. */
export interface VideoJobOrder {
  durationSec: number;
}

/** A job to price: its catalog model and what it asks for. */
export type PricedJob = { kind: "image"; model: ImageModel; order: ImageJobOrder } | { kind: "video"; model: VideoModel; order: VideoJobOrder };

/** What a source delivered, where it says (D26); each fact null when unknown. */
export interface JobDelivery {
  /** Megapixels of each image the source reported delivering (per-mp models). */
  megapixels: number | null;
  /** Pixel size of the first image, read from its header (PNG) when the source did not report megapixels. */
  size: { width: number; height: number } | null;
  /** Seconds of video the source delivered (reported, else the file's header). */
  durationSec: number | null;
}

/** The settlement of a job: its hold and what was delivered. */
export interface JobSettlement {
  /** The amount the submit held, micro-USD: what {@link jobPrice} quoted without a settlement. */
  heldMicros: Micros;
  /** What the source delivered, or null when nothing about it is known (the simulator). */
  delivered: JobDelivery | null;
}

/**
 * The price of `job`, micro-USD, rounded half-up once per the model's rule (D7; per-mp images to the
 * model's step of 0.001 USD from whole megapixels rounded half-up, at least 1, D19).
 *
 * - Without `settlement`: the quote of what the job asks for, which the submit holds (`quoteImage`,
 *   `quoteVideo` of quote.ts).
 * - With `settlement`: the final amount the success captures, never more than the hold (D3): the hold,
 *   except (D26) a `per-mp` image pays for the delivered megapixels (the source's report, else the first
 *   image's header size) and a `per-second` video pays its rate x min(requested, delivered seconds)
 *   (delivered rounded half-up to whole seconds, at least 1) when its delivered length is known.
 *
 * With nothing delivered the two agree: the quote of an order is the hold its settlement captures.
 * @throws Error (from quote.ts) for programmer misuse: a negative or fractional count.
 */
export function jobPrice(job: PricedJob, settlement?: JobSettlement): Micros {
  if (settlement === undefined) {
    if (job.kind === "video") return quoteVideo(job.model, job.order.durationSec);
    const o = job.order;
    return quoteImage(job.model, { n: o.n, quality: o.quality ?? undefined, width: o.width, height: o.height });
  }
  const held = settlement.heldMicros;
  const delivered = settlement.delivered;
  if (job.kind === "video") {
    if (job.model.pricing.mode !== "per-second" || delivered?.durationSec == null) return held;
    const seconds = Math.max(1, Math.min(job.order.durationSec, Math.round(delivered.durationSec)));
    return Math.min(held, quoteVideo(job.model, seconds));
  }
  if (job.model.pricing.mode !== "per-mp") return held;
  // Per-mp models make one image (`singleImage`); the price is that image's.
  if (delivered?.megapixels != null && delivered.megapixels > 0) return Math.min(held, quoteImageAtMegapixels(job.model, delivered.megapixels));
  const size = delivered?.size ?? null;
  if (size === null) return held;
  return Math.min(held, quoteImage(job.model, { n: 1, width: size.width, height: size.height }));
}
