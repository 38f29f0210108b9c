/**
 * Text output of the CLI: aligned tables, key-value blocks, USD amounts and file extensions.
 */

/** A cell: null and undefined show as `-`. */
export type Cell = string | number | boolean | null | undefined;

function cell(value: Cell): string {
  return value === null || value === undefined || value === "" ? "-" : String(value);
}

/**
 * Columns aligned with two spaces between them, a header row first, no trailing spaces; widths are in
 * code points (voice names may be non-ASCII). An empty table is the header row alone.
 */
export function table(headers: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map(cell));
  const width = (s: string) => [...s].length;
  const widths = headers.map((h, i) => Math.max(width(h), ...text.map((r) => width(r[i] ?? ""))));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c + " ".repeat(widths[i] - width(c))))
      .join("  ")
      .trimEnd();
  return [line(headers), ...text.map(line)].join("\n") + "\n";
}

/** `key  value` lines with the keys aligned; null values are left out. */
export function keyValues(pairs: [string, Cell][]): string {
  const shown = pairs.filter(([, v]) => v !== null && v !== undefined);
  const w = Math.max(...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${k.padEnd(w)}  ${cell(v)}`).join("\n") + "\n";
}

/**
 * A USD amount as the gateway sent it (a JSON number with at most 6 decimals, D7, or a header's
 * decimal text), with `USD`; null shows as `-`.
 */
export function usd(amount: number | string | null | undefined): string {
  if (amount === null || amount === undefined || amount === "") return "-";
  return `${amount} USD`;
}

const EXTENSIONS: Record<string, string> = {
  "audio/mpeg": "mp3",
  "audio/pcm": "pcm",
  "audio/basic": "ulaw",
  "audio/wav": "wav",
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/svg+xml": "svg",
  "video/mp4": "mp4",
  "video/webm": "webm",
};

/** The usual file extension of a MIME type (`image/png` -> `png`), `bin` when unknown. */
export function extensionOf(contentType: string | null | undefined): string {
  const base = (contentType ?? "").split(";")[0].trim().toLowerCase();
  return EXTENSIONS[base] ?? "bin";
}

/** The file extension of a speech `response_format` (D20): mp3 formats `mp3`, PCM `pcm`, mu-law `ulaw`. */
export function extensionOfFormat(format: string | null): string {
  if (format === null || format.startsWith("mp3")) return "mp3";
  if (format.startsWith("pcm")) return "pcm";
  if (format.startsWith("ulaw")) return "ulaw";
  return "bin";
}
