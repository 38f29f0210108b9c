/**
 * SSRF-safe fetching (src/upstreams/safe-fetch.ts). Everything runs against HTTP servers on
 * 127.0.0.1; the test-only hook `allowPrivateForTests` lets the host name `public.test` (resolved to
 * 127.0.0.1) stand in for a public host, while every other way of reaching loopback stays refused.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { lookup as dnsLookup } from "node:dns/promises";
import {
  classifyAddress,
  FetchFailedError,
  FetchTimeoutError,
  FetchTooLargeError,
  MAX_REDIRECTS,
  safeFetch,
  UnsafeUrlError,
  validateUrlSyntax,
} from "../../src/upstreams/safe-fetch.ts";
import type { PrivateAddressTestHooks, SafeFetchOptions } from "../../src/upstreams/safe-fetch.ts";

/** A loopback HTTP server that counts TCP connections and requests. */
interface CountingServer {
  port: number;
  connections: number;
  requests: number;
  close: () => Promise<void>;
}

async function startServer(handler: http.RequestListener): Promise<CountingServer> {
  const server = http.createServer(handler);
  const sockets = new Set<Socket>();
  const state: CountingServer = {
    port: 0,
    connections: 0,
    requests: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on("connection", (socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("request", () => {
    state.requests++;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

const PUBLIC_HOST = "public.test";

/** Test hooks: `public.test` resolves to 127.0.0.1 and only that pair is let through. */
const hooks: PrivateAddressTestHooks = {
  resolve: async (hostname) => {
    if (hostname === PUBLIC_HOST) return ["127.0.0.1"];
    if (hostname === "rebind.test") return ["127.0.0.1"];
    if (hostname === "mixed.test") return ["93.184.215.14", "10.1.2.3"];
    return (await dnsLookup(hostname, { all: true })).map((entry) => entry.address);
  },
  allowAddress: (address, hostname) => hostname === PUBLIC_HOST && address === "127.0.0.1",
};

function opts(extra: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return { maxBytes: 1024, timeoutMs: 3000, allowHttp: true, allowPrivateForTests: hooks, ...extra };
}

async function rejectsWith<T extends Error>(
  promise: Promise<unknown>,
  cls: new (...args: never[]) => T,
): Promise<T> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${cls.name}, but the fetch succeeded`);
}

describe("classifyAddress", () => {
  test("public unicast addresses are 'unicast'", () => {
    for (const address of ["8.8.8.8", "93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8"]) {
      assert.equal(classifyAddress(address), "unicast", address);
    }
  });

  test("private, loopback, link-local, CGNAT, unspecified, multicast, reserved and IPv6 specials are refused", () => {
    const refused: Record<string, string> = {
      "127.0.0.1": "loopback",
      "127.255.1.2": "loopback",
      "10.0.0.1": "private",
      "172.16.0.1": "private",
      "172.31.255.255": "private",
      "192.168.1.1": "private",
      "100.64.0.1": "carrierGradeNat",
      "169.254.169.254": "linkLocal",
      "0.0.0.0": "unspecified",
      "0.1.2.3": "unspecified",
      "224.0.0.1": "multicast",
      "255.255.255.255": "broadcast",
      "240.0.0.1": "reserved",
      "192.0.2.1": "reserved",
      "198.18.0.1": "reserved",
      "::1": "loopback",
      "::": "unspecified",
      "fc00::1": "uniqueLocal",
      "fd12:3456::1": "uniqueLocal",
      "fe80::1": "linkLocal",
      "ff02::1": "multicast",
      "::ffff:127.0.0.1": "loopback",
      "::ffff:7f00:1": "loopback",
      "::ffff:169.254.169.254": "linkLocal",
      "::ffff:10.0.0.1": "private",
      "::127.0.0.1": "notGlobalUnicast",
      "::8.8.8.8": "notGlobalUnicast",
      "64:ff9b::7f00:1": "rfc6052",
      "2002:7f00:1::": "6to4",
      "2001:db8::1": "reserved",
    };
    for (const [address, range] of Object.entries(refused)) {
      assert.equal(classifyAddress(address), range, address);
    }
  });

  test("non-canonical numeric forms are not treated as addresses", () => {
    for (const address of ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "localhost", ""]) {
      assert.equal(classifyAddress(address), "invalid", address);
    }
  });
});

describe("validateUrlSyntax", () => {
  test("accepts an https URL with a host name", () => {
    const url = validateUrlSyntax("https://cdn.example.com/a/b.png?x=1");
    assert.ok(url instanceof URL);
    assert.equal(url.hostname, "cdn.example.com");
    assert.ok(validateUrlSyntax("https://93.184.215.14/x.png") instanceof URL);
  });

  test("refuses other schemes unless allowHttp admits http", () => {
    assert.equal(validateUrlSyntax("http://cdn.example.com/a.png"), null);
    assert.ok(validateUrlSyntax("http://cdn.example.com/a.png", { allowHttp: true }) instanceof URL);
    for (const url of [
      "ftp://cdn.example.com/a.png",
      "file:///etc/passwd",
      "data:image/png;base64,AAAA",
      "javascript:alert(1)",
      "gopher://cdn.example.com/",
    ]) {
      assert.equal(validateUrlSyntax(url, { allowHttp: true }), null, url);
    }
  });

  test("refuses non-URLs, credentials and over-long URLs", () => {
    assert.equal(validateUrlSyntax("not a url"), null);
    assert.equal(validateUrlSyntax(""), null);
    assert.equal(validateUrlSyntax("/relative/path.png"), null);
    assert.equal(validateUrlSyntax("https://user:secret@cdn.example.com/a.png"), null);
    assert.equal(validateUrlSyntax("https://user@cdn.example.com/a.png"), null);
    const base = "https://cdn.example.com/";
    assert.ok(validateUrlSyntax(base + "a".repeat(2048 - base.length)) instanceof URL);
    assert.equal(validateUrlSyntax(base + "a".repeat(2049 - base.length)), null);
  });

  test("refuses IP-literal hosts that are not public, in any numeric spelling", () => {
    for (const url of [
      "https://127.0.0.1/a.png",
      "https://2130706433/a.png",
      "https://0x7f000001/a.png",
      "https://0x7f.1/a.png",
      "https://0177.0.0.1/a.png",
      "https://127.1/a.png",
      "https://[::1]/a.png",
      "https://[::ffff:127.0.0.1]/a.png",
      "https://169.254.169.254/latest/meta-data/",
      "https://10.0.0.1/",
      "https://0.0.0.0/",
      "https://[::]/",
    ]) {
      assert.equal(validateUrlSyntax(url), null, url);
    }
  });
});

describe("safeFetch refuses before connecting", () => {
  let server: CountingServer;
  before(async () => {
    server = await startServer((_req, res) => res.end("secret"));
  });
  after(async () => {
    await server.close();
  });

  test("loopback, private, link-local and numeric-trick hosts never reach a connection", async () => {
    const p = server.port;
    const urls = [
      `http://127.0.0.1:${p}/`,
      `http://localhost:${p}/`,
      `http://LOCALHOST:${p}/`,
      `http://[::1]:${p}/`,
      `http://2130706433:${p}/`,
      `http://0x7f000001:${p}/`,
      `http://0x7f.1:${p}/`,
      `http://0177.0.0.1:${p}/`,
      `http://127.1:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`,
      `http://[::127.0.0.1]:${p}/`,
      `http://0.0.0.0:${p}/`,
      `http://[::]:${p}/`,
      "http://169.254.169.254/latest/meta-data/",
      "http://[::ffff:169.254.169.254]/",
      "http://10.0.0.1/",
      "http://172.16.0.1/",
      "http://192.168.1.1/",
      "http://100.64.0.1/",
      "http://224.0.0.1/",
      "http://255.255.255.255/",
      "http://[fc00::1]/",
      "http://[fe80::1]/",
      "http://[64:ff9b::7f00:1]/",
      "http://[2002:7f00:1::]/",
    ];
    // Without test hooks, and with them (the hooks only admit public.test -> 127.0.0.1).
    for (const withHooks of [false, true]) {
      for (const url of urls) {
        const options: SafeFetchOptions = withHooks ? opts() : { maxBytes: 1024, timeoutMs: 3000, allowHttp: true };
        const err = await rejectsWith(safeFetch(url, options), UnsafeUrlError);
        assert.equal(err.reason, "refused_address", `${url}: ${err.message}`);
        assert.ok(err.range !== null && err.range !== "unicast", url);
      }
    }
    assert.equal(server.connections, 0);
  });

  test("a name that resolves to a private address is refused at lookup; one bad address refuses all", async () => {
    const rebind = await rejectsWith(safeFetch(`http://rebind.test:${server.port}/`, opts()), UnsafeUrlError);
    assert.equal(rebind.reason, "refused_address");
    assert.equal(rebind.address, "127.0.0.1");
    const mixed = await rejectsWith(safeFetch(`http://mixed.test:${server.port}/`, opts()), UnsafeUrlError);
    assert.equal(mixed.address, "10.1.2.3");
    assert.equal(server.connections, 0);
  });

  test("https only unless allowHttp; no other schemes, credentials or garbage", async () => {
    const base = { maxBytes: 1024, timeoutMs: 3000 };
    const http = await rejectsWith(safeFetch(`http://${PUBLIC_HOST}:${server.port}/`, { ...base, allowPrivateForTests: hooks }), UnsafeUrlError);
    assert.equal(http.reason, "scheme_not_allowed");
    assert.equal((await rejectsWith(safeFetch("file:///etc/passwd", { ...base, allowHttp: true }), UnsafeUrlError)).reason, "scheme_not_allowed");
    assert.equal((await rejectsWith(safeFetch("not a url", base), UnsafeUrlError)).reason, "invalid_url");
    assert.equal(
      (await rejectsWith(safeFetch(`https://u:p@${PUBLIC_HOST}/`, base), UnsafeUrlError)).reason,
      "credentials_in_url",
    );
    assert.equal(
      (await rejectsWith(safeFetch(`https://${PUBLIC_HOST}/${"a".repeat(2100)}`, base), UnsafeUrlError)).reason,
      "url_too_long",
    );
    assert.equal(server.connections, 0);
  });

  test("the connected peer is checked again before the request is written", async () => {
    // The hook admits public.test at lookup time but not when the socket's peer address is checked.
    let calls = 0;
    const flaky: PrivateAddressTestHooks = {
      resolve: async () => ["127.0.0.1"],
      allowAddress: () => ++calls === 1,
    };
    const err = await rejectsWith(
      safeFetch(`http://${PUBLIC_HOST}:${server.port}/`, opts({ allowPrivateForTests: flaky })),
      UnsafeUrlError,
    );
    assert.equal(err.reason, "refused_address");
    assert.equal(calls, 2);
    assert.equal(server.requests, 0);
  });
});

describe("safeFetch against a stand-in public host", () => {
  let server: CountingServer;
  let internal: CountingServer;
  let hang: ReturnType<typeof setTimeout> | undefined;
  before(async () => {
    internal = await startServer((_req, res) => res.end("internal secret"));
    server = await startServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const n = Number(url.searchParams.get("n") ?? "0");
      switch (url.pathname) {
        case "/ok":
          res.writeHead(200, { "content-type": "image/png" });
          res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
          return;
        case "/no-type":
          res.removeHeader("content-type");
          res.end("x");
          return;
        case "/exact":
          res.end("a".repeat(1024));
          return;
        case "/announced-big":
          res.writeHead(200, { "content-length": String(10 * 1024 * 1024) });
          res.write("a".repeat(100));
          return; // never finishes: the announced size alone must refuse it
        case "/chunked-big":
          res.writeHead(200, { "content-type": "application/octet-stream" });
          for (let i = 0; i < 64; i++) res.write("b".repeat(100));
          res.end();
          return;
        case "/stream-forever": {
          res.writeHead(200);
          const tick = (): void => {
            if (res.destroyed) return;
            res.write("c".repeat(100));
            hang = setTimeout(tick, 5);
          };
          tick();
          return;
        }
        case "/hang-headers":
          return; // never answers
        case "/hang-body":
          res.writeHead(200, { "content-length": "10" });
          res.write("12345");
          return; // never finishes
        case "/to-internal":
          res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/` });
          res.end();
          return;
        case "/to-internal-name":
          res.writeHead(307, { location: `http://localhost:${internal.port}/` });
          res.end();
          return;
        case "/to-metadata":
          res.writeHead(301, { location: "http://169.254.169.254/latest/meta-data/iam/" });
          res.end();
          return;
        case "/to-file":
          res.writeHead(302, { location: "file:///etc/passwd" });
          res.end();
          return;
        case "/loop":
          res.writeHead(302, { location: "/loop" });
          res.end();
          return;
        case "/chain":
          res.writeHead(n % 2 === 0 ? 302 : 308, { location: n >= MAX_REDIRECTS ? "/ok" : `/chain?n=${n + 1}` });
          res.end();
          return;
        case "/no-location":
          res.writeHead(302);
          res.end();
          return;
        case "/missing":
          res.writeHead(404, { "content-type": "text/plain" });
          res.end("not found");
          return;
        case "/boom":
          res.writeHead(500);
          res.end("boom");
          return;
        default:
          res.writeHead(404);
          res.end();
      }
    });
  });
  after(async () => {
    clearTimeout(hang);
    await server.close();
    await internal.close();
  });

  const at = (path: string): string => `http://${PUBLIC_HOST}:${server.port}${path}`;

  test("returns the bytes, the content type and the final URL", async () => {
    const res = await safeFetch(at("/ok"), opts());
    assert.deepEqual([...res.bytes], [0x89, 0x50, 0x4e, 0x47]);
    assert.ok(res.bytes instanceof Uint8Array);
    assert.equal(res.contentType, "image/png");
    assert.equal(res.finalUrl, at("/ok"));
  });

  test("content type is null when the server sends none; a body of exactly maxBytes is accepted", async () => {
    assert.equal((await safeFetch(at("/no-type"), opts())).contentType, null);
    assert.equal((await safeFetch(at("/exact"), opts({ maxBytes: 1024 }))).bytes.byteLength, 1024);
  });

  test("a Content-Length above the cap is refused without reading the body", async () => {
    const err = await rejectsWith(safeFetch(at("/announced-big"), opts({ maxBytes: 1024 })), FetchTooLargeError);
    assert.equal(err.announcedBytes, 10 * 1024 * 1024);
    assert.equal(err.maxBytes, 1024);
  });

  test("a chunked body growing past the cap is cut off", async () => {
    const err = await rejectsWith(safeFetch(at("/chunked-big"), opts({ maxBytes: 1000 })), FetchTooLargeError);
    assert.equal(err.announcedBytes, null);
  });

  test("an endless body is cut off at the cap, long before the timeout", async () => {
    // A timeout would reject with FetchTimeoutError: the cap stopped it first.
    await rejectsWith(safeFetch(at("/stream-forever"), opts({ maxBytes: 2000, timeoutMs: 5000 })), FetchTooLargeError);
  });

  test("the total timeout covers waiting for headers and for the body", async () => {
    for (const path of ["/hang-headers", "/hang-body"]) {
      const started = Date.now();
      const err = await rejectsWith(safeFetch(at(path), opts({ timeoutMs: 300 })), FetchTimeoutError);
      const elapsed = Date.now() - started;
      assert.equal(err.timeoutMs, 300);
      assert.ok(elapsed >= 250, `${path} took ${elapsed} ms`);
    }
  });

  test("a redirect to a private address or name is refused before connecting to it", async () => {
    for (const path of ["/to-internal", "/to-internal-name", "/to-metadata"]) {
      const err = await rejectsWith(safeFetch(at(path), opts()), UnsafeUrlError);
      assert.equal(err.reason, "refused_address", path);
    }
    assert.equal(internal.connections, 0);
  });

  test("a redirect to another scheme is refused", async () => {
    const err = await rejectsWith(safeFetch(at("/to-file"), opts()), UnsafeUrlError);
    assert.equal(err.reason, "scheme_not_allowed");
  });

  test(`at most ${MAX_REDIRECTS} redirects are followed`, async () => {
    const ok = await safeFetch(at("/chain?n=1"), opts());
    assert.equal(ok.finalUrl, at("/ok"));
    assert.equal(ok.contentType, "image/png");

    const before = server.requests;
    const err = await rejectsWith(safeFetch(at("/loop"), opts()), FetchFailedError);
    assert.equal(err.reason, "too_many_redirects");
    assert.equal(server.requests - before, MAX_REDIRECTS + 1);

    const tooLong = await rejectsWith(safeFetch(at("/chain?n=0"), opts()), FetchFailedError);
    assert.equal(tooLong.reason, "too_many_redirects");
  });

  test("a redirect without Location fails", async () => {
    const err = await rejectsWith(safeFetch(at("/no-location"), opts()), FetchFailedError);
    assert.equal(err.reason, "bad_redirect");
    assert.equal(err.status, 302);
  });

  test("HTTP 404 and 500 are FetchFailedError with the status", async () => {
    const notFound = await rejectsWith(safeFetch(at("/missing"), opts()), FetchFailedError);
    assert.equal(notFound.reason, "http_status");
    assert.equal(notFound.status, 404);
    const boom = await rejectsWith(safeFetch(at("/boom"), opts()), FetchFailedError);
    assert.equal(boom.status, 500);
  });

  test("a refused connection or an unresolvable name is a network FetchFailedError", async () => {
    const closed = await startServer((_req, res) => res.end());
    const port = closed.port;
    await closed.close();
    const refused = await rejectsWith(safeFetch(`http://${PUBLIC_HOST}:${port}/`, opts()), FetchFailedError);
    assert.equal(refused.reason, "network");
    assert.equal(refused.status, null);
    const noName: PrivateAddressTestHooks = { resolve: async () => [], allowAddress: () => true };
    const unresolved = await rejectsWith(
      safeFetch(at("/ok"), opts({ allowPrivateForTests: noName })),
      FetchFailedError,
    );
    assert.equal(unresolved.reason, "network");
  });

  test("a resolver that would rebind on a second query is asked once per connection", async () => {
    let queries = 0;
    const rebinding: PrivateAddressTestHooks = {
      resolve: async () => (++queries === 1 ? ["127.0.0.1"] : ["10.0.0.1"]),
      allowAddress: (address) => address === "127.0.0.1",
    };
    const res = await safeFetch(at("/ok"), opts({ allowPrivateForTests: rebinding }));
    assert.equal(res.contentType, "image/png");
    assert.equal(queries, 1);
  });

  test("bad options are programming errors", async () => {
    await assert.rejects(safeFetch(at("/ok"), opts({ maxBytes: -1 })), RangeError);
    await assert.rejects(safeFetch(at("/ok"), opts({ timeoutMs: 0 })), RangeError);
  });
});
