/**
 * An OTLP/HTTP trace receiver on loopback for the tests (D40): a node:http server that takes
 * `POST /v1/traces` with JSON bodies (the OTLP JSON encoding, as the official exporter sends it), answers
 * 200 `{}` and keeps every span, decoded: ids in hex, the kind by name, attributes as plain values.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** One received span. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: "internal" | "server" | "client" | "producer" | "consumer" | "unspecified";
  attributes: Record<string, string | number | boolean>;
  /** 2 = ERROR. */
  statusCode: number;
  /** `service.name` of the resource that sent it. */
  service: string;
  /** Start and end, ms since the epoch (fractional). */
  startMs: number;
  endMs: number;
}

export interface OtlpReceiver {
  /** Base URL: use it as `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  spans: ReceivedSpan[];
  /** Headers of every export request, in order. */
  exports: IncomingHttpHeaders[];
  close(): Promise<void>;
}

const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"] as const;

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

function valueOf(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return JSON.stringify(v);
}

interface KeyValue {
  key: string;
  value: AnyValue;
}

interface ExportBody {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: KeyValue[];
        status?: { code?: number };
        startTimeUnixNano?: string | number;
        endTimeUnixNano?: string | number;
      }[];
    }[];
  }[];
}

/** Starts the receiver on an ephemeral loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const exports: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || !(req.headers["content-type"] ?? "").includes("json")) {
        res.writeHead(415).end();
        return;
      }
      exports.push(req.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportBody;
      for (const rs of body.resourceSpans ?? []) {
        const service = String(valueOf(rs.resource?.attributes?.find((a) => a.key === "service.name")?.value ?? {}));
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              name: s.name,
              kind: KINDS[s.kind ?? 0] ?? "unspecified",
              attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
              statusCode: s.status?.code ?? 0,
              service,
              startMs: Number(BigInt(s.startTimeUnixNano ?? 0) / 1000n) / 1000,
              endMs: Number(BigInt(s.endTimeUnixNano ?? 0) / 1000n) / 1000,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    exports,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
