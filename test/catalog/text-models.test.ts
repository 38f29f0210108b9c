/**
 * The text catalog (src/catalog/text-models.ts): prices, aliases, the cached-input rule (10%), exact
 * half-up quoting and the text rows of `/v1/pricing`.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getModel } from "../../src/catalog/models.ts";
import { buildLegacyCreditsPricing, buildPricingCatalog } from "../../src/catalog/pricing.ts";
import {
  getTextModel,
  quoteTextCall,
  resolveTextModelId,
  TEXT_ALIASES,
  TEXT_MODELS,
  type TextModel,
  textFallbackChain,
} from "../../src/catalog/text-models.ts";
import type { TextModelPrice } from "../../src/catalog/types.ts";

/** id -> [USD in, USD out, USD cached, context window, tierMin] per 1M tokens. */
const EXPECTED: Record<string, [number, number, number, number, number]> = {
  "txtA-large": [3, 15, 0.3, 200_000, 0],
  "txtA-small": [0.15, 0.6, 0.015, 128_000, 0],
  "txtB-flash": [0.3, 2.5, 0.03, 1_000_000, 0],
  "txtB-pro": [1.25, 10, 0.125, 1_000_000, 1],
  "txtC-coder": [2, 8, 0.2, 256_000, 0],
  "txtC-mini": [0.1, 0.4, 0.01, 128_000, 0],
  "txtD-agent": [2.5, 10, 0.25, 400_000, 0],
  "txtD-lite": [0.4, 1.6, 0.04, 128_000, 0],
};

/** A text model by id, failing the test when missing. */
function model(id: string): TextModel {
  const m = getTextModel(id);
  assert.ok(m, id);
  return m;
}

describe("TEXT_MODELS", () => {
  test("exactly the expected models, sorted by id, all enabled", () => {
    assert.deepEqual(
      TEXT_MODELS.map((m) => m.id),
      Object.keys(EXPECTED).sort(),
    );
    assert.ok(TEXT_MODELS.every((m) => m.enabled));
  });

  test("every price in integer micro-USD per 1M tokens", () => {
    for (const [id, [input, output, cached, ctx, tierMin]] of Object.entries(EXPECTED)) {
      const m = model(id);
      assert.equal(m.inputMicrosPer1M, Math.round(input * 1_000_000), id);
      assert.equal(m.outputMicrosPer1M, Math.round(output * 1_000_000), id);
      assert.equal(m.cachedInputMicrosPer1M, Math.round(cached * 1_000_000), id);
      assert.equal(m.contextWindow, ctx, id);
      assert.equal(m.tierMin, tierMin, id);
      for (const v of [m.inputMicrosPer1M, m.outputMicrosPer1M, m.cachedInputMicrosPer1M]) assert.ok(Number.isSafeInteger(v));
    }
  });

  test("cached input is exactly 10% of input (spec Billing rules 4)", () => {
    for (const m of TEXT_MODELS) assert.equal(m.cachedInputMicrosPer1M * 10, m.inputMicrosPer1M, m.id);
  });

  test("records are complete: family, upstream name, capabilities, equivalents", () => {
    for (const m of TEXT_MODELS) {
      assert.ok(m.id.startsWith(m.family + "-"), m.id);
      assert.ok(m.upstreamModel.length > 0);
      assert.ok(m.capabilities.includes("chat"));
      assert.ok(m.equivalents.length >= 2, m.id);
      for (const eq of m.equivalents) {
        assert.notEqual(eq, m.id);
        assert.ok(getTextModel(eq), `${m.id} -> ${eq}`);
      }
    }
  });

  test("ids and aliases do not clash with the media catalog", () => {
    for (const key of [...TEXT_MODELS.map((m) => m.id), ...Object.keys(TEXT_ALIASES)]) assert.equal(getModel(key), undefined, key);
  });

  test("satisfies TextModelPrice (compile-time) ", () => {
    const rows: readonly TextModelPrice[] = TEXT_MODELS;
    assert.equal(rows.length, TEXT_MODELS.length);
  });
});

describe("aliases and lookup", () => {
  test("every alias resolves to its current model (spec Versioning 4)", () => {
    assert.deepEqual({ ...TEXT_ALIASES }, {
      best: "txtA-large",
      fast: "txtB-flash",
      code: "txtC-coder",
      cheap: "txtC-mini",
      agent: "txtD-agent",
    });
    for (const [alias, id] of Object.entries(TEXT_ALIASES)) {
      assert.equal(getTextModel(alias)?.id, id, alias);
      assert.equal(resolveTextModelId(alias), id);
      assert.equal(getTextModel(alias)?.tierMin, 0, `${alias} is usable by every tier`);
    }
  });

  test("cheap is the cheapest model and fast is a light model", () => {
    const cheapest = [...TEXT_MODELS].sort((a, b) => a.inputMicrosPer1M + a.outputMicrosPer1M - (b.inputMicrosPer1M + b.outputMicrosPer1M))[0];
    assert.equal(getTextModel("cheap")?.id, cheapest.id);
    assert.ok(getTextModel("code")?.capabilities.includes("code"));
    assert.ok(getTextModel("agent")?.capabilities.includes("tools"));
  });

  test("unknown names, prototype keys and media ids are undefined", () => {
    for (const name of ["", "gpt-4", "Best", "toString", "__proto__", "constructor", "alpha-v3", "transcribe"]) {
      assert.equal(getTextModel(name), undefined, name);
    }
    assert.equal(resolveTextModelId("toString"), "toString");
  });

  test("a disabled model is refused by id and by alias", () => {
    const m = model("txtA-large");
    m.enabled = false;
    try {
      assert.equal(getTextModel("txtA-large"), undefined);
      assert.equal(getTextModel("best"), undefined);
      assert.equal(buildPricingCatalog(TEXT_MODELS).text.some((r) => r.id === "txtA-large"), false);
      // Its equivalents stay available as fallbacks.
      assert.deepEqual(textFallbackChain(m).map((x) => x.id), ["txtA-large", "txtB-pro", "txtD-agent"]);
      // A disabled equivalent is skipped in other chains.
      assert.deepEqual(textFallbackChain(model("txtB-pro")).map((x) => x.id), ["txtB-pro", "txtD-agent"]);
    } finally {
      m.enabled = true;
    }
    assert.equal(getTextModel("best")?.id, "txtA-large");
  });

  test("fallback chain: the model, then its equivalents in order", () => {
    assert.deepEqual(textFallbackChain(model("txtA-small")).map((x) => x.id), ["txtA-small", "txtB-flash", "txtD-lite"]);
  });
});

describe("quoteTextCall", () => {
  const small = (): TextModel => model("txtA-small"); // 0.15 in, 0.60 out, 0.015 cached (USD / 1M)
  const large = (): TextModel => model("txtA-large"); // 3.00 in, 15.00 out, 0.30 cached

  test("fractional micro-USD are rounded half-up once, at the end", () => {
    const q = (inputTokens: number, cachedTokens = 0, outputTokens = 0): number =>
      quoteTextCall(small(), { inputTokens, cachedTokens, outputTokens });
    assert.equal(q(0), 0);
    assert.equal(q(1), 0); // 0.15
    assert.equal(q(3), 0); // 0.45
    assert.equal(q(4), 1); // 0.60
    assert.equal(q(7), 1); // 1.05
    assert.equal(q(10), 2); // 1.50: half goes up
    assert.equal(q(0, 0, 1), 1); // 0.60
    // Once, not per part: 4 input (0.60) + 1 output (0.60) = 1.20 -> 1, not 1 + 1.
    assert.equal(q(4, 0, 1), 1);
    // Cached tokens at 10%: 100 input of which 100 cached = 1.5 -> 2; uncached it would be 15.
    assert.equal(q(100, 100), 2);
    assert.equal(q(100), 15);
  });

  test("exact sums for large calls", () => {
    assert.equal(quoteTextCall(large(), { inputTokens: 1_000_000, cachedTokens: 0, outputTokens: 0 }), 3_000_000);
    assert.equal(quoteTextCall(large(), { inputTokens: 0, cachedTokens: 0, outputTokens: 1_000_000 }), 15_000_000);
    // 500 uncached x 3 + 500 cached x 0.3 + 200 output x 15 = 1500 + 150 + 3000.
    assert.equal(quoteTextCall(large(), { inputTokens: 1000, cachedTokens: 500, outputTokens: 200 }), 4650);
    // A whole context window plus a long answer stays exact.
    assert.equal(
      quoteTextCall(large(), { inputTokens: 200_000, cachedTokens: 150_000, outputTokens: 100_000 }),
      150_000 + 45_000 + 1_500_000,
    );
  });

  test("every model: cached input costs a tenth of uncached input", () => {
    for (const m of TEXT_MODELS) {
      const full = quoteTextCall(m, { inputTokens: 10_000_000, cachedTokens: 0, outputTokens: 0 });
      const cached = quoteTextCall(m, { inputTokens: 10_000_000, cachedTokens: 10_000_000, outputTokens: 0 });
      assert.equal(cached * 10, full, m.id);
    }
  });

  test("rejects negative, fractional and inconsistent counts", () => {
    assert.throws(() => quoteTextCall(small(), { inputTokens: -1, cachedTokens: 0, outputTokens: 0 }), RangeError);
    assert.throws(() => quoteTextCall(small(), { inputTokens: 1.5, cachedTokens: 0, outputTokens: 0 }), RangeError);
    assert.throws(() => quoteTextCall(small(), { inputTokens: 1, cachedTokens: 0, outputTokens: Number.NaN }), RangeError);
    assert.throws(() => quoteTextCall(small(), { inputTokens: 10, cachedTokens: 11, outputTokens: 0 }), RangeError);
  });
});

describe("pricing catalog rows", () => {
  test("buildPricingCatalog(TEXT_MODELS): one text row per model, sorted, USD per 1M", () => {
    const catalog = buildPricingCatalog(TEXT_MODELS);
    assert.equal(catalog.text_count, TEXT_MODELS.length);
    assert.equal(catalog.text.length, 8);
    assert.deepEqual(
      catalog.text.map((r) => r.id),
      Object.keys(EXPECTED).sort(),
    );
    for (const row of catalog.text) {
      const [input, output, cached] = EXPECTED[row.id];
      assert.deepEqual(row, {
        id: row.id,
        name: model(row.id).name,
        input_per_1m: input,
        output_per_1m: output,
        cached_input_per_1m: cached,
      });
    }
    assert.equal(catalog.media_count, buildPricingCatalog().media_count);
    assert.ok(JSON.stringify(catalog).includes('"cached_input_per_1m":0.015'));
  });

  test("the legacy credits catalog lists the same text rows", () => {
    const legacy = buildLegacyCreditsPricing(TEXT_MODELS);
    assert.deepEqual(legacy.data, buildPricingCatalog(TEXT_MODELS).text);
    assert.equal(legacy.deprecated, true);
  });
});
