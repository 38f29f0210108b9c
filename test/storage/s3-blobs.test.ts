/**
 * S3 blob storage against a real S3-compatible server (s3rver, in this process on 127.0.0.1 with a
 * random port and a temp folder): round trips, ranges, prefix, ping, STORAGE_URL parsing, and
 * `sendBlob` over HTTP serving from the S3 store.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { CreateBucketCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import Fastify, { type FastifyInstance } from "fastify";
import { errorHandler } from "../../src/http/error-handler.ts";
import { sendBlob } from "../../src/http/range.ts";
import { InvalidBlobKeyError } from "../../src/storage/blob-store.ts";
import { openBlobStore } from "../../src/storage/blobs.ts";
import { parseS3Url, S3BlobStore, type S3Options } from "../../src/storage/s3-blobs.ts";

/** The part of s3rver's API used here (the package ships no types). */
interface S3rverServer {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverClass = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
}) => S3rverServer;
const S3rver = createRequire(import.meta.url)("s3rver") as S3rverClass;

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const bytes = (s: string) => new TextEncoder().encode(s);

async function* chunksOf(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) {
    await new Promise((r) => setImmediate(r));
    yield p;
  }
}

let dir: string;
let server: S3rverServer;
let options: S3Options;
let bucket: string;
const prefix = "gw/blobs";
let store: S3BlobStore;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "s3-blobs-test-"));
  server = new S3rver({ address: "127.0.0.1", port: 0, directory: dir, silent: true });
  const { port } = await server.run();
  // s3rver checks SigV4 signatures against its built-in key pair S3RVER/S3RVER.
  options = {
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
  };
  bucket = `test-${randomUUID().slice(0, 8)}`;
  store = openBlobStore(`s3://${bucket}/${prefix}/`, options) as S3BlobStore;
  assert.ok(store instanceof S3BlobStore);
  await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
});

after(async () => {
  store?.close();
  await server?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("S3BlobStore", () => {
  test("put/head/get/delete round trip with bytes", async () => {
    const data = bytes("hello, blob world");
    const put = await store.put("audio/job_abc.mp3", data, { contentType: "audio/mpeg" });
    assert.equal(put.key, "audio/job_abc.mp3");
    assert.equal(put.size, data.byteLength);
    assert.equal(put.contentType, "audio/mpeg");
    assert.match(put.etag, /^[0-9a-f]{32}$/); // MD5 hex, quotes stripped
    assert.deepEqual(await store.head("audio/job_abc.mp3"), put);

    const got = await store.get("audio/job_abc.mp3");
    assert.ok(got);
    assert.deepEqual(got.info, put);
    assert.equal((await readAll(got.body)).toString(), "hello, blob world");

    await store.delete("audio/job_abc.mp3");
    assert.equal(await store.head("audio/job_abc.mp3"), null);
    assert.equal(await store.get("audio/job_abc.mp3"), null);
    await store.delete("audio/job_abc.mp3"); // missing: not an error
  });

  test("deleteMany removes every key in one request per 1000 (missing ones are fine); a bad key sends nothing", async () => {
    const keys = ["images/job_many-0.png", "images/job_many-1.png", "videos/job_many.mp4"];
    for (const k of keys) await store.put(k, bytes(k), { contentType: "application/octet-stream" });
    await assert.rejects(store.deleteMany([keys[0], "../escape"]), /Invalid blob key/);
    assert.ok(await store.head(keys[0]), "nothing removed when a key is bad");
    await store.deleteMany([...keys, "images/job_never-0.png"]);
    for (const k of keys) assert.equal(await store.head(k), null, k);
    await store.deleteMany(keys);
    await store.deleteMany([]);
  });

  test("put from an async iterable; replacing a key changes the etag", async () => {
    const put = await store.put("img/a.png", chunksOf(bytes("abc"), bytes(""), bytes("defgh")), {
      contentType: "image/png",
    });
    assert.equal(put.size, 8);
    assert.equal(put.contentType, "image/png");
    const got = await store.get("img/a.png");
    assert.ok(got);
    assert.deepEqual(got.info, put);
    assert.equal((await readAll(got.body)).toString(), "abcdefgh");

    const again = await store.put("img/a.png", bytes("other bytes"), { contentType: "image/webp" });
    assert.notEqual(again.etag, put.etag);
    assert.deepEqual(await store.head("img/a.png"), again);
  });

  test("a large async iterable goes up in parts", async () => {
    const data = randomBytes(6 * 1024 * 1024 + 123); // more than one 5 MiB part
    const parts: Uint8Array[] = [];
    for (let off = 0; off < data.length; off += 1024 * 1024) parts.push(data.subarray(off, off + 1024 * 1024));
    const put = await store.put("video/big.mp4", chunksOf(...parts), { contentType: "video/mp4" });
    assert.equal(put.size, data.length);
    assert.deepEqual(await store.head("video/big.mp4"), put);
    const got = await store.get("video/big.mp4");
    assert.ok(got);
    assert.ok((await readAll(got.body)).equals(data));
    const part = await store.get("video/big.mp4", { start: 5 * 1024 * 1024 - 2, end: 5 * 1024 * 1024 + 1 });
    assert.ok(part);
    assert.ok((await readAll(part.body)).equals(data.subarray(5 * 1024 * 1024 - 2, 5 * 1024 * 1024 + 2)));
    await store.delete("video/big.mp4");
  });

  test("a failing body iterable stores nothing; bad chunks are a TypeError", async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield bytes("partial");
      throw new Error("upstream broke");
    }
    await assert.rejects(store.put("fail/x.bin", failing(), { contentType: "application/octet-stream" }), /upstream broke/);
    assert.equal(await store.head("fail/x.bin"), null);
    async function* strings(): AsyncGenerator<Uint8Array> {
      yield "text" as unknown as Uint8Array;
    }
    await assert.rejects(store.put("fail/y.bin", strings(), { contentType: "text/plain" }), TypeError);
    assert.equal(await store.head("fail/y.bin"), null);
  });

  test("range reads return the exact bytes", async () => {
    const data = bytes("0123456789");
    const put = await store.put("r/digits.txt", data, { contentType: "text/plain; charset=utf-8" });
    const cases: [number, number, string][] = [
      [0, 0, "0"],
      [2, 5, "2345"],
      [9, 9, "9"],
      [7, 1000, "789"], // end clamped
      [0, 9, "0123456789"],
    ];
    for (const [start, end, want] of cases) {
      const got = await store.get("r/digits.txt", { start, end });
      assert.ok(got);
      assert.deepEqual(got.info, put, `info of ${start}-${end} describes the whole blob`);
      assert.equal((await readAll(got.body)).toString(), want, `${start}-${end}`);
    }
    await assert.rejects(store.get("r/digits.txt", { start: 10, end: 12 }), RangeError);
    await assert.rejects(store.get("r/digits.txt", { start: 5, end: 2 }), RangeError);
    await assert.rejects(store.get("r/digits.txt", { start: -1, end: 2 }), RangeError);
    assert.equal(await store.get("r/missing.txt", { start: 0, end: 1 }), null);
  });

  test("content type is preserved; empty blobs work", async () => {
    const put = await store.put("t/empty.json", new Uint8Array(0), {
      contentType: "application/json; charset=utf-8",
    });
    assert.equal(put.size, 0);
    const head = await store.head("t/empty.json");
    assert.equal(head?.contentType, "application/json; charset=utf-8");
    assert.equal(head?.size, 0);
    const got = await store.get("t/empty.json");
    assert.ok(got);
    assert.equal(got.info.contentType, "application/json; charset=utf-8");
    assert.equal((await readAll(got.body)).length, 0);
    await assert.rejects(store.get("t/empty.json", { start: 0, end: 0 }), RangeError);
  });

  test("missing keys are null; bad keys and content types throw before any request", async () => {
    assert.equal(await store.head("nope/none.bin"), null);
    assert.equal(await store.get("nope/none.bin"), null);
    await assert.rejects(store.head("../etc/passwd"), InvalidBlobKeyError);
    await assert.rejects(store.get("a//b"), InvalidBlobKeyError);
    await assert.rejects(store.put(".hidden", bytes("x"), { contentType: "text/plain" }), InvalidBlobKeyError);
    await assert.rejects(store.delete("x.meta.json"), InvalidBlobKeyError);
    await assert.rejects(store.put("ok.txt", bytes("x"), { contentType: "no slash" }), TypeError);
  });

  test("keys are stored under the URL's prefix", async () => {
    await store.put("p/one.txt", bytes("1"), { contentType: "text/plain" });
    const listed = await store.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "gw/" }));
    const keys = (listed.Contents ?? []).map((o) => o.Key);
    assert.ok(keys.includes("gw/blobs/p/one.txt"), `listed: ${keys.join(", ")}`);
    const all = await store.client.send(new ListObjectsV2Command({ Bucket: bucket }));
    for (const o of all.Contents ?? []) assert.ok(o.Key?.startsWith("gw/blobs/"), o.Key);
    assert.equal(store.objectKey("p/one.txt"), "gw/blobs/p/one.txt");

    // Without a prefix the key is the object key.
    const bare = openBlobStore(`s3://${bucket}`, options) as S3BlobStore;
    try {
      assert.equal(bare.objectKey("p/one.txt"), "p/one.txt");
      assert.equal(await bare.head("p/one.txt"), null);
      const info = await bare.head("gw/blobs/p/one.txt");
      assert.equal(info?.size, 1);
    } finally {
      bare.close();
    }
  });

  test("ping succeeds for the bucket and fails for a missing one", async () => {
    await store.ping();
    const missing = new S3BlobStore({ bucket: `missing-${randomUUID().slice(0, 8)}`, prefix: "" }, options);
    try {
      await assert.rejects(missing.ping(), /S3 bucket 'missing-[0-9a-f]{8}' is not usable: no such bucket/);
      // A missing bucket is an error on get (HEAD answers carry no error code, so head says null).
      await assert.rejects(missing.get("a.txt"), (err: Error) => err.name === "NoSuchBucket");
    } finally {
      missing.close();
    }
  });
});

describe("s3:// STORAGE_URL", () => {
  test("bucket and prefix", () => {
    assert.deepEqual(parseS3Url("s3://my-bucket"), { bucket: "my-bucket", prefix: "" });
    assert.deepEqual(parseS3Url("s3://my-bucket/"), { bucket: "my-bucket", prefix: "" });
    assert.deepEqual(parseS3Url("s3://my.bucket/a/b/"), { bucket: "my.bucket", prefix: "a/b" });
  });

  test("malformed URLs and options are rejected", () => {
    for (const url of ["s3://", "s3://ab", "s3://Upper", "s3://-x-", "s3://a..b", "s3://user@bucket/x", "s3://bucket:9000/x", "s3://bucket/a//b", "s3://bucket/../x", "s3://bucket/p?x=1"]) {
      assert.throws(() => openBlobStore(url), /STORAGE_URL/, url);
    }
    assert.throws(() => openBlobStore("s3://bucket", { accessKeyId: "AKIA" }), /AWS_SECRET_ACCESS_KEY/);
    assert.throws(() => openBlobStore("s3://bucket", { endpoint: "localhost:9000" }), /S3_ENDPOINT/);
    const s = openBlobStore("s3://bucket/x", { endpoint: "", accessKeyId: "", secretAccessKey: "" });
    assert.ok(s instanceof S3BlobStore);
    s.close();
  });
});

describe("sendBlob from S3", () => {
  let app: FastifyInstance;
  let base: string;
  before(async () => {
    await store.put("web/clip.txt", bytes("abcdefghij"), { contentType: "text/plain" });
    app = Fastify();
    app.setErrorHandler(errorHandler);
    app.get("/files/*", async (req, reply) => {
      const key = (req.params as { "*": string })["*"];
      return sendBlob(reply, store, key, req.headers.range);
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await app?.close();
  });

  test("200 full", async () => {
    const res = await fetch(`${base}/files/web/clip.txt`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/plain");
    assert.equal(res.headers.get("content-length"), "10");
    assert.equal(res.headers.get("accept-ranges"), "bytes");
    const info = await store.head("web/clip.txt");
    assert.equal(res.headers.get("etag"), `"${info?.etag}"`);
    assert.equal(await res.text(), "abcdefghij");
  });

  test("206 range", async () => {
    const res = await fetch(`${base}/files/web/clip.txt`, { headers: { range: "bytes=2-4" } });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get("content-range"), "bytes 2-4/10");
    assert.equal(res.headers.get("content-length"), "3");
    assert.equal(await res.text(), "cde");
    const suffix = await fetch(`${base}/files/web/clip.txt`, { headers: { range: "bytes=-3" } });
    assert.equal(suffix.status, 206);
    assert.equal(await suffix.text(), "hij");
  });

  test("404 for a missing key", async () => {
    const res = await fetch(`${base}/files/web/missing.txt`);
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  });
});
