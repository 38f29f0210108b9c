/**
 * An open-loop, evenly paced load generator for latency below saturation (issue "Fast on the scale
 * path", the fixed-rate row).
 *
 * autocannon's `overallRate` sends each second's requests in a burst and reports whole milliseconds, so
 * its p99 at a fixed rate is queueing inside the load generator. Here request i is due at
 * `start + i / rate` seconds whatever the earlier ones are doing (open loop: no coordinated omission), is
 * sent on the first free connection of a keep-alive undici pool, and its latency is measured with
 * `performance.now()` from the moment it was due to the last byte of the answer, in fractional ms. A
 * request that waits for a connection counts that wait as latency, as a customer would feel it.
 */
import { randomBytes } from "node:crypto";
import { Pool } from "undici";

/** What one paced run measured. Latencies in ms (fractional), from the due time to the last byte. */
export interface PacedResult {
  /** Requests answered per second over the run. */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Answers that were not 2xx, and transport errors. */
  non2xx: number;
  errors: number;
  /** How late the generator itself sent requests (due time to send), p99 in ms: its own timer jitter. */
  sendLagP99: number;
  /** Every request's latency, ms, in sending order (to merge several runs). */
  latencies: Float64Array;
  /**
   * With `traceparents`: each request's W3C `traceparent` as sent, its due time (ms since the epoch,
   * fractional) and its latency (ms), in sending order.
   */
  requests?: { traceparent: string; dueEpochMs: number; latencyMs: number }[];
}

/** The value at quantile `q` (0..1) of `sorted` (ascending). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/**
 * Sends `rate` requests per second for `durationS` seconds to `url` over at most `connections`
 * keep-alive connections. `keys` rotate per request as the bearer token (one customer each).
 */
export async function paced(opts: {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  rate: number;
  durationS: number;
  connections: number;
  keys?: string[];
  /**
   * Sends a fresh sampled `traceparent` with every request and returns each request's (see
   * {@link PacedResult.requests}): a traced gateway's spans can then be joined to the latency measured here.
   */
  traceparents?: boolean;
}): Promise<PacedResult> {
  const u = new URL(opts.url);
  const pool = new Pool(u.origin, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const total = Math.round(opts.rate * opts.durationS);
  const intervalMs = 1000 / opts.rate;
  const latencies = new Float64Array(total);
  const lags = new Float64Array(total);
  const parents: string[] = [];
  const dues = new Float64Array(total);
  let done = 0;
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  let allDone: () => void = () => {};
  const finished = new Promise<void>((r) => (allDone = r));
  const path = u.pathname + u.search;

  const fire = (i: number, due: number) => {
    lags[i] = performance.now() - due;
    const headers = { ...(opts.headers ?? {}) };
    if (opts.keys) headers.authorization = `Bearer ${opts.keys[i % opts.keys.length]}`;
    if (opts.traceparents) {
      parents[i] = headers.traceparent = `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
      dues[i] = performance.timeOrigin + due;
    }
    pool
      .request({ method: opts.method ?? "GET", path, headers, body: opts.body })
      .then(async (res) => {
        await res.body.dump({ limit: Number.POSITIVE_INFINITY });
        if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
      })
      .catch(() => {
        errors++;
      })
      .finally(() => {
        latencies[i] = performance.now() - due;
        if (++done === total) allDone();
      });
  };

  const start = performance.now() + 5;
  // Sleep with a timer until about 1 ms before the next due time, then send everything that is due:
  // timers are coarse (about 1 ms), and the lag is recorded so a late generator shows in the result.
  const tick = () => {
    const now = performance.now();
    while (sent < total && start + sent * intervalMs <= now) {
      fire(sent, start + sent * intervalMs);
      sent++;
    }
    if (sent < total) {
      const wait = start + sent * intervalMs - performance.now();
      if (wait > 1.5) setTimeout(tick, Math.floor(wait - 1));
      else setImmediate(tick);
    }
  };
  tick();
  await finished;
  const elapsedS = (performance.now() - start) / 1000;
  await pool.close();
  const sorted = Float64Array.from(latencies).sort();
  const lagSorted = Float64Array.from(lags).sort();
  return {
    rps: total / elapsedS,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    non2xx,
    errors,
    sendLagP99: quantile(lagSorted, 0.99),
    latencies,
    requests: opts.traceparents ? parents.map((traceparent, i) => ({ traceparent, dueEpochMs: dues[i]!, latencyMs: latencies[i]! })) : undefined,
  };
}

/**
 * One result of several paced runs of one target (slices alternating with other targets'): the requests
 * per second over their summed time, quantiles over every latency, the worst send lag.
 */
export function mergePaced(runs: readonly PacedResult[]): PacedResult {
  const all = new Float64Array(runs.reduce((n, r) => n + r.latencies.length, 0));
  let at = 0;
  for (const r of runs) {
    all.set(r.latencies, at);
    at += r.latencies.length;
  }
  const sorted = Float64Array.from(all).sort();
  const seconds = runs.reduce((t, r) => t + r.latencies.length / r.rps, 0);
  return {
    rps: all.length / seconds,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    sendLagP99: Math.max(...runs.map((r) => r.sendLagP99)),
    latencies: all,
    requests: runs.every((r) => r.requests) ? runs.flatMap((r) => r.requests ?? []) : undefined,
  };
}
