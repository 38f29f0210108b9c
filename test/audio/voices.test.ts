/**
 * Voice design, ownership and the voice library over real HTTP (spec "POST /v1/audio/voice-design",
 * "GET /v1/audio/voices", "Voice"; D2, D4, D16, D20).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { parseBuffer } from "music-metadata";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { VOICE_CACHE_TTL_MS, VoiceLibrary } from "../../src/audio/voice-library.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { UpstreamError, type VoiceLibraryAdapter, type VoiceRecord } from "../../src/upstreams/types.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

function assertError(res: { status: number; json: { error?: Record<string, unknown> } }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json?.error?.code, code, JSON.stringify(res.json));
}

for (const backend of BACKENDS) {
  describe(`voice design on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

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

    test("designs a voice for 4.20, owned by the caller, usable only by them with beta models", async () => {
      const u = await richUser();
      const r = await gw.request("POST", "/v1/audio/voice-design", {
        token: u.api_key,
        body: { description: "A warm, slow baritone narrator.", name: "Narrator", gender: "male", age_group: "middle-aged" },
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.match(r.json.voice_id, /^svc_[A-Za-z0-9]{16,}$/);
      assert.equal(r.json.name, "Narrator");
      assert.equal(r.json.model, "beta-voice-design");
      assert.equal(r.json.cost_usd, 4.2);
      assert.equal(r.json.balance_usd, 6.3);
      assert.equal(r.headers.get("x-svc-cost-usd"), "4.2");
      assert.equal(await balance(u.org_id), 6_300_000);

      const speak = (token: string, model: string) =>
        gw.request("POST", "/v1/audio/speech", { token, body: { model, input: "My own voice.", voice_id: r.json.voice_id } });
      assert.equal((await speak(u.api_key, "beta-speech-hd")).status, 200);
      assertError(await speak(u.api_key, "alpha-v3"), 400, "voice_model_mismatch");
      const other = await gw.register();
      assertError(await speak(other.api_key, "beta-speech-hd"), 403, "voice_not_owned");
      assert.equal(await balance(other.org_id), 500_000);
    });

    test("text alias, name null when absent", async () => {
      const u = await richUser();
      const r = await gw.request("POST", "/v1/audio/voice-design", { token: u.api_key, body: { text: "Bright and quick." } });
      assert.equal(r.status, 200);
      assert.equal(r.json.name, null);
    });

    test("error table and limits: nothing charged", async () => {
      const u = await richUser();
      const design = (body: unknown) => gw.request("POST", "/v1/audio/voice-design", { token: u.api_key, body });
      assertError(await design({ description: "x", model: "beta-voice-clone" }), 400, "not_a_voice_design_model");
      const long = await design({ description: "d".repeat(1001) });
      assertError(long, 400, "description_too_long");
      assert.equal(long.json.error.param, "description");
      assert.equal((await design({ description: "d".repeat(1000) })).status, 200);
      assertError(await design({}), 400, "invalid_request");
      assertError(await design({ description: 42 }), 400, "invalid_request");
      assertError(await design({ description: "x", name: "n".repeat(65) }), 400, "invalid_request");
      assertError(await design({ description: "x", preview_text: "p".repeat(501) }), 400, "invalid_request");
      assertError(await design({ description: "x", gender: "other" }), 400, "invalid_request");
      assertError(await design({ description: "x", age_group: "teen" }), 400, "invalid_request");
      assertError(await design("not json"), 400, "invalid_request");
      assert.equal(await balance(u.org_id), 10_500_000 - 4_200_000);
    });

    test("balance below 4.20: 402 insufficient_credits", async () => {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/audio/voice-design", { token: u.api_key, body: { description: "x" } });
      assertError(r, 402, "insufficient_credits");
      assert.equal(r.json.error.type, "billing_error");
      assert.equal(await balance(u.org_id), 500_000);
    });

    test("upstream failure: 502, not charged", async () => {
      const u = await richUser();
      const r = await gw.request("POST", "/v1/audio/voice-design", {
        token: u.api_key,
        headers: { "x-svc-simulate": "fail" },
        body: { description: "x" },
      });
      assertError(r, 502, "provider_error");
      assert.equal(await balance(u.org_id), 10_500_000);
    });

    test("ownership write fails (injected in the database): 500 ownership_write_failed, not charged", async () => {
      const u = await richUser();
      const db = gw.services.db.kysely;
      if (backend.name === "sqlite") {
        await sql`create trigger fail_voice before insert on voices begin select raise(abort, 'injected failure'); end`.execute(db);
      } else {
        await sql`create function fail_voice() returns trigger language plpgsql as $$ begin raise exception 'injected failure'; end $$`.execute(db);
        await sql`create trigger fail_voice before insert on voices for each row execute function fail_voice()`.execute(db);
      }
      try {
        const r = await gw.request("POST", "/v1/audio/voice-design", { token: u.api_key, body: { description: "x" } });
        assertError(r, 500, "ownership_write_failed");
        assert.equal(r.json.error.type, "api_error");
        assert.equal(await balance(u.org_id), 10_500_000);
        const holds = await db.selectFrom("holds").select("status").where("account_id", "=", u.org_id).execute();
        assert.deepEqual(holds.map((h) => h.status), ["released"]);
        const voices = await db.selectFrom("voices").select("id").where("account_id", "=", u.org_id).execute();
        assert.equal(voices.length, 0);
      } finally {
        if (backend.name === "sqlite") await sql`drop trigger fail_voice`.execute(db);
        else {
          await sql`drop trigger fail_voice on voices`.execute(db);
          await sql`drop function fail_voice()`.execute(db);
        }
      }
      const retry = await gw.request("POST", "/v1/audio/voice-design", { token: u.api_key, body: { description: "x" } });
      assert.equal(retry.status, 200);
    });
  });
}

describe("voice library", () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startGateway("sqlite");
    key = (await gw.register()).api_key;
  });
  after(async () => {
    await gw?.close();
  });

  test("first call misses, later calls within 5 minutes may hit; shapes per provider", async () => {
    // The first call through the typed client (the documented list of `Voice` records).
    const first = await gw.client(key).GET("/v1/audio/voices");
    assert.equal(first.response.status, 200);
    assert.equal(first.response.headers.get("x-svc-cache"), "miss");
    assert.equal(first.data?.object, "list");
    assert.equal(first.data?.provider, "alpha");
    assert.equal(first.data?.data.length, 3000);
    const v = first.data.data[0];
    for (const f of ["provider", "voice_id", "name", "category", "labels", "preview_url", "description"]) assert.ok(f in v, f);
    assert.equal(v.provider, "alpha");
    const second = await gw.request("GET", "/v1/audio/voices?provider=alpha", { token: key });
    assert.equal(second.headers.get("x-svc-cache"), "may-hit");
    assert.deepEqual(second.json, first.data);

    const beta = await gw.request("GET", "/v1/audio/voices?provider=beta", { token: key });
    assert.equal(beta.headers.get("x-svc-cache"), "miss");
    assert.equal(beta.json.data.length, 300);
    assert.ok(Array.isArray(beta.json.data[0].description));
    assert.equal(beta.json.data[0].provider, "beta");

    const all = await gw.request("GET", "/v1/audio/voices?provider=all", { token: key });
    assert.equal(all.headers.get("x-svc-cache"), "may-hit");
    assert.equal(all.json.provider, "all");
    assert.equal(all.json.data.length, 3300);
  });

  test("gzip when the client accepts it", async () => {
    const res = await fetch(`${gw.url}/v1/audio/voices?provider=beta`, {
      headers: { authorization: `Bearer ${key}`, "accept-encoding": "gzip" },
    });
    assert.equal(res.headers.get("content-encoding"), "gzip");
    const body = (await res.json()) as { data: unknown[] };
    assert.equal(body.data.length, 300);
  });

  test("bad provider 400; no key 401", async () => {
    assertError(await gw.request("GET", "/v1/audio/voices?provider=gamma", { token: key }), 400, "invalid_request");
    assertError(await gw.request("GET", "/v1/audio/voices"), 401, "auth_error");
  });

  test("every provider failing: 502", async () => {
    const fresh = await startGateway("sqlite");
    try {
      const u = await fresh.register();
      const r = await fresh.request("GET", "/v1/audio/voices?provider=all", { token: u.api_key, headers: { "x-svc-simulate": "fail" } });
      assertError(r, 502, "provider_error");
    } finally {
      await fresh.close();
    }
  });

  test("preview of a library voice is a playable MP3; other ids 404", async () => {
    const r = await gw.request("GET", `/v1/audio/voices/alpha/${DEMO_ALPHA_VOICE_ID}/preview.mp3`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "audio/mpeg");
    const meta = await parseBuffer(r.bytes, { mimeType: "audio/mpeg" });
    assert.ok((meta.format.duration ?? 0) > 1);
    assertError(await gw.request("GET", "/v1/audio/voices/alpha/nope/preview.mp3"), 404, "not_found");
  });
});

describe("VoiceLibrary cache", () => {
  const alpha: VoiceRecord = {
    provider: "alpha",
    voice_id: "a1",
    name: "A",
    category: "premade",
    labels: { gender: "f", age: "young", accent: "us", use_case: "news" },
    preview_url: "http://x/p.mp3",
    description: "d",
  };
  const beta: VoiceRecord = { provider: "beta", voice_id: "b1", name: "B", description: ["calm"] };

  function fakeAdapter(failing: Set<string>, calls: string[]): VoiceLibraryAdapter {
    return {
      async listVoices(provider) {
        calls.push(provider);
        if (failing.has(provider)) throw new UpstreamError("down");
        return provider === "alpha" ? [alpha] : [beta];
      },
      isAlphaVoice: (id) => id === "a1",
    };
  }

  test("partial when one provider fails under all; 502 when both; expiry after 5 minutes", async () => {
    let now = 1_000_000;
    const failing = new Set<string>(["alpha"]);
    const calls: string[] = [];
    const lib = new VoiceLibrary(fakeAdapter(failing, calls), () => now);
    const partial = await lib.list("all", null);
    assert.equal(partial.cache, "partial");
    assert.deepEqual(JSON.parse(partial.body.toString()).data, [beta]);
    failing.add("beta");
    // beta is cached, alpha still failing: still partial.
    assert.equal((await lib.list("all", null)).cache, "partial");
    now += VOICE_CACHE_TTL_MS + 1;
    await assert.rejects(lib.list("all", null), (e: { status?: number }) => e.status === 502);
    failing.clear();
    assert.equal((await lib.list("all", null)).cache, "miss");
    assert.equal((await lib.list("all", null)).cache, "may-hit");
    now += VOICE_CACHE_TTL_MS - 1;
    assert.equal((await lib.list("alpha", null)).cache, "may-hit");
    now += 2;
    assert.equal((await lib.list("alpha", null)).cache, "miss");
  });

  test("a real alpha catalog: membership from the cached list, a stale list answers while it is refreshed", async () => {
    let now = 1_000_000;
    const calls: string[] = [];
    const failing = new Set<string>(["alpha"]);
    const real: VoiceLibraryAdapter = { ...fakeAdapter(failing, calls), isAlphaVoice: () => null };
    const lib = new VoiceLibrary(real, () => now);
    assert.equal(await lib.isAlphaVoice("a1"), null, "catalog unavailable: unknown");
    failing.clear();
    assert.equal(await lib.isAlphaVoice("a1"), true);
    assert.equal(await lib.isAlphaVoice("b1"), false);
    assert.deepEqual(calls, ["alpha", "alpha"]);
    now += VOICE_CACHE_TTL_MS + 1;
    failing.add("alpha");
    assert.equal(await lib.isAlphaVoice("a1"), true, "the stale list answers");
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(calls, ["alpha", "alpha", "alpha"], "and a refresh was started");
  });

  test("concurrent misses share one upstream call", async () => {
    const calls: string[] = [];
    const lib = new VoiceLibrary(fakeAdapter(new Set(), calls));
    await Promise.all(Array.from({ length: 10 }, () => lib.list("alpha", null)));
    assert.deepEqual(calls, ["alpha"]);
  });
});
