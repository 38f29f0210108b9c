/**
 * The progress display of a running job on stderr. On a terminal it is one line redrawn in place (a
 * spinner, the status, the queue position or a bar of `progress`, the elapsed time); anywhere else
 * (a pipe, a log file, CI) it is one plain line per change worth reading, so logs stay short: a new
 * status, a new queue position, or progress crossing a tenth.
 */
import type { MediaJob } from "../../client/src/index.ts";

/** Where the display goes: stderr, or a test's collector. */
export interface ProgressSink {
  write(text: string): void;
  /** Whether the sink is a terminal (redraw in place) or not (plain lines). */
  isTTY: boolean;
  /** Terminal width in characters, when known; read at every redraw (the CLI's sink follows a resized terminal). */
  columns?: number;
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/** Erase from the cursor to the end of the line (ANSI EL). */
const CLEAR_LINE = "\x1b[K";

/** `mm:ss` (or `h:mm:ss`) of a duration in milliseconds. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const mm = String(Math.floor(s / 60) % 60).padStart(2, "0");
  const ss = String(s % 60).padStart(2, "0");
  return s >= 3600 ? `${Math.floor(s / 3600)}:${mm}:${ss}` : `${mm}:${ss}`;
}

/**
 * What a plain line says about a job: the status, then `queue position N` for a pending job that has
 * one, or the percentage for a processing job that reports progress, floored to a tenth (`40%`), so that
 * a source reporting every percent does not write a hundred lines.
 */
export function describeJob(job: MediaJob): string {
  if (job.status === "pending" && typeof job.queue_position === "number") return `pending, queue position ${job.queue_position}`;
  if (job.status === "processing" && typeof job.progress === "number") return `processing ${Math.floor(clamp01(job.progress) * 10) * 10}%`;
  return job.status;
}

/** Fewest cells inside a bar's brackets; below this the bar is dropped rather than drawn. */
const MIN_BAR = 8;
/** Fewest characters of a job id kept (with an ellipsis in the middle) while the bar is still drawn. */
const LABEL_WITH_BAR = 12;
/** Fewest characters of a job id kept at all (`job_…xrU`-like); below this the id is dropped. */
const MIN_LABEL = 6;

/**
 * `text` cut to `max` characters with `…` in the middle: the start (the `job_` prefix) and the end (the
 * random part that tells two time-ordered ids apart) stay. Counts code points.
 */
export function ellipsize(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  if (max <= 1) return "…".slice(0, Math.max(0, max));
  const head = Math.ceil((max - 1) / 2);
  const tail = max - 1 - head;
  return `${chars.slice(0, head).join("")}…${tail > 0 ? chars.slice(-tail).join("") : ""}`;
}

/**
 * The terminal line for `job` at `elapsedMs`, at most `columns - 1` characters (the last column is left
 * free: writing it makes some terminals wrap), so the line never wraps. A `columns` of 0 or undefined
 * (a pseudo-terminal that reports no width) is taken as 80. The line is: spinner frame `frame`, the job
 * id, the status, then the detail: a bar filled to `progress` and the percentage when the job reports it,
 * a block moving back and forth while it does not, `#N in queue` (or `waiting to start`) while pending;
 * last the elapsed time.
 *
 * As the width shrinks (issue 28, from 80 columns down to 40 and below), parts give way in this order:
 * the bar shrinks from 24 cells to {@link MIN_BAR}; the job id is cut in the middle with an ellipsis
 * down to {@link LABEL_WITH_BAR}; the bar is dropped (the id gets its room back, cut to fit down to
 * {@link MIN_LABEL}); the status loses its padding and `waiting to start` goes; then the status word and
 * the id go. The spinner, the percentage (or queue position) and the elapsed time always stay; under
 * about 20 columns only the spinner and the time are left, cut to the width.
 */
export function renderLine(job: MediaJob, elapsedMs: number, frame: number, columns?: number): string {
  const width = Math.max(1, (columns || 80) - 1);
  const spin = SPINNER[frame % SPINNER.length];
  const time = formatElapsed(elapsedMs);
  const id = job.id;
  const status = job.status;
  /** What must stay after the status: the percentage or the queue position; empty when none. */
  let figure = "";
  /** What may go first: `waiting to start`. */
  let optional = "";
  /** The bar of `inner` cells between brackets, or null when the state has none. */
  let bar: ((inner: number) => string) | null = null;
  if (status === "pending") {
    if (typeof job.queue_position === "number") figure = `#${job.queue_position} in queue`;
    else optional = "waiting to start";
  } else if (status === "processing" && typeof job.progress === "number") {
    const p = clamp01(job.progress);
    figure = `${String(Math.floor(p * 100)).padStart(3)}%`;
    bar = (inner) => {
      const filled = Math.round(p * inner);
      return `[${"█".repeat(filled)}${"░".repeat(inner - filled)}]`;
    };
  } else if (status === "processing") {
    // No progress reported: a block moving back and forth says "alive" without claiming a fraction.
    bar = (inner) => {
      const block = Math.min(4, Math.max(1, inner - 4));
      const span = inner - block;
      const pos = span - Math.abs((frame % (2 * span)) - span);
      return `[${"░".repeat(pos)}${"█".repeat(block)}${"░".repeat(span - pos)}]`;
    };
  }

  /** The line of one layout: empty parts are left out, the bar and figure are one part joined by a space. */
  const compose = (label: string, statusText: string, barText: string, extra: string) => {
    const detail = [barText, figure, extra].filter((x) => x !== "").join(barText !== "" && figure !== "" ? " " : "  ");
    return [label === "" ? spin : `${spin} ${label}`, statusText, detail, time].filter((x) => x !== "").join("  ");
  };
  const len = (text: string) => [...text].length;

  // 1. Everything, the bar as long as it fits (24 down to MIN_BAR), then the id cut down to LABEL_WITH_BAR.
  const padded = status.padEnd(10);
  if (bar !== null) {
    const bare = len(compose("x", padded, "[]", optional)) - 1; // with an empty id and an empty bar
    const room = width - bare;
    const inner = Math.min(24, room - len(id));
    if (inner >= MIN_BAR) return compose(id, padded, bar(inner), optional);
    const labelRoom = room - MIN_BAR;
    if (labelRoom >= LABEL_WITH_BAR) return compose(ellipsize(id, labelRoom), padded, bar(MIN_BAR), optional);
  }
  // 2. No bar: the id cut to fit, with the padded status, then the plain one without `waiting to start`.
  for (const [statusText, extra] of [
    [padded, optional],
    [status, ""],
  ] as const) {
    const labelRoom = width - (len(compose("x", statusText, "", extra)) - 1);
    if (labelRoom >= MIN_LABEL || labelRoom >= len(id)) return compose(ellipsize(id, labelRoom), statusText, "", extra);
  }
  // 3. The status word goes, then the id; last, the line is cut to the width.
  const noStatus = width - (len(compose("x", "", "", "")) - 1);
  if (figure !== "" && noStatus >= MIN_LABEL) return compose(ellipsize(id, noStatus), "", "", "");
  const lean = compose("", figure === "" ? status : "", "", "");
  if (len(lean) <= width) return lean;
  return [...`${spin} ${time}`].slice(0, width).join("");
}

/**
 * Shows one job's progress on a {@link ProgressSink}. Call {@link update} with every job state (the
 * `onUpdate` of `submitAndWait`), {@link tick} on a timer (terminal only: the spinner and clock move
 * between updates) and {@link finish} once, which ends the terminal line so later output starts on a new
 * line. `now` is injectable for tests.
 */
export class ProgressReporter {
  private readonly sink: ProgressSink;
  private readonly now: () => number;
  private readonly started: number;
  private job: MediaJob | null = null;
  private frame = 0;
  private lastPlain: string | null = null;
  private drawn = false;

  constructor(sink: ProgressSink, now: () => number = Date.now) {
    this.sink = sink;
    this.now = now;
    this.started = now();
  }

  /** A new state of the job. */
  update(job: MediaJob): void {
    this.job = job;
    if (this.sink.isTTY) {
      this.draw();
      return;
    }
    const text = describeJob(job);
    if (text === this.lastPlain) return;
    this.lastPlain = text;
    this.sink.write(`${job.id}: ${text} (${formatElapsed(this.now() - this.started)})\n`);
  }

  /** Advances the spinner and the clock (terminal only; nothing is written elsewhere). */
  tick(): void {
    if (!this.sink.isTTY || !this.job) return;
    this.frame++;
    this.draw();
  }

  /** Ends the display: the terminal line is left showing the last state, followed by a newline. */
  finish(): void {
    if (this.sink.isTTY && this.drawn) this.sink.write("\n");
    this.drawn = false;
  }

  private draw(): void {
    if (!this.job) return;
    this.sink.write(`\r${renderLine(this.job, this.now() - this.started, this.frame, this.sink.columns)}${CLEAR_LINE}`);
    this.drawn = true;
  }
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
