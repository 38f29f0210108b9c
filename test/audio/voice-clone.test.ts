/**
 * Voice cloning over real HTTP with real files (spec "POST /v1/audio/voice-clone"; D5, D20): every error
 * row, the flat 2.10, headers, and nothing charged before a success.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { corruptAudio, makeMp3, makeMp3HeaderClaiming, makeWav, pngBytes } from "../helpers/audio-fixtures.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("voice cloning", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  async function clone(token: string, file: Uint8Array | null, fields: Record<string, string> = {}, filename = "ref.wav", headers: Record<string, string> = {}) {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    if (file) form.set("file", new Blob([Buffer.from(file)]), filename);
    const res = await fetch(`${gw.url}/v1/audio/voice-clone`, { method: "POST", headers: { authorization: `Bearer ${token}`, ...headers }, body: form });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : null };
  }
  function assertError(res: { status: number; json: { error?: Record<string, unknown> } }, status: number, code: string) {
    assert.equal(res.status, status, JSON.stringify(res.json));
    assert.equal(res.json?.error?.code, code, JSON.stringify(res.json));
  }
  async function richUser() {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    return u;
  }
  async function balance(userId: string) {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, userId);
    assert.equal(b, await ledgerSum(db, userId));
    return b;
  }

  test("a 12 s WAV clones for 2.10; the voice speaks for its owner only", async () => {
    const u = await richUser();
    const r = await clone(u.api_key, makeWav(12), { name: "Me" });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.match(r.json.voice_id, /^svc_/);
    assert.equal(r.json.name, "Me");
    assert.equal(r.json.cost_usd, 2.1);
    assert.equal(r.json.balance_usd, 8.4);
    assert.equal(r.headers.get("x-svc-model"), "beta-voice-clone");
    assert.equal(r.headers.get("x-svc-cost-usd"), "2.1");
    assert.equal(r.headers.get("x-svc-balance-usd"), "8.4");
    assert.equal(await balance(u.org_id), 8_400_000);
    const speak = (token: string) =>
      gw.request("POST", "/v1/audio/speech", { token, body: { model: "beta-speech-turbo", input: "cloned", voice_id: r.json.voice_id } });
    assert.equal((await speak(u.api_key)).status, 200);
    const other = await gw.register();
    const denied = await speak(other.api_key);
    assert.equal(denied.status, 403);
    assert.equal(denied.json.error.code, "voice_not_owned");
  });

  test("MP3 references, exactly 10 s, and name null when absent", async () => {
    const u = await richUser();
    const mp3 = await clone(u.api_key, makeMp3(12), {}, "ref.mp3");
    assert.equal(mp3.status, 200, JSON.stringify(mp3.json));
    assert.equal(mp3.json.name, null);
    assert.equal((await clone(u.api_key, makeWav(10))).status, 200);
  });

  test("error rows: short, long, unreadable, not audio, missing file, bad model, long name; nothing charged", async () => {
    const u = await richUser();
    assertError(await clone(u.api_key, makeWav(5)), 400, "reference_too_short");
    assertError(await clone(u.api_key, makeMp3HeaderClaiming(360), {}, "long.mp3"), 400, "reference_too_long");
    assertError(await clone(u.api_key, corruptAudio()), 400, "audio_unreadable");
    const png = await clone(u.api_key, pngBytes(), {}, "fake.mp3");
    assertError(png, 415, "invalid_request");
    assertError(await clone(u.api_key, null, { name: "x" }), 400, "invalid_request");
    assertError(await clone(u.api_key, makeWav(12), { model: "beta-voice-design" }), 400, "not_a_voice_clone_model");
    assertError(await clone(u.api_key, makeWav(12), { name: "n".repeat(65) }), 400, "invalid_request");
    const notMultipart = await gw.request("POST", "/v1/audio/voice-clone", { token: u.api_key, body: { file: "x" } });
    assertError(notMultipart, 400, "invalid_request");
    assert.equal(await balance(u.org_id), 10_500_000);
  });

  test("a file over 10 MB: 413, nothing charged", async () => {
    const u = await richUser();
    const big = new Uint8Array(10 * 1024 * 1024 + 1);
    big.set(makeWav(12));
    assertError(await clone(u.api_key, big), 413, "invalid_request");
    assert.equal(await balance(u.org_id), 10_500_000);
  });

  test("balance below 2.10: 402 insufficient_credits", async () => {
    const u = await gw.register();
    assertError(await clone(u.api_key, makeWav(12)), 402, "insufficient_credits");
    assert.equal(await balance(u.org_id), 500_000);
  });

  test("upstream failure 502 and ownership failure 500: not charged", async () => {
    const u = await richUser();
    assertError(await clone(u.api_key, makeWav(12), {}, "ref.wav", { "x-svc-simulate": "fail" }), 502, "provider_error");
    const db = gw.services.db.kysely;
    await sql`create trigger fail_voice before insert on voices begin select raise(abort, 'injected failure'); end`.execute(db);
    try {
      assertError(await clone(u.api_key, makeWav(12)), 500, "ownership_write_failed");
    } finally {
      await sql`drop trigger fail_voice`.execute(db);
    }
    assert.equal(await balance(u.org_id), 10_500_000);
  });
});
