/** Byte ranges: `parseRange` cases (RFC 9110 14.1.2) and `sendBlob` over HTTP on loopback. */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import { errorHandler } from "../../src/http/error-handler.ts";
import { BLOB_CACHE_CONTROL, parseRange, sendBlob } from "../../src/http/range.ts";
import type { BlobInfo, BlobStore } from "../../src/storage/blob-store.ts";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";

describe("parseRange", () => {
  const cases: [string | undefined, number, ReturnType<typeof parseRange>][] = [
    [undefined, 10, null],
    ["", 10, null],
    ["bytes=0-0", 10, { start: 0, end: 0 }],
    ["bytes=0-9", 10, { start: 0, end: 9 }],
    ["bytes=2-5", 10, { start: 2, end: 5 }],
    ["bytes=9-9", 10, { start: 9, end: 9 }],
    ["bytes=5-", 10, { start: 5, end: 9 }],
    ["bytes=0-", 10, { start: 0, end: 9 }],
    ["bytes=-1", 10, { start: 9, end: 9 }],
    ["bytes=-3", 10, { start: 7, end: 9 }],
    ["bytes=-10", 10, { start: 0, end: 9 }],
    ["bytes=-50", 10, { start: 0, end: 9 }], // suffix longer than content: all of it
    ["bytes=3-1000", 10, { start: 3, end: 9 }], // end beyond size clamps
    ["bytes=3-99999999999999999999999", 10, { start: 3, end: 9 }],
    ["bytes=10-", 10, "unsatisfiable"], // starts past the end
    ["bytes=5-", 5, "unsatisfiable"],
    ["bytes=10-20", 10, "unsatisfiable"],
    ["bytes=99999999999999999999999-", 10, "unsatisfiable"],
    ["bytes=-0", 10, "unsatisfiable"],
    ["bytes=0-0", 0, "unsatisfiable"], // empty content has no byte 0
    ["bytes=-5", 0, null], // suffix of empty content: send the (empty) whole
    ["bytes=9-3", 10, null], // invalid: ignored
    ["bytes=-", 10, null],
    ["bytes=", 10, null],
    ["bytes", 10, null],
    ["garbage", 10, null],
    ["bytes=a-b", 10, null],
    ["bytes=1-2-3", 10, null],
    ["bytes=+1-2", 10, null],
    ["bytes=1.5-2", 10, null],
    ["bytes=0x1-2", 10, null],
    ["items=0-1", 10, null], // unknown unit: ignored
    ["bytes=0-1,4-5", 10, null], // several ranges: full content
    ["bytes=0-1, -2", 10, null],
    ["BYTES=1-2", 10, { start: 1, end: 2 }], // unit is case-insensitive
    ["bytes=1-2,", 10, { start: 1, end: 2 }], // empty list elements are ignored
    ["bytes= 1-2 ", 10, { start: 1, end: 2 }],
    ["bytes=1 -2", 10, null],
  ];
  for (const [header, size, expected] of cases) {
    test(`${JSON.stringify(header)} of ${size} bytes -> ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(parseRange(header, size), expected);
    });
  }
});

/** Wraps a store to count opened reads and check each body gets closed. */
class CountingStore implements BlobStore {
  readonly inner: BlobStore;
  gets = 0;
  open = 0;
  constructor(inner: BlobStore) {
    this.inner = inner;
  }
  put(key: string, body: Uint8Array | AsyncIterable<Uint8Array>, meta: { contentType: string }) {
    return this.inner.put(key, body, meta);
  }
  head(key: string): Promise<BlobInfo | null> {
    return this.inner.head(key);
  }
  async get(key: string, range?: { start: number; end: number }) {
    const r = await this.inner.get(key, range);
    if (r !== null) {
      this.gets++;
      this.open++;
      r.body.once("close", () => this.open--);
    }
    return r;
  }
  delete(key: string) {
    return this.inner.delete(key);
  }
  deleteMany(keys: readonly string[]) {
    return this.inner.deleteMany(keys);
  }
  ping() {
    return this.inner.ping();
  }
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function settle(store: CountingStore): Promise<void> {
  for (let i = 0; i < 50 && store.open > 0; i++) await new Promise((r) => setTimeout(r, 10));
}

describe("sendBlob over HTTP", () => {
  const data = Buffer.from("0123456789abcdefghij"); // 20 bytes
  let root: string;
  let store: CountingStore;
  let app: FastifyInstance;
  let explicitHead: FastifyInstance;
  let base: string;
  let explicitBase: string;
  let etag: string;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "range-test-"));
    store = new CountingStore(new DiskBlobStore(root));
    etag = `"${(await store.put("audio/job_abc.mp3", data, { contentType: "audio/mpeg" })).etag}"`;

    // forceCloseConnections: fetch may leave a connection open that never carried a request (after the
    // aborted download), which "idle" closing would wait out for the keep-alive timeout.
    app = Fastify({ logger: false, forceCloseConnections: true });
    app.setErrorHandler(errorHandler);
    app.get("/files/*", (req, reply) => {
      const key = (req.params as { "*": string })["*"];
      return sendBlob(reply, store, key, req.headers.range, {
        "content-disposition": "inline",
      });
    });
    base = await listen(app);

    // The same route with HEAD registered explicitly (no automatic HEAD route).
    explicitHead = Fastify({
      logger: false,
      exposeHeadRoutes: false,
      forceCloseConnections: true,
    });
    explicitHead.setErrorHandler(errorHandler);
    explicitHead.route({
      method: ["GET", "HEAD"],
      url: "/files/*",
      handler: (req, reply) =>
        sendBlob(reply, store, (req.params as { "*": string })["*"], req.headers.range),
    });
    explicitBase = await listen(explicitHead);
  });
  after(async () => {
    await app?.close();
    await explicitHead?.close();
    await rm(root, { recursive: true, force: true });
  });

  test("200: full content with type, length, ranges, cache and etag headers", async () => {
    const r = await fetch(`${base}/files/audio/job_abc.mp3`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "audio/mpeg");
    assert.equal(r.headers.get("content-length"), "20");
    assert.equal(r.headers.get("accept-ranges"), "bytes");
    assert.equal(r.headers.get("cache-control"), BLOB_CACHE_CONTROL);
    assert.equal(r.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(r.headers.get("etag"), etag);
    assert.equal(r.headers.get("x-content-type-options"), "nosniff");
    assert.equal(r.headers.get("content-disposition"), "inline");
    assert.equal(r.headers.get("content-range"), null);
    assert.deepEqual(Buffer.from(await r.arrayBuffer()), data);
  });

  test("206: exact bytes and Content-Range for a-b, a- and -n", async () => {
    const cases: [string, string, string][] = [
      ["bytes=0-0", "0", "bytes 0-0/20"],
      ["bytes=3-7", "34567", "bytes 3-7/20"],
      ["bytes=15-", "fghij", "bytes 15-19/20"],
      ["bytes=-1", "j", "bytes 19-19/20"],
      ["bytes=18-1000", "ij", "bytes 18-19/20"],
    ];
    for (const [range, body, contentRange] of cases) {
      const r = await fetch(`${base}/files/audio/job_abc.mp3`, {
        headers: { range },
      });
      assert.equal(r.status, 206, range);
      assert.equal(r.headers.get("content-range"), contentRange);
      assert.equal(r.headers.get("content-length"), String(body.length));
      assert.equal(r.headers.get("content-type"), "audio/mpeg");
      assert.equal(await r.text(), body);
    }
  });

  test("multiple ranges and invalid ranges get the full content", async () => {
    for (const range of ["bytes=0-1,5-6", "bytes=9-3", "garbage"]) {
      const r = await fetch(`${base}/files/audio/job_abc.mp3`, {
        headers: { range },
      });
      assert.equal(r.status, 200, range);
      assert.deepEqual(Buffer.from(await r.arrayBuffer()), data);
    }
  });

  test("416: Content-Range bytes */size and the error JSON", async () => {
    const r = await fetch(`${base}/files/audio/job_abc.mp3`, {
      headers: { range: "bytes=20-" },
    });
    assert.equal(r.status, 416);
    assert.equal(r.headers.get("content-range"), "bytes */20");
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
    const body = (await r.json()) as { error: Record<string, unknown> };
    assert.equal(body.error.code, "range_not_satisfiable");
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(body.error.param, null);
    assert.equal(typeof body.error.message, "string");
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  });

  test("If-Range: a matching ETag honours Range, anything else sends the whole", async () => {
    const hit = await fetch(`${base}/files/audio/job_abc.mp3`, {
      headers: { range: "bytes=0-1", "if-range": etag },
    });
    assert.equal(hit.status, 206);
    assert.equal(await hit.text(), "01");
    for (const ifRange of ['"other"', `W/${etag}`, "Wed, 21 Oct 2015 07:28:00 GMT"]) {
      const miss = await fetch(`${base}/files/audio/job_abc.mp3`, {
        headers: { range: "bytes=0-1", "if-range": ifRange },
      });
      assert.equal(miss.status, 200, ifRange);
      assert.equal((await miss.arrayBuffer()).byteLength, 20);
    }
  });

  test("304 for If-None-Match with our ETag, no body and no file opened", async () => {
    const before = store.gets;
    for (const inm of [etag, `W/${etag}`, `"x", ${etag}`, "*"]) {
      const r = await fetch(`${base}/files/audio/job_abc.mp3`, {
        headers: { "if-none-match": inm },
      });
      assert.equal(r.status, 304, inm);
      assert.equal(r.headers.get("etag"), etag);
      assert.equal(await r.text(), "");
    }
    assert.equal(store.gets, before);
    const other = await fetch(`${base}/files/audio/job_abc.mp3`, {
      headers: { "if-none-match": '"x"' },
    });
    assert.equal(other.status, 200);
    await other.arrayBuffer();
  });

  for (const which of ["automatic", "explicit"] as const) {
    test(`HEAD (${which} route): headers of the 200, no body, Range ignored, file never opened`, async () => {
      const url = `${which === "automatic" ? base : explicitBase}/files/audio/job_abc.mp3`;
      const before = store.gets;
      for (const headers of [{}, { range: "bytes=0-1" }]) {
        const r = await fetch(url, { method: "HEAD", headers });
        assert.equal(r.status, 200);
        assert.equal(r.headers.get("content-length"), "20");
        assert.equal(r.headers.get("content-type"), "audio/mpeg");
        assert.equal(r.headers.get("accept-ranges"), "bytes");
        assert.equal(r.headers.get("etag"), etag);
        assert.equal(r.headers.get("content-range"), null);
        assert.equal(await r.text(), "");
      }
      assert.equal(store.gets, before);
      const missing = await fetch(`${which === "automatic" ? base : explicitBase}/files/audio/nope.mp3`, {
        method: "HEAD",
      });
      assert.equal(missing.status, 404);
    });
  }

  test("404 JSON for a missing blob and for a key that is not a valid blob key", async () => {
    for (const path of ["/files/audio/nope.mp3", "/files/audio/..%2F..%2Fetc%2Fpasswd", "/files/.tmp/x"]) {
      const r = await fetch(`${base}${path}`);
      assert.equal(r.status, 404, path);
      assert.deepEqual(await r.json(), {
        error: {
          code: "not_found",
          message: "No such file.",
          type: "invalid_request_error",
          param: null,
        },
      });
    }
  });

  test("every opened file is closed, also when the client aborts mid-body", async () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 7);
    await store.put("videos/big.mp4", big, { contentType: "video/mp4" });
    const controller = new AbortController();
    const r = await fetch(`${base}/files/videos/big.mp4`, {
      signal: controller.signal,
    });
    assert.equal(r.status, 200);
    const reader = r.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.read().catch(() => {});
    await settle(store);
    assert.equal(store.open, 0);
  });
});
