/**
 * Simulated latency shared by the simulator's adapters: scaled delays, `X-Svc-Simulate` handling (D10,
 * D15) and abort support.
 */
import { setTimeout as wait } from "node:timers/promises";
import { type SimulateMode, UpstreamError } from "../types.ts";

/**
 * Waits `typicalSec x latencyScale` seconds (plus at least 1 s more for `slow`/`hang`, even at scale 0),
 * then throws {@link UpstreamError} for `fail`. Rejects with the abort reason when `signal` aborts.
 */
export async function simulateLatency(
  typicalSec: number,
  latencyScale: number,
  simulate: SimulateMode | null,
  signal?: AbortSignal,
): Promise<void> {
  const sec = simulatedDelaySec(typicalSec, latencyScale, simulate);
  if (sec > 0) await wait(sec * 1000, undefined, { signal });
  else signal?.throwIfAborted();
  if (simulate === "fail") throw new UpstreamError("simulated upstream failure (X-Svc-Simulate: fail)", false);
}

/** The delay {@link simulateLatency} waits, seconds (what simulated progress is measured against). */
export function simulatedDelaySec(typicalSec: number, latencyScale: number, simulate: SimulateMode | null): number {
  let sec = typicalSec * latencyScale;
  if (simulate === "fail") sec = Math.min(sec, 0.3 * latencyScale);
  if (simulate === "slow" || simulate === "hang") sec += 1 + 2 * latencyScale;
  return sec;
}

/** The reason of an aborted `signal`, or a DOMException `AbortError` when it has none. */
export function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/** Waits `ms` milliseconds; rejects with the abort reason as soon as `signal` aborts. No timer for 0. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
