/**
 * Idle memory (issue 9, point 5): give back to the system the heap the process grew while it started or
 * while it was busy.
 *
 * V8 sizes its young generation by the traffic it sees: loading and compiling the gateway's modules grows
 * the semi-spaces to their maximum (32 MB committed for about 1 MB of live young objects), and V8 shrinks
 * them again only in a memory-reducing collection, which an idle process never runs on its own. A fixed
 * smaller young generation (`--max-semi-space-size`) would cost throughput under load; instead the process
 * runs one memory-reducing collection when it becomes idle: once after start, and again after each busy
 * period followed by {@link IDLE_COMPACT_MS} without a new request. Under load nothing changes.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Turns off V8's allocation-site pretenuring for this process (issue 33, the latency tail). Under a
 * saturated burst many short-lived request objects are alive at each young collection, so V8 decides that
 * their allocation sites make long-lived objects and allocates them straight in the old generation from
 * then on. After the burst those objects still die within milliseconds, but in the old generation: at 300
 * requests/s it grew by 1.2 MB every young collection (0.5 MB without pretenuring), and the full
 * collection that finally cleared 230 MB of it paused the event loop for about 50 ms. Set at start, before
 * any request; a V8 flag that `NODE_OPTIONS` does not accept, so it is set here for every role.
 */
export function tuneCollector(): void {
  setFlagsFromString("--no-allocation-site-pretenuring");
}

/** Quiet time (ms) with no new request, and none in flight, after which the heap is compacted. */
export const IDLE_COMPACT_MS = 30_000;

type GcFunction = (options: { type: "major"; flavor: "last-resort" }) => void;
let gcFunction: GcFunction | null = null;

/**
 * V8's collector as a function, without starting Node with `--expose-gc`: the flag is turned on just long
 * enough to create one context that holds `gc`, then off again, so `globalThis.gc` stays undefined.
 */
function collector(): GcFunction {
  if (gcFunction) return gcFunction;
  setFlagsFromString("--expose-gc");
  try {
    gcFunction = runInNewContext("gc") as GcFunction;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
  return gcFunction;
}

/**
 * Runs one memory-reducing ("last resort") full collection: the young generation shrinks to its minimum
 * and freed pages are returned to the system. Blocks the event loop for tens of ms (about 60 ms for the
 * gateway's heap): call it only when the process is idle.
 * @returns the change in resident set size, in bytes (negative when memory was given back).
 */
export function compactHeap(): number {
  const before = process.memoryUsage.rss();
  collector()({ type: "major", flavor: "last-resort" });
  return process.memoryUsage.rss() - before;
}

/** The HTTP server events the idle compactor counts (a `node:http` Server is one). */
export interface RequestSource {
  on(event: "request", listener: (req: unknown, res: { once(event: "close", listener: () => void): unknown }) => void): unknown;
}

/**
 * Compacts the heap once now and then whenever `server` has served requests and been idle (no request
 * in flight and none started) for `idleMs`. The timer is unref'd: it never keeps the process alive.
 * @returns `stop()`, which clears the timer, and `compactions()`, how many collections it has run.
 */
export function compactWhenIdle(
  server: RequestSource | null,
  idleMs: number = IDLE_COMPACT_MS,
): { stop(): void; compactions(): number } {
  compactHeap();
  let compactions = 1;
  if (!server) return { stop() {}, compactions: () => compactions };
  let started = 0;
  let inFlight = 0;
  let seenAtLastTick = 0;
  let seenAtLastCompaction = 0;
  server.on("request", (_req, res) => {
    started += 1;
    inFlight += 1;
    res.once("close", () => {
      inFlight -= 1;
    });
  });
  const timer = setInterval(() => {
    const quiet = started === seenAtLastTick && inFlight === 0;
    seenAtLastTick = started;
    if (quiet && started !== seenAtLastCompaction) {
      seenAtLastCompaction = started;
      compactHeap();
      compactions += 1;
    }
  }, idleMs);
  timer.unref();
  return { stop: () => clearInterval(timer), compactions: () => compactions };
}
