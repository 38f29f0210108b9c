/**
 * The `Idempotency-Key` header on the native job submits (D37): honoured exactly like the body's
 * `idempotency_key` (one job, one hold, 200 on replay, 409 for another body), the body field winning when
 * both are given, and a bad header refused with nothing held.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("the Idempotency-Key header on the native job submits", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  const holdsOf = async (userId: string) =>
    (await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", userId).execute()).length;
  const jobsOf = async (userId: string) =>
    (await gw.services.db.kysely.selectFrom("jobs").select("id").where("account_id", "=", userId).execute()).length;

  test("an image submit retried with the same header makes one job and one hold; another body is 409", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    const body = { model: "imgA-v4", prompt: "a header key" };
    const headers = { "Idempotency-Key": "hdr-1" };
    const first = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body, headers });
    assert.equal(first.status, 202, JSON.stringify(first.json));
    assert.equal(first.json.idempotency_key, "hdr-1");
    const again = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body, headers });
    assert.equal(again.status, 200);
    assert.equal(again.json.id, first.json.id);
    // The same key in the body is the same request: a replay, not a conflict.
    const inBody = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { ...body, idempotency_key: "hdr-1" } });
    assert.equal(inBody.status, 200);
    assert.equal(inBody.json.id, first.json.id);
    const conflict = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { ...body, prompt: "another" }, headers });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.json.error.code, "idempotency_conflict");
    await gw.waitForJob(u.api_key, first.json.id);
    assert.equal(await jobsOf(u.org_id), 1);
    assert.equal(await holdsOf(u.org_id), 1);
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), 10_500_000 - 54_000);
    assert.equal(await ledgerSum(db, u.org_id), 10_500_000 - 54_000);
  });

  test("video and genmedia submits honour it too; the body's key wins over the header", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 20);
    const video = { model: "vidD-3-fast", prompt: "waves", duration: 2 };
    const a = await gw.request("POST", "/v1/videos/generations", { token: u.api_key, body: video, headers: { "Idempotency-Key": "v-1" } });
    assert.equal(a.status, 202, JSON.stringify(a.json));
    const b = await gw.request("POST", "/v1/genmedia/jobs", { token: u.api_key, body: video, headers: { "Idempotency-Key": "v-1" } });
    assert.equal(b.status, 200, "the same key and body on the alias replays the job");
    assert.equal(b.json.id, a.json.id);
    const bodyWins = await gw.request("POST", "/v1/videos/generations", { token: u.api_key, body: { ...video, idempotency_key: "v-2" }, headers: { "Idempotency-Key": "v-1" } });
    assert.equal(bodyWins.status, 202);
    assert.equal(bodyWins.json.idempotency_key, "v-2");
    for (const id of [a.json.id, bodyWins.json.id]) await gw.waitForJob(u.api_key, id);
    assert.equal(await jobsOf(u.org_id), 2);
    assert.equal(await holdsOf(u.org_id), 2);
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), 20_500_000 - 2 * 2 * 135_000);
    assert.equal(await ledgerSum(db, u.org_id), await getBalance(db, u.org_id));
  });

  test("an empty or too long header is 400 and holds nothing", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    for (const key of ["", "k".repeat(129)]) {
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "p" }, headers: { "Idempotency-Key": key } });
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error.code, "invalid_request");
      assert.match(r.json.error.message, /Idempotency-Key/);
    }
    assert.equal(await holdsOf(u.org_id), 0);
    assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 10_500_000);
  });
});
