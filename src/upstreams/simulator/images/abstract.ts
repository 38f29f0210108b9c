/**
 * Abstract compositions, for prompts that name no subject: the colours from the prompt's colour, night
 * and pastel words (the rest seeded), then a gradient and drifting circles, rings, rectangles and bands.
 */
import type { Rng } from "../rng.ts";
import { hsl, mix } from "./colour.ts";
import { NIGHT, PASTEL } from "./prompt-words.ts";
import { between } from "./scene.ts";
import type { Gradient, ImagePlan, Rgb, Shape } from "./types.ts";

/** The colours of a scene (abstract compositions): base hue (degrees), saturation and lightness (0..1), accent hue. */
interface Colours {
  hue: number;
  sat: number;
  light: number;
  night: boolean;
  accentHue: number;
}

/**
 * The abstract plan (caption aside) of the lower-cased prompt `text`, whose colour word gave `hue` (or
 * null): the colours draw from `styleRng` (shared by all images of a prompt and seed) and `rng` (this
 * image's), then {@link planAbstract} from `rng`.
 */
export function planAbstractScene(text: string, hue: number | null, styleRng: Rng, rng: Rng, t: number): Omit<ImagePlan, "caption"> {
  let base = hue ?? styleRng() * 360;
  base += (rng() - 0.5) * 30;
  const night = NIGHT.test(text);
  const pastel = PASTEL.test(text);
  const sat = pastel ? 0.45 : between(styleRng, 0.55, 0.85);
  const light = night ? 0.22 : pastel ? 0.78 : 0.55;
  const accentHue = base + (styleRng() < 0.5 ? 150 : 200) + (rng() - 0.5) * 30;
  return planAbstract({ hue: base, sat, light, night, accentHue }, rng, t);
}

/**
 * An abstract composition: a gradient and 5-9 circles, rings, rotated rectangles or bands; in video
 * (`t` seconds) the shapes drift and turn.
 */
function planAbstract({ hue, sat, light, accentHue }: Colours, rng: Rng, t: number): Omit<ImagePlan, "caption"> {
  const shapes: Shape[] = [];
  const background: Gradient = {
    c0: hsl(hue, sat, light),
    c1: hsl(hue + 40, sat, Math.max(0.1, light - 0.2)),
    angle: rng() * Math.PI * 2,
  };
  const palette: Rgb[] = [
    hsl(accentHue, sat, Math.min(0.85, light + 0.15)),
    hsl(hue + 180, sat * 0.9, light),
    hsl(hue - 30, sat, Math.min(0.9, light + 0.3)),
    mix(hsl(accentHue + 60, sat, light), [255, 255, 255], 0.3),
    hsl(hue, sat, Math.max(0.08, light - 0.3)),
  ];
  const count = 5 + Math.floor(rng() * 5);
  for (let i = 0; i < count; i++) {
    const color = palette[Math.floor(rng() * palette.length)];
    const alpha = between(rng, 0.55, 0.95);
    const cx = between(rng, 0.1, 0.9) + 0.03 * Math.sin(t * 0.8 + i);
    const cy = between(rng, 0.1, 0.9) + 0.03 * Math.cos(t * 0.6 + i * 2);
    const roll = rng();
    if (roll < 0.35) shapes.push({ kind: "circle", cx, cy, r: between(rng, 0.05, 0.25), color, alpha });
    else if (roll < 0.55) {
      const r = between(rng, 0.08, 0.3);
      shapes.push({ kind: "ring", cx, cy, r, w: r * between(rng, 0.08, 0.3), color, alpha });
    } else if (roll < 0.85) {
      shapes.push({
        kind: "rect",
        cx,
        cy,
        hw: between(rng, 0.04, 0.22),
        hh: between(rng, 0.04, 0.22),
        angle: rng() * Math.PI + t * 0.3,
        color,
        alpha,
      });
    } else {
      shapes.push({
        kind: "band",
        offset: between(rng, -0.3, 0.3),
        w: between(rng, 0.03, 0.12),
        angle: rng() * Math.PI,
        color,
        alpha: alpha * 0.6,
      });
    }
  }
  return { motif: "abstract", background, shapes };
}
