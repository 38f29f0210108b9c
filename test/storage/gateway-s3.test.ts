/**
 * The gateway with `STORAGE_URL=s3://...` against a real S3-compatible server (s3rver on loopback): a
 * stored music file and an image job's output are written to the bucket and served back (with Range),
 * and readiness checks the bucket.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

interface S3rverServer {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
const S3rver = createRequire(import.meta.url)("s3rver") as new (o: { address: string; port: number; directory: string; silent: boolean }) => S3rverServer;

describe("gateway on S3-compatible storage", () => {
  let server: S3rverServer;
  let dir: string;
  let gw: TestGateway;
  const bucket = `gw-${randomUUID().slice(0, 8)}`;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-s3-"));
    server = new S3rver({ address: "127.0.0.1", port: 0, directory: dir, silent: true });
    const { port } = await server.run();
    const endpoint = `http://127.0.0.1:${port}`;
    const client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    client.destroy();
    gw = await startGateway("sqlite", {
      STORAGE_URL: `s3://${bucket}/outputs`,
      S3_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    });
  });
  after(async () => {
    await gw?.close();
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("outputs go to the bucket and come back, with Range; readiness sees the bucket", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/audio/sfx?save_to_blob=1", { token: u.api_key, body: { prompt: "door knock", duration_seconds: 1 } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const path = new URL(r.json.url).pathname;
    const full = await gw.request("GET", path);
    assert.equal(full.status, 200);
    assert.equal(full.headers.get("content-type"), "audio/mpeg");
    const part = await gw.request("GET", path, { headers: { range: "bytes=10-29" } });
    assert.equal(part.status, 206);
    assert.deepEqual(part.bytes, full.bytes.subarray(10, 30));

    const job = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "s3" } });
    const done = await gw.waitForJob(u.api_key, job.json.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    const img = await gw.request("GET", new URL(done.json.output.url).pathname);
    assert.equal(img.headers.get("content-type"), "image/png");

    const ready = await gw.request("GET", "/readyz");
    assert.equal(ready.json.checks.storage, "ok");
  });
});
