/**
 * The built-in simulated chat upstream (D10 spirit): answers every text model of the catalog without a
 * provider, deterministically, with real token counts and a prompt cache (D23).
 *
 * - Answers: a short, plausible reply that quotes the last user message, picked by a hash of the model and
 *   the conversation (same request, same answer). Cut at `maxTokens` (whole words; `finishReason`
 *   `length`).
 * - Tools: with tools and `toolChoice` not `none`, a user turn is answered by one call to the first tool
 *   (or the named one), arguments built from its JSON schema (`finishReason` `tool_calls`, content null).
 *   After a `tool` message the answer is text using the result, unless `toolChoice` forces a call
 *   (`required` or a named function always calls, as upstreams do).
 * - Usage: `promptTokens = countMessageTokens(messages, tools)` (the length of `encodePrompt`);
 *   `completionTokens = countTokens(content)`, or for tool calls the sum of `countTokens(name) +
 *   countTokens(arguments)` of each call.
 * - Prompt cache (D23): per `cacheScope` (the account; the model is not part of the key, as D23 speaks of
 *   "the same user" only), the prompt's canonical token sequence (`encodePrompt`) is hashed at the
 *   boundaries 1024, 1152, 1280, ... (1024 + k x 128 tokens) and each hash kept for 5 minutes. A later
 *   prompt whose prefix hash at a boundary was seen within 5 minutes reports `cachedTokens` = the longest
 *   such boundary: a multiple of 128 tokens, at least 1024, at most the prompt length (as OpenAI rounds).
 *   Memory is bounded: at most {@link SimulatedChatOptions.cacheMaxEntriesPerScope} hashes per scope and
 *   {@link SimulatedChatOptions.cacheMaxEntries} in all, least recently used first out.
 * - Latency ({@link SIM_CHAT_TIMING} x `latencyScale`): first token after 0.3 s, 20 ms between stream
 *   pieces. `X-Svc-Simulate` via `simulateLatency`: `fail` throws {@link UpstreamError} (a stream before
 *   its first piece), `slow`/`hang` add at least 1 s even at scale 0; `signal` aborts.
 */
import { createHash, hash } from "node:crypto";
import type {
  ChatAdapter,
  ChatDelta,
  ChatMessage,
  ChatRequest,
  ChatResult,
  ChatUsage,
  TextPart,
  ToolCall,
  ToolDefinition,
} from "../chat-types.ts";
import { countTokens, encodePrompt } from "../tokens.ts";
import { simulateLatency } from "./delay.ts";

/** Simulated delays in seconds, before multiplication by `latencyScale`. */
export const SIM_CHAT_TIMING = {
  /** Until the first token (a complete answer adds one gap per stream piece). */
  firstTokenSec: 0.3,
  /** Between two stream pieces. */
  deltaGapSec: 0.02,
} as const;

/** Prompt-cache rules of D23 as the simulator applies them. */
export const SIM_PROMPT_CACHE = {
  /** Shortest cacheable prefix, tokens. */
  minTokens: 1024,
  /** Cached lengths grow in steps of this many tokens past the minimum. */
  stepTokens: 128,
  /** Lifetime of a cached prefix, ms (refreshed by every prompt that contains it). */
  ttlMs: 5 * 60 * 1000,
} as const;

/** Words per streamed content piece. */
const WORDS_PER_DELTA = 3;

/** Options of {@link createSimulatedChat}. */
export interface SimulatedChatOptions {
  /** Multiplier of every simulated delay (0 = none except `slow`/`hang`); `SIM_LATENCY_SCALE`. */
  latencyScale: number;
  /** Clock of the prompt cache, ms since the epoch (default `Date.now`); tests inject one. */
  now?: () => number;
  /** Cap of cached prefix hashes per scope (default 4096: a 525k-token prompt). */
  cacheMaxEntriesPerScope?: number;
  /** Cap of cached prefix hashes over all scopes (default 200_000, about 30 MB). */
  cacheMaxEntries?: number;
}

/** The simulated chat upstream: a {@link ChatAdapter} whose `close()` drops the prompt cache. */
export type SimulatedChat = ChatAdapter & {
  /** Drops the prompt cache; the adapter keeps working with an empty one. */
  close(): void;
  /** Number of cached prefix hashes (for tests and metrics). */
  cacheSize(): number;
};

// ------------------------------------------------------------------------------------------ text helpers

/** The text of a message content (parts joined by newlines). */
function textOf(content: string | TextPart[] | null | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((p) => p !== null && typeof p === "object" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}

/** At most `max` whitespace-separated words of `text`, each cut to 40 code points (bounded for 1 MB input). */
function someWords(text: string, max: number): string[] {
  const words: string[] = [];
  for (const m of text.slice(0, 4000).matchAll(/\S+/gu)) {
    const w = m[0];
    words.push(w.length > 40 ? `${Array.from(w).slice(0, 40).join("")}...` : w);
    if (words.length >= max) break;
  }
  return words;
}

/** A short quote of `text`: its first 12 words, with an ellipsis when there were more. */
function quoteOf(text: string): string {
  const words = someWords(text, 13);
  if (words.length === 0) return "";
  return words.length > 12 ? `${words.slice(0, 12).join(" ")}...` : words.join(" ");
}

/** A deterministic pseudo-random generator (mulberry32) seeded from a hash. */
function rng(seedHex: string): () => number {
  let a = Number.parseInt(seedHex.slice(0, 8), 16) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stable hash of the request's conversation, the seed of everything the answer picks. */
function seedOf(req: ChatRequest): string {
  let tools = "";
  try {
    tools = JSON.stringify(req.tools.map((t) => t.function.name));
  } catch {
    tools = "";
  }
  const parts = [req.model, tools];
  for (const m of req.messages) {
    parts.push(m.role, textOf(m.content));
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) parts.push(c.function.name, c.function.arguments);
    if (m.role === "tool") parts.push(m.tool_call_id);
  }
  return hash("sha256", parts.join("\u0000"), "hex");
}

const OPENERS = ["Sure.", "Good question.", "Happy to help.", "Here is a short answer.", "Of course."];
const BODY = [
  "The short version is that it depends on your constraints, but the simple approach usually works best.",
  "Start with the smallest working example, then add one piece at a time and check each step.",
  "The key idea is to keep the inputs explicit and the results easy to verify.",
  "A good first step is to write down what a correct result looks like before changing anything.",
  "Most problems of this kind come down to a few clear decisions made in the right order.",
  "If you share more details, I can give a more specific recommendation.",
  "In practice, measuring before and after a change tells you more than any rule of thumb.",
  "There are trade-offs either way, so pick the option that is easiest to undo.",
];
const CLOSERS = ["Let me know if you want more detail.", "I hope this helps.", "Tell me if anything is unclear."];

/** Picks one element of `list` with `rand`. */
function pick<T>(list: readonly T[], rand: () => number): T {
  return list[Math.floor(rand() * list.length) % list.length];
}

/** The plain text answer to a user turn: an opener, a quote of the question, 1-4 body sentences. */
function textAnswer(lastUser: string, rand: () => number): string {
  const quote = quoteOf(lastUser);
  if (quote === "") return "Hello! How can I help you today?";
  const sentences = [pick(OPENERS, rand), `You asked: "${quote}"`];
  const bodyCount = 1 + Math.floor(rand() * 4);
  const start = Math.floor(rand() * BODY.length);
  for (let i = 0; i < bodyCount; i++) sentences.push(BODY[(start + i) % BODY.length]);
  sentences.push(pick(CLOSERS, rand));
  return sentences.join(" ");
}

/** The text answer after a tool result: quotes the result and the tool's name. */
function toolFollowUp(toolName: string, result: string, rand: () => number): string {
  const quote = quoteOf(result);
  const summary = quote === "" ? "an empty result" : `"${quote}"`;
  const body = pick(BODY, rand);
  const lowered = `${body.charAt(0).toLowerCase()}${body.slice(1)}`;
  return `The ${toolName} tool returned ${summary}. Based on that result, ${lowered}`;
}

/** The name of the tool whose call `toolCallId` answers, searching earlier assistant messages. */
function toolNameOf(messages: readonly ChatMessage[], toolCallId: string): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== "assistant") continue;
    for (const call of m.tool_calls ?? []) if (call.id === toolCallId) return call.function.name;
  }
  return "tool";
}

/** The last user message's text ("" when there is none). */
function lastUserText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return textOf(messages[i].content);
  return "";
}

/**
 * The longest word prefix of `text` of at most `maxTokens` tokens (binary search on the word count).
 * Returns the text unchanged when it fits.
 */
function cutToTokens(text: string, maxTokens: number): { text: string; cut: boolean } {
  if (countTokens(text) <= maxTokens) return { text, cut: false };
  const words = text.split(/(?<=\s)/u);
  let lo = 0;
  let hi = words.length - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (countTokens(words.slice(0, mid).join("").trimEnd()) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  return { text: words.slice(0, lo).join("").trimEnd(), cut: true };
}

// ------------------------------------------------------------------------------------------- tool calls

/** A record view of an unknown value, or undefined. */
function asRecord(value: unknown): Record<string, unknown> | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  return value as Record<string, unknown>;
}

/** A value satisfying a JSON schema: strings from the user's words, numbers 1, booleans true. */
function valueFor(schema: unknown, words: string, depth: number): unknown {
  const s = asRecord(schema) ?? {};
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if ("const" in s) return s.const;
  let type = s.type;
  if (Array.isArray(type)) type = type.find((t) => t !== "null") ?? "null";
  switch (type) {
    case "number":
    case "integer": {
      let min = 1;
      if (typeof s.minimum === "number") min = s.minimum;
      else if (typeof s.exclusiveMinimum === "number") min = s.exclusiveMinimum + 1;
      let value = Math.max(1, type === "integer" ? Math.ceil(min) : min);
      if (typeof s.maximum === "number" && value > s.maximum) {
        value = type === "integer" ? Math.floor(s.maximum) : s.maximum;
      }
      return value;
    }
    case "boolean":
      return true;
    case "null":
      return null;
    case "array":
      return depth < 4 && s.items !== undefined ? [valueFor(s.items, words, depth + 1)] : [];
    case "object":
      return depth < 4 ? objectFor(s, words, depth + 1) : {};
    default: {
      if (s.format === "date") return "2026-01-01";
      if (s.format === "date-time") return "2026-01-01T00:00:00Z";
      if (s.format === "email") return "user@example.com";
      if (s.format === "uri" || s.format === "url") return "https://example.com/";
      return words;
    }
  }
}

/** An object for an object schema: every required property filled (the first property when none is). */
function objectFor(schema: Record<string, unknown>, words: string, depth: number): Record<string, unknown> {
  const props = asRecord(schema.properties) ?? {};
  let names = Array.isArray(schema.required) ? schema.required.filter((n): n is string => typeof n === "string") : [];
  if (names.length === 0 && !Array.isArray(schema.required)) names = Object.keys(props).slice(0, 1);
  // A null prototype: a property named `__proto__` becomes an ordinary key of the arguments.
  const out = Object.create(null) as Record<string, unknown>;
  for (const name of names) out[name] = valueFor(props[name], words, depth);
  return out;
}

/** The tool to call, or null for a text answer. */
function chooseTool(req: ChatRequest): ToolDefinition | null {
  if (req.tools.length === 0) return null;
  const choice = req.toolChoice;
  if (choice === "none") return null;
  const named = asRecord(asRecord(choice)?.function)?.name;
  if (typeof named === "string") return req.tools.find((t) => t.function.name === named) ?? req.tools[0];
  if (choice === "required") return req.tools[0];
  const last = req.messages[req.messages.length - 1];
  return last?.role === "user" ? req.tools[0] : null;
}

/** One call to `tool` with arguments built from its parameter schema and the user's words. */
function toolCallFor(tool: ToolDefinition, req: ChatRequest, seed: string): ToolCall {
  const words = quoteOf(lastUserText(req.messages)) || "example";
  const params = asRecord(tool.function.parameters) ?? {};
  const args = objectFor({ type: "object", ...params }, words, 0);
  return {
    id: `call_${seed.slice(8, 32)}`,
    type: "function",
    function: { name: tool.function.name, arguments: JSON.stringify(args) },
  };
}

// ----------------------------------------------------------------------------------------- prompt cache

/** Prefix hashes at the cache boundaries of a prompt: `[boundary, hash]`, boundaries ascending. */
function prefixHashes(tokens: readonly number[]): Array<[number, string]> {
  const { minTokens, stepTokens } = SIM_PROMPT_CACHE;
  if (tokens.length < minTokens) return [];
  const words = Uint32Array.from(tokens);
  const bytes = new Uint8Array(words.buffer);
  const h = createHash("sha256");
  const out: Array<[number, string]> = [];
  let done = 0;
  for (let boundary = minTokens; boundary <= tokens.length; boundary += stepTokens) {
    h.update(bytes.subarray(done * 4, boundary * 4));
    done = boundary;
    out.push([boundary, h.copy().digest("base64url").slice(0, 24)]);
  }
  return out;
}

/** Per-scope maps of prefix hash -> expiry (ms), in refresh order; scopes in use order. */
class PromptCache {
  private readonly scopes = new Map<string, Map<string, number>>();
  private total = 0;
  private readonly now: () => number;
  private readonly maxPerScope: number;
  private readonly maxTotal: number;

  constructor(now: () => number, maxPerScope: number, maxTotal: number) {
    this.now = now;
    this.maxPerScope = Math.max(1, maxPerScope);
    this.maxTotal = Math.max(1, maxTotal);
  }

  /** Looks up the longest cached prefix of `tokens` for `scope`, then records all of its prefixes. */
  use(scope: string, tokens: readonly number[]): number {
    const hashes = prefixHashes(tokens);
    if (hashes.length === 0) return 0;
    const now = this.now();
    let entries = this.scopes.get(scope);
    let cached = 0;
    if (entries !== undefined) {
      this.scopes.delete(scope);
      this.dropExpired(entries, now);
      for (let i = hashes.length - 1; i >= 0; i--) {
        const expiry = entries.get(hashes[i][1]);
        if (expiry !== undefined && expiry > now) {
          cached = hashes[i][0];
          break;
        }
      }
    } else {
      entries = new Map();
    }
    this.scopes.set(scope, entries);
    const expiry = now + SIM_PROMPT_CACHE.ttlMs;
    for (const [, key] of hashes) {
      if (entries.delete(key)) this.total--;
      entries.set(key, expiry);
      this.total++;
    }
    while (entries.size > this.maxPerScope) this.dropOldest(entries);
    this.evictOverTotal(scope);
    return cached;
  }

  /** Number of cached prefix hashes. */
  size(): number {
    return this.total;
  }

  clear(): void {
    this.scopes.clear();
    this.total = 0;
  }

  /** Entries are in refresh order with one TTL, so expired ones are at the front. */
  private dropExpired(entries: Map<string, number>, now: number): void {
    for (const [key, expiry] of entries) {
      if (expiry > now) break;
      entries.delete(key);
      this.total--;
    }
  }

  private dropOldest(entries: Map<string, number>): void {
    const first = entries.keys().next();
    if (first.done === true) return;
    entries.delete(first.value);
    this.total--;
  }

  /** Over the global cap: empties least recently used scopes first, then trims the current one. */
  private evictOverTotal(current: string): void {
    for (const [scope, entries] of this.scopes) {
      if (this.total <= this.maxTotal) return;
      if (scope === current) continue;
      this.total -= entries.size;
      this.scopes.delete(scope);
    }
    const entries = this.scopes.get(current);
    while (entries !== undefined && this.total > this.maxTotal && entries.size > 0) this.dropOldest(entries);
  }
}

// -------------------------------------------------------------------------------------------- the adapter

/** A planned answer, before latency. */
interface Plan {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: ChatResult["finishReason"];
  completionTokens: number;
  /** Content pieces of a stream (concatenated: `content`). */
  pieces: string[];
}

/** Decides the answer of `req` (pure: same request, same plan). */
function planAnswer(req: ChatRequest): Plan {
  const seed = seedOf(req);
  const rand = rng(seed);
  const tool = chooseTool(req);
  if (tool !== null) {
    const call = toolCallFor(tool, req, seed);
    const completionTokens = countTokens(call.function.name) + countTokens(call.function.arguments);
    return { content: null, toolCalls: [call], finishReason: "tool_calls", completionTokens, pieces: [] };
  }
  const last = req.messages[req.messages.length - 1];
  const full =
    last?.role === "tool"
      ? toolFollowUp(toolNameOf(req.messages, last.tool_call_id), textOf(last.content), rand)
      : textAnswer(lastUserText(req.messages), rand);
  const maxTokens = Number.isFinite(req.maxTokens) ? Math.max(0, Math.floor(req.maxTokens)) : 4096;
  const { text, cut } = cutToTokens(full, maxTokens);
  const words = text.split(/(?<=\s)/u).filter((w) => w !== "");
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += WORDS_PER_DELTA) pieces.push(words.slice(i, i + WORDS_PER_DELTA).join(""));
  return {
    content: text,
    toolCalls: [],
    finishReason: cut ? "length" : "stop",
    completionTokens: countTokens(text),
    pieces,
  };
}

/**
 * Creates the simulated chat upstream. Deterministic answers, real token counts, a per-scope prompt cache
 * (see the module notes); `close()` drops the cache.
 */
export function createSimulatedChat(options: SimulatedChatOptions): SimulatedChat {
  const scale = Math.max(0, options.latencyScale);
  const cache = new PromptCache(
    options.now ?? Date.now,
    options.cacheMaxEntriesPerScope ?? 4096,
    options.cacheMaxEntries ?? 200_000,
  );

  /** Prompt usage of `req`, recording its prefixes in the cache. */
  function promptUsage(req: ChatRequest): { promptTokens: number; cachedTokens: number } {
    const tokens = encodePrompt(req.messages, req.tools);
    return { promptTokens: tokens.length, cachedTokens: cache.use(req.cacheScope, tokens) };
  }

  function usageOf(prompt: { promptTokens: number; cachedTokens: number }, plan: Plan): ChatUsage {
    const { promptTokens, cachedTokens } = prompt;
    return { promptTokens, cachedTokens, completionTokens: plan.completionTokens };
  }

  return {
    async chat(req: ChatRequest, signal?: AbortSignal): Promise<ChatResult> {
      const plan = planAnswer(req);
      const sec = SIM_CHAT_TIMING.firstTokenSec + SIM_CHAT_TIMING.deltaGapSec * plan.pieces.length;
      await simulateLatency(sec, scale, req.simulate, signal);
      const usage = usageOf(promptUsage(req), plan);
      return { content: plan.content, toolCalls: plan.toolCalls, finishReason: plan.finishReason, usage };
    },

    async *chatStream(req: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatDelta> {
      const plan = planAnswer(req);
      await simulateLatency(SIM_CHAT_TIMING.firstTokenSec, scale, req.simulate, signal);
      const prompt = promptUsage(req);
      for (let i = 0; i < plan.pieces.length; i++) {
        if (i > 0) await simulateLatency(SIM_CHAT_TIMING.deltaGapSec, scale, null, signal);
        yield { content: plan.pieces[i] };
      }
      if (plan.toolCalls.length > 0) yield { toolCalls: plan.toolCalls };
      await simulateLatency(0, scale, null, signal);
      yield { finishReason: plan.finishReason, usage: usageOf(prompt, plan) };
    },

    close(): void {
      cache.clear();
    },

    cacheSize(): number {
      return cache.size();
    },
  };
}
