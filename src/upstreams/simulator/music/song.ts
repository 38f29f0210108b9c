/**
 * The grid and harmony of a song as the part composers ({@link composeHarmony} and the others in
 * `parts.ts`) see it, with the music-theory helpers bound to its key.
 */
import type { Rng } from "../rng.ts";
import type { DrumStyle } from "./instruments.ts";
import type { SectionKind } from "./lyrics.ts";

/** Loudness of the parts in each section kind (velocity multiplier). */
export const ENERGY: Record<SectionKind, number> = {
  intro: 0.55,
  verse: 0.8,
  chorus: 1,
  bridge: 0.75,
  break: 0.85,
  outro: 0.65,
};

/** Scale degrees of the triad on `root`. */
export function chordTones(root: number): number[] {
  return [root, root + 2, root + 4];
}

/** What {@link createSong} needs: tempo and bars (seconds), sections and chords per bar, key, style. */
export interface SongGrid {
  /** The arrangement's random source; every part draws from it in a fixed order. */
  rng: Rng;
  bpm: number;
  beatsPerBar: 3 | 4;
  /** Seconds per beat and per bar. */
  beat: number;
  bar: number;
  nBars: number;
  barSection: SectionKind[];
  /** Root scale degree of the chord of each bar. */
  barChord: Int32Array;
  /** Pitch class of the tonic (0 = C) and the semitones of the scale's degrees. */
  tonic: number;
  scale: readonly number[];
  /** Delay of off-beat eighths in beats. */
  swing: number;
  drums: DrumStyle;
  vocals: boolean;
}

/** A {@link SongGrid} with its theory and timing helpers. */
export interface Song extends SongGrid {
  /** MIDI pitch of the tonic nearest to `center` (within -6..+5 semitones). */
  tonicNear(center: number): number;
  /** MIDI pitch of scale degree `deg` (0 = tonic, may be negative or above 6) above `tonicMidi`. */
  degMidi(deg: number, tonicMidi: number): number;
  /** The chord tone of `root` nearest to scale degree `deg`. */
  snapToChord(deg: number, root: number): number;
  /** A beat position delayed by the swing when it is an off-beat eighth. */
  swingT(beatPos: number): number;
  /** A tiny random timing offset in seconds (draws from `rng`). */
  human(): number;
}

/** Binds the helpers of {@link Song} to `grid`. */
export function createSong(grid: SongGrid): Song {
  const { tonic, scale, swing, rng } = grid;
  const tonicNear = (center: number): number => center + ((((tonic - center) % 12) + 18) % 12) - 6;
  /** MIDI pitch of scale degree `deg` (0 = tonic, may be negative or above 6) above `tonicMidi`. */
  const degMidi = (deg: number, tonicMidi: number): number => {
    const o = Math.floor(deg / 7);
    return tonicMidi + scale[((deg % 7) + 7) % 7] + 12 * o;
  };
  const snapToChord = (deg: number, root: number): number => {
    let best = deg;
    let bestD = 99;
    for (const ct of chordTones(root)) {
      for (let o = -2; o <= 2; o++) {
        const c = ct + 7 * o;
        const d = Math.abs(c - deg);
        if (d < bestD) {
          bestD = d;
          best = c;
        }
      }
    }
    return best;
  };
  const swingT = (beatPos: number): number => {
    const frac = beatPos - Math.floor(beatPos);
    return Math.abs(frac - 0.5) < 1e-6 ? beatPos + swing : beatPos;
  };
  const human = (): number => (rng() - 0.5) * 0.01;
  return { ...grid, tonicNear, degMidi, snapToChord, swingT, human };
}
