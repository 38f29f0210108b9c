/**
 * Length rules for text fields (D7): speech and most fields count Unicode code points after NFC; music
 * prompt and lyrics count grapheme clusters ("visible characters") after NFC.
 */

/** Code points of `s` (not UTF-16 units). */
export function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Grapheme clusters of `s` (what a reader sees as characters). */
export function graphemeCount(s: string): number {
  let n = 0;
  for (const _ of graphemes.segment(s)) n++;
  return n;
}

/**
 * Reads an optional string field: undefined/null -> null; otherwise NFC-normalized. Throws via
 * `onTypeError` when the value is not a string.
 */
export function optionalText(value: unknown, onTypeError: () => Error): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw onTypeError();
  return value.normalize("NFC");
}
