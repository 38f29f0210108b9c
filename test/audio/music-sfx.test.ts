/**
 * Music and sound effects over real HTTP (spec "POST /v1/audio/music", "POST /v1/audio/sfx"; D2, D7,
 * D16): every error row, exact prices, headers, `save_to_blob` with permanent Range-served URLs, the
 * gallery and share pages, and no charge on any 4xx or upstream failure.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

function assertError(res: { status: number; json: { error?: Record<string, unknown> } }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json?.error?.code, code, JSON.stringify(res.json));
}

describe("music and sound effects", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  async function richUser(usd = 100) {
    const u = await gw.register();
    await gw.deposit(u.user_id, usd);
    return u;
  }
  async function balance(userId: string) {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, userId);
    assert.equal(b, await ledgerSum(db, userId));
    return b ?? -1;
  }

  test("alpha-music: 0.135 per second of requested length, bytes with X-Svc headers", async () => {
    const u = await richUser();
    // Through the typed client (the audio bytes as an ArrayBuffer).
    const { data, response: r } = await gw.client(u.api_key).POST("/v1/audio/music", {
      body: { prompt: "calm piano", music_length_ms: 4000 },
      parseAs: "arrayBuffer",
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "audio/mpeg");
    assert.equal(r.headers.get("x-svc-model"), "alpha-music");
    assert.equal(r.headers.get("x-svc-duration-sec"), "4");
    assert.equal(r.headers.get("x-svc-cost-usd"), "0.54");
    const meta = await parseBuffer(new Uint8Array(data ?? new ArrayBuffer(0)), { mimeType: "audio/mpeg" });
    assert.ok(Math.abs((meta.format.duration ?? 0) - 4) < 0.2, String(meta.format.duration));
    assert.equal(await balance(u.org_id), 100_500_000 - 540_000);
  });

  test("duration_ms alias; default 30 s; 1000 and 300000 accepted, outside refused", async () => {
    const u = await richUser();
    const music = (body: unknown) => gw.request("POST", "/v1/audio/music", { token: u.api_key, body });
    const alias = await music({ prompt: "drums", duration_ms: 1500, response_format: "pcm_16000" });
    assert.equal(alias.status, 200);
    assert.equal(alias.headers.get("x-svc-cost-usd"), "0.2025");
    const def = await music({ prompt: "drums", response_format: "ulaw_8000" });
    assert.equal(def.headers.get("x-svc-duration-sec"), "30");
    assert.equal(def.headers.get("x-svc-cost-usd"), "4.05");
    assert.equal((await music({ prompt: "x", music_length_ms: 1000, response_format: "ulaw_8000" })).status, 200);
    for (const v of [999, 300001, 0, -5, 1500.5]) {
      const r = await music({ prompt: "x", music_length_ms: v });
      assertError(r, 400, "invalid_duration");
      assert.equal(r.json.error.param, "music_length_ms");
    }
    assertError(await music({ prompt: "x", music_length_ms: "3000" }), 400, "invalid_request");
  });

  test("beta models: flat 0.045 and 0.21 per song, length from the lyrics", async () => {
    const u = await richUser();
    const short = await gw.request("POST", "/v1/audio/music", {
      token: u.api_key,
      body: { model: "beta-music", prompt: "pop", lyrics: "[verse]\nla la la\n", music_length_ms: 300000 },
    });
    assert.equal(short.status, 200, JSON.stringify(short.json));
    assert.equal(short.headers.get("x-svc-cost-usd"), "0.045");
    const long = await gw.request("POST", "/v1/audio/music", {
      token: u.api_key,
      body: { model: "beta-music-pro", prompt: "pop", lyrics: "[verse]\none line\nanother line\n[chorus]\nsing it\nsing it loud\n[verse]\nmore words here\nand here\n[bridge]\nquiet now\n[chorus]\nsing it\nsing it loud" },
    });
    assert.equal(long.status, 200);
    assert.equal(long.headers.get("x-svc-cost-usd"), "0.21");
    assert.ok(Number(long.headers.get("x-svc-duration-sec")) > Number(short.headers.get("x-svc-duration-sec")));
    const inst = await gw.request("POST", "/v1/audio/music", { token: u.api_key, body: { model: "beta-music", prompt: "lofi", lyrics: "[Instrumental]" } });
    assert.equal(inst.status, 200);
    assert.equal(await balance(u.org_id), 100_500_000 - 45_000 - 210_000 - 45_000);
  });

  test("music limits count visible characters after NFC, with model, field and counts in the message", async () => {
    const u = await richUser();
    const music = (body: unknown) => gw.request("POST", "/v1/audio/music", { token: u.api_key, body });
    // 200 family emoji (one grapheme each, many code points) fit the beta prompt limit of 200.
    const family = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}";
    assert.equal((await music({ model: "beta-music", prompt: family.repeat(200) })).status, 200);
    const over = await music({ model: "beta-music", prompt: "e\u0301".repeat(201) });
    assertError(over, 400, "prompt_too_long");
    assert.equal(over.json.error.param, "prompt");
    assert.match(over.json.error.message, /beta-music/);
    assert.match(over.json.error.message, /201/);
    assert.match(over.json.error.message, /200/);
    const lyrics = await music({ model: "beta-music-pro", prompt: "x", lyrics: "l".repeat(601) });
    assertError(lyrics, 400, "lyrics_too_long");
    assert.equal(lyrics.json.error.param, "lyrics");
    assert.match(lyrics.json.error.message, /beta-music-pro.*601.*600|601.*600.*beta-music-pro|lyrics/);
    assertError(await music({ prompt: "p".repeat(2001) }), 400, "prompt_too_long");
    assert.equal((await music({ prompt: "p".repeat(2000), music_length_ms: 1000, lyrics: "ignored ".repeat(500) })).status, 200);
  });

  test("music error table: not_a_music_model, missing prompt, bad JSON, low balance, upstream failure", async () => {
    const u = await gw.register();
    const music = (body: unknown, headers?: Record<string, string>) => gw.request("POST", "/v1/audio/music", { token: u.api_key, body, headers });
    assertError(await music({ model: "alpha-v3", prompt: "x" }), 400, "not_a_music_model");
    assertError(await music({ model: "nope", prompt: "x" }), 400, "not_a_music_model");
    assertError(await music({}), 400, "invalid_request");
    assertError(await music({ model: "beta-music" }), 400, "invalid_request");
    assertError(await music("{"), 400, "invalid_request");
    assertError(await music({ prompt: "x", response_format: "ogg" }), 400, "invalid_request");
    // 30 s of alpha-music is 4.05 > 0.50.
    assertError(await music({ prompt: "x" }), 402, "billing_error");
    assertError(await music({ model: "beta-music", prompt: "x" }, { "x-svc-simulate": "fail" }), 502, "provider_error");
    assertError(await gw.request("POST", "/v1/audio/music", { body: { prompt: "x" } }), 401, "auth_error");
    assert.equal(await balance(u.org_id), 500_000);
  });

  test("sfx: flat 0.027, text alias, durations 0.5 to 22, prompt_influence", async () => {
    const u = await richUser();
    const sfx = (body: unknown) => gw.request("POST", "/v1/audio/sfx", { token: u.api_key, body });
    const r = await sfx({ prompt: "rain on a tin roof", duration_seconds: 2 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.headers.get("x-svc-model"), "alpha-sfx");
    assert.equal(r.headers.get("x-svc-cost-usd"), "0.027");
    const meta = await parseBuffer(r.bytes, { mimeType: "audio/mpeg" });
    assert.ok(Math.abs((meta.format.duration ?? 0) - 2) < 0.2);
    assert.equal((await sfx({ text: "door slam", duration_seconds: 0.5, prompt_influence: 1 })).status, 200);
    assert.equal((await sfx({ text: "wind", duration_seconds: 22, response_format: "ulaw_8000" })).status, 200);
    assert.equal((await sfx({ prompt: "beep" })).status, 200);
    assert.equal(await balance(u.org_id), 100_500_000 - 4 * 27_000);
  });

  test("sfx error table", async () => {
    const u = await gw.register();
    const sfx = (body: unknown, headers?: Record<string, string>) => gw.request("POST", "/v1/audio/sfx", { token: u.api_key, body, headers });
    assertError(await sfx({ model: "alpha-music", prompt: "x" }), 400, "not_an_sfx_model");
    const long = await sfx({ prompt: "p".repeat(501) });
    assertError(long, 400, "prompt_too_long");
    assert.equal(long.json.error.param, "prompt");
    for (const d of [0.49, 22.01, -1]) assertError(await sfx({ prompt: "x", duration_seconds: d }), 400, "invalid_duration");
    assertError(await sfx({ prompt: "x", prompt_influence: 1.5 }), 400, "invalid_request");
    assertError(await sfx({}), 400, "invalid_request");
    assertError(await sfx({ prompt: "x" }, { "x-svc-simulate": "fail" }), 502, "provider_error");
    assert.equal(await balance(u.org_id), 500_000);
    const poor = await gw.register();
    await gw.request("POST", "/v1/audio/speech", {
      token: poor.api_key,
      body: { model: "alpha-v3", input: "a".repeat(1200), voice_id: "pNx4Lq8TzR2vWk7HdM3s", response_format: "ulaw_8000" },
    });
    // 0.50 - 0.486 = 0.014 < 0.027
    assertError(await gw.request("POST", "/v1/audio/sfx", { token: poor.api_key, body: { prompt: "x" } }), 402, "billing_error");
  });

  test("save_to_blob: JSON form, permanent URL with Range, gallery and share page", async () => {
    const u = await richUser();
    const r = await gw.request("POST", "/v1/audio/music?save_to_blob=1", {
      token: u.api_key,
      body: { prompt: "uplifting strings", music_length_ms: 3000, response_format: "pcm_16000" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const j = r.json;
    assert.equal(j.object, "audio.generation");
    assert.match(j.job_id, /^job_/);
    assert.equal(j.kind, "audio");
    assert.equal(j.model, "alpha-music");
    assert.equal(j.duration_sec, 3);
    assert.equal(j.cost_usd, 0.405);
    assert.equal(j.balance_usd, 100.095);
    assert.ok(j.url.startsWith(gw.url) || j.url.includes("/v1/files/"));
    const path = new URL(j.url).pathname;

    const full = await gw.request("GET", path);
    assert.equal(full.status, 200);
    assert.equal(full.headers.get("content-type"), "audio/mpeg");
    assert.equal(full.headers.get("accept-ranges"), "bytes");
    assert.equal(Number(full.headers.get("content-length")), full.bytes.length);
    const meta = await parseBuffer(full.bytes, { mimeType: "audio/mpeg" });
    assert.ok(Math.abs((meta.format.duration ?? 0) - 3) < 0.2);

    const part = await gw.request("GET", path, { headers: { range: "bytes=100-199" } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get("content-range"), `bytes 100-199/${full.bytes.length}`);
    assert.deepEqual(part.bytes, full.bytes.subarray(100, 200));
    const tail = await gw.request("GET", path, { headers: { range: "bytes=-10" } });
    assert.deepEqual(tail.bytes, full.bytes.subarray(full.bytes.length - 10));
    assert.equal((await gw.request("GET", path, { headers: { range: `bytes=${full.bytes.length + 5}-` } })).status, 416);

    const sfx = await gw.request("POST", "/v1/audio/sfx?save_to_blob=1", { token: u.api_key, body: { prompt: "thunder", duration_seconds: 1 } });
    assert.equal(sfx.json.model, "alpha-sfx");
    assert.equal(sfx.json.cost_usd, 0.027);

    const gallery = await gw.request("GET", "/v1/gallery", { token: u.api_key });
    assert.equal(gallery.status, 200);
    assert.deepEqual(gallery.json.data.map((i: { job_id: string }) => i.job_id), [sfx.json.job_id, j.job_id]);
    assert.equal(gallery.json.data[1].url, j.url);
    const other = await gw.register();
    assert.deepEqual((await gw.request("GET", "/v1/gallery", { token: other.api_key })).json.data, []);

    const share = await gw.request("GET", `/share/${j.job_id}`);
    assert.equal(share.status, 200);
    assert.match(share.headers.get("content-type") ?? "", /text\/html/);
    const html = Buffer.from(share.bytes).toString("utf8");
    assert.match(html, /<audio controls/);
    assert.ok(html.includes(j.url));
    assertError(await gw.request("GET", "/share/job_doesnotexist"), 404, "job_not_found");
    assertError(await gw.request("GET", "/v1/files/audio/job_doesnotexist.mp3"), 404, "not_found");

    const ledger = await gw.request("GET", "/v1/billing/ledger?limit=3", { token: u.api_key });
    assert.equal(ledger.json.data[0].job_id, sfx.json.job_id);
    assert.equal(await balance(u.org_id), 100_500_000 - 405_000 - 27_000);
  });

  test("save_to_blob with an upstream failure stores nothing and charges nothing", async () => {
    const u = await richUser();
    const r = await gw.request("POST", "/v1/audio/sfx?save_to_blob=1", {
      token: u.api_key,
      headers: { "x-svc-simulate": "fail" },
      body: { prompt: "x" },
    });
    assertError(r, 502, "provider_error");
    assert.deepEqual((await gw.request("GET", "/v1/gallery", { token: u.api_key })).json.data, []);
    assert.equal(await balance(u.org_id), 100_500_000);
    assertError(await gw.request("POST", "/v1/audio/sfx?save_to_blob=yes", { token: u.api_key, body: { prompt: "x" } }), 400, "invalid_request");
  });
});
