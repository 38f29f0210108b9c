/**
 * Text output of the CLI: tables that fit the terminal, the usage text wrapped to it, key-value blocks,
 * USD amounts and file extensions. Widths are display columns (`string-width`: a CJK character or an emoji
 * takes two, a combining accent none).
 */
import stringWidth from "string-width";
import wrapAnsi from "wrap-ansi";

/** A cell: null and undefined show as `-`. */
export type Cell = string | number | boolean | null | undefined;

function cell(value: Cell): string {
  return value === null || value === undefined || value === "" ? "-" : String(value);
}

/**
 * A table column. A plain string is a column that is always shown and never cut.
 * - `priority`: when the table is wider than the terminal, columns with a priority are dropped, lowest
 *   first (the rightmost of equals first); a column without one is always kept (an id to act on).
 * - `min`: the column may be cut down to this many columns of text, its cells ending in `…` (a name, a
 *   description); without it the column is never cut (ids, amounts, times).
 */
export interface Column {
  header: string;
  priority?: number;
  min?: number;
}

/**
 * How wide a table may be: `width` in columns, null for unbounded (output into a pipe or a file: nothing
 * is dropped or cut, like `gh` and `kubectl`); `wide` (`--wide`) shows every column uncut at any width.
 */
export interface TableLayout {
  width: number | null;
  wide: boolean;
}

/** No width limit: every column, uncut. */
export const UNBOUNDED: TableLayout = { width: null, wide: false };

/**
 * The width output should fit, in columns, or null for none: `COLUMNS` when it is a whole number (so a
 * script or a test can ask for a width), else the terminal's width when `stream` is a terminal, else null
 * (a pipe or a file: tables are not cut, so `grep` and `cut` see every column whole).
 */
export function outputWidth(columnsEnv: string | undefined, stream: { isTTY?: boolean; columns?: number }): number | null {
  const fromEnv = columnsEnv?.trim() ?? "";
  if (/^\d+$/.test(fromEnv) && Number(fromEnv) > 0) return Number(fromEnv);
  if (stream.isTTY === true && typeof stream.columns === "number" && stream.columns > 0) return stream.columns;
  return null;
}

const segmenter = new Intl.Segmenter();

/** `text` cut to at most `width` display columns, ending in `…` when cut. */
export function truncate(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  if (width <= 0) return "";
  let out = "";
  let used = 0;
  for (const { segment } of segmenter.segment(text)) {
    const w = stringWidth(segment);
    if (used + w > width - 1) break;
    out += segment;
    used += w;
  }
  return `${out}…`;
}

const GAP = 2;

/**
 * Columns aligned with two spaces between them, a header row first, no trailing spaces; an empty table
 * is the header row alone. With a `layout.width` (a terminal), a table wider than it gives way column by
 * column, the lowest `priority` first: that column is cut down to its `min` when this makes the table fit,
 * else dropped; then the columns without a priority are cut (widest first), and a line still too wide (a
 * terminal narrower than the columns always kept) is cut at the width: no line is ever wider than the
 * width. `layout.wide` or no width: every column, uncut.
 */
export function table(columns: readonly (string | Column)[], rows: Cell[][], layout: TableLayout = UNBOUNDED): string {
  const cols: Column[] = columns.map((c) => (typeof c === "string" ? { header: c } : c));
  const text = rows.map((r) => cols.map((_, i) => cell(r[i])));
  const natural = cols.map((c, i) => Math.max(stringWidth(c.header), ...text.map((r) => stringWidth(r[i]))));
  const limit = layout.wide ? null : layout.width;
  let shown = cols.map((_, i) => i);
  const widths = [...natural];
  if (limit !== null) {
    const floor = (i: number) => (cols[i].min === undefined ? natural[i] : Math.min(natural[i], Math.max(cols[i].min ?? 0, stringWidth(cols[i].header))));
    const rank = (i: number) => cols[i].priority ?? Infinity;
    // The least important column gives way first: it is cut (down to its minimum) when that is enough,
    // else dropped; a column is never cut to keep a less important one. Columns always kept (no priority)
    // are cut last, the widest first.
    for (;;) {
      const excess = shown.reduce((sum, i) => sum + widths[i], 0) + GAP * Math.max(0, shown.length - 1) - limit;
      if (excess <= 0) break;
      const candidates = shown.filter((i) => cols[i].priority !== undefined || widths[i] > floor(i));
      if (candidates.length === 0) break;
      const low = Math.min(...candidates.map(rank));
      const tied = candidates.filter((i) => rank(i) === low);
      const cuttable = tied.filter((i) => widths[i] > floor(i));
      const widest = cuttable.length > 0 ? cuttable.reduce((a, b) => (widths[b] > widths[a] ? b : a)) : null;
      if (widest !== null && (cols[widest].priority === undefined || widths[widest] - floor(widest) >= excess)) {
        widths[widest] -= Math.min(excess, widths[widest] - floor(widest));
      } else {
        const dropped = tied[tied.length - 1];
        shown = shown.filter((i) => i !== dropped);
      }
    }
  }
  const line = (r: string[]) =>
    shown
      .map((i, k) => {
        const c = widths[i] < natural[i] ? truncate(r[i], widths[i]) : r[i];
        return k === shown.length - 1 ? c : c + " ".repeat(Math.max(0, widths[i] - stringWidth(c)));
      })
      .join(" ".repeat(GAP))
      .trimEnd();
  const lines = [line(cols.map((c) => c.header)), ...text.map(line)];
  // 3. Narrower than the columns that are always kept: each line is cut at the width.
  return lines.map((l) => (limit !== null ? truncate(l, limit) : l)).join("\n") + "\n";
}

/** The widest the usage text gets, even on a wider terminal: lines of prose stay readable. */
export const HELP_MAX_WIDTH = 80;

/**
 * The usage text `text` wrapped to `width` columns (no line wider, but for a word longer than the width,
 * which is cut). The text is read in blocks: a paragraph (lines starting at column 0, up to a blank line,
 * an indented line or a `Usage:` line) is joined and wrapped again; an entry (`  left  description`, two or
 * more spaces before the description, continued on the next lines at the description's column) keeps its
 * description in its column, or moves it under the left part when fewer than 24 columns remain there; any
 * other indented line (a usage form, an example) wraps with a deeper indent.
 */
export function wrapHelp(text: string, width: number): string {
  const lines = text.replace(/\n$/, "").split("\n");
  const out: string[] = [];
  const indented = (s: string, indent: number, room: number, hang = indent) =>
    wrapAnsi(s, Math.max(1, room), { hard: true })
      .split("\n")
      .map((l, k) => " ".repeat(k === 0 ? indent : hang) + l);
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const lead = l.length - l.trimStart().length;
    const entry = lead > 0 ? /^( +)(\S(?:.*?\S)?)( {2,})(\S.*)$/.exec(l) : null;
    if (l.trim() === "") {
      out.push("");
    } else if (entry) {
      const [, pad, left, gap] = entry;
      const column = pad.length + left.length + gap.length;
      let description = entry[4];
      while (i + 1 < lines.length && /^ +\S/.test(lines[i + 1]) && lines[i + 1].length - lines[i + 1].trimStart().length === column) {
        description += ` ${lines[++i].trim()}`;
      }
      if (width - column >= 24) {
        // The left part fits: it is shorter than the description's column, which leaves 24 or more.
        const [first, ...rest] = wrapAnsi(description, width - column, { hard: true }).split("\n");
        out.push(pad + left + gap + first, ...rest.map((x) => " ".repeat(column) + x));
      } else {
        out.push(...indented(left, pad.length, width - pad.length, pad.length + 2));
        out.push(...indented(description, pad.length + 4, width - pad.length - 4));
      }
    } else if (lead > 0 || l.startsWith("Usage:")) {
      // A usage form or an example: continued lines go deeper than the first.
      const hang = l.startsWith("Usage:") ? 11 : lead + 4;
      const [first, ...rest] = wrapAnsi(l.trim(), Math.max(1, width - lead), { hard: true }).split("\n");
      const more = rest.length > 0 ? wrapAnsi(rest.join(" "), Math.max(1, width - hang), { hard: true }).split("\n") : [];
      out.push(" ".repeat(lead) + first, ...more.map((x) => " ".repeat(hang) + x));
    } else {
      let paragraph = l;
      while (i + 1 < lines.length && /^\S/.test(lines[i + 1]) && !lines[i + 1].startsWith("Usage:")) paragraph += ` ${lines[++i]}`;
      out.push(...wrapAnsi(paragraph, Math.max(1, width), { hard: true }).split("\n"));
    }
  }
  return out.join("\n") + "\n";
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

/**
 * An instant as the wall clock of `timeZone`, to the minute: `2026-11-29T15:00:00Z` in Asia/Tokyo ->
 * `2026-11-30 00:00`. An unknown zone falls back to UTC.
 */
export function wallTime(iso: string, timeZone: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  let fmt: Intl.DateTimeFormat;
  const opts: Intl.DateTimeFormatOptions = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
  try {
    fmt = new Intl.DateTimeFormat("en-CA", { ...opts, timeZone });
  } catch {
    fmt = new Intl.DateTimeFormat("en-CA", { ...opts, timeZone: "UTC" });
  }
  const part = (type: string) => fmt.formatToParts(d).find((p) => p.type === type)?.value ?? "";
  return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}`;
}

/**
 * A budget's current window (D44) in its own time zone: `2026-11-30 00:00 -> 2026-12-01 00:00 Asia/Tokyo`,
 * or `since 2026-11-01 09:00 UTC` for a `total` budget (no end).
 */
export function budgetWindow(b: { window_start: string; window_end: string | null; timezone: string }): string {
  const start = wallTime(b.window_start, b.timezone);
  return b.window_end === null ? `since ${start} ${b.timezone}` : `${start} -> ${wallTime(b.window_end, b.timezone)} ${b.timezone}`;
}

/** A budget's scope as `--scope` writes it: `org`, `key:key_...`, `member:usr_...`. */
export function budgetScopeText(scope: { type: string; id: string }): string {
  return scope.type === "org" ? "org" : `${scope.type}:${scope.id}`;
}
