/**
 * OpenAI's speech in the OpenAI dialect (D37, D48): `POST /openai/v1/audio/speech`, what `client.audio.speech
 * .create` of the `openai` SDK sends. The request becomes the native speech request (src/audio/speech.ts: the
 * same validation, hold, upstream, charge, usage record and `X-Svc-*` headers as `POST /v1/audio/speech`):
 *
 * - `model`: OpenAI's names (`tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`, models.ts) name catalog models; catalog
 *   ids work as they are. `X-Svc-Model` answers with the catalog id.
 * - `voice`: OpenAI's voice names ({@link OPENAI_VOICES}) name fixed alpha library voices (ElevenLabs' premade
 *   voices, present in the simulator's library too); any other value, or `{id}`, is a voice id as natively.
 * - `response_format`: `mp3` (default), `wav` and `pcm` (24 kHz 16-bit mono, as OpenAI's), or a native format
 *   name; `opus`, `aac` and `flac` are refused by the schema (400 `invalid_request`): no source makes them.
 * - `speed`: OpenAI's range 0.25 to 4.0; only 1.0 is served (400 `invalid_request` otherwise: the audio would
 *   not be what was asked). `instructions` is accepted and not used. `stream_format` `audio` only.
 * - The native fields (`voice_id`, `text`, `voice_settings`, `stream`) keep working.
 */
import { Readable } from "node:stream";
import { createSpeech, type SpeechBody } from "../../../audio/speech.ts";
import { errors } from "../../../errors.ts";
import type { Services } from "../../../services.ts";
import type { AudioFormat } from "../../../upstreams/types.ts";
import { MODEL_CALL, principalOf } from "../../auth.ts";
import { callContext, speechDepsOf } from "../../call-context.ts";
import { setCostHeaders } from "../../cost-headers.ts";
import type { App } from "../../types.ts";
import { catalogSpeechModel } from "./models.ts";
import { type OpenAISpeechBody, openAISpeechSchema } from "./speech-schemas.ts";

/**
 * OpenAI's voice names and the alpha library voices they name (D48): ElevenLabs' premade voices, by their
 * real ids, picked by likeness to OpenAI's descriptions of its voices. Listed in docs/dialects.md.
 */
export const OPENAI_VOICES: Readonly<Record<string, { voiceId: string; name: string }>> = Object.freeze({
  alloy: { voiceId: "SAz9YHcvj6GT2YYXdXww", name: "River" },
  ash: { voiceId: "TX3LPaxmHKxFdv7VOQHJ", name: "Liam" },
  ballad: { voiceId: "N2lVS1w4EtoT3dr4eOWO", name: "Callum" },
  coral: { voiceId: "cgSgspJ2msm6clMCkdW9", name: "Jessica" },
  echo: { voiceId: "cjVigY5qzO86Huf0OWal", name: "Eric" },
  fable: { voiceId: "JBFqnCBsd6RMkjVDRZzb", name: "George" },
  nova: { voiceId: "FGY2WhTYpPnrIDTdsKH5", name: "Laura" },
  onyx: { voiceId: "nPczCjzI2devNBz1zQrb", name: "Brian" },
  sage: { voiceId: "XrExE9yKIg1WjnnlVkGX", name: "Matilda" },
  shimmer: { voiceId: "EXAVITQu4vr4xnSDxMaL", name: "Sarah" },
  verse: { voiceId: "bIHbv24MWmeRgasZH58o", name: "Will" },
  marin: { voiceId: "pFZP5JQG7iQjIQuC4Bku", name: "Lily" },
  cedar: { voiceId: "iP95p4xoKVk53GoZ742B", name: "Chris" },
});

/** OpenAI's `response_format` values the gateway serves, as native formats; `wav` is the PCM in a WAV file. */
const OPENAI_FORMATS: Readonly<Record<string, AudioFormat>> = Object.freeze({ mp3: "mp3_44100_128", pcm: "pcm_24000", wav: "pcm_24000" });
/** The sample rate of OpenAI's `pcm` and `wav` (16-bit mono). */
const PCM_RATE = 24_000;

/** The voice id a `voice` names: an OpenAI voice name's library voice, `{id}`'s id, or the value itself. */
function voiceIdOf(voice: OpenAISpeechBody["voice"]): string | undefined {
  if (voice === undefined) return undefined;
  if (typeof voice !== "string") return voice.id;
  return Object.hasOwn(OPENAI_VOICES, voice) ? OPENAI_VOICES[voice].voiceId : voice;
}

/**
 * The native speech request of an OpenAI one (see the module comment), and whether the answer is a WAV file.
 * @throws AppError 400 `invalid_request` (a `speed` other than 1).
 */
export function nativeSpeechOf(body: OpenAISpeechBody): { native: SpeechBody; wav: boolean } {
  if (body.speed !== undefined && body.speed !== 1) {
    throw errors.invalidRequest(`speed ${body.speed} is not available: the gateway serves speech at normal speed only (speed 1.0, the default). Nothing was charged.`, "speed");
  }
  const format = body.response_format;
  const wav = format === "wav";
  const nativeFormat = format === undefined ? undefined : Object.hasOwn(OPENAI_FORMATS, format) ? OPENAI_FORMATS[format] : (format as AudioFormat);
  const voiceId = body.voice_id ?? voiceIdOf(body.voice);
  const native: SpeechBody = {
    ...(body.model !== undefined ? { model: catalogSpeechModel(body.model) as SpeechBody["model"] } : {}),
    ...(body.input !== undefined ? { input: body.input } : {}),
    ...(body.text !== undefined ? { text: body.text } : {}),
    ...(voiceId !== undefined ? { voice_id: voiceId } : {}),
    ...(nativeFormat !== undefined ? { response_format: nativeFormat } : {}),
    ...(body.voice_settings !== undefined ? { voice_settings: body.voice_settings } : {}),
    // A WAV file is written whole (its header holds the length).
    ...(body.stream !== undefined ? { stream: body.stream && !wav } : {}),
  };
  return { native, wav };
}

/** 16-bit mono PCM at `rate` Hz as a WAV file (a 44-byte RIFF header, then the samples). */
export function wavOf(pcm: Uint8Array, rate: number): Buffer {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "latin1");
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write("WAVE", 8, "latin1");
  header.write("fmt ", 12, "latin1");
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28); // bytes per second
  header.writeUInt16LE(2, 32); // bytes per frame
  header.writeUInt16LE(16, 34); // bits per sample
  header.write("data", 36, "latin1");
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

/** Every byte of a stream of chunks. */
async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

/** `POST /v1/audio/speech` of the dialect (see the module comment), on the `/openai` scope (API key auth hooked by routes.ts). */
export function openAISpeechRoutes(app: App, services: Services): void {
  app.post("/v1/audio/speech", { schema: openAISpeechSchema, config: MODEL_CALL }, async (req, reply) => {
    const { native, wav } = nativeSpeechOf(req.body ?? {});
    const out = await createSpeech(speechDepsOf(services, req), principalOf(req).accountId, native, callContext(services, req, reply));
    setCostHeaders(reply, out);
    if (wav) {
      const pcm = out.audio.kind === "bytes" ? out.audio.body : await collect(out.audio.chunks);
      return reply.header("content-type", "audio/wav").send(wavOf(pcm, PCM_RATE));
    }
    reply.header("content-type", out.contentType);
    if (out.audio.kind === "bytes") return reply.send(Buffer.from(out.audio.body.buffer, out.audio.body.byteOffset, out.audio.body.byteLength));
    return reply.send(Readable.from(out.audio.chunks, { objectMode: false }));
  });
}
