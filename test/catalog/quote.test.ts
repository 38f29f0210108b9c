/**
 * Quotes in micro-USD from the catalog records: expected amounts are typed here from the spec's prices
 * (D7 rounding, D14 tiers, D19 imgB-2-pro sizes).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  getModel,
  getModelOf,
} from "../../src/catalog/models.ts";
import {
  billedMinutes,
  megapixelsOf,
  quoteFlat,
  quoteImage,
  quoteMusic,
  quotePerMinute,
  quoteRepresentative,
  quoteSfx,
  quoteSpeech,
  quoteVideo,
  upstreamListPrice,
} from "../../src/catalog/quote.ts";
import type {
  AudioTextModel,
  ImageModel,
  MusicModel,
  SpeechModel,
  VideoModel,
} from "../../src/catalog/types.ts";

function speech(id: string): SpeechModel {
  const m = getModelOf(id, "speech");
  assert.ok(m, id);
  return m;
}
function music(id: string): MusicModel {
  const m = getModelOf(id, "music");
  assert.ok(m, id);
  return m;
}
function image(id: string): ImageModel {
  const m = getModelOf(id, "image");
  assert.ok(m, id);
  return m;
}
function video(id: string): VideoModel {
  const m = getModelOf(id, "video");
  assert.ok(m, id);
  return m;
}
function audioText(m: AudioTextModel | undefined): AudioTextModel {
  assert.ok(m);
  return m;
}

describe("quoteSpeech", () => {
  // [model, micro-USD for 1 char, for 5000 chars]
  const table: [string, number, number][] = [
    ["alpha-v3", 405, 2_025_000],
    ["alpha-multilingual-v2", 405, 2_025_000],
    ["alpha-flash-v2-5", 200, 1_000_000],
    ["alpha-turbo-v2-5", 200, 1_000_000],
    ["beta-speech-hd", 140, 700_000],
    ["beta-speech-turbo", 90, 450_000],
  ];
  for (const [id, one, max] of table) {
    test(`${id}: 1 char and 5000 chars`, () => {
      assert.equal(quoteSpeech(speech(id), 1), one);
      assert.equal(quoteSpeech(speech(id), 5000), max);
      assert.equal(quoteSpeech(speech(id), 1000), one * 1000);
      assert.equal(quoteSpeech(speech(id), 0), 0);
    });
  }

  test("rejects non-integer or negative counts", () => {
    assert.throws(() => quoteSpeech(speech("alpha-v3"), 1.5));
    assert.throws(() => quoteSpeech(speech("alpha-v3"), -1));
  });
});

describe("quoteMusic", () => {
  test("alpha-music: per requested ms at 0.135/s", () => {
    const m = music("alpha-music");
    assert.equal(quoteMusic(m, 1000), 135_000);
    assert.equal(quoteMusic(m, 30_000), 4_050_000);
    assert.equal(quoteMusic(m, 300_000), 40_500_000);
    // 1001 ms: 135.135 micro-USD extra, half-up -> 135_135.
    assert.equal(quoteMusic(m, 1001), 135_135);
  });

  test("beta models: flat per song whatever the length", () => {
    assert.equal(quoteMusic(music("beta-music"), 1000), 45_000);
    assert.equal(quoteMusic(music("beta-music"), 300_000), 45_000);
    assert.equal(quoteMusic(music("beta-music-pro"), 30_000), 210_000);
  });
});

describe("flat quotes", () => {
  test("sfx 0.027, voice design 4.20, voice clone 2.10, beta-music 0.045", () => {
    const sfx = getModelOf("alpha-sfx", "sfx");
    assert.ok(sfx);
    assert.equal(quoteSfx(sfx), 27_000);
    const design = getModel("beta-voice-design");
    const clone = getModel("beta-voice-clone");
    const song = getModel("beta-music");
    assert.ok(design && clone && song);
    assert.equal(quoteFlat(design), 4_200_000);
    assert.equal(quoteFlat(clone), 2_100_000);
    assert.equal(quoteFlat(song), 45_000);
  });

  test("a metered model is misuse", () => {
    const m = getModel("alpha-v3");
    assert.ok(m);
    assert.throws(() => quoteFlat(m), /does not apply/);
  });
});

describe("quotePerMinute", () => {
  const transcribe = audioText(getModelOf("transcribe", "transcription"));
  const understand = audioText(getModelOf("audio-understand", "audio_understanding"));

  test("per started minute, 1-minute minimum", () => {
    assert.equal(billedMinutes(0), 1);
    assert.equal(billedMinutes(1), 1);
    assert.equal(billedMinutes(60), 1);
    assert.equal(billedMinutes(61), 2);
    assert.equal(quotePerMinute(transcribe, 0), 900);
    assert.equal(quotePerMinute(transcribe, 1), 900);
    assert.equal(quotePerMinute(transcribe, 61), 1_800);
    assert.equal(quotePerMinute(transcribe, 3600), 54_000);
    assert.equal(quotePerMinute(understand, 1), 600);
    assert.equal(quotePerMinute(understand, 61), 1_200);
    assert.equal(quotePerMinute(understand, 60.5), 1_200);
  });

  test("bad durations are misuse", () => {
    assert.throws(() => quotePerMinute(transcribe, -1));
    assert.throws(() => quotePerMinute(transcribe, Number.NaN));
  });
});

describe("megapixelsOf", () => {
  test("rounded half-up to a whole number, at least 1", () => {
    assert.equal(megapixelsOf(1024, 1024), 1);
    assert.equal(megapixelsOf(1448, 1448), 2);
    assert.equal(megapixelsOf(2048, 2048), 4);
    assert.equal(megapixelsOf(16, 16), 1);
    assert.equal(megapixelsOf(1000, 1500), 2); // exactly 1.5 -> 2
    assert.equal(megapixelsOf(1000, 1499), 1);
    assert.equal(megapixelsOf(1000, 2500), 3); // exactly 2.5 -> 3
  });

  test("non-positive sizes are misuse", () => {
    assert.throws(() => megapixelsOf(0, 100));
    assert.throws(() => megapixelsOf(10.5, 100));
  });
});

describe("quoteImage", () => {
  test("per-image x n", () => {
    const table: [string, number][] = [
      ["imgA-v4", 54_000],
      ["imgA-v4-pro", 338_000],
      ["imgA-v4-vector", 108_000],
      ["imgA-v4-vector-pro", 405_000],
      ["imgB-edit-pro", 54_000],
      ["imgC-v3", 108_000],
      ["imgB-1.1-ultra", 81_000],
      ["imgA-v3", 54_000],
    ];
    for (const [id, one] of table) {
      for (const n of [1, 2, 3, 4]) assert.equal(quoteImage(image(id), { n }), one * n, `${id} n=${n}`);
    }
  });

  test("imgC-q1: tier x n, default medium", () => {
    const m = image("imgC-q1");
    const tiers: ["low" | "medium" | "high", number][] = [
      ["low", 15_000],
      ["medium", 57_000],
      ["high", 225_000],
    ];
    for (const [quality, price] of tiers) {
      for (const n of [1, 4]) assert.equal(quoteImage(m, { n, quality }), price * n);
    }
    assert.equal(quoteImage(m, { n: 1 }), 57_000);
    assert.equal(quoteImage(m, { n: 3 }), 171_000);
  });

  test("imgB-2-pro: D19 sizes, rounded to 0.001, n ignored", () => {
    const m = image("imgB-2-pro");
    assert.equal(quoteImage(m, { n: 1, width: 1024, height: 1024 }), 41_000);
    assert.equal(quoteImage(m, { n: 1, width: 1448, height: 1448 }), 61_000);
    assert.equal(quoteImage(m, { n: 1, width: 2048, height: 2048 }), 101_000);
    // 3 MP: (0.03 + 0.03) x 1.35 = 0.081.
    assert.equal(quoteImage(m, { n: 1, width: 1732, height: 1732 }), 81_000);
    // No size ("auto") -> about one megapixel.
    assert.equal(quoteImage(m, { n: 1 }), 41_000);
    // Always one image.
    assert.equal(quoteImage(m, { n: 4, width: 1024, height: 1024 }), 41_000);
  });

  test("n below 1 is misuse", () => {
    assert.throws(() => quoteImage(image("imgA-v4"), { n: 0 }));
  });
});

describe("quoteVideo", () => {
  test("per-second x duration", () => {
    const table: [string, number][] = [
      ["vidA-2.5-pro", 94_500],
      ["vidA-3-pro", 151_200],
      ["vidA-3-pro-audio", 226_800],
      ["vidB-2-pro", 409_590],
      ["vidB-2-fast", 326_565],
      ["vidD-3-fast", 135_000],
      ["vidD-3", 540_000],
    ];
    for (const [id, rate] of table) {
      for (const d of [1, 5, 10]) assert.equal(quoteVideo(video(id), d), rate * d, `${id} ${d}s`);
    }
    assert.equal(quoteVideo(video("vidB-2-fast"), 5), 1_632_825);
  });

  test("vidC: flat per clip whatever the duration", () => {
    const table: [string, number][] = [
      ["vidC-02-512p", 140_000],
      ["vidC-02-768p", 420_000],
      ["vidC-02-1080p", 780_000],
    ];
    for (const [id, clip] of table) {
      assert.equal(quoteVideo(video(id), 6), clip);
      assert.equal(quoteVideo(video(id), 10), clip);
    }
  });
});

describe("quoteRepresentative (D18 usd_per_call)", () => {
  const table: [string, number][] = [
    ["imgA-v4", 54_000], // one image
    ["beta-music", 45_000], // one song
    ["alpha-sfx", 27_000], // one call
    ["vidC-02-1080p", 780_000], // one clip
    ["vidA-3-pro", 756_000], // default 5 s
    ["alpha-music", 4_050_000], // default 30 s
    ["alpha-v3", 405_000], // 1000 characters
    ["host1-transcribe-1", 900], // one minute
    ["imgC-q1", 57_000], // default tier
    ["imgB-2-pro", 41_000], // 1 MP
  ];
  for (const [id, micros] of table) {
    test(id, () => {
      const m = getModel(id);
      assert.ok(m);
      assert.equal(quoteRepresentative(m), micros);
    });
  }
});

describe("upstreamListPrice (the provider's list price of a delivered job)", () => {
  const image = (id: string) => {
    const m = getModelOf(id, "image");
    assert.ok(m);
    return m;
  };
  const video = (id: string) => {
    const m = getModelOf(id, "video");
    assert.ok(m);
    return m;
  };
  test("the charge without the x1.35 markup: dall-e-3 HD 0.08, gpt-image-1 medium 0.042, Kling 2.5 0.07/s", () => {
    assert.equal(upstreamListPrice(image("imgC-v3"), 108_000), 80_000);
    assert.equal(upstreamListPrice(image("imgC-q1"), 57_000), 42_222);
    assert.equal(upstreamListPrice(image("imgA-v4"), 2 * 54_000), 80_000);
    assert.equal(upstreamListPrice(video("vidA-2.5-pro"), 5 * 94_500), 350_000);
  });
  test("imgB-2-pro: BFL's 0.03 + 0.015 per further megapixel of the delivered size", () => {
    assert.equal(upstreamListPrice(image("imgB-2-pro"), 41_000, 1.05), 30_000);
    assert.equal(upstreamListPrice(image("imgB-2-pro"), 61_000, 2.1), 45_000);
    assert.equal(upstreamListPrice(image("imgB-2-pro"), 101_000, 4.19), 75_000);
    // Without a delivered size: the charge without the markup.
    assert.equal(upstreamListPrice(image("imgB-2-pro"), 41_000), 30_370);
  });
  test("a negative or fractional charge is a programming error", () => {
    assert.throws(() => upstreamListPrice(image("imgC-v3"), -1));
    assert.throws(() => upstreamListPrice(image("imgC-v3"), 1.5));
  });
});
