/**
 * A fake OpenAI-compatible server on 127.0.0.1 for adapter and fallback tests. Each request is
 * answered by a scriptable {@link FakeBehaviour}: queued ones first (one per request, in order), then
 * the `respond` function, then a default JSON answer. Every request is recorded (method, path,
 * headers, parsed body) so tests can assert what the adapter sent.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** How the fake answers one request. */
export type FakeBehaviour =
  /** A JSON answer (default status 200). */
  | { kind: "json"; body: unknown; status?: number; headers?: Record<string, string> }
  /**
   * An SSE stream: each event is `data: <JSON of the value>` (a string is sent as-is, so `"[DONE]"`
   * works), separated by blank lines, written `delayMs` apart. `done` (default true) appends
   * `data: [DONE]`. `dropAfter` destroys the socket after that many events (an upstream dying mid-stream).
   */
  | { kind: "sse"; events: unknown[]; done?: boolean; delayMs?: number; dropAfter?: number }
  /** Raw bytes with a status and content type (malformed JSON, odd SSE framing). */
  | { kind: "raw"; status?: number; contentType?: string; body: string }
  /** Never answers (until the client gives up or the server closes). */
  | { kind: "hang" };

/** A request the fake received. `body` is the parsed JSON (or the raw text when it was not JSON). */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** A running fake server. */
export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1`, the adapter's `baseUrl`. */
  baseUrl: string;
  /** Every request received so far, in order. */
  requests: RecordedRequest[];
  /** Queues behaviours for the next requests, one each. */
  enqueue(...behaviours: FakeBehaviour[]): void;
  /** Answers requests that find the queue empty (for example by `body.model`). */
  respond: ((req: RecordedRequest) => FakeBehaviour) | null;
  /** Forgets queued behaviours, `respond` and recorded requests. */
  reset(): void;
  /** Stops the server, cutting every open connection (hanging ones included). */
  close(): Promise<void>;
}

/** Starts a fake server on a free loopback port. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: FakeBehaviour[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the raw text
      }
      const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body };
      fake.requests.push(recorded);
      const behaviour = queue.shift() ?? fake.respond?.(recorded) ?? { kind: "json", body: completion({ content: "ok" }) };
      void answer(behaviour, res);
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  const fake: FakeOpenAI = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests: [],
    enqueue: (...behaviours) => queue.push(...behaviours),
    respond: null,
    reset() {
      queue.length = 0;
      fake.respond = null;
      fake.requests.length = 0;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

async function answer(behaviour: FakeBehaviour, res: http.ServerResponse): Promise<void> {
  switch (behaviour.kind) {
    case "json":
      res.writeHead(behaviour.status ?? 200, { "content-type": "application/json", ...behaviour.headers });
      res.end(JSON.stringify(behaviour.body));
      return;
    case "raw":
      res.writeHead(behaviour.status ?? 200, { "content-type": behaviour.contentType ?? "application/json" });
      res.end(behaviour.body);
      return;
    case "hang":
      return;
    case "sse": {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const events = [...behaviour.events];
      if (behaviour.done !== false) events.push("[DONE]");
      for (let i = 0; i < events.length; i++) {
        if (behaviour.dropAfter !== undefined && i >= behaviour.dropAfter) {
          res.socket?.destroy();
          return;
        }
        if (res.destroyed) return;
        const event = events[i];
        res.write(`data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`);
        if (behaviour.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
      }
      res.end();
      return;
    }
  }
}

/** Token counts of a fixture answer (`cached` goes into `prompt_tokens_details.cached_tokens`). */
export interface FixtureUsage {
  prompt: number;
  completion: number;
  cached?: number;
}

function usageJson(usage: FixtureUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
    prompt_tokens_details: { cached_tokens: usage.cached ?? 0 },
  };
}

/** A non-streaming chat-completions answer. */
export function completion(opts: {
  content?: string | null;
  toolCalls?: { id: string; name: string; arguments: string }[];
  finishReason?: string;
  usage?: FixtureUsage;
  model?: string;
}): Record<string, unknown> {
  const toolCalls = opts.toolCalls?.map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    id: "chatcmpl-fake",
    object: "chat.completion",
    created: 1_700_000_000,
    model: opts.model ?? "upstream-model",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: opts.content ?? null, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
        finish_reason: opts.finishReason ?? (toolCalls ? "tool_calls" : "stop"),
      },
    ],
    usage: usageJson(opts.usage ?? { prompt: 10, completion: 5 }),
  };
}

/** One `chat.completion.chunk` with the given delta and finish reason. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "upstream-model",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

/** The final usage chunk of a stream with `include_usage` (`choices: []`). */
export function usageChunk(usage: FixtureUsage): Record<string, unknown> {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "upstream-model",
    choices: [],
    usage: usageJson(usage),
  };
}

/** The events of a streamed text answer: a role chunk, one chunk per piece, a finish chunk, and usage. */
export function textStream(pieces: string[], usage: FixtureUsage | null = { prompt: 10, completion: 5 }): unknown[] {
  const events: unknown[] = [chunk({ role: "assistant", content: "" })];
  for (const piece of pieces) events.push(chunk({ content: piece }));
  events.push(chunk({}, "stop"));
  if (usage !== null) events.push(usageChunk(usage));
  return events;
}
