/**
 * Simulated latency shared by the simulator's adapters: scaled delays, `X-Svc-Simulate` handling (D10,
 * D15) and abort support.
 */
import { setTimeout as sleep } from "node:timers/promises";
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
  let sec = typicalSec * latencyScale;
  if (simulate === "fail") sec = Math.min(sec, 0.3 * latencyScale);
  if (simulate === "slow" || simulate === "hang") sec += 1 + 2 * latencyScale;
  if (sec > 0) await sleep(sec * 1000, undefined, { signal });
  else signal?.throwIfAborted();
  if (simulate === "fail") throw new UpstreamError("simulated upstream failure (X-Svc-Simulate: fail)", false);
}
