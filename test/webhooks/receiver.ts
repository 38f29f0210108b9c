/**
 * A webhook receiver on loopback for the tests (D31): records every POST (path, headers, raw body) and
 * answers with the status its `respond` function picks. Signatures are checked by the tests with the
 * official `standardwebhooks` package, never with the gateway's code.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One request the receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status it answered. */
  status: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Picks the status of each request (default 200). */
  respond: (req: { path: string; count: number }) => number;
  /** Requests to `path`. */
  on(path: string): Received[];
  /** Waits until `pred` holds (polling), or fails after `timeoutMs`. */
  waitFor(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const counts = new Map<string, number>();
  const r: Receiver = {
    url: "",
    received,
    respond: () => 200,
    on: (path) => received.filter((x) => x.path === path),
    async waitFor(pred, what, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (!pred()) {
        if (Date.now() > end) throw new Error(`receiver: timed out waiting for ${what}; got ${JSON.stringify(received.map((x) => [x.path, x.status]))}`);
        await new Promise((res) => setTimeout(res, 20));
      }
    },
    close: () => new Promise<void>((res) => server.close(() => res())),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const count = (counts.get(path) ?? 0) + 1;
      counts.set(path, count);
      const status = r.respond({ path, count });
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status });
      res.writeHead(status, { "content-type": "text/plain" }).end("ok");
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((res) => server.listen(0, "127.0.0.1", () => res()));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}

/**
 * Verifies a received request with the official package and returns the parsed body.
 * @throws the package's WebhookVerificationError when the signature does not match `secret`.
 */
export function verify(secret: string, x: Received): { id: string; type: string; created_at: string; data: Record<string, unknown> } {
  const headers = {
    "webhook-id": String(x.headers["webhook-id"]),
    "webhook-timestamp": String(x.headers["webhook-timestamp"]),
    "webhook-signature": String(x.headers["webhook-signature"]),
  };
  return new Webhook(secret).verify(x.body, headers) as { id: string; type: string; created_at: string; data: Record<string, unknown> };
}
