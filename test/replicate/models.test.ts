/**
 * The Replicate dialect's model names (D47), without a server: every catalog image, video, speech, music and
 * sound-effect model is `gateway/<id>`; every provider name runs an enabled catalog model of its kind;
 * version ids are the documented SHA-256, unique and stable; refs resolve in their three forms; each input
 * schema is plain JSON Schema that Ajv compiles strictly, accepts a minimal input, and that input's native
 * body passes the native route's body schema; provider fields map as the table says; docs/dialects.md lists
 * exactly the table's names.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { Ajv, type Options } from "ajv";
import addFormats from "ajv-formats";
import { enabledModels, getModel } from "../../src/catalog/models.ts";
import { MUSIC_BODY, SFX_BODY, SPEECH_BODY } from "../../src/contracts/audio.ts";
import { IMAGE_BODY, VIDEO_MODELS, videoBody } from "../../src/contracts/jobs.ts";
import { SCHEMA_ERROR_KEYWORDS } from "../../src/http/error-handler.ts";
import {
  modelAnswer,
  modelNamed,
  modelOfRef,
  modelOfVersion,
  nativeBodyOf,
  PROVIDER_NAMES,
  type ReplicateKind,
  type ReplicateModel,
  ReplicateInputError,
  replicateModels,
  versionAnswer,
} from "../../src/http/dialects/replicate/models.ts";

const KINDS: readonly string[] = ["image", "video", "speech", "music", "sfx"];
const IMAGE = "https://example.com/frame.png";

/** Ajv as the gateway validates bodies (src/http/app.ts: no coercion, no defaults, nothing removed), strict, with formats. */
function ajvWith(keywords: readonly string[]): Ajv {
  const options: Options = { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: true, strict: true, keywords: [...keywords] };
  const ajv = new Ajv(options);
  addFormats.default(ajv);
  return ajv;
}
/** The input schemas compile with no keyword of the gateway's: an `x-*` keyword fails strict mode. */
const plainAjv = ajvWith([]);
/** The native contracts compile as the app compiles them, with the gateway's error keywords. */
const nativeAjv = ajvWith(SCHEMA_ERROR_KEYWORDS);
const NATIVE = {
  image: nativeAjv.compile(IMAGE_BODY),
  video: nativeAjv.compile(videoBody(VIDEO_MODELS, "'{value}' is not a supported video model.")),
  speech: nativeAjv.compile(SPEECH_BODY),
  music: nativeAjv.compile(MUSIC_BODY),
  sfx: nativeAjv.compile(SFX_BODY),
} satisfies Record<ReplicateKind, unknown>;

/** A minimal valid input of a name: what its kind needs, under the name's own field names. */
function minimalInput(m: ReplicateModel): Record<string, unknown> {
  const required = (m.inputSchema.required as string[] | undefined) ?? [];
  switch (m.kind) {
    case "image":
      return { prompt: "a red fox in the snow" };
    case "video":
      return { prompt: "waves at dusk", ...(required.includes("image_url") ? { image_url: IMAGE } : {}) };
    case "speech":
      return { [required.includes("text") ? "text" : "input"]: "Hello from the gateway.", voice_id: "voice-1" };
    case "music":
      return { prompt: "calm lo-fi piano" };
    case "sfx":
      return { prompt: "a door creaking open" };
  }
}

/** Every key of a JSON value, at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value !== null && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)]);
  return [];
}

/** The documented version formula, written independently: SHA-256 of the ref, a newline and the canonical JSON. */
function expectedVersion(ref: string, schema: unknown): string {
  const canonical = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(canonical).join(",")}]`
      : v !== null && typeof v === "object"
        ? `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
            .join(",")}}`
        : JSON.stringify(v);
  return createHash("sha256").update(`${ref}\n${canonical(schema)}`).digest("hex");
}

/** The name, which must exist. */
function named(ref: string): ReplicateModel {
  const [owner, name] = ref.split("/");
  const m = modelNamed(owner, name);
  assert.ok(m, `${ref} is a name`);
  return m;
}

/** The fields `nativeBodyOf` refuses `input` with. */
function refused(m: ReplicateModel, input: unknown): { field: string; message: string }[] {
  try {
    nativeBodyOf(m, input);
  } catch (err) {
    assert.ok(err instanceof ReplicateInputError, String(err));
    return err.fields;
  }
  assert.fail(`${m.ref} accepted ${JSON.stringify(input)}`);
}

describe("Replicate model names (D47)", () => {
  const models = replicateModels();

  test("every enabled catalog model of the five kinds is gateway/<id>, in catalog order, first", () => {
    const expected = enabledModels().filter((m) => KINDS.includes(m.capability));
    const gateway = models.filter((m) => m.owner === "gateway");
    assert.deepEqual(
      gateway.map((m) => [m.ref, m.catalogId, m.kind, m.source]),
      expected.map((m) => [`gateway/${m.id}`, m.id, m.capability, null]),
    );
    assert.deepEqual(models.slice(0, gateway.length), gateway);
    assert.ok(expected.some((m) => m.capability === "sfx") && expected.some((m) => m.capability === "music"));
  });

  test("every provider name runs an existing, enabled catalog model of its kind, and is listed with its source", () => {
    const refs = PROVIDER_NAMES.map((row) => row.ref);
    assert.equal(new Set(refs).size, refs.length, "no name twice");
    for (const row of PROVIDER_NAMES) {
      const record = getModel(row.catalogId);
      assert.ok(record && record.id === row.catalogId, `${row.ref}: ${row.catalogId} is a catalog id`);
      assert.ok(record.enabled, `${row.catalogId} is enabled`);
      const m = named(row.ref);
      assert.equal(m.catalogId, row.catalogId);
      assert.equal(m.kind, record.capability);
      assert.equal(m.source, `https://replicate.com/${row.ref}`);
      assert.notEqual(m.owner, "gateway");
    }
    assert.deepEqual(models.filter((m) => m.owner !== "gateway").map((m) => m.ref), refs);
  });

  test("version ids: 64 lowercase hex, the documented SHA-256, unique, and the same when computed again", async () => {
    for (const m of models) {
      assert.match(m.versionId, /^[0-9a-f]{64}$/);
      assert.equal(m.versionId, expectedVersion(m.ref, m.inputSchema), m.ref);
    }
    assert.equal(new Set(models.map((m) => m.versionId)).size, models.length);
    // A second instance of the module builds every name again (a fresh module for another specifier).
    const again = (await import(`../../src/http/dialects/replicate/models.ts?again=${Date.now()}`)) as { replicateModels: typeof replicateModels };
    assert.notEqual(again.replicateModels, replicateModels, "another instance");
    assert.deepEqual(again.replicateModels().map((m) => [m.ref, m.versionId]), models.map((m) => [m.ref, m.versionId]));
  });

  test("modelOfRef resolves owner/name, owner/name:<version> and a bare version, and refuses a wrong version", () => {
    for (const m of models) {
      assert.deepEqual(modelOfRef(m.ref), { model: m, version: null });
      assert.deepEqual(modelOfRef(`${m.ref}:${m.versionId}`), { model: m, version: m.versionId });
      assert.deepEqual(modelOfRef(m.versionId), { model: m, version: m.versionId });
      assert.equal(modelOfVersion(m.versionId), m);
    }
    const [a, b] = [named("gateway/imgA-v4"), named("google/veo-3.1-fast")];
    assert.equal(modelOfRef(`${a.ref}:${b.versionId}`), undefined, "another name's version");
    assert.equal(modelOfRef(`${a.ref}:${"0".repeat(64)}`), undefined);
    assert.equal(modelOfRef(`${a.ref}:`), undefined);
    assert.equal(modelOfRef("0".repeat(64)), undefined);
    assert.equal(modelOfRef(a.versionId.toUpperCase()), undefined);
    assert.equal(modelOfRef("gateway/no-such-model"), undefined);
    assert.equal(modelOfRef("Google/veo-3.1-fast"), undefined, "names are case-sensitive");
    assert.equal(modelNamed("gateway", "imga-v4"), undefined);
  });

  for (const m of models) {
    test(`${m.ref}: its input schema is plain JSON Schema, accepts a minimal input, whose native body passes the native schema`, () => {
      assert.equal(m.inputSchema.type, "object");
      assert.deepEqual(keysOf(m.inputSchema).filter((k) => k.startsWith("x-")), []);
      assert.ok(!Object.hasOwn(m.inputSchema.properties as object, "model"), "no model field");
      const validate = plainAjv.compile(m.inputSchema);
      const input = minimalInput(m);
      assert.ok(validate(input), JSON.stringify(validate.errors));
      const body = nativeBodyOf(m, input);
      assert.equal(body.model, m.catalogId);
      const native = NATIVE[m.kind];
      assert.ok(native(body), JSON.stringify(native.errors));
      // The published document's Input compiles too, and the Output is a file URL (a list for gateway/ images and the provider names whose Replicate model answers one).
      const schemas = (versionAnswer(m).openapi_schema as { components: { schemas: Record<string, Record<string, unknown>> } }).components.schemas;
      assert.ok(plainAjv.compile(schemas.Input)(input));
      assert.equal(m.output, m.kind === "image" && (m.owner === "gateway" || m.ref === "openai/gpt-image-2") ? "uris" : "uri");
      assert.deepEqual(schemas.Output, m.output === "uris" ? { title: "Output", type: "array", items: { type: "string", format: "uri" } } : { title: "Output", type: "string", format: "uri" });
    });
  }

  test("the Model and Version objects: Replicate's fields, the gateway URL, a fixed creation time", () => {
    const m = named("google/veo-3.1-fast");
    const answer = modelAnswer(m, "https://gw.example.com/");
    assert.equal(answer.url, "https://gw.example.com/replicate/v1/models/google/veo-3.1-fast");
    assert.equal(answer.owner, "google");
    assert.equal(answer.name, "veo-3.1-fast");
    assert.equal(answer.visibility, "public");
    assert.match(String(answer.description), /vidD-3-fast/);
    for (const k of ["github_url", "paper_url", "license_url", "cover_image_url", "default_example"]) assert.equal(answer[k], null, k);
    const version = answer.latest_version as Record<string, unknown>;
    assert.deepEqual(version, versionAnswer(m));
    assert.equal(version.id, m.versionId);
    assert.equal(version.cog_version, null);
    assert.match(String(version.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const doc = version.openapi_schema as { openapi: string; info: unknown; paths: unknown; components: { schemas: { Input: Record<string, unknown> } } };
    const input = doc.components.schemas.Input;
    assert.equal(doc.openapi, "3.0.2");
    assert.deepEqual(doc.info, { title: "Cog", version: "0.1.0" });
    assert.deepEqual(doc.paths, {});
    assert.deepEqual(input, { title: "Input", ...m.inputSchema });
    // A fresh object each time: changing an answer changes nothing of the name.
    Object.assign(input, { properties: {} });
    assert.notDeepEqual(versionAnswer(m), version);
  });

  test("narrowed by the catalog: vidC durations, the 512p model's required image, image inputs only where used, MP3 for stored audio", () => {
    const clip = named("gateway/vidC-02-768p").inputSchema.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(clip.duration.enum, [6, 10]);
    assert.deepEqual(named("gateway/vidC-02-512p").inputSchema.required, ["prompt", "image_url"]);
    assert.equal((named("gateway/vidD-3").inputSchema.properties as Record<string, Record<string, unknown>>).duration.default, 5);
    assert.ok(!Object.hasOwn(named("gateway/imgA-v4").inputSchema.properties as object, "image_url"));
    assert.ok(Object.hasOwn(named("gateway/imgB-2-pro").inputSchema.properties as object, "image_urls"));
    assert.ok(Object.hasOwn(named("gateway/imgC-q1").inputSchema.properties as object, "quality"));
    const speech = named("gateway/alpha-v3").inputSchema.properties as Record<string, Record<string, unknown>>;
    assert.ok(!Object.hasOwn(speech, "stream"));
    assert.ok((speech.response_format.enum as string[]).every((f) => f.startsWith("mp3_")));
  });
});

describe("prediction input -> native body (D47)", () => {
  test("gateway/<id>: the native fields as they are, without the prediction's own fields and nulls", () => {
    const m = named("gateway/imgA-v4");
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", n: 2, size: "16:9", model: "imgC-q1", webhook_url: "https://h.example.com", idempotency_key: "k", save_to_blob: "1", quality: null, seed: 4 }), {
      prompt: "p",
      n: 2,
      size: "16:9",
      seed: 4,
      model: "imgA-v4",
    });
    assert.deepEqual(nativeBodyOf(named("gateway/beta-speech-hd"), { text: "Hi", voice: "v", stream: true }), { text: "Hi", voice: "v", model: "beta-speech-hd" });
  });

  test("input that is not an object is refused", () => {
    for (const m of [named("gateway/imgA-v4"), named("minimax/speech-2.8-turbo")]) {
      for (const input of [null, undefined, [], "prompt", 3, true]) {
        assert.deepEqual(refused(m, input), [{ field: "input", message: "input must be an object." }], JSON.stringify(input));
      }
    }
  });

  test("Veo 3.1 Fast: image -> image_url, the rest as parameters, its fixed resolution and silence", () => {
    const m = named("google/veo-3.1-fast");
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", image: IMAGE, duration: 8, seed: 3, aspect_ratio: "9:16", negative_prompt: "blur", resolution: "720p", generate_audio: false, last_frame: null }), {
      prompt: "p",
      image_url: IMAGE,
      duration: 8,
      parameters: { seed: 3, aspect_ratio: "9:16", negative_prompt: "blur" },
      model: "vidD-3-fast",
    });
    const fields = refused(m, { prompt: "p", resolution: "1080p", generate_audio: true, image: 5 });
    assert.deepEqual(fields.map((f) => f.field).sort(), ["input.generate_audio", "input.image", "input.resolution"]);
    assert.match(fields.find((f) => f.field === "input.generate_audio")?.message ?? "", /gateway\/vidD-3/);
    // The native name is accepted too; Replicate's wins when both are given.
    assert.equal(nativeBodyOf(m, { prompt: "p", image_url: IMAGE }).image_url, IMAGE);
    assert.equal(nativeBodyOf(m, { prompt: "p", image_url: "https://example.com/other.png", image: IMAGE }).image_url, IMAGE);
    // An own `parameters` object is kept, the unknown fields merged under it.
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", seed: 1, parameters: { seed: 2, cfg: 1 } }).parameters, { seed: 2, cfg: 1 });
  });

  test("Veo 3.1, Kling, Seedance and Hailuo-02: their image fields and fixed fields", () => {
    assert.deepEqual(nativeBodyOf(named("google/veo-3.1"), { prompt: "p", resolution: "1080p", generate_audio: true }), { prompt: "p", model: "vidD-3" });
    assert.equal(refused(named("google/veo-3.1"), { prompt: "p", generate_audio: false })[0].field, "input.generate_audio");
    assert.equal(nativeBodyOf(named("kwaivgi/kling-v2.5-turbo-pro"), { prompt: "p", start_image: IMAGE }).image_url, IMAGE);
    assert.equal(nativeBodyOf(named("kwaivgi/kling-v2.5-turbo-pro"), { prompt: "p", image: IMAGE }).image_url, IMAGE);
    const kling3 = named("kwaivgi/kling-v3-video");
    assert.deepEqual(nativeBodyOf(kling3, { prompt: "p", start_image: IMAGE, mode: "pro", generate_audio: false, end_image: IMAGE }), {
      prompt: "p",
      image_url: IMAGE,
      parameters: { end_image: IMAGE },
      model: "vidA-3-pro",
    });
    assert.match(refused(kling3, { prompt: "p", generate_audio: true })[0].message, /gateway\/vidA-3-pro-audio/);
    assert.equal(refused(kling3, { prompt: "p", mode: "standard" })[0].field, "input.mode");
    assert.equal(nativeBodyOf(named("bytedance/seedance-2.0-fast"), { prompt: "p", image: IMAGE }).image_url, IMAGE);
    assert.equal(refused(named("bytedance/seedance-2.0"), { prompt: "p", resolution: "1080p" })[0].field, "input.resolution");
    const hailuo = named("minimax/hailuo-02");
    assert.deepEqual(nativeBodyOf(hailuo, { prompt: "p", first_frame_image: IMAGE, duration: 10, prompt_optimizer: false }), {
      prompt: "p",
      image_url: IMAGE,
      duration: 10,
      parameters: { prompt_optimizer: false },
      model: "vidC-02-768p",
    });
    assert.match(refused(hailuo, { prompt: "p", resolution: "1080p" })[0].message, /gateway\/vidC-02-1080p/);
  });

  test("FLUX.2 pro: input_images -> image_urls, aspect_ratio -> size (a native ratio, another ratio at about 1 MP, custom, or the default)", () => {
    const m = named("black-forest-labs/flux-2-pro");
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", input_images: [IMAGE], aspect_ratio: "16:9", output_format: "jpg" }), {
      prompt: "p",
      image_urls: [IMAGE],
      size: "16:9",
      parameters: { output_format: "jpg" },
      model: "imgB-2-pro",
    });
    assert.equal(nativeBodyOf(m, { prompt: "p", aspect_ratio: "3:2" }).size, "1280x832");
    assert.equal(nativeBodyOf(m, { prompt: "p", aspect_ratio: "9:21" }).size, "640x1536");
    assert.equal(nativeBodyOf(m, { prompt: "p", aspect_ratio: "match_input_image" }).size, undefined);
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", aspect_ratio: "custom", width: 1024, height: 768 }), { prompt: "p", size: "1024x768", model: "imgB-2-pro" });
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", aspect_ratio: "custom", width: "wide" }).parameters, { width: "wide" });
    assert.deepEqual(refused(m, { prompt: "p", input_images: IMAGE, aspect_ratio: 1.5 }).map((f) => f.field), ["input.input_images", "input.aspect_ratio"]);
    assert.equal(nativeBodyOf(named("black-forest-labs/flux-kontext-pro"), { prompt: "p", input_image: IMAGE }).image_url, IMAGE);
    assert.deepEqual(nativeBodyOf(named("black-forest-labs/flux-1.1-pro-ultra"), { prompt: "p", aspect_ratio: "21:9", raw: true }), { prompt: "p", size: "21:9", parameters: { raw: true }, model: "imgB-1.1-ultra" });
  });

  test("Recraft: size as it is, aspect_ratio winning when it names a ratio", () => {
    const m = named("recraft-ai/recraft-v4-pro");
    assert.equal(nativeBodyOf(m, { prompt: "p", size: "1365x1024", aspect_ratio: "Not set" }).size, "1365x1024");
    assert.equal(nativeBodyOf(m, { prompt: "p", size: "1365x1024", aspect_ratio: "9:16" }).size, "9:16");
    assert.deepEqual(nativeBodyOf(named("recraft-ai/recraft-v3"), { prompt: "p", style: "any" }), { prompt: "p", parameters: { style: "any" }, model: "imgA-v3" });
    assert.equal(refused(m, { prompt: "p", size: 1024 })[0].field, "input.size");
  });

  test("GPT Image 2: number_of_images -> n, quality (auto = the default tier), aspect_ratio -> size", () => {
    const m = named("openai/gpt-image-2");
    assert.deepEqual(nativeBodyOf(m, { prompt: "p", number_of_images: 2, quality: "high", aspect_ratio: "1:1", background: "opaque" }), {
      prompt: "p",
      n: 2,
      quality: "high",
      size: "1:1",
      parameters: { background: "opaque" },
      model: "imgC-q1",
    });
    assert.equal(nativeBodyOf(m, { prompt: "p", quality: "auto" }).quality, undefined);
    assert.deepEqual(refused(m, { prompt: "p", number_of_images: "2", quality: 3 }).map((f) => f.field), ["input.number_of_images", "input.quality"]);
  });

  test("MiniMax speech and music: text -> input, Replicate's audio settings dropped (no pass-through)", () => {
    const speech = named("minimax/speech-2.8-turbo");
    assert.deepEqual(nativeBodyOf(speech, { text: "Hello", voice_id: "v", speed: 1.2, emotion: "happy", audio_format: "wav", input: "other" }), { input: "Hello", voice_id: "v", model: "beta-speech-turbo" });
    assert.equal(refused(speech, { text: ["Hello"] })[0].field, "input.text");
    assert.deepEqual(named("minimax/speech-2.8-hd").inputSchema.required, ["text"]);
    assert.deepEqual(nativeBodyOf(named("minimax/music-2.5"), { prompt: "p", lyrics: "[verse] la", sample_rate: 44100, bitrate: 256000 }), { prompt: "p", lyrics: "[verse] la", model: "beta-music" });
  });
});

describe("docs/dialects.md (D47)", () => {
  test("the Replicate section's table lists exactly the code's provider names", () => {
    const doc = readFileSync(new URL("../../docs/dialects.md", import.meta.url), "utf8");
    const start = doc.indexOf("## Replicate (`/replicate/v1`)");
    assert.ok(start >= 0, "the section exists");
    const next = doc.indexOf("\n## ", start + 1);
    const section = doc.slice(start, next < 0 ? undefined : next);
    assert.match(section, /### Model names/);
    assert.match(section, /`gateway\/<catalog id>`/);
    const rows = section
      .split("\n")
      .filter((line) => line.startsWith("| `"))
      .map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim().replaceAll("`", "")));
    assert.deepEqual(rows, PROVIDER_NAMES.map((row) => [row.ref, row.catalogId, `https://replicate.com/${row.ref}`]));
  });
});
