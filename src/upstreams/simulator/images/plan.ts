/**
 * Scene planning of the simulated images and video frames (issue 28: the picture shows the prompt).
 * A prompt (plus a seed, the image's index within the request and, for video frames, a time) becomes a
 * small scene plan:
 *
 * - subject: the motif named earliest in the prompt among lighthouse, animal (fox, cat, dog, wolf...),
 *   bird, mountain, city, sea (waves, boat), forest (trees), sun/moon/sky, car, flower and face/person;
 *   a prompt naming none gets an abstract composition seeded by the prompt. Scenery words the subject
 *   does not cover still show (sea, mountains or trees behind a lighthouse, a fox...).
 * - palette: the time of day from words (dawn/sunrise, day, dusk/sunset, night: sky, sun or moon and
 *   stars, lit windows), the ground from words (snow, sand, sea, grass) and the subject's colour from
 *   colour words ("red", "blue", "golden"...); what the words leave open is seeded.
 * - composition: placement, sizes and counts seeded by (prompt, seed, index).
 * - the prompt itself, written on the picture (see `font.ts`; drawn by `raster.ts` and `svg.ts`).
 * - motion (`timeSec`, video frames): the sun or moon moves, clouds drift, hills pan with parallax,
 *   waves roll, a lighthouse beam turns, cars and boats travel, tails sway, stars twinkle.
 *
 * Deterministic; no `Math.random`. Coordinates are normalized (x in 0..1 of the width, y in 0..1 of the
 * height, lengths relative to the shorter side), so a plan looks the same at any size; motifs keep
 * their proportions at any aspect ratio (the plan knows it from `width`/`height`).
 *
 * This module lays a scene out: which layers a prompt's words call for and in what order they are
 * painted. The parts live beside it:
 *
 * - `types.ts`: the options and the plan's types (shapes, gradient, motif);
 * - `prompt-words.ts`: reading the prompt (subject, colour, time of day, mood and ground words);
 * - `colour.ts`: colour arithmetic; `scene.ts`: the shape list the painters add to, and their context;
 * - `scenery.ts`: the backdrop (sky, mountains, hills, skyline, sea or ground);
 * - `subjects.ts`: the subjects (lighthouse, animal, birds, boat, trees, big sun or moon, car, flowers,
 *   portrait);
 * - `abstract.ts`: the compositions of prompts that name no subject;
 * - `geometry.ts`: hill ridges and gradient lines in pixels, for the renderers.
 */
import { createRng, seedFrom } from "../rng.ts";
import { planAbstractScene } from "./abstract.ts";
import { hueOf, motifOf, names, SAND, SNOW, type TimeOfDay, timeOfDayOf } from "./prompt-words.ts";
import { type Ctx, between, Scene } from "./scene.ts";
import { ground, hills, mountains, sea, sky, skyline } from "./scenery.ts";
import { animal, bigSky, birds, boat, car, face, flowers, lighthouse, trees } from "./subjects.ts";
import type { ImagePlan, RenderImageOptions } from "./types.ts";

// The planner's public names, where its users have always found them.
export { hsl } from "./colour.ts";
export { gradientLine, ridgeAt } from "./geometry.ts";
export { motifOf } from "./prompt-words.ts";
export type { Gradient, ImagePlan, Motif, RenderImageOptions, Rgb, Shape, Wave } from "./types.ts";

/** The deterministic scene plan of `opts` (independent of the output size except for its aspect ratio). */
export function planImage(opts: RenderImageOptions): ImagePlan {
  const text = opts.prompt.normalize("NFC").toLowerCase();
  const index = opts.index ?? 0;
  const t = Number.isFinite(opts.timeSec) ? (opts.timeSec as number) : 0;
  const styleRng = createRng(seedFrom("image-style", text, String(opts.seed ?? "")));
  const rng = createRng(seedFrom("image", text, String(opts.seed ?? ""), String(index)));
  const motif = motifOf(text);
  const hue = hueOf(text);
  if (motif === "abstract") return { ...planAbstractScene(text, hue, styleRng, rng, t), caption: opts.prompt };
  const tod: TimeOfDay = timeOfDayOf(text, styleRng);
  const scene = new Scene(opts.width, opts.height, tod === "night" ? 0.42 : tod === "day" ? 1 : 0.82);
  const horizon = motif === "face" ? 0.75 : between(rng, 0.58, 0.68);
  const ctx: Ctx = { s: scene, rng, t, tod, hue, horizon, snow: SNOW.test(text), text };
  const background = sky(ctx, motif);
  const seaGround = motif === "lighthouse" || motif === "sea" || names(text, "sea");
  if (motif !== "city" && motif !== "face" && (motif === "mountain" || names(text, "mountain"))) mountains(ctx, motif === "mountain");
  if (motif !== "face" && motif !== "city" && !seaGround) hills(ctx);
  if (motif === "city" || names(text, "city")) skyline(ctx, motif === "city");
  if (seaGround && motif !== "face") sea(ctx);
  else if (motif !== "face") ground(ctx, SAND.test(text));
  if (motif !== "forest" && motif !== "face" && names(text, "forest")) trees(ctx, false);
  switch (motif) {
    case "lighthouse":
      lighthouse(ctx);
      break;
    case "animal":
      animal(ctx);
      break;
    case "bird":
      birds(ctx, 3);
      break;
    case "sea":
      boat(ctx);
      break;
    case "forest":
      trees(ctx, true);
      break;
    case "sky":
      bigSky(ctx);
      break;
    case "car":
      car(ctx);
      break;
    case "flower":
      flowers(ctx);
      break;
    case "face":
      face(ctx);
      break;
    default:
      break;
  }
  if (motif !== "bird" && motif !== "face" && names(text, "bird")) birds(ctx, 2);
  return { motif, background, shapes: scene.shapes, caption: opts.prompt };
}
