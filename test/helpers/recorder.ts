/**
 * Loopback stand-ins for the host-check tests of the keyed protocol adapters (D25): a server that records
 * what reaches it (a host that must not get the key), and a port where nothing listens.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request that reached a {@link Recorder}: its path and the value of the key header, if any. */
export interface RecorderHit {
  path: string;
  key: string | undefined;
}

/** A running recorder. */
export interface Recorder {
  url: string;
  /** `127.0.0.1:<port>`, as a `trusted_hosts` entry. */
  host: string;
  hits: RecorderHit[];
  close(): Promise<void>;
}

/** Starts a recorder that notes `keyHeader` of every request and answers `answer` as JSON, 200. */
export async function startRecorder(keyHeader: string, answer: unknown): Promise<Recorder> {
  const hits: RecorderHit[] = [];
  const server = http.createServer((req, res) => {
    const key = req.headers[keyHeader.toLowerCase()];
    hits.push({ path: req.url ?? "", key: typeof key === "string" ? key : undefined });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port that was free a moment ago and has no listener: connecting is refused. */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
