/** Prompt words for the music and sound-effect synthesizers: keyword and phrase matching. */

/** Lower-cased, accent-stripped words of a prompt plus the normalized text (for phrase matches). */
export interface Words {
  set: Set<string>;
  text: string;
}

/** The {@link Words} of `prompt`. */
export function wordsOf(prompt: string): Words {
  const text = prompt
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9#/]+/g, " ")
    .trim();
  return { set: new Set(text.split(" ").filter((w) => w.length > 0)), text: ` ${text} ` };
}

/** True when any entry is present: single words by exact match, entries with spaces as phrases. */
export function hasAny(w: Words, list: readonly string[]): boolean {
  for (const e of list) {
    if (e.includes(" ") ? w.text.includes(` ${e} `) : w.set.has(e)) return true;
  }
  return false;
}
