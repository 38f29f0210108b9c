/**
 * MiniMax's audio answers, shared by speech (`t2a_v2`) and music (`music_generation`): the whole JSON
 * answer with hex audio, and speech's server-sent event stream of hex chunks.
 *
 * | answer | shape (MiniMax-AI/cli `src/types/api.ts` `SpeechResponse`, `MusicResponse`) |
 * |---|---|
 * | whole | `{data: {audio: "<hex>", status: 2}, extra_info: {audio_length (ms), audio_sample_rate, audio_size, bitrate, ...}, trace_id, base_resp}` |
 * | stream | SSE `data: {"data": {"audio": "<hex chunk>", "status": 1}, "trace_id", "base_resp"}` per chunk, then one `status: 2` event with `extra_info` (and the whole clip again unless `stream_options.exclude_aggregated_audio` was honoured) |
 *
 * Whole answers are large (5 minutes of music as hex is about 10 MB) and are read as bytes under
 * {@link MAX_AUDIO_ANSWER_BYTES}, then parsed here. Hex is validated (even length, hex digits only): bad
 * hex is a retryable malformed answer.
 */
import { audioDurationSec, PcmStreamEncoder, pcmToFormat } from "../audio-convert.ts";
import { concatBytes } from "../util.ts";
import { isRecord } from "../util.ts";
import type { AudioFormat } from "../types.ts";
import type { CallContext, MiniMaxApi } from "./api.ts";
import { baseRespOf } from "./api.ts";
import type { AudioPlan } from "./models.ts";

/** Largest whole audio answer read, bytes (hex doubles the audio: 64 MB holds 32 MB of audio). */
export const MAX_AUDIO_ANSWER_BYTES = 64 * 1024 * 1024;

const HEX = /^[0-9a-fA-F]*$/;

/** Decodes validated hex; a bad string throws the api's malformed error naming `what`. */
export function decodeHex(api: MiniMaxApi, hex: string, what: string): Uint8Array {
  if (hex.length % 2 !== 0) throw api.malformed(what, "audio hex of odd length");
  if (!HEX.test(hex)) throw api.malformed(what, "audio is not hex");
  const buf = Buffer.from(hex, "hex");
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** A decoded whole audio answer: bytes in the gateway format and their length, seconds. */
export interface DecodedAudio {
  body: Uint8Array;
  durationSec: number;
}

/**
 * `POST`s `body` to `path` and decodes the whole answer: checks HTTP status and `base_resp`, decodes
 * `data.audio`, transcodes from PCM when `plan.pcmRate` is set. `durationSec` is `extra_info.audio_length`
 * (ms) when MiniMax gives it, else measured from the bytes. Throws api.ts `MiniMaxError`.
 */
export async function fetchWholeAudio(
  api: MiniMaxApi,
  path: string,
  body: unknown,
  format: AudioFormat,
  plan: AudioPlan,
  ctx: CallContext,
  signal: AbortSignal | undefined,
): Promise<DecodedAudio> {
  const answer = await api.sendForBytes("POST", api.url(path), { json: body }, { maxBytes: MAX_AUDIO_ANSWER_BYTES }, signal);
  const text = Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength).toString("utf8");
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  const checked = api.checked(answer.status, json, text, ctx);
  const data = checked.data;
  const hex = isRecord(data) ? data.audio : undefined;
  if (typeof hex !== "string" || hex === "") throw api.malformed(ctx.what, "no data.audio");
  const raw = decodeHex(api, hex, ctx.what);
  const out = plan.pcmRate === null ? raw : transcodeWhole(raw, plan.pcmRate, format);
  return { body: out, durationSec: reportedSeconds(checked.extra_info) ?? audioDurationSec(out, format) };
}

/** `extra_info.audio_length` in seconds, or null when absent or not a positive number. */
function reportedSeconds(extra: unknown): number | null {
  const ms = isRecord(extra) ? extra.audio_length : undefined;
  return typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? ms / 1000 : null;
}

function transcodeWhole(pcm: Uint8Array, rate: number, format: AudioFormat): Uint8Array {
  return pcmToFormat(pcm, rate, format);
}

/**
 * Opens a streamed speech call and resolves once the answer's status and headers arrived. An HTTP error
 * or a JSON answer (MiniMax's way of refusing a stream: HTTP 200 with a `base_resp` failure) throws
 * here; otherwise the returned iterable yields the audio in `format` as events arrive (see
 * {@link audioFromEvents}).
 */
export async function openAudioStream(
  api: MiniMaxApi,
  path: string,
  body: unknown,
  format: AudioFormat,
  plan: AudioPlan,
  ctx: CallContext,
  signal: AbortSignal | undefined,
): Promise<AsyncIterable<Uint8Array>> {
  const answer = await api.openStream("POST", api.url(path), { json: body }, { accept: "text/event-stream" }, signal);
  const type = (answer.headers["content-type"] ?? "").toLowerCase();
  if (answer.status < 200 || answer.status > 299 || !type.startsWith("text/event-stream")) {
    const text = await answer.text();
    let json: unknown;
    try {
      json = JSON.parse(text) as unknown;
    } catch {
      json = undefined;
    }
    api.checked(answer.status, json, text, ctx);
    // A successful JSON answer to a stream request is not what was asked for.
    throw api.malformed(ctx.what, `expected an event stream, got ${type === "" ? "no content type" : type}`);
  }
  return audioFromEvents(api, answer.body, format, plan, ctx);
}

/**
 * The audio of an SSE byte stream, in `format`:
 * - events are split on blank lines whatever the network packets were; `data:` lines are joined;
 * - an event with a non-zero `base_resp` throws the mapped error (after the chunks already yielded);
 * - `data.audio` hex of `status: 1` events is decoded (an odd hex digit waits for the next chunk);
 * - the final `status: 2` event's audio is the whole clip again when MiniMax ignored
 *   `exclude_aggregated_audio`: it is used only when no chunk came before, so nothing is appended twice;
 * - PCM is transcoded chunk by chunk when the plan says so; raw PCM is yielded in whole samples.
 * Throws a retryable malformed error for bad hex, bad JSON or a stream without any audio.
 */
export async function* audioFromEvents(
  api: MiniMaxApi,
  bytes: AsyncIterable<Uint8Array>,
  format: AudioFormat,
  plan: AudioPlan,
  ctx: CallContext,
): AsyncGenerator<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = plan.pcmRate === null ? null : new PcmStreamEncoder(format, plan.pcmRate);
  // Raw PCM (no transcoding) is yielded in whole 16-bit samples; MP3 bytes go out as they come.
  const samples = plan.pcmRate === null && plan.setting.format === "pcm";
  let pending = "";
  let hexCarry = "";
  let byteCarry = new Uint8Array(0);
  let received = false;
  let ended = false;

  const audioOf = (hex: string): Uint8Array => {
    let all = hexCarry + hex;
    hexCarry = "";
    if (all.length % 2 !== 0) {
      hexCarry = all.slice(-1);
      all = all.slice(0, -1);
    }
    const raw = decodeHex(api, all, ctx.what);
    if (encoder !== null) return encoder.push(raw);
    if (!samples) return raw;
    const joined = byteCarry.length === 0 ? raw : concatBytes([byteCarry, raw]);
    const even = joined.length & ~1;
    byteCarry = joined.slice(even);
    return joined.subarray(0, even);
  };

  /** The audio of one event (possibly empty), or throws its failure. */
  const handleEvent = (block: string): Uint8Array | null => {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data === "" || data === "[DONE]") return null;
    let json: unknown;
    try {
      json = JSON.parse(data) as unknown;
    } catch {
      throw api.malformed(ctx.what, "an event is not JSON");
    }
    const base = baseRespOf(json);
    if (base !== null && base.code !== 0) throw api.baseRespError(base.code, base.message, ctx);
    const payload = isRecord(json) ? json.data : undefined;
    if (!isRecord(payload)) return null;
    const hex = payload.audio;
    if (payload.status === 2) {
      ended = true;
      // The aggregated clip: only when nothing was streamed before it (never twice).
      if (received || typeof hex !== "string" || hex === "") return null;
    }
    return typeof hex === "string" && hex !== "" ? audioOf(hex) : null;
  };

  for await (const chunk of bytes) {
    pending += decoder.decode(chunk, { stream: true });
    for (;;) {
      const m = /\r?\n\r?\n/.exec(pending);
      if (m === null) break;
      const block = pending.slice(0, m.index);
      pending = pending.slice(m.index + m[0].length);
      const out = handleEvent(block);
      if (out !== null) {
        received = true;
        if (out.length > 0) yield out;
      }
    }
  }
  pending += decoder.decode();
  if (pending.trim() !== "") {
    const out = handleEvent(pending);
    if (out !== null) {
      received = true;
      if (out.length > 0) yield out;
    }
  }
  if (hexCarry !== "") throw api.malformed(ctx.what, "audio hex of odd length");
  if (!received) throw api.malformed(ctx.what, ended ? "the stream carried no audio" : "the stream ended without audio");
  if (encoder !== null) {
    const tail = encoder.end();
    if (tail.length > 0) yield tail;
  }
}

