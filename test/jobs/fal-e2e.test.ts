/**
 * Image and video jobs end to end on the fal protocol: the gateway's runner (durable path, D27/D28) drives
 * the fal source (src/upstreams/fal) against the loopback fake of fal's queue. Each job is submitted once,
 * polled to the end, rehosted and charged once; a fal failure of its own moves the job to the family's
 * next source under the same hold.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import type { SourceSlot } from "../../src/jobs/durable.ts";
import { createFalSource, type FalSource } from "../../src/upstreams/fal/source.ts";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { safeFetch } from "../../src/upstreams/safe-fetch.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const KEY = "fal-test-key-0123456789abcdef";

/** A slot without a gate or circuit (the registry adds those). */
const slotOf = (source: FalSource): SourceSlot => ({ name: source.name, source, tryAcquire: () => true, release() {}, call: (fn) => fn() });

describe("jobs on fal (loopback fake of fal's queue)", () => {
  let fake: FalFake;
  let backup: FalFake;
  let primary: FalSource;
  let secondary: FalSource;
  let gw: TestGateway;

  before(async () => {
    fake = await startFalFake({ apiKey: KEY, queueMs: 20, runMs: 40 });
    backup = await startFalFake({ apiKey: KEY, queueMs: 20, runMs: 40 });
    primary = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: KEY });
    secondary = createFalSource({ name: "fal-backup", baseUrl: backup.url, apiKey: KEY });
    const slots = [slotOf(primary), slotOf(secondary)];
    gw = await startGateway("sqlite", {}, {
      overrides: {
        jobSources: { sourcesFor: () => slots, sourceNamed: (n) => slots.find((s) => s.name === n) },
        // The fakes' media are on loopback: allowed here as D25 allows a source's own hosts.
        fetchOutput: (url, o) =>
          safeFetch(url, { ...o, allowHttp: true, allowPrivateForTests: { resolve: async () => ["127.0.0.1"], allowAddress: () => true } }),
      },
      runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } },
    });
  });
  after(async () => {
    await gw?.close();
    await primary?.close();
    await secondary?.close();
    await fake?.close();
    await backup?.close();
  });

  test("an imgA image and a vidD video succeed on fal, submitted once each and charged once", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    for (const body of [
      { path: "/v1/images/generations", body: { model: "imgA-v4", prompt: "a red kite over dunes" }, type: /^image\// },
      { path: "/v1/videos/generations", body: { model: "vidD-3-fast", prompt: "waves at dusk", duration: 4 }, type: /^video\/mp4/ },
    ]) {
      const submitsBefore = fake.submits().length;
      const r = await gw.request("POST", body.path, { token: u.api_key, body: body.body });
      assert.equal(r.status, 202, JSON.stringify(r.json));
      const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.fallback_layer, 0);
      assert.match(done.json.output.content_type, body.type);
      assert.ok(done.json.output.url.startsWith(gw.url), "rehosted");
      const media = await gw.request("GET", new URL(done.json.output.url).pathname);
      assert.equal(media.status, 200);
      assert.ok(media.bytes.length > 100);
      assert.equal(fake.submits().length, submitsBefore + 1, "one submit");
      const auth = fake.submits().at(-1)?.headers.authorization;
      assert.equal(auth, "Key [redacted]");
      // fal reports no price: the upstream cost recorded is the list price (the charge without x1.35).
      const row = await gw.services.db.kysely.selectFrom("jobs").select(["cost_micros", "upstream_cost_micros", "upstream_cost_basis"]).where("id", "=", r.json.id).executeTakeFirstOrThrow();
      assert.equal(row.upstream_cost_basis, "list_price");
      assert.equal(Number(row.upstream_cost_micros), Math.round((Number(row.cost_micros) * 10_000) / 13_500));
    }
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
  });

  test("a fal job that fails for fal's own reason moves to the next source under one hold", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "a fox [fake:failed-completed]" } });
    assert.equal(r.status, 202);
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    // The backup fake reads the same marker and fails too: the job ends failed, the hold released.
    assert.equal(done.json.status, "failed", JSON.stringify(done.json));
    assert.equal(done.json.error.code, "provider_error");
    assert.ok(backup.submits().length >= 1, "the next source was tried");
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), 500_000);
    assert.equal(await ledgerSum(db, u.org_id), 500_000);
    assert.doesNotMatch(JSON.stringify(done.json), new RegExp(KEY));
  });

  test("a moderation refusal ends the job content_rejected, nothing charged", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "x [fake:moderation]" } });
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "failed", JSON.stringify(done.json));
    assert.equal(done.json.error.code, "content_rejected");
    assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
  });
});

describe("UPSTREAMS with a fal source serves imgA and vidD jobs (no test seams)", () => {
  let fake: FalFake;
  let gw: TestGateway;
  before(async () => {
    fake = await startFalFake({ apiKey: KEY, queueMs: 20, runMs: 40 });
    gw = await startGateway(
      "sqlite",
      {
        FAL_TEST_KEY: KEY,
        // The fake's own host serves the outputs: downloaded directly (D25), not through the SSRF-safe fetch.
        UPSTREAMS: JSON.stringify([{ name: "fal-local", protocol: "fal", base_url: fake.url, api_key: "env:FAL_TEST_KEY", families: ["imgA", "vidD"], max_concurrency: 4 }]),
      },
      { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } } },
    );
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
  });

  test("an image job runs on the configured source, is charged once and shows in the source's statistics", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "a lighthouse" } });
    assert.equal(r.status, 202);
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(fake.submits().length, 1);
    const rows = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
    const row = (rows.json.data as { name: string; successes: number; in_flight: number }[]).find((x) => x.name === "fal-local");
    assert.ok(row && row.successes >= 2, JSON.stringify(rows.json));
    assert.equal(row.in_flight, 0);
    assert.ok(!JSON.stringify(rows.json).includes(KEY));
    // A family without a source stays on the simulator.
    const sim = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgB-1.1-ultra", prompt: "sim" } });
    const simDone = await gw.waitForJob(u.api_key, sim.json.id, 30_000);
    assert.equal(simDone.json.status, "succeeded");
    assert.equal(fake.submits().length, 1);
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
  });
});
