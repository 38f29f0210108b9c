/**
 * The OpenTelemetry SDK behind tracing.ts (D40): a tracer provider with a batch span processor and the
 * OTLP/HTTP (JSON) exporter, W3C trace context in and out. Loaded by services.ts only when tracing is on,
 * so a gateway without `OTEL_EXPORTER_OTLP_ENDPOINT` never loads the SDK.
 *
 * Nothing is registered globally (no global tracer provider, context manager or propagator): contexts are
 * built and passed explicitly, and tracing.ts carries the current one. Two gateways in one process (tests)
 * each have their own provider, and a library that uses the global OpenTelemetry API sees the no-op one.
 */
import { type Context, defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, ParentBasedSampler, AlwaysOnSampler, TracerProvider } from "@opentelemetry/sdk-trace";
import type { TracingConfig } from "../config.ts";
import type { SpanAttributes, SpanKind as GwSpanKind, TraceScope, TraceSpan, Tracing } from "./tracing.ts";

const KINDS: Record<GwSpanKind, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  internal: SpanKind.INTERNAL,
  consumer: SpanKind.CONSUMER,
};

/** Attributes without their undefined values (the SDK warns about them). */
function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const key in attributes) {
    const v = attributes[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** The gateway's view of an SDK span. */
class OtelSpan implements TraceSpan {
  readonly #span: Span;
  #ended = false;

  constructor(span: Span) {
    this.#span = span;
  }

  set(attributes: SpanAttributes): void {
    if (!this.#ended) this.#span.setAttributes(defined(attributes));
  }

  fail(errorType: string): void {
    if (this.#ended) return;
    this.#span.setAttribute("error.type", errorType);
    this.#span.setStatus({ code: SpanStatusCode.ERROR });
  }

  rename(name: string): void {
    if (!this.#ended) this.#span.updateName(name);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#span.end();
  }
}

const propagator = new W3CTraceContextPropagator();

/** A scope over an SDK context whose active span is `span`. */
class OtelScope implements TraceScope {
  readonly span: OtelSpan;
  readonly root: TraceSpan;
  readonly captureContent: boolean;
  readonly #tracer: Tracer;
  readonly #context: Context;
  #traceparent: string | null = null;

  constructor(tracer: Tracer, context: Context, span: OtelSpan, root: TraceSpan | null, captureContent: boolean) {
    this.#tracer = tracer;
    this.#context = context;
    this.span = span;
    this.root = root ?? span;
    this.captureContent = captureContent;
  }

  child(name: string, kind: GwSpanKind, attributes: SpanAttributes): TraceScope {
    const span = this.#tracer.startSpan(name, { kind: KINDS[kind], attributes: defined(attributes) }, this.#context);
    return new OtelScope(this.#tracer, trace.setSpan(this.#context, span), new OtelSpan(span), this.root, this.captureContent);
  }

  traceparent(): string {
    if (this.#traceparent === null) {
      const carrier: Record<string, string> = {};
      propagator.inject(this.#context, carrier, defaultTextMapSetter);
      this.#traceparent = carrier.traceparent ?? "";
    }
    return this.#traceparent;
  }
}

/**
 * The gateway's {@link Tracing} over the SDK, exporting to `config.url`. Spans are batched (up to 512 per
 * export, every second) and dropped past 4096 waiting: tracing never holds requests back.
 */
export function createOtelTracing(config: TracingConfig): Tracing {
  const exporter = new OTLPTraceExporter({ url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ ...config.resourceAttributes, "service.name": config.serviceName }),
    // An incoming trace keeps its caller's sampling decision; a new one is always sampled.
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000, maxQueueSize: 4096, maxExportBatchSize: 512 })],
  });
  const tracer = provider.getTracer("media-gateway");
  const start = (parent: Context, name: string, kind: GwSpanKind, attributes: SpanAttributes): TraceScope => {
    const span = tracer.startSpan(name, { kind: KINDS[kind], attributes: defined(attributes) }, parent);
    return new OtelScope(tracer, trace.setSpan(parent, span), new OtelSpan(span), null, config.captureContent);
  };
  const extract = (traceparent: string | null | undefined, tracestate?: string): Context => {
    if (!traceparent) return ROOT_CONTEXT;
    const carrier: Record<string, string> = { traceparent };
    if (tracestate) carrier.tracestate = tracestate;
    // A malformed header extracts nothing: the work starts a new trace.
    return propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  };
  return {
    startRequest: (req) => start(extract(req.traceparent, req.tracestate), req.method, "server", { "http.request.method": req.method }),
    continueTrace: (traceparent, name, kind, attributes) => start(extract(traceparent), name, kind, attributes),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
