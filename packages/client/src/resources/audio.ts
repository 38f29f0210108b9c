/**
 * Audio (D20): `client.audio` speaks, composes music and sound effects, transcribes and describes
 * audio; `client.voices` lists, previews, clones and designs voices. A call that answers audio bytes
 * resolves with the `Response` itself (body unread, headers `X-Svc-Cost-Usd`, `X-Svc-Balance-Usd`,
 * `X-Svc-Chars-Billed`, `X-Svc-Model`...), so the bytes can be streamed to a file or a player as they
 * come. These are paid POSTs without idempotency key: never retried. A multipart body (a file to
 * transcribe, understand or clone) is a `FormData` with the fields the document lists under
 * `multipart/form-data` for the operation (`file` as a Blob, the others as text).
 *
 * ```ts
 * const res = await client.audio.speech({ input: "Hello.", voice_id: "JBFqnCBsd6RMkjVDRZzb" });
 * await pipeline(Readable.fromWeb(res.body!), createWriteStream("hello.mp3"));
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { gatewayError } from "../errors.ts";
import type { operations } from "../schema.ts";
import { type Answer, type JsonBody, type Query } from "../types.ts";

/** `POST`s whose 2xx answer is audio bytes: the answer with its body unread, or throws the `APIError` of a refusal. */
async function audioBytes(call: Promise<{ error?: unknown; response: Response }>): Promise<Response> {
  const { error, response } = await call;
  if (!response.ok) throw gatewayError(response, error);
  return response;
}

/** `client.audio`. */
export class Audio {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `POST /v1/audio/speech`: speech of `input` in `voice_id`'s voice (`response_format` default
   * `mp3_44100_128`; `stream: true` sends the bytes as they are made). Resolves with the answer, body
   * unread. Throws `BadRequestError`, `InsufficientBalanceError` (402), `RateLimitError` (429)...
   */
  speech(body: JsonBody<"createSpeech">, options: RequestOptions = {}): Promise<Response> {
    return audioBytes(this.client.raw.POST("/v1/audio/speech", { body, parseAs: "stream", ...this.client.requestInit(options) }));
  }

  /** `POST /v1/audio/music`: music from `prompt` (or `lyrics`), `music_length_ms` long; the answer, body unread (audio bytes). */
  music(body: JsonBody<"createMusic">, options: RequestOptions = {}): Promise<Response> {
    return audioBytes(this.client.raw.POST("/v1/audio/music", { body, parseAs: "stream", ...this.client.requestInit(options) }));
  }

  /** `POST /v1/audio/music?save_to_blob=1`: the music stored as a file; resolves with its `AudioGeneration` (URL, duration, cost). */
  storeMusic(body: JsonBody<"createMusic">, options: RequestOptions = {}): Promise<Answer<"createMusic">> {
    return unwrap(this.client.raw.POST("/v1/audio/music", { params: { query: { save_to_blob: "1" } }, body, ...this.client.requestInit(options) })) as Promise<Answer<"createMusic">>;
  }

  /** `POST /v1/audio/sfx`: a sound effect from `text`; the answer, body unread (audio bytes). */
  soundEffect(body: JsonBody<"createSoundEffect">, options: RequestOptions = {}): Promise<Response> {
    return audioBytes(this.client.raw.POST("/v1/audio/sfx", { body, parseAs: "stream", ...this.client.requestInit(options) }));
  }

  /** `POST /v1/audio/sfx?save_to_blob=1`: the sound effect stored as a file; resolves with its `AudioGeneration`. */
  storeSoundEffect(body: JsonBody<"createSoundEffect">, options: RequestOptions = {}): Promise<Answer<"createSoundEffect">> {
    return unwrap(this.client.raw.POST("/v1/audio/sfx", { params: { query: { save_to_blob: "1" } }, body, ...this.client.requestInit(options) })) as Promise<Answer<"createSoundEffect">>;
  }

  /**
   * `POST /v1/audio/transcriptions`: the text of an audio file, given as JSON (`{audio_url}`) or as a
   * `FormData` with a `file` Blob. With `response_format: "text"` the answer is the plain text.
   */
  transcribe(body: JsonBody<"createTranscription"> | FormData, options: RequestOptions = {}): Promise<Answer<"createTranscription"> | string> {
    const json = !(body instanceof FormData);
    const format = json ? body.response_format : body.get("response_format");
    return unwrap(
      this.client.raw.POST("/v1/audio/transcriptions", {
        body: body as JsonBody<"createTranscription">,
        ...(format === "text" ? { parseAs: "text" as const } : {}),
        ...this.client.requestInit(options),
      }),
    ) as Promise<Answer<"createTranscription"> | string>;
  }

  /** `POST /v1/audio/understand`: an answer to `prompt` about an audio `file` (a `FormData` with `file`, `prompt`, `model`). */
  understand(body: FormData, options: RequestOptions = {}): Promise<Answer<"understandAudio">> {
    return unwrap(this.client.raw.POST("/v1/audio/understand", { body: body as unknown as NonNullable<operations["understandAudio"]["requestBody"]>["content"]["multipart/form-data"], ...this.client.requestInit(options) }));
  }
}

/** `client.voices`: the voice library and custom voices. */
export class Voices {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/audio/voices`: the voices of `provider` (`alpha`, the default, `beta` or `all`). */
  list(query: Query<"listVoices"> = {}, options: RequestOptions = {}): Promise<Answer<"listVoices">> {
    return unwrap(this.client.raw.GET("/v1/audio/voices", { params: { query }, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/audio/voices/alpha/{voice_id}/preview.mp3`: an alpha voice's sample; the answer, body unread (MP3). */
  async preview(voiceId: string, options: RequestOptions = {}): Promise<Response> {
    const { error, response } = await this.client.raw.GET("/v1/audio/voices/alpha/{voice_id}/preview.mp3", { params: { path: { voice_id: voiceId } }, parseAs: "stream", ...this.client.requestInit(options) });
    if (!response.ok) throw gatewayError(response, error);
    return response;
  }

  /** `POST /v1/audio/voice-clone`: a custom voice from a sample (a `FormData` with `file`, `name`, `model`). */
  clone(body: FormData, options: RequestOptions = {}): Promise<Answer<"cloneVoice">> {
    return unwrap(this.client.raw.POST("/v1/audio/voice-clone", { body: body as unknown as NonNullable<operations["cloneVoice"]["requestBody"]>["content"]["multipart/form-data"], ...this.client.requestInit(options) }));
  }

  /** `POST /v1/audio/voice-design`: a custom voice from a `description` (and `gender`, `age_group`...). */
  design(body: JsonBody<"designVoice">, options: RequestOptions = {}): Promise<Answer<"designVoice">> {
    return unwrap(this.client.raw.POST("/v1/audio/voice-design", { body, ...this.client.requestInit(options) }));
  }
}
