/** Sound-effect kinds chosen from prompt keywords, and the length a model picks. */
import { hashUnit } from "../music/dsp.ts";
import { wordsOf } from "../music/words.ts";

/** Character families of {@link synthesizeSfx}, chosen from prompt keywords. */
export type SfxKind =
  | "rain"
  | "wind"
  | "water"
  | "fire"
  | "explosion"
  | "thunder"
  | "impact"
  | "footsteps"
  | "click"
  | "beep"
  | "alarm"
  | "siren"
  | "laser"
  | "whoosh"
  | "bird"
  | "engine"
  | "bell"
  | "applause"
  | "glass"
  | "generic";

/**
 * Keywords of each kind, in priority order: word prefixes, or (ending in `=`) whole words that may
 * take a plural `s`.
 */
const SFX_KEYWORDS: readonly (readonly [SfxKind, readonly string[]])[] = [
  ["explosion", ["explo", "boom", "blast=", "bomb", "detonat", "grenade", "kaboom"]],
  ["thunder", ["thunder", "storm", "lightning", "rumbl"]],
  ["rain", ["rain", "drizzl", "downpour", "shower=", "droplet", "drip"]],
  ["wind", ["wind=", "windy=", "breez", "gust", "howl", "blizzard", "air="]],
  ["water", ["water", "river", "stream", "ocean", "wave=", "sea=", "splash", "bubbl", "brook", "surf"]],
  ["fire", ["fire=", "crackl", "campfire", "flame", "burn", "fireplace"]],
  ["glass", ["glass", "shatter", "break=", "breaking=", "smash", "window"]],
  ["footsteps", ["footstep", "step=", "walk", "running=", "run=", "stomp", "march"]],
  ["impact", ["impact", "hit=", "punch", "slam", "door", "knock", "thud", "crash", "kick=", "drop="]],
  ["siren", ["siren", "police", "ambulance", "firetruck"]],
  ["alarm", ["alarm", "alert", "warning", "buzzer"]],
  ["click", ["click", "tick", "clock", "typing", "keyboard", "tap=", "switch", "button"]],
  ["beep", ["beep", "bleep", "notification", "ping=", "blip", "robot", "computer", "phone", "ring="]],
  ["laser", ["laser", "zap", "blaster", "scifi=", "sci=", "phaser", "shoot", "pew=", "ray="]],
  ["whoosh", ["whoosh", "swoosh", "swish", "swoop", "woosh", "transition", "fly=", "passing=", "swing="]],
  ["bird", ["bird", "chirp", "tweet", "sparrow", "forest", "songbird"]],
  ["engine", ["engine", "motor", "car=", "truck", "hum=", "drone", "machine", "vehicle", "generator"]],
  ["bell", ["bell", "chime", "ding=", "gong", "church", "doorbell"]],
  ["applause", ["applause", "clap", "crowd", "cheer", "audience"]],
];

/** True when `word` matches a keyword `stem` of {@link SFX_KEYWORDS}. */
function matchesStem(word: string, stem: string): boolean {
  if (!stem.endsWith("=")) return word.startsWith(stem);
  const exact = stem.slice(0, -1);
  return word === exact || word === `${exact}s`;
}

/** The kinds (at most 3, in order of priority) matching the prompt's words; `generic` when none do. */
export function sfxKindsOf(prompt: string): SfxKind[] {
  const words = [...wordsOf(prompt).set];
  const kinds: SfxKind[] = [];
  for (const [kind, stems] of SFX_KEYWORDS) {
    if (words.some((w) => stems.some((s) => matchesStem(w, s)))) kinds.push(kind);
    if (kinds.length === 3) break;
  }
  return kinds.length > 0 ? kinds : ["generic"];
}

/** Shortest and longest sound effect, in seconds (spec `duration_seconds`). */
export const SFX_MIN_SEC = 0.5;
export const SFX_MAX_SEC = 22;

/**
 * The duration in seconds of a sound effect: `durationSec` when given, otherwise what the model picks:
 * 2..6 s (0.1 s steps) from a hash of the prompt.
 */
export function sfxDurationSec(prompt: string, durationSec: number | null): number {
  if (durationSec !== null) return durationSec;
  return Math.round((2 + 4 * hashUnit("sfx-length", prompt)) * 10) / 10;
}
