/**
 * `POST /v1/audio/speech` over real HTTP: every row of the spec's error table, the per-model prices,
 * headers, aliases, formats, streaming, and that nothing is charged on a 4xx or an upstream failure.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const ALPHA = DEMO_ALPHA_VOICE_ID;
const BETA = DEMO_BETA_VOICE_ID;

function assertError(
  res: { status: number; json: { error?: Record<string, unknown> } },
  status: number,
  code: string,
) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json?.error?.code, code, JSON.stringify(res.json));
}

describe("speech", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  async function balanceOf(userId: string): Promise<number> {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, userId);
    assert.equal(b, await ledgerSum(db, userId));
    return b ?? -1;
  }

  test("default model, alpha voice: playable MP3 at 44.1 kHz / 128 kbps with the X-Svc headers", async () => {
    const u = await gw.register();
    const input = "Hello from the gateway. This is a test of speech.";
    // Through the typed client (the audio bytes as an ArrayBuffer).
    const { data, response: r } = await gw.client(u.api_key).POST("/v1/audio/speech", {
      body: { input, voice_id: ALPHA },
      parseAs: "arrayBuffer",
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "audio/mpeg");
    assert.equal(r.headers.get("x-svc-model"), "alpha-multilingual-v2");
    assert.equal(r.headers.get("x-svc-chars-billed"), String(input.length));
    // 49 chars x 0.405 / 1000 = 0.019845
    assert.equal(r.headers.get("x-svc-cost-usd"), "0.019845");
    assert.equal(r.headers.get("x-svc-balance-usd"), "0.480155");
    const meta = await parseBuffer(new Uint8Array(data ?? new ArrayBuffer(0)), { mimeType: "audio/mpeg" });
    assert.equal(meta.format.sampleRate, 44100);
    assert.equal(meta.format.bitrate, 128000);
    assert.ok((meta.format.duration ?? 0) > 2, `duration ${meta.format.duration}`);
    assert.equal(await balanceOf(u.org_id), 480_155);
  });

  test("aliases text and voice; audio length follows the text", async () => {
    const u = await gw.register();
    const short = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      body: { text: "Hi there.", voice: ALPHA },
    });
    const long = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      body: { text: "Hi there. ".repeat(20), voice: ALPHA },
    });
    assert.equal(short.status, 200);
    assert.equal(long.status, 200);
    const d1 = (await parseBuffer(short.bytes, { mimeType: "audio/mpeg" })).format.duration ?? 0;
    const d2 = (await parseBuffer(long.bytes, { mimeType: "audio/mpeg" })).format.duration ?? 0;
    assert.ok(d2 > d1 * 5, `${d1} vs ${d2}`);
  });

  test("per-model prices per 1000 characters", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    const input = "a".repeat(1000);
    const cases: [string, string, string][] = [
      ["alpha-v3", ALPHA, "0.405"],
      ["alpha-multilingual-v2", ALPHA, "0.405"],
      ["alpha-flash-v2-5", ALPHA, "0.2"],
      ["alpha-turbo-v2-5", ALPHA, "0.2"],
      ["beta-speech-hd", BETA, "0.14"],
      ["beta-speech-turbo", BETA, "0.09"],
    ];
    let expected = 10_500_000;
    for (const [model, voice_id, cost] of cases) {
      const r = await gw.request("POST", "/v1/audio/speech", {
        token: u.api_key,
        body: { model, input, voice_id, response_format: "pcm_16000" },
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.headers.get("x-svc-model"), model);
      assert.equal(r.headers.get("x-svc-chars-billed"), "1000");
      assert.equal(r.headers.get("x-svc-cost-usd"), cost);
      expected -= Math.round(Number(cost) * 1e6);
      assert.equal(await balanceOf(u.org_id), expected);
    }
  });

  test("characters are code points after NFC; the price rounds half-up to the micro-dollar", async () => {
    const u = await gw.register();
    // "e" + combining acute = one code point after NFC; an emoji is one code point.
    const input = "Cafe\u0301 \u{1F600}!";
    const r = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      body: { input, voice_id: BETA, model: "beta-speech-turbo" },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-svc-chars-billed"), "7");
    assert.equal(r.headers.get("x-svc-cost-usd"), "0.00063");
  });

  test("every response_format answers its content type and size", async () => {
    const u = await gw.register();
    const input = "Format check, one two three.";
    const expect: Record<string, string> = {
      mp3_44100_128: "audio/mpeg",
      mp3_44100_192: "audio/mpeg",
      mp3_22050_32: "audio/mpeg",
      pcm_16000: "audio/pcm",
      pcm_22050: "audio/pcm",
      pcm_24000: "audio/pcm",
      pcm_44100: "audio/pcm",
      ulaw_8000: "audio/basic",
    };
    for (const [format, type] of Object.entries(expect)) {
      const r = await gw.request("POST", "/v1/audio/speech", {
        token: u.api_key,
        body: { input, voice_id: ALPHA, response_format: format },
      });
      assert.equal(r.status, 200, format);
      assert.equal(r.headers.get("content-type"), type, format);
      assert.ok(r.bytes.length > 1000, format);
      if (format.startsWith("mp3_")) {
        const [, rate, kbps] = format.split("_");
        const meta = await parseBuffer(r.bytes, { mimeType: "audio/mpeg" });
        assert.equal(meta.format.sampleRate, Number(rate), format);
        assert.equal(meta.format.bitrate, Number(kbps) * 1000, format);
      } else if (format.startsWith("pcm_")) {
        const rate = Number(format.split("_")[1]);
        assert.equal(r.bytes.length % 2, 0);
        const seconds = r.bytes.length / 2 / rate;
        assert.ok(seconds > 1 && seconds < 4, `${format}: ${seconds}s`);
      } else {
        const seconds = r.bytes.length / 8000;
        assert.ok(seconds > 1 && seconds < 4, `ulaw: ${seconds}s`);
      }
    }
  });

  test("stream: true on a beta model delivers a chunked, complete MP3; ignored by alpha models", async () => {
    const u = await gw.register();
    const input = "Streaming speech arrives progressively. ".repeat(5);
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ input, voice_id: BETA, model: "beta-speech-hd", stream: true }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "audio/mpeg");
    assert.equal(res.headers.get("transfer-encoding"), "chunked");
    assert.ok(res.headers.get("x-svc-cost-usd"));
    let chunks = 0;
    const parts: Uint8Array[] = [];
    for await (const chunk of res.body!) {
      chunks++;
      parts.push(chunk);
    }
    assert.ok(chunks > 1, `chunks ${chunks}`);
    const meta = await parseBuffer(Buffer.concat(parts), { mimeType: "audio/mpeg" });
    assert.ok((meta.format.duration ?? 0) > 5);

    const alpha = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      body: { input: "short", voice_id: ALPHA, stream: true },
    });
    assert.equal(alpha.status, 200);
    assert.ok(alpha.headers.get("content-length"));
  });

  test("error table: not_a_tts_model, voice_required, input_too_long, invalid_request", async () => {
    const u = await gw.register();
    const speak = (body: unknown) => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body });
    assertError(await speak({ model: "alpha-music", input: "x", voice_id: ALPHA }), 400, "not_a_tts_model");
    assertError(await speak({ model: "nope", input: "x", voice_id: ALPHA }), 400, "not_a_tts_model");
    assertError(await speak({ input: "x" }), 400, "voice_required");
    assertError(await speak({ input: "x", voice_id: "" }), 400, "voice_required");
    const tooLong = await speak({ input: "a".repeat(5001), voice_id: ALPHA });
    assertError(tooLong, 400, "input_too_long");
    assert.equal(tooLong.json.error.param, "input");
    assert.match(tooLong.json.error.message, /5001/);
    assertError(await speak({ voice_id: ALPHA }), 400, "invalid_request");
    assertError(await speak({ input: "", voice_id: ALPHA }), 400, "invalid_request");
    assertError(await speak("{oops"), 400, "invalid_request");
    assertError(await speak([1, 2]), 400, "invalid_request");
    assertError(await speak({ input: 5, voice_id: ALPHA }), 400, "invalid_request");
    assertError(await speak({ input: "x", voice_id: ALPHA, response_format: "wav" }), 400, "invalid_request");
    assertError(
      await speak({ input: "x", voice_id: ALPHA, voice_settings: { stability: 2 } }),
      400,
      "invalid_request",
    );
    assertError(await speak({ input: "x", voice_id: ALPHA, voice_settings: "calm" }), 400, "invalid_request");
    assertError(await speak({ input: "x", voice_id: ALPHA, stream: "yes" }), 400, "invalid_request");
    const body = (await speak({ model: "nope", input: "x", voice_id: ALPHA })).json;
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(await balanceOf(u.org_id), 500_000, "no 4xx charges anything");
  });

  test("exactly 5000 characters is accepted", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      body: {
        input: "a".repeat(5000),
        voice_id: BETA,
        model: "beta-speech-turbo",
        response_format: "ulaw_8000",
      },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-svc-cost-usd"), "0.45");
  });

  test("voice and model compatibility (D20)", async () => {
    const u = await gw.register();
    const speak = (body: unknown) => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body });
    assertError(
      await speak({ model: "beta-speech-hd", input: "x", voice_id: ALPHA }),
      400,
      "voice_model_mismatch",
    );
    assertError(await speak({ model: "alpha-v3", input: "x", voice_id: BETA }), 400, "voice_model_mismatch");
    // Any id that is not an alpha library voice and not owned is a beta system voice.
    assert.equal(
      (await speak({ model: "beta-speech-turbo", input: "x", voice_id: "some-unknown-voice" })).status,
      200,
    );
  });

  test("an owned voice works only for its owner and only with beta models", async () => {
    const owner = await gw.register();
    const other = await gw.register();
    await gw.services.db.kysely
      .insertInto("voices")
      .values({
        id: "svc_testvoice1",
        account_id: owner.org_id,
        name: "mine",
        source: "design",
        created_at: Date.now(),
      })
      .execute();
    const ok = await gw.request("POST", "/v1/audio/speech", {
      token: owner.api_key,
      body: { model: "beta-speech-hd", input: "mine", voice_id: "svc_testvoice1" },
    });
    assert.equal(ok.status, 200);
    const denied = await gw.request("POST", "/v1/audio/speech", {
      token: other.api_key,
      body: { model: "beta-speech-hd", input: "mine", voice_id: "svc_testvoice1" },
    });
    assertError(denied, 403, "voice_not_owned");
    assert.equal(denied.json.error.type, "permission_error");
    assertError(
      await gw.request("POST", "/v1/audio/speech", {
        token: owner.api_key,
        body: { model: "alpha-v3", input: "mine", voice_id: "svc_testvoice1" },
      }),
      400,
      "voice_model_mismatch",
    );
    assert.equal(await balanceOf(other.org_id), 500_000);
  });

  test("balance too low: 402 billing_error, nothing charged", async () => {
    const u = await gw.register();
    const r = await gw.request("POST", "/v1/audio/speech", {
      token: u.api_key,
      body: { model: "alpha-v3", input: "a".repeat(5000), voice_id: ALPHA },
    });
    assertError(r, 402, "billing_error");
    assert.equal(r.json.error.type, "billing_error");
    assert.equal(await balanceOf(u.org_id), 500_000);
  });

  test("upstream failure: 502 provider_error and the hold comes back", async () => {
    const u = await gw.register();
    for (const stream of [false, true]) {
      const r = await gw.request("POST", "/v1/audio/speech", {
        token: u.api_key,
        headers: { "x-svc-simulate": "fail" },
        body: { model: "beta-speech-hd", input: "this will fail", voice_id: BETA, stream },
      });
      assertError(r, 502, "provider_error");
      assert.equal(r.json.error.type, "provider_error");
    }
    assert.equal(await balanceOf(u.org_id), 500_000);
    const ledger = await gw.request("GET", "/v1/billing/ledger", { token: u.api_key });
    assert.deepEqual(
      ledger.json.data.map((e: { kind: string }) => e.kind),
      ["hold_release", "hold", "hold_release", "hold", "signup_credit"],
    );
    assert.equal(ledger.json.data[0].balance_usd, 0.5);
  });

  test("unknown routes 404, wrong methods 405, oversized bodies 413", async () => {
    const u = await gw.register();
    assertError(await gw.request("GET", "/v1/nothing-here", { token: u.api_key }), 404, "not_found");
    assertError(await gw.request("GET", "/v1/audio/speech", { token: u.api_key }), 405, "method_not_allowed");
    assertError(await gw.request("DELETE", "/v1/pricing"), 405, "method_not_allowed");
    const big = JSON.stringify({ input: "a".repeat(26 * 1024 * 1024), voice_id: ALPHA });
    assertError(
      await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: big }),
      413,
      "invalid_request",
    );
    assert.equal(await balanceOf(u.org_id), 500_000);
  });
});

for (const backend of BACKENDS) {
  describe(`speech money on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

    test("30 parallel requests on a balance covering 5: 5 answered, 25 refused with 402, no overdraft", async () => {
      const u = await gw.register();
      // The point is money, not tier limits: lift the window and pool caps for this account (D22).
      await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, {
        token: ADMIN_TOKEN,
        body: { rpm: 1000, per_model_rpm: 1000, audio_concurrent_per_provider: { alpha: 100 } },
      });
      // alpha-flash-v2-5: 500 characters x 0.20 / 1000 = 0.10; 0.50 covers five.
      const body = {
        model: "alpha-flash-v2-5",
        input: "b".repeat(500),
        voice_id: ALPHA,
        response_format: "pcm_16000",
      };
      const results = await Promise.all(
        Array.from({ length: 30 }, () => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body })),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.equal(statuses.filter((s) => s === 200).length, 5, statuses.join(","));
      assert.equal(statuses.filter((s) => s === 402).length, 25);
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), 0);
      assert.equal(await ledgerSum(db, u.org_id), 0);
    });

    test("failure after the hold restores the balance exactly", async () => {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/audio/speech", {
        token: u.api_key,
        headers: { "x-svc-simulate": "fail" },
        body: { input: "x".repeat(100), voice_id: ALPHA },
      });
      assert.equal(r.status, 502);
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), 500_000);
      assert.equal(await ledgerSum(db, u.org_id), 500_000);
    });
  });
}
