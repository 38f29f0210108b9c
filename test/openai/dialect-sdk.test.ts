/**
 * `/openai/v1` as the whole OpenAI dialect (D37), proven with the official `openai` SDK, unchanged, on a real
 * gateway on loopback (simulator): chat, speech, transcription and models answer there with the native
 * handlers; `images.generate` (url and b64_json, a failed job answering 502 with nothing charged, a retry
 * with the same `Idempotency-Key` header making one job) and `images.edit` (uploads stored on the gateway and
 * given to the job as URLs on its own host; one image or `image[]`); exact money after each.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { toFile } from "openai";
import { usdToMicros } from "../../src/money.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { checkedBalance, failure, fundedClient, tinyPng } from "./fixtures.ts";

describe("the openai SDK at /openai/v1 (D37)", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let client: OpenAI;

  const balance = () => checkedBalance(gw.services.db.kysely, user.org_id);
  const micros = (usd: string | null) => {
    const m = usdToMicros(usd ?? "");
    assert.ok(m !== null, `a USD amount: ${usd}`);
    return m;
  };
  const jobs = () => gw.services.db.kysely.selectFrom("jobs").selectAll().where("account_id", "=", user.org_id).orderBy("created_at", "desc").orderBy("id", "desc").execute();
  const holds = async () => (await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", user.org_id).execute()).length;

  before(async () => {
    gw = await startGateway("sqlite");
    ({ user, client } = await fundedClient(gw));
  });
  after(async () => {
    await gw?.close();
  });

  test("chat, speech, transcription and models answer under /openai/v1 with the native handlers", async () => {
    let before = await balance();
    const chat = await client.chat.completions.create({ model: "fast", messages: [{ role: "user", content: "Say hello." }] }).withResponse();
    assert.ok(chat.data.choices[0].message.content);
    const chatCost = micros(chat.response.headers.get("x-svc-cost-usd"));
    assert.ok(chatCost > 0);
    assert.equal(await balance(), before - chatCost);

    before = await balance();
    const speech = await client.audio.speech.create({ model: "alpha-multilingual-v2", voice: DEMO_ALPHA_VOICE_ID, input: "Hello there." });
    assert.equal(speech.headers.get("content-type"), "audio/mpeg");
    assert.ok((await speech.arrayBuffer()).byteLength > 0);
    assert.equal(await balance(), before - micros(speech.headers.get("x-svc-cost-usd")));

    before = await balance();
    const heard = await client.audio.transcriptions.create({ file: await toFile(Buffer.from(makeWav(3)), "speech.wav", { type: "audio/wav" }), model: "transcribe" }).withResponse();
    assert.equal(typeof heard.data.text, "string");
    assert.equal(await balance(), before - micros(heard.response.headers.get("x-svc-cost-usd")));

    const models = await client.models.list();
    const ids = models.data.map((m) => m.id);
    assert.ok(ids.includes("vidD-3-fast") && ids.includes("imgC-q1") && ids.includes("alpha-multilingual-v2"), ids.join(","));
  });

  test("the operations of /openai/v1 are documented under the tag openai with their own ids", async () => {
    const doc = (await gw.request("GET", "/openapi.json")).json as { paths: Record<string, Record<string, { operationId: string; tags: string[] }>> };
    for (const [method, path] of [
      ["post", "/openai/v1/chat/completions"],
      ["post", "/openai/v1/audio/speech"],
      ["post", "/openai/v1/audio/transcriptions"],
      ["get", "/openai/v1/models"],
      ["post", "/openai/v1/videos"],
      ["post", "/openai/v1/images/generations"],
      ["post", "/openai/v1/images/edits"],
      ["post", "/v1/videos"],
      ["get", "/v1/videos/{id}/content"],
    ]) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method} ${path} documented`);
      assert.deepEqual(op.tags, ["openai"], `${method} ${path}`);
    }
    assert.equal(doc.paths["/openai/v1/chat/completions"].post.operationId, "openai_createChatCompletion");
    assert.deepEqual(doc.paths["/v1/chat/completions"].post.tags, ["text"], "the native operation keeps its tag");
  });

  test("images.generate: waits for the job, answers URLs on the gateway; 2 images of imgA-v4 charged exactly", async () => {
    const before = await balance();
    const res = await client.images.generate({ model: "imgA-v4", prompt: "a red fox in snow", n: 2, size: "1024x1024" });
    assert.equal(typeof res.created, "number");
    assert.equal(res.data?.length, 2);
    for (const image of res.data ?? []) {
      assert.ok(image.url?.startsWith(`${gw.url}/v1/files/`), image.url);
      const file = await fetch(image.url ?? "");
      assert.equal(file.status, 200);
      assert.equal(file.headers.get("content-type"), "image/png");
    }
    const [job] = await jobs();
    assert.equal(job.status, "succeeded");
    assert.equal(Number(job.cost_micros), 2 * 54_000);
    assert.equal(await balance(), before - 2 * 54_000);
    const usage = await gw.services.db.kysely.selectFrom("usage_records").selectAll().where("job_id", "=", job.id).executeTakeFirstOrThrow();
    assert.equal(usage.kind, "image");
    assert.equal(Number(usage.cost_micros), 2 * 54_000);
  });

  test("images.generate with gpt-image-2 and b64_json: the PNG bytes in the answer, imgC-q1's medium tier", async () => {
    const before = await balance();
    const res = await client.images.generate({ model: "gpt-image-2", prompt: "a teapot", response_format: "b64_json", quality: "medium" });
    const png = Buffer.from(res.data?.[0].b64_json ?? "", "base64");
    assert.equal(png.subarray(1, 4).toString("latin1"), "PNG");
    const [job] = await jobs();
    assert.equal(job.model, "imgC-q1");
    assert.equal(await balance(), before - 57_000);
  });

  test("a failed image job answers 502 with its error; nothing is charged", async () => {
    const before = await balance();
    const err = await failure(client.images.generate({ model: "imgA-v4", prompt: "doomed" }, { headers: { "X-Svc-Simulate": "fail" } }));
    assert.equal(err.status, 502);
    assert.equal((err.error as { type?: string }).type, "provider_error");
    const [job] = await jobs();
    assert.equal(job.status, "failed");
    assert.match(err.message, new RegExp(job.id));
    assert.equal(await balance(), before);
  });

  test("images.generate retried with the same Idempotency-Key header: one job, one hold, the same images", async () => {
    const before = await balance();
    const holdsBefore = await holds();
    const options = { headers: { "Idempotency-Key": "img-once" } };
    const a = await client.images.generate({ model: "imgA-v4", prompt: "once" }, options);
    const b = await client.images.generate({ model: "imgA-v4", prompt: "once" }, options);
    assert.deepEqual(b.data, a.data);
    assert.equal(await holds(), holdsBefore + 1);
    assert.equal(await balance(), before - 54_000);
  });

  test("images.edit: the upload is stored on the gateway and is the job's image_url; imgB-edit-pro by default", async () => {
    const before = await balance();
    const png = tinyPng();
    const res = await client.images.edit({ image: await toFile(png, "cat.png", { type: "image/png" }), prompt: "give the cat a hat" });
    assert.equal(res.data?.length, 1);
    const [job] = await jobs();
    assert.equal(job.model, "imgB-edit-pro");
    const request = JSON.parse(job.request_json) as { imageUrls: string[] };
    assert.equal(request.imageUrls.length, 1);
    assert.ok(request.imageUrls[0].startsWith(`${gw.url}/v1/files/uploads/`), request.imageUrls[0]);
    assert.deepEqual(Buffer.from(await (await fetch(request.imageUrls[0])).arrayBuffer()), png);
    assert.equal(await balance(), before - 54_000);
  });

  test("images.edit with image[] on imgB-2-pro: every upload a reference; refusals hold nothing", async () => {
    const before = await balance();
    const a = tinyPng();
    const b = Buffer.from(a);
    // Another file: the same PNG with one more (empty-keyword) tEXt chunk after the signature.
    const other = Buffer.concat([b.subarray(0, 8), Buffer.from([0, 0, 0, 1, 0x74, 0x45, 0x58, 0x74, 0x41, 0, 0, 0, 0]), b.subarray(8)]);
    await client.images.edit({ image: [await toFile(a, "a.png", { type: "image/png" }), await toFile(other, "b.png", { type: "image/png" })], prompt: "combine", model: "imgB-2-pro" });
    const [job] = await jobs();
    assert.equal(job.model, "imgB-2-pro");
    const request = JSON.parse(job.request_json) as { imageUrls: string[] };
    assert.equal(request.imageUrls.length, 2);
    assert.ok(request.imageUrls.every((u) => u.startsWith(`${gw.url}/v1/files/uploads/`)));
    const charged = Number(job.cost_micros);
    assert.equal(await balance(), before - charged);

    const holdsBefore = await holds();
    const fa = await toFile(a, "a.png");
    const fb = await toFile(other, "b.png");
    const junk = await toFile(Buffer.from("not an image"), "x.png");
    const cases: [() => Promise<unknown>, number, string][] = [
      [() => client.images.edit({ image: junk, prompt: "p" }), 400, "invalid_request"],
      [() => client.images.edit({ image: [fa, fb], prompt: "p" }), 400, "too_many_references"],
      [() => client.images.edit({ image: fa, prompt: "p", model: "imgA-v4" }), 400, "invalid_model"],
      [() => client.images.edit({ image: fa, prompt: " " }), 400, "invalid_prompt"],
      [() => client.images.generate({ prompt: "p", model: "vidD-3-fast" }), 400, "invalid_model"],
      [() => client.images.generate({ prompt: "p", model: "dall-e-3" }), 404, "model_not_found"],
      [() => client.images.generate({ prompt: "p", model: "imgA-v4", n: 9 }), 400, "invalid_request"],
    ];
    for (const [call, status, code] of cases) {
      const err = await failure(call());
      assert.equal(err.status, status, `${code}: ${JSON.stringify(err.error)}`);
      assert.equal((err.error as { code?: string }).code, code);
    }
    assert.equal(await holds(), holdsBefore);
    assert.equal(await balance(), before - charged);
  });
});
