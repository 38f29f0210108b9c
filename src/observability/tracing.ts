/**
 * Tracing (D40): the one interface the rest of the gateway calls. The OpenTelemetry SDK lies behind it in
 * otel.ts, loaded only when tracing is on (`OTEL_EXPORTER_OTLP_ENDPOINT`); nothing else imports the SDK.
 *
 * The current span travels with the async work in one AsyncLocalStorage: the HTTP layer enters a request's
 * scope, the job runner a job's, the webhook loop a delivery's. The helpers below ({@link inSpan},
 * {@link inAttemptSpan}, {@link annotateRequest}, {@link traceHeaders}, {@link currentTraceparent}) read it;
 * outside any scope (tracing off, or work that belongs to no request) they do nothing but call through,
 * so code on the hot path pays one `getStore()` and no allocation when tracing is off.
 *
 * What goes into a span (D40): ids, model ids, amounts, statuses, durations. Never a key, secret, password,
 * prompt, input text or audio; the input only with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`
 * ({@link AttemptInfo.content}).
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** Values a span attribute may take; `undefined` attributes are left out. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** One span as the gateway handles it (the SDK's span behind it). */
export interface TraceSpan {
  /** Sets attributes (later values replace earlier ones). */
  set(attributes: SpanAttributes): void;
  /** Marks the span failed: status ERROR and `error.type` (a short code: a class name, an error code, an HTTP status). */
  fail(errorType: string): void;
  /** Renames the span (a SERVER span learns its route once routed). */
  rename(name: string): void;
  /** Ends the span (once; later calls do nothing). */
  end(): void;
}

/** The span kinds the gateway uses. */
export type SpanKind = "server" | "client" | "internal" | "consumer";

/**
 * Where a piece of work stands in its trace: its current span, the span that gathers the request's (or the
 * job's) billing attributes, and the tracer that makes child spans. Made by a {@link Tracing}.
 */
export interface TraceScope {
  readonly span: TraceSpan;
  /** The request's SERVER span (or the job's span): where `gw.hold_usd`, `gw.cost_usd` land. */
  readonly root: TraceSpan;
  /** Whether upstream spans may carry the call's input (D40 opt-in). */
  readonly captureContent: boolean;
  /** A child span of this scope's span, and the scope it opens. */
  child(name: string, kind: SpanKind, attributes: SpanAttributes): TraceScope;
  /** The W3C `traceparent` of this scope's span. */
  traceparent(): string;
}

/** What the HTTP layer reports of a request when it starts. */
export interface RequestStart {
  method: string;
  /** The incoming `traceparent` header, if any: the request continues that trace. */
  traceparent: string | undefined;
  /** The `tracestate` header, if any. */
  tracestate: string | undefined;
}

/**
 * A gateway's tracer (otel.ts): made once per gateway by services.ts when tracing is on. Off, the gateway
 * has none (`Services.tracing` is null) and nothing calls it.
 */
export interface Tracing {
  /** Starts a request's SERVER span (named by {@link serverSpanName} at its end) and its scope. */
  startRequest(start: RequestStart): TraceScope;
  /**
   * A fresh scope for work that continues `traceparent` (a job row's, D40), or a new trace when it is null
   * or malformed: a span `name` of `kind` with `attributes`.
   */
  continueTrace(traceparent: string | null, name: string, kind: SpanKind, attributes: SpanAttributes): TraceScope;
  /** Sends the spans ended so far (tests, and an operator's last look before a shutdown). */
  flush(): Promise<void>;
  /** Sends the spans ended so far and stops (services' close). */
  shutdown(): Promise<void>;
}

const scopes = new AsyncLocalStorage<TraceScope>();

/** The scope of the running work, or undefined (tracing off, or no request or job around it). */
export function currentScope(): TraceScope | undefined {
  return scopes.getStore();
}

/** Runs `fn` inside `scope`: every span started by the work it starts is a child of `scope`'s span. */
export function runInScope<T>(scope: TraceScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/**
 * Runs `fn` under `tracing.continueTrace(...)` (when `tracing` is set) and ends that span when `fn`
 * settles, marking it failed when `fn` throws. Without `tracing`, just `fn()`.
 */
export async function inTrace<T>(
  tracing: Tracing | null | undefined,
  traceparent: string | null,
  name: string,
  kind: SpanKind,
  attributes: SpanAttributes,
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracing) return fn();
  const scope = tracing.continueTrace(traceparent, name, kind, attributes);
  return finish(scope, () => scopes.run(scope, fn));
}

async function finish<T>(scope: TraceScope, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    scope.span.fail(errorTypeOf(err));
    throw err;
  } finally {
    scope.span.end();
  }
}

/**
 * A child span `name` of the current (or the given) scope around `fn` (the billing steps), failed when `fn`
 * throws. Without a scope, just `fn()`.
 */
export function inSpan<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>, scope: TraceScope | undefined = scopes.getStore()): Promise<T> {
  if (scope === undefined) return fn();
  const child = scope.child(name, "internal", attributes);
  return finish(child, () => scopes.run(child, fn));
}

/** Sets attributes on the request's SERVER span (or the job's span) of the current (or given) scope. */
export function annotateRequest(attributes: SpanAttributes, scope: TraceScope | undefined = scopes.getStore()): void {
  scope?.root.set(attributes);
}

/** Sets attributes on the current span (an upstream attempt's `server.address`, its response model). */
export function annotateSpan(attributes: SpanAttributes): void {
  scopes.getStore()?.span.set(attributes);
}

/** Marks the current span failed with `errorType` (an answer that is an error without a throw). */
export function failSpan(errorType: string): void {
  scopes.getStore()?.span.fail(errorType);
}

/** The W3C `traceparent` of the current span, or null outside a scope (what a job row stores, D40). */
export function currentTraceparent(): string | null {
  return scopes.getStore()?.traceparent() ?? null;
}

/**
 * Adds the current span's `traceparent` to `headers` (an outgoing upstream call, D40) and returns them;
 * unchanged outside a scope.
 */
export function traceHeaders<H extends Record<string, string>>(headers: H): H {
  const scope = scopes.getStore();
  if (scope !== undefined) (headers as Record<string, string>).traceparent = scope.traceparent();
  return headers;
}

/** The `gen_ai.operation.name` values of D40. */
export type GenAiOperation =
  | "chat"
  | "text_to_speech"
  | "generate_music"
  | "generate_sound_effect"
  | "design_voice"
  | "clone_voice"
  | "generate_image"
  | "generate_video"
  | "transcribe"
  | "understand_audio";

/** `gen_ai.output.type` of each operation. */
const OUTPUT_TYPE: Record<GenAiOperation, string> = {
  chat: "text",
  text_to_speech: "speech",
  generate_music: "audio",
  generate_sound_effect: "audio",
  design_voice: "json",
  clone_voice: "json",
  generate_image: "image",
  generate_video: "video",
  transcribe: "text",
  understand_audio: "text",
};

/** One upstream attempt as its CLIENT span describes it (D40). */
export interface AttemptInfo {
  operation: GenAiOperation;
  /** The catalog id asked for (`gen_ai.request.model`). */
  model: string;
  /** The protocol of the source (`elevenlabs`, `openai`, ...), or `simulator` (`gen_ai.provider.name`). */
  provider: string;
  /** The source's name (`UPSTREAMS` entry), or null for the simulator (`gw.source`). */
  source: string | null;
  /** 1 for the call's first attempt, 2 for the next (`gw.attempt`). */
  attempt: number;
  /** The fallback layer of the attempt (`gw.fallback_layer`). */
  fallbackLayer: number;
  /** The source's base URL (its host becomes `server.address`), or null for the simulator. */
  baseUrl?: string | null;
  /** The upstream's model id when the caller knows it (`gen_ai.response.model`). */
  upstreamModel?: string | null;
  /**
   * The call's input (chat messages as JSON, the text to speak, a prompt), read only when content capture
   * is on (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).
   */
  content?: () => string;
}

/** Longest captured input, characters (content capture only). */
const MAX_CONTENT_CHARS = 8192;

/**
 * Runs one upstream attempt `fn` in a CLIENT span named `"{operation} {model}"` with the GenAI attributes of
 * D40 (`gen_ai.*` attributes go on these spans only); a failure sets `error.type`. `fn` gets the span to add
 * what the answer tells (token usage). `describe` is called only when the work is traced; without a scope,
 * just `fn(null)`.
 */
export function inAttemptSpan<T>(describe: () => AttemptInfo, fn: (span: TraceSpan | null) => Promise<T>): Promise<T> {
  const scope = scopes.getStore();
  if (scope === undefined) return fn(null);
  const child = attemptScope(scope, describe());
  return finish(child, () => scopes.run(child, () => fn(child.span)));
}

/**
 * As {@link inAttemptSpan}, for an attempt whose answer goes on after `fn` resolved (a stream that yielded
 * its first delta): a failure of `fn` fails and ends the span, but on success the span stays open and is
 * handed to `opened`, whose caller ends it when the stream ends (with the token usage it reported). The
 * span's scope covers `fn` only. Without a scope, just `fn()` (and `opened` is not called).
 */
export function inOpenAttemptSpan<T>(describe: () => AttemptInfo, fn: () => Promise<T>, opened: (span: TraceSpan) => void): Promise<T> {
  const scope = scopes.getStore();
  if (scope === undefined) return fn();
  const child = attemptScope(scope, describe());
  return scopes.run(child, fn).then(
    (value) => {
      opened(child.span);
      return value;
    },
    (err: unknown) => {
      child.span.fail(errorTypeOf(err));
      child.span.end();
      throw err;
    },
  );
}

/** The CLIENT span of one attempt under `scope` (see {@link inAttemptSpan}). */
function attemptScope(scope: TraceScope, info: AttemptInfo): TraceScope {
  return scope.child(`${info.operation} ${info.model}`, "client", {
    "gen_ai.operation.name": info.operation,
    "gen_ai.provider.name": info.provider,
    "gen_ai.request.model": info.model,
    "gen_ai.response.model": info.upstreamModel ?? (info.provider === "simulator" ? info.model : undefined),
    "gen_ai.output.type": OUTPUT_TYPE[info.operation],
    "server.address": hostOf(info.baseUrl),
    "gw.source": info.source ?? "simulator",
    "gw.attempt": info.attempt,
    "gw.fallback_layer": info.fallbackLayer,
    "gen_ai.input.messages": scope.captureContent && info.content ? info.content().slice(0, MAX_CONTENT_CHARS) : undefined,
  });
}

/** The host of `url`, or undefined (no URL, or not one). */
function hostOf(url: string | null | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

/**
 * Notes on the current attempt span what an outgoing upstream request says of itself (called by the
 * protocol adapters' HTTP layer): the upstream model id, when its JSON body names one in `model` or
 * `model_id` (`gen_ai.response.model`). Nothing else of the body is read.
 */
export function noteUpstreamRequest(body: unknown): void {
  const scope = scopes.getStore();
  if (scope === undefined || body === null || typeof body !== "object") return;
  const b = body as { model?: unknown; model_id?: unknown };
  const model = typeof b.model === "string" ? b.model : typeof b.model_id === "string" ? b.model_id : undefined;
  if (model !== undefined) scope.span.set({ "gen_ai.response.model": model.slice(0, 200) });
}

/**
 * Notes on the current attempt span the upstream's model id when an adapter names it outside a JSON body
 * (fal's endpoint id and BFL's endpoint are in the URL path): `gen_ai.response.model`.
 */
export function noteUpstreamModel(id: string): void {
  const scope = scopes.getStore();
  if (scope !== undefined && id.length > 0) scope.span.set({ "gen_ai.response.model": id.slice(0, 200) });
}

/** The token usage attributes of a text answer (`gen_ai.usage.*`). */
export function tokenUsage(usage: { promptTokens: number; completionTokens: number }): SpanAttributes {
  return { "gen_ai.usage.input_tokens": usage.promptTokens, "gen_ai.usage.output_tokens": usage.completionTokens };
}

/**
 * A short `error.type` for `err`: its `code` when it has a string one (an AppError's `provider_error`), else
 * its class name. Never its message (it may quote the input).
 */
export function errorTypeOf(err: unknown): string {
  if (err !== null && typeof err === "object") {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
    const kind = (err as { kind?: unknown }).kind;
    const status = (err as { status?: unknown }).status;
    if (kind === "http" && typeof status === "number") return `http_${status}`;
    if (typeof kind === "string" && /^[a-z_]{1,32}$/.test(kind)) return kind;
    if (err instanceof Error) return err.name || "Error";
  }
  return "_OTHER";
}

/** The SERVER span's name: `{method} {route}` (or the method alone for a request no route matched). */
export function serverSpanName(method: string, route: string | undefined): string {
  return route === undefined ? method : `${method} ${route}`;
}
