/**
 * A TLS front on loopback for tests that need the gateway's URLs to be `https:` (the `replicate` client
 * makes a `FileOutput` of an output only when its URL starts with `https:`). A `node:https` server with the
 * test-only self-signed certificate of `test/fixtures/tls/` (for 127.0.0.1) forwards every request to a
 * plain-http target (the gateway's port), streaming bodies both ways and keeping method, path, headers and
 * status. The test process trusts the certificate through {@link trustTestCertificate}.
 */
import { readFileSync } from "node:fs";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { Agent, type Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from "undici";

const TLS_DIR = new URL("../fixtures/tls/", import.meta.url);

/** The test certificate (PEM, self-signed, `CN=127.0.0.1`, `subjectAltName=IP:127.0.0.1`): also its own CA. */
export const TEST_CERT_PEM = readFileSync(new URL("cert.pem", TLS_DIR), "utf8");
const TEST_KEY_PEM = readFileSync(new URL("key.pem", TLS_DIR), "utf8");

/** A running front: `url` is `https://127.0.0.1:<port>`; requests go to `target` once it is set. */
export interface TlsFront {
  url: string;
  /** Sets the plain-http origin requests are forwarded to (`http://127.0.0.1:<port>`). */
  setTarget(origin: string): void;
  close(): Promise<void>;
}

/**
 * Starts the front on a free loopback port. Its URL is known before the target exists, so a gateway can be
 * started with `PUBLIC_BASE_URL` set to it and then named with {@link TlsFront.setTarget}. A request that
 * arrives with no target, or whose forwarding fails before an answer, is answered 502.
 */
export async function startTlsFront(): Promise<TlsFront> {
  let target: URL | null = null;
  const agent = new HttpAgent({ keepAlive: true });
  const server = createServer({ cert: TEST_CERT_PEM, key: TEST_KEY_PEM }, (req, res) => {
    if (target === null) {
      res.writeHead(502, { "content-type": "text/plain" }).end("tls front: no target yet");
      return;
    }
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    upstream.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end(`tls front: ${err.message}`);
      else res.destroy(err);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setTarget(origin) {
      target = new URL(origin);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

/**
 * Makes the test process's global `fetch` (Node's own undici) trust {@link TEST_CERT_PEM}, through the
 * project's undici `setGlobalDispatcher` (Node's fetch reads the dispatcher from the same global slot), so
 * that clients using `globalThis.fetch` reach the front unchanged. Only the test certificate is trusted
 * for TLS while it is set; plain http is unaffected. Returns the function that restores the dispatcher in
 * force before.
 */
export function trustTestCertificate(): () => void {
  const before: Dispatcher = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connect: { ca: TEST_CERT_PEM } }));
  return () => setGlobalDispatcher(before);
}
