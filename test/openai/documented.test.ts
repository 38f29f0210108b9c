/**
 * The OpenAI dialect's answers are the ones /openapi.json documents (D37): every call here goes through
 * `gw.request`, which fails the test when an answer's status or JSON body differs from the document. On
 * SQLite and PostgreSQL (the list's `order=asc` cursor is SQL of its own).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { tinyPng } from "./fixtures.ts";

for (const backend of BACKENDS) {
  describe(`the OpenAI dialect's answers as documented, on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let user: { user_id: string; org_id: string; api_key: string };
    before(async () => {
      gw = await startGateway(backend.name);
      user = await gw.register();
      await gw.deposit(user.user_id, 20);
      await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
    });
    after(async () => {
      await gw?.close();
    });

    test("videos: JSON create with a data URL, retrieve, list both orders with cursors, content, delete", async () => {
      const token = user.api_key;
      const dataUrl = `data:image/png;base64,${tinyPng().toString("base64")}`;
      const ids: string[] = [];
      for (const prompt of ["first", "second", "third"]) {
        const r = await gw.request("POST", "/v1/videos", { token, body: { prompt, seconds: 1, size: "720x1280", input_reference: { image_url: dataUrl } } });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.json.size, "720x1280");
        assert.equal(r.json.seconds, "1");
        ids.push(r.json.id);
      }
      for (const id of ids) await gw.waitForJob(token, id);
      const one = await gw.request("GET", `/v1/videos/${ids[0]}`, { token });
      assert.equal(one.json.status, "completed");

      const desc = await gw.request("GET", "/v1/videos?limit=2", { token });
      assert.deepEqual(desc.json.data.map((v: { id: string }) => v.id), [ids[2], ids[1]]);
      assert.equal(desc.json.has_more, true);
      assert.equal(desc.json.first_id, ids[2]);
      const rest = await gw.request("GET", `/v1/videos?limit=2&after=${desc.json.last_id}`, { token });
      assert.deepEqual(rest.json.data.map((v: { id: string }) => v.id), [ids[0]]);
      assert.equal(rest.json.has_more, false);
      const asc = await gw.request("GET", "/v1/videos?order=asc&limit=2", { token });
      assert.deepEqual(asc.json.data.map((v: { id: string }) => v.id), [ids[0], ids[1]]);
      const ascRest = await gw.request("GET", `/v1/videos?order=asc&after=${asc.json.last_id}`, { token });
      assert.deepEqual(ascRest.json.data.map((v: { id: string }) => v.id), [ids[2]]);
      const empty = await gw.request("GET", `/v1/videos?order=asc&after=${ids[2]}`, { token });
      assert.deepEqual(empty.json, { object: "list", data: [], first_id: null, last_id: null, has_more: false });

      const content = await gw.request("GET", `/v1/videos/${ids[0]}/content`, { token });
      assert.equal(content.status, 200);
      assert.equal(content.headers.get("content-type"), "video/mp4");
      const part = await gw.request("GET", `/v1/videos/${ids[0]}/content`, { token, headers: { range: "bytes=0-7" } });
      assert.equal(part.status, 206);
      assert.equal(part.bytes.length, 8);
      const thumb = await gw.request("GET", `/v1/videos/${ids[0]}/content?variant=thumbnail`, { token });
      assert.equal(thumb.status, 400);
      assert.equal(thumb.json.error.code, "invalid_request");

      const del = await gw.request("DELETE", `/v1/videos/${ids[0]}`, { token });
      assert.deepEqual(del.json, { id: ids[0], object: "video.deleted", deleted: true });
      assert.equal((await gw.request("GET", `/v1/videos/${ids[0]}/content`, { token })).status, 404);
      // Another user sees none of it.
      const other = await gw.register();
      assert.equal((await gw.request("GET", `/v1/videos/${ids[1]}`, { token: other.api_key })).status, 404);
      assert.equal((await gw.request("DELETE", `/v1/videos/${ids[1]}`, { token: other.api_key })).status, 404);
      assert.equal((await gw.request("GET", "/v1/videos", { token: other.api_key })).json.data.length, 0);
      // An image job is not a video.
      const image = await gw.request("POST", "/v1/images/generations", { token, body: { model: "imgA-v4", prompt: "p" } });
      assert.equal((await gw.request("GET", `/v1/videos/${image.json.id}`, { token })).status, 404);
      await gw.waitForJob(token, image.json.id);

      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, user.org_id), 20_500_000 - 3 * 135_000 - 54_000);
      assert.equal(await ledgerSum(db, user.org_id), await getBalance(db, user.org_id));
    });

    test("images: generate answers {created, data}; refusals are documented 4xx; a failed job 502", async () => {
      const token = user.api_key;
      const ok = await gw.request("POST", "/openai/v1/images/generations", { token, body: { model: "imgA-v4", prompt: "a kite", n: 2 } });
      assert.equal(ok.status, 200, JSON.stringify(ok.json));
      assert.equal(ok.json.data.length, 2);
      const bad = await gw.request("POST", "/openai/v1/images/generations", { token, body: { model: "imgA-v4", prompt: "a kite", response_format: "svg" } });
      assert.equal(bad.status, 400);
      const noBody = await gw.request("POST", "/openai/v1/images/generations", { token, body: "[1]" });
      assert.equal(noBody.status, 400);
      const failed = await gw.request("POST", "/openai/v1/images/generations", { token, body: { model: "imgA-v4", prompt: "a kite" }, headers: { "x-svc-simulate": "fail" } });
      assert.equal(failed.status, 502);
      const badKey = await gw.request("POST", "/openai/v1/images/generations", { token, body: { model: "imgA-v4", prompt: "a kite" }, headers: { "Idempotency-Key": "k".repeat(129) } });
      assert.equal(badKey.status, 400);
      assert.match(badKey.json.error.message, /Idempotency-Key/);
      const noAuth = await gw.request("POST", "/openai/v1/images/generations", { body: { model: "imgA-v4", prompt: "a kite" } });
      assert.equal(noAuth.status, 401);
    });
  });
}
