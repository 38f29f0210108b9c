/**
 * fal endpoint ids and inputs, read backwards from the fal adapter's own table (D38): the one table
 * `FAL_MODELS` of `src/upstreams/fal/models.ts` says which endpoint serves each catalog model and how a
 * job request becomes that endpoint's input (`imageCall`, `videoCall`); this file reads it the other
 * way, so an endpoint id names a catalog model and an endpoint's input becomes the native job request.
 * There is no second copy of ids, durations, presets or fields here.
 *
 * ## Endpoint id -> catalog model
 * The rows whose default text-to-x or image-to-x endpoint is the id (source `models` overrides are not
 * read: the dialect speaks fal's public ids). Rows sharing an endpoint (Kling v3 with and without audio;
 * Hailuo-02 standard 512P and 768P image-to-video) are told apart by the fields the gateway sets on them
 * (`fields`, `imageFields`): a row whose field the input sets to another value is out; of the rest, the
 * one whose fields the input names wins, else the row fal serves by default (`falDefault`), else the
 * first. An input value no row has (`generate_audio: true` on `fal-ai/veo3.1/fast`, whose gateway model is
 * silent) answers 422 in fal's shape naming the values served: a caller never gets, or pays for, another
 * model than the one asked for without being told.
 *
 * ## fal input -> job request (the inverse of `imageCall` / `videoCall`)
 * | fal input | job request |
 * |---|---|
 * | `prompt` | `prompt` |
 * | video `duration` (`"5"`, `5`, Veo `"6s"`; one of the row's `durations`) | `duration` (seconds) |
 * | the image-to-x variant's image field (`image_url`, Kling v3 `start_image_url`, FLUX.2 `image_urls`) | `image_url` / `image_urls` (required on that variant; ignored on text-to-x, as fal ignores it) |
 * | image `image_size`: a preset of `RECRAFT_PRESETS` or `{width, height}` | `size` (the aspect, or `WxH`) |
 * | image `aspect_ratio` (rows sized by aspect ratio) | `size` |
 * | `num_images` (rows that send `num_images`) | `n` |
 * | everything else but `DROPPED_PARAMETERS` and the fields the gateway sets | `parameters`, forwarded to a fal source unchanged |
 * An absent field keeps the native default (a video's default duration, a 1:1 image, one image).
 * Shapes are fal's: a wrong type or a value outside the endpoint's enum is a {@link FalInputError} (422
 * with FastAPI's `detail` list, as fal answers); content rules (prompt length, durations the catalog
 * allows, URL rules, balance) are the native job's, answered by the native validation.
 */
import type { ImageJobRequest, VideoJobRequest } from "../../../contracts/jobs.ts";
import { DROPPED_PARAMETERS, FAL_MODELS, RECRAFT_PRESETS } from "../../../upstreams/fal/models.ts";
import type { FalImageModel, FalModel, FalVideoModel } from "../../../upstreams/fal/models.ts";
import { isRecord } from "../../../upstreams/util.ts";

/** One FastAPI validation item (fal's 422 `detail[]`). */
export interface FalValidationItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** An input fal would refuse: answered 422 `{"detail": [<items>]}`. */
export class FalInputError extends Error {
  readonly items: FalValidationItem[];
  constructor(items: FalValidationItem[]) {
    super(items.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; "));
    this.name = "FalInputError";
    this.items = items;
  }
}

/** A row of the table serving an endpoint, and which of its variants the endpoint is. */
export interface FalEndpointRow {
  modelId: string;
  model: FalModel;
  variant: "text" | "image";
}

/** The native job request of a fal input: an image or a video job body, and the row it was read from. */
export type FalJobRequest =
  | { kind: "image"; row: FalEndpointRow; body: ImageJobRequest }
  | { kind: "video"; row: FalEndpointRow; body: VideoJobRequest };

/** Every row whose default endpoint (either variant) is `endpointId`, in table order. */
export function rowsServing(endpointId: string): FalEndpointRow[] {
  const rows: FalEndpointRow[] = [];
  for (const [modelId, model] of Object.entries(FAL_MODELS)) {
    if (model.endpoints.text === endpointId) rows.push({ modelId, model, variant: "text" });
    else if (model.endpoints.image === endpointId) rows.push({ modelId, model, variant: "image" });
  }
  return rows;
}

/**
 * The `<owner>/<alias>` (with a `workflows/` or `comfy/` namespace, three parts) of an endpoint id: what
 * fal's follow-up URLs keep of it.
 */
export function appOf(endpointId: string): string {
  const parts = endpointId.split("/");
  return parts.slice(0, ["workflows", "comfy"].includes(parts[0]) ? 3 : 2).join("/");
}

/** The apps (`<owner>/<alias>`) of a catalog model's endpoints: where its requests are followed. */
export function appsOfModel(modelId: string): Set<string> {
  const model = Object.hasOwn(FAL_MODELS, modelId) ? FAL_MODELS[modelId] : undefined;
  const apps = new Set<string>();
  for (const id of [model?.endpoints.text, model?.endpoints.image]) if (typeof id === "string") apps.add(appOf(id));
  return apps;
}

/** The fields the gateway sets on a row's variant (model- and price-defining). */
function fixedFields(row: FalEndpointRow): Readonly<Record<string, unknown>> {
  if (row.model.kind !== "video") return {};
  return row.variant === "image" ? { ...row.model.fields, ...(row.model.imageFields ?? {}) } : row.model.fields;
}

/**
 * The row an input selects among the rows serving its endpoint (see the module comment).
 * @throws FalInputError when the input sets a gateway-set field to a value no row has.
 */
export function pickRow(rows: FalEndpointRow[], input: Readonly<Record<string, unknown>>): FalEndpointRow {
  const viable = rows.filter((row) => Object.entries(fixedFields(row)).every(([k, v]) => input[k] === undefined || input[k] === v));
  if (viable.length === 0) {
    const field = Object.keys(fixedFields(rows[0])).find((k) => rows.every((row) => input[k] !== fixedFields(row)[k])) ?? "input";
    const served = [...new Set(rows.map((row) => fixedFields(row)[field]))];
    throw new FalInputError([{ loc: ["body", field], msg: `Input should be ${served.map(literal).join(" or ")} (the value this gateway serves)`, type: "literal_error" }]);
  }
  const named = (row: FalEndpointRow) => Object.keys(fixedFields(row)).filter((k) => input[k] !== undefined).length;
  const best = Math.max(...viable.map(named));
  const top = viable.filter((row) => named(row) === best);
  return top.find((row) => row.model.kind === "video" && row.model.falDefault === true) ?? top[0];
}

/**
 * The native job request of `input` sent to `endpointId`, or null when no row serves the endpoint (fal's
 * 404). `extra` carries what does not come from the input: the idempotency key and the webhook URL.
 * @throws FalInputError for an input fal would refuse (see the module comment).
 */
export function jobRequestOf(
  endpointId: string,
  input: unknown,
  extra: { idempotencyKey: string | null; webhookUrl: string | null },
): FalJobRequest | null {
  const rows = rowsServing(endpointId);
  if (rows.length === 0) return null;
  if (!isRecord(input)) throw new FalInputError([{ loc: ["body"], msg: "Input should be a valid dictionary", type: "dict_type" }]);
  const row = pickRow(rows, input);
  const prompt = input.prompt;
  if (prompt === undefined) throw new FalInputError([{ loc: ["body", "prompt"], msg: "Field required", type: "missing" }]);
  if (typeof prompt !== "string") throw new FalInputError([{ loc: ["body", "prompt"], msg: "Input should be a valid string", type: "string_type" }]);
  const consumed = new Set<string>(["prompt", ...Object.keys(fixedFields(row)), ...DROPPED_PARAMETERS]);
  const common = {
    prompt,
    ...(extra.idempotencyKey !== null ? { idempotency_key: extra.idempotencyKey } : {}),
    ...(extra.webhookUrl !== null ? { webhook_url: extra.webhookUrl } : {}),
  };
  if (row.model.kind === "video") {
    const body = { model: row.modelId, ...common, ...videoFields(row.model, row.variant, input, consumed) } as VideoJobRequest;
    body.parameters = parametersOf(input, consumed);
    return { kind: "video", row, body };
  }
  const body = { model: row.modelId, ...common, ...imageFields(row.model, row.variant, input, consumed) } as ImageJobRequest;
  body.parameters = parametersOf(input, consumed);
  return { kind: "image", row, body };
}

/** `duration` and the first frame of a video input (the inverse of `videoCall`). */
function videoFields(model: FalVideoModel, variant: "text" | "image", input: Readonly<Record<string, unknown>>, consumed: Set<string>) {
  const out: { duration?: number; image_url?: string } = {};
  consumed.add("image_url").add("start_image_url");
  if (model.durationFormat !== null) {
    consumed.add("duration");
    const d = input.duration;
    if (d !== undefined) {
      const suffix = model.durationFormat === "seconds-suffix" ? "s" : "";
      const text = typeof d === "number" ? String(d) : typeof d === "string" ? d.replace(/s$/, "") : null;
      const seconds = text !== null && /^\d{1,3}$/.test(text) ? Number(text) : null;
      if (seconds === null || !model.durations.includes(seconds)) {
        const allowed = model.durations.map((s) => literal(`${s}${suffix}`)).join(", ");
        throw new FalInputError([{ loc: ["body", "duration"], msg: `Input should be ${allowed}`, type: "literal_error" }]);
      }
      out.duration = seconds;
    }
  }
  if (variant === "image") out.image_url = requiredUrl(input, model.imageField);
  return out;
}

/** `size`, `n` and the reference images of an image input (the inverse of `imageCall`). */
function imageFields(model: FalImageModel, variant: "text" | "image", input: Readonly<Record<string, unknown>>, consumed: Set<string>) {
  const out: { size?: string; n?: number; image_url?: string; image_urls?: string[] } = {};
  consumed.add("image_url").add("image_urls");
  if (model.png) consumed.add("output_format");
  if (model.size === "aspect-ratio") {
    consumed.add("aspect_ratio");
    const a = input.aspect_ratio;
    if (a !== undefined) {
      const aspects = Object.keys(RECRAFT_PRESETS);
      if (typeof a !== "string" || !aspects.includes(a)) {
        throw new FalInputError([{ loc: ["body", "aspect_ratio"], msg: `Input should be ${aspects.map(literal).join(", ")}`, type: "literal_error" }]);
      }
      out.size = a;
    }
  } else {
    consumed.add("image_size");
    const s = input.image_size;
    const sized = !(variant === "image" && model.noSizeOnImageVariant === true);
    if (s !== undefined && sized) out.size = sizeOf(s);
  }
  if (model.count === "num_images") {
    consumed.add("num_images");
    const n = input.num_images;
    if (n !== undefined) {
      if (typeof n !== "number" || !Number.isInteger(n)) throw new FalInputError([{ loc: ["body", "num_images"], msg: "Input should be a valid integer", type: "int_type" }]);
      out.n = n;
    }
  }
  if (variant === "image") {
    if (model.imageInput === "image_urls") {
      const urls = input.image_urls;
      if (urls === undefined) throw new FalInputError([{ loc: ["body", "image_urls"], msg: "Field required", type: "missing" }]);
      if (!Array.isArray(urls) || urls.length === 0 || !urls.every((u) => typeof u === "string")) {
        throw new FalInputError([{ loc: ["body", "image_urls"], msg: "Input should be a non-empty list of URLs", type: "list_type" }]);
      }
      out.image_urls = urls as string[];
    } else out.image_url = requiredUrl(input, "image_url");
  }
  return out;
}

/** `image_size` as the native `size`: a preset of `RECRAFT_PRESETS` -> its aspect; `{width, height}` -> `WxH`. */
function sizeOf(value: unknown): string {
  if (typeof value === "string") {
    const aspect = Object.entries(RECRAFT_PRESETS).find(([, preset]) => preset === value)?.[0];
    if (aspect !== undefined) return aspect;
    const presets = [...new Set(Object.values(RECRAFT_PRESETS))];
    throw new FalInputError([{ loc: ["body", "image_size"], msg: `Input should be ${presets.map(literal).join(", ")} or {width, height}`, type: "literal_error" }]);
  }
  if (isRecord(value) && Number.isInteger(value.width) && Number.isInteger(value.height)) return `${String(value.width)}x${String(value.height)}`;
  throw new FalInputError([{ loc: ["body", "image_size"], msg: "Input should be a preset name or {width, height} integers", type: "model_type" }]);
}

/** A required URL field of the image-to-x variant. */
function requiredUrl(input: Readonly<Record<string, unknown>>, field: string): string {
  const v = input[field];
  if (v === undefined) throw new FalInputError([{ loc: ["body", field], msg: "Field required", type: "missing" }]);
  if (typeof v !== "string") throw new FalInputError([{ loc: ["body", field], msg: "Input should be a valid string", type: "string_type" }]);
  return v;
}

/** The input's other fields: forwarded to a fal source unchanged (the adapter's `parameters`). */
function parametersOf(input: Readonly<Record<string, unknown>>, consumed: Set<string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([k, v]) => !consumed.has(k) && v !== undefined && v !== null));
}

/** A value as Python's repr shows it in pydantic's messages (`'5'`, `True`). */
function literal(value: unknown): string {
  if (typeof value === "string") return `'${value}'`;
  if (typeof value === "boolean") return value ? "True" : "False";
  return String(value);
}
