/**
 * The OpenAI dialect (D37) on real upstream protocols: the gateway configured with `UPSTREAMS` on the
 * loopback fakes of fal (imgA, imgB, vidD) and OpenAI images (imgC), driven by the official `openai` SDK.
 * `images.generate` on both sources, `images.edit` on fal (the upload reaches fal as a URL on the gateway's
 * own host, never as bytes), and a video with an uploaded first frame on fal; each charged exactly once, a
 * failing source charging nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { APIError, toFile } from "openai";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { type OpenAIImagesFake, startOpenAIImagesFake } from "../../fakes/openai-images.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { fundedClient, tinyPng } from "./fixtures.ts";

const FAL_KEY = "fal-dialect-key-0123456789abcdef";
const OPENAI_KEY = "sk-dialect-openai-5b9c2e7a1f04";

describe("the openai SDK's images and videos on the fal and openai sources (D37)", () => {
  let fal: FalFake;
  let openai: OpenAIImagesFake;
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let client: OpenAI;

  const balance = async () => {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, user.org_id);
    assert.equal(b, await ledgerSum(db, user.org_id));
    return b ?? -1;
  };
  const lastJob = () => gw.services.db.kysely.selectFrom("jobs").selectAll().where("account_id", "=", user.org_id).orderBy("created_at", "desc").orderBy("id", "desc").executeTakeFirstOrThrow();

  before(async () => {
    fal = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40 });
    openai = await startOpenAIImagesFake({ apiKey: OPENAI_KEY });
    const upstreams = [
      { name: "fal", protocol: "fal", base_url: fal.url, api_key: "env:DIALECT_FAL_KEY", families: ["imgA", "imgB", "vidD"] },
      { name: "openai", protocol: "openai", base_url: `${openai.url}/v1`, api_key: "env:DIALECT_OPENAI_KEY", families: ["imgC"] },
    ];
    gw = await startGateway(
      "sqlite",
      { DIALECT_FAL_KEY: FAL_KEY, DIALECT_OPENAI_KEY: OPENAI_KEY, UPSTREAMS: JSON.stringify(upstreams) },
      { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } } },
    );
    ({ user, client } = await fundedClient(gw));
  });
  after(async () => {
    await gw?.close();
    await Promise.all([fal?.close(), openai?.close()]);
  });

  test("images.generate with gpt-image-2 on the openai source: one upstream call, imgC-q1 at the requested tier", async () => {
    const start = await balance();
    const calls = openai.submits().length;
    const res = await client.images.generate({ model: "gpt-image-2", prompt: "a teapot on a table", quality: "high", size: "1536x1024" });
    assert.ok(res.data?.[0].url?.startsWith(`${gw.url}/v1/files/`));
    assert.equal(openai.submits().length, calls + 1);
    const sent = openai.submits().at(-1)?.body as { model: string; quality: string };
    assert.equal(sent.model, "gpt-image-2");
    assert.equal(sent.quality, "high");
    const job = await lastJob();
    assert.equal(job.upstream_source, "openai");
    assert.equal(await balance(), start - 225_000);
  });

  test("images.generate on fal: b64_json of the rehosted image", async () => {
    const start = await balance();
    const res = await client.images.generate({ model: "imgA-v4", prompt: "a red kite", response_format: "b64_json" });
    assert.ok((res.data?.[0].b64_json ?? "").length > 100);
    const job = await lastJob();
    assert.equal(job.upstream_source, "fal");
    assert.equal(await balance(), start - 54_000);
  });

  test("images.edit on fal: the upload reaches fal as a URL on the gateway's host, never as bytes", async () => {
    const start = await balance();
    const png = tinyPng();
    const calls = fal.submits().length;
    const res = await client.images.edit({ image: await toFile(png, "photo.png", { type: "image/png" }), prompt: "make it night" });
    assert.ok(res.data?.[0].url?.startsWith(`${gw.url}/v1/files/`));
    assert.equal(fal.submits().length, calls + 1);
    const input = fal.submits().at(-1)?.body as Record<string, unknown>;
    assert.equal(typeof input.image_url, "string");
    assert.ok((input.image_url as string).startsWith(`${gw.url}/v1/files/uploads/`), String(input.image_url));
    assert.ok(!JSON.stringify(input).includes(png.toString("base64").slice(0, 40)), "no image bytes in the upstream request");
    assert.deepEqual(Buffer.from(await (await fetch(input.image_url as string)).arrayBuffer()), png);
    assert.equal((await lastJob()).model, "imgB-edit-pro");
    assert.equal(await balance(), start - 54_000);
  });

  test("images.edit with gpt-image-2: 400 invalid_model (imgC takes no reference images), nothing sent or held", async () => {
    const start = await balance();
    const calls = openai.requests.length;
    const err = await client.images.edit({ image: await toFile(tinyPng(), "photo.png", { type: "image/png" }), prompt: "edit", model: "gpt-image-2" }).catch((e: unknown) => e);
    assert.ok(err instanceof APIError, String(err));
    assert.equal(err.status, 400);
    assert.equal((err.error as { code?: string }).code, "invalid_model");
    assert.match(err.message, /imgC-q1 takes no reference images/);
    assert.equal(openai.requests.length, calls);
    assert.equal(await balance(), start);
  });

  test("videos.create with an uploaded first frame on fal: image-to-video with the gateway's URL, charged once", async () => {
    const start = await balance();
    const calls = fal.submits().length;
    const video = await client.videos.create({ prompt: "the photo starts to move", seconds: "4", input_reference: await toFile(tinyPng(), "frame.png", { type: "image/png" }) });
    await gw.waitForJob(user.api_key, video.id, 30_000);
    const done = await client.videos.retrieve(video.id);
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.equal(fal.submits().length, calls + 1);
    const submit = fal.submits().at(-1);
    assert.match(submit?.path ?? "", /image-to-video/);
    assert.ok(String((submit?.body as Record<string, unknown>).image_url).startsWith(`${gw.url}/v1/files/uploads/`));
    const mp4 = Buffer.from(await (await client.videos.downloadContent(video.id)).arrayBuffer());
    assert.equal(mp4.subarray(4, 8).toString("latin1"), "ftyp");
    assert.equal(await balance(), start - Number((await lastJob()).cost_micros));
    assert.ok(Number((await lastJob()).cost_micros) > 0);
  });

  test("a refusal by the source: images.generate answers 502 with the job's error, nothing charged", async () => {
    const start = await balance();
    const err = await client.images.generate({ model: "gpt-image-2", prompt: "a teapot [fake:moderation]" }).catch((e: unknown) => e);
    assert.ok(err instanceof APIError, String(err));
    assert.equal(err.status, 502);
    assert.equal((err.error as { code?: string }).code, "content_rejected");
    const job = await lastJob();
    assert.equal(job.status, "failed");
    assert.equal(job.cost_micros, null);
    assert.equal(await balance(), start);
  });
});
