/**
 * The types of a scene plan (see `plan.ts`): the options a picture is asked with, and the plan the
 * renderers draw (`raster.ts` for PNG and video frames, `svg.ts`): its subject, background gradient and
 * shapes in normalized coordinates (x in 0..1 of the width, y in 0..1 of the height, lengths relative to
 * the shorter side).
 */

/** Options of {@link renderPng} and {@link renderSvg}. */
export interface RenderImageOptions {
  /** The prompt: its words pick subject and palette, its hash the rest; it is written on the picture. */
  prompt: string;
  /** Output size in pixels, integers 1..4096 (rendered exactly). */
  width: number;
  height: number;
  /** Extra seed material (for example the model id and a pass-through `seed`); default "". */
  seed?: string | number;
  /** Index of the image within one request (0-based): each index gives a different variation. */
  index?: number;
  /** Time in seconds of a video frame (default 0: a still picture); moves the scene, see the module comment. */
  timeSec?: number;
}

/** An RGB colour, each channel 0..255. */
export type Rgb = readonly [number, number, number];

/** A shape of the plan (normalized coordinates, see the module comment). `alpha` is 0..1. */
export type Shape =
  | { kind: "circle"; cx: number; cy: number; r: number; color: Rgb; alpha: number }
  | { kind: "ring"; cx: number; cy: number; r: number; w: number; color: Rgb; alpha: number }
  | { kind: "rect"; cx: number; cy: number; hw: number; hh: number; angle: number; color: Rgb; alpha: number }
  | { kind: "band"; offset: number; w: number; angle: number; color: Rgb; alpha: number }
  | { kind: "hill"; base: number; waves: readonly Wave[]; color: Rgb; alpha: number }
  /** An ellipse: radii `rx`, `ry` (relative to the shorter side) rotated by `angle` radians. */
  | { kind: "ellipse"; cx: number; cy: number; rx: number; ry: number; angle: number; color: Rgb; alpha: number }
  /** A polygon: vertices as x, y pairs (normalized like `cx`, `cy`). */
  | { kind: "poly"; pts: readonly number[]; color: Rgb; alpha: number };

/** One sine of a hill ridge: `amp x sin(2 pi (freq x + phase))`, amp relative to the height. */
export interface Wave {
  amp: number;
  freq: number;
  phase: number;
}

/** A linear gradient from `c0` to `c1` along direction `angle` (radians, in pixel space). */
export interface Gradient {
  c0: Rgb;
  c1: Rgb;
  angle: number;
}

/** The subjects a prompt can name (see the module comment); `abstract` when it names none. */
export type Motif =
  | "lighthouse"
  | "animal"
  | "bird"
  | "mountain"
  | "city"
  | "sea"
  | "forest"
  | "sky"
  | "car"
  | "flower"
  | "face"
  | "abstract";

/** A scene: its subject, background gradient, shapes back to front, and the caption (the prompt). */
export interface ImagePlan {
  motif: Motif;
  background: Gradient;
  shapes: Shape[];
  caption: string;
}
