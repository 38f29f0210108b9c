/**
 * Transcription and audio understanding (D23): uploads and `audio_url`, the duration read from the
 * audio, billing per started minute with a one-minute minimum, the OpenAI SDK's transcription call,
 * errors charging nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { toFile } from "openai";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { makeMp3, makeWav, pngBytes } from "../helpers/audio-fixtures.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("transcription and audio understanding", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
    await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
  });
  after(async () => {
    await gw?.close();
  });

  async function upload(path: string, file: Uint8Array | null, fields: Record<string, string> = {}, name = "a.wav") {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    if (file) form.set("file", new Blob([Buffer.from(file)]), name);
    const res = await fetch(gw.url + path, { method: "POST", headers: { authorization: `Bearer ${user.api_key}` }, body: form });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
    const json: any = await res.json();
    return { status: res.status, headers: res.headers, json };
  }
  async function balance() {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, user.org_id);
    assert.equal(b, await ledgerSum(db, user.org_id));
    return b ?? -1;
  }

  test("openai SDK audio.transcriptions.create: text, billed one minute minimum at 0.0009", async () => {
    const client = new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const before = await balance();
    const r = await client.audio.transcriptions.create({ file: await toFile(Buffer.from(makeWav(12)), "speech.wav"), model: "transcribe" });
    assert.equal(typeof r.text, "string");
    assert.ok(r.text.length > 10);
    assert.equal(await balance(), before - 900);
  });

  test("per started minute: 61 s costs two minutes; the duration header comes from the audio", async () => {
    const before = await balance();
    const r = await upload("/v1/audio/transcriptions", makeWav(61, 8000));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.headers.get("x-svc-duration-sec"), "61");
    assert.equal(r.headers.get("x-svc-cost-usd"), "0.0018");
    assert.equal(r.headers.get("x-svc-model"), "host1-transcribe-1");
    assert.equal(await balance(), before - 1800);
    const mp3 = await upload("/v1/audio/transcriptions", makeMp3(3), {}, "a.mp3");
    assert.equal(mp3.status, 200);
  });

  test("audio understanding: {text, model, duration_sec} at 0.0006 per minute", async () => {
    const before = await balance();
    const r = await upload("/v1/audio/understand", makeWav(20), { prompt: "What do you hear?" });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.model, "host2-audio-understand-1");
    assert.equal(r.json.duration_sec, 20);
    assert.match(r.json.text, /What do you hear/);
    assert.equal(await balance(), before - 600);
  });

  test("errors charge nothing: no file, unreadable audio, bad model, private audio_url, missing prompt, upstream failure", async () => {
    const before = await balance();
    assert.equal((await upload("/v1/audio/transcriptions", null, { model: "transcribe" })).status, 400);
    const png = await upload("/v1/audio/transcriptions", pngBytes(), {}, "x.mp3");
    assert.equal(png.status, 400);
    assert.equal(png.json.error.code, "audio_unreadable");
    const model = await upload("/v1/audio/transcriptions", makeWav(2), { model: "alpha-v3" });
    assert.equal(model.json.error.code, "invalid_model");
    const url = await gw.request("POST", "/v1/audio/transcriptions", { token: user.api_key, body: { audio_url: "https://127.0.0.1/a.wav" } });
    assert.equal(url.status, 400);
    assert.equal(url.json.error.code, "invalid_audio_url");
    const plain = await gw.request("POST", "/v1/audio/transcriptions", { token: user.api_key, body: { audio_url: "http://example.com/a.wav" } });
    assert.equal(plain.json.error.code, "invalid_audio_url");
    assert.equal((await upload("/v1/audio/understand", makeWav(2))).status, 400);
    const form = new FormData();
    form.set("file", new Blob([Buffer.from(makeWav(2))]), "a.wav");
    const failed = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${user.api_key}`, "x-svc-simulate": "fail" }, body: form });
    assert.equal(failed.status, 502);
    assert.equal(await balance(), before);
  });
});
