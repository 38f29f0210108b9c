/**
 * The playground's calls to the generation endpoints, made with the playground key (key.ts) through the
 * typed client: audio answers read as blobs with their `X-Svc-*` headers, image and video jobs followed to
 * the end over `GET /v1/jobs/{id}/events` (polling with `Prefer: wait` when the stream breaks off), and chat
 * completions streamed as server-sent events over fetch (`EventSource` cannot send `Authorization`).
 *
 * Every failure is a {@link GatewayError} carrying the D1 body and the request id; a network failure rejects
 * with the fetch error (api.ts `errorMessage` words both).
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import { api, GatewayError, type paths, type Schemas, unwrap } from "../../api.ts";
import { gatewayError } from "../../../../packages/client/src/errors.ts";
import { keyHeaders, type PlaygroundKey } from "./key.ts";

/** An audio answer of speech, music or a sound effect, ready to play. */
export interface AudioClip {
  /** A `blob:` URL of the audio; revoke it (`URL.revokeObjectURL`) when the clip is replaced. */
  url: string;
  /** The answer's `Content-Type` (`audio/mpeg`...). */
  contentType: string;
  /** Size of the audio, bytes. */
  bytes: number;
  /** `X-Svc-Cost-USD`: what the call cost (USD), or null when the header is missing. */
  costUsd: number | null;
  /** `X-Svc-Balance-USD`: the balance after the charge (USD), or null. */
  balanceUsd: number | null;
  /** `X-Svc-Request-Id`: the call's usage record (`GET /v1/requests/{id}`). */
  requestId: string | null;
  /** `X-Svc-Model`: the model that answered. */
  model: string | null;
  /** `X-Svc-Test-Mode: true`: a test key's call, priced but no money moved (D32). */
  testMode: boolean;
  /** A file name for the download link, e.g. `speech-req_abc.mp3`. */
  fileName: string;
}

export type SpeechBody = NonNullable<paths["/v1/audio/speech"]["post"]["requestBody"]>["content"]["application/json"];
export type MusicBody = NonNullable<paths["/v1/audio/music"]["post"]["requestBody"]>["content"]["application/json"];
export type SfxBody = NonNullable<paths["/v1/audio/sfx"]["post"]["requestBody"]>["content"]["application/json"];
export type ImageBody = NonNullable<paths["/v1/images/generations"]["post"]["requestBody"]>["content"]["application/json"];
export type VideoBody = NonNullable<paths["/v1/videos/generations"]["post"]["requestBody"]>["content"]["application/json"];
export type MediaJob = Schemas["MediaJob"];

/** A header as a number (the `X-Svc-*-USD` headers), or null when absent or unreadable. */
function numberHeader(headers: Headers, name: string): number | null {
  const v = headers.get(name);
  if (v === null || v.trim() === "") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** The file extension of an audio content type (for the download name). */
function extensionOf(contentType: string): string {
  if (contentType.includes("mpeg")) return "mp3";
  if (contentType.includes("basic")) return "ulaw";
  if (contentType.includes("pcm") || contentType.includes("L16")) return "pcm";
  return "bin";
}

function clipOf(kind: string, blob: Blob, response: Response): AudioClip {
  const contentType = response.headers.get("content-type") ?? blob.type ?? "application/octet-stream";
  const requestId = response.headers.get("x-svc-request-id");
  return {
    url: URL.createObjectURL(new Blob([blob], { type: contentType })),
    contentType,
    bytes: blob.size,
    costUsd: numberHeader(response.headers, "x-svc-cost-usd"),
    balanceUsd: numberHeader(response.headers, "x-svc-balance-usd"),
    requestId,
    model: response.headers.get("x-svc-model"),
    testMode: response.headers.get("x-svc-test-mode") === "true",
    fileName: `${kind}-${requestId ?? Date.now()}.${extensionOf(contentType)}`,
  };
}

/** Speaks `body.input` (`POST /v1/audio/speech`). Throws GatewayError (D1) on refusal. */
export async function speak(key: PlaygroundKey, body: SpeechBody, signal?: AbortSignal): Promise<AudioClip> {
  const { data, error, response } = await api.POST("/v1/audio/speech", { body, headers: keyHeaders(key), parseAs: "blob", signal });
  if (!response.ok || !data) throw gatewayError(response, error);
  return clipOf("speech", data as unknown as Blob, response);
}

/** Composes music (`POST /v1/audio/music`, audio bytes). Throws GatewayError (D1) on refusal. */
export async function composeMusic(key: PlaygroundKey, body: MusicBody, signal?: AbortSignal): Promise<AudioClip> {
  const { data, error, response } = await api.POST("/v1/audio/music", { body, headers: keyHeaders(key), parseAs: "blob", signal });
  if (!response.ok || !data) throw gatewayError(response, error);
  return clipOf("music", data as unknown as Blob, response);
}

/** Makes a sound effect (`POST /v1/audio/sfx`, audio bytes). Throws GatewayError (D1) on refusal. */
export async function makeSoundEffect(key: PlaygroundKey, body: SfxBody, signal?: AbortSignal): Promise<AudioClip> {
  const { data, error, response } = await api.POST("/v1/audio/sfx", { body, headers: keyHeaders(key), parseAs: "blob", signal });
  if (!response.ok || !data) throw gatewayError(response, error);
  return clipOf("sfx", data as unknown as Blob, response);
}

/** Job states after which nothing changes (spec "States and transitions", D30). */
export const TERMINAL: readonly MediaJob["status"][] = ["succeeded", "failed", "refunded", "expired"];

/** Submits an image job (`POST /v1/images/generations`, 202). Throws GatewayError (D1) on refusal. */
export function submitImage(key: PlaygroundKey, body: ImageBody): Promise<MediaJob> {
  return unwrap(api.POST("/v1/images/generations", { body, headers: keyHeaders(key) }));
}

/** Submits a video job (`POST /v1/videos/generations`, 202). Throws GatewayError (D1) on refusal. */
export function submitVideo(key: PlaygroundKey, body: VideoBody): Promise<MediaJob> {
  return unwrap(api.POST("/v1/videos/generations", { body, headers: keyHeaders(key) }));
}

/**
 * Follows `job` until it is terminal, calling `onUpdate` with every new state, and returns the last one.
 * Reads `GET /v1/jobs/{id}/events` (one `job` event per change); when that stream ends early or breaks,
 * asks again with `GET /v1/jobs/{id}` and `Prefer: wait=20` (the answer comes when the job ends or after
 * 20 s). Rejects with the abort reason when `signal` fires, with GatewayError on a refusal.
 */
export async function followJob(key: PlaygroundKey, job: MediaJob, onUpdate: (job: MediaJob) => void, signal: AbortSignal): Promise<MediaJob> {
  let last = job;
  const id = job.id;
  let streamFailures = 0;
  while (!TERMINAL.includes(last.status)) {
    signal.throwIfAborted();
    if (streamFailures < 3) {
      try {
        const { error, response } = await api.GET("/v1/jobs/{id}/events", {
          params: { path: { id } },
          headers: keyHeaders(key),
          parseAs: "stream",
          signal,
        });
        if (!response.ok || !response.body) throw gatewayError(response, error);
        for await (const ev of eventsOf(response.body)) {
          if (ev.event !== "job") continue;
          last = JSON.parse(ev.data) as MediaJob;
          onUpdate(last);
        }
        if (TERMINAL.includes(last.status)) break;
      } catch (err) {
        if (signal.aborted || (err instanceof GatewayError && err.status !== 0 && err.status < 500)) throw err;
      }
      streamFailures++;
      continue;
    }
    last = await unwrap(api.GET("/v1/jobs/{id}", { params: { path: { id }, header: { prefer: "wait=20" } }, headers: keyHeaders(key), signal }));
    onUpdate(last);
  }
  return last;
}

/**
 * The items of a ReadableStream (not every browser makes streams async-iterable yet: Safari before 18.4
 * does not); the reader is released (and the stream cancelled) when the loop stops early.
 */
async function* items<T>(stream: ReadableStream<T>): AsyncGenerator<T> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** The server-sent events of a `text/event-stream` body. */
function eventsOf(body: ReadableStream<BufferSource>) {
  return items(body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()));
}

/** One message of the chat playground. */
export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
}

/** What a streamed chat answer ended with. */
export interface ChatOutcome {
  /** The model that answered (a concrete id even for an alias). */
  model: string | null;
  /** `X-Svc-Request-Id`: the usage record of the call. */
  requestId: string | null;
  /** Token counts of the final usage chunk, when the stream sent one. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /** Why the answer stopped (`stop`, `length`...), when said. */
  finishReason: string | null;
}

interface ChatChunk {
  model?: string;
  choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: ChatOutcome["usage"];
  error?: { code?: string; message?: string; type?: string; param?: string | null };
}

/**
 * Streams a chat completion (`POST /v1/chat/completions`, `stream: true` with the usage chunk): `onDelta`
 * gets each piece of text as it arrives. Resolves when `data: [DONE]` (or the end of the stream) comes;
 * an error event in the stream (the upstream broke off; nothing is charged) rejects with GatewayError.
 */
export async function streamChat(
  key: PlaygroundKey,
  model: string,
  messages: ChatMessage[],
  onDelta: (text: string) => void,
  signal?: AbortSignal,
): Promise<ChatOutcome> {
  const { error, response } = await api.POST("/v1/chat/completions", {
    body: { model, messages, stream: true, stream_options: { include_usage: true } },
    headers: keyHeaders(key),
    parseAs: "stream",
    signal,
  });
  if (!response.ok || !response.body) throw gatewayError(response, error);
  const outcome: ChatOutcome = { model: response.headers.get("x-svc-model"), requestId: response.headers.get("x-svc-request-id"), usage: null, finishReason: null };
  for await (const ev of eventsOf(response.body)) {
    if (ev.data === "[DONE]") break;
    const chunk = JSON.parse(ev.data) as ChatChunk;
    if (chunk.error) {
      throw new GatewayError({
        status: response.status,
        code: chunk.error.code ?? "provider_error",
        message: chunk.error.message ?? "The answer broke off.",
        type: chunk.error.type,
        param: chunk.error.param ?? null,
        requestId: outcome.requestId,
      });
    }
    if (chunk.model) outcome.model = chunk.model;
    if (chunk.usage) outcome.usage = chunk.usage;
    for (const c of chunk.choices ?? []) {
      if (c.delta?.content) onDelta(c.delta.content);
      if (c.finish_reason) outcome.finishReason = c.finish_reason;
    }
  }
  return outcome;
}

/**
 * The cost of a finished call from its usage record (`GET /v1/requests/{id}`, with the session): a
 * streamed chat answer carries no cost header, since the charge is known only at its end. The record may
 * still be settling for a moment after the stream closed, so a null cost is asked for again a few times.
 */
export async function costOf(requestId: string): Promise<number | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const rec = await unwrap(api.GET("/v1/requests/{id}", { params: { path: { id: requestId } } }));
    if (rec.cost_usd !== null) return rec.cost_usd;
    await new Promise((r) => setTimeout(r, 300 * (attempt + 1)));
  }
  return null;
}
