/**
 * vidC (Hailuo-02) configured on `minimax` instead of `fal` (issue "Real upstreams, part 2" point 2): a
 * job submitted once to MiniMax's video API, polled to `Success`, the file fetched through
 * `files/retrieve`, rehosted and charged once; a failed task is refunded. (vidC takes only 6 or 10 s at the
 * gateway, D2, so no length is rounded here; the source's own rounding is in its contract tests.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { type MiniMaxFake, startMiniMaxFake } from "../../fakes/minimax.ts";
import { mp4DurationSec } from "../../src/upstreams/media-probe.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const KEY = "mm-video-key-0f3c8a1e5b27";

describe("vidC on minimax", () => {
  let mm: MiniMaxFake;
  let gw: TestGateway;
  before(async () => {
    mm = await startMiniMaxFake({ apiKey: KEY, videoRunMs: 100 });
    // The fake serves files from another host name, as MiniMax's CDN is another host; trusting it lets the
    // gateway download directly (a loopback address is refused by the SSRF-safe download).
    const files = `localhost:${new URL(mm.url).port}`;
    const upstreams = [{ name: "minimax", protocol: "minimax", base_url: mm.url, api_key: "env:E2E_MM_KEY", families: ["vidC"], trusted_hosts: [files] }];
    gw = await startGateway("sqlite", { E2E_MM_KEY: KEY, UPSTREAMS: JSON.stringify(upstreams) }, { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } } });
  });
  after(async () => {
    await gw?.close();
    await mm?.close();
  });

  test("a 10 s Hailuo-02 clip at 768P, charged once; a failed task is refunded", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    const db = gw.services.db.kysely;
    const start = await getBalance(db, u.org_id);
    const r = await gw.request("POST", "/v1/videos/generations", { token: u.api_key, body: { model: "vidC-02-768p", prompt: "a city at night", duration: 10 } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.output.content_type, "video/mp4");
    assert.equal(done.json.output.duration_sec, 10);
    assert.equal(done.json.cost_usd, r.json.hold_usd);
    const video = new Uint8Array(await (await fetch(done.json.output.url)).arrayBuffer());
    assert.equal(Math.round(mp4DurationSec(video) ?? 0), 10);
    const submits = mm.requests.filter((q) => q.path === "/v1/video_generation");
    assert.equal(submits.length, 1);
    const sent = submits[0]!.body as Record<string, unknown>;
    assert.deepEqual(
      [sent.model, sent.duration, sent.resolution],
      ["MiniMax-Hailuo-02", 10, "768P"],
    );
    assert.equal(await getBalance(db, u.org_id), start! - Math.round(r.json.hold_usd * 1e6));

    const failed = await gw.request("POST", "/v1/videos/generations", { token: u.api_key, body: { model: "vidC-02-768p", prompt: "[fake:video-fail] rain", duration: 6 } });
    assert.equal(failed.status, 202);
    const ended = await gw.waitForJob(u.api_key, failed.json.id, 30_000);
    assert.equal(ended.json.status, "failed", JSON.stringify(ended.json));
    assert.equal(await getBalance(db, u.org_id), start! - Math.round(r.json.hold_usd * 1e6));
    assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
  });
});
