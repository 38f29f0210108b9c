/**
 * When a realtime speech context sends its buffered text for generation (D42, ElevenLabs' text-to-speech
 * socket): text accumulates in a buffer and a chunk is cut
 * - when the buffer reaches the next length of `chunk_length_schedule` (default [120, 160, 250, 290]: the
 *   first chunk at 120 characters, the second after 160 more, then 250, then 290 for every later one);
 * - with `try_trigger_generation`, when the buffer holds at least {@link TRY_TRIGGER_MIN_CHARS};
 * - with `auto_mode`, at every sentence end (the schedule is off);
 * - at `flush` and at the end of the input: everything buffered.
 * A chunk never cuts a word: the part after the buffer's last space waits for more text (except at a
 * flush). Chunks are NFC-normalized, split to at most `maxChars` code points (the model's input limit),
 * without leading spaces and with at most one trailing space; a chunk of only spaces is dropped. A pure function of the text sent, so the characters
 * billed are the characters generated.
 */

/** ElevenLabs' default `chunk_length_schedule`, characters (D42). */
export const DEFAULT_CHUNK_SCHEDULE: readonly number[] = [120, 160, 250, 290];

/** Each item of a `chunk_length_schedule` must be in 50..500 characters (ElevenLabs' documented range). */
export const SCHEDULE_ITEM_RANGE = { min: 50, max: 500 } as const;

/** Characters `try_trigger_generation` needs in the buffer before it generates (ElevenLabs' "minimum threshold"). */
export const TRY_TRIGGER_MIN_CHARS = 50;

/** Sentence ends for `auto_mode`: punctuation closing a sentence, followed by a space or the end. */
const SENTENCE_END = /[.!?;:\u3002\uff01\uff1f\u2026](?:["'\u201d\u2019)\]]*)(?:\s+|$)/gu;

/** Code points of `s`. */
function codePointsOf(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * `text` as chunks of at most `maxChars` code points, cut at spaces where it can: leading whitespace
 * dropped, trailing whitespace kept as one space (so the alignment of consecutive chunks keeps the space
 * between their words, and the characters billed are the characters spoken), chunks of only spaces dropped.
 */
function splitLong(text: string, maxChars: number): string[] {
  const out: string[] = [];
  let rest = text.trimStart();
  while (codePointsOf(rest) > maxChars) {
    const cps = Array.from(rest);
    let cut = cps.lastIndexOf(" ", maxChars - 1);
    if (cut <= 0) cut = maxChars - 1;
    out.push(`${cps.slice(0, cut).join("").trimEnd()} `);
    rest = cps.slice(cut).join("").trimStart();
  }
  if (rest.trim().length > 0) out.push(/\s$/u.test(rest) ? `${rest.trimEnd()} ` : rest);
  return out;
}

/** The text buffer of one speech context and its chunk schedule (see the module comment). */
export class TextChunker {
  readonly #schedule: readonly number[];
  readonly #autoMode: boolean;
  readonly #maxChars: number;
  #buffer = "";
  #cut = 0;

  /** `schedule`: lengths of the chunk schedule (checked by the caller); `maxChars`: the model's input limit. */
  constructor(opts: { schedule?: readonly number[]; autoMode: boolean; maxChars: number }) {
    this.#schedule = opts.schedule !== undefined && opts.schedule.length > 0 ? opts.schedule : DEFAULT_CHUNK_SCHEDULE;
    this.#autoMode = opts.autoMode;
    this.#maxChars = Math.max(1, opts.maxChars);
  }

  /** Code points waiting in the buffer. */
  get buffered(): number {
    return codePointsOf(this.#buffer);
  }

  /** The schedule's length for the next chunk. */
  #threshold(): number {
    return this.#schedule[Math.min(this.#cut, this.#schedule.length - 1)];
  }

  /** Takes the buffer up to its last space (all of it when `whole`) as chunks. */
  #take(whole: boolean): string[] {
    let upTo = this.#buffer.length;
    if (!whole) {
      const lastSpace = this.#buffer.search(/\s\S*$/u);
      if (lastSpace < 0) return [];
      upTo = lastSpace + 1;
    }
    const text = this.#buffer.slice(0, upTo);
    this.#buffer = this.#buffer.slice(upTo);
    const chunks = splitLong(text.normalize("NFC"), this.#maxChars);
    if (chunks.length > 0) this.#cut++;
    return chunks;
  }

  /**
   * Adds `text` and returns the chunks to generate now, in order (possibly none).
   * `flush`: everything buffered; `tryTrigger`: the buffer if it holds enough.
   */
  push(text: string, opts: { flush?: boolean; tryTrigger?: boolean } = {}): string[] {
    this.#buffer += text;
    if (opts.flush === true) return this.#take(true);
    const out: string[] = [];
    if (this.#autoMode) {
      let end = -1;
      for (const m of this.#buffer.matchAll(SENTENCE_END)) end = m.index + m[0].length;
      if (end > 0) {
        const sentence = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end);
        out.push(...splitLong(sentence.normalize("NFC"), this.#maxChars));
      }
      return out;
    }
    if (opts.tryTrigger === true && this.buffered >= TRY_TRIGGER_MIN_CHARS) return this.#take(false);
    while (this.buffered >= this.#threshold()) {
      const chunks = this.#take(false);
      if (chunks.length === 0) break;
      out.push(...chunks);
    }
    return out;
  }

  /** Everything still buffered, as chunks (a flush), emptying the buffer. */
  flush(): string[] {
    return this.#take(true);
  }

  /** Drops what is buffered (a context closed without a flush: ElevenLabs generates nothing of it). */
  discard(): void {
    this.#buffer = "";
  }
}
