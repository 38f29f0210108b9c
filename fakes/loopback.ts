/**
 * The HTTP server under the loopback fakes of the providers (fal.ts, bfl.ts, openai-images.ts,
 * elevenlabs.ts; minimax.ts, openai-audio.ts and stripe.ts, which read raw bodies, use
 * {@link startLoopbackServer} underneath): listens on
 * loopback, reads each request body (at most 1 MiB, else 413), parses it as JSON, records the request
 * with the key cut out of its headers, hands it to the protocol's handler, and drops every connection on
 * `close()`. The protocol's own routes, shapes and misbehaviour markers stay in each fake.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One recorded request: `path` with its query, lower-case `headers` (the key cut out), the parsed JSON `body` or null. */
export interface LoopbackFakeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A running fake. */
export interface LoopbackFake {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every request received, in order. */
  requests: LoopbackFakeRequest[];
  /** The recorded submits (`POST`s). */
  submits(): LoopbackFakeRequest[];
  /** Forgets the recorded requests (the array stays the same object). */
  reset(): void;
  /** Stops listening and drops every connection (requests the handler never answered included). */
  close(): Promise<void>;
}

/**
 * A request as the handler gets it: `body` is the parsed JSON, null when empty, undefined when not JSON;
 * `raw` the body's bytes (for a fake that reads other bodies, such as multipart uploads).
 */
export interface LoopbackFakeCall {
  url: URL;
  method: string;
  body: unknown;
  raw: Buffer;
}

/** A handler of HTTP upgrades (WebSocket fakes): Node's `upgrade` event, unchanged. */
export type LoopbackUpgradeHandler = (req: http.IncomingMessage, socket: Socket, head: Buffer) => void;

/** Options of {@link startLoopbackFake}. */
export interface LoopbackFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** How a header is recorded (lower-case `name`, value joined by `, `): the place to cut the key out. */
  recordHeader: (name: string, value: string) => string;
  /** Answers upgrade requests (WebSockets); without it the server drops them, as Node does. */
  onUpgrade?: LoopbackUpgradeHandler;
}

const MAX_BODY_BYTES = 1024 * 1024;

/** Misbehaviour markers in a prompt: `[fake:NAME]`. */
const MARKER = /\[fake:([a-z0-9-]+)\]/g;

/**
 * Starts a fake on loopback. `handler` answers each request (it may leave one unanswered: `close()`
 * drops it); an exception becomes a 500 `{detail: "fake error: ..."}`.
 */
export async function startLoopbackFake(
  options: LoopbackFakeOptions,
  handler: (req: http.IncomingMessage, res: http.ServerResponse, call: LoopbackFakeCall) => Promise<void> | void,
): Promise<LoopbackFake> {
  const requests: LoopbackFakeRequest[] = [];
  const record = (headers: http.IncomingHttpHeaders): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined) out[name] = options.recordHeader(name, Array.isArray(value) ? value.join(", ") : value);
    }
    return out;
  };
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = (req.method ?? "GET").toUpperCase();
    let body: unknown = null;
    if (raw.byteLength > 0) {
      try {
        body = JSON.parse(raw.toString("utf8")) as unknown;
      } catch {
        body = undefined;
      }
    }
    requests.push({ method, path: url.pathname + url.search, headers: record(req.headers), body: body ?? null });
    await handler(req, res, { url, method, body, raw });
  };
  const server = await startLoopbackServer(
    { port: options.port, host: options.host, errorBody: (_status, message) => ({ detail: message }), onUpgrade: options.onUpgrade },
    handle,
  );
  return {
    url: server.url,
    requests,
    submits: () => requests.filter((r) => r.method === "POST"),
    reset: () => {
      requests.length = 0;
    },
    close: () => server.close(),
  };
}

/** Options of {@link startLoopbackServer}. */
export interface LoopbackServerOptions {
  /** Default 0 (any free port). */
  port?: number | undefined;
  /** Default `127.0.0.1`. */
  host?: string | undefined;
  /** Largest request body read, bytes (default 1 MiB); a larger one answers 413. */
  maxBodyBytes?: number;
  /** The protocol's error body for the 413 and for a handler that threw (500). */
  errorBody: (status: 413 | 500, message: string) => unknown;
  /** Answers upgrade requests; the handler owns the sockets it takes (and destroys them before `close()`). */
  onUpgrade?: LoopbackUpgradeHandler | undefined;
}

/** A listening loopback server: its base URL and a `close()` that drops every connection. */
export interface LoopbackServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The server scaffolding of every fake: reads each request body whole (at most `maxBodyBytes`, else 413),
 * hands it raw to `handle` (a fake that records bodies other than JSON, such as multipart uploads or int64
 * ids, reads them itself), answers 500 when `handle` throws before answering, and drops every connection
 * (held requests included) on `close()`.
 */
export async function startLoopbackServer(
  options: LoopbackServerOptions,
  handle: (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer) => Promise<void>,
): Promise<LoopbackServer> {
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const logRequests = process.env.FAKE_LOG_REQUESTS === "1";
  const server = http.createServer((req, res) => {
    if (logRequests) logWhenAnswered(req, res);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= maxBodyBytes) chunks.push(chunk);
    });
    req.on("end", () => {
      if (size > maxBodyBytes) return sendJson(res, 413, options.errorBody(413, "Request body too large"));
      handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, options.errorBody(500, `fake error: ${err instanceof Error ? err.message : String(err)}`));
        else res.destroy();
      });
    });
  });
  if (options.onUpgrade !== undefined) server.on("upgrade", options.onUpgrade);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${hostPart}:${address.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * With `FAKE_LOG_REQUESTS=1` (set by `npm run fake-upstreams`), one line per answered request on stdout:
 * `fake :18480 POST /fal-ai/flux-2-pro -> 404 (3 ms)`. The path only: no header, no body, no key.
 */
function logWhenAnswered(req: http.IncomingMessage, res: http.ServerResponse): void {
  const started = performance.now();
  const port = req.socket.localPort ?? 0;
  res.on("close", () => {
    const ms = Math.round(performance.now() - started);
    const status = res.headersSent ? String(res.statusCode) : "dropped";
    process.stdout.write(`fake :${port} ${req.method ?? "GET"} ${req.url ?? "/"} -> ${status} (${ms} ms)\n`);
  });
}

/** Answers `code` with `body` as JSON (and `content-length`), plus `headers`. */
export function sendJson(res: http.ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/** The markers of one submit: those of every submit (`always`), any given elsewhere (`extra`), and those in the prompt. */
export function markersOf(prompt: string, always: readonly string[] = [], extra: readonly string[] = []): Set<string> {
  return new Set([...always, ...extra, ...Array.from(prompt.matchAll(MARKER), (m) => m[1])]);
}

/** True for a JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A request header as a fake records it when the key travels in `authorization` (fal's `Key`, OpenAI's
 * `Bearer`): that header keeps only its scheme (`Key [redacted]`); every other header as it came.
 */
export function recordAuthorizationScheme(name: string, value: string): string {
  if (name !== "authorization") return value;
  const scheme = /^(\S+)\s+\S/.exec(value)?.[1];
  return scheme === undefined ? "[redacted]" : `${scheme} [redacted]`;
}
