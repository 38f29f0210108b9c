/**
 * Outputs returned as upstream URLs are downloaded (size cap, timeout, address checks) and rehosted:
 * `output.url` always points at the gateway's copy, never at the upstream (spec "Media job").
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { safeFetch } from "../../src/upstreams/safe-fetch.ts";
import { renderPng } from "../../src/upstreams/simulator/visual.ts";
import type { ImageRequest, MediaOutput, VideoRequest, VisualAdapter } from "../../src/upstreams/types.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

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
        const path = req.prompt === "too big" ? "/big.png" : req.prompt === "redirect" ? "/redirect" : "/out.png";
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
