/**
 * Image jobs from submit to `succeeded` with a zero-cost upstream (issue 14, "an image job's gateway
 * overhead"): the gateway runs with `SIM_LATENCY_SCALE=0` and `SIM_IMAGES=placeholder`, so the simulator
 * answers every image with a flat grey PNG of the requested size encoded once (about 4.5 KB), and what is
 * measured is the gateway's own work on a job: the submit (limits, hold, job row, usage record), the
 * claim, the blob write, the success transaction (capture, usage record, webhook outbox check) and the
 * answers to the callers.
 *
 * `BENCH_JOBS` jobs (default 2000) from 20 customers (tier 4, enterprise-sized queues). Each customer
 * submits as fast as its loop allows (one submit at a time) and, alongside, waits for each of its jobs in
 * submission order with `GET /v1/jobs/{id}` and `Prefer: wait=60` (one answer when the job has ended):
 * two round trips per job, as a client that submits and then follows its jobs makes them.
 *
 * Baseline, same run, same client: a bare `node:http` server answering those two round trips at once with
 * the gateway's own answers (the 202 of a submit, the 200 of a succeeded job, same bytes). It does no
 * work, so its jobs/s is what the load generator and loopback HTTP allow on this machine: the ceiling of
 * the gateway's figure. The gateway's CPU time per job (from bench/probe.ts) is printed too, since on two
 * shared cores a ratio alone hides where the time goes.
 *
 * `BENCH_CPU_PROF_DIR`: when set, the gateway runs with `--cpu-prof` and writes its profile there.
 * `BENCH_SIM_IMAGES=draw`: the simulator draws every image from its prompt (as `npm start` does: a
 * 1024x1024 PNG per job) instead of the placeholder, so the figure is the simulator's image jobs per
 * second with the drawing included (issue 28).
 */
import { spawn } from "node:child_process";
import { Pool } from "undici";
import { ADMIN_TOKEN, benchUser, call, type ProbeReport, startGatewayProcess } from "./lib.ts";
import { quantile } from "./paced.ts";

const USERS = 20;
/** Jobs each customer runs before the measured run (compiles the hot paths; not counted). */
const WARMUP_PER_USER = 5;
const MODEL = "imgA-v4";

/** What one run of the client measured. Times in ms. */
interface JobsRun {
  jobs: number;
  /** First submit to the last job seen ended. */
  elapsedMs: number;
  /** First submit to the last submit answered. */
  submitMs: number;
  submitLatencies: number[];
  /** From the start of a job's submit to the answer that showed it ended. */
  endToEnd: number[];
}

/**
 * Runs `total` jobs against `base` with one API key per customer: each customer's submit loop and its
 * waiter run side by side. Throws when a submit is refused or a job ends other than `succeeded`.
 */
async function runJobs(base: string, keys: string[], total: number, prompt: string): Promise<JobsRun> {
  const pool = new Pool(base, { connections: keys.length * 2, pipelining: 1 });
  const submitLatencies: number[] = [];
  const endToEnd: number[] = [];
  const perUser = Math.ceil(total / keys.length);
  const started = performance.now();
  let lastSubmit = started;
  const body = (ui: number, i: number) => JSON.stringify({ model: MODEL, prompt: `${prompt} ${ui} ${i}` });
  try {
    await Promise.all(
      keys.map(async (key, ui) => {
        const count = Math.max(0, Math.min(perUser, total - ui * perUser));
        const queue: { id: string; t0: number }[] = [];
        // Wakes the waiter when the submit loop queued a job (an object: TypeScript keeps the closure's type).
        const waiter: { wake: (() => void) | null; stopped: boolean } = { wake: null, stopped: false };
        let submitted = 0;
        const submits = (async () => {
          for (let i = 0; i < count; i++) {
            const t0 = performance.now();
            const r = await pool.request({
              path: "/v1/images/generations",
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
              body: body(ui, i),
            });
            const text = await r.body.text();
            const t1 = performance.now();
            if (r.statusCode !== 202) throw new Error(`submit: ${r.statusCode} ${text}`);
            submitLatencies.push(t1 - t0);
            lastSubmit = Math.max(lastSubmit, t1);
            queue.push({ id: (JSON.parse(text) as { id: string }).id, t0 });
            submitted++;
            waiter.wake?.();
          }
        })().finally(() => {
          // A refused submit ends the run: the waiter must not wait for jobs that will never come.
          waiter.stopped = true;
          waiter.wake?.();
        });
        const waits = (async () => {
          for (let done = 0; done < count; done++) {
            while (queue.length === 0) {
              if (waiter.stopped) return;
              await new Promise<void>((r) => (waiter.wake = r));
            }
            waiter.wake = null;
            const job = queue.shift()!;
            for (;;) {
              const r = await pool.request({
                path: `/v1/jobs/${job.id}`,
                method: "GET",
                headers: { authorization: `Bearer ${key}`, prefer: "wait=60" },
              });
              const view = JSON.parse(await r.body.text()) as { status: string; error?: unknown };
              if (r.statusCode !== 200) throw new Error(`poll: ${r.statusCode} ${JSON.stringify(view)}`);
              if (view.status === "succeeded") break;
              if (view.status !== "pending" && view.status !== "processing") throw new Error(`job ${job.id} ended ${view.status}: ${JSON.stringify(view.error)}`);
            }
            endToEnd.push(performance.now() - job.t0);
          }
        })();
        await Promise.all([submits, waits]);
        if (submitted !== count) throw new Error("submit loop stopped early");
      }),
    );
  } finally {
    await pool.close();
  }
  const finished = performance.now();
  return { jobs: total, elapsedMs: finished - started, submitMs: lastSubmit - started, submitLatencies, endToEnd };
}

/**
 * A bare `node:http` server (child process) answering `POST /v1/images/generations` with `submitted`
 * (202) and `GET /v1/jobs/...` with `ended` (200), at once.
 */
async function startBareJobServer(submitted: string, ended: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const code = `
    const http = require("node:http");
    const submitted = Buffer.from(process.env.SUBMITTED);
    const ended = Buffer.from(process.env.ENDED);
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const post = req.method === "POST";
        const body = post ? submitted : ended;
        res.writeHead(post ? 202 : 200, { "content-type": "application/json; charset=utf-8", "content-length": body.length });
        res.end(body);
      });
    });
    server.keepAliveTimeout = 65000;
    server.listen(0, "127.0.0.1", () => console.log("listening on port " + server.address().port));
  `;
  const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, SUBMITTED: submitted, ENDED: ended }, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on port (\d+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once("exit", (c) => reject(new Error(`bare server exited ${c}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

const f1 = (n: number) => n.toFixed(1);
const pct = (xs: number[], q: number) => f1(quantile([...xs].sort((a, b) => a - b), q));

function report(label: string, r: JobsRun): void {
  console.log(
    `${label}: ${(r.jobs / (r.elapsedMs / 1000)).toFixed(0)} jobs/s (${f1(r.elapsedMs / 1000)} s); ` +
      `submits ${(r.jobs / (r.submitMs / 1000)).toFixed(0)}/s, submit p50 ${pct(r.submitLatencies, 0.5)} ms, p99 ${pct(r.submitLatencies, 0.99)} ms; ` +
      `submit to ended p50 ${pct(r.endToEnd, 0.5)} ms, p99 ${pct(r.endToEnd, 0.99)} ms`,
  );
}

function probeLine(before: ProbeReport, after: ProbeReport, jobs: number): string {
  const perJob = (ms: number) => ((ms * 1000) / jobs).toFixed(0);
  const user = after.cpuUserMs - before.cpuUserMs;
  const system = after.cpuSystemMs - before.cpuSystemMs;
  return (
    `gateway process: ${perJob(user + system)} µs of CPU per job (${perJob(user)} user, ${perJob(system)} system); ` +
    `event-loop delay p50 ${after.eventLoopDelay.p50} ms, p99 ${after.eventLoopDelay.p99} ms, max ${after.eventLoopDelay.max} ms; ` +
    `GC ${after.gc.count} pauses, ${after.gc.totalMs} ms in all, max ${after.gc.max} ms; RSS ${after.rssMb} MB`
  );
}

/** The jobs benchmark on `backend`; see the module comment. */
export async function benchJobs(backend: "sqlite" | "postgres"): Promise<void> {
  const total = Number(process.env.BENCH_JOBS ?? 2000);
  const profDir = process.env.BENCH_CPU_PROF_DIR;
  const nodeArgs = profDir ? ["--cpu-prof", "--cpu-prof-dir", profDir] : [];
  const simImages = process.env.BENCH_SIM_IMAGES === "draw" ? "draw" : "placeholder";
  const gw = await startGatewayProcess(backend, { SIM_IMAGES: simImages }, nodeArgs);
  let bare: Awaited<ReturnType<typeof startBareJobServer>> | null = null;
  try {
    const users = await Promise.all(Array.from({ length: USERS }, () => benchUser(gw.url)));
    // Enterprise-sized queues (D22), so the queue caps do not refuse the burst.
    for (const u of users) {
      const r = await call(gw.url, "PUT", `/v1/admin/users/${u.userId}/tier`, { tier: 4 }, ADMIN_TOKEN);
      if (r.status !== 200) throw new Error(`tier: ${r.status}`);
    }
    const keys = users.map((u) => u.apiKey);
    // The answers the bare server repeats: a real submit's 202 and the same job's 200 once it succeeded.
    const sample = await call(gw.url, "POST", "/v1/images/generations", { model: MODEL, prompt: "sample" }, keys[0]);
    if (sample.status !== 202) throw new Error(`sample submit: ${sample.status} ${sample.buf}`);
    const sampleId = (sample.json() as { id: string }).id;
    const ended = await fetch(`${gw.url}/v1/jobs/${sampleId}`, { headers: { authorization: `Bearer ${keys[0]}`, prefer: "wait=60" } });
    const endedText = await ended.text();
    if ((JSON.parse(endedText) as { status: string }).status !== "succeeded") throw new Error(`sample job: ${endedText}`);

    await runJobs(gw.url, keys, USERS * WARMUP_PER_USER, "warm-up");
    const before = await gw.probe!();
    const g = await runJobs(gw.url, keys, total, "bench");
    const after = await gw.probe!();

    bare = await startBareJobServer(sample.buf.toString(), endedText);
    await runJobs(bare.url, keys, USERS * WARMUP_PER_USER, "warm-up");
    const b = await runJobs(bare.url, keys, total, "bench");

    const upstream = simImages === "draw" ? "simulator drawing each image" : "zero-cost upstream";
    console.log(`\n## image jobs on ${backend}: ${total} ${MODEL} jobs from ${USERS} customers, ${upstream} (SIM_IMAGES=${simImages}, SIM_LATENCY_SCALE=0)`);
    console.log("each job: a submit, then GET /v1/jobs/{id} with Prefer: wait=60 until it ended; each customer submits one at a time and follows its jobs alongside");
    report("gateway", g);
    report("bare node:http, same two answers", b);
    console.log(`gateway/bare: ${((g.elapsedMs > 0 ? b.elapsedMs / g.elapsedMs : 0) * 100).toFixed(1)}% of the load generator's ceiling`);
    console.log(probeLine(before, after, total));
    const target = backend === "sqlite" ? 1000 : 500;
    const rate = total / (g.elapsedMs / 1000);
    console.log(`target (issue 14): >= ${target} jobs/s on ${backend}: ${rate >= target ? "meets" : "misses"}`);
  } catch (e) {
    // Jobs still queued when a run fails hold their funds: the stop check would report those holds and
    // hide why the run failed.
    await bare?.stop();
    await gw.stop().catch((stopError: unknown) => console.error(`(after the failure below) ${String(stopError)}`));
    throw e;
  }
  await bare?.stop();
  await gw.stop();
}
