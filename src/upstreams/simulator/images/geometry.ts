/**
 * Geometry of a plan's hills and gradients in pixels, shared by the two renderers (`raster.ts`,
 * `svg.ts`) so that the PNG and the SVG of one plan agree.
 */
import type { Wave } from "./types.ts";

/** Height (fraction of the image height, 0 = top) of a hill ridge at normalized `x`. */
export function ridgeAt(base: number, waves: readonly Wave[], x: number): number {
  let y = base;
  for (const w of waves) y += w.amp * Math.sin(2 * Math.PI * (w.freq * x + w.phase));
  return y;
}

/** Start/end points (px) of a gradient along `angle` that spans a `w` x `h` image from 0 to 1. */
export function gradientLine(w: number, h: number, angle: number): { x1: number; y1: number; x2: number; y2: number } {
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const half = (Math.abs(w * c) + Math.abs(h * s)) / 2;
  return { x1: w / 2 - c * half, y1: h / 2 - s * half, x2: w / 2 + c * half, y2: h / 2 + s * half };
}
