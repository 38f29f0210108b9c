/**
 * The one shape of every ElevenLabs generation call (speech, music, sound effects): `POST {path}?
 * output_format=<format>` with a JSON body, answered by the audio bytes in that format (elevenlabs/
 * elevenlabs-js `textToSpeech/client/Client.ts` `convert`, `music/client/Client.ts` `compose`,
 * `textToSoundEffects/client/Client.ts` `convert`: each reads a binary stream, `output_format` a query
 * parameter). `output_format` takes every gateway format name as it is (the SDK's `AllowedOutputFormats`
 * lists all eight).
 */
import { audioDurationSec, audioFormatInfo } from "../audio-convert.ts";
import type { AudioFormat } from "../types.ts";
import type { ElevenLabsApi, HttpErrorContext } from "./api.ts";

/**
 * Largest audio answer read, bytes: 64 MiB, about 6 minutes of `pcm_44100` (the largest format, 88.2
 * kB/s), above the longest clip the gateway asks for (5000 characters of speech, 5 minutes of music).
 */
export const MAX_AUDIO_BYTES = 64 * 1024 * 1024;

/** Content types that are never audio: an error page or a JSON document answered with 200. */
const NOT_AUDIO = /^(application\/(json|problem\+json|xml)|text\/)/i;

/**
 * Sends one generation call and returns its audio bytes, checked to be audio in `format`.
 * @throws ElevenLabsError: the mapped HTTP failure (api.ts table; `context.speech` for the voice check),
 *   or a retryable malformed-answer error when a 2xx answer is not audio (a JSON or HTML content type, an
 *   empty body, an MP3 format without one MPEG frame); the base's network, timeout and size failures.
 */
export async function postForAudio(
  api: ElevenLabsApi,
  path: string,
  format: AudioFormat,
  body: Record<string, unknown>,
  what: string,
  context: HttpErrorContext,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  const url = api.url(path, { output_format: format });
  const answer = await api.sendForBytes("POST", url, { json: body }, { accept: "audio/*", maxBytes: MAX_AUDIO_BYTES }, signal);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, what, context);
  const contentType = answer.headers["content-type"] ?? "";
  if (NOT_AUDIO.test(contentType.trim())) throw api.malformed(what, `a 200 answer of type ${contentType.slice(0, 60)} instead of audio`);
  if (answer.body.byteLength === 0) throw api.malformed(what, "an empty 200 answer");
  if (audioFormatInfo(format).codec === "mp3" && audioDurationSec(answer.body, format) === 0) {
    throw api.malformed(what, `a 200 answer without an MP3 frame (${format} asked)`);
  }
  return answer.body;
}
