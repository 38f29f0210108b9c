/**
 * Reading the prompt (lower-cased, NFC): the subject it names first, the hue of its first colour word,
 * its time of day, and the mood and ground words (night, pastel, snow, sand) the planner tests. Only
 * words: whatever they leave open is drawn from the planner's seeded generators.
 */
import type { Rng } from "../rng.ts";
import type { Motif } from "./types.ts";

/** Subject words; the motif whose word comes first in the prompt wins. */
const MOTIF_WORDS: readonly (readonly [Motif, RegExp])[] = [
  ["lighthouse", /\b(lighthouses?|beacon)\b/],
  ["animal", /\b(fox|foxes|cats?|kittens?|dogs?|pupp(y|ies)|wolf|wolves|bears?|deer|horses?|animals?|rabbits?|lions?|tigers?)\b/],
  ["bird", /\b(birds?|eagles?|owls?|parrots?|seagulls?|gulls?|crows?)\b/],
  ["mountain", /\b(mountains?|peaks?|alps|summit|volcano(es)?|hills?)\b/],
  ["city", /\b(city|cities|skyline|town|streets?|buildings?|skyscrapers?|downtown|urban)\b/],
  ["sea", /\b(seas?|ocean|waves?|beach|boats?|ships?|sail(ing|boat)?s?|harbou?r|coast|surf)\b/],
  ["forest", /\b(forests?|trees?|woods?|pines?|jungle)\b/],
  ["sky", /\b(sun|moon|stars?|sky|galaxy|planets?|eclipse)\b/],
  ["car", /\b(cars?|vehicles?|trucks?|bus|taxi|automobiles?)\b/],
  ["flower", /\b(flowers?|roses?|tulips?|garden|bloom|blossoms?|daisy|daisies|sunflowers?)\b/],
  ["face", /\b(faces?|portrait|person|people|man|woman|girl|boy|child|astronaut|selfie|robot)\b/],
];

/** Hue (degrees) named by colour words; the first match wins. */
const HUE_WORDS: readonly (readonly [RegExp, number])[] = [
  [/\b(red|crimson|scarlet|fire|ruby)\b/, 2],
  [/\b(orange|autumn|amber|copper)\b/, 26],
  [/\b(yellow|gold|golden|lemon)\b/, 48],
  [/\b(green|emerald|lime)\b/, 120],
  [/\b(teal|turquoise|cyan|aqua)\b/, 178],
  [/\b(blue|sapphire|navy)\b/, 215],
  [/\b(purple|violet|lavender|amethyst)\b/, 275],
  [/\b(pink|magenta|rose|flamingo)\b/, 325],
];

/** Time-of-day words (the first of dawn, dusk, night, day to match wins). */
const DAWN = /\b(dawn|sunrise|morning|daybreak)\b/;
const DUSK = /\b(dusk|sunset|evening|twilight|golden hour)\b/;
/** Night words; an abstract prompt with one is drawn dark. */
export const NIGHT = /\b(night|midnight|moon(lit)?|stars?|starry|dark|noir)\b/;
const DAY = /\b(day|noon|sunny|summer|bright|daylight)\b/;
/** Snow words: a snowy ground and hills, snow on the trees. */
export const SNOW = /\b(snow|snowy|winter|ice|icy|frozen|arctic)\b/;
/** Sand words: a sandy ground. */
export const SAND = /\b(desert|sand|sandy|dunes?)\b/;
/** Soft-colour words (abstract prompts). */
export const PASTEL = /\b(pastel|soft|dreamy)\b/;

/** The light of a scene, from its words or seeded. */
export type TimeOfDay = "dawn" | "day" | "dusk" | "night";

/** The motif named earliest in `text`, or `abstract`. */
export function motifOf(text: string): Motif {
  let best: Motif = "abstract";
  let at = Number.POSITIVE_INFINITY;
  for (const [motif, re] of MOTIF_WORDS) {
    const m = re.exec(text);
    if (m && m.index < at) {
      at = m.index;
      best = motif;
    }
  }
  return best;
}

/** Whether `text` has one of the subject words of `motif` (scenery a scene shows even when it is not the subject). */
export function names(text: string, motif: Exclude<Motif, "abstract">): boolean {
  const entry = MOTIF_WORDS.find(([m]) => m === motif);
  return entry !== undefined && entry[1].test(text);
}

/** The hue (degrees) of the first colour word of `text` in {@link HUE_WORDS}' order, or null. */
export function hueOf(text: string): number | null {
  for (const [re, h] of HUE_WORDS) {
    if (re.test(text)) return h;
  }
  return null;
}

/**
 * The time of day the words of `text` name (dawn, then dusk, night, day), else one drawn from
 * `styleRng` (day twice as likely as each of the others); draws from `styleRng` only then.
 */
export function timeOfDayOf(text: string, styleRng: Rng): TimeOfDay {
  return DAWN.test(text)
    ? "dawn"
    : DUSK.test(text)
      ? "dusk"
      : NIGHT.test(text)
        ? "night"
        : DAY.test(text)
          ? "day"
          : (["day", "day", "dawn", "dusk", "night"] as const)[Math.floor(styleRng() * 5)];
}
