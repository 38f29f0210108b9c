/**
 * What the painters of a scene share (`scenery.ts`, `subjects.ts`): the {@link Scene} they add shapes
 * to, in normalized coordinates with offsets in units of the shorter side, the {@link Ctx} of the
 * picture they paint (seeded generator, time, light, colour word, horizon), and {@link between} (also
 * used by the abstract compositions of `abstract.ts`).
 */
import type { Rng } from "../rng.ts";
import { shade } from "./colour.ts";
import type { TimeOfDay } from "./prompt-words.ts";
import type { Rgb, Shape, Wave } from "./types.ts";

/** A value in `lo..hi` from one draw of `rng`. */
export function between(rng: Rng, lo: number, hi: number): number {
  return lo + (hi - lo) * rng();
}

/** Shapes in normalized coordinates, with motif offsets in units of the shorter side. */
export class Scene {
  readonly shapes: Shape[] = [];
  /** Normalized length of one unit (the shorter side) along x and y. */
  readonly kx: number;
  readonly ky: number;
  /** Multiplier of ground and motif colours (darker at night). */
  readonly light: number;

  constructor(width: number, height: number, light: number) {
    const unit = Math.min(width, height);
    this.kx = unit / width;
    this.ky = unit / height;
    this.light = light;
  }

  circle(x: number, y: number, r: number, color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "circle", cx: x, cy: y, r, color, alpha });
  }
  ellipse(x: number, y: number, rx: number, ry: number, angle: number, color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "ellipse", cx: x, cy: y, rx, ry, angle, color, alpha });
  }
  rect(x: number, y: number, hw: number, hh: number, angle: number, color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "rect", cx: x, cy: y, hw, hh, angle, color, alpha });
  }
  /** A polygon around (x, y) with vertex offsets `d` (pairs, units of the shorter side). */
  poly(x: number, y: number, d: readonly number[], color: Rgb, alpha = 1): void {
    const pts: number[] = [];
    for (let i = 0; i < d.length; i += 2) pts.push(x + d[i] * this.kx, y + d[i + 1] * this.ky);
    this.shapes.push({ kind: "poly", pts, color, alpha });
  }
  hill(base: number, waves: readonly Wave[], color: Rgb, alpha = 1): void {
    this.shapes.push({ kind: "hill", base, waves, color, alpha });
  }
  /** x moved by `d` units. */
  dx(x: number, d: number): number {
    return x + d * this.kx;
  }
  /** y moved by `d` units. */
  dy(y: number, d: number): number {
    return y + d * this.ky;
  }
  /** `c` at the scene's light. */
  lit(c: Rgb): Rgb {
    return shade(c, this.light);
  }
}

/** What the motif painters share. */
export interface Ctx {
  s: Scene;
  rng: Rng;
  t: number;
  tod: TimeOfDay;
  /** Hue of a colour word, or null. */
  hue: number | null;
  /** The horizon (normalized y). */
  horizon: number;
  snow: boolean;
  text: string;
}
