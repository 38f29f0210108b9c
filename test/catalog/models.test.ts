/**
 * The model catalog against the spec: every model exists with the spec's price (typed here, not read from
 * the catalog), pricing mode, audio pool, limits and flags; aliases and typed getters resolve.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  DEFAULT_AUDIO_UNDERSTANDING_MODEL,
  DEFAULT_MUSIC_MODEL,
  DEFAULT_SFX_MODEL,
  DEFAULT_SPEECH_MODEL,
  DEFAULT_TRANSCRIPTION_MODEL,
  DEFAULT_VOICE_CLONE_MODEL,
  DEFAULT_VOICE_DESIGN_MODEL,
  enabledModels,
  getModel,
  getModelOf,
  MODEL_ALIASES,
  MODELS,
} from "../../src/catalog/models.ts";
import type { ModelRecord, PricingMode, SpeechModel, VideoModel, VoiceCreationModel } from "../../src/catalog/types.ts";

/** The charged amount of a record in micro-USD, per its mode's unit (for the table below). */
function chargedMicros(m: ModelRecord): number | Record<string, number> {
  const p = m.pricing;
  switch (p.mode) {
    case "per-char":
      return p.microsPerKchar;
    case "per-second":
      return p.microsPerSecond;
    case "per-minute":
      return p.microsPerMinute;
    case "per-image":
      return p.microsPerImage;
    case "per-quality":
      return { ...p.tiers };
    case "per-mp":
      return { base: p.baseMicros, extra: p.extraPerMpMicros, bp: p.markupBp, step: p.roundStepMicros };
    case "per-song":
      return p.microsPerSong;
    case "per-call":
      return p.microsPerCall;
  }
}

/** Every model of the spec (plus D14's imgC-q1 and the two audio-to-text models): mode and price. */
const EXPECTED: [id: string, mode: PricingMode, micros: number | Record<string, number>][] = [
  ["alpha-v3", "per-char", 405_000],
  ["alpha-multilingual-v2", "per-char", 405_000],
  ["alpha-flash-v2-5", "per-char", 200_000], // D7: 0.20, not 0.2025
  ["alpha-turbo-v2-5", "per-char", 200_000],
  ["beta-speech-hd", "per-char", 140_000],
  ["beta-speech-turbo", "per-char", 90_000],
  ["alpha-music", "per-second", 135_000],
  ["beta-music", "per-song", 45_000],
  ["beta-music-pro", "per-song", 210_000],
  ["alpha-sfx", "per-call", 27_000],
  ["beta-voice-design", "per-call", 4_200_000],
  ["beta-voice-clone", "per-call", 2_100_000],
  ["host1-transcribe-1", "per-minute", 900],
  ["host2-audio-understand-1", "per-minute", 600],
  ["vidA-2.5-pro", "per-second", 94_500],
  ["vidA-3-pro", "per-second", 151_200],
  ["vidA-3-pro-audio", "per-second", 226_800],
  ["vidB-2-pro", "per-second", 409_590],
  ["vidB-2-fast", "per-second", 326_565],
  ["vidC-02-512p", "per-call", 140_000],
  ["vidC-02-768p", "per-call", 420_000],
  ["vidC-02-1080p", "per-call", 780_000],
  ["vidD-3-fast", "per-second", 135_000],
  ["vidD-3", "per-second", 540_000],
  ["imgA-v4", "per-image", 54_000],
  ["imgA-v4-pro", "per-image", 338_000],
  ["imgA-v4-vector", "per-image", 108_000],
  ["imgA-v4-vector-pro", "per-image", 405_000],
  ["imgB-2-pro", "per-mp", { base: 30_000, extra: 15_000, bp: 13_500, step: 1_000 }],
  ["imgB-edit-pro", "per-image", 54_000],
  ["imgC-v3", "per-image", 108_000],
  ["imgB-1.1-ultra", "per-image", 81_000],
  ["imgA-v3", "per-image", 54_000],
  ["imgC-q1", "per-quality", { low: 15_000, medium: 57_000, high: 225_000 }],
];

describe("catalog records", () => {
  test("exactly the expected models, no duplicates", () => {
    const ids = MODELS.map((m) => m.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), EXPECTED.map(([id]) => id).sort());
  });

  for (const [id, mode, micros] of EXPECTED) {
    test(`${id}: ${mode} at the spec price`, () => {
      const m = getModel(id);
      assert.ok(m, `missing ${id}`);
      assert.equal(m.id, id);
      assert.equal(m.pricing.mode, mode);
      assert.deepEqual(chargedMicros(m), micros);
      assert.equal(m.enabled, true);
      assert.ok(m.name.length > 0);
    });
  }

  test("every amount is an integer micro-USD", () => {
    for (const m of MODELS) {
      const c = chargedMicros(m);
      const values = typeof c === "number" ? [c] : Object.values(c);
      for (const v of values) assert.ok(Number.isSafeInteger(v), `${m.id}: ${v}`);
    }
  });

  test("markups: image rows x1.35, audio rows x1.00", () => {
    for (const m of MODELS) {
      if (!("markupBp" in m.pricing)) continue;
      assert.equal(m.pricing.markupBp, m.modality === "image" ? 13_500 : 10_000, m.id);
    }
  });

  test("records are frozen", () => {
    const m = getModel("alpha-v3");
    assert.ok(m);
    assert.ok(Object.isFrozen(m));
    assert.ok(Object.isFrozen(m.pricing));
    assert.throws(() => {
      (m.pricing as { microsPerKchar: number }).microsPerKchar = 1;
    }, TypeError);
  });

  test("enabledModels lists every enabled model", () => {
    assert.equal(enabledModels().length, MODELS.filter((m) => m.enabled).length);
  });
});

describe("speech", () => {
  const table: [id: string, provider: "alpha" | "beta", streaming: boolean][] = [
    ["alpha-v3", "alpha", false],
    ["alpha-multilingual-v2", "alpha", false],
    ["alpha-flash-v2-5", "alpha", false],
    ["alpha-turbo-v2-5", "alpha", false],
    ["beta-speech-hd", "beta", true],
    ["beta-speech-turbo", "beta", true],
  ];
  for (const [id, provider, streaming] of table) {
    test(`${id}: ${provider} voices and pool, streaming ${streaming}, 5000 chars`, () => {
      const m = getModelOf(id, "speech");
      assert.ok(m);
      assert.equal(m.voiceProvider, provider);
      assert.equal(m.audioPool, provider);
      assert.equal(m.supportsStreaming, streaming);
      assert.equal(m.maxInputChars, 5000);
      assert.equal(m.modality, "audio");
    });
  }

  test("default and non-speech ids", () => {
    assert.equal(DEFAULT_SPEECH_MODEL, "alpha-multilingual-v2");
    assert.ok(getModelOf(DEFAULT_SPEECH_MODEL, "speech"));
    assert.equal(getModelOf("alpha-music", "speech"), undefined);
    assert.equal(getModelOf("nope", "speech"), undefined);
  });
});

describe("music", () => {
  test("alpha-music: prompt required, 2000 graphemes, lyrics ignored, honours 1000-300000 ms", () => {
    const m = getModelOf("alpha-music", "music");
    assert.ok(m);
    assert.equal(m.promptRequired, true);
    assert.equal(m.promptMaxGraphemes, 2000);
    assert.equal(m.lyricsMaxGraphemes, null);
    assert.equal(m.honoursLength, true);
    assert.deepEqual([m.minLengthMs, m.maxLengthMs, m.defaultLengthMs], [1000, 300_000, 30_000]);
    assert.equal(m.audioPool, "alpha");
    assert.equal(m.pricing.mode, "per-second");
    if (m.pricing.mode === "per-second") {
      assert.deepEqual(
        [m.pricing.minDurationSec, m.pricing.maxDurationSec, m.pricing.defaultDurationSec],
        [1, 300, 30],
      );
    }
  });

  for (const id of ["beta-music", "beta-music-pro"]) {
    test(`${id}: prompt 200, lyrics 600, beta pool, length from lyrics`, () => {
      const m = getModelOf(id, "music");
      assert.ok(m);
      assert.equal(m.promptRequired, false);
      assert.equal(m.promptMaxGraphemes, 200);
      assert.equal(m.lyricsMaxGraphemes, 600);
      assert.equal(m.honoursLength, false);
      assert.equal(m.audioPool, "beta");
    });
  }

  test("default", () => {
    assert.equal(DEFAULT_MUSIC_MODEL, "alpha-music");
    assert.equal(getModelOf("alpha-sfx", "music"), undefined);
  });
});

describe("sfx, voice design, voice clone", () => {
  test("alpha-sfx limits", () => {
    assert.equal(DEFAULT_SFX_MODEL, "alpha-sfx");
    const m = getModelOf(DEFAULT_SFX_MODEL, "sfx");
    assert.ok(m);
    assert.equal(m.promptMaxChars, 500);
    assert.equal(m.minDurationSec, 0.5);
    assert.equal(m.maxDurationSec, 22);
    assert.equal(m.defaultPromptInfluence, 0.3);
    assert.equal(m.audioPool, "alpha");
  });

  test("voice design in the beta pool, voice clone in host_3", () => {
    assert.equal(getModelOf(DEFAULT_VOICE_DESIGN_MODEL, "voice_design")?.audioPool, "beta");
    assert.equal(getModelOf(DEFAULT_VOICE_CLONE_MODEL, "voice_clone")?.audioPool, "host_3");
    assert.equal(getModelOf("beta-voice-clone", "voice_design"), undefined);
    assert.equal(getModelOf("beta-voice-design", "voice_clone"), undefined);
  });
});

describe("getModelOf", () => {
  test("is typed by the capability asked for and refuses another capability or an unknown id", () => {
    // The annotations are the check (tsc): each lookup gives its capability's record type.
    const video: VideoModel | undefined = getModelOf("vidD-3", "video");
    const speech: SpeechModel | undefined = getModelOf(DEFAULT_SPEECH_MODEL, "speech");
    const clone: VoiceCreationModel | undefined = getModelOf(DEFAULT_VOICE_CLONE_MODEL, "voice_clone");
    assert.equal(video?.capability, "video");
    assert.equal(speech?.maxInputChars !== undefined, true);
    assert.equal(clone?.capability, "voice_clone");
    assert.equal(getModelOf("vidD-3", "image"), undefined);
    assert.equal(getModelOf("nope", "video"), undefined);
  });
});

describe("transcription and audio understanding", () => {
  test("aliases resolve to the concrete models", () => {
    assert.equal(getModel("transcribe")?.id, "host1-transcribe-1");
    assert.equal(getModel("audio-understand")?.id, "host2-audio-understand-1");
    assert.equal(getModelOf(DEFAULT_TRANSCRIPTION_MODEL, "transcription")?.audioPool, "host_1");
    assert.equal(getModelOf(DEFAULT_AUDIO_UNDERSTANDING_MODEL, "audio_understanding")?.audioPool, "host_2");
    assert.equal(getModelOf("audio-understand", "transcription"), undefined);
    assert.equal(MODEL_ALIASES.get("transcribe"), "host1-transcribe-1");
    assert.equal(MODEL_ALIASES.get("audio-understand"), "host2-audio-understand-1");
  });
});

describe("video", () => {
  const perSecond = [
    "vidA-2.5-pro",
    "vidA-3-pro",
    "vidA-3-pro-audio",
    "vidB-2-pro",
    "vidB-2-fast",
    "vidD-3-fast",
    "vidD-3",
  ];
  for (const id of perSecond) {
    test(`${id}: 1-10 s, default 5, genmedia alias only for vidD`, () => {
      const m = getModelOf(id, "video");
      assert.ok(m);
      assert.deepEqual([m.minDurationSec, m.maxDurationSec, m.defaultDurationSec], [1, 10, 5]);
      assert.equal(m.allowedDurations, null);
      assert.equal(m.imageRequired, false);
      assert.equal(m.genmediaAlias, id.startsWith("vidD-"));
      assert.equal(m.promptMaxChars, 4000);
    });
  }
  for (const id of ["vidC-02-512p", "vidC-02-768p", "vidC-02-1080p"]) {
    test(`${id}: flat clip of 6 or 10 s, default 6`, () => {
      const m = getModelOf(id, "video");
      assert.ok(m);
      assert.deepEqual(m.allowedDurations, [6, 10]);
      assert.equal(m.defaultDurationSec, 6);
      assert.equal(m.imageRequired, id === "vidC-02-512p");
      assert.equal(m.genmediaAlias, false);
    });
  }
  test("non-video ids", () => {
    assert.equal(getModelOf("imgA-v4", "video"), undefined);
  });
});

describe("image", () => {
  test("flags of every image model", () => {
    const table: [
      id: string,
      flags: {
        singleImage: boolean;
        imageRequired: boolean;
        acceptsImageUrl: boolean;
        acceptsImageUrls: boolean;
        output: string;
        legacy: boolean;
      },
    ][] = [
      [
        "imgA-v4",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "png",
          legacy: false,
        },
      ],
      [
        "imgA-v4-pro",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "png",
          legacy: false,
        },
      ],
      [
        "imgA-v4-vector",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "svg",
          legacy: false,
        },
      ],
      [
        "imgA-v4-vector-pro",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "svg",
          legacy: false,
        },
      ],
      [
        "imgB-2-pro",
        {
          singleImage: true,
          imageRequired: false,
          acceptsImageUrl: true,
          acceptsImageUrls: true,
          output: "png",
          legacy: false,
        },
      ],
      [
        "imgB-edit-pro",
        {
          singleImage: false,
          imageRequired: true,
          acceptsImageUrl: true,
          acceptsImageUrls: false,
          output: "png",
          legacy: false,
        },
      ],
      [
        "imgC-v3",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "png",
          legacy: false,
        },
      ],
      [
        "imgB-1.1-ultra",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "png",
          legacy: true,
        },
      ],
      [
        "imgA-v3",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "png",
          legacy: true,
        },
      ],
      [
        "imgC-q1",
        {
          singleImage: false,
          imageRequired: false,
          acceptsImageUrl: false,
          acceptsImageUrls: false,
          output: "png",
          legacy: false,
        },
      ],
    ];
    for (const [id, flags] of table) {
      const m = getModelOf(id, "image");
      assert.ok(m, id);
      assert.deepEqual(
        {
          singleImage: m.singleImage,
          imageRequired: m.imageRequired,
          acceptsImageUrl: m.acceptsImageUrl,
          acceptsImageUrls: m.acceptsImageUrls,
          output: m.output,
          legacy: m.legacy,
        },
        flags,
        id,
      );
      assert.equal(m.promptMaxChars, 4000);
      assert.equal(m.maxN, 4);
      assert.equal(m.maxImageUrls, 10);
    }
  });

  test("imgC-q1 defaults to medium", () => {
    const m = getModelOf("imgC-q1", "image");
    assert.ok(m && m.pricing.mode === "per-quality");
    assert.equal(m.pricing.defaultQuality, "medium");
  });

  test("non-image ids", () => {
    assert.equal(getModelOf("vidD-3", "image"), undefined);
    assert.equal(getModel("unknown-model"), undefined);
  });
});
