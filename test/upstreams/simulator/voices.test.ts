import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { gzipSync } from "node:zlib";
import {
  ALPHA_VOICE_COUNT,
  BETA_VOICE_COUNT,
  createVoiceCatalog,
  DEMO_ALPHA_VOICE_ID,
  DEMO_ALPHA_VOICES,
  DEMO_BETA_VOICE_ID,
  DEMO_BETA_VOICES,
} from "../../../src/upstreams/simulator/voices.ts";

const BASE = "https://gateway.example.com";
const catalog = createVoiceCatalog(`${BASE}/`);

describe("voice catalogs", () => {
  it("have 3000 alpha and 300 beta voices with unique ids", () => {
    assert.equal(ALPHA_VOICE_COUNT, 3000);
    assert.equal(BETA_VOICE_COUNT, 300);
    assert.equal(catalog.alpha.length, 3000);
    assert.equal(catalog.beta.length, 300);
    const ids = new Set([...catalog.alpha, ...catalog.beta].map((v) => v.voice_id));
    assert.equal(ids.size, 3300);
  });

  it("start with the demo voices", () => {
    assert.equal(catalog.alpha[0].voice_id, DEMO_ALPHA_VOICE_ID);
    assert.equal(catalog.beta[0].voice_id, DEMO_BETA_VOICE_ID);
    DEMO_ALPHA_VOICES.forEach((d, i) => {
      assert.equal(catalog.alpha[i].voice_id, d.voice_id);
    });
    DEMO_BETA_VOICES.forEach((d, i) => {
      assert.equal(catalog.beta[i].voice_id, d.voice_id);
    });
  });

  it("alpha records have the library shape", () => {
    const categories = new Map<string, number>();
    for (const v of catalog.alpha) {
      assert.equal(v.provider, "alpha");
      assert.match(v.voice_id, /^[A-Za-z0-9]{20}$/);
      assert.ok(v.name.length > 0);
      assert.ok(v.description.length > 0);
      assert.equal(v.preview_url, `${BASE}/v1/audio/voices/alpha/${v.voice_id}/preview.mp3`);
      for (const k of ["gender", "age", "accent", "use_case"] as const) assert.ok(v.labels[k].length > 0);
      categories.set(v.category, (categories.get(v.category) ?? 0) + 1);
    }
    assert.deepEqual([...categories.keys()].sort(), ["cloned", "generated", "premade", "professional"]);
    assert.ok((categories.get("premade") ?? 0) > 1500);
  });

  it("beta records have readable ids and [energy, language, gender] tags", () => {
    for (const v of catalog.beta) {
      assert.equal(v.provider, "beta");
      // Readable ids, but for the demo voice that carries MiniMax's own id.
      assert.match(v.voice_id, /^(beta_[a-z]+_\d+|English_Graceful_Lady)$/);
      assert.ok(v.name.length > 0);
      assert.equal(v.description.length, 3);
      assert.ok(["female", "male", "neutral"].includes(v.description[2]));
    }
  });

  it("isAlphaVoice tells library alpha voices from anything else", () => {
    assert.equal(catalog.isAlphaVoice(DEMO_ALPHA_VOICE_ID), true);
    assert.equal(catalog.isAlphaVoice(catalog.alpha[2999].voice_id), true);
    assert.equal(catalog.isAlphaVoice(DEMO_BETA_VOICE_ID), false);
    assert.equal(catalog.isAlphaVoice("svc_abc"), false);
    assert.equal(catalog.isAlphaVoice(""), false);
  });

  it("is deterministic", () => {
    assert.deepEqual(createVoiceCatalog(BASE).alpha, catalog.alpha);
    assert.deepEqual(createVoiceCatalog(BASE).beta, catalog.beta);
  });

  it("alpha JSON is about 100 KB compressed (no padding)", () => {
    const json = JSON.stringify(catalog.alpha);
    const gz = gzipSync(json).length;
    assert.ok(gz > 80_000 && gz < 200_000, `${gz} bytes gzipped`);
    assert.ok(json.length < 1_500_000, `${json.length} bytes`);
  });

  it("records are frozen", () => {
    assert.ok(Object.isFrozen(catalog.alpha[0]));
    assert.ok(Object.isFrozen(catalog.alpha[0].provider === "alpha" ? catalog.alpha[0].labels : {}));
  });
});
