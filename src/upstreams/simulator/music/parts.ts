/**
 * The part composers of the music arranger: chords, bass line, lead melody, drum pattern and the sung
 * melody, each as notes (or hits) in seconds on the song's grid. They draw from `song.rng`; the
 * arranger calls them in a fixed order so a prompt always gives the same song.
 */
import type { Score, SungNote } from "./score.ts";
import { grooveOf } from "./drums.ts";
import { clamp, pick } from "./dsp.ts";
import type { MusicInstrument, Note } from "./instruments.ts";
import type { SectionKind, TimedItem } from "./lyrics.ts";
import { chordTones, ENERGY, type Song } from "./song.ts";

/** Chords of `harmony`: sustained, comped, arpeggiated or stabbed, one chord per bar (voiced around C4). */
export function composeHarmony(song: Song, harmony: MusicInstrument): Note[] {
  const { bpm, beatsPerBar, beat, bar, nBars, barSection, barChord, drums, tonicNear, degMidi, swingT, human } = song;
  const harmonyNotes: Note[] = [];
  const harmonyStyle: "sustain" | "comp" | "arp" | "stabs" =
    harmony === "pluck"
      ? "arp"
      : harmony === "piano" || harmony === "epiano"
        ? bpm > 125
          ? "sustain"
          : "comp"
        : (harmony === "saw" || harmony === "square") && drums === "four"
          ? "stabs"
          : "sustain";
  const chordBase = tonicNear(60);
  for (let b = 0; b < nBars; b++) {
    const t0 = b * bar;
    const root = barChord[b];
    const s = barSection[b];
    const e = ENERGY[s];
    const tones = chordTones(root).map((d) => degMidi(d, chordBase));
    const voiced = tones.map((m) => (m < 53 ? m + 12 : m > 67 ? m - 12 : m)).sort((a, b2) => a - b2);
    if (s === "chorus") voiced.push(voiced[0] + 12);
    const v = 0.55 * e;
    if (harmonyStyle === "sustain") {
      if (b > 0 && barChord[b - 1] === root && barSection[b - 1] === s) {
        // Tie over: extend the previous bar's notes.
        for (let i = harmonyNotes.length - voiced.length; i < harmonyNotes.length; i++) {
          harmonyNotes[i].d += bar;
        }
        continue;
      }
      for (const m of voiced) harmonyNotes.push({ t: t0 + human(), d: bar * 0.98, m, v });
    } else if (harmonyStyle === "comp") {
      const hits = beatsPerBar === 3 ? [0, 1, 2] : bpm < 80 ? [0, 2] : [0, 1.5, 2.5];
      hits.forEach((h, i) => {
        const len = (i + 1 < hits.length ? hits[i + 1] : beatsPerBar) - h;
        for (const m of voiced) {
          harmonyNotes.push({ t: t0 + swingT(h) * beat + human(), d: len * beat * 0.95, m, v });
        }
      });
    } else if (harmonyStyle === "arp") {
      const seq = [...voiced, voiced[1] + 12, voiced[2]];
      for (let i = 0; i < beatsPerBar * 2; i++) {
        const m = seq[i % seq.length];
        const t = t0 + swingT(i * 0.5) * beat + human();
        harmonyNotes.push({ t, d: beat, m, v: v * (i % 2 === 0 ? 1 : 0.8) });
      }
    } else {
      for (let i = 0; i < beatsPerBar; i++) {
        for (const m of voiced) harmonyNotes.push({ t: t0 + (i + 0.5) * beat, d: beat * 0.3, m, v });
      }
    }
  }
  return harmonyNotes;
}

/** The bass line: roots and fifths in a rhythm that follows the drum style (none during the intro's start). */
export function composeBass(song: Song): Note[] {
  const { beatsPerBar, beat, bar, nBars, barSection, barChord, drums, tonicNear, degMidi, swingT, human } = song;
  const bassNotes: Note[] = [];
  const bassBase = tonicNear(38);
  for (let b = 0; b < nBars; b++) {
    const s = barSection[b];
    if (s === "intro" && b + 1 < nBars && barSection[b + 1] === "intro") continue;
    const t0 = b * bar;
    const root = barChord[b];
    let rm = degMidi(root, bassBase);
    if (rm > bassBase + 6) rm -= 12;
    const fifth = rm + 7;
    const v = 0.8 * ENERGY[s];
    const add = (beatPos: number, lenBeats: number, m: number, vel = v) =>
      bassNotes.push({ t: t0 + swingT(beatPos) * beat + human(), d: lenBeats * beat * 0.92, m, v: vel });
    if (s === "intro" || drums === "none" || beatsPerBar === 3) {
      add(0, beatsPerBar * 0.75, rm);
      if (beatsPerBar === 4 && drums !== "none") add(3, 1, fifth, v * 0.8);
      continue;
    }
    switch (drums) {
      case "rock":
        for (let i = 0; i < 8; i++) add(i * 0.5, 0.45, i === 7 ? fifth : rm, v * (i % 2 === 0 ? 1 : 0.8));
        break;
      case "four":
        for (let i = 0; i < 4; i++) add(i + 0.5, 0.45, i === 3 ? rm + 12 : rm);
        break;
      case "hiphop":
        add(0, 1.5, rm);
        add(1.75, 0.25, rm, v * 0.7);
        add(2.5, 1, fifth, v * 0.85);
        break;
      case "halftime":
        add(0, 2.5, rm);
        add(2.75, 1, rm);
        break;
      default:
        add(0, 2, rm);
        add(2, 2, fifth, v * 0.85);
    }
  }
  return bassNotes;
}

/** The lead melody of `lead`: a 2-bar motif per section kind, snapped to the chords (fills only with vocals). */
export function composeLead(song: Song, lead: MusicInstrument): Note[] {
  const { rng, beatsPerBar, beat, bar, nBars, barSection, barChord, vocals, tonicNear, degMidi, snapToChord, swingT, human } = song;
  const leadNotes: Note[] = [];
  const leadBase = tonicNear(67) + (lead === "bell" ? 12 : 0);
  const motifs = new Map<SectionKind, { beat: number; len: number; deg: number }[]>();
  const makeMotif = (kind: SectionKind): { beat: number; len: number; deg: number }[] => {
    const out: { beat: number; len: number; deg: number }[] = [];
    const total = beatsPerBar * 2;
    const lens = kind === "chorus" ? [0.5, 1, 1, 1.5, 2] : [0.5, 0.5, 1, 1, 1.5, 2];
    let pos = 0;
    let deg = kind === "chorus" ? 4 : kind === "bridge" ? 3 : 2;
    while (pos < total - 0.01) {
      let len = pick(rng, lens);
      if (pos + len > total) len = total - pos;
      if (rng() < 0.15 && pos > 0) {
        pos += len;
        continue;
      }
      deg += pick(rng, [-2, -1, -1, 0, 1, 1, 2, 3]);
      deg = clamp(deg, kind === "chorus" ? 2 : 0, kind === "chorus" ? 11 : 9);
      out.push({ beat: pos, len, deg });
      pos += len;
    }
    return out;
  };
  const leadOn = (s: SectionKind): boolean =>
    vocals ? s === "intro" || s === "break" || s === "outro" : s !== "intro" || nBars < 8;
  let idxInSection = 0;
  for (let b = 0; b < nBars; b++) {
    const s = barSection[b];
    idxInSection = b > 0 && barSection[b - 1] === s ? idxInSection + 1 : 0;
    if (!leadOn(s)) continue;
    const key = s === "outro" || s === "intro" ? "verse" : s === "break" ? "chorus" : s;
    let motif = motifs.get(key);
    if (!motif) {
      motif = makeMotif(key);
      motifs.set(key, motif);
    }
    const half = idxInSection % 2;
    const variant = Math.floor(idxInSection / 2) % 2 === 1;
    const root = barChord[b];
    for (let i = 0; i < motif.length; i++) {
      const mn = motif[i];
      if (Math.floor(mn.beat / beatsPerBar) !== half) continue;
      const inBar = mn.beat - half * beatsPerBar;
      const strong = inBar % 1 === 0 && inBar % 2 === 0;
      let deg = strong ? snapToChord(mn.deg, root) : mn.deg;
      if (variant && i === motif.length - 1) deg = snapToChord(deg - 1, root);
      const v = (s === "chorus" ? 0.9 : 0.75) * (vocals ? 0.6 : 1);
      const t = b * bar + swingT(inBar) * beat + human();
      leadNotes.push({ t, d: mn.len * beat * 0.9, m: degMidi(deg, leadBase), v });
    }
  }
  return leadNotes;
}

/** Drum hits of the song's style: hats in the intro, crashes on choruses, fills at section ends. */
export function composeDrums(song: Song): Score["drums"] {
  const { beatsPerBar, beat, bar, nBars, barSection, swing, drums, human } = song;
  const drumHits: Score["drums"] = [];
  if (drums !== "none") {
    const g = grooveOf(drums, beatsPerBar);
    const steps = beatsPerBar * 4;
    const step = beat / 4;
    for (let b = 0; b < nBars; b++) {
      const s = barSection[b];
      const t0 = b * bar;
      const e = ENERGY[s];
      const sectionStart = b === 0 || barSection[b - 1] !== s;
      const sectionEnd = b + 1 < nBars && barSection[b + 1] !== s;
      if (s === "intro") {
        // Hats only, joined by the kick in the last intro bar.
        for (const st of g.hat) drumHits.push({ kind: "hat", t: t0 + st * step, v: 0.35 });
        if (sectionEnd) for (const st of g.kick) drumHits.push({ kind: "kick", t: t0 + st * step, v: 0.7 });
        continue;
      }
      if (sectionStart && (s === "chorus" || s === "break")) drumHits.push({ kind: "crash", t: t0, v: 0.6 });
      const sparse = s === "bridge";
      for (const st of g.kick) {
        if (sparse && st !== 0) continue;
        drumHits.push({ kind: "kick", t: t0 + st * step + human() * 0.3, v: 0.95 * e });
      }
      for (const st of g.snare) {
        if (sectionEnd && st >= steps - 4) continue;
        drumHits.push({ kind: "snare", t: t0 + st * step + human() * 0.5, v: 0.75 * e });
      }
      if (!sparse) {
        for (const st of g.hat) {
          const sw = st % 4 === 2 ? swing * beat : 0;
          const t = t0 + st * step + sw + human() * 0.5;
          drumHits.push({ kind: "hat", t, v: (st % 4 === 0 ? 0.5 : 0.35) * e });
        }
        for (const st of g.open) drumHits.push({ kind: "open", t: t0 + st * step, v: 0.3 * e });
      }
      if (sectionEnd) {
        // A short snare fill over the last beat.
        for (let i = 0; i < 4; i++) {
          drumHits.push({ kind: "snare", t: t0 + (steps - 4 + i) * step, v: (0.4 + 0.12 * i) * e });
        }
      }
    }
  }
  return drumHits;
}

/**
 * The sung melody: each lyric line's syllables on a beat grid inside the line's span (`timed`, seconds),
 * following the chords; `low` for a low voice. Returns the lines and the number of syllables sung.
 */
export function composeVocals(song: Song, timed: TimedItem[], low: boolean): { lines: SungNote[][]; sung: number } {
  const { rng, beat, bar, nBars, barChord, vocals, tonicNear, degMidi, snapToChord } = song;
  const vocalLines: SungNote[][] = [];
  let sung = 0;
  if (vocals) {
    const vocalBase = tonicNear(low ? 50 : 60);
    let deg = 2;
    for (const ti of timed) {
      if (ti.item.kind !== "line") continue;
      const syls = ti.item.syllables;
      const chorus = ti.item.section === "chorus";
      const startBeat = Math.ceil(ti.start / beat - 0.25);
      const endBeat = Math.max(startBeat + 1, Math.floor(ti.end / beat));
      const span = endBeat - startBeat;
      const n = syls.length;
      let unit = 0;
      for (const u of [2, 1.5, 1, 0.75, 0.5, 0.25]) {
        if ((n + 1) * u <= span * 0.9) {
          unit = u;
          break;
        }
      }
      if (unit === 0) unit = (span * 0.9) / (n + 1);
      const line: SungNote[] = [];
      deg = chorus ? 4 + Math.floor(rng() * 3) : 1 + Math.floor(rng() * 3);
      for (let i = 0; i < n; i++) {
        const tBeat = startBeat + i * unit;
        const t = tBeat * beat;
        const lenBeats = i === n - 1 ? unit * 2 : unit;
        const bb = clamp(Math.floor(t / bar), 0, nBars - 1);
        const root = barChord[bb];
        deg += pick(rng, chorus ? [-2, -1, 0, 1, 1, 2, 3] : [-2, -1, -1, 0, 0, 1, 1, 2]);
        deg = clamp(deg, chorus ? 2 : -1, chorus ? 10 : 7);
        const strong = Math.abs(tBeat - Math.round(tBeat)) < 1e-6;
        if (strong || i === n - 1) deg = snapToChord(deg, root);
        line.push({ t, d: lenBeats * beat * 0.88, m: degMidi(deg, vocalBase), v: 1, syl: syls[i] });
      }
      sung += n;
      vocalLines.push(line);
    }
  }
  return { lines: vocalLines, sung };
}
