/** Blob storage on disk: round trips, atomic writes, key rules, STORAGE_URL parsing. */
import assert from "node:assert/strict";
import { S3BlobStore } from "../../src/storage/s3-blobs.ts";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { InvalidBlobKeyError, isValidBlobKey } from "../../src/storage/blob-store.ts";
import { openBlobStore } from "../../src/storage/blobs.ts";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const bytes = (s: string) => new TextEncoder().encode(s);

describe("DiskBlobStore", () => {
  let root: string;
  let store: DiskBlobStore;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "blobs-test-"));
    store = new DiskBlobStore(root);
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test("put/head/get/delete round trip with bytes", async () => {
    const data = bytes("hello, blob world");
    const put = await store.put("audio/job_abc.mp3", data, {
      contentType: "audio/mpeg",
    });
    const sha = createHash("sha256").update(data).digest("hex");
    assert.deepEqual(put, {
      key: "audio/job_abc.mp3",
      size: data.byteLength,
      contentType: "audio/mpeg",
      etag: sha,
    });
    assert.deepEqual(await store.head("audio/job_abc.mp3"), put);
    assert.deepEqual(await readFile(join(root, "audio", "job_abc.mp3")), Buffer.from(data));

    const got = await store.get("audio/job_abc.mp3");
    assert.ok(got);
    assert.deepEqual(got.info, put);
    assert.equal((await readAll(got.body)).toString(), "hello, blob world");

    const part = await store.get("audio/job_abc.mp3", { start: 7, end: 10 });
    assert.ok(part);
    assert.equal((await readAll(part.body)).toString(), "blob");
    const clamped = await store.get("audio/job_abc.mp3", {
      start: 12,
      end: 1000,
    });
    assert.ok(clamped);
    assert.equal((await readAll(clamped.body)).toString(), "world");
    await assert.rejects(store.get("audio/job_abc.mp3", { start: 17, end: 20 }), RangeError);
    await assert.rejects(store.get("audio/job_abc.mp3", { start: 5, end: 2 }), RangeError);

    await store.delete("audio/job_abc.mp3");
    assert.equal(await store.head("audio/job_abc.mp3"), null);
    assert.equal(await store.get("audio/job_abc.mp3"), null);
    await store.delete("audio/job_abc.mp3"); // missing: no error
    assert.deepEqual(await readdir(join(root, "audio")), []); // sidecar gone too
  });

  test("deleteMany removes every key (missing ones are fine); a bad key removes nothing", async () => {
    const keys = ["images/job_many-0.png", "images/job_many-1.png", "videos/job_many.mp4"];
    for (const k of keys) await store.put(k, bytes(k), { contentType: "application/octet-stream" });
    await assert.rejects(store.deleteMany([keys[0], "../escape"]), /Invalid blob key/);
    assert.ok(await store.head(keys[0]), "nothing removed when a key is bad");
    await store.deleteMany([...keys, "images/job_never-0.png"]);
    for (const k of keys) assert.equal(await store.head(k), null, k);
    await store.deleteMany(keys); // again: nothing left, no error
    await store.deleteMany([]);
  });

  test("put from an async iterable, nested folders created", async () => {
    async function* chunks() {
      for (let i = 0; i < 100; i++) yield new Uint8Array(1000).fill(i);
    }
    const put = await store.put("videos/2024/01/job_x.mp4", chunks(), {
      contentType: "video/mp4",
    });
    assert.equal(put.size, 100_000);
    const got = await store.get("videos/2024/01/job_x.mp4");
    assert.ok(got);
    assert.equal(got.info.contentType, "video/mp4");
    const all = await readAll(got.body);
    assert.equal(all.length, 100_000);
    assert.equal(all[0], 0);
    assert.equal(all[99_999], 99);
    assert.equal(put.etag, createHash("sha256").update(all).digest("hex"));
  });

  test("empty blob", async () => {
    const put = await store.put("empty.bin", new Uint8Array(0), {
      contentType: "application/octet-stream",
    });
    assert.equal(put.size, 0);
    const got = await store.get("empty.bin");
    assert.ok(got);
    assert.equal((await readAll(got.body)).length, 0);
    await assert.rejects(store.get("empty.bin", { start: 0, end: 0 }), RangeError);
  });

  test("overwrite replaces bytes, type and etag", async () => {
    const a = await store.put("images/x.png", bytes("aaaa"), {
      contentType: "image/png",
    });
    const b = await store.put("images/x.png", bytes("bbbbbb"), {
      contentType: "image/webp",
    });
    assert.notEqual(a.etag, b.etag);
    assert.deepEqual(await store.head("images/x.png"), b);
    const got = await store.get("images/x.png");
    assert.ok(got);
    assert.equal((await readAll(got.body)).toString(), "bbbbbb");
  });

  test("atomic write: a slow put is invisible until done; no partial file under the key", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let firstSent!: () => void;
    const started = new Promise<void>((r) => {
      firstSent = r;
    });
    async function* slow() {
      yield bytes("first half, ");
      firstSent();
      await gate;
      yield bytes("second half");
    }
    const pending = store.put("audio/slow.mp3", slow(), {
      contentType: "audio/mpeg",
    });
    await started;
    assert.equal(await store.head("audio/slow.mp3"), null);
    assert.equal(await store.get("audio/slow.mp3"), null);
    const visible = await readdir(join(root, "audio")).catch(() => [] as string[]);
    assert.ok(!visible.some((f) => f.startsWith("slow")), `visible: ${visible.join(", ")}`);
    release();
    const put = await pending;
    assert.equal(put.size, "first half, second half".length);
    const got = await store.get("audio/slow.mp3");
    assert.ok(got);
    assert.equal((await readAll(got.body)).toString(), "first half, second half");
    assert.deepEqual(await readdir(join(root, ".tmp")), []);
  });

  test("a failing body stores nothing and leaves no temp file", async () => {
    async function* broken() {
      yield bytes("partial");
      throw new Error("upstream broke");
    }
    await assert.rejects(
      store.put("audio/broken.mp3", broken(), { contentType: "audio/mpeg" }),
      /upstream broke/,
    );
    assert.equal(await store.head("audio/broken.mp3"), null);
    assert.deepEqual(await readdir(join(root, ".tmp")), []);
  });

  test("key validation rejects traversal, absolute paths, backslashes and odd characters", async () => {
    const bad = [
      "",
      "../etc/passwd",
      "audio/../../x",
      "..",
      ".",
      "./a",
      "/etc/passwd",
      "audio//x.mp3",
      "audio/",
      "a\\b",
      "..\\x",
      "audio/x y.mp3",
      "audio/x%2e.mp3",
      "audio/é.mp3",
      "audio/x.mp3\0",
      ".tmp/abc",
      "audio/.hidden",
      "audio/x.mp3.meta.json",
      "a".repeat(513),
    ];
    for (const key of bad) {
      assert.equal(isValidBlobKey(key), false, JSON.stringify(key));
      await assert.rejects(store.put(key, bytes("x"), { contentType: "text/plain" }), InvalidBlobKeyError);
      await assert.rejects(store.head(key), InvalidBlobKeyError);
      await assert.rejects(store.get(key), InvalidBlobKeyError);
      await assert.rejects(store.delete(key), InvalidBlobKeyError);
    }
    for (const key of ["a", "audio/job_abc.mp3", "A-Z_0.9/x..y", "a".repeat(512)]) {
      assert.equal(isValidBlobKey(key), true, key);
    }
  });

  test("content type must be a header-safe media type", async () => {
    for (const contentType of ["", "audio", "audio/mpeg\r\nx-evil: 1", " audio/mpeg"]) {
      await assert.rejects(store.put("audio/ct.mp3", bytes("x"), { contentType }), TypeError);
    }
    assert.equal(await store.head("audio/ct.mp3"), null);
  });

  test("folders removed by hand between puts are created again (the store remembers the ones it made)", async () => {
    await store.put("gone/a/one.bin", bytes("1"), { contentType: "application/octet-stream" });
    await rm(join(root, "gone"), { recursive: true, force: true });
    await rm(join(root, ".tmp"), { recursive: true, force: true });
    await store.put("gone/a/two.bin", bytes("2"), { contentType: "application/octet-stream" });
    assert.equal((await readAll((await store.get("gone/a/two.bin"))!.body)).toString(), "2");
    assert.equal((await store.head("gone/a/two.bin"))?.size, 1);
    assert.equal(await store.head("gone/a/one.bin"), null);
    assert.deepEqual(await readdir(join(root, ".tmp")), [], "no temp file left");
  });

  test("ping creates the root and succeeds", async () => {
    const nested = new DiskBlobStore(join(root, "fresh", "root"));
    await nested.ping();
    assert.deepEqual(await readdir(join(root, "fresh", "root")), [".tmp"]);
  });
});

describe("openBlobStore", () => {
  test("file: relative paths resolve against cwd", () => {
    const store = openBlobStore("file:./data/blobs");
    assert.ok(store instanceof DiskBlobStore);
    assert.equal(store.root, resolve(process.cwd(), "data/blobs"));
  });

  test("file: absolute paths and file:// URLs", () => {
    const a = openBlobStore("file:/var/lib/blobs");
    assert.ok(a instanceof DiskBlobStore);
    assert.equal(a.root, "/var/lib/blobs");
    const b = openBlobStore("file:///var/lib/blobs");
    assert.ok(b instanceof DiskBlobStore);
    assert.equal(b.root, "/var/lib/blobs");
  });

  test("s3:// opens an S3 store; other values are rejected", () => {
    const s3 = openBlobStore("s3://bucket/prefix", { endpoint: "http://127.0.0.1:9", region: "us-east-1" });
    assert.ok(s3 instanceof S3BlobStore);
    assert.equal(s3.bucket, "bucket");
    assert.throws(() => openBlobStore("file:"), /STORAGE_URL/);
    assert.throws(() => openBlobStore("http://example.com"), /STORAGE_URL/);
    assert.throws(() => openBlobStore("./data/blobs"), /STORAGE_URL/);
  });
});
