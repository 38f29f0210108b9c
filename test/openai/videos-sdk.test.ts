/**
 * OpenAI's Videos API over the gateway's video jobs (D37), proven with the official `openai` SDK itself,
 * unchanged, against a real gateway on loopback (simulator): create (plain, with an uploaded first frame,
 * with `input_reference[image_url]` as a data URL), retrieve, list (after, limit, order), the MP4 download,
 * delete of a finished video and of a running one (its hold released), a create retried with the same
 * `Idempotency-Key` header (one job, one hold), and refusals that hold nothing; exact money after each.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { toFile } from "openai";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { checkedBalance, failure, tinyPng } from "./fixtures.ts";

describe("the openai SDK's videos against the gateway (D37)", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let client: OpenAI;

  const balance = () => checkedBalance(gw.services.db.kysely, user.org_id);
  const jobRow = (id: string) => gw.services.db.kysely.selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  const usageOfJob = (id: string) => gw.services.db.kysely.selectFrom("usage_records").selectAll().where("job_id", "=", id).execute();
  const holdsOf = async () => (await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", user.org_id).execute()).length;
  /**
   * Waits for the job to end (watching its row: polling the API would spend the tier's requests per
   * minute), then reads it with `videos.retrieve`.
   */
  const settle = async (id: string) => {
    await gw.waitForJob(user.api_key, id, 30_000);
    return client.videos.retrieve(id);
  };
  /** `seconds` as the SDK's type names it (it lists Sora's 4, 8 and 12; the gateway takes 1 to 10). */
  const sec = (s: string) => s as OpenAI.Videos.VideoSeconds;
  /** The SDK error of a call that must fail. */

  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    // Tier 2: more requests per minute than the suite makes.
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 2 } });
    client = new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
  });

  test("create, poll, download a real MP4: the hold, then the charge of 4 s of vidD-3-fast", async () => {
    const start = await balance();
    const video = await client.videos.create({ prompt: "waves rolling onto a beach at dusk", seconds: "4", size: "1280x720", model: "vidD-3-fast" });
    assert.match(video.id, /^job_/);
    assert.equal(video.object, "video");
    assert.equal(video.model, "vidD-3-fast");
    assert.ok(["queued", "in_progress"].includes(video.status), video.status);
    assert.equal(video.seconds, "4");
    assert.equal(video.size, "1280x720");
    assert.equal(video.prompt, "waves rolling onto a beach at dusk");
    assert.equal(video.remixed_from_video_id, null);
    assert.equal(video.expires_at, null);
    assert.equal(video.completed_at, null);
    assert.equal(typeof video.created_at, "number");
    const row = await jobRow(video.id);
    assert.equal(Number(row.hold_micros), 4 * 135_000);

    const done = await settle(video.id);
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.equal(done.progress, 100);
    assert.equal(typeof done.completed_at, "number");
    const content = await client.videos.downloadContent(video.id);
    assert.equal(content.headers.get("content-type"), "video/mp4");
    const mp4 = Buffer.from(await content.arrayBuffer());
    assert.equal(mp4.subarray(4, 8).toString("latin1"), "ftyp", "an MP4");
    assert.ok(mp4.length > 1000);

    assert.equal(await balance(), start - 4 * 135_000);
    const usage = await usageOfJob(video.id);
    assert.equal(usage.length, 1);
    assert.equal(usage[0].kind, "video");
    assert.equal(usage[0].status, "succeeded");
    assert.equal(Number(usage[0].cost_micros), 4 * 135_000);
  });

  test("input_reference: an uploaded PNG and a data URL become image_url on the gateway's own host", async () => {
    const start = await balance();
    const png = tinyPng();
    const uploaded = await client.videos.create({ prompt: "the picture comes alive", seconds: sec("2"), input_reference: await toFile(png, "frame.png", { type: "image/png" }) });
    const dataUrl = await client.videos.create({
      prompt: "the picture comes alive",
      seconds: sec("2"),
      size: "720x1280",
      input_reference: { image_url: `data:image/png;base64,${png.toString("base64")}` },
    });
    assert.equal(dataUrl.size, "720x1280");
    for (const id of [uploaded.id, dataUrl.id]) {
      const request = JSON.parse((await jobRow(id)).request_json) as { imageUrl: string };
      assert.ok(request.imageUrl.startsWith(`${gw.url}/v1/files/uploads/`), request.imageUrl);
      const stored = await fetch(request.imageUrl);
      assert.equal(stored.status, 200);
      assert.equal(stored.headers.get("content-type"), "image/png");
      assert.deepEqual(Buffer.from(await stored.arrayBuffer()), png);
      assert.equal((await settle(id)).status, "completed");
    }
    // The same image of the same account is stored once, under the same URL.
    assert.equal(JSON.parse((await jobRow(uploaded.id)).request_json).imageUrl, JSON.parse((await jobRow(dataUrl.id)).request_json).imageUrl);
    assert.equal(await balance(), start - 2 * 2 * 135_000);
  });

  test("list: newest first, after and limit, order=asc; only videos", async () => {
    await gw.request("POST", "/v1/images/generations", { token: user.api_key, body: { model: "imgA-v4", prompt: "not a video" } });
    const all = await client.videos.list({ limit: 100 });
    const ids = all.data.map((v) => v.id);
    assert.equal(ids.length, 3);
    assert.ok(all.data.every((v) => v.object === "video"));
    const created = all.data.map((v) => v.created_at);
    assert.deepEqual(created, [...created].sort((a, b) => b - a), "newest first");
    const first = await client.videos.list({ limit: 2 });
    assert.deepEqual(first.data.map((v) => v.id), ids.slice(0, 2));
    assert.equal(first.has_more, true);
    const next = await first.getNextPage();
    assert.deepEqual(next.data.map((v) => v.id), ids.slice(2));
    assert.equal(next.has_more, false);
    const asc = await client.videos.list({ order: "asc" });
    assert.deepEqual(asc.data.map((v) => v.id), [...ids].reverse());
    // Auto-pagination walks every page.
    const walked: string[] = [];
    for await (const v of client.videos.list({ limit: 1 })) walked.push(v.id);
    assert.deepEqual(walked, ids);
  });

  test("delete a finished video: its MP4 is gone, the charge stays", async () => {
    const { data } = await client.videos.list({ limit: 1, order: "asc" });
    const id = data[0].id;
    const before = await balance();
    const key = (JSON.parse((await jobRow(id)).output_json ?? "{}") as { key: string }).key;
    const deleted = await client.videos.delete(id);
    assert.deepEqual(deleted, { id, object: "video.deleted", deleted: true });
    assert.equal((await jobRow(id)).output_json, null);
    assert.equal((await fetch(`${gw.url}/v1/files/${key}`)).status, 404);
    const gone = await failure(client.videos.downloadContent(id));
    assert.equal(gone.status, 404);
    assert.equal((await client.videos.retrieve(id)).status, "completed", "the job and its records stay");
    assert.deepEqual(await client.videos.delete(id), { id, object: "video.deleted", deleted: true }, "a retried delete succeeds");
    assert.equal(await balance(), before);
  });

  test("delete a running video: cancelled, its whole hold released", async () => {
    const before = await balance();
    const holdsBefore = await holdsOf();
    const running = await client.videos.create({ prompt: "a slow sunrise", seconds: sec("5") }, { headers: { "X-Svc-Simulate": "hang" } });
    assert.equal(await balance(), before - 5 * 135_000, "held");
    const early = await failure(client.videos.downloadContent(running.id));
    assert.equal(early.status, 409);
    assert.equal((early.error as { code?: string }).code, "video_not_ready");
    const deleted = await client.videos.delete(running.id);
    assert.equal(deleted.deleted, true);
    const after = await client.videos.retrieve(running.id);
    assert.equal(after.status, "failed");
    assert.equal(after.error?.code, "canceled");
    assert.equal(await balance(), before, "the hold released");
    assert.equal(await holdsOf(), holdsBefore + 1);
    const row = await jobRow(running.id);
    assert.equal(row.status, "failed");
    assert.equal(row.cost_micros, null);
    const usage = await usageOfJob(running.id);
    assert.equal(usage.length, 1);
    assert.equal(Number(usage[0].cost_micros ?? 0), 0);
  });

  test("a create retried with the same Idempotency-Key header makes one job and one hold", async () => {
    const before = await balance();
    const holdsBefore = await holdsOf();
    const params = { prompt: "one lighthouse, once", seconds: sec("3") };
    const options = { headers: { "Idempotency-Key": "sdk-retry-1" } };
    const a = await client.videos.create(params, options);
    const b = await client.videos.create(params, options);
    assert.equal(b.id, a.id);
    assert.equal(await holdsOf(), holdsBefore + 1);
    const conflict = await failure(client.videos.create({ ...params, prompt: "another" }, options));
    assert.equal(conflict.status, 409);
    assert.equal((conflict.error as { code?: string }).code, "idempotency_conflict");
    assert.equal((await settle(a.id)).status, "completed");
    assert.equal(await balance(), before - 3 * 135_000);
    assert.equal((await usageOfJob(a.id)).length, 1);
  });

  test("the SDK's own retry of a create whose answer was lost makes one job and one hold", async () => {
    const before = await balance();
    const holdsBefore = await holdsOf();
    let creates = 0;
    // The gateway accepts the first create, then the connection "drops" before the answer arrives: the
    // SDK retries the POST by itself, with the same headers.
    const flaky = new OpenAI({
      apiKey: user.api_key,
      baseURL: `${gw.url}/v1`,
      maxRetries: 2,
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        if (init?.method === "POST" && String(url).endsWith("/v1/videos") && ++creates === 1) {
          await res.arrayBuffer();
          throw new TypeError("fetch failed: connection reset");
        }
        return res;
      },
    });
    const v = await flaky.videos.create({ prompt: "a kite, retried", seconds: sec("2") }, { headers: { "Idempotency-Key": "sdk-lost-answer" } });
    assert.equal(creates, 2, "the SDK retried once");
    assert.equal(await holdsOf(), holdsBefore + 1, "one hold");
    const jobs = await gw.services.db.kysely.selectFrom("jobs").select("id").where("idempotency_key", "=", "sdk-lost-answer").execute();
    assert.deepEqual(jobs.map((j) => j.id), [v.id], "one job");
    assert.equal((await settle(v.id)).status, "completed");
    assert.equal(await balance(), before - 2 * 135_000);
  });

  test("refusals hold nothing: bad seconds, unknown model, a non-image upload, tier 0", async () => {
    const before = await balance();
    const holdsBefore = await holdsOf();
    const gif = await toFile(Buffer.from("GIF89a not allowed"), "a.gif");
    const big = await toFile(Buffer.alloc(10 * 1024 * 1024 + 1), "big.png");
    const cases: [() => Promise<unknown>, number, string][] = [
      [() => client.videos.create({ prompt: "x", seconds: sec("12") }), 400, "invalid_duration"],
      [() => client.videos.create({ prompt: "x", model: "imgA-v4" }), 400, "invalid_model"],
      [() => client.videos.create({ prompt: "x", model: "sora-2" }), 404, "model_not_found"],
      [() => client.videos.create({ prompt: "   " }), 400, "invalid_prompt"],
      [() => client.videos.create({ prompt: "x", input_reference: gif }), 400, "invalid_request"],
      [() => client.videos.create({ prompt: "x", input_reference: { image_url: "http://127.0.0.1/a.png" } }), 400, "invalid_image_url"],
      [() => client.videos.create({ prompt: "x", input_reference: big }), 413, "invalid_request"],
    ];
    for (const [call, status, code] of cases) {
      const err = await failure(call());
      assert.equal(err.status, status, `${code}: ${JSON.stringify(err.error)}`);
      assert.equal((err.error as { code?: string }).code, code);
    }
    assert.equal(await holdsOf(), holdsBefore);
    assert.equal(await balance(), before);

    const poor = await gw.register();
    const tier0 = new OpenAI({ apiKey: poor.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const refused = await failure(tier0.videos.create({ prompt: "no video on tier 0" }));
    assert.equal(refused.status, 429);
    const unknown = await failure(client.videos.retrieve("job_doesnotexist"));
    assert.equal(unknown.status, 404);
  });

  test("the same routes answer under /openai/v1", async () => {
    const oa = new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });
    const v = await oa.videos.create({ prompt: "a paper boat", seconds: sec("1") });
    assert.equal((await oa.videos.retrieve(v.id)).id, v.id);
    const done = await settle(v.id);
    assert.equal(done.status, "completed");
    const bytes = Buffer.from(await (await oa.videos.downloadContent(v.id)).arrayBuffer());
    assert.equal(bytes.subarray(4, 8).toString("latin1"), "ftyp");
  });
});
