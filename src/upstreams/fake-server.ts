/**
 * The plumbing every loopback fake of a provider shares (fal/fake.ts, openai-compatible/images-fake.ts):
 * an HTTP server on loopback that reads and parses each JSON body, records every request with the key
 * cut out, and hands it to the fake's own handler; JSON answers; `[fake:NAME]` markers in prompts.
 * Development and test code only: the gateway never starts a fake by itself.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * One recorded request: `method`, `path` (with query), `headers` (lower-case names; `authorization`
 * keeps only its scheme: `Key [redacted]`, `Bearer [redacted]`) and the parsed JSON `body` (null when
 * empty or not JSON).
 */
export interface FakeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A request as a fake's handler sees it: `body` is the parsed JSON, null when empty, undefined when not JSON. */
export interface FakeIncoming {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** Options of {@link startLoopbackFake}. */
export interface LoopbackFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Largest request body read, bytes (default 1 MiB); a larger one is answered 413 without calling the handler. */
  maxBodyBytes?: number;
  /** The provider's error body for the fake's own errors (413, a handler that threw: 500). */
  errorBody: (message: string) => unknown;
}

/** A running loopback server. */
export interface LoopbackFake {
  /** `http://127.0.0.1:<port>` (IPv6 hosts in brackets). */
  url: string;
  /** Every request received, in order (the array stays the same object across `reset`). */
  requests: FakeRequest[];
  /** Forgets the recorded requests. */
  reset(): void;
  /** Stops listening and drops every connection (held, never-answered requests included). */
  close(): Promise<void>;
}

/** The options every provider fake takes; each fake adds its own timings. */
export interface ProviderFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty key in the provider's header. */
  apiKey?: string;
  /** How long a `[fake:slow]` request takes, ms (default 10 000). */
  slowMs?: number;
  /** Markers applied to every request that starts work, as if each prompt carried them (`["500"]`: a provider that fails everything). Default none. */
  markers?: readonly string[];
}

/** What a provider fake gives its tests and scripts (fal/fake.ts, openai-compatible/images-fake.ts). */
export interface ProviderFake {
  /** Base URL, e.g. `http://127.0.0.1:40123` (the fake's module comment says how a source's `baseUrl` uses it). */
  url: string;
  /** Every request received, in order (see {@link FakeRequest}). */
  requests: FakeRequest[];
  /** The recorded requests that start work (the fake's module comment names them). */
  submits(): FakeRequest[];
  /** Forgets the recorded requests (the array stays the same object). */
  reset(): void;
  /** Stops listening and drops every connection (held, never-answered requests included). */
  close(): Promise<void>;
}

/** `[fake:NAME]` in a prompt: a misbehaviour marker (lower-case letters, digits and `-`). */
const MARKER = /\[fake:([a-z0-9-]+)\]/g;

/** The marker names in `prompt`, in order. */
export function promptMarkers(prompt: string): string[] {
  return Array.from(prompt.matchAll(MARKER), (m) => m[1]);
}

/**
 * Starts a fake on loopback. `handle` answers each request after its body was read, parsed and recorded;
 * a handler that throws gets a 500 with `errorBody`, or a dropped connection once it has started answering.
 */
export async function startLoopbackFake(
  options: LoopbackFakeOptions,
  handle: (incoming: FakeIncoming, res: http.ServerResponse) => Promise<void>,
): Promise<LoopbackFake> {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const requests: FakeRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= maxBodyBytes) chunks.push(chunk);
    });
    req.on("end", () => {
      if (size > maxBodyBytes) {
        sendJson(res, 413, options.errorBody("Request body too large"));
        return;
      }
      const url = new URL(req.url ?? "/", "http://fake");
      const method = (req.method ?? "GET").toUpperCase();
      const body = parseBody(Buffer.concat(chunks));
      requests.push({ method, path: url.pathname + url.search, headers: recordedHeaders(req.headers), body: body ?? null });
      handle({ method, url, headers: req.headers, body }, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, options.errorBody(`fake error: ${err instanceof Error ? err.message : String(err)}`));
        else res.destroy();
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${hostPart}:${address.port}`,
    requests,
    reset: () => {
      requests.length = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers `code` with `body` as JSON (and `content-length`), plus `headers`. Does nothing on a closed response. */
export function sendJson(res: http.ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/** Request headers as recorded: lower-case names, the key cut from `authorization`. */
export function recordedHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const v = Array.isArray(value) ? value.join(", ") : value;
    if (name === "authorization") {
      const scheme = /^(\S+)\s+\S/.exec(v)?.[1];
      out[name] = scheme === undefined ? "[redacted]" : `${scheme} [redacted]`;
    } else {
      out[name] = v;
    }
  }
  return out;
}

/** The parsed JSON of a body: null when empty, undefined when not JSON. */
function parseBody(raw: Buffer): unknown {
  if (raw.byteLength === 0) return null;
  try {
    return JSON.parse(raw.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}
