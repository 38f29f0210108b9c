/** The phones of the speech synthesizer: vowel and consonant sounds per letter, pauses, time weights. */

/** Classes of speech sounds, with a pause and a phrase end (punctuation). */
export type PhoneKind = "vowel" | "approx" | "nasal" | "vfric" | "fric" | "stop" | "vstop" | "pause" | "stop_phrase";

/** A speech sound: its class, formants and noise band. */
export interface Phone {
  kind: PhoneKind;
  /** Formants F1..F3 in Hz (voiced kinds). */
  f: readonly [number, number, number];
  /** Noise centre frequency and bandwidth in Hz (noisy kinds). */
  nf: number;
  nbw: number;
  /** Relative loudness. */
  amp: number;
}

/** Formants F1..F3 (Hz) of the vowels. */
const VOWELS: Record<string, readonly [number, number, number]> = {
  a: [730, 1090, 2440],
  e: [530, 1840, 2480],
  i: [300, 2250, 3000],
  o: [570, 840, 2410],
  u: [320, 870, 2240],
  y: [350, 1900, 2600],
};
const VOWEL_LIST = Object.values(VOWELS);
export const NEUTRAL: readonly [number, number, number] = [500, 1500, 2500];

/** A {@link Phone} record. */
function phone(kind: PhoneKind, f: readonly [number, number, number], nf: number, nbw: number, amp: number) {
  return { kind, f, nf, nbw, amp } satisfies Phone;
}

/** Consonant letters and their sounds. */
const CONSONANTS: Record<string, Phone> = {
  l: phone("approx", [360, 1300, 2700], 0, 0, 0.6),
  r: phone("approx", [420, 1300, 1600], 0, 0, 0.6),
  w: phone("approx", [300, 700, 2200], 0, 0, 0.55),
  j: phone("approx", [280, 2200, 2900], 0, 0, 0.55),
  m: phone("nasal", [250, 1100, 2300], 0, 0, 0.4),
  n: phone("nasal", [250, 1600, 2500], 0, 0, 0.4),
  v: phone("vfric", [300, 1200, 2400], 4000, 3000, 0.45),
  z: phone("vfric", [300, 1600, 2500], 5500, 2000, 0.45),
  s: phone("fric", NEUTRAL, 6000, 2000, 0.5),
  c: phone("fric", NEUTRAL, 5500, 2200, 0.45),
  x: phone("fric", NEUTRAL, 3000, 2500, 0.4),
  f: phone("fric", NEUTRAL, 4500, 4000, 0.25),
  h: phone("fric", NEUTRAL, 1500, 2500, 0.2),
  p: phone("stop", [400, 900, 2300], 1000, 1500, 0.45),
  t: phone("stop", [400, 1700, 2600], 4000, 2500, 0.5),
  k: phone("stop", [400, 1900, 2400], 2000, 1500, 0.5),
  q: phone("stop", [400, 1900, 2400], 2000, 1500, 0.5),
  b: phone("vstop", [300, 900, 2300], 1000, 1500, 0.35),
  d: phone("vstop", [300, 1700, 2600], 3500, 2500, 0.35),
  g: phone("vstop", [300, 1900, 2400], 2000, 1500, 0.35),
};
const CONSONANT_LIST = Object.values(CONSONANTS);
export const PAUSE = phone("pause", NEUTRAL, 0, 0, 0);
const PHRASE_END = phone("stop_phrase", NEUTRAL, 0, 0, 0);

/** Relative time weight of each phone kind (total duration is fixed by the text length). */
export const WEIGHT: Record<PhoneKind, number> = {
  vowel: 1.25,
  approx: 0.9,
  nasal: 0.9,
  vfric: 0.9,
  fric: 0.95,
  stop: 0.8,
  vstop: 0.8,
  pause: 0.9,
  stop_phrase: 2.2,
};

/** The phone of one character: letters by sound, digits as vowels, other scripts by code point, punctuation as pauses. */
export function classify(ch: string): Phone {
  if (ch === "." || ch === "!" || ch === "?" || ch === "\n" || ch === ";") return PHRASE_END;
  const base = ch.normalize("NFD").charAt(0).toLowerCase();
  const v = VOWELS[base];
  if (v) return phone("vowel", v, 0, 0, 1);
  const c = CONSONANTS[base];
  if (c) return c;
  if (base >= "0" && base <= "9") {
    const d = base.charCodeAt(0) - 48;
    return phone("vowel", VOWEL_LIST[d % VOWEL_LIST.length], 0, 0, 0.9);
  }
  const cp = ch.codePointAt(0) ?? 32;
  // Letters of other scripts: a deterministic mix of vowels and consonants.
  if (/\p{L}/u.test(ch)) {
    if (cp % 7 < 4) return phone("vowel", VOWEL_LIST[cp % VOWEL_LIST.length], 0, 0, 1);
    return CONSONANT_LIST[cp % CONSONANT_LIST.length];
  }
  return PAUSE;
}
