/**
 * How the gateway serves the web console (src/http/routes/console.ts, issue 15): `/console` redirects to
 * `/console/`, hashed assets are cached immutable, `index.html` is `no-cache` and answers every client
 * route, a missing asset is a 404, a missing build a 503 page saying how to build it, and none of it is
 * in the OpenAPI document. No browser needed.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify from "fastify";
import { consoleRoutes } from "../../src/http/routes/console.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { ensureConsoleBuilt } from "./harness.ts";

describe("the console's files", () => {
  let gw: TestGateway;
  before(async () => {
    await ensureConsoleBuilt();
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });
  const get = (path: string) => fetch(gw.url + path, { redirect: "manual" });

  test("/console redirects to /console/, keeping the query", async () => {
    const res = await get("/console?next=%2Fkeys");
    assert.equal(res.status, 301);
    assert.equal(res.headers.get("location"), "/console/?next=%2Fkeys");
  });

  test("index.html: no-cache, with a content security policy; every client route answers it", async () => {
    const index = await get("/console/");
    assert.equal(index.status, 200);
    assert.match(index.headers.get("content-type") ?? "", /^text\/html/);
    assert.equal(index.headers.get("cache-control"), "no-cache");
    assert.match(index.headers.get("content-security-policy") ?? "", /default-src 'self'/);
    const html = await index.text();
    assert.match(html, /<div id="root">/);
    for (const path of ["/console/keys", "/console/pricing?modality=image", "/console/jobs/job_123", "/console/index.html"]) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.equal(await res.text(), html, path);
    }
  });

  test("hashed assets are cached for a year, immutable; a missing one is a 404 in the D1 body", async () => {
    const html = await (await get("/console/")).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]);
    assert.ok(assets.some((a) => a.endsWith(".js")) && assets.some((a) => a.endsWith(".css")), html);
    for (const a of assets) {
      const res = await get(a);
      assert.equal(res.status, 200, a);
      assert.equal(res.headers.get("cache-control"), "public, max-age=31536000, immutable", a);
    }
    const missing = await get("/console/assets/index-00000000.js");
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, "not_found");
    const outside = await get("/console/assets/..%2f..%2fpackage.json");
    assert.equal(outside.status, 404);
  });

  test("not in the OpenAPI document", async () => {
    const doc = (await (await get("/openapi.json")).json()) as { paths: Record<string, unknown> };
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith("/console")), []);
  });
});

describe("without a build", () => {
  const empty = mkdtempSync(join(tmpdir(), "console-dist-"));
  const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  before(async () => {
    await app.register(async (scope) => consoleRoutes(scope, { distDir: join(empty, "dist") }));
    await app.ready();
  });
  after(async () => {
    await app.close();
    rmSync(empty, { recursive: true, force: true });
  });

  test("a 503 HTML page says how to build the console", async () => {
    const res = await app.inject({ method: "GET", url: "/console/keys" });
    assert.equal(res.statusCode, 503);
    assert.match(String(res.headers["content-type"]), /^text\/html/);
    assert.match(res.body, /npm run build:console/);
  });
});
