/**
 * A probe loaded into a benchmark's gateway process with `--import ./bench/probe.ts` (never part of the
 * product): the event-loop delay histogram (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution) and
 * garbage-collection pauses, written as one JSON line to `BENCH_PROBE_FILE` on SIGUSR2, then reset, so
 * the benchmark reads what happened during one measured run. Delays and pauses in ms.
 */
import { appendFileSync } from "node:fs";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const file = process.env.BENCH_PROBE_FILE;
if (file) {
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  let gcs: number[] = [];
  const gcKinds: Record<string, number> = {};
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs.push(e.duration);
      const kind = String(((e as { detail?: { kind?: number } }).detail)?.kind ?? "?");
      gcKinds[kind] = (gcKinds[kind] ?? 0) + e.duration;
    }
  }).observe({ entryTypes: ["gc"] });
  const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;
  process.on("SIGUSR2", () => {
    // BENCH_PROBE_LIVE=1: also the live heap, after a full collection (blocks the process: diagnosis only).
    let liveHeapMb: number | undefined;
    if (process.env.BENCH_PROBE_LIVE === "1") {
      setFlagsFromString("--expose-gc");
      (runInNewContext("gc") as () => void)();
      setFlagsFromString("--no-expose-gc");
      liveHeapMb = Math.round(process.memoryUsage().heapUsed / 1048576);
    }
    gcs.sort((a, b) => a - b);
    const q = (p: number) => (gcs.length ? Math.round(gcs[Math.min(gcs.length - 1, Math.floor(p * gcs.length))] * 100) / 100 : 0);
    const cpu = process.cpuUsage();
    appendFileSync(
      file,
      `${JSON.stringify({
        eventLoopDelay: { p50: ms(eld.percentile(50)), p90: ms(eld.percentile(90)), p99: ms(eld.percentile(99)), max: ms(eld.max), mean: ms(eld.mean) },
        gc: { count: gcs.length, totalMs: Math.round(gcs.reduce((a, b) => a + b, 0)), p99: q(0.99), max: q(1), byKind: gcKinds },
        cpuUserMs: Math.round(cpu.user / 1000),
        cpuSystemMs: Math.round(cpu.system / 1000),
        rssMb: Math.round(process.memoryUsage.rss() / 1048576),
        liveHeapMb,
        memoryMb: Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [k, Math.round(v / 1048576)])),
      })}\n`,
    );
    eld.reset();
    gcs = [];
    for (const k of Object.keys(gcKinds)) delete gcKinds[k];
  });
}
