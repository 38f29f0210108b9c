/**
 * OpenAI's model names in the OpenAI dialect (D37, D48): which catalog model an OpenAI `model` names, the
 * dialect's model list (`GET /openai/v1/models`), and OpenAI's 404 `model_not_found` for a model the
 * dialect does not serve, answered before anything is held or sent.
 *
 * - Speech: `tts-1` and `gpt-4o-mini-tts` (and its dated snapshots) name the catalog's default speech model;
 *   `tts-1-hd` names {@link HD_SPEECH_MODEL}, the catalog's highest-quality alpha speech model.
 * - Images: `gpt-image-2` names `imgC-q1` (D37).
 * - Catalog ids (and the catalog's aliases, `transcribe`, `best`, ...) are accepted as they are.
 *
 * "Served by the dialect" means listed by `GET /openai/v1/models`: the enabled models whose capability a
 * route of the dialect calls (chat, speech, transcription, audio understanding, images, video), their
 * aliases and the OpenAI names. A name outside that list answers 404 `model_not_found` on every route of
 * the dialect that takes `model`; a listed model of the wrong kind for the route keeps the route's own 400
 * (`not_a_tts_model`, `invalid_model`).
 */
import type { FastifyRequest, RouteOptions } from "fastify";
import { DEFAULT_SPEECH_MODEL } from "../../../catalog/models.ts";
import type { Capability } from "../../../catalog/types.ts";
import { AppError } from "../../../errors.ts";
import { allModels, type ModelEntry } from "../../routes/models.ts";
import { errors as errorDocs } from "../../schemas/common.ts";
import type { App } from "../../types.ts";

/**
 * The catalog's highest-quality alpha speech model, named by `tts-1-hd`: `alpha-v3` (ElevenLabs' v3, the
 * most expressive generation), at the top alpha speech price with the default model, which `tts-1` already
 * names; the flash and turbo models are the half-price low-latency tier (docs/decisions.md, D48).
 */
export const HD_SPEECH_MODEL = "alpha-v3";

/** OpenAI speech model names and the catalog models they name (D48). */
export const OPENAI_SPEECH_MODEL_IDS: Readonly<Record<string, string>> = Object.freeze({
  "tts-1": DEFAULT_SPEECH_MODEL,
  "tts-1-hd": HD_SPEECH_MODEL,
  "gpt-4o-mini-tts": DEFAULT_SPEECH_MODEL,
  // OpenAI's dated snapshots of gpt-4o-mini-tts (the `openai` SDK's `SpeechModel` lists the newest).
  "gpt-4o-mini-tts-2025-03-20": DEFAULT_SPEECH_MODEL,
  "gpt-4o-mini-tts-2025-12-15": DEFAULT_SPEECH_MODEL,
});

/** OpenAI image model names and the catalog models they name (D37). */
export const OPENAI_IMAGE_MODEL_IDS: Readonly<Record<string, string>> = Object.freeze({ "gpt-image-2": "imgC-q1" });

/** Every OpenAI name of the dialect -> its catalog model id. */
const OPENAI_NAMES: Readonly<Record<string, string>> = Object.freeze({ ...OPENAI_SPEECH_MODEL_IDS, ...OPENAI_IMAGE_MODEL_IDS });

/** The catalog id an OpenAI speech `model` names; any other value as it is (the speech service refuses an unknown one). */
export function catalogSpeechModel(model: string): string {
  return Object.hasOwn(OPENAI_SPEECH_MODEL_IDS, model) ? OPENAI_SPEECH_MODEL_IDS[model] : model;
}

/** The catalog id an OpenAI image `model` names; any other value as it is (the job's validation refuses an unknown one). */
export function catalogImageModel(model: string): string {
  return Object.hasOwn(OPENAI_IMAGE_MODEL_IDS, model) ? OPENAI_IMAGE_MODEL_IDS[model] : model;
}

/** The capabilities a route of the dialect calls (music, sound effects and voice creation have none there). */
const DIALECT_CAPABILITIES: ReadonlySet<string> = new Set<Capability | "chat">(["chat", "speech", "transcription", "audio_understanding", "image", "video"]);

/** An entry of `GET /openai/v1/models`: the native entry, and for an OpenAI name the catalog model it names. */
export type OpenAIModelEntry = ModelEntry & { alias_of?: string };

/**
 * `GET /openai/v1/models`: the enabled models a route of the dialect calls (text models, speech,
 * transcription, audio understanding, image and video models) as `GET /v1/models` shows them, each with
 * the OpenAI names of it added to `aliases`, plus one entry per OpenAI name (`tts-1`, ...): the entry of
 * the model it names with its own `id`, no aliases and `alias_of` the catalog id. Sorted by id.
 */
export function openAIModels(): OpenAIModelEntry[] {
  const namesOf = (id: string) => Object.keys(OPENAI_NAMES).filter((name) => OPENAI_NAMES[name] === id);
  const catalog = allModels()
    .filter((m) => m.capabilities.some((c) => DIALECT_CAPABILITIES.has(c)))
    .map((m) => ({ ...m, aliases: [...m.aliases, ...namesOf(m.id)] }));
  const byId = new Map(catalog.map((m) => [m.id, m]));
  const names: OpenAIModelEntry[] = [];
  for (const [name, id] of Object.entries(OPENAI_NAMES)) {
    const target = byId.get(id);
    if (target !== undefined) names.push({ ...target, id: name, aliases: [], alias_of: id });
  }
  return [...catalog, ...names].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Every name the dialect serves: the ids and aliases of {@link openAIModels}. Built on first use (the catalog is fixed per process). */
let served: ReadonlySet<string> | null = null;
function servedNames(): ReadonlySet<string> {
  served ??= new Set(openAIModels().flatMap((m) => [m.id, ...m.aliases]));
  return served;
}

/** Whether `model` names a model the dialect serves (listed by `GET /openai/v1/models`). */
export function servesModel(model: string): boolean {
  return servedNames().has(model);
}

/** OpenAI's 404 for a model the dialect does not serve (D48): `invalid_request_error`, `param: "model"`. */
export function modelNotFound(model: string): AppError {
  const shown = model.length > 80 ? `${model.slice(0, 80)}...` : model;
  return new AppError(
    404,
    "model_not_found",
    `The model '${shown}' does not exist on this gateway. GET /openai/v1/models lists the models its OpenAI API serves (catalog ids and OpenAI names such as tts-1). Nothing was charged.`,
    "model",
  );
}

/**
 * Refuses a `model` the dialect does not serve; anything that is not a string is left to the route's own
 * validation. @throws AppError 404 `model_not_found`.
 */
export function requireServedModel(model: unknown): void {
  if (typeof model === "string" && !servesModel(model)) throw modelNotFound(model);
}

/** The `model` of a JSON object body, else undefined (a multipart form has no body yet: its route reads it). */
function jsonModelOf(req: FastifyRequest): unknown {
  const body = req.body;
  return typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).model : undefined;
}

/** What the 404 documents on the routes {@link guardModels} guards. */
const NOT_FOUND_DOC = "`model_not_found` (a model the OpenAI API of the gateway does not serve: `GET /openai/v1/models` lists them; nothing charged)";

/**
 * Installs, on `scope` (before its routes are registered: an `onRoute` hook reaches the routes registered
 * after it, in child scopes too), the model check of every paid route (`config.modelCall`): a JSON body's
 * `model` the dialect does not serve answers 404 `model_not_found` before validation, limits, holds or any
 * upstream (a multipart form's `model` is checked by its reader: form.ts, the transcription route's
 * `checkModel`). The route's documented 404 names the code.
 */
export function guardModels(scope: App): void {
  const check = async (req: FastifyRequest): Promise<void> => requireServedModel(jsonModelOf(req));
  scope.addHook("onRoute", (route: RouteOptions) => {
    const config = route.config as { modelCall?: boolean } | undefined;
    if (config?.modelCall !== true) return;
    const before = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
    route.preValidation = [check, ...before] as RouteOptions["preValidation"];
    // A new schema object: the same route schema may be registered elsewhere (the native route, `/v1/videos`).
    const schema = route.schema as { response?: Record<string, { description: string }> } | undefined;
    if (schema?.response === undefined) return;
    const own = schema.response["404"];
    if (own?.description.includes("`model_not_found`")) return;
    const notFound = own ? { ...own, description: `${own.description.replace(/\.$/, "")}; ${NOT_FOUND_DOC}.` } : errorDocs({ 404: NOT_FOUND_DOC })["404"];
    route.schema = { ...schema, response: { ...schema.response, "404": notFound } };
  });
}
