/**
 * The types of a composed song, shared by the arranger (arrangement.ts) and the part composers
 * (parts.ts, vocals.ts): the {@link MusicPlan}, its sections, sung notes and the whole {@link Score}.
 * Types only, so the part composers need not import the arranger that calls them.
 */
import type { DrumKit } from "./drums.ts";
import type { BassInstrument, DrumStyle, MusicInstrument, Note } from "./instruments.ts";
import type { SectionKind, Syllable } from "./lyrics.ts";

/** A section of the song: kind and time span in seconds. */
export interface MusicSection {
  kind: SectionKind;
  startSec: number;
  endSec: number;
}

/**
 * The arrangement {@link synthesizeMusic} renders; independent of the sample rate. `tonic` is a pitch
 * class (0 = C), `progression` the scale-degree roots (0-based) of the verse chords, one per bar.
 */
export interface MusicPlan {
  bpm: number;
  beatsPerBar: 3 | 4;
  tonic: number;
  mode: "major" | "minor";
  /** Human-readable key, e.g. "A minor". */
  key: string;
  lead: MusicInstrument;
  harmony: MusicInstrument;
  bass: BassInstrument;
  drums: DrumStyle;
  progression: number[];
  sections: MusicSection[];
  /** Whether a vocal line following the lyrics is rendered. */
  vocals: boolean;
  /** Number of lyric syllables sung (0 without vocals). */
  sungSyllables: number;
  /** Reverb send 0..1. */
  reverb: number;
}

/** A sung syllable on the timeline: start/length in seconds, MIDI pitch, vowel and onset. */
export interface SungNote extends Note {
  syl: Syllable;
}

/** Everything {@link synthesizeMusic} renders: the plan, the instrument layers, drum hits and sung lines. */
export interface Score {
  plan: MusicPlan;
  layers: { inst: MusicInstrument | BassInstrument; gain: number; notes: Note[] }[];
  drums: { kind: keyof DrumKit; t: number; v: number }[];
  vocalLines: SungNote[][];
  drumTone: number;
  voiceLow: boolean;
}
