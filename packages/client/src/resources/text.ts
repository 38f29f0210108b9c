/**
 * Text models (D24): `client.chat.completions` (OpenAI's shape, `POST /v1/chat/completions`) and
 * `client.messages` (Anthropic's shape, `POST /v1/messages`). `create` answers the whole completion;
 * `stream` the server-sent events of `stream: true` as they come (`data` as the upstream format has it).
 * Paid POSTs without idempotency key: never retried.
 *
 * ```ts
 * const done = await client.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "Hi" }] });
 * for await (const e of client.messages.stream({ model: "claude-x", max_tokens: 64, messages })) console.log(e.data);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { gatewayError } from "../errors.ts";
import { type ServerSentEvent, sseEvents } from "../sse.ts";
import type { Answer, JsonBody } from "../types.ts";

/** The events of a streamed answer, or throws the `APIError` of a refusal; breaking out closes the stream. */
async function* events(call: Promise<{ data?: unknown; error?: unknown; response: Response }>): AsyncGenerator<ServerSentEvent> {
  const { data, error, response } = await call;
  if (!response.ok) throw gatewayError(response, error);
  const stream = data as ReadableStream<Uint8Array> | null | undefined;
  if (!stream) return;
  try {
    yield* sseEvents(stream);
  } finally {
    await stream.cancel().catch(() => {});
  }
}

/** `client.chat.completions`. */
export class ChatCompletions {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `POST /v1/chat/completions` (without `stream`): the completion, with `usage` in tokens. */
  create(body: JsonBody<"createChatCompletion">, options: RequestOptions = {}): Promise<Answer<"createChatCompletion">> {
    return unwrap(this.client.raw.POST("/v1/chat/completions", { body: { ...body, stream: false }, ...this.client.requestInit(options) })) as Promise<Answer<"createChatCompletion">>;
  }

  /** `POST /v1/chat/completions` with `stream: true`: its events (`data` is a chunk's JSON, then `[DONE]`). */
  stream(body: JsonBody<"createChatCompletion">, options: RequestOptions = {}): AsyncGenerator<ServerSentEvent> {
    return events(this.client.raw.POST("/v1/chat/completions", { body: { ...body, stream: true }, parseAs: "stream", ...this.client.requestInit(options) }));
  }
}

/** `client.chat`. */
export class Chat {
  readonly completions: ChatCompletions;

  constructor(client: APIClient) {
    this.completions = new ChatCompletions(client);
  }
}

/** `client.messages`. */
export class Messages {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `POST /v1/messages` (without `stream`): the message, with `usage` in tokens. */
  create(body: JsonBody<"createMessage">, options: RequestOptions = {}): Promise<Answer<"createMessage">> {
    return unwrap(this.client.raw.POST("/v1/messages", { body: { ...body, stream: false }, ...this.client.requestInit(options) })) as Promise<Answer<"createMessage">>;
  }

  /** `POST /v1/messages` with `stream: true`: its events (`event` names the Anthropic event, `data` its JSON). */
  stream(body: JsonBody<"createMessage">, options: RequestOptions = {}): AsyncGenerator<ServerSentEvent> {
    return events(this.client.raw.POST("/v1/messages", { body: { ...body, stream: true }, parseAs: "stream", ...this.client.requestInit(options) }));
  }
}
