/**
 * The codec of a job row's `request_json` (spec "Media job", D3): what a submit stores of a validated
 * image or video request, and what the runner hands the adapter (the simulator, or a real source through
 * durable.ts) when it executes the job. The stored shape is the adapter's request (`ImageRequest`,
 * `VideoRequest` of upstreams/types.ts): one JSON object, written once at submit and read once per
 * execution.
 */
import { withoutStrings } from "../contracts/texts.ts";
import type { ImageRequest, SimulateMode, VideoRequest } from "../upstreams/types.ts";
import type { JobSpec } from "./validate.ts";

/** A stored image job request: the adapter's {@link ImageRequest}. */
export type ImageJobRequest = ImageRequest;

/** A stored video job request: the adapter's {@link VideoRequest} (`durationSec` in whole seconds). */
export type VideoJobRequest = VideoRequest;

/**
 * A job's stored request (`jobs.request_json`): an image or a video request. `textsRemoved` marks one stored
 * without its texts (D46: the prompts window passed, or zero retention): its `prompt` is empty and its
 * `parameters` hold no string; the runner runs such a job only with the texts it holds in memory (texts.ts).
 */
export type JobRequest = (ImageJobRequest | VideoJobRequest) & { textsRemoved?: true };

/** The texts of a job's request (D46): its prompt and its free-form parameters, as submitted. */
export interface JobTexts {
  prompt: string;
  parameters: Record<string, unknown>;
}

/** The texts of `request` (what zero retention keeps in memory instead of the row). */
export function textsOf(request: JobRequest): JobTexts {
  return { prompt: request.prompt, parameters: request.parameters };
}

/**
 * `request` without its texts (D46): the prompt emptied, every string of `parameters` removed (its numbers
 * and flags stay), marked `textsRemoved`. Everything the job API and the charge read (model, sizes, count,
 * duration, references) stays.
 */
export function withoutJobTexts(request: JobRequest): JobRequest {
  const parameters = (withoutStrings(request.parameters ?? {}) ?? {}) as Record<string, unknown>;
  return { ...request, prompt: "", parameters, textsRemoved: true };
}

/** A request stored without its texts made whole again with `texts` (held in memory since the submit). */
export function withJobTexts(request: JobRequest, texts: JobTexts): JobRequest {
  const { textsRemoved: _removed, ...rest } = request;
  return { ...rest, prompt: texts.prompt, parameters: texts.parameters };
}

/** Whether `request` is a video request (it carries `durationSec`; an image request carries `n`). */
export function isVideoRequest(request: JobRequest): request is VideoJobRequest {
  return "durationSec" in request;
}

/** The request a submit stores for the validated `spec` and its `X-Svc-Simulate` mode. */
export function jobRequestOf(spec: JobSpec, simulate: SimulateMode | null): JobRequest {
  if (spec.kind === "image") {
    return {
      model: spec.model.id,
      prompt: spec.prompt,
      n: spec.n,
      aspect: spec.aspect,
      width: spec.width,
      height: spec.height,
      quality: spec.quality,
      output: spec.model.output,
      imageUrls: spec.imageUrls,
      parameters: spec.parameters,
      simulate,
    };
  }
  return {
    model: spec.model.id,
    prompt: spec.prompt,
    durationSec: spec.durationSec,
    imageUrl: spec.imageUrl,
    parameters: spec.parameters,
    simulate,
  };
}

/** `request` as stored in `jobs.request_json` (JSON, key order as written by {@link jobRequestOf}). */
export function encodeJobRequest(request: JobRequest): string {
  return JSON.stringify(request);
}

/**
 * A job row's `request_json` as the typed request it was stored as: a video request when it carries a
 * numeric `durationSec`, else an image request.
 * @throws Error when `json` is not JSON or not an object with a string `model` (a row not written by
 *   {@link encodeJobRequest}).
 */
export function decodeJobRequest(json: string): JobRequest {
  const value: unknown = JSON.parse(json);
  if (value === null || typeof value !== "object" || Array.isArray(value) || typeof (value as { model?: unknown }).model !== "string") {
    throw new Error("request_json is not a stored job request");
  }
  return value as JobRequest;
}

/**
 * The seconds a stored video request asked for, or null (an image request, or a row without them): what
 * a video's final charge and usage record compare the delivered length with (D26, D29).
 */
export function requestedSeconds(request: JobRequest): number | null {
  return isVideoRequest(request) && typeof request.durationSec === "number" ? request.durationSec : null;
}
