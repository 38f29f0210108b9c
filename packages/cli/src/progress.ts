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
  /** Terminal width in characters, when known. */
  columns?: number;
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const BAR_WIDTH = 24;
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

/**
 * The terminal line for `job` at `elapsedMs`: spinner frame `frame`, the job id, the status, then a
 * bar: filled to `progress` when the job reports it, a block moving back and forth while it does not,
 * and `#N in queue` for a pending job. Cut to `columns` characters.
 */
export function renderLine(job: MediaJob, elapsedMs: number, frame: number, columns?: number): string {
  const spin = SPINNER[frame % SPINNER.length];
  let detail: string;
  if (job.status === "pending") {
    detail = typeof job.queue_position === "number" ? `#${job.queue_position} in queue` : "waiting to start";
  } else if (job.status === "processing" && typeof job.progress === "number") {
    const p = clamp01(job.progress);
    const filled = Math.round(p * BAR_WIDTH);
    detail = `[${"█".repeat(filled)}${"░".repeat(BAR_WIDTH - filled)}] ${String(Math.floor(p * 100)).padStart(3)}%`;
  } else if (job.status === "processing") {
    // No progress reported: a block moving back and forth says "alive" without claiming a fraction.
    const span = BAR_WIDTH - 4;
    const pos = span - Math.abs((frame % (2 * span)) - span);
    detail = `[${"░".repeat(pos)}████${"░".repeat(span - pos)}]`;
  } else {
    detail = "";
  }
  const line = [`${spin} ${job.id}`, job.status.padEnd(10), detail, formatElapsed(elapsedMs)].filter((part) => part !== "").join("  ");
  // A terminal that reports no width (0 under some pseudo-terminals) is taken as 80 wide.
  return [...line].slice(0, Math.max(20, (columns || 80) - 1)).join("");
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
