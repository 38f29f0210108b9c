/**
 * Lyrics for the music synthesizer: section tags, sung syllables, the nominal timeline of lines and tags,
 * and the song length a beta model derives from its lyrics.
 */
import { createRng, seedFrom } from "../rng.ts";
import { clamp, hashUnit } from "./dsp.ts";
import { tempoOf } from "./style.ts";
import { hasAny, wordsOf } from "./words.ts";

/** Song section kinds; `break` is an instrumental break (an `[Instrumental]` tag among lyrics). */
export type SectionKind = "intro" | "verse" | "chorus" | "bridge" | "break" | "outro";

/** A sung syllable as parsed from lyrics: its onset consonants and its vowel letters. */
export interface Syllable {
  onset: string;
  vowel: string;
}

export type LyricItem =
  | { kind: "line"; section: SectionKind; syllables: Syllable[] }
  | { kind: "tag"; section: SectionKind };

const LATIN_VOWELS = "aeiouy";

/** Splits a lyric line into sung syllables (vowel groups with their onsets; other scripts per letter). */
function syllablesOf(line: string): Syllable[] {
  const out: Syllable[] = [];
  const plain = line.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  for (const word of plain.split(/[^\p{L}\p{N}']+/u)) {
    if (word.length === 0) continue;
    if (/^[a-z']+$/.test(word)) {
      const groups = word.match(/[^aeiouy]*[aeiouy]+/g);
      if (!groups) {
        out.push({ onset: word.replace(/'/g, ""), vowel: "u" });
        continue;
      }
      for (const g of groups) {
        const m = /^([^aeiouy]*)([aeiouy]+)$/.exec(g);
        out.push({ onset: (m?.[1] ?? "").replace(/'/g, ""), vowel: m?.[2] ?? "a" });
      }
    } else if (/^\d+$/.test(word)) {
      for (const d of word) out.push({ onset: "", vowel: LATIN_VOWELS[Number(d) % 5] });
    } else {
      // Other scripts: one syllable per letter, with a vowel chosen from the code point.
      for (const ch of word) {
        const cp = ch.codePointAt(0) ?? 0;
        out.push({ onset: cp % 3 === 0 ? "" : "nmklsth"[cp % 7], vowel: LATIN_VOWELS[cp % 5] });
      }
    }
  }
  return out;
}

/** The section kind a lyric tag such as `[Chorus]` opens. */
function sectionOfTag(tag: string): SectionKind {
  const t = tag.toLowerCase();
  if (/chorus|hook|refrain/.test(t)) return "chorus";
  if (/bridge/.test(t)) return "bridge";
  if (/intro/.test(t)) return "intro";
  if (/outro|ending|end/.test(t)) return "outro";
  if (/instrumental|solo|break|interlude/.test(t)) return "break";
  return "verse";
}

/** True when `lyrics` is exactly `[Instrumental]`, ignoring case and whitespace. */
export function isInstrumentalOnly(lyrics: string | null): boolean {
  return lyrics !== null && lyrics.replace(/\s+/g, "").toLowerCase() === "[instrumental]";
}

/** Tags and singable lines of `lyrics`; empty when nothing is sung (see {@link musicHasVocals}). */
export function parseLyrics(lyrics: string | null): LyricItem[] {
  if (lyrics === null || isInstrumentalOnly(lyrics)) return [];
  const items: LyricItem[] = [];
  let section: SectionKind = "verse";
  for (const raw of lyrics.split(/\r?\n/)) {
    let line = raw.trim();
    for (;;) {
      const m = /^\[([^\]]*)\]\s*/.exec(line);
      if (!m) break;
      section = sectionOfTag(m[1]);
      items.push({ kind: "tag", section });
      line = line.slice(m[0].length);
    }
    if (line.length === 0) continue;
    const syllables = syllablesOf(line);
    if (syllables.length > 0) items.push({ kind: "line", section, syllables });
  }
  return items.some((i) => i.kind === "line") ? items : [];
}

/**
 * True when {@link synthesizeMusic} renders a vocal line for `lyrics`: lyrics are present, are not
 * `[Instrumental]` alone (ignoring case and whitespace) and contain at least one singable syllable.
 */
export function musicHasVocals(lyrics: string | null): boolean {
  return parseLyrics(lyrics).length > 0;
}

/** Intro and outro lengths (seconds) of the nominal lyric timeline. */
const LYRIC_INTRO_SEC = 6;
const LYRIC_OUTRO_SEC = 6;
/** Extra seconds a section tag adds (an instrumental bar or more between sections). */
const TAG_SEC: Record<SectionKind, number> = {
  intro: 4,
  verse: 1,
  chorus: 2,
  bridge: 3,
  break: 6,
  outro: 4,
};

/** Seconds a lyric line of `syllables` syllables takes at `tempoFactor` (2.5..3.5 s). */
function lyricLineSec(syllables: number, tempoFactor: number): number {
  return clamp((1.5 + 0.2 * syllables) * tempoFactor, 2.5, 3.5);
}

/** A lyric item placed on the nominal timeline (seconds). */
export interface TimedItem {
  item: LyricItem;
  start: number;
  end: number;
}

/** The nominal lyric timeline: intro, each item's span, outro; `total` in seconds. */
export function lyricTimeline(items: LyricItem[], bpm: number): { timed: TimedItem[]; total: number } {
  const tempoFactor = clamp(Math.sqrt(110 / bpm), 0.85, 1.2);
  let t = LYRIC_INTRO_SEC;
  const timed: TimedItem[] = [];
  for (const item of items) {
    const d = item.kind === "line" ? lyricLineSec(item.syllables.length, tempoFactor) : TAG_SEC[item.section];
    timed.push({ item, start: t, end: t + d });
    t += d;
  }
  return { timed, total: t + LYRIC_OUTRO_SEC };
}

/** Length in seconds a beta model picks from the prompt alone: 30..90 s (whole seconds). */
function promptLengthSec(prompt: string): number {
  const w = wordsOf(prompt);
  const u = hashUnit("music-length", prompt);
  if (hasAny(w, ["short", "jingle", "sting", "loop", "brief"])) return Math.round(30 + 15 * u);
  if (hasAny(w, ["long", "epic", "extended", "journey", "symphony"])) return Math.round(70 + 20 * u);
  return Math.round(30 + 60 * u);
}

/** Shortest and longest song a beta model produces, in seconds. */
export const MUSIC_LYRICS_MIN_SEC = 10;
export const MUSIC_LYRICS_MAX_SEC = 300;

/**
 * Length in seconds that a beta music model picks (spec "POST /v1/audio/music": the model derives the
 * length from the lyrics). With lyrics: a 6 s intro and a 6 s outro, 2.5..3.5 s per lyric line (more
 * syllables and slower prompts give longer lines) and 1..6 s per section tag (`[verse]` 1, `[chorus]`
 * 2, `[bridge]` 3, `[Instrumental]` among lyrics 6), clamped to 10..300 and rounded to 0.1 s. Without
 * singable lyrics (null, empty, tags only or `[Instrumental]` alone): 30..90 s derived from the
 * prompt's hash (about 30..45 s for "short", 70..90 s for "long"/"epic"). Deterministic.
 */
export function musicDurationFromLyrics(lyrics: string | null, prompt: string): number {
  const items = parseLyrics(lyrics);
  if (items.length === 0) return promptLengthSec(prompt);
  const bpm = tempoOf(wordsOf(prompt), createRng(seedFrom("music-tempo", prompt)));
  const { total } = lyricTimeline(items, bpm);
  return clamp(Math.round(total * 10) / 10, MUSIC_LYRICS_MIN_SEC, MUSIC_LYRICS_MAX_SEC);
}
