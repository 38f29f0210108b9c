/**
 * The public documents: `/v1/pricing` (D6, D18), `/v1/limits/tiers` (spec tier matrix, D12), the legacy
 * `/v1/credits/pricing`, and the tier helpers. Expected values are typed here from the spec.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  buildLegacyCreditsPricing,
  buildPricingCatalog,
  buildTierMatrix,
  type MediaRow,
  tierRowJson,
} from "../../src/catalog/pricing.ts";
import { effectiveTier, TIERS, tierForDeposits, tierRow } from "../../src/catalog/tiers.ts";
import type { TextModelPrice } from "../../src/catalog/types.ts";

type Expected = Omit<MediaRow, "id" | "name" | "deprecated" | "shutdown_date">;

/** The legacy models of spec Versioning 3: `deprecated: true` (D35); the built-in catalog has no shutdown date. */
const DEPRECATED = new Set(["imgB-1.1-ultra", "imgA-v3"]);

/** Every media row as the spec and D18 describe it (USD numbers). */
const EXPECTED_ROWS: Record<string, Expected> = {
  "alpha-v3": {
    modality: "audio",
    pricing_mode: "per-char",
    usd_per_call: 0.405,
    detail: { provider_cost_per_kchar: 0.405, markup: 1 },
  },
  "alpha-multilingual-v2": {
    modality: "audio",
    pricing_mode: "per-char",
    usd_per_call: 0.405,
    detail: { provider_cost_per_kchar: 0.405, markup: 1 },
  },
  "alpha-flash-v2-5": {
    modality: "audio",
    pricing_mode: "per-char",
    usd_per_call: 0.2,
    detail: { provider_cost_per_kchar: 0.2, markup: 1 },
  },
  "alpha-turbo-v2-5": {
    modality: "audio",
    pricing_mode: "per-char",
    usd_per_call: 0.2,
    detail: { provider_cost_per_kchar: 0.2, markup: 1 },
  },
  "beta-speech-hd": {
    modality: "audio",
    pricing_mode: "per-char",
    usd_per_call: 0.14,
    detail: { provider_cost_per_kchar: 0.14, markup: 1 },
  },
  "beta-speech-turbo": {
    modality: "audio",
    pricing_mode: "per-char",
    usd_per_call: 0.09,
    detail: { provider_cost_per_kchar: 0.09, markup: 1 },
  },
  "alpha-music": {
    modality: "audio",
    pricing_mode: "per-second",
    usd_per_call: 4.05,
    detail: {
      provider_cost_per_sec: 0.135,
      min_duration_sec: 1,
      max_duration_sec: 300,
      allowed_durations: null,
    },
  },
  "beta-music": {
    modality: "audio",
    pricing_mode: "per-song",
    usd_per_call: 0.045,
    detail: { usd_per_song: 0.045 },
  },
  "beta-music-pro": {
    modality: "audio",
    pricing_mode: "per-song",
    usd_per_call: 0.21,
    detail: { usd_per_song: 0.21 },
  },
  "alpha-sfx": {
    modality: "audio",
    pricing_mode: "per-call",
    usd_per_call: 0.027,
    detail: { usd_per_call: 0.027 },
  },
  "beta-voice-design": {
    modality: "audio",
    pricing_mode: "per-call",
    usd_per_call: 4.2,
    detail: { usd_per_call: 4.2 },
  },
  "beta-voice-clone": {
    modality: "audio",
    pricing_mode: "per-call",
    usd_per_call: 2.1,
    detail: { usd_per_call: 2.1 },
  },
  "host1-transcribe-1": {
    modality: "audio",
    pricing_mode: "per-minute",
    usd_per_call: 0.0009,
    detail: { provider_cost_per_minute: 0.0009, markup: 1 },
  },
  "host2-audio-understand-1": {
    modality: "audio",
    pricing_mode: "per-minute",
    usd_per_call: 0.0006,
    detail: { provider_cost_per_minute: 0.0006, markup: 1 },
  },
  "vidA-2.5-pro": perSecondVideo(0.0945, 0.4725),
  "vidA-3-pro": perSecondVideo(0.1512, 0.756),
  "vidA-3-pro-audio": perSecondVideo(0.2268, 1.134),
  "vidB-2-pro": perSecondVideo(0.40959, 2.04795),
  "vidB-2-fast": perSecondVideo(0.326565, 1.632825),
  "vidC-02-512p": {
    modality: "video",
    pricing_mode: "per-call",
    usd_per_call: 0.14,
    detail: { usd_per_call: 0.14 },
  },
  "vidC-02-768p": {
    modality: "video",
    pricing_mode: "per-call",
    usd_per_call: 0.42,
    detail: { usd_per_call: 0.42 },
  },
  "vidC-02-1080p": {
    modality: "video",
    pricing_mode: "per-call",
    usd_per_call: 0.78,
    detail: { usd_per_call: 0.78 },
  },
  "vidD-3-fast": perSecondVideo(0.135, 0.675),
  "vidD-3": perSecondVideo(0.54, 2.7),
  "imgA-v4": perImage(0.054, 0.04),
  // 0.338 / 1.35 = 0.2503703...: shown rounded to 6 decimals.
  "imgA-v4-pro": perImage(0.338, 0.25037),
  "imgA-v4-vector": perImage(0.108, 0.08),
  "imgA-v4-vector-pro": perImage(0.405, 0.3),
  "imgB-2-pro": {
    modality: "image",
    pricing_mode: "per-mp",
    usd_per_call: 0.041,
    detail: { base_usd: 0.03, extra_per_mp_usd: 0.015, markup: 1.35 },
  },
  "imgB-edit-pro": perImage(0.054, 0.04),
  "imgC-v3": perImage(0.108, 0.08),
  "imgB-1.1-ultra": perImage(0.081, 0.06),
  "imgA-v3": perImage(0.054, 0.04),
  "imgC-q1": {
    modality: "image",
    pricing_mode: "per-quality",
    usd_per_call: 0.057,
    detail: { tiers: { low: 0.015, medium: 0.057, high: 0.225 } },
  },
};

function perSecondVideo(rate: number, fiveSeconds: number): Expected {
  return {
    modality: "video",
    pricing_mode: "per-second",
    usd_per_call: fiveSeconds,
    detail: {
      provider_cost_per_sec: rate,
      min_duration_sec: 1,
      max_duration_sec: 10,
      allowed_durations: null,
    },
  };
}

function perImage(charged: number, providerCost: number): Expected {
  return {
    modality: "image",
    pricing_mode: "per-image",
    usd_per_call: charged,
    detail: { provider_cost: providerCost, markup: 1.35 },
  };
}

const DETAIL_KEYS: Record<string, string[]> = {
  "per-image": ["provider_cost", "markup"],
  "per-quality": ["tiers"],
  "per-mp": ["base_usd", "extra_per_mp_usd", "markup"],
  "per-second": ["provider_cost_per_sec", "min_duration_sec", "max_duration_sec", "allowed_durations"],
  "per-minute": ["provider_cost_per_minute", "markup"],
  "per-char": ["provider_cost_per_kchar", "markup"],
  "per-song": ["usd_per_song"],
  "per-call": ["usd_per_call"],
};

describe("GET /v1/pricing document", () => {
  const catalog = buildPricingCatalog();

  test("envelope and counts (D6)", () => {
    assert.equal(catalog.object, "pricing.catalog");
    assert.deepEqual(Object.keys(catalog), ["object", "text_count", "media_count", "text", "media"]);
    assert.equal(catalog.text_count, 0);
    assert.deepEqual(catalog.text, []);
    assert.equal(catalog.media_count, catalog.media.length);
    assert.equal(catalog.media.length, Object.keys(EXPECTED_ROWS).length);
  });

  test("media rows sorted by id in code-unit order (D18)", () => {
    const ids = catalog.media.map((r) => r.id);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} before ${ids[i]}`);
    // Upper-case letters sort before lower-case in code-unit order: every "imgA" before "imgB".
    assert.ok(ids.indexOf("imgA-v4-vector-pro") < ids.indexOf("imgB-1.1-ultra"));
    assert.ok(ids.indexOf("vidA-2.5-pro") < ids.indexOf("vidA-3-pro"));
  });

  for (const [id, expected] of Object.entries(EXPECTED_ROWS)) {
    test(`row ${id}`, () => {
      const row = catalog.media.find((r) => r.id === id);
      assert.ok(row, `missing row ${id}`);
      assert.deepEqual(Object.keys(row), [
        "id",
        "name",
        "modality",
        "pricing_mode",
        "usd_per_call",
        "detail",
        "deprecated",
        "shutdown_date",
      ]);
      assert.equal(typeof row.name, "string");
      const { id: _id, name: _name, deprecated, shutdown_date, ...priced } = row;
      assert.deepEqual(priced, expected);
      assert.deepEqual({ deprecated, shutdown_date }, { deprecated: DEPRECATED.has(id), shutdown_date: null });
    });
  }

  test("detail keys exactly per mode", () => {
    for (const row of catalog.media) {
      assert.deepEqual(Object.keys(row.detail), DETAIL_KEYS[row.pricing_mode], row.id);
    }
  });

  test("D18: provider_cost x markup equals the charged price (within 1e-6)", () => {
    for (const row of catalog.media) {
      const d = row.detail;
      let unitCost: number | null = null;
      if ("provider_cost" in d) unitCost = d.provider_cost * d.markup;
      if ("provider_cost_per_kchar" in d) unitCost = d.provider_cost_per_kchar * d.markup;
      if ("provider_cost_per_minute" in d) unitCost = d.provider_cost_per_minute * d.markup;
      if (unitCost === null) continue;
      // usd_per_call is one image, 1000 characters or one minute: the charged unit price.
      assert.ok(
        Math.abs(unitCost - row.usd_per_call) <= 1e-6,
        `${row.id}: ${unitCost} vs ${row.usd_per_call}`,
      );
    }
  });

  test("D18: per-second usd_per_call is the rate x the default duration", () => {
    for (const row of catalog.media) {
      const d = row.detail;
      if (!("provider_cost_per_sec" in d)) continue;
      const defaultSec = row.modality === "video" ? 5 : 30;
      assert.ok(Math.abs(d.provider_cost_per_sec * defaultSec - row.usd_per_call) < 1e-9, row.id);
    }
  });

  test("amounts have at most 6 decimals", () => {
    const json = JSON.stringify(catalog);
    for (const m of json.matchAll(/\d+\.(\d+)/g)) assert.ok(m[1].length <= 6, m[0]);
  });

  test("text rows: sorted, cached defaults to 10% of input, disabled left out", () => {
    const text: TextModelPrice[] = [
      { id: "zeta", name: "Zeta", inputMicrosPer1M: 3_000_000, outputMicrosPer1M: 15_000_000 },
      {
        id: "Alpha",
        name: "Alpha",
        inputMicrosPer1M: 250_000,
        outputMicrosPer1M: 1_000_000,
        cachedInputMicrosPer1M: 20_000,
      },
      { id: "off", name: "Off", inputMicrosPer1M: 1, outputMicrosPer1M: 1, enabled: false },
    ];
    const doc = buildPricingCatalog(text);
    assert.equal(doc.text_count, 2);
    assert.deepEqual(doc.text, [
      { id: "Alpha", name: "Alpha", input_per_1m: 0.25, output_per_1m: 1, cached_input_per_1m: 0.02 },
      { id: "zeta", name: "Zeta", input_per_1m: 3, output_per_1m: 15, cached_input_per_1m: 0.3 },
    ]);
    const legacy = buildLegacyCreditsPricing(text);
    assert.deepEqual(legacy, {
      object: "list",
      data: doc.text,
      deprecated: true,
      replaced_by: "/v1/pricing",
    });
  });

  test("legacy catalog without text models is an empty list", () => {
    assert.deepEqual(buildLegacyCreditsPricing(), {
      object: "list",
      data: [],
      deprecated: true,
      replaced_by: "/v1/pricing",
    });
  });
});

describe("GET /v1/limits/tiers document", () => {
  const matrix = buildTierMatrix();
  const FIELDS = [
    "tier",
    "name",
    "min_deposit",
    "rpm",
    "per_model_rpm",
    "tpm",
    "max_single_request",
    "image_concurrent",
    "image_queue_depth_cap",
    "video_concurrent",
    "video_queue_depth_cap",
    "audio_concurrent",
    "audio_concurrent_per_provider",
  ];

  test("five tiers 0 to 4 with every field; combined fields on tier 4 only", () => {
    assert.equal(matrix.object, "tier.matrix");
    assert.equal(matrix.tiers.length, 5);
    matrix.tiers.forEach((t, i) => {
      assert.equal(t.tier, i);
      assert.equal(t.name, `Tier ${i}`);
      const expected =
        i === 4 ? [...FIELDS, "combined_media_concurrent", "combined_queue_depth_cap"] : FIELDS;
      assert.deepEqual(Object.keys(t), expected);
      assert.deepEqual(Object.keys(t.audio_concurrent_per_provider), [
        "host_1",
        "host_2",
        "alpha",
        "beta",
        "host_3",
      ]);
      const pools = Object.values(t.audio_concurrent_per_provider);
      assert.equal(t.audio_concurrent, Math.max(...pools));
    });
  });

  test("tier 0 values of the spec", () => {
    assert.deepEqual(matrix.tiers[0], {
      tier: 0,
      name: "Tier 0",
      min_deposit: 0,
      rpm: 30,
      per_model_rpm: 25,
      tpm: 200_000,
      max_single_request: 200_000,
      image_concurrent: 2,
      image_queue_depth_cap: 6,
      video_concurrent: 0,
      video_queue_depth_cap: 0,
      audio_concurrent: 2,
      audio_concurrent_per_provider: { host_1: 1, host_2: 2, alpha: 1, beta: 1, host_3: 1 },
    });
  });

  test("ladder and D12 values of tiers 1 to 4", () => {
    // [min_deposit, rpm, per_model_rpm, tpm, max_single, image conc/queue, video conc/queue, audio, pools]
    const table: [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number[],
    ][] = [
      [10, 60, 40, 500_000, 500_000, 4, 12, 2, 6, 4, [2, 4, 2, 2, 2]],
      [50, 120, 80, 2_000_000, 1_000_000, 8, 24, 4, 12, 8, [4, 8, 4, 4, 4]],
      [250, 200, 150, 5_000_000, 1_000_000, 16, 48, 8, 24, 16, [8, 16, 8, 8, 8]],
      [1000, 300, 200, 10_000_000, 1_000_000, 38, 0, 38, 0, 20, [20, 20, 20, 20, 20]],
    ];
    table.forEach((r, i) => {
      const t = matrix.tiers[i + 1];
      assert.deepEqual(
        [
          t.min_deposit,
          t.rpm,
          t.per_model_rpm,
          t.tpm,
          t.max_single_request,
          t.image_concurrent,
          t.image_queue_depth_cap,
          t.video_concurrent,
          t.video_queue_depth_cap,
          t.audio_concurrent,
          Object.values(t.audio_concurrent_per_provider),
        ],
        r,
        `tier ${i + 1}`,
      );
    });
    assert.equal(matrix.tiers[4].combined_media_concurrent, 38);
    assert.equal(matrix.tiers[4].combined_queue_depth_cap, 114);
    // "Tier 4 has 100 total audio slots."
    const tier4Pools = Object.values(matrix.tiers[4].audio_concurrent_per_provider);
    assert.equal(
      tier4Pools.reduce((a, b) => a + b, 0),
      100,
    );
  });

  test("tierRowJson is the matrix row", () => {
    assert.deepEqual(tierRowJson(tierRow(2)), matrix.tiers[2]);
  });
});

describe("tier helpers", () => {
  test("tierForDeposits boundaries (micro-USD)", () => {
    const table: [number, number][] = [
      [0, 0],
      [9_999_999, 0],
      [10_000_000, 1],
      [49_999_999, 1],
      [50_000_000, 2],
      [249_999_999, 2],
      [250_000_000, 3],
      [999_999_999, 3],
      [1_000_000_000, 4],
      [50_000_000_000, 4],
    ];
    for (const [deposits, tier] of table) assert.equal(tierForDeposits(deposits), tier, `${deposits}`);
  });

  test("effectiveTier: the override wins", () => {
    assert.equal(effectiveTier(0, null), 0);
    assert.equal(effectiveTier(1_000_000_000, null), 4);
    assert.equal(effectiveTier(0, 3), 3);
    assert.equal(effectiveTier(1_000_000_000, 0), 0);
    assert.throws(() => effectiveTier(0, 5), RangeError);
  });

  test("tierRow", () => {
    assert.equal(tierRow(0), TIERS[0]);
    assert.equal(tierRow(4).minDepositMicros, 1_000_000_000);
    assert.throws(() => tierRow(-1), RangeError);
    assert.throws(() => tierRow(1.5), RangeError);
    assert.ok(Object.isFrozen(TIERS[0]) && Object.isFrozen(TIERS[0].audioConcurrentPerProvider));
  });
});
