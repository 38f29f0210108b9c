/**
 * Our models on MiniMax: the default upstream ids (upstreams.md "Default upstream ids"), the `models`
 * overrides of an `UPSTREAMS` entry (D25), and how each gateway audio format is asked of MiniMax.
 *
 * ## Audio formats (D26)
 * MiniMax's `audio_setting` takes `format` (`mp3`, `pcm`, `flac`, `wav`), `sample_rate` and, for MP3,
 * `bitrate` (32000, 64000, 128000, 256000). Speech takes the sample rates 8000, 16000, 22050, 24000,
 * 32000 and 44100; music only 16000, 24000, 32000 and 44100. A gateway format MiniMax has is asked as
 * it is; any other (speech: `mp3_44100_192`, `ulaw_8000`; music: those and `mp3_22050_32`, `pcm_22050`)
 * is asked as 16-bit PCM at the format's rate, or the nearest rate MiniMax has, and transcoded here
 * (audio-convert.ts `PcmStreamEncoder`, which resamples), so the caller gets exactly the format asked.
 */
import { audioFormatInfo } from "../audio-convert.ts";
import type { AudioFormat } from "../types.ts";

/**
 * The default upstream ids of the beta family (D35, late 2026): `beta-speech-hd` `speech-2.8-hd`,
 * `beta-speech-turbo` `speech-2.8-turbo`, `beta-music` `music-2.5`, `beta-music-pro` `music-2.6` (spec
 * Versioning 2: pro is the newer upstream). Sources: MiniMax's T2A HTTP reference
 * (platform.minimax.io/docs/api-reference/speech-t2a-http: `speech-2.8-hd` / `speech-2.8-turbo` the
 * current models, `speech-2.6-*`, `speech-02-*`, `speech-01-*` older) and its music generation
 * reference (/docs/api-reference/music-generation), as MiniMax-AI/cli names them:
 * `src/commands/speech/synthesize.ts` (default `speech-2.8-hd`) and `src/commands/music/generate.ts`
 * (`music-2.6`, `music-2.6-free`, `music-2.5+`, `music-2.5`).
 */
export const BETA_MODELS: Readonly<Record<string, string>> = {
  "beta-speech-hd": "speech-2.8-hd",
  "beta-speech-turbo": "speech-2.8-turbo",
  "beta-music": "music-2.5",
  "beta-music-pro": "music-2.6",
};

/** A vidC model on MiniMax: its `resolution`, the clip lengths it offers (s), and whether it needs a first frame. */
export interface MiniMaxVideoModel {
  resolution: "512P" | "768P" | "1080P";
  durations: readonly number[];
  imageOnly: boolean;
}

/** The default upstream id of every vidC model. */
export const HAILUO_02 = "MiniMax-Hailuo-02";

/**
 * vidC on MiniMax (Hailuo-02). 512P exists only as image-to-video (upstreams.md: "512P image-to-video
 * only"); 1080P makes 6 s clips only (MiniMax's video API: `duration` 10 is offered at 512P and 768P).
 */
export const VIDEO_MODELS: Readonly<Record<string, MiniMaxVideoModel>> = {
  "vidC-02-512p": { resolution: "512P", durations: [6, 10], imageOnly: true },
  "vidC-02-768p": { resolution: "768P", durations: [6, 10], imageOnly: false },
  "vidC-02-1080p": { resolution: "1080P", durations: [6], imageOnly: false },
};

/** What an upstream id override must look like (MiniMax ids: `speech-2.8-hd`, `music-2.5+`, `MiniMax-Hailuo-02`). */
const UPSTREAM_ID = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/;

/**
 * Checks the `models` overrides of a `minimax` entry. Keys are our model ids MiniMax serves (beta and
 * vidC: one entry may serve both families, so both factories accept every key); values are upstream ids.
 * Returns a frozen copy.
 * @throws RangeError naming the bad key.
 */
export function checkModelOverrides(models: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
  if (models !== undefined && (typeof models !== "object" || models === null || Array.isArray(models))) {
    throw new RangeError("models must be an object of model id -> upstream id");
  }
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(models ?? {})) {
    if (!Object.hasOwn(BETA_MODELS, key) && !Object.hasOwn(VIDEO_MODELS, key)) {
      throw new RangeError(`models: ${JSON.stringify(key)} is not a model MiniMax serves`);
    }
    if (typeof value !== "string" || !UPSTREAM_ID.test(value)) {
      throw new RangeError(`models: the upstream id of ${JSON.stringify(key)} must look like "speech-2.8-hd"`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

/** The upstream id of a beta model (the override, else the default), or null when MiniMax does not serve it. */
export function betaUpstreamId(model: string, overrides: Readonly<Record<string, string>>): string | null {
  if (!Object.hasOwn(BETA_MODELS, model)) return null;
  return overrides[model] ?? BETA_MODELS[model];
}

/**
 * True for a music upstream id that takes `is_instrumental`: `music-2.5+`, `music-2.6` and later
 * (`music-2.6-free`, `music-3.0`, ...). `music-2.5` (beta-music) has no such flag: it gets the lyrics as
 * written (MiniMax-AI/cli `src/commands/music/generate.ts`: "music-2.6/music-2.5+: native
 * is_instrumental flag; music-2.5: lyrics workaround"; upstreams.md).
 */
export function hasInstrumentalFlag(upstreamId: string): boolean {
  const m = /^music-(\d+)\.(\d+)(\+)?(?:-[a-z0-9-]+)?$/i.exec(upstreamId);
  if (m === null) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 2 || (major === 2 && (minor >= 6 || (minor === 5 && m[3] === "+")));
}

/** `[Instrumental]` alone as the lyrics (any case, white space around). */
export function isInstrumentalOnly(lyrics: string | null): boolean {
  return lyrics !== null && /^\s*\[instrumental\]\s*$/i.test(lyrics);
}

/** MiniMax's `audio_setting` for one call. `bitrate` only for MP3. */
export interface AudioSetting {
  format: "mp3" | "pcm";
  sample_rate: number;
  bitrate?: number;
}

/**
 * How a gateway format is asked of MiniMax: `setting` is sent; when `pcmRate` is not null MiniMax answers
 * 16-bit PCM at that rate, which is transcoded into the gateway format.
 */
export interface AudioPlan {
  setting: AudioSetting;
  pcmRate: number | null;
}

/** Sample rates of speech (`t2a_v2`). */
export const SPEECH_RATES: readonly number[] = [8000, 16000, 22050, 24000, 32000, 44100];
/** Sample rates of music (`music_generation`). */
export const MUSIC_RATES: readonly number[] = [16000, 24000, 32000, 44100];
/** MP3 bit rates, bit/s. */
export const MP3_BITRATES: readonly number[] = [32000, 64000, 128000, 256000];

/** The plan of `format` for an endpoint offering `rates` (see the module comment). */
export function audioPlan(format: AudioFormat, rates: readonly number[]): AudioPlan {
  const info = audioFormatInfo(format);
  if (info.codec === "mp3" && rates.includes(info.sampleRate) && MP3_BITRATES.includes((info.bitrateKbps ?? 0) * 1000)) {
    return { setting: { format: "mp3", sample_rate: info.sampleRate, bitrate: (info.bitrateKbps ?? 0) * 1000 }, pcmRate: null };
  }
  if (info.codec === "pcm" && rates.includes(info.sampleRate)) return { setting: { format: "pcm", sample_rate: info.sampleRate }, pcmRate: null };
  const rate = nearestRate(info.sampleRate, rates);
  return { setting: { format: "pcm", sample_rate: rate }, pcmRate: rate };
}

/** The rate of `rates` nearest to `target` (a tie goes to the higher rate: resampling down loses nothing). */
function nearestRate(target: number, rates: readonly number[]): number {
  let best = rates[0];
  for (const r of rates) {
    const d = Math.abs(r - target);
    const bestD = Math.abs(best - target);
    if (d < bestD || (d === bestD && r > best)) best = r;
  }
  return best;
}

/** D26: the shortest offered length at least `requested` seconds long, else the longest offered. */
export function pickDuration(offered: readonly number[], requested: number): number {
  for (const d of offered) if (d >= requested) return d;
  return offered[offered.length - 1];
}
