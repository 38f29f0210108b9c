/** Image sizes of the simulator: what it renders for a requested size or aspect ratio, and the hard limits. */
import type { AspectRatio } from "../../types.ts";

/** Longest side (px) the simulator renders at; larger requests are scaled down by {@link fitRenderSize}. */
export const MAX_RENDER_SIDE = 2048;

/** Hard limits of {@link renderPng} / {@link renderSvg}: each side 1..4096 px. */
export const MAX_SIDE = 4096;

/**
 * The size (px) the simulator actually renders for a requested `width` x `height`: the request itself
 * when both sides are at most {@link MAX_RENDER_SIDE}, otherwise scaled down (aspect ratio kept, sides
 * rounded, at least 1) so that the longer side is {@link MAX_RENDER_SIDE}. Invalid sizes (not positive
 * finite numbers) give `null`.
 */
export function fitRenderSize(width: number, height: number): { width: number; height: number } | null {
  if (!(Number.isFinite(width) && Number.isFinite(height) && width >= 1 && height >= 1)) return null;
  let w = Math.round(width);
  let h = Math.round(height);
  const long = Math.max(w, h);
  if (long > MAX_RENDER_SIDE) {
    const k = MAX_RENDER_SIDE / long;
    w = Math.max(1, Math.round(w * k));
    h = Math.max(1, Math.round(h * k));
  }
  return { width: w, height: h };
}

/**
 * A default pixel size of about one megapixel (sides multiples of 64) for each aspect ratio:
 * 1:1 1024x1024, 16:9 1344x768, 9:16 768x1344, 4:3 1152x896, 3:4 896x1152, 21:9 1536x640.
 */
export function sizeForAspect(aspect: AspectRatio): { width: number; height: number } {
  switch (aspect) {
    case "1:1":
      return { width: 1024, height: 1024 };
    case "16:9":
      return { width: 1344, height: 768 };
    case "9:16":
      return { width: 768, height: 1344 };
    case "4:3":
      return { width: 1152, height: 896 };
    case "3:4":
      return { width: 896, height: 1152 };
    case "21:9":
      return { width: 1536, height: 640 };
  }
}

/** Throws a RangeError unless `width` and `height` are integers in 1..{@link MAX_SIDE}. */
export function checkSize(width: number, height: number): void {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width >= 1 && height >= 1)) {
    throw new RangeError(`image size must be positive integers, got ${width}x${height}`);
  }
  if (width > MAX_SIDE || height > MAX_SIDE) throw new RangeError(`image side over ${MAX_SIDE} px: ${width}x${height}`);
}
