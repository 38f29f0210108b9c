/**
 * Helpers of the job API tests (D30): a visual upstream whose jobs the test starts, advances and ends by
 * hand (the upstream seam of `ServiceOverrides.visual`, in place of the simulator; the database, runner,
 * limits and HTTP are the real ones), and a reader of `text/event-stream` answers.
 */
import { renderPngAsync } from "../../src/upstreams/simulator/visual.ts";
import { type ImageRequest, type MediaOutput, UpstreamError, type VideoRequest, type VisualAdapter, type VisualProgress } from "../../src/upstreams/types.ts";

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** One job as the controlled upstream holds it, by prompt. */
interface Held {
  started: Deferred<{ signal: AbortSignal; onProgress: VisualProgress | undefined }>;
  finish: Deferred<"succeed" | "fail">;
  aborted: Deferred<unknown>;
  calls: number;
}

/** A {@link VisualAdapter} whose every call waits until the test ends it; calls are told apart by prompt. */
export interface ControlledVisual extends VisualAdapter {
  /** Resolves once the runner called the upstream for `prompt` (the job is `processing`). */
  started(prompt: string): Promise<void>;
  /** Reports progress of `prompt`'s call as the upstream would (`onProgress(fraction)`). */
  progress(prompt: string, fraction: number): Promise<void>;
  /** Ends `prompt`'s call with a PNG (`succeed`) or a non-retryable upstream failure (`fail`). */
  end(prompt: string, outcome?: "succeed" | "fail"): void;
  /** Resolves with the abort reason once the runner aborted `prompt`'s call. */
  aborted(prompt: string): Promise<unknown>;
  /** Whether the runner aborted `prompt`'s call. */
  wasAborted(prompt: string): boolean;
  /** How many times the upstream was called for `prompt`. */
  calls(prompt: string): number;
}

/** Builds a {@link ControlledVisual}. */
export function controlledVisual(): ControlledVisual {
  const held = new Map<string, Held>();
  const abortedSet = new Set<string>();
  const get = (prompt: string): Held => {
    let h = held.get(prompt);
    if (!h) {
      h = { started: deferred(), finish: deferred(), aborted: deferred(), calls: 0 };
      held.set(prompt, h);
    }
    return h;
  };
  const run = async (prompt: string, signal: AbortSignal | undefined, onProgress: VisualProgress | undefined): Promise<"succeed"> => {
    const h = get(prompt);
    h.calls += 1;
    const sig = signal ?? new AbortController().signal;
    h.started.resolve({ signal: sig, onProgress });
    const abort = new Promise<never>((_, reject) => {
      const onAbort = () => {
        abortedSet.add(prompt);
        h.aborted.resolve(sig.reason);
        reject(sig.reason);
      };
      if (sig.aborted) onAbort();
      else sig.addEventListener("abort", onAbort, { once: true });
    });
    const outcome = await Promise.race([h.finish.promise, abort]);
    if (outcome === "fail") throw new UpstreamError("controlled upstream failure", false);
    return outcome;
  };
  return {
    async generateImages(req: ImageRequest, signal?: AbortSignal, onProgress?: VisualProgress): Promise<MediaOutput[]> {
      await run(req.prompt, signal, onProgress);
      const body = await renderPngAsync({ prompt: req.prompt, width: 16, height: 16, seed: "", index: 0 });
      return Array.from({ length: req.n }, () => ({ kind: "bytes" as const, contentType: "image/png", body, width: 16, height: 16 }));
    },
    async generateVideo(req: VideoRequest, signal?: AbortSignal, onProgress?: VisualProgress): Promise<MediaOutput> {
      await run(req.prompt, signal, onProgress);
      return { kind: "bytes", contentType: "video/mp4", body: new Uint8Array([0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65]), width: 16, height: 16, durationSec: req.durationSec };
    },
    async started(prompt) {
      await get(prompt).started.promise;
    },
    async progress(prompt, fraction) {
      const { onProgress } = await get(prompt).started.promise;
      onProgress?.(fraction);
    },
    end(prompt, outcome = "succeed") {
      get(prompt).finish.resolve(outcome);
    },
    aborted: (prompt) => get(prompt).aborted.promise,
    wasAborted: (prompt) => abortedSet.has(prompt),
    calls: (prompt) => held.get(prompt)?.calls ?? 0,
  };
}

/** One server-sent event. */
export interface ServerEvent {
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the job object as JSON
  data: any;
}

/** An open `text/event-stream` answer. */
export interface EventStream {
  status: number;
  headers: Headers;
  /** The next event, or null once the stream ended; rejects after `timeoutMs` without one. */
  next(timeoutMs?: number): Promise<ServerEvent | null>;
  /** Every remaining event until the stream ends. */
  rest(timeoutMs?: number): Promise<ServerEvent[]>;
  close(): Promise<void>;
}

/** Opens `GET url` with the key and reads its events as they come. */
export async function openEvents(url: string, token: string): Promise<EventStream> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }, signal: controller.signal });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  let pending: ReturnType<typeof reader.read> | null = null;
  const queue: ServerEvent[] = [];
  const parse = () => {
    for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length > 0) queue.push({ event, data: JSON.parse(data.join("\n")) });
    }
  };
  const next = async (timeoutMs = 10_000): Promise<ServerEvent | null> => {
    const deadline = Date.now() + timeoutMs;
    while (queue.length === 0 && !ended) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no event within ${timeoutMs} ms`);
      let timer: NodeJS.Timeout | undefined;
      // A read that lost to the timeout stays the pending read: its chunk is the next one.
      pending ??= reader.read();
      const chunk = await Promise.race([
        pending,
        new Promise<"timeout">((r) => {
          timer = setTimeout(() => r("timeout"), left);
        }),
      ]).finally(() => clearTimeout(timer));
      if (chunk === "timeout") continue;
      pending = null;
      if (chunk.done) ended = true;
      else {
        buffer += decoder.decode(chunk.value, { stream: true });
        parse();
      }
    }
    return queue.shift() ?? null;
  };
  return {
    status: res.status,
    headers: res.headers,
    next,
    async rest(timeoutMs = 10_000) {
      const out: ServerEvent[] = [];
      for (let e = await next(timeoutMs); e !== null; e = await next(timeoutMs)) out.push(e);
      return out;
    },
    async close() {
      controller.abort();
      await reader.cancel().catch(() => {});
    },
  };
}

/** Waits `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
