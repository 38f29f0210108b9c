/**
 * Style decisions of the music arranger, steered by prompt words: tempo, key and mode, instrument
 * palette, drum style, reverb, swing and chord progressions. Every draw of `rng` happens in a fixed
 * order (the callers keep it), so a prompt always gives the same song.
 */
import type { Rng } from "../rng.ts";
import { clamp, pick } from "./dsp.ts";
import type { BassInstrument, DrumStyle, MusicInstrument } from "./instruments.ts";
import { hasAny, type Words } from "./words.ts";

/** Pitch-class names (0 = C). */
export const NOTE_NAMES = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"];
/** Scale degrees (semitones above the tonic) of the major and minor modes. */
export const MAJOR = [0, 2, 4, 5, 7, 9, 11];
export const MINOR = [0, 2, 3, 5, 7, 8, 10];
/** Chord progressions (scale-degree roots, one per chord) of verses and choruses, and of bridges. */
const MAJOR_PROGS = [
  [0, 4, 5, 3],
  [0, 5, 3, 4],
  [0, 3, 4, 3],
  [5, 3, 0, 4],
  [0, 2, 3, 4],
  [0, 3, 5, 4],
];
const MINOR_PROGS = [
  [0, 5, 2, 6],
  [0, 3, 4, 0],
  [0, 6, 5, 6],
  [0, 3, 5, 4],
  [0, 5, 3, 4],
  [0, 2, 6, 3],
];
const MAJOR_BRIDGES = [
  [3, 4, 5, 5],
  [5, 3, 4, 4],
  [3, 0, 4, 4],
];
const MINOR_BRIDGES = [
  [5, 6, 3, 4],
  [3, 5, 6, 6],
  [5, 3, 6, 4],
];

/** Prompt words that set tempo and style. */
const FAST = ["fast", "upbeat", "energetic", "driving", "intense", "frantic", "hyper", "racing", "uptempo"];
const SLOW = [
  "slow",
  "calm",
  "relaxing",
  "relaxed",
  "peaceful",
  "gentle",
  "ballad",
  "sleep",
  "meditation",
  "lullaby",
];
const DANCE = ["house", "techno", "edm", "dance", "disco", "trance", "club", "electro"];
const FILMIC = ["cinematic", "orchestral", "classical", "epic", "film", "soundtrack"];

/** Tempo in BPM: an explicit "N bpm" in the prompt, else a genre range moved by `rng`, then fast/slow words. */
export function tempoOf(w: Words, rng: Rng): number {
  const m = /(\d{2,3})\s*bpm/.exec(w.text);
  if (m) return clamp(Number(m[1]), 50, 200);
  const r = rng();
  let bpm: number;
  if (hasAny(w, ["drum and bass", "dnb", "jungle", "drumnbass"])) bpm = 165 + 10 * r;
  else if (hasAny(w, DANCE)) bpm = 118 + 14 * r;
  else if (hasAny(w, ["punk", "metal", "thrash"])) bpm = 140 + 40 * r;
  else if (hasAny(w, ["rock", "grunge", "indie"])) bpm = 105 + 40 * r;
  else if (hasAny(w, ["hip hop", "hiphop", "rap", "boom bap", "trap"])) bpm = 80 + 15 * r;
  else if (hasAny(w, ["lofi", "lo fi", "chillhop", "jazzhop"])) bpm = 70 + 18 * r;
  else if (hasAny(w, ["ambient", "drone", "space", "atmospheric"])) bpm = 60 + 20 * r;
  else if (hasAny(w, ["reggae", "dub"])) bpm = 70 + 15 * r;
  else if (hasAny(w, ["jazz", "swing", "bebop"])) bpm = 100 + 50 * r;
  else if (hasAny(w, ["waltz"])) bpm = 90 + 60 * r;
  else if (hasAny(w, FILMIC)) bpm = 70 + 40 * r;
  else if (hasAny(w, ["pop", "funk", "country", "folk"])) bpm = 95 + 30 * r;
  else bpm = 82 + 48 * r;
  if (hasAny(w, FAST)) bpm *= 1.22;
  if (hasAny(w, SLOW)) bpm *= 0.78;
  return Math.round(clamp(bpm, 55, 190));
}

/**
 * The arrangement of a song for `opts` (see {@link MusicPlan}); deterministic and independent of
 * `opts.sampleRate`. Exposed so that callers and tests can inspect what {@link synthesizeMusic} renders.

/** The key of a song: `tonic` pitch class (0 = C) and mode. */
export interface SongKey {
  tonic: number;
  mode: "major" | "minor";
}

/** The key: a random tonic and mode unless mood words or a "key of ..." / "A minor" phrase decide. */
export function chooseKey(w: Words, rng: Rng): SongKey {
  let mode: "major" | "minor";
  let tonic = Math.floor(rng() * 12);
  const minorWords = ["sad", "dark", "melancholy", "melancholic", "minor", "somber", "sombre", "moody"];
  const minorWords2 = ["gloomy", "tragic", "eerie", "haunting", "tense", "mysterious", "sorrowful", "lonely"];
  const majorWords = ["happy", "bright", "cheerful", "major", "uplifting", "joyful", "sunny", "fun"];
  const majorWords2 = ["playful", "hopeful", "summer", "triumphant", "festive"];
  if (hasAny(w, minorWords) || hasAny(w, minorWords2) || hasAny(w, ["horror"])) mode = "minor";
  else if (hasAny(w, majorWords) || hasAny(w, majorWords2)) mode = "major";
  else mode = rng() < 0.5 ? "major" : "minor";
  const keyMatch =
    /\skey(?: of)?\s+([a-g])(#|sharp|b|flat)?(?:\s*(major|minor|maj|min))?\s/.exec(w.text) ??
    /\s([a-g])(#|sharp|b|flat)?\s*(major|minor|maj|min)\s/.exec(w.text) ??
    /\sin\s+([b-g])(#|sharp|b|flat)?()\s/.exec(w.text);
  if (keyMatch) {
    tonic = NOTE_NAMES.indexOf(keyMatch[1].toUpperCase());
    if (keyMatch[2] === "#" || keyMatch[2] === "sharp") tonic = (tonic + 1) % 12;
    if (keyMatch[2] === "b" || keyMatch[2] === "flat") tonic = (tonic + 11) % 12;
    if (keyMatch[3]) mode = keyMatch[3].startsWith("maj") ? "major" : "minor";
  }
  return { tonic, mode };
}

/** Instruments, drums and effects of a song. */
export interface Palette {
  lead: MusicInstrument;
  harmony: MusicInstrument;
  bass: BassInstrument;
  drums: DrumStyle;
  /** Reverb send 0..1. */
  reverb: number;
  /** Delay of off-beat eighths, in beats (0: straight). */
  swing: number;
}

/** The palette from genre, instrument and mood words (random picks where the prompt says nothing). */
export function choosePalette(w: Words, rng: Rng): Palette {
  const electronic = hasAny(w, ["synth", "electronic", "synthwave", "80s"]) || hasAny(w, DANCE);
  const ambient = hasAny(w, ["ambient", "drone", "dreamy", "space", "atmospheric", "ethereal", "meditation"]);
  const orchestralWords = ["strings", "violin", "cello", "orchestral", "orchestra", "cinematic", "epic"];
  const orchestral = hasAny(w, orchestralWords);
  let lead: MusicInstrument;
  let harmony: MusicInstrument;
  if (hasAny(w, ["piano", "keys"])) lead = "piano";
  else if (hasAny(w, ["rhodes", "electric piano", "lofi", "lo fi", "jazz", "soul", "rnb"])) lead = "epiano";
  else if (hasAny(w, ["guitar", "acoustic", "folk", "country", "bossa", "ukulele"])) lead = "pluck";
  else if (hasAny(w, ["chiptune", "8bit", "8 bit", "retro", "arcade", "videogame", "video game"])) {
    lead = "square";
  }
  else if (electronic) lead = "saw";
  else if (orchestral || hasAny(w, ["classical", "film", "soundtrack"])) lead = "strings";
  else if (hasAny(w, ["flute", "whistle", "woodwind", "pan"])) lead = "flute";
  else if (hasAny(w, ["bell", "bells", "chime", "chimes", "music box", "glockenspiel", "celesta", "lullaby"]))
    lead = "bell";
  else if (hasAny(w, ["organ", "church", "gospel", "hymn"])) lead = "organ";
  else if (ambient) lead = pick(rng, ["bell", "flute", "pad"] as const);
  else lead = pick(rng, ["piano", "pluck", "saw", "epiano", "flute", "bell", "strings"] as const);
  if (ambient) harmony = "pad";
  else if (orchestral) harmony = "strings";
  else if (lead === "piano" || lead === "epiano" || lead === "organ" || lead === "pluck") harmony = lead;
  else if (lead === "square") harmony = "square";
  else if (lead === "saw") harmony = "pad";
  else harmony = pick(rng, ["piano", "pad", "strings", "pluck"] as const);
  if (hasAny(w, ["rock", "punk", "metal", "grunge"]) && lead !== "piano") harmony = "saw";

  let drums: DrumStyle;
  const noDrums =
    hasAny(w, ["no drums", "without drums", "drumless", "no percussion", "solo", "a cappella"]) ||
    (ambient && !hasAny(w, ["drums", "beat", "drum"])) ||
    hasAny(w, ["classical", "lullaby", "sleep"]);
  if (noDrums) drums = "none";
  else if (hasAny(w, DANCE)) drums = "four";
  else if (hasAny(w, ["trap", "dubstep", "halftime", "half time"])) drums = "halftime";
  else if (hasAny(w, ["hip hop", "hiphop", "rap", "boom bap", "lofi", "lo fi", "chillhop", "jazzhop"]))
    drums = "hiphop";
  else if (hasAny(w, ["rock", "punk", "metal", "grunge", "indie", "pop", "funk", "drums", "drum", "beat"]))
    drums = "rock";
  else if (hasAny(w, ["folk", "acoustic", "jazz", "bossa", "reggae", "country", "calm", "chill", "ballad"]))
    drums = "light";
  else if (orchestral || hasAny(w, ["piano solo", "peaceful", "gentle"])) {
    drums = rng() < 0.6 ? "none" : "light";
  }
  else drums = pick(rng, ["rock", "light", "hiphop", "four", "rock"] as const);

  let bass: BassInstrument;
  if (electronic || drums === "four" || drums === "halftime") bass = "synth";
  else if (hasAny(w, ["rock", "funk", "jazz", "pop", "indie", "folk", "country", "reggae", "punk", "metal"]))
    bass = "finger";
  else if (ambient || orchestral || drums === "none") bass = "sub";
  else bass = pick(rng, ["sub", "finger", "synth"] as const);

  const reverb = ambient
    ? 0.55
    : orchestral || hasAny(w, ["cathedral", "church", "hall", "reverb", "dreamy"])
      ? 0.4
      : hasAny(w, ["lofi", "lo fi", "rock", "punk", "dry"])
        ? 0.12
        : 0.22;
  const swingWords = ["jazz", "lofi", "lo fi", "swing", "shuffle", "blues", "hiphop", "hip hop", "jazzhop"];
  const swing = hasAny(w, swingWords) ? 0.16 : 0;
  return { lead, harmony, bass, drums, reverb, swing };
}

/** The chord progressions of a song and how many bars each chord lasts. */
export interface Progressions {
  verse: number[];
  chorus: number[];
  bridge: number[];
  barsPerChord: number;
}

/** Verse, chorus (different from the verse) and bridge progressions; fast songs hold chords two bars. */
export function chooseProgressions(rng: Rng, mode: "major" | "minor", bpm: number, drums: DrumStyle): Progressions {
  const progs = mode === "major" ? MAJOR_PROGS : MINOR_PROGS;
  const verseProg = pick(rng, progs);
  let chorusProg = pick(rng, progs);
  if (chorusProg === verseProg) chorusProg = progs[(progs.indexOf(verseProg) + 1) % progs.length];
  const bridgeProg = pick(rng, mode === "major" ? MAJOR_BRIDGES : MINOR_BRIDGES);
  const barsPerChord = bpm >= 150 && drums !== "halftime" ? 2 : 1;
  return { verse: verseProg, chorus: chorusProg, bridge: bridgeProg, barsPerChord };
}
