/**
 * Model names of the Replicate dialect (D47): which catalog model a Replicate `owner/name` (or version id)
 * runs, the input schema each name publishes (`latest_version.openapi_schema`, Cog's document), the Model
 * and Version objects of `GET /replicate/v1/models/...`, and how a prediction's `input` becomes the native
 * request body. Routes, predictions and jobs are not here: this module only names and translates.
 *
 * ## Names
 * - `gateway/<catalog id>` for every enabled catalog model of kind image, video, speech, music and sfx
 *   (sound effects). Its input fields ARE the native body's fields (`POST /v1/images/generations`,
 *   `/v1/videos/generations`, `/v1/audio/speech`, `/v1/audio/music`, `/v1/audio/sfx`), without the fields a
 *   prediction carries elsewhere ({@link REMOVED_FIELDS}).
 * - The Replicate names of the providers' models the catalog serves ({@link PROVIDER_NAMES}, the one table;
 *   docs/dialects.md lists it, a test keeps the two equal). Their input uses Replicate's field names of that
 *   model, mapped onto the native fields where they differ (the table's `fields`); the native field names are
 *   accepted too, the Replicate name winning when both are given.
 * Names are case-sensitive, as on Replicate.
 *
 * ## Versions
 * A name has one version: the SHA-256 (64 lowercase hex) of its ref and the canonical JSON of its input
 * schema. It is stable across restarts and processes, unique per ref, and changes exactly when the schema
 * does. A version id that is not a name's current one names nothing.
 *
 * ## Inputs of a provider name
 * - A field the table maps is type-checked here ({@link ReplicateInputError}: the routes answer 422 with
 *   `invalid_fields`); everything else (prompt length, durations, URL rules, balance) is the native route's.
 * - A field that decides the model and its price (`resolution`, `generate_audio`, Kling's `mode`) is fixed
 *   to the catalog model's value: another value is refused, naming where it is served, so that a caller
 *   never gets (or pays for) another model than the one asked for without being told. Absent, the catalog
 *   model's value applies even where Replicate's default differs (Veo 3.1 Fast is silent here, Hailuo-02
 *   768p): the published schema shows it as the default.
 * - Other fields go into the native `parameters` (image and video, forwarded to the upstream unchanged,
 *   the gateway's own fields winning: src/upstreams/fal/models.ts) or are dropped (speech, music, sound
 *   effects, which have no pass-through).
 * - `null` is an absent field, as Cog treats an optional input set to None.
 */
import { createHash } from "node:crypto";
import { deepFreeze } from "../../../catalog/freeze.ts";
import { enabledModels, getModel } from "../../../catalog/models.ts";
import type { ModelRecord } from "../../../catalog/types.ts";
import { MUSIC_BODY, SFX_BODY, SPEECH_BODY } from "../../../contracts/audio.ts";
import { IMAGE_BODY, VIDEO_MODELS, videoBody } from "../../../contracts/jobs.ts";
import { AUDIO_FORMATS } from "../../../upstreams/types.ts";
import { isRecord } from "../../../upstreams/util.ts";

/** What a Replicate name makes: image and video run as jobs, speech, music and sound effects (`sfx`) as stored files. */
export type ReplicateKind = "image" | "video" | "speech" | "music" | "sfx";

/** The kinds, as catalog capabilities of the same names. */
const KINDS: readonly ReplicateKind[] = ["image", "video", "speech", "music", "sfx"];

/** One model name of the dialect (D47). Frozen. */
export interface ReplicateModel {
  /** `gateway`, or the provider's Replicate owner (`google`, `black-forest-labs`, ...). */
  owner: string;
  /** The catalog id (`imgB-2-pro`) under `gateway`, else the provider's Replicate name (`veo-3.1-fast`). */
  name: string;
  /** `owner/name`. */
  ref: string;
  /** The enabled catalog model it runs. */
  catalogId: string;
  kind: ReplicateKind;
  /** Its one version: 64 lowercase hex, the SHA-256 of `ref` and the canonical JSON of {@link inputSchema}. */
  versionId: string;
  /** Provider names only: the page the name comes from (`https://replicate.com/google/veo-3.1`); null for `gateway/<id>`. */
  source: string | null;
  /** The JSON Schema (an object schema, no private keywords) of a prediction's `input`. */
  inputSchema: Record<string, unknown>;
  /**
   * The shape of a succeeded prediction's `output`: `uri` one file URL, `uris` a list (an image model
   * under `gateway/`, which may make several; a provider's name answers as Replicate's model does).
   */
  output: "uri" | "uris";
}

/** How one Replicate input field of a provider name reaches the native body. */
export type FieldRule =
  /** -> `image_url` (a string: an image URL). */
  | "image_url"
  /** -> `image_urls` (an array of image URL strings). */
  | "image_urls"
  /** `WIDTHxHEIGHT` -> `size`. */
  | "size"
  /** -> `size` (see {@link sizeOfAspect}); applied after `size`, which it overrides when it names a ratio. */
  | "aspect_ratio"
  /** -> `n` (an integer). */
  | "n"
  /** -> the speech text `input` (a string). */
  | "speech_text"
  /** -> `quality`; `auto` is the model's default tier. */
  | "quality"
  /** Decides the model and its price: only `value` is served under this name; `elsewhere` says where the others are. */
  | { fixed: string | boolean; elsewhere: string };

/** A provider's Replicate name for a catalog model, and how its input fields map. */
export interface ProviderName {
  ref: string;
  catalogId: string;
  /** Replicate's input fields of that model that differ from the native ones, in the order they are applied. */
  fields: Readonly<Record<string, FieldRule>>;
  /** An image model whose Replicate output is a list of URLs (the others answer one URL, as on Replicate). */
  outputList?: true;
}

/** Recraft on Replicate: `size` (`WxH`) and `aspect_ratio` (`Not set` by default), which wins when set. */
const RECRAFT_FIELDS = { size: "size", aspect_ratio: "aspect_ratio" } as const;
/** Seedance 2.0 on Replicate: the gateway serves it at 720p with its bundled audio (the catalog's price). */
const SEEDANCE_FIELDS = {
  image: "image_url",
  resolution: { fixed: "720p", elsewhere: "the gateway serves Seedance 2.0 at 720p only" },
  generate_audio: { fixed: true, elsewhere: "the gateway serves Seedance 2.0 with its audio only" },
} as const;

/**
 * The Replicate names of the providers' models the catalog serves (upstreams.md's default ids), with the
 * page each comes from. Field names were read on the pages named in the comments: "seen" means on
 * replicate.com itself (a version's API page); "unverified" means the name and fields come from
 * third-party listings of Replicate models (api.core.today, lumenfall.ai, cloudflare's proxied models),
 * not from a replicate.com page. The one table: docs/dialects.md shows it, a test keeps them equal.
 */
export const PROVIDER_NAMES: readonly ProviderName[] = deepFreeze<ProviderName[]>([
  // Seen: replicate.com/black-forest-labs/flux-2-pro/versions/.../api (`input_images`, `aspect_ratio`, `custom` width/height).
  { ref: "black-forest-labs/flux-2-pro", catalogId: "imgB-2-pro", fields: { input_images: "image_urls", aspect_ratio: "aspect_ratio" } },
  // Unverified: third-party listings (`input_image`, `aspect_ratio` with `match_input_image`).
  { ref: "black-forest-labs/flux-kontext-pro", catalogId: "imgB-edit-pro", fields: { input_image: "image_url", aspect_ratio: "aspect_ratio" } },
  // Unverified: third-party listings (`aspect_ratio`, `raw`, `image_prompt`: the catalog model takes no image, so it is a parameter).
  { ref: "black-forest-labs/flux-1.1-pro-ultra", catalogId: "imgB-1.1-ultra", fields: { aspect_ratio: "aspect_ratio" } },
  // Unverified: third-party listings (`size`, `aspect_ratio` "Not set", `style`).
  { ref: "recraft-ai/recraft-v3", catalogId: "imgA-v3", fields: RECRAFT_FIELDS },
  // Unverified: lumenfall.ai's listing of Replicate's recraft-ai/recraft-v4 (fields as v4-pro).
  { ref: "recraft-ai/recraft-v4", catalogId: "imgA-v4", fields: RECRAFT_FIELDS },
  // Seen: replicate.com/recraft-ai/recraft-v4-pro/versions/.../api (`aspect_ratio`, `size`).
  { ref: "recraft-ai/recraft-v4-pro", catalogId: "imgA-v4-pro", fields: RECRAFT_FIELDS },
  // Unverified: lumenfall.ai's listing of Replicate's recraft-ai/recraft-v4-svg.
  { ref: "recraft-ai/recraft-v4-svg", catalogId: "imgA-v4-vector", fields: RECRAFT_FIELDS },
  // Unverified: third-party listings (`quality` low|medium|high|auto, `aspect_ratio`, `input_images`, `number_of_images`).
  { ref: "openai/gpt-image-2", catalogId: "imgC-q1", fields: { input_images: "image_urls", aspect_ratio: "aspect_ratio", number_of_images: "n", quality: "quality" }, outputList: true },
  // Unverified: third-party listings (`image`, `resolution` 720p default, `generate_audio` default true).
  {
    ref: "google/veo-3.1-fast",
    catalogId: "vidD-3-fast",
    fields: {
      image: "image_url",
      resolution: { fixed: "720p", elsewhere: "google/veo-3.1 (gateway/vidD-3) makes 1080p" },
      generate_audio: { fixed: false, elsewhere: "google/veo-3.1 (gateway/vidD-3) makes video with audio" },
    },
  },
  // Seen: replicate.com/google/veo-3.1/versions/.../api (`image`, `resolution` 1080p, `generate_audio` true).
  {
    ref: "google/veo-3.1",
    catalogId: "vidD-3",
    fields: {
      image: "image_url",
      resolution: { fixed: "1080p", elsewhere: "google/veo-3.1-fast (gateway/vidD-3-fast) makes 720p" },
      generate_audio: { fixed: true, elsewhere: "google/veo-3.1-fast (gateway/vidD-3-fast) makes silent video" },
    },
  },
  // Unverified: third-party listings (`start_image`, the deprecated `image`, `duration` 5|10).
  { ref: "kwaivgi/kling-v2.5-turbo-pro", catalogId: "vidA-2.5-pro", fields: { image: "image_url", start_image: "image_url" } },
  // Seen: replicate.com/kwaivgi/kling-v3-video/versions/.../api (`start_image`, `generate_audio` false, `mode` pro).
  {
    ref: "kwaivgi/kling-v3-video",
    catalogId: "vidA-3-pro",
    fields: {
      start_image: "image_url",
      generate_audio: { fixed: false, elsewhere: "gateway/vidA-3-pro-audio makes Kling v3 pro with audio" },
      mode: { fixed: "pro", elsewhere: "the gateway serves Kling v3 pro (1080p) only" },
    },
  },
  // Seen: replicate.com/bytedance/seedance-2.0/versions/.../api and .../seedance-2.0-fast/... (`image`, `resolution`, `generate_audio`).
  { ref: "bytedance/seedance-2.0", catalogId: "vidB-2-pro", fields: SEEDANCE_FIELDS },
  { ref: "bytedance/seedance-2.0-fast", catalogId: "vidB-2-fast", fields: SEEDANCE_FIELDS },
  // Seen: replicate.com/minimax/hailuo-02/versions/.../api (`first_frame_image`, `resolution` 512p|768p|1080p, default 1080p).
  {
    ref: "minimax/hailuo-02",
    catalogId: "vidC-02-768p",
    fields: {
      first_frame_image: "image_url",
      resolution: { fixed: "768p", elsewhere: "gateway/vidC-02-1080p makes 1080p, gateway/vidC-02-512p 512p (image-to-video)" },
    },
  },
  // Seen: replicate.com/minimax/speech-2.8-turbo/versions/.../api (`text`, `voice_id`).
  { ref: "minimax/speech-2.8-turbo", catalogId: "beta-speech-turbo", fields: { text: "speech_text" } },
  // Unverified: the HD twin of speech-2.8-turbo, named by cloudflare's proxied models, not seen on replicate.com.
  { ref: "minimax/speech-2.8-hd", catalogId: "beta-speech-hd", fields: { text: "speech_text" } },
  // Seen: replicate.com/minimax/music-2.5/versions/.../api (`prompt`, `lyrics`: the native names).
  { ref: "minimax/music-2.5", catalogId: "beta-music", fields: {} },
]);

/** Native body fields a prediction's input never carries: the model is the name, the rest are the prediction's own (headers, `webhook`). */
export const REMOVED_FIELDS: Readonly<Record<ReplicateKind, readonly string[]>> = deepFreeze({
  image: ["model", "webhook_url", "idempotency_key", "save_to_blob"],
  video: ["model", "webhook_url", "idempotency_key", "save_to_blob"],
  // A speech prediction's output is a stored file: nothing is streamed.
  speech: ["model", "webhook_url", "idempotency_key", "save_to_blob", "stream"],
  music: ["model", "webhook_url", "idempotency_key", "save_to_blob"],
  sfx: ["model", "webhook_url", "idempotency_key", "save_to_blob"],
});

/** The fixed creation time of every name and version: the one `GET /v1/models` shows (the catalog has no per-model dates). */
const CREATED_AT = "2026-01-01T00:00:00.000Z";

/** The native aspect ratios, taken as they are (src/jobs/validate.ts `ASPECT_SIZES`). */
const NATIVE_ASPECTS: ReadonlySet<string> = new Set(["1:1", "16:9", "9:16", "4:3", "3:4", "21:9"]);
/** The MP3 formats: a stored audio output is MP3 (src/audio/music.ts `parseAudioFormat`, speech's `saveToBlob`). */
const MP3_FORMATS = AUDIO_FORMATS.filter((f) => f.startsWith("mp3_"));

type Json = Record<string, unknown>;

/** `schema` as plain JSON: TypeBox's symbols and the gateway's `x-*` keywords (`coded()`'s error codes and messages) dropped. */
function plain(schema: unknown): Json {
  return JSON.parse(JSON.stringify(schema, (key: string, value: unknown) => (key.startsWith("x-") ? undefined : value))) as Json;
}

/** The native body schema of each kind, as plain JSON. */
const NATIVE: Readonly<Record<ReplicateKind, Json>> = deepFreeze({
  image: plain(IMAGE_BODY),
  video: plain(videoBody(VIDEO_MODELS, "")),
  speech: plain(SPEECH_BODY),
  music: plain(MUSIC_BODY),
  sfx: plain(SFX_BODY),
});

/** A native property schema of `kind` (a fresh copy). */
function nativeProperty(kind: ReplicateKind, name: string): Json {
  const props = NATIVE[kind].properties as Record<string, Json>;
  const p = props[name];
  if (p === undefined) throw new Error(`replicate models: no native property ${name} for ${kind}`);
  return structuredClone(p);
}

/** The native fields of `kind` an input may name: the native body's properties without {@link REMOVED_FIELDS}. */
function nativeFieldsOf(kind: ReplicateKind): Set<string> {
  return new Set(Object.keys(NATIVE[kind].properties as Json).filter((k) => !REMOVED_FIELDS[kind].includes(k)));
}

/**
 * The input schema of `gateway/<id>`: the native body schema of its kind without {@link REMOVED_FIELDS},
 * narrowed by what the catalog knows of the model (a video's durations, the image inputs and quality tiers
 * an image model uses, the MP3 formats of a stored audio output, music's required prompt).
 */
function gatewaySchema(m: ModelRecord, kind: ReplicateKind): Json {
  const base = NATIVE[kind];
  const removed = REMOVED_FIELDS[kind];
  const props = Object.fromEntries(
    Object.entries(structuredClone(base.properties) as Record<string, Json>).filter(([k]) => !removed.includes(k)),
  );
  const required = ((base.required as string[] | undefined) ?? []).filter((k) => !removed.includes(k));
  if (m.capability === "image") {
    if (!m.acceptsImageUrl && !m.acceptsImageUrls) delete props.image_url;
    if (!m.acceptsImageUrls) delete props.image_urls;
    if (m.pricing.mode !== "per-quality") delete props.quality;
    props.n = { ...props.n, maximum: m.maxN };
  } else if (m.capability === "video") {
    const d = props.duration;
    props.duration =
      m.allowedDurations !== null
        ? { type: d.type, description: d.description, enum: [...m.allowedDurations], default: m.defaultDurationSec }
        : { ...d, minimum: m.minDurationSec, maximum: m.maxDurationSec, default: m.defaultDurationSec };
    if (m.imageRequired) required.push("image_url");
  } else if (m.capability === "speech" || m.capability === "music" || m.capability === "sfx") {
    props.response_format = { ...props.response_format, enum: [...MP3_FORMATS], description: "MP3 format of the stored file." };
    if (m.capability === "music" && m.promptRequired) required.push("prompt");
  }
  return { type: "object", ...(typeof base.description === "string" ? { description: base.description } : {}), properties: props, ...(required.length > 0 ? { required } : {}) };
}

/** The schema of a provider name's field under `rule`, from the gateway schema's `props` of its model (else the native body's). */
function ruleSchema(kind: ReplicateKind, props: Record<string, Json>, rule: FieldRule): Json {
  const from = (name: string): Json => structuredClone(props[name] ?? nativeProperty(kind, name));
  if (typeof rule === "object") {
    return { type: typeof rule.fixed === "boolean" ? "boolean" : "string", enum: [rule.fixed], default: rule.fixed, description: `Served as ${JSON.stringify(rule.fixed)} only under this name: ${rule.elsewhere}.` };
  }
  switch (rule) {
    case "image_url":
      return { ...from("image_url"), description: `Image URL, the native \`image_url\`. ${String(from("image_url").description)}` };
    case "image_urls":
      return { ...from("image_urls"), description: `Image URLs, the native \`image_urls\`. ${String(from("image_urls").description)}` };
    case "size":
      return { ...from("size"), description: "`WIDTHxHEIGHT` (the native `size`); `aspect_ratio`, when it names a ratio, wins." };
    case "aspect_ratio":
      return {
        type: "string",
        description:
          "Aspect ratio `W:H` (the native `size`): 1:1, 16:9, 9:16, 4:3, 3:4 and 21:9 as they are, another ratio as a size of about one megapixel; `custom` uses `width` and `height`; a word such as `match_input_image` or `Not set` keeps the model's default size.",
      };
    case "n":
      return { ...from("n"), description: `The native \`n\`. ${String(from("n").description)}` };
    case "speech_text":
      return { ...from("input"), description: "Text to speak (the native `input`). At most the model's limit (Unicode code points after NFC)." };
    case "quality": {
      const q = from("quality");
      return { ...q, enum: ["auto", ...(q.enum as string[])], default: "auto", description: `${String(q.description)} \`auto\`: the model's default tier.` };
    }
    default: {
      const never: never = rule;
      return never;
    }
  }
}

/** The native field a rule writes, or null for a fixed field. */
function targetOf(rule: FieldRule): string | null {
  if (typeof rule === "object") return null;
  return rule === "speech_text" ? "input" : rule === "aspect_ratio" ? "size" : rule;
}

/**
 * The input schema of a provider name: the gateway schema of its model with each native field a rule writes
 * replaced, in place, by Replicate's field(s) for it; fixed fields and unplaced rules at the end. Native
 * required fields keep their place under their Replicate name (speech: `text`).
 */
function providerSchema(row: ProviderName, gateway: Json, kind: ReplicateKind): Json {
  const props = gateway.properties as Record<string, Json>;
  const rules = Object.entries(row.fields);
  const out: Record<string, Json> = {};
  const placed = new Set<string>();
  for (const [name, schema] of Object.entries(props)) {
    const replacing = rules.filter(([, rule]) => targetOf(rule) === name);
    // A native field named like one of Replicate's is shown once, as Replicate's (speech: the native alias
    // `text` of `input` is Replicate's `text`; Recraft: `size`).
    if (replacing.length === 0 && !rules.some(([field]) => field === name)) out[name] = schema;
    for (const [field, rule] of replacing) {
      out[field] = ruleSchema(kind, props, rule);
      placed.add(field);
    }
  }
  for (const [field, rule] of rules) if (!placed.has(field)) out[field] = ruleSchema(kind, props, rule);
  const renamed = ((gateway.required as string[] | undefined) ?? []).flatMap((k) => {
    const from = rules.filter(([, rule]) => targetOf(rule) === k).map(([field]) => field);
    return from.length > 0 ? from.slice(-1) : [k];
  });
  const required = kind === "speech" && row.fields.text === "speech_text" ? ["text", ...renamed] : renamed;
  return { type: "object", properties: out, ...(required.length > 0 ? { required } : {}) };
}

/** JSON with every object's keys sorted (arrays keep their order): the text a version id hashes. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The version id of `ref` with `inputSchema`: SHA-256 hex of the ref, a newline and the schema's canonical JSON. */
function versionIdOf(ref: string, inputSchema: Json): string {
  return createHash("sha256").update(`${ref}\n${canonicalJson(inputSchema)}`).digest("hex");
}

/** A frozen name. */
function named(owner: string, name: string, catalogId: string, kind: ReplicateKind, source: string | null, inputSchema: Json, output: "uri" | "uris"): ReplicateModel {
  const ref = `${owner}/${name}`;
  return deepFreeze({ owner, name, ref, catalogId, kind, versionId: versionIdOf(ref, inputSchema), source, inputSchema, output });
}

/** Every name, built once (the catalog is fixed per process). */
const MODELS: readonly ReplicateModel[] = (() => {
  const isKind = (c: string): c is ReplicateKind => (KINDS as readonly string[]).includes(c);
  const gateway = enabledModels().flatMap((m) => (isKind(m.capability) ? [named("gateway", m.id, m.id, m.capability, null, gatewaySchema(m, m.capability), m.capability === "image" ? "uris" : "uri")] : []));
  const providers = PROVIDER_NAMES.flatMap((row) => {
    const m = getModel(row.catalogId);
    if (m === undefined || !m.enabled || !isKind(m.capability)) return [];
    const [owner, name] = row.ref.split("/");
    return [named(owner, name, m.id, m.capability, `https://replicate.com/${row.ref}`, providerSchema(row, gatewaySchema(m, m.capability), m.capability), row.outputList === true ? "uris" : "uri")];
  });
  return Object.freeze([...gateway, ...providers]);
})();
const BY_REF: ReadonlyMap<string, ReplicateModel> = new Map(MODELS.map((m) => [m.ref, m]));
const BY_VERSION: ReadonlyMap<string, ReplicateModel> = new Map(MODELS.map((m) => [m.versionId, m]));
const ROWS: ReadonlyMap<string, ProviderName> = new Map(PROVIDER_NAMES.map((row) => [row.ref, row]));

/**
 * Every name of the dialect: `gateway/<id>` for each enabled catalog model of kind image, video, speech,
 * music and sfx (catalog order), then the provider names of {@link PROVIDER_NAMES} whose catalog model is
 * enabled (table order). Frozen.
 */
export function replicateModels(): readonly ReplicateModel[] {
  return MODELS;
}

/** The name `owner/name` (case-sensitive, as on Replicate), or undefined. */
export function modelNamed(owner: string, name: string): ReplicateModel | undefined {
  return BY_REF.get(`${owner}/${name}`);
}

/** The name whose current version is `versionId` (64 lowercase hex), or undefined. */
export function modelOfVersion(versionId: string): ReplicateModel | undefined {
  return BY_VERSION.get(versionId);
}

/** A bare version id: 64 lowercase hex. */
const VERSION_ID = /^[0-9a-f]{64}$/;

/**
 * The name a prediction's `version` (or `run()`'s ref) names: `owner/name`, `owner/name:<version id>` or a
 * bare version id; `version` is the version given (the bare id itself), null for `owner/name`. Undefined
 * for an unknown name, or a version that is not that name's current one (D47).
 */
export function modelOfRef(ref: string): { model: ReplicateModel; version: string | null } | undefined {
  if (VERSION_ID.test(ref)) {
    const model = BY_VERSION.get(ref);
    return model === undefined ? undefined : { model, version: ref };
  }
  const colon = ref.indexOf(":");
  const model = BY_REF.get(colon < 0 ? ref : ref.slice(0, colon));
  if (model === undefined) return undefined;
  if (colon < 0) return { model, version: null };
  const version = ref.slice(colon + 1);
  return version === model.versionId ? { model, version } : undefined;
}

/** Cog's output schema of a model: one file URL, or a list of them (see {@link ReplicateModel.output}). */
function outputSchema(m: ReplicateModel): Json {
  const uri = { type: "string", format: "uri" };
  return m.output === "uris" ? { title: "Output", type: "array", items: uri } : { title: "Output", ...uri };
}

/**
 * A version of `m` as Replicate answers it: `{id, created_at, cog_version: null, openapi_schema}`, the
 * schema being Cog's document (`components.schemas.Input` the input schema titled `Input`, `Output` a file
 * URL, or a list of them for images). A fresh object on each call.
 */
export function versionAnswer(m: ReplicateModel): Record<string, unknown> {
  return {
    id: m.versionId,
    created_at: CREATED_AT,
    cog_version: null,
    openapi_schema: {
      openapi: "3.0.2",
      info: { title: "Cog", version: "0.1.0" },
      paths: {},
      components: { schemas: { Input: { title: "Input", ...structuredClone(m.inputSchema) }, Output: outputSchema(m) } },
    },
  };
}

/** What a name says of itself, from its catalog record. */
function descriptionOf(m: ReplicateModel): string {
  const record = getModel(m.catalogId);
  const label = record === undefined ? m.catalogId : `${record.name}${record.legacy ? " (legacy)" : ""}`;
  return m.source === null
    ? `${label}: the gateway's catalog model ${m.catalogId} (${m.kind}); its price is in GET /v1/pricing.`
    : `${label} under its Replicate name: runs the gateway's catalog model ${m.catalogId} (${m.kind}); its price is in GET /v1/pricing.`;
}

/**
 * `m` as Replicate's Model object (`GET /replicate/v1/models/{owner}/{name}`): `url` is the name's address
 * on the gateway (`publicBaseUrl`, without a trailing slash, + `/replicate/v1/models/<ref>`), the description
 * comes from the catalog, `latest_version` is {@link versionAnswer}. Every name is public and runs without a
 * version (`is_official`). A fresh object on each call.
 */
export function modelAnswer(m: ReplicateModel, publicBaseUrl: string): Record<string, unknown> {
  return {
    url: `${publicBaseUrl.replace(/\/+$/, "")}/replicate/v1/models/${m.ref}`,
    owner: m.owner,
    name: m.name,
    description: descriptionOf(m),
    visibility: "public",
    is_official: true,
    github_url: null,
    paper_url: null,
    license_url: null,
    run_count: 0,
    cover_image_url: null,
    default_example: null,
    latest_version: versionAnswer(m),
  };
}

/** One refused input field: `field` is `input` or `input.<name>`. */
export interface ReplicateInvalidField {
  field: string;
  message: string;
}

/** A prediction input the dialect refuses before the native route sees it: the routes answer 422 with `invalid_fields` (D47). */
export class ReplicateInputError extends Error {
  readonly fields: ReplicateInvalidField[];
  constructor(fields: ReplicateInvalidField[]) {
    super(fields.map((f) => `${f.field}: ${f.message}`).join("; "));
    this.name = "ReplicateInputError";
    this.fields = fields;
  }
}

/**
 * The native `size` of an `aspect_ratio` value: a native ratio as it is; another `W:H` (each 1 to 99) as
 * `WIDTHxHEIGHT` of about one megapixel (sides multiples of 64, 64 to 2048: what the native `size` takes);
 * `WIDTHxHEIGHT` as it is; `custom` as `width`x`height` when both are integers. Undefined for a word that
 * keeps the model's default (`match_input_image`, `Not set`, `auto`, `adaptive`, ...).
 */
function sizeOfAspect(value: string, input: Readonly<Json>): string | undefined {
  if (NATIVE_ASPECTS.has(value)) return value;
  if (/^\d{1,5}x\d{1,5}$/.test(value)) return value;
  const ratio = /^(\d{1,2}):(\d{1,2})$/.exec(value);
  if (ratio !== null && Number(ratio[1]) > 0 && Number(ratio[2]) > 0) {
    const r = Number(ratio[1]) / Number(ratio[2]);
    const side = (px: number) => Math.min(2048, Math.max(64, Math.round(px / 64) * 64));
    return `${side(Math.sqrt(1024 * 1024 * r))}x${side(Math.sqrt((1024 * 1024) / r))}`;
  }
  if (value === "custom" && Number.isInteger(input.width) && Number.isInteger(input.height)) return `${String(input.width)}x${String(input.height)}`;
  return undefined;
}

/**
 * The native request body of a prediction of `m` with `input`: `{model: <catalog id>, ...}`, for the
 * native route's validation and service (module comment: `gateway/<id>` takes the native fields as they are
 * without {@link REMOVED_FIELDS}; a provider name's fields are mapped by its row of {@link PROVIDER_NAMES},
 * the others passed as `parameters` for image and video or dropped). `null` fields are absent.
 * @throws ReplicateInputError when `input` is not an object, a mapped field has the wrong type, or a fixed
 *   field another value (every such field named).
 */
export function nativeBodyOf(m: ReplicateModel, input: unknown): Record<string, unknown> {
  if (!isRecord(input)) throw new ReplicateInputError([{ field: "input", message: "input must be an object." }]);
  const removed = REMOVED_FIELDS[m.kind];
  const given = Object.entries(input).filter(([k, v]) => v !== null && v !== undefined && !removed.includes(k));
  const row = ROWS.get(m.ref);
  if (row === undefined) return { ...Object.fromEntries(given), model: m.catalogId };

  const native = nativeFieldsOf(m.kind);
  const body: Json = {};
  const consumed = new Set<string>(Object.keys(row.fields));
  for (const [k, v] of given) if (!consumed.has(k) && native.has(k)) body[k] = v;
  const bad: ReplicateInvalidField[] = [];
  const refuse = (field: string, message: string) => bad.push({ field: `input.${field}`, message });
  for (const [field, rule] of Object.entries(row.fields)) {
    const v = input[field];
    if (v === null || v === undefined) continue;
    if (typeof rule === "object") {
      if (v !== rule.fixed) refuse(field, `${field} must be ${JSON.stringify(rule.fixed)} on ${m.ref}: ${rule.elsewhere}.`);
      continue;
    }
    switch (rule) {
      case "image_url":
      case "size":
      case "speech_text":
        if (typeof v === "string") body[targetOf(rule) as string] = v;
        else refuse(field, `${field} must be a string.`);
        break;
      case "image_urls":
        if (Array.isArray(v) && v.every((u) => typeof u === "string")) body.image_urls = v;
        else refuse(field, `${field} must be an array of image URLs.`);
        break;
      case "n":
        if (Number.isInteger(v)) body.n = v;
        else refuse(field, `${field} must be an integer.`);
        break;
      case "quality":
        if (typeof v !== "string") refuse(field, `${field} must be a string.`);
        else if (v === "auto") delete body.quality;
        else body.quality = v;
        break;
      case "aspect_ratio": {
        if (typeof v !== "string") {
          refuse(field, `${field} must be a string.`);
          break;
        }
        const size = sizeOfAspect(v, input);
        if (size !== undefined) body.size = size;
        // `custom`'s width and height became the size; otherwise they stay parameters.
        if (v === "custom" && size !== undefined) consumed.add("width").add("height");
        break;
      }
      default: {
        const never: never = rule;
        throw new Error(`replicate models: unknown rule ${String(never)}`);
      }
    }
  }
  if (bad.length > 0) throw new ReplicateInputError(bad);

  const extra = Object.fromEntries(given.filter(([k]) => !consumed.has(k) && !native.has(k)));
  if ((m.kind === "image" || m.kind === "video") && Object.keys(extra).length > 0) {
    const own = body.parameters;
    // A `parameters` that is not an object is left for the native validation to refuse.
    if (own === undefined) body.parameters = extra;
    else if (isRecord(own)) body.parameters = { ...extra, ...own };
  }
  return { ...body, model: m.catalogId };
}
