/**
 * Prometheus metrics (prom-client) for `GET /metrics`: HTTP requests by route and status with latency
 * histograms, upstream latency and errors by model, ledger amounts by entry kind, audio pool slots held by
 * this process, and (read from the database at scrape time) open holds and jobs by status. For the latency
 * tail (issue 33): the duration of each billing step (hold, capture, release: the database's share of a
 * paid call) and the event loop's delay, as histograms.
 */
import client from "prom-client";

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

export const httpRequests = new client.Counter({
  name: "gateway_http_requests_total",
  help: "HTTP requests answered, by route pattern, method and status.",
  labelNames: ["route", "method", "status"] as const,
  registers: [registry],
});

export const httpDuration = new client.Histogram({
  name: "gateway_http_request_duration_seconds",
  help: "Time to answer an HTTP request, by route pattern and method.",
  labelNames: ["route", "method"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

export const upstreamDuration = new client.Histogram({
  name: "gateway_upstream_duration_seconds",
  help: "Time an upstream call took, by model and outcome (ok, error).",
  labelNames: ["model", "outcome"] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
  registers: [registry],
});

export const upstreamErrors = new client.Counter({
  name: "gateway_upstream_errors_total",
  help: "Upstream calls that failed, by model.",
  labelNames: ["model"] as const,
  registers: [registry],
});

export const ledgerAmount = new client.Counter({
  name: "gateway_ledger_amount_usd_total",
  help: "Absolute USD written to the ledger by this process, by entry kind.",
  labelNames: ["kind"] as const,
  registers: [registry],
});

export const ledgerEntries = new client.Counter({
  name: "gateway_ledger_entries_total",
  help: "Ledger entries written by this process, by entry kind.",
  labelNames: ["kind"] as const,
  registers: [registry],
});

export const poolSlots = new client.Gauge({
  name: "gateway_audio_pool_slots_in_use",
  help: "Audio pool slots held by requests of this process, by pool.",
  labelNames: ["pool"] as const,
  registers: [registry],
});

export const realtimeSockets = new client.Gauge({
  name: "gateway_realtime_sockets_open",
  help: "Realtime sockets (D42, D43) open in this process, by kind (speech, transcription).",
  labelNames: ["kind"] as const,
  registers: [registry],
});

export const realtimeMetered = new client.Counter({
  name: "gateway_realtime_metered_total",
  help: "Units delivered and charged on realtime sockets (characters of speech, seconds of transcribed audio), by kind and unit.",
  labelNames: ["kind", "unit"] as const,
  registers: [registry],
});

export const holdsOpen = new client.Gauge({
  name: "gateway_holds_open",
  help: "Holds placed and not yet captured or released (all processes; read from the database).",
  registers: [registry],
});

export const holdsOpenUsd = new client.Gauge({
  name: "gateway_holds_open_usd",
  help: "USD currently held (all processes; read from the database).",
  registers: [registry],
});

export const jobsByStatus = new client.Gauge({
  name: "gateway_jobs",
  help: "Media jobs by kind and status (all processes; read from the database).",
  labelNames: ["kind", "status"] as const,
  registers: [registry],
});

/** Where {@link recordLedger} sends entries instead of this thread's counters (the ledger's writer thread), or null. */
let ledgerSink: ((kind: string, amountMicros: number) => void) | null = null;

/**
 * Sends the entries recorded on this thread to `sink` instead of its own counters: the ledger's writer
 * thread (billing/ledger-writer-worker.ts) passes them to the event loop's, which `GET /metrics` reads.
 */
export function redirectLedgerMetrics(sink: (kind: string, amountMicros: number) => void): void {
  ledgerSink = sink;
}

/** Records ledger entries (called by billing/ledger.ts). Amounts in micro-USD, signed. */
export function recordLedger(kind: string, amountMicros: number): void {
  if (ledgerSink !== null) return ledgerSink(kind, amountMicros);
  ledgerEntries.inc({ kind });
  ledgerAmount.inc({ kind }, Math.abs(amountMicros) / 1_000_000);
}

/**
 * Times an upstream call of `model`: latency by outcome, and errors counted. Rethrows whatever `fn`
 * throws.
 */
export async function observeUpstream<T>(model: string, fn: () => Promise<T>): Promise<T> {
  const end = upstreamDuration.startTimer({ model });
  try {
    const out = await fn();
    end({ outcome: "ok" });
    return out;
  } catch (err) {
    end({ outcome: "error" });
    upstreamErrors.inc({ model });
    throw err;
  }
}

export const billingDuration = new client.Histogram({
  name: "gateway_billing_duration_seconds",
  help: "Time a billing step took (hold, capture, release), database round trips and group-commit waits included.",
  labelNames: ["step"] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const eventLoopDelay = new client.Histogram({
  name: "gateway_event_loop_delay_seconds",
  help: "How late the event loop ran a timer due every 20 ms: the stalls every request of the process waited through.",
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
  registers: [registry],
});

/** Times one billing step (`hold`, `capture`, `release`) into {@link billingDuration}, whatever its outcome. */
export async function observeBilling<T>(step: "hold" | "capture" | "release", fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    billingDuration.observe({ step }, (performance.now() - started) / 1000);
  }
}

/** Milliseconds between two samples of the event-loop delay. */
const LOOP_SAMPLE_MS = 20;
let loopSampler: NodeJS.Timeout | null = null;

/**
 * Starts sampling the event loop's delay into {@link eventLoopDelay} (once per process; later calls do
 * nothing): a timer due every {@link LOOP_SAMPLE_MS} ms records how late it ran. Unreferenced: it never
 * keeps the process alive.
 */
export function monitorEventLoopDelay(): void {
  if (loopSampler !== null) return;
  let due = performance.now() + LOOP_SAMPLE_MS;
  loopSampler = setInterval(() => {
    const now = performance.now();
    eventLoopDelay.observe(Math.max(0, now - due) / 1000);
    due = now + LOOP_SAMPLE_MS;
  }, LOOP_SAMPLE_MS);
  loopSampler.unref();
}
