/**
 * The ElevenLabs dialect's `character_count` (D36) across two months: `GET /elevenlabs/v1/user/subscription`
 * (and `GET /elevenlabs/v1/user`'s subscription) counts the characters billed in the current UTC calendar
 * month only: a record of the month before is left out, one at the month's first millisecond is in,
 * test-mode records (D32) never count. The query is billing's (usage-report.ts `charactersBilledInMonth`),
 * also pinned here for the month before and the month after.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ElevenLabsClient } from "@elevenlabs/elevenlabs-js";
import { charactersBilledInMonth, utcMonthOf } from "../../src/billing/usage-report.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

test("utcMonthOf: the UTC calendar month of an instant, year ends and leap Februaries included", () => {
  assert.deepEqual(utcMonthOf(Date.UTC(2025, 0, 31, 23, 59, 59, 999)), { from: Date.UTC(2025, 0, 1), to: Date.UTC(2025, 1, 1) });
  assert.deepEqual(utcMonthOf(Date.UTC(2024, 1, 29, 12)), { from: Date.UTC(2024, 1, 1), to: Date.UTC(2024, 2, 1) });
  assert.deepEqual(utcMonthOf(Date.UTC(2025, 11, 31, 23, 59, 59, 999)), { from: Date.UTC(2025, 11, 1), to: Date.UTC(2026, 0, 1) });
  assert.deepEqual(utcMonthOf(Date.UTC(2026, 0, 1)), { from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 1, 1) });
});

for (const backend of BACKENDS) describe(`ElevenLabs dialect character_count across two months (D36), ${backend.name}`, { skip: backend.skip }, () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  let el: ElevenLabsClient;

  /** Speaks `text` through the SDK with `client`; returns the call's request id (its usage record's id). */
  async function speak(client: ElevenLabsClient, text: string): Promise<string> {
    const { data, rawResponse } = await client.textToSpeech.convert(DEMO_ALPHA_VOICE_ID, { text }).withRawResponse();
    assert.ok((await new Response(data).arrayBuffer()).byteLength > 0);
    assert.equal(rawResponse.headers.get("character-cost"), String(text.length));
    const id = rawResponse.headers.get("request-id");
    assert.ok(id);
    return id;
  }
  async function moveRecord(id: string, createdAt: number): Promise<void> {
    const r = await gw.services.db.kysely.updateTable("usage_records").set({ created_at: createdAt }).where("id", "=", id).executeTakeFirst();
    assert.equal(Number(r.numUpdatedRows), 1);
  }

  before(async () => {
    gw = await startGateway(backend.name);
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
    el = new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: user.api_key });
  });
  after(async () => {
    await gw?.close();
  });

  test("only this month's live characters count; last month's and test-mode ones do not", async () => {
    assert.equal((await el.user.subscription.get()).characterCount, 0, "a fresh account");

    const lastMonth = "Spoken last month.";
    const thisMonth = "Spoken this month, a little longer.";
    const firstMs = "At the first millisecond.";
    const ids = { lastMonth: await speak(el, lastMonth), thisMonth: await speak(el, thisMonth), firstMs: await speak(el, firstMs) };
    const testKey = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { mode: "test" } });
    assert.equal(testKey.status, 201);
    await speak(new ElevenLabsClient({ baseUrl: `${gw.url}/elevenlabs`, apiKey: testKey.json.api_key as string }), "Test mode: never counted.");
    assert.equal((await el.user.subscription.get()).characterCount, lastMonth.length + thisMonth.length + firstMs.length, "all three live calls, now");

    const now = Date.now();
    const month = utcMonthOf(now);
    await moveRecord(ids.lastMonth, month.from - 1);
    await moveRecord(ids.firstMs, month.from);

    const expected = thisMonth.length + firstMs.length;
    const sub = await el.user.subscription.get();
    assert.equal(sub.characterCount, expected);
    assert.equal((await el.user.get()).subscription.characterCount, expected);
    const raw = await fetch(`${gw.url}/elevenlabs/v1/user/subscription`, { headers: { "xi-api-key": user.api_key } });
    assert.equal(((await raw.json()) as { character_count: number }).character_count, expected);

    // The service, month by month: the month before holds the moved record only; the next one nothing yet.
    const db = gw.services.db.kysely;
    assert.equal(await charactersBilledInMonth(db, user.org_id, now), expected);
    assert.equal(await charactersBilledInMonth(db, user.org_id, month.from - 1), lastMonth.length);
    assert.equal(await charactersBilledInMonth(db, user.org_id, month.to), 0);
    // A record dated in the next month belongs to it, not to this one.
    await moveRecord(ids.thisMonth, month.to);
    assert.equal(await charactersBilledInMonth(db, user.org_id, month.to), thisMonth.length);
    assert.equal((await el.user.subscription.get()).characterCount, firstMs.length);
    // Another account's records never count.
    const other = await gw.register();
    assert.equal(await charactersBilledInMonth(db, other.org_id, now), 0);
  });
});
