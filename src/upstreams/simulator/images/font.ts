/**
 * The caption font of the simulated pictures: a 5x7 pixel font (printable ASCII; letters with accents
 * lose them, anything else draws as `?`) and the word wrapping of a caption into a few lines.
 */

/** Glyph cell: 5 columns, 7 rows; drawn with one blank column and two blank rows around it. */
export const GLYPH_W = 5;
export const GLYPH_H = 7;
/** Horizontal advance and line height, in font pixels. */
export const ADVANCE = 6;
export const LINE_HEIGHT = 10;

const CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!\"#$%&'()*+,-./:;<=>?@_";
/** Seven rows per glyph, two hex digits each (bit 4 = leftmost column), in the order of {@link CHARS}. */
const ROWS =
  "0e1111111f1111" + "1e11111e11111e" + "0e11101010110e" + "1c12111111121c" + "1f10101e10101f" + "1f10101e101010" +
  "0e111017111f0f" + "1111111f111111" + "0e04040404040e" + "0702020202120c" + "11121418141211" + "1010101010101f" +
  "111b1515111111" + "11111915131111" + "0e11111111110e" + "1e11111e101010" + "0e11111115120d" + "1e11111e141211" +
  "0f10100e01011e" + "1f040404040404" + "1111111111110e" + "11111111110a04" + "1111111515150a" + "11110a040a1111" +
  "1111110a040404" + "1f01020408101f" +
  "00000e010f110f" + "1010161911111e" + "00000e1010110e" + "01010d1311110f" + "00000e111f100e" + "0609081c080808" +
  "000f11110f010e" + "10101619111111" + "04000c0404040e" + "0200060202120c" + "10101214181412" + "0c04040404040e" +
  "00001a15151111" + "00001619111111" + "00000e1111110e" + "00001e111e1010" + "00000d130f0101" + "00001619101010" +
  "00000e100e011e" + "08081c08080906" + "0000111111130d" + "00001111110a04" + "0000111115150a" + "0000110a040a11" +
  "000011110f010e" + "00001f0204081f" +
  "0e11131519110e" + "040c040404040e" + "0e11010204081f" + "1f02040201110e" +
  "02060a121f0202" + "1f101e0101110e" + "0608101e11110e" + "1f010204080808" + "0e11110e11110e" + "0e11110f01020c" +
  "04040404000004" + "0a0a0a00000000" + "0a0a1f0a1f0a0a" + "040f140e051e04" + "18190204081303" + "0c12140815120d" +
  "0c040800000000" + "02040808080402" + "08040202020408" + "0004150e150400" + "0004041f040400" + "000000000c0408" +
  "0000001f000000" + "00000000000c0c" + "00010204081000" + "000c0c000c0c00" + "000c0c000c0408" + "02040810080402" +
  "00001f001f0000" + "08040201020408" + "0e110102040004" + "0e11010d15150e" + "0000000000001f";

/** Glyph bitmaps by character: 7 row masks each. */
const GLYPHS = new Map<string, readonly number[]>();
for (let i = 0; i < CHARS.length; i++) {
  const rows: number[] = [];
  for (let r = 0; r < GLYPH_H; r++) rows.push(Number.parseInt(ROWS.slice(i * 14 + r * 2, i * 14 + r * 2 + 2), 16));
  GLYPHS.set(CHARS[i], rows);
}
const BLANK: readonly number[] = [0, 0, 0, 0, 0, 0, 0];

/** The row masks (7 numbers, bit 4 = leftmost column) of `ch`; a space is blank, unknown characters draw `?`. */
export function glyph(ch: string): readonly number[] {
  if (ch === " ") return BLANK;
  return GLYPHS.get(ch) ?? (GLYPHS.get("?") as readonly number[]);
}

/** `text` in the font's repertoire: accents stripped, quotes and dashes simplified, whitespace collapsed. */
export function captionText(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u2013\u2014]/g, "-")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * Word-wraps `text` (see {@link captionText}) into at most `maxLines` lines of at most `maxChars`
 * characters; words longer than a line are cut (ending with `...`); text that does not fit ends with `...`. Empty text
 * gives no lines.
 */
export function wrapCaption(text: string, maxChars: number, maxLines: number): string[] {
  const clean = captionText(text);
  if (clean === "" || maxChars < 4 || maxLines < 1) return [];
  const lines: string[] = [];
  let line = "";
  const words = clean.split(" ");
  let i = 0;
  for (; i < words.length; i++) {
    let word = words[i];
    if (word.length > maxChars) word = `${word.slice(0, maxChars - 3)}...`;
    const next = line === "" ? word : `${line} ${word}`;
    if (next.length <= maxChars) {
      line = next;
      continue;
    }
    lines.push(line);
    line = word;
    if (lines.length === maxLines) break;
  }
  if (lines.length < maxLines && line !== "") {
    lines.push(line);
    line = "";
    i = words.length;
  }
  if (i < words.length || line !== "") {
    const last = lines[lines.length - 1];
    lines[lines.length - 1] = `${last.slice(0, Math.max(0, maxChars - 3)).trimEnd()}...`;
  }
  return lines;
}
