/**
 * Batch transcription at ElevenLabs (Scribe, D43: the `transcribe` family when an ElevenLabs source
 * serves it): `POST /v1/speech-to-text`, multipart `file` (the audio as uploaded; ElevenLabs takes "all
 * major audio and video formats", so the gateway's bytes go as they are) and `model_id` (`scribe_v2` by
 * default), answered `{language_code, language_probability, text, words, ...}` (elevenlabs-js 2.73.0
 * `speechToText/client/requests/BodySpeechToTextV1SpeechToTextPost.ts`, `types/SpeechToTextChunkResponseModel.ts`).
 * Only `text` is used. Failures: api.ts's table (`model_not_found` -> `modelNotFound` naming the id
 * sent); a 2xx answer that is not JSON or has no string `text` is a retryable malformed answer.
 */
import { newKeyedForm } from "../keyed-http.ts";
import type { AudioTextRequest } from "../types.ts";
import { isRecord } from "../util.ts";
import type { ElevenLabsApi } from "./api.ts";

/** Largest transcription answer read, bytes (a long recording's words with timings). */
export const MAX_TRANSCRIPTION_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * Transcribes `req.audio` with ElevenLabs' `modelId`. Returns the transcript's text.
 * @throws ElevenLabsError (api.ts table, malformed answers), or the caller's abort reason.
 */
export async function transcribeBatch(api: ElevenLabsApi, req: AudioTextRequest, modelId: string, signal: AbortSignal | undefined): Promise<{ text: string }> {
  signal?.throwIfAborted();
  const form = newKeyedForm();
  form.append("model_id", modelId);
  form.append("file", new Blob([new Uint8Array(req.audio)], { type: "application/octet-stream" }), "audio");
  const answer = await api.sendForBytes("POST", api.url("/v1/speech-to-text"), { form }, { accept: "application/json", maxBytes: MAX_TRANSCRIPTION_ANSWER_BYTES }, signal);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer, "speech-to-text", { model: modelId });
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength).toString("utf8"));
  } catch {
    throw api.malformed("speech-to-text", "a 2xx answer that is not JSON");
  }
  if (!isRecord(json) || typeof json.text !== "string") throw api.malformed("speech-to-text", "an answer without a text");
  return { text: json.text };
}
