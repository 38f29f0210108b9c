/**
 * Music (spec "POST /v1/audio/music"; D2, D7, D16): three models, per-model prompt/lyrics limits counted
 * in grapheme clusters after NFC, `music_length_ms` (alias `duration_ms`) 1000-300000 ms honoured by
 * alpha-music and priced per second of requested length; beta models are flat per song and derive their
 * length from the lyrics.
 */
import type { Micros } from "../money.ts";
import type { CallContext } from "../billing/usage.ts";
import { DEFAULT_MUSIC_MODEL, getModelOf } from "../catalog/models.ts";
import { quoteMusic } from "../catalog/quote.ts";
import type { MusicModel } from "../catalog/types.ts";
import type { MusicRequestBody } from "../contracts/audio.ts";
import { errors } from "../errors.ts";
import type { CallGuard } from "../limits/limiter.ts";
import type { AudioBytes, AudioFormat, MusicRequest, SimulateMode } from "../upstreams/types.ts";
import type { Served } from "../upstreams/sync-failover.ts";
import { type AudioOutcome, type GenerateDeps, generatePaidAudio, type StoredJobHook } from "./generate.ts";
import { graphemeCount, optionalText } from "./text-limits.ts";

/** The music request body as received (types already checked by the route schema): the contract's type. */
export type MusicBody = MusicRequestBody;

/**
 * `response_format` (default `mp3_44100_128`; the route schema admits only AUDIO_FORMATS); `save_to_blob`
 * stores MP3, so it forces an MP3 format.
 */
export function parseAudioFormat(value: unknown, saveToBlob: boolean): AudioFormat {
  const format = (value ?? "mp3_44100_128") as AudioFormat;
  if (saveToBlob && !format.startsWith("mp3_")) return "mp3_44100_128";
  return format;
}

/** Checks the body in the order of the spec's error table. Throws AppError 400. */
export function validateMusic(body: MusicBody, saveToBlob: boolean): { model: MusicModel; req: Omit<MusicRequest, "simulate"> } {
  const modelId = body.model ?? DEFAULT_MUSIC_MODEL;
  if (typeof modelId !== "string") throw errors.invalidRequest("model must be a string.", "model");
  const model = getModelOf(modelId, "music");
  if (!model) throw errors.notAMusicModel(modelId);

  const prompt = optionalText(body.prompt, () => errors.invalidRequest("prompt must be a string.", "prompt")) ?? "";
  const promptLen = graphemeCount(prompt);
  if (promptLen > model.promptMaxGraphemes) {
    throw errors.tooLong("prompt_too_long", model.id, "prompt", promptLen, model.promptMaxGraphemes, "visible characters");
  }
  let lyrics: string | null = null;
  if (model.lyricsMaxGraphemes !== null) {
    lyrics = optionalText(body.lyrics, () => errors.invalidRequest("lyrics must be a string.", "lyrics"));
    const n = lyrics === null ? 0 : graphemeCount(lyrics);
    if (n > model.lyricsMaxGraphemes) {
      throw errors.tooLong("lyrics_too_long", model.id, "lyrics", n, model.lyricsMaxGraphemes, "visible characters");
    }
  }
  if (model.promptRequired && prompt.trim() === "") throw errors.invalidRequest(`prompt is required for ${model.id}.`, "prompt");
  if (!model.promptRequired && prompt.trim() === "" && (lyrics === null || lyrics.trim() === "")) {
    throw errors.invalidRequest(`prompt or lyrics is required for ${model.id}.`, "prompt");
  }

  const rawLength = body.music_length_ms ?? body.duration_ms;
  const lengthParam = body.music_length_ms !== undefined ? "music_length_ms" : "duration_ms";
  let lengthMs = model.defaultLengthMs;
  if (rawLength !== undefined && rawLength !== null) {
    if (typeof rawLength !== "number") throw errors.invalidRequest(`${lengthParam} must be an integer number of ms.`, lengthParam);
    if (!Number.isInteger(rawLength) || rawLength < model.minLengthMs || rawLength > model.maxLengthMs) {
      throw errors.invalidDuration(
        `${lengthParam} must be a whole number of ms from ${model.minLengthMs} to ${model.maxLengthMs}.`,
        lengthParam,
      );
    }
    lengthMs = rawLength;
  }
  const format = parseAudioFormat(body.response_format, saveToBlob);
  return { model, req: { model: model.id, prompt, lyrics, lengthMs, lengthFromLyrics: !model.honoursLength, format } };
}

/**
 * Generates music for `accountId`.
 * @throws AppError 400 (validation), 402 `billing_error`, 502 `provider_error`, 500 `storage_error`.
 */
export async function createMusic(
  deps: GenerateDeps & {
    /** Music on the sources of `family` with failover (upstreams/audio-router.ts). */
    music(family: "alpha" | "beta", req: MusicRequest, signal?: AbortSignal): Promise<Served<AudioBytes>>;
  },
  principal: { accountId: string; keyId: string | null },
  body: MusicBody,
  opts: { simulate: SimulateMode | null; saveToBlob: boolean; signal?: AbortSignal; guard?: CallGuard; call?: CallContext; onStored?: StoredJobHook },
): Promise<AudioOutcome> {
  const { model, req } = validateMusic(body, opts.saveToBlob);
  const price: Micros = quoteMusic(model, req.lengthMs);
  return generatePaidAudio(deps, {
    accountId: principal.accountId,
    apiKeyId: principal.keyId,
    model: model.id,
    priceMicros: price,
    request: { ...req },
    saveToBlob: opts.saveToBlob,
    onStored: opts.onStored,
    billedDurationSec: model.honoursLength ? req.lengthMs / 1000 : undefined,
    call: (signal) => deps.music(model.family === "alpha" ? "alpha" : "beta", { ...req, simulate: opts.simulate }, signal),
    signal: opts.signal,
    guard: opts.guard,
    pool: model.audioPool,
    context: opts.call,
    kind: "music",
  });
}
