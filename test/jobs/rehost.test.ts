/**
 * Outputs returned as upstream URLs are downloaded (size cap, timeout, address checks) and rehosted:
 * `output.url` always points at the gateway's copy, never at the upstream (spec "Media job"). The copy
 * is described by its own bytes, not by what the upstream said (issue 42): a JPEG sent as `image/png` is
 * stored and reported as the JPEG it is, with its size.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { safeFetch } from "../../src/upstreams/safe-fetch.ts";
import { renderPng } from "../../src/upstreams/simulator/visual.ts";
import type { ImageRequest, MediaOutput, VideoRequest, VisualAdapter } from "../../src/upstreams/types.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { FIXTURE_SIZE, JPEG, WEBP_LOSSY } from "../helpers/media-fixtures.ts";

describe("rehosting upstream output URLs", () => {
  let upstream: Server;
  let port = 0;
  let gw: TestGateway;
  const png = renderPng({ prompt: "upstream", width: 64, height: 48, index: 0 });

  before(async () => {
    upstream = createServer((req, res) => {
      if (req.url === "/big.png") {
        res.writeHead(200, { "content-type": "image/png", "content-length": String(60 * 1024 * 1024) });
        res.end();
        return;
      }
      // A provider that labels every file `image/png`, whatever it is.
      if (req.url === "/jpeg.png" || req.url === "/webp.png" || req.url === "/junk.png") {
        res.writeHead(200, { "content-type": "image/png" });
        res.end(req.url === "/jpeg.png" ? JPEG : req.url === "/webp.png" ? WEBP_LOSSY : Buffer.from("not an image at all"));
        return;
      }
      if (req.url === "/redirect") {
        res.writeHead(302, { location: "http://127.0.0.1:1/private" });
        res.end();
        return;
      }
      res.writeHead(200, { "content-type": "image/png" });
      res.end(png);
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    port = (upstream.address() as { port: number }).port;
    // A fake upstream family whose outputs are URLs on a "public" host (the loopback server stands in).
    const visual: VisualAdapter = {
      async generateImages(req: ImageRequest): Promise<MediaOutput[]> {
        const path = req.prompt.endsWith(".png") ? `/${req.prompt}` : req.prompt === "too big" ? "/big.png" : req.prompt === "redirect" ? "/redirect" : "/out.png";
        return [{ kind: "url", url: `http://cdn.upstream.test:${port}${path}` }];
      },
      async generateVideo(_req: VideoRequest): Promise<MediaOutput> {
        throw new Error("not used");
      },
    };
    gw = await startGateway("sqlite", {}, {
      overrides: {
        visual,
        fetchOutput: (url, o) =>
          safeFetch(url, {
            ...o,
            allowHttp: true,
            allowPrivateForTests: {
              resolve: async (host) => (host === "cdn.upstream.test" ? ["127.0.0.1"] : []),
              allowAddress: (_addr, host) => host === "cdn.upstream.test",
            },
          }),
      },
    });
  });
  after(async () => {
    await gw?.close();
    upstream?.close();
  });

  test("the output is copied into our storage; the URL is ours", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "ok" } });
    const done = await gw.waitForJob(u.api_key, r.json.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.ok(done.json.output.url.startsWith(gw.url));
    assert.ok(!done.json.output.url.includes("upstream.test"));
    const copy = await gw.request("GET", new URL(done.json.output.url).pathname);
    assert.deepEqual(copy.bytes, png);
  });

  test("the copy is described by its bytes: a JPEG or WebP labelled image/png is stored and reported as what it is", async () => {
    const u = await gw.register();
    for (const [prompt, type, ext, bytes] of [
      ["jpeg.png", "image/jpeg", "jpg", JPEG],
      ["webp.png", "image/webp", "webp", WEBP_LOSSY],
    ] as const) {
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt, size: "1024x1024" } });
      const done = await gw.waitForJob(u.api_key, r.json.id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      const out = done.json.output;
      assert.deepEqual([out.content_type, out.width, out.height], [type, FIXTURE_SIZE.width, FIXTURE_SIZE.height], prompt);
      assert.ok(out.url.endsWith(`.${ext}`), out.url);
      const copy = await gw.request("GET", new URL(out.url).pathname);
      assert.equal(copy.headers.get("content-type"), type);
      assert.deepEqual(copy.bytes, bytes);
    }
    // A file the gateway cannot read keeps the upstream's type and claims no size (never the request's).
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "junk.png", size: "1024x1024" } });
    const done = await gw.waitForJob(u.api_key, r.json.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.output.content_type, "image/png");
    assert.equal(done.json.output.width, undefined);
    assert.equal(done.json.output.height, undefined);
  });

  test("an output over the size cap, or redirected to a private address, fails the job and releases the hold", async () => {
    const u = await gw.register();
    for (const prompt of ["too big", "redirect"]) {
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt } });
      const done = await gw.waitForJob(u.api_key, r.json.id);
      assert.equal(done.json.status, "failed", JSON.stringify(done.json));
      assert.equal(done.json.error.code, "provider_error");
    }
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), 500_000);
    assert.equal(await ledgerSum(db, u.org_id), 500_000);
  });
});
