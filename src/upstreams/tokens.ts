/**
 * Token counting for the text side: prompt sizes for holds and rate limits, the simulated chat upstream's
 * usage numbers and its prompt-cache prefixes (D23). It sits in `upstreams/` because the count is the
 * upstream models' own encoding and the simulated upstream needs it; the text services above import it.
 *
 * Tokens are counted with `gpt-tokenizer`'s `o200k_base` encoding (the encoding of current OpenAI chat
 * models), a pure-JavaScript BPE whose rank table ships inside the package: nothing is downloaded at run
 * time and there is no native code.
 *
 * Two guarantees on top of the library:
 * - Never throws. Special-token text such as `<|endoftext|>` is counted as ordinary text (the library
 *   throws on it by default), lone surrogates are counted as U+FFFD, and any unexpected library error falls
 *   back to an estimate of one token per 4 UTF-8 bytes.
 * - Bounded time. BPE merging is quadratic in the length of one pre-tokenized piece (a 1 MB run of `x`
 *   takes minutes), so unbroken runs of at least {@link LONG_RUN} letters, symbols or spaces are counted in
 *   chunks of {@link LONG_RUN} code units. Ordinary text (words, code, JSON) never has such runs and is
 *   counted exactly; a long run may differ from the exact count by about one token per chunk. Measured
 *   on Node 24: about 40 us for 1 KB of English, 2 us for a short prompt, 15 ms for 100 KB; the slowest
 *   input found, random rare CJK ideographs, costs about 2 us per character (1 MB: 2 s).
 */
import { createRequire } from "node:module";
import type * as O200kBase from "gpt-tokenizer/encoding/o200k_base";
import type { ChatMessage, TextPart, ToolCall, ToolDefinition } from "./chat-types.ts";

/**
 * Size of the library's merge cache (entries). Its default of 100_000 degrades as it fills: eviction
 * takes the first key of a Map with many deleted slots, and after a few MB of varied text a 1 KB count
 * slowed from 40 to 240 us in measurements. 1000 entries keep the hot common words and stay fast.
 * The setting is global to the `o200k_base` module instance, which only this module uses.
 */
const MERGE_CACHE_SIZE = 1000;

/** Library options: every special-token text is plain text (no token is disallowed, none is special). */
const PLAIN = { disallowedSpecial: new Set<string>() };

/** Runs of one pre-tokenizer class at least this long (UTF-16 code units) are counted in chunks of it. */
export const LONG_RUN = 64;

/**
 * An unbroken run of letters/marks, of symbols (including emoji and lone surrogates) or of whitespace of
 * at least {@link LONG_RUN} code points: the shapes `o200k_base`'s pre-tokenizer keeps as one piece.
 */
const LONG_RUN_RE = /[\p{L}\p{M}]{64,}|[^\s\p{L}\p{N}]{64,}|\s{64,}/gu;

/** The `o200k_base` library and the token ids of its chat markup (`<|im_start|>`, `<|im_sep|>`, `<|im_end|>`). */
interface Encoder {
  encode: typeof O200kBase.encode;
  countTokens: typeof O200kBase.countTokens;
  imStart: number;
  imSep: number;
  imEnd: number;
}

let encoder: Encoder | null = null;

/**
 * The encoder, loaded on first use: its rank tables take about 40 MB of memory (measured: idle RSS of
 * the gateway 222 -> 180 MB), which a process that never counts text tokens does not need. `require`
 * (the package's CommonJS build) keeps every function of this module synchronous.
 */
function lib(): Encoder {
  if (encoder) return encoder;
  const o200k = createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as typeof O200kBase;
  o200k.setMergeCacheSize(MERGE_CACHE_SIZE);
  const special = (s: string) => o200k.encode(s, { allowedSpecial: new Set([s]) })[0];
  encoder = {
    encode: o200k.encode,
    countTokens: o200k.countTokens,
    imStart: special(o200k.ImStart),
    imSep: special(o200k.ImSep),
    imEnd: special(o200k.ImEnd),
  };
  return encoder;
}

/** Tokens added to every prompt for the assistant's reply header (`<|im_start|>assistant<|im_sep|>`). */
export const REPLY_PRIMING_TOKENS = 3;

/** Fallback when the library fails unexpectedly: about one token per 4 UTF-8 bytes. */
function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / 4);
}

/** Pseudo tokens for the fallback path of {@link encodeText}: one id per 4 UTF-8 bytes, deterministic. */
function pseudoTokens(text: string): number[] {
  const bytes = Buffer.from(text, "utf8");
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i += 4) {
    let id = 0;
    for (let k = i; k < Math.min(i + 4, bytes.length); k++) id = id * 256 + bytes[k];
    out.push(1_000_000 + id);
  }
  return out;
}

/**
 * Cuts `text` into pieces the library can encode quickly: the text between long runs as it is, each
 * long run in chunks of {@link LONG_RUN} code units (never splitting a surrogate pair).
 */
function* safePieces(text: string): Generator<string> {
  LONG_RUN_RE.lastIndex = 0;
  let last = 0;
  for (let m = LONG_RUN_RE.exec(text); m !== null; m = LONG_RUN_RE.exec(text)) {
    if (m.index > last) yield text.slice(last, m.index);
    const run = m[0];
    for (let i = 0; i < run.length; ) {
      let end = Math.min(i + LONG_RUN, run.length);
      const c = run.charCodeAt(end - 1);
      if (end < run.length && c >= 0xd800 && c <= 0xdbff) end++;
      yield run.slice(i, end);
      i = end;
    }
    last = m.index + run.length;
  }
  if (last < text.length) yield text.slice(last);
}

/** Whether `text` may hold a long run (cheap pre-check: short texts cannot). */
function mayHaveLongRun(text: string): boolean {
  if (text.length < LONG_RUN) return false;
  LONG_RUN_RE.lastIndex = 0;
  return LONG_RUN_RE.test(text);
}

/**
 * The number of `o200k_base` tokens of `text` (special-token text counted as plain text). Never throws;
 * see the module notes for long unbroken runs.
 */
export function countTokens(text: string): number {
  if (typeof text !== "string" || text.length === 0) return 0;
  try {
    if (!mayHaveLongRun(text)) return lib().countTokens(text, PLAIN);
    let n = 0;
    for (const piece of safePieces(text)) n += lib().countTokens(piece, PLAIN);
    return n;
  } catch {
    return estimateTokens(text);
  }
}

/**
 * The `o200k_base` token ids of `text`; `encodeText(t).length === countTokens(t)`. Never throws (on an
 * unexpected library error it returns deterministic pseudo ids, one per 4 UTF-8 bytes).
 */
export function encodeText(text: string): number[] {
  if (typeof text !== "string" || text.length === 0) return [];
  try {
    if (!mayHaveLongRun(text)) return lib().encode(text, PLAIN);
    const out: number[] = [];
    for (const piece of safePieces(text)) for (const t of lib().encode(piece, PLAIN)) out.push(t);
    return out;
  } catch {
    return pseudoTokens(text);
  }
}

/** The text parts of a message content, in order (null content has none). */
function contentParts(content: string | TextPart[] | null | undefined): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  const parts: string[] = [];
  for (const part of content) {
    if (part !== null && typeof part === "object" && typeof part.text === "string") parts.push(part.text);
  }
  return parts;
}

/** `JSON.stringify` that never throws (cyclic or BigInt values count as an empty object). */
function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "{}";
  }
}

/** The text by which the tool definitions are shown to the model, as one pseudo system message. */
function toolsText(tools: readonly ToolDefinition[]): string {
  let text = "# Tools\n";
  for (const tool of tools) {
    const fn = tool?.function;
    if (fn === undefined || fn === null) continue;
    text += `## ${String(fn.name)}\n`;
    if (typeof fn.description === "string" && fn.description !== "") text += `${fn.description}\n`;
    text += `${safeJson(fn.parameters ?? {})}\n`;
  }
  return text;
}

/** Appends `<|im_start|>{role}<|im_sep|>{parts...}<|im_end|>` to `out`. */
function pushMessage(out: number[], role: string, parts: readonly string[]): void {
  out.push(lib().imStart);
  for (const t of encodeText(role)) out.push(t);
  out.push(lib().imSep);
  for (const part of parts) for (const t of encodeText(part)) out.push(t);
  out.push(lib().imEnd);
}

/** The texts of an assistant message's tool calls: name then JSON arguments, for each call. */
function toolCallParts(calls: readonly ToolCall[] | undefined): string[] {
  const parts: string[] = [];
  for (const call of calls ?? []) {
    parts.push(String(call?.function?.name ?? ""));
    parts.push(String(call?.function?.arguments ?? ""));
  }
  return parts;
}

/**
 * The canonical token sequence of a prompt, in the ChatML layout OpenAI-style models read:
 * the tool definitions first (as a pseudo system message `# Tools` with each tool's name, description and
 * JSON parameter schema), then every message as `<|im_start|>{role}<|im_sep|>{content}<|im_end|>`
 * (assistant tool calls add their names and arguments; a `tool` message's content is the result), then
 * the reply priming `<|im_start|>assistant<|im_sep|>`.
 *
 * Identical prompts give identical sequences and a prompt extended at the end keeps its prefix, which is
 * what prompt caching (D23) hashes. Never throws.
 */
export function encodePrompt(messages: readonly ChatMessage[], tools: readonly ToolDefinition[]): number[] {
  const out: number[] = [];
  if (tools.length > 0) pushMessage(out, "system", [toolsText(tools)]);
  for (const message of messages) {
    const parts = contentParts(message?.content);
    if (message?.role === "assistant") parts.push(...toolCallParts(message.tool_calls));
    pushMessage(out, String(message?.role ?? ""), parts);
  }
  out.push(lib().imStart);
  for (const t of encodeText("assistant")) out.push(t);
  out.push(lib().imSep);
  return out;
}

/**
 * Prompt tokens of a chat request, OpenAI-style: per message 3 markup tokens plus its role and content
 * tokens (assistant tool calls: their names and arguments), the tool schemas serialized as one system
 * message, plus {@link REPLY_PRIMING_TOKENS}. Equals `encodePrompt(messages, tools).length`. Never throws.
 */
export function countMessageTokens(messages: readonly ChatMessage[], tools: readonly ToolDefinition[]): number {
  let n = 2 + countTokens("assistant");
  if (tools.length > 0) n += 3 + countTokens("system") + countTokens(toolsText(tools));
  for (const message of messages) {
    n += 3 + countTokens(String(message?.role ?? ""));
    for (const part of contentParts(message?.content)) n += countTokens(part);
    if (message?.role === "assistant") for (const part of toolCallParts(message.tool_calls)) n += countTokens(part);
  }
  return n;
}

/** Token amounts of a hold: what {@link quoteTextCall}-style pricing needs, in tokens. */
export interface HoldTokens {
  /** Prompt tokens (all assumed uncached: a hold is the worst case). */
  inputTokens: number;
  /** Always 0 for a hold; the real charge applies the cache discount. */
  cachedTokens: number;
  /** Output tokens the call may produce. */
  outputTokens: number;
}

/**
 * The tokens to hold before a text call (spec "Billing rules" 1): the whole prompt at the uncached price
 * and `maxTokens` of output, capped by what still fits in `contextWindow` (when given). Negative or
 * non-finite inputs count as 0.
 */
export function estimateHold(inputTokens: number, maxTokens: number, contextWindow?: number): HoldTokens {
  const input = Number.isFinite(inputTokens) && inputTokens > 0 ? Math.ceil(inputTokens) : 0;
  let output = Number.isFinite(maxTokens) && maxTokens > 0 ? Math.ceil(maxTokens) : 0;
  if (contextWindow !== undefined && Number.isFinite(contextWindow)) {
    output = Math.max(0, Math.min(output, contextWindow - input));
  }
  return { inputTokens: input, cachedTokens: 0, outputTokens: output };
}
