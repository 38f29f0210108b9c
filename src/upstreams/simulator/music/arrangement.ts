/**
 * The music arranger: from the prompt, lyrics and length to a {@link Score} (the plan, the notes of
 * every part, drum hits and sung lines), independent of the sample rate. Composition decisions come
 * from a PRNG seeded with a SHA-256 of the inputs and are drawn in a fixed order.
 */
import { createRng, seedFrom } from "../rng.ts";
import { checkDuration } from "./dsp.ts";
import type { MusicInstrument } from "./instruments.ts";
import { type LyricItem, lyricTimeline, parseLyrics, type SectionKind, type TimedItem } from "./lyrics.ts";
import { composeBass, composeDrums, composeHarmony, composeLead, composeVocals } from "./parts.ts";
import { createSong } from "./song.ts";
import { chooseKey, choosePalette, chooseProgressions, MAJOR, MINOR, NOTE_NAMES, type Progressions, tempoOf } from "./style.ts";
import { hasAny, wordsOf } from "./words.ts";
import type { MusicPlan, MusicSection, Score } from "./score.ts";

export type { MusicPlan, MusicSection, Score, SungNote } from "./score.ts";

/** Options of {@link synthesizeMusic} and {@link planMusic}. */
export interface MusicSynthesisOptions {
  /** Description of the music; drives tempo, key, mode, palette, drums (may be empty). */
  prompt: string;
  /** Lyrics (beta models) or null; `[Instrumental]` alone means no vocal line. */
  lyrics: string | null;
  /** Length of the clip in seconds (0 < d <= 600); the sample count is `round(d x sampleRate)`. */
  durationSec: number;
  /** Output sample rate in Hz (4000..192000). */
  sampleRate: number;
  /** Extra seed material, e.g. the model id: changes the arrangement, not the palette's steering. */
  seed?: string;
}

/**
 * The arrangement of a song for `opts` (see {@link MusicPlan}); deterministic and independent of
 * `opts.sampleRate`. Exposed so that callers and tests can inspect what {@link synthesizeMusic} renders.
 */
export function planMusic(opts: Omit<MusicSynthesisOptions, "sampleRate">): MusicPlan {
  return composeMusic(opts).plan;
}

/** The form of a song: the section of every bar, the lyric items on the real timeline and the sections. */
interface Form {
  nBars: number;
  barSection: SectionKind[];
  /** Lyric items scaled to the song's length (seconds); empty without vocals. */
  timedScaled: TimedItem[];
  sections: MusicSection[];
  vocals: boolean;
}

/**
 * The sections of `D` seconds in bars of `bar` seconds: with lyrics they follow the lyric timeline
 * stretched to the song, otherwise intro, verse/chorus blocks, a bridge and an outro.
 */
function planForm(D: number, bar: number, items: LyricItem[], bpm: number): Form {
  const nBars = Math.max(1, Math.ceil(D / bar) + 1);
  const barSection: SectionKind[] = new Array(nBars);
  const vocals = items.length > 0;
  let timedScaled: TimedItem[] = [];
  if (vocals) {
    const { timed, total } = lyricTimeline(items, bpm);
    const k = D / total;
    timedScaled = timed.map((ti) => ({ item: ti.item, start: ti.start * k, end: ti.end * k }));
    for (let b = 0; b < nBars; b++) {
      const mid = (b + 0.5) * bar;
      let kind: SectionKind = mid < (timedScaled[0]?.start ?? 0) ? "intro" : "outro";
      for (const ti of timedScaled) {
        if (mid >= ti.start && mid < ti.end) {
          kind = ti.item.section === "intro" || ti.item.section === "outro" ? "verse" : ti.item.section;
          break;
        }
      }
      barSection[b] = kind;
    }
  } else {
    const songBars = Math.max(1, Math.ceil(D / bar));
    const edge = songBars >= 24 ? 4 : songBars >= 8 ? 2 : 0;
    const blockLen = songBars - 2 * edge >= 16 ? 8 : 4;
    const order: SectionKind[] = ["verse", "chorus", "verse", "chorus", "bridge", "chorus"];
    for (let b = 0; b < nBars; b++) {
      if (songBars < 4) barSection[b] = "chorus";
      else if (b < edge) barSection[b] = "intro";
      else if (b >= songBars - edge) barSection[b] = "outro";
      else {
        const blk = Math.floor((b - edge) / blockLen);
        barSection[b] = blk < order.length ? order[blk] : blk % 2 === 0 ? "verse" : "chorus";
      }
    }
  }
  const sections: MusicSection[] = [];
  for (let b = 0; b < nBars; b++) {
    const start = b * bar;
    if (start >= D) break;
    const last = sections[sections.length - 1];
    if (last && last.kind === barSection[b]) last.endSec = Math.min(D, start + bar);
    else sections.push({ kind: barSection[b], startSec: start, endSec: Math.min(D, start + bar) });
  }
  return { nBars, barSection, timedScaled, sections, vocals };
}

/** The chord (root scale degree) of each bar from the section's progression; the song ends on the tonic. */
function chordsOfBars(barSection: SectionKind[], progs: Progressions, D: number, bar: number): Int32Array {
  const nBars = barSection.length;
  const barChord = new Int32Array(nBars);
  let idxInSection = 0;
  for (let b = 0; b < nBars; b++) {
    if (b > 0 && barSection[b] !== barSection[b - 1]) idxInSection = 0;
    const s = barSection[b];
    const prog = s === "chorus" ? progs.chorus : s === "bridge" || s === "break" ? progs.bridge : progs.verse;
    barChord[b] = prog[Math.floor(idxInSection / progs.barsPerChord) % prog.length];
    idxInSection++;
  }
  // End on the tonic.
  const lastBar = Math.min(nBars - 1, Math.max(0, Math.floor((D - 0.01) / bar)));
  for (let b = lastBar; b < nBars; b++) barChord[b] = 0;
  return barChord;
}

/** The {@link Score} of `opts` (see {@link MusicSynthesisOptions}; the sample rate is not used). */
export function composeMusic(opts: Omit<MusicSynthesisOptions, "sampleRate">): Score {
  checkDuration(opts.durationSec);
  const w = wordsOf(opts.prompt);
  const D = opts.durationSec;
  const tempoRng = createRng(seedFrom("music-tempo", opts.prompt));
  const rng = createRng(seedFrom("music-plan", opts.seed ?? "", opts.prompt));
  const bpm = tempoOf(w, tempoRng);
  const beatsPerBar: 3 | 4 = hasAny(w, ["waltz", "3/4"]) ? 3 : 4;
  const beat = 60 / bpm;
  const bar = beat * beatsPerBar;
  const { tonic, mode } = chooseKey(w, rng);
  const scale = mode === "major" ? MAJOR : MINOR;
  const { lead, harmony, bass, drums, reverb, swing } = choosePalette(w, rng);
  const progs = chooseProgressions(rng, mode, bpm, drums);
  const { nBars, barSection, timedScaled, sections, vocals } = planForm(D, bar, parseLyrics(opts.lyrics), bpm);
  const barChord = chordsOfBars(barSection, progs, D, bar);
  const grid = { rng, bpm, beatsPerBar, beat, bar, nBars, barSection, barChord, tonic, scale, swing, drums, vocals };
  const song = createSong(grid);
  const harmonyNotes = composeHarmony(song, harmony);
  const bassNotes = composeBass(song);
  const leadNotes = composeLead(song, lead);
  const drumHits = composeDrums(song);
  const voiceLow = hasAny(w, ["male", "man", "baritone", "bass", "deep"])
    ? true
    : hasAny(w, ["female", "woman", "girl", "soprano", "alto"])
      ? false
      : rng() < 0.5;
  const { lines: vocalLines, sung } = composeVocals(song, timedScaled, voiceLow);
  const drumTone = rng();
  const leadGain: Record<MusicInstrument, number> = {
    piano: 0.32,
    epiano: 0.3,
    pluck: 0.3,
    saw: 0.22,
    square: 0.16,
    strings: 0.26,
    pad: 0.22,
    organ: 0.2,
    bell: 0.22,
    flute: 0.28,
  };
  const layers: Score["layers"] = [
    { inst: harmony, gain: leadGain[harmony] * 0.55, notes: harmonyNotes },
    { inst: bass, gain: bass === "sub" ? 0.5 : 0.42, notes: bassNotes },
    { inst: lead, gain: leadGain[lead], notes: leadNotes },
  ];
  const plan: MusicPlan = {
    bpm,
    beatsPerBar,
    tonic,
    mode,
    key: `${NOTE_NAMES[tonic]} ${mode}`,
    lead,
    harmony,
    bass,
    drums,
    progression: progs.verse.slice(),
    sections,
    vocals,
    sungSyllables: sung,
    reverb,
  };
  return { plan, layers, drums: drumHits, vocalLines, drumTone, voiceLow };
}
